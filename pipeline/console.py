"""What a user sees of a run besides its output: logging set-up, and Beam's import-time noise
kept out of it (shared by the command line and its local worker processes)."""
from __future__ import annotations

import contextlib
import logging
import warnings

FORMAT = "%(asctime)s %(name)s %(message)s"
DATE_FORMAT = "%H:%M:%S"


@contextlib.contextmanager
def beam_import_noise_hidden():
    """Imports inside this block show no warnings.

    Importing apache_beam logs "apitools not found ..." through logging.warning(),
    which also installs a default stderr handler on the root logger when it has
    none, and that handler then prints every INFO line of the process in
    another format. A placeholder handler and a raised root level keep both out.
    """
    root = logging.getLogger()
    placeholder = None
    if not root.handlers:
        placeholder = logging.NullHandler()
        root.addHandler(placeholder)
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        root.setLevel(level)
        if placeholder is not None:
            root.removeHandler(placeholder)


def import_beam_quietly() -> None:
    """Import the Beam modules a command uses, once, without their warnings."""
    with beam_import_noise_hidden():
        import apache_beam  # noqa: F401
        from apache_beam.runners.portability.fn_api_runner import FnApiRunner  # noqa: F401


class StateErrorTraceback(logging.Filter):
    """Drops the traceback Beam logs for a DoFn that raised a StateError (a damaged stored page
    of --state): Beam logs every DoFn exception before it re-raises it, and the run's command
    line reports this one as one line naming the file and the page."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        seen = set()
        while exc is not None and id(exc) not in seen:
            seen.add(id(exc))
            if type(exc).__name__ == "StateError" or "StateError" in str(exc):
                return False
            exc = exc.__cause__ or exc.__context__
        return "StateError" not in record.getMessage()


# The loggers that report a failing DoFn or bundle with its traceback.
DOFN_FAILURE_LOGGERS = ("apache_beam.runners.common", "apache_beam.runners.worker.sdk_worker",
                        "apache_beam.runners.worker.bundle_processor",
                        "apache_beam.runners.portability.fn_api_runner.fn_runner")


def hide_state_error_tracebacks() -> None:
    for name in DOFN_FAILURE_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, StateErrorTraceback) for f in logger.filters):
            logger.addFilter(StateErrorTraceback())


@contextlib.contextmanager
def run_logging(level: int, beam_level: int):
    """Console logging at `level` (Beam's own loggers at `beam_level`) for the block; the
    previous levels come back afterwards, so a run called in-process leaves no trace."""
    root, beam = logging.getLogger(), logging.getLogger("apache_beam")
    saved = root.level, beam.level
    if not root.handlers:
        logging.basicConfig(format=FORMAT, datefmt=DATE_FORMAT)
    root.setLevel(level)
    beam.setLevel(beam_level)
    hide_state_error_tracebacks()
    try:
        yield
    finally:
        root.setLevel(saved[0])
        beam.setLevel(saved[1])

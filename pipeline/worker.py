"""`python -m sitestrip.pipeline.worker LEVEL`: a local worker process of `sitestrip run --workers N`.

Beam's FnApiRunner would start `python -m apache_beam.runners.worker.sdk_worker_main`,
which prints every INFO line of its SDK harness (connections, caches, shutdown)
through the root handler its import-time warning installs, and also sends each
line to the main process, which prints the warnings a second time. This entry
runs the same harness with sitestrip's logging: one stderr handler at LEVEL
(the run's: ERROR with --quiet), Beam's own loggers at ERROR at least, its
import-time warnings hidden, and no log stream back to the main process. It ignores
SIGINT: the main process stops it (pipeline/signals.py).
"""
from __future__ import annotations

import logging
import os
import signal
import sys

from sitestrip.pipeline.console import DATE_FORMAT, FORMAT, beam_import_noise_hidden, hide_state_error_tracebacks


class _WithoutStateErrorTracebacks:
    """This worker's sys.stderr. Beam's SDK harness prints a failed bundle's traceback to
    stderr itself (sdk_worker.py, besides returning it to the main process); for a StateError
    (a damaged stored page of --state) the main process's one line says all there is."""

    def __init__(self, stream):
        self.stream = stream
        self._dropped = False

    def write(self, text):
        if text.startswith("Traceback") and "StateError" in text:
            self._dropped = True
            return len(text)
        if self._dropped and text == "\n":   # print()'s end of the dropped traceback
            self._dropped = False
            return len(text)
        self._dropped = False
        return self.stream.write(text)

    def __getattr__(self, name):
        return getattr(self.stream, name)


def main(argv: list[str]) -> None:
    # Ctrl-C in a terminal reaches the whole process group: the main process decides what a
    # stop means (pipeline/signals.py) and stops this worker, which would otherwise die
    # printing a KeyboardInterrupt traceback of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    level = logging.getLevelName(argv[1]) if len(argv) > 1 else logging.WARNING
    if not isinstance(level, int):
        level = logging.WARNING
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(FORMAT, DATE_FORMAT))
    handler.setLevel(level)
    logging.getLogger().addHandler(handler)
    logging.getLogger("apache_beam").setLevel(max(level, logging.ERROR))
    hide_state_error_tracebacks()
    sys.stderr = _WithoutStateErrorTracebacks(sys.stderr)
    # Without a logging endpoint the harness keeps its log lines in this process.
    os.environ.pop("LOGGING_API_SERVICE_DESCRIPTOR", None)
    with beam_import_noise_hidden():
        from apache_beam.runners.worker import sdk_worker_main
    from sitestrip.pipeline.cli import collect_young_rarely, sample_states_briefly
    sample_states_briefly()
    collect_young_rarely()
    sdk_worker_main.main(argv)


def dask_setup(worker) -> None:
    """A dask.distributed worker's preload (`sitestrip run --quiet` on a LocalCluster): Beam
    imported without its import-time warnings, before a task's unpickling imports it."""
    from sitestrip.pipeline.console import import_beam_quietly
    import_beam_quietly()


if __name__ == "__main__":
    main(sys.argv)

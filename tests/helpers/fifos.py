"""A FIFO as a run's input, for tests that act while the run is reading it (signals)."""
import contextlib
import errno
import os
import time

import pytest


@contextlib.contextmanager
def opened_by_the_run(fifo, proc):
    """The FIFO opened for writing, which succeeds only once the run has it open for reading."""
    while True:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise
        if proc.poll() is not None:
            pytest.fail(f"the run ended before reading its input: {proc.communicate()}")
        time.sleep(0.05)
    os.set_blocking(fd, True)
    with os.fdopen(fd, "wb") as fh:
        yield fh

"""SIGINT and SIGTERM during `sitestrip run`: one line, the run's child processes stopped, its
staging removed, exit 128 + the signal's number (130, 143).

The handler ends the process itself (os._exit) instead of raising into the running
pipeline: Beam's DoFn runner catches every BaseException, re-raises it under another type
and logs it with its traceback on the way, and its runner's shutdown waits on worker
processes and threads that may be in the middle of a bundle. Nothing the run does needs to
be undone beyond its staging directory: the output and the --state's CURRENT are only
changed by the commit (pipeline/publish.py), and once the commit begins a signal is dropped
(`Guard.hold`; watch mode's last state checkpoint: `Guard.committing`), so the output is
never left half-swapped.
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

SIGNALS = (signal.SIGINT, signal.SIGTERM)


def descendants(pid: int | None = None) -> list[int]:
    """The process ids below `pid` (this process by default), children first. Linux /proc only;
    elsewhere an empty list."""
    pid = os.getpid() if pid is None else pid
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # The command name (field 2) may hold spaces and parentheses: fields after its last ")".
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _running(pid: int) -> bool:
    """The process exists and has not exited (a zombie has: only its exit status is left)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:][:1] not in (b"Z", b"X", b"x")


def stop_descendants(wait_s: float = 5.0) -> None:
    """Kill every process this one started (local workers, a local Dask cluster, their helpers)
    and wait until they are gone: their work belongs to a run that is being abandoned, so
    nothing of it is to be saved, and nothing of it may outlive the run. Repeated while new
    ones appear (a process forked while the first ones were being killed)."""
    import time
    deadline = time.monotonic() + wait_s
    for _ in range(3):
        pids = [pid for pid in descendants() if _running(pid)]
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        while any(_running(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.01)


class Guard:
    """Installs the handlers for the block (main thread only; elsewhere it does nothing).
    `cleanup` runs on a signal, after the child processes are stopped and before the exit.

    Python runs a signal's handler in the main thread between two bytecodes, so a signal that
    arrives just before the main thread enters a blocking call (a read of a pipe, a wait on a
    worker) would wait for that call to return, perhaps for ever. The signal's number is also
    written to a wakeup pipe by the C-level handler at once (signal.set_wakeup_fd); a watcher
    thread reading it does the stop itself when the main thread has not begun it within
    HANDOVER_S."""

    HANDOVER_S = 0.5

    def __init__(self, cleanup, message: str = "sitestrip: interrupted; previous output kept"):
        self.cleanup, self.message = cleanup, message
        self._committing = False
        self._previous: dict = {}
        self._stopping = threading.Lock()
        self._pipe = None
        self._previous_wakeup = -1
        self._watcher = None

    def _handle(self, signum, frame):
        if not self._committing:
            self._stop(signum)

    def _watch(self, read_fd: int) -> None:
        import time
        while True:
            try:
                data = os.read(read_fd, 1)
            except OSError:
                return
            if not data or data == b"\0":      # the block has ended (__exit__)
                return
            if data[0] not in SIGNALS or self._committing:
                continue
            time.sleep(self.HANDOVER_S)
            if not self._committing:
                self._stop(data[0])

    def _stop(self, signum: int) -> None:
        if not self._stopping.acquire(blocking=False):
            # The other path (handler or watcher) is already ending the process.
            threading.Event().wait()
        if threading.current_thread() is threading.main_thread():
            for sig in SIGNALS:     # a second Ctrl-C while cleaning up is not a second exit path
                signal.signal(sig, signal.SIG_IGN)
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        # From here on the process only ends: the runner's threads that watch the workers
        # would report their deaths (tracebacks, log lines) on stderr, so stderr goes to
        # /dev/null and the one line is written to a copy of it.
        terminal = False
        try:
            terminal = os.isatty(2)
            saved = os.dup(2)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 2)
        except OSError:
            saved = None
        try:
            stop_descendants()
            self.cleanup()
        finally:
            if saved is not None:
                end = "\n" if terminal else ""   # past a progress bar's line
                try:
                    os.write(saved, f"{end}{self.message}\n".encode())
                except OSError:
                    pass
            os._exit(128 + signum)

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            read_fd, write_fd = os.pipe()
            os.set_blocking(write_fd, False)
            self._pipe = (read_fd, write_fd)
            self._previous = {sig: signal.signal(sig, self._handle) for sig in SIGNALS}
            self._previous_wakeup = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
            self._watcher = threading.Thread(target=self._watch, args=(read_fd,), name="signal-watcher",
                                             daemon=True)
            self._watcher.start()
        return self

    def __exit__(self, *exc):
        if self._pipe is None:
            return False
        signal.set_wakeup_fd(self._previous_wakeup)
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        read_fd, write_fd = self._pipe
        try:
            os.write(write_fd, b"\0")
        except OSError:
            pass
        self._watcher.join()
        os.close(read_fd)
        os.close(write_fd)
        self._pipe = None
        return False

    def hold(self) -> None:
        """From now on a signal is dropped: the run publishes and ends on its own (what is left
        is a commit and printing), and "previous output kept" would no longer be true."""
        self._committing = True

    @contextlib.contextmanager
    def committing(self):
        """A signal during the block is dropped: the commit completes and the run goes on to its
        normal end (a complete output, reported as such), which takes no longer than the commit."""
        self._committing = True
        try:
            yield
        finally:
            self._committing = False

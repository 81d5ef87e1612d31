"""What a benchmarked process costs: its own CPU time and peak memory.

Both the product's run and every peer's worker are child processes started by
`run_child`, so each is measured the same way, alone.

    python -m sitestrip_bench.measure PEAK_FILE MODULE [ARGS ...]

runs MODULE as __main__ and writes the process's own peak RSS to PEAK_FILE
when it ends; the benchmark starts the product through it. Peak memory is
read from VmHWM, not from the child's ru_maxrss: Linux carries the pre-exec
address space's peak into a child's ru_maxrss, and Popen spawns with vfork,
so that would be the benchmark process's own peak (hundreds of MB with Beam
loaded), whatever the child uses.
"""
from __future__ import annotations

import os
import runpy
import subprocess
import sys
import time
from dataclasses import dataclass

_POLL_SECONDS = 0.02


def peak_rss_mb() -> float | None:
    """This process's peak resident memory since its exec (VmHWM), None off Linux."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def rss_mb(ru_maxrss: int) -> float:
    # Linux reports kB, macOS bytes.
    return ru_maxrss / (1024 * 1024) if sys.platform == "darwin" else ru_maxrss / 1024


def tail(path: str, lines: int = 10) -> str:
    """The last non-blank lines of a text file ("" if it cannot be read)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            kept = [line.rstrip() for line in f if line.strip()]
    except OSError:
        return ""
    return "\n".join(kept[-lines:])


@dataclass
class ChildRun:
    returncode: int
    timed_out: bool
    wall_seconds: float
    cpu_seconds: float        # user + sys of the child itself (os.wait4)
    ru_maxrss_mb: float       # a fallback peak only: see the module docstring


def run_child(argv: list[str], stderr_path: str, *, timeout: float | None = None,
              env: dict | None = None) -> ChildRun:
    """Run a command to its end (or kill it after `timeout` seconds), stderr to a file."""
    timed_out = False
    start = time.monotonic()
    with open(stderr_path, "w") as err:
        # stderr to a file, not a pipe: nobody reads a pipe while we poll, and a
        # chatty child would fill it and block.
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err, env=env)
        # os.wait4, not proc.wait: only it gives this child's own rusage.
        try:
            while True:
                pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                if timeout is not None and time.monotonic() - start > timeout:
                    timed_out = True
                    proc.kill()
                    _, status, rusage = os.wait4(proc.pid, 0)
                    break
                time.sleep(_POLL_SECONDS)
        except BaseException:
            # Interrupted (Ctrl-C): a child left behind would keep burning CPU.
            proc.kill()
            os.wait4(proc.pid, 0)
            proc.returncode = -9
            raise
        proc.returncode = os.waitstatus_to_exitcode(status)   # reaped here; stop Popen from waiting again
    return ChildRun(proc.returncode, timed_out, time.monotonic() - start,
                    rusage.ru_utime + rusage.ru_stime, rss_mb(rusage.ru_maxrss))


def main() -> None:
    peak_file, module, *args = sys.argv[1:]
    sys.argv = [module, *args]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        peak = peak_rss_mb()
        with open(peak_file, "w", encoding="ascii") as fh:
            fh.write("" if peak is None else f"{peak:.1f}\n")


if __name__ == "__main__":
    main()

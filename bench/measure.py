"""Run a module as __main__ and record the process's own peak RSS when it ends.

    python -m bench.measure PEAK_FILE MODULE [ARGS ...]

The benchmark starts the product through this so its peak memory is the
product's: a child's ru_maxrss on Linux also carries the peak of the process
that spawned it (see bench.peers._peak_rss_mb), VmHWM does not.
"""
from __future__ import annotations

import runpy
import sys

from bench.peers import _peak_rss_mb


def main() -> None:
    peak_file, module, *args = sys.argv[1:]
    sys.argv = [module, *args]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        peak = _peak_rss_mb()
        with open(peak_file, "w", encoding="ascii") as fh:
            fh.write("" if peak is None else f"{peak:.1f}\n")


if __name__ == "__main__":
    main()

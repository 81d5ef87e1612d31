"""The C heap of a run's processes: glibc's malloc settings a run starts with (bound_c_heap)
and giving the heap's free memory back after a large shard (give_back_heap). Both reach glibc
through ctypes; on another C library they do nothing. Beam-free: bound_c_heap runs before
Beam and numpy are imported (pipeline/cli.py)."""
from __future__ import annotations

import os


def glibc_function(name: str):
    """glibc's function `name` through ctypes, or None where the C library is not glibc."""
    try:
        import ctypes
        return getattr(ctypes.CDLL("libc.so.6"), name)
    except (OSError, AttributeError):
        return None


# glibc's malloc, as `sitestrip run` sets it (bound_c_heap).
C_HEAP = {"MALLOC_MMAP_THRESHOLD_": 2 << 20, "MALLOC_TRIM_THRESHOLD_": 32 << 20}
_MALLOPT = {"MALLOC_MMAP_THRESHOLD_": -3, "MALLOC_TRIM_THRESHOLD_": -1}     # M_MMAP_THRESHOLD, M_TRIM_THRESHOLD


def bound_c_heap() -> None:
    """Blocks of 2 MiB and more get their own mapping (given back when freed) and the heap's
    free top is returned past 32 MiB, unless the user set either glibc variable.

    By default glibc raises its mapping threshold each time a large block is freed, up to 32
    MiB, so a site shard's node arrays, decompressed pages and the runner's encoded buffers
    land in the heap, which the next stage cannot always reuse. Fixed, peak RSS on docsites-dev
    (1 worker, three runs each; docs/performance.md, "Memory per worker"): 407-419 → 377-379 MB, for 0.4 s
    more system CPU and the same wall time within the runs' spread (+2 %). This process gets
    it through mallopt (libc's own variables are read once, at start); the local workers of
    --workers N, started later, through the environment they inherit. Not glibc: nothing."""
    if any(name in os.environ for name in C_HEAP):
        return
    for name, value in C_HEAP.items():
        os.environ[name] = str(value)
    mallopt = glibc_function("mallopt")
    if mallopt is None:
        return
    for name, value in C_HEAP.items():
        mallopt(_MALLOPT[name], value)


_MALLOC_TRIM: list = []       # glibc's malloc_trim or None, looked up at the first trim


def give_back_heap() -> bool:
    """Return the C heap's free memory to the system (glibc's malloc_trim); False where the
    C library has no such call."""
    if not _MALLOC_TRIM:
        _MALLOC_TRIM.append(glibc_function("malloc_trim"))
    if _MALLOC_TRIM[0] is None:
        return False
    _MALLOC_TRIM[0](0)
    return True

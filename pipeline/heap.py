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


# glibc's malloc, as `sitestrip run` sets it (bound_c_heap): blocks under 32 MiB from the heap,
# whose free top is returned past 64 MiB, and no fastbins (glibc.malloc.mxfast=0).
C_HEAP = {"MALLOC_MMAP_THRESHOLD_": 32 << 20, "MALLOC_TRIM_THRESHOLD_": 64 << 20}
_MALLOPT = {"MALLOC_MMAP_THRESHOLD_": -3, "MALLOC_TRIM_THRESHOLD_": -1}     # M_MMAP_THRESHOLD, M_TRIM_THRESHOLD
M_MXFAST = 1
NO_FASTBINS = "glibc.malloc.mxfast=0"


def bound_c_heap() -> None:
    """glibc's malloc for a run, unless the user tuned it (either variable of C_HEAP, or a
    glibc.malloc tunable in GLIBC_TUNABLES): a fixed mapping threshold of 32 MiB, a trim
    threshold of 64 MiB, and no fastbins.

    A run allocates and frees the same large buffers page after page and part after part:
    decompressed blobs, node arrays, the text columns of a batch of rows and the Parquet
    writer's buffers, many of them between 2 and 32 MiB. Below the mapping threshold they
    come from the heap and are reused; above it each is a mapping of its own, given back when
    freed and faulted in page by page when the next is made. glibc's own threshold moves with the blocks freed, so a
    block could land in the heap or not depending on what came before; fixed, it does not.
    Fastbins keep small freed chunks (libxml2's nodes, numpy's small arrays) unmerged until
    the next large request merges them all at once (malloc_consolidate); without them the
    chunks merge as they are freed, and the thread cache still serves the small sizes.

    The settings reach this process through mallopt (libc reads its variables once, at
    start) and the local workers of --workers N, started later, through the environment they
    inherit (GLIBC_TUNABLES keeps a value the user gave it). docs/performance.md ("Memory per
    worker") has what they cost and save. Not glibc: nothing."""
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if any(name in os.environ for name in C_HEAP) or "glibc.malloc." in tunables:
        return
    for name, value in C_HEAP.items():
        os.environ[name] = str(value)
    os.environ["GLIBC_TUNABLES"] = f"{tunables}:{NO_FASTBINS}" if tunables else NO_FASTBINS
    mallopt = glibc_function("mallopt")
    if mallopt is None:
        return
    for name, value in C_HEAP.items():
        mallopt(_MALLOPT[name], value)
    mallopt(M_MXFAST, 0)


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

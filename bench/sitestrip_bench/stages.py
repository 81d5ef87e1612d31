"""The per-page stages the product's rows time (`timing_ms`: thread CPU ms per page and
stage), and their percentiles: shared by the bench report, `speed` and `cost`."""
from __future__ import annotations

import numpy as np

from sitestrip.schemas.tables import TIMING_STAGES

# Every key a row's timing_ms may hold, in pipeline order: the pages schema's list. `etdm` is
# the mapping part of `template` (and of `site_conex`), `total` the sum of the others. Keys
# a newer product adds come after these, so a table never drops a stage.
ROW_STAGES = TIMING_STAGES

# The stages of the bench report's table, in pipeline order: the row's stages but the output
# columns' (markdown, language), duplicates and the total, with "group" (the shuffle coder)
# and "write" (the Parquet writer), which are not in the rows: run.py times them in-process.
_NOT_IN_REPORT = {"markdown", "language", "duplicates", "total"}
STAGES = (TIMING_STAGES[:2] + ("group",) + tuple(s for s in TIMING_STAGES[2:] if s not in _NOT_IN_REPORT)
          + ("write",))


def percentiles(values) -> dict:
    """pages, p50, p99, mean (ms) and total (s) of the values that are not None."""
    values = np.asarray([v for v in values if v is not None], dtype=float)
    if values.size == 0:
        return {"pages": 0, "p50": None, "p99": None, "mean": None, "total_s": 0.0}
    return {"pages": int(values.size), "p50": round(float(np.percentile(values, 50)), 3),
            "p99": round(float(np.percentile(values, 99)), 3),
            "mean": round(float(values.mean()), 3), "total_s": round(float(values.sum()) / 1000, 3)}


def row_stages(timings: list[dict]) -> list[str]:
    """The stages present in these timing_ms dicts: ROW_STAGES' order, then any other key."""
    present = {key for timing in timings for key in (timing or {})}
    return [s for s in ROW_STAGES if s in present] + sorted(present - set(ROW_STAGES))


def stage_percentiles(timings: list[dict]) -> dict:
    """{stage: percentiles} over the rows' timing_ms dicts (a row without the stage is left out)."""
    return {stage: percentiles([(t or {}).get(stage) for t in timings]) for stage in row_stages(timings)}

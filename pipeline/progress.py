"""Progress of a local run: counted by the workers, shown by the main process.

Beam's FnApiRunner cannot be asked while it runs: `Pipeline.run()` returns only
when the whole pipeline is done (its result is already DONE), metrics exist
only for finished bundles, and the per-site stage is one bundle per worker, so
its counters arrive all at once at the end. The runner's own progress requests
to the workers (`progress_request_frequency`) have no callback to read them.
So the workers report through files: every reporting DoFn instance (one per
worker thread or process) owns one small JSON file of cumulative counts in the
run's progress directory and rewrites it atomically at most every
REPORT_SECONDS and at the end of each bundle; a thread of the main process sums
the files. In-process and multi-process workers share the local disk, so both
report the same way. A remote runner gets no directory: its own console shows
progress.

On a terminal the main process draws a tqdm bar (reading: files; per-site
phase: pages, with sites done, rate and ETA); otherwise it logs a line every
`every` seconds and one when the run ends.
"""
from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
from collections import Counter

REPORT_SECONDS = 1.0
READ, SITES = "read", "sites"
log = logging.getLogger("sitestrip")


class ProgressFile:
    """Worker side: cumulative counts of one DoFn instance, in its own file."""

    def __init__(self, directory: str, kind: str):
        self.path = os.path.join(directory, f"{kind}-{os.getpid()}-{uuid.uuid4().hex}.json")
        self.counts: Counter = Counter()
        self.written = float("-inf")     # the first count is written at once

    def add(self, **counts: int) -> None:
        self.counts.update(counts)
        if time.monotonic() - self.written >= REPORT_SECONDS:
            self.flush()

    def flush(self) -> None:
        self.written = time.monotonic()
        tmp = self.path + ".tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(self.counts, fh)
            os.replace(tmp, self.path)   # readers see the old or the new counts, never half a file
        except OSError:
            pass    # progress is best effort: a full or vanished directory must not fail a record


def read_totals(directory: str) -> dict:
    """Counts of all workers, by phase: {"read": Counter, "sites": Counter}."""
    totals = {READ: Counter(), SITES: Counter()}
    try:
        names = os.listdir(directory)
    except OSError:
        return totals
    for name in names:
        kind = name.split("-", 1)[0]
        if kind not in totals or not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(directory, name), encoding="utf-8") as fh:
                totals[kind].update(json.load(fh))
        except (OSError, ValueError):
            continue    # replaced or removed while listed: the next poll reads it
    return totals


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s" if m else f"{s}s"


def describe(totals: dict, total_files: int, site_seconds: float | None) -> str:
    """One progress line: reading, or the per-site phase with rate and ETA (`site_seconds`:
    how long the per-site phase took for the pages done; no rate under a second)."""
    read, sites = totals[READ], totals[SITES]
    if not sites:
        return (f"reading: {read['files']:,} of {total_files:,} WARC files, "
                f"{read['records']:,} records, {read['pages']:,} HTML pages")
    done, total = sites["pages"], max(read["pages"], sites["pages"])
    line = f"per-site: {done:,} of {total:,} pages ({done / total if total else 1:.0%}), {sites['sites']:,} sites"
    if site_seconds is not None and site_seconds >= 1.0 and done:
        rate = done / site_seconds
        line += f", {rate:.1f} pages/s"
        if done < total:
            line += f", ETA {_duration((total - done) / rate)}"
    return line


class ProgressMonitor:
    """Main side: polls the progress directory in a thread while the pipeline runs.

    mode "bar" draws tqdm bars on stderr; "log" logs `describe` lines every
    `every` seconds and a last one at stop().
    """

    POLL_SECONDS = 0.5

    def __init__(self, directory: str, total_files: int, mode: str = "log", every: float = 30.0):
        self.directory, self.total_files, self.mode, self.every = directory, total_files, mode, every
        self.totals = read_totals(directory)
        self.site_started: float | None = None
        self.site_changed: float | None = None     # when the pages done last changed
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sitestrip-progress", daemon=True)
        self._bar = None
        self._bar_phase = None
        self._logged = time.monotonic()

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._poll()
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        if self.mode == "log" and (self.totals[READ] or self.totals[SITES]):
            log.info("%s", self.line())

    def line(self) -> str:
        seconds = None
        if self.site_started is not None:
            # Until the last page, the rate is over the time so far; after it, writing the
            # output is not per-site work.
            done = self.totals[SITES]["pages"] >= self.totals[READ]["pages"]
            seconds = (self.site_changed if done else time.monotonic()) - self.site_started
        return describe(self.totals, self.total_files, seconds)

    def _run(self) -> None:
        while not self._stop.wait(self.POLL_SECONDS):
            self._poll()
            if self.mode == "log" and time.monotonic() - self._logged >= self.every:
                self._logged = time.monotonic()
                log.info("%s", self.line())

    def _poll(self) -> None:
        before = self.totals[SITES]["pages"]
        self.totals = read_totals(self.directory)
        now = time.monotonic()
        if self.totals[SITES] and self.site_started is None:
            self.site_started = now
        if self.totals[SITES]["pages"] != before:
            self.site_changed = now
        if self.mode == "bar":
            self._draw()

    def _draw(self) -> None:
        from tqdm import tqdm

        if self._bar_phase == "done":
            return
        read, sites = self.totals[READ], self.totals[SITES]
        phase = SITES if sites else READ
        if phase != self._bar_phase:
            if self._bar is not None:
                self._update(self._bar_phase)     # the phase's last counts: its bar stays as it ended
                self._bar.close()
            if phase == READ:
                self._bar = tqdm(total=self.total_files, desc="reading", unit="file", dynamic_ncols=True)
            else:
                self._bar = tqdm(total=read["pages"], desc="sites", unit="page", dynamic_ncols=True)
            self._bar_phase = phase
        self._update(phase)
        if phase == SITES and sites["pages"] >= read["pages"]:
            # Done: closed now, so the rate shown is the per-site work's, not the output writing's.
            self._bar.close()
            self._bar, self._bar_phase = None, "done"

    def _update(self, phase) -> None:
        bar, read, sites = self._bar, self.totals[READ], self.totals[SITES]
        if phase == READ:
            bar.set_postfix_str(f"{read['pages']:,} pages", refresh=False)
            bar.update(read["files"] - bar.n)
        elif phase == SITES:
            bar.total = max(read["pages"], sites["pages"])
            bar.set_postfix_str(f"{sites['sites']:,} sites", refresh=False)
            bar.update(sites["pages"] - bar.n)

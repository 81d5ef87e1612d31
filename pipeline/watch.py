"""Watch mode (`sitestrip run --watch`): an unbounded Beam pipeline over a folder that WARC files
land in, one at a time, while the job runs.

    glob ─ Watch (poll, each path once, stop after --idle-timeout without a new file)
         ─ ReadWarcFileBySite (the batch reader; a file's pages grouped by site)
         ─ ProcessWatchedSite (user state per site, global window: its stored pages; passes
           the read errors on)
         ─ fixed windows of --window seconds ─ GroupIntoBatches per part ─ a Parquet file per batch

**Completion convention.** A file is read once, the first time a poll matches its path, so it
must be complete when its name first matches the glob: write it elsewhere (another folder of
the same filesystem, or a name the glob does not match such as `x.warc.gz.tmp`) and rename it
into place; a rename is atomic on a local or POSIX filesystem, and an object store shows an
object only once its upload is done. A file renamed over a path already read is not read again.

**Per-site state.** A site's stored pages (transforms/state.py: bounded per cluster and per
site by `state:` in the config) live in Beam user state, keyed by site, in the global window,
so they outlive the windows. The first batch of a site seeds them from the `--state` version
CURRENT names (read, never written: a streaming job has no end at which to switch a version
atomically). Each batch of a site's pages is processed by the batch code's process_site with
the stored pages as candidates, and its returned state replaces the stored pages.

**Why Watch, and which runner.** `fileio.MatchContinuously` is Beam's Watch transform with a
fixed polling span; it has no "stop after so long without a new file", which Watch's
termination conditions express (IdleFor below). Locally the job runs on Beam's FnApiRunner
(docs/runners.md, "Watch mode"): it runs the Watch splittable DoFn, honours its poll delay
and termination, and fuses the reader, the per-site state and the batching writer into the
Watch stage, so a file's rows are written while the job runs. The Python BundleBasedDirectRunner
cannot run a splittable DoFn in streaming mode and Prism needs a binary downloaded at run
time; Dataflow and Flink run the same graph with --streaming.

**Windows and file names.** Rows are assigned to fixed windows of their file's poll time and
written per (window, part) batch: `pages/part-20260101T120000Z-1a2b3c4d-00000-of-00001.parquet`
(window start in UTC, crc32 of the batch's row keys, part). A batch a runner retries has the
same rows, so the same name and bytes. The menus dataset counts pages over a whole run and is
not written in watch mode (a batch `sitestrip run` over the landed files writes it).
"""
from __future__ import annotations

import typing
import zlib
from datetime import datetime, timezone

import apache_beam as beam
from apache_beam import coders
from apache_beam.coders.coders import TimestampCoder
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.watch import PollFn, PollResult, TerminationCondition, Watch, never
from apache_beam.transforms import userstate
from apache_beam.transforms.window import FixedWindows

from sitestrip.configs import Config
from sitestrip.pipeline.graph import (CLUSTER_ROWS, ERRORS, MAIN, STATE_PAGES, ProcessSite, ReadWarcFile, _count,
                                      dataset_prefix, pages_schema)
from sitestrip.pipeline.parts import PART_KEYS, part_of, sorted_table, write_table
from sitestrip.pipeline.state import read_site_state, state_files
from sitestrip.schemas import DATASETS
from sitestrip.transforms.state import merge_site_state

# The datasets watch mode writes (module docstring: menus are a whole-run count).
WATCH_DATASETS = ("pages", "errors", "sites")


class IdleFor(TerminationCondition):
    """Stop polling once `seconds` have passed without a new file (since the start, before the
    first one). Its state is the time a new file was last seen."""

    def __init__(self, seconds: float):
        self.micros = int(seconds * 1e6)

    def for_new_input(self, now, element):
        return now

    def on_seen_new_output(self, now, state):
        return now

    def can_stop_polling(self, now, state):
        return (now - state).micros >= self.micros

    def state_coder(self):
        return TimestampCoder()


class MatchWarcs(PollFn):
    """One poll: every path the glob matches now. Watch emits a path once (dedup by path)."""

    def __call__(self, pattern):
        paths = sorted(m.path for r in FileSystems.match([pattern]) for m in r.metadata_list)
        return PollResult.incomplete(paths)

    def default_output_coder(self):
        return coders.StrUtf8Coder()


class ReadWarcFileBySite(ReadWarcFile):
    """One landed WARC file → (site, (MAIN, its pages in the file)), at most `max_site_pages`
    pages a batch, and (file, (ERRORS, its errors rows)): the batch reader, its pages grouped
    by site within the file, so a site's pages of one file are compared with each other.
    A worker holds one file's compact pages at a time.

    The errors go through the per-site step too (keyed by file; it passes them on) rather than
    being flattened with its rows: on the FnApiRunner a Flatten ends the fused stage, and the
    rows after it would be written only when the job ends."""

    def __init__(self, config: Config):
        super().__init__(config)
        self.max_site_pages = config.site.max_site_pages

    def process(self, path: str):
        by_site: dict[str, list] = {}
        errors = []
        for kind, value in super().process(path):
            if kind != MAIN:
                errors.append(value)
                continue
            site, record = value
            by_site.setdefault(site, []).append(record)
        if errors:
            yield path, (ERRORS, errors)
        limit = self.max_site_pages
        for site in sorted(by_site):
            records = by_site[site]
            for start in range(0, len(records), limit):
                yield site, (MAIN, records[start:start + limit])


class ProcessWatchedSite(ProcessSite):
    """(site, batch of its pages) → the outputs of ProcessSite; the site's stored pages are
    kept in user state between batches, seeded from --state on the site's first batch."""

    STORED = userstate.ReadModifyWriteStateSpec("stored_pages", coders.PickleCoder())

    def __init__(self, config: Config, state_files_: list[str]):
        super().__init__(config, None, keep_state=True)
        self.state_files = state_files_

    def process(self, element, stored_state=beam.DoFn.StateParam(STORED)):
        site, (kind, records) = element
        if kind == ERRORS:      # a file's read errors (ReadWarcFileBySite)
            for row in records:
                yield ERRORS, row
            return
        stored = stored_state.read()
        if stored is None:
            stored = read_site_state(self.state_files, site) if self.state_files else []
            _count("watch_sites_seeded_from_state" if stored else "watch_new_sites")
        new_state = []
        for kind, value in super().process(((site, 0), {"records": list(records), "stored": stored})):
            if kind == STATE_PAGES:
                new_state.append(value)
            else:
                yield kind, value
        if new_state:
            stored = merge_site_state(site, new_state, self.config.state)
        stored_state.write(stored)
        _count("watch_site_batches")


def window_part_path(prefix: str, window_start: float, rows_digest: int, index: int, parts: int) -> str:
    stamp = datetime.fromtimestamp(window_start, tz=timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{prefix}-{stamp}-{rows_digest:08x}-{index:05d}-of-{parts:05d}.parquet"


class _WriteWindowBatch(beam.DoFn):
    def __init__(self, output: str, schemas: dict, parts: int):
        self.output, self.schemas, self.parts = output, schemas, parts

    def process(self, element, window=beam.DoFn.WindowParam):
        (name, index), rows = element
        fields = PART_KEYS[name]
        table = sorted_table(rows, self.schemas[name], fields)
        keys = "\x1e".join("\x1f".join("" if v is None else str(v) for v in row.values())
                            for row in table.select(list(fields)).to_pylist())
        digest = zlib.crc32(keys.encode("utf-8", "surrogatepass"))
        path = window_part_path(dataset_prefix(self.output, name), float(window.start), digest, index, self.parts)
        write_table(table, path)
        _count(f"watch_files_{name}")
        yield path


def _dataset_part(item, parts):
    name, row = item
    return (name, part_of(row, PART_KEYS[name], parts)), row


class WriteWindowParts(beam.PTransform):
    """(dataset name, row) → Parquet files per fixed window of `window_seconds`, dataset and
    part (parts.py's row placement, sort order and writer), `batch_rows` rows at most a file.

    One batching step for all datasets, not one per dataset: on the FnApiRunner (Beam 2.77)
    a second GroupIntoBatches fused into the same stage loses its rows (docs/runners.md)."""

    def __init__(self, output: str, schemas: dict, parts: int, window_seconds: float, batch_rows: int):
        super().__init__()
        self.output, self.schemas, self.parts = output, schemas, parts
        self.window_seconds, self.batch_rows = window_seconds, batch_rows

    def expand(self, named_rows):
        return (named_rows
                | "Windows" >> beam.WindowInto(FixedWindows(self.window_seconds))
                | "PartKeys" >> beam.Map(_dataset_part, self.parts).with_output_types(
                    typing.Tuple[typing.Tuple[str, int], typing.Any])
                | "Batches" >> beam.GroupIntoBatches(self.batch_rows)
                | "Write" >> beam.ParDo(_WriteWindowBatch(self.output, self.schemas, self.parts)))


def _named(item, names):
    kind, row = item
    if kind in names:
        yield names[kind], row


def build_watch_pipeline(p: beam.Pipeline, pattern: str, output: str, config: Config, *,
                         state_dir: str | None = None, idle_timeout: float | None = None,
                         poll_interval: float = 1.0, window_seconds: float = 10.0,
                         part_files: int = 1, batch_rows: int = 10000):
    """Add the watch-mode graph to `p` (module docstring); returns the written paths.
    The --state files are checked here, before the job starts (StateError names a bad one)."""
    stored_files = state_files(state_dir) if state_dir else []
    termination = IdleFor(idle_timeout) if idle_timeout is not None else never()
    landed = (p
              | "Pattern" >> beam.Create([pattern])
              | "WatchFiles" >> Watch(MatchWarcs(), poll_interval=poll_interval, termination=termination)
              | "LandedPath" >> beam.Map(lambda pair: pair[1]))
    # Typed keys: Beam then encodes them deterministically for the keyed state.
    read = landed | "ReadWarc" >> beam.ParDo(ReadWarcFileBySite(config)).with_output_types(
        typing.Tuple[str, typing.Any])
    sites = read | "ProcessSite" >> beam.ParDo(ProcessWatchedSite(config, stored_files))
    named = sites | "DatasetRows" >> beam.FlatMap(_named, {MAIN: "pages", ERRORS: "errors", CLUSTER_ROWS: "sites"})
    schemas = {name: DATASETS[name] for name in WATCH_DATASETS}
    schemas["pages"] = pages_schema(config)
    return named | "WriteWindows" >> WriteWindowParts(output, schemas, part_files, window_seconds, batch_rows)


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
CURRENT names when the job started. Each batch of a site's pages is processed by the batch
code's process_site with the stored pages as candidates, and its returned state replaces the
stored pages.

**Writing the state back.** User state lives inside the runner, where the launcher cannot
read it; so with `--state` each site's new stored pages are also written, after every batch
of the site, as one file per site in a working directory of the state
(`DIR/_watch-<job id>/site-<digest>.parquet`, replaced by a rename). `checkpoint_state`
makes a state version like a batch run's from the seed version (the sites the job has not
seen) and those files, and moves CURRENT to it: the launcher calls it every
`--checkpoint-interval` seconds when a site has changed, and when the job stops (idle
timeout or a signal), then removes the working directory. A batch or watch run started
later continues from it.

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
same rows, so the same name and bytes. The menus rows are counted per batch of a site (the
pages of one site in one landed file): a menu carried by pages of several files has a row per
file, and its total is the sum of `pages` over its (site, menu_signature) rows. When the job
starts, every dataset gets an empty part 0 (`write_empty_parts`), so a reader finds each
dataset's schema before the first file lands.
"""
from __future__ import annotations

import dataclasses
import hashlib
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
from sitestrip.pipeline.graph import (CLUSTER_ROWS, ERRORS, MAIN, STATE_PAGES, CountMenus, ProcessSite,
                                      ReadWarcFile, _count, _menu_key, _menu_row, dataset_prefix, pages_schema)
from sitestrip.pipeline.parts import PART_KEYS, part_of, part_path, sorted_table, write_table
from sitestrip.pipeline.state_store import (current_version, next_version, read_site_state, state_files, version_prefix,
                                      write_current)
from sitestrip.schemas import DATASETS, STATE, STATE_KEYS
from sitestrip.transforms.state import merge_site_state, stored_row

WATCH_DATASETS = ("pages", "menus", "errors", "sites")
# Besides a row's identity, what names its batch's file: two site batches of one window may
# count the same menu, and a file named by the keys alone would replace the other's.
NAME_FIELDS = {"menus": ("pages", "example_url")}
MENU_ROWS = "menu_rows"


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

    def __init__(self, config: Config, state_files_: list[str], working_dir: str | None = None):
        # No links dataset here: its target_in_input joins every link with the whole run's
        # pages, which an unbounded run never has (docs/output.md "Links"; a batch run writes it).
        super().__init__(without_links(config), None, keep_state=True)
        self.state_files = state_files_
        self.working_dir = working_dir

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
        new_state, menus, counts = [], CountMenus(), {}
        for kind, value in super().process(((site, 0), {"records": list(records), "stored": stored})):
            if kind == STATE_PAGES:
                new_state.append(value)
                continue
            if kind == MAIN:
                for (_site, signature), item in _menu_key(value):
                    counts_of = counts.setdefault(signature, menus.create_accumulator())
                    counts[signature] = menus.add_input(counts_of, item)
            yield kind, value
        for signature in sorted(counts):
            yield MENU_ROWS, _menu_row(((site, signature), counts[signature]))
        if new_state:
            stored = merge_site_state(site, new_state, self.config.state,
                                      self.config.duplicates.max_fingerprints_per_site)
            if self.working_dir is not None:
                write_site_state(self.working_dir, site, stored)
        stored_state.write(stored)
        _count("watch_site_batches")


def _site_file(working_dir: str, site: str) -> str:
    digest = hashlib.sha1(site.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return FileSystems.join(working_dir, f"site-{digest}.parquet")


def write_site_state(working_dir: str, site: str, stored) -> None:
    """One site's stored pages as its file in the job's working directory (replacing the last)."""
    table = sorted_table((stored_row(page) for page in stored), STATE, STATE_KEYS)
    write_table(table, _site_file(working_dir, site))


def _read_state_table(path: str, exclude_sites=None):
    import pyarrow.compute as pc
    from apache_beam.io.filesystem import CompressionTypes
    from sitestrip.pipeline.state_store import state_table
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
        table = state_table(fh)
    if exclude_sites:
        import pyarrow as pa
        table = table.filter(pc.invert(pc.is_in(table["site"], value_set=pa.array(sorted(exclude_sites)))))
    return table


def site_files_signature(working_dir: str) -> tuple:
    """What the job's site files are now (names, sizes, times): equal signatures, same state."""
    metas = [m for r in FileSystems.match([FileSystems.join(working_dir, "site-*.parquet")])
             for m in r.metadata_list]
    return tuple(sorted((m.path, m.size_in_bytes, m.last_updated_in_seconds) for m in metas))


def checkpoint_state(state_dir: str, working_dir: str, seed_files: list[str],
                     previous: tuple | None = None) -> tuple[str | None, tuple]:
    """A new state version from the seed version's files (every site the job has not processed)
    and the job's site files (those it has), CURRENT moved to it: (its name, the site files'
    signature). No version (None) when the job has processed no site yet, or when the site
    files are as `previous` (a signature this returned) says. One writer per state directory:
    CURRENT is not compared."""
    import pyarrow as pa
    signature = site_files_signature(working_dir)
    if not signature or signature == previous:
        return None, signature
    site_files = [path for path, _size, _time in signature]
    updated = [_read_state_table(path) for path in site_files]
    seen = set()
    for table in updated:
        seen.update(table.column("site").to_pylist())
    seed = [_read_state_table(path, seen) for path in seed_files]
    table = pa.concat_tables(seed + updated).sort_by([(key, "ascending") for key in STATE_KEYS])
    version = next_version(current_version(state_dir))
    write_table(table.replace_schema_metadata(STATE.metadata), part_path(version_prefix(state_dir, version), 0, 1))
    write_current(state_dir, version)
    return version, signature


def write_empty_parts(output: str, schemas: dict, parts: int, started: float) -> None:
    """An empty part 0 of every dataset, named for the window the job starts in."""
    for name, schema in schemas.items():
        write_table(schema.empty_table(), window_part_path(dataset_prefix(output, name), started, 0, 0, parts))


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
                            for row in table.select(list(fields + NAME_FIELDS.get(name, ()))).to_pylist())
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


def without_links(config: Config) -> Config:
    """`config` with output.links off."""
    return dataclasses.replace(config, output=dataclasses.replace(config.output, links=False))


def _named(item, names):
    kind, row = item
    if kind in names:
        yield names[kind], row


def watch_schemas(config: Config) -> dict:
    return {name: pages_schema(config) if name == "pages" else DATASETS[name] for name in WATCH_DATASETS}


def build_watch_pipeline(p: beam.Pipeline, pattern: str, output: str, config: Config, *,
                         state_dir: str | None = None, idle_timeout: float | None = None,
                         poll_interval: float = 1.0, window_seconds: float = 10.0,
                         part_files: int = 1, batch_rows: int = 10000, working_dir: str | None = None,
                         stored_files: list[str] | None = None):
    """Add the watch-mode graph to `p` (module docstring); returns the written paths.
    The --state files are checked here, before the job starts (StateError names a bad one),
    unless the caller passes them as `stored_files`. With `working_dir`, each site's stored
    pages are written there after each of its batches (checkpoint_state reads them)."""
    if stored_files is None:
        stored_files = state_files(state_dir) if state_dir else []
    termination = IdleFor(idle_timeout) if idle_timeout is not None else never()
    landed = (p
              | "Pattern" >> beam.Create([pattern])
              | "WatchFiles" >> Watch(MatchWarcs(), poll_interval=poll_interval, termination=termination)
              | "LandedPath" >> beam.Map(lambda pair: pair[1]))
    # Typed keys: Beam then encodes them deterministically for the keyed state.
    read = landed | "ReadWarc" >> beam.ParDo(ReadWarcFileBySite(config)).with_output_types(
        typing.Tuple[str, typing.Any])
    sites = read | "ProcessSite" >> beam.ParDo(ProcessWatchedSite(config, stored_files, working_dir))
    named = sites | "DatasetRows" >> beam.FlatMap(_named, {MAIN: "pages", ERRORS: "errors", CLUSTER_ROWS: "sites",
                                                          MENU_ROWS: "menus"})
    schemas = watch_schemas(config)
    return named | "WriteWindows" >> WriteWindowParts(output, schemas, part_files, window_seconds, batch_rows)


"""The Beam graph: read WARC files → compact pages keyed by site → per-site rows → Parquet.

Thin by design: every computation is a function in `transforms/`; here data
is moved, grouped and counted (one counter per skip reason and error stage).

The same graph runs on every Beam runner, including Beam's DaskRunner, which
(in Beam 2.77) translates only Create, ParDo, GroupByKey and Flatten, merges
the tagged outputs of a multi-output ParDo into one collection, never passes
side-input values, and computes only the last transform of the graph. So no
step has tagged outputs: a step that also makes errors rows yields (kind, row)
pairs, split by kind afterwards; hot sites are planned through joins
(`shard_sites`) and the datasets written by pipeline/parts.py, neither with
side inputs; and the graph ends in one step that depends on every write
(docs/runners.md, "Dask").
"""
from __future__ import annotations

import logging
import pickle
import time

import apache_beam as beam
from apache_beam import coders
from apache_beam.coders.coder_impl import CallbackCoderImpl
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from sitestrip.configs import Config
from sitestrip.pipeline.parts import PART_BY, PART_KEYS, PartDataset, WriteParts, pack_row, unpack_row
from sitestrip.pipeline.progress import READ, SITES, ProgressFile
from sitestrip.pipeline.state_store import (current_version, next_version, read_state_file, state_files, version_prefix,
                                      write_current)
from sitestrip.pipeline.heap import give_back_heap
from sitestrip.pipeline.page_source import PageError, read_pages
from sitestrip.pipeline.warc import Skipped, open_warc
from sitestrip.pipeline.wire import pack_record, unpacked_records
from sitestrip.schemas import DATASETS, STATE, STATE_KEYS
from sitestrip.transforms.classify import load_main_content_model
from sitestrip.transforms.duplicates import (ACROSS_SALTS, across_sites_candidate, across_sites_eligible,
                                             across_sites_salt, fewer_across_sites, mark_across_sites)
from sitestrip.transforms.site_step import error_row, process_site
from sitestrip.transforms.shards import page_cell, plan_shards
from sitestrip.transforms.state import merge_site_state, stored_row

NAMESPACE = "sitestrip"
ERRORS = "errors"
MAIN = "main"
CLUSTER_ROWS = "cluster_rows"
STATE_PAGES = "state_pages"
PAGE_LINKS = "page_links"
LINK_TARGETS = "link_targets"
log = logging.getLogger("sitestrip")


_COUNTERS: dict = {}


def _count(name: str, n: int = 1) -> None:
    # One counter object per name and process: Beam's counters find the current bundle's
    # metrics when incremented, and making one took as long as counting with it.
    counter = _COUNTERS.get(name)
    if counter is None:
        counter = _COUNTERS[name] = Metrics.counter(NAMESPACE, name)
    counter.inc(n)


def _error(**fields) -> tuple[str, dict]:
    """One errors row, counted under its stage, as an (ERRORS, row) output."""
    _count(f"errors_{fields['stage']}")
    return ERRORS, error_row(**fields)


def _of_kind(item, kind):
    if item[0] == kind:
        yield item[1]


def _each_of_kind(item, kind):
    if item[0] == kind:
        yield from item[1]


def _each(values):
    yield from values


class ShardBatch:
    """The type hint of a step whose elements hold a site shard's values at once (ProcessSite's
    `batched` outputs, and the lists split from them): what gives them _ShardBatchCoder."""


def _encode_batch(value) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def _batch_size(value) -> int:
    return len(value)


class _ShardBatchCoder(coders.PickleCoder):
    """PickleCoder's bytes, with a size estimate that encodes nothing. A runner estimates the
    bytes of every step's first outputs of a bundle (the local runner: its first ten) by
    encoding them, which for a shard's batches encoded all its rows again at each step after
    ProcessSite: on docsites-dev 5,642 PageLinks and 3,911 rows' packed texts pickled to be
    weighed, where a row per element had 452 and 266 of them sampled. The estimate is the
    number of values a batch holds: a runner's metrics, nothing the run reads."""

    def _create_impl(self):
        return CallbackCoderImpl(_encode_batch, pickle.loads, size_estimator=_batch_size)


coders.registry.register_coder(ShardBatch, _ShardBatchCoder)


def _batches(pcoll):
    """`pcoll` coded by _ShardBatchCoder. Set on the collection itself: a run without Beam's
    type check (pipeline/cli.py's local runner) leaves a step's declared output type unused."""
    pcoll.element_type = ShardBatch
    return pcoll


def split_kinds(outputs, label: str):
    """(kind, value) outputs of one step → (its MAIN values, its ERRORS rows).

    Two plain FlatMaps instead of tagged outputs: they fuse with the step on the
    runners that fuse, and the DaskRunner keeps them apart (module docstring)."""
    return (outputs | f"{label}Main" >> beam.FlatMap(_of_kind, MAIN),
            outputs | f"{label}Errors" >> beam.FlatMap(_of_kind, ERRORS))


class _Reporting(beam.DoFn):
    """A DoFn that reports progress to the main process when given a directory
    (pipeline/progress.py; local runs only)."""

    progress = None

    def __init__(self, progress_dir: str | None, kind: str):
        self.progress_dir, self.kind = progress_dir, kind

    def setup(self):
        self.progress = ProgressFile(self.progress_dir, self.kind) if self.progress_dir else None

    def report(self, **counts):
        if self.progress is not None:
            self.progress.add(**counts)

    def finish_bundle(self):
        if self.progress is not None:
            self.progress.flush()


class ReadWarcFile(_Reporting):
    """One WARC file → (MAIN, (site key, PageRecord)) for each HTML 200 page, (ERRORS, row)
    for each error."""

    def __init__(self, config: Config, progress_dir: str | None = None):
        super().__init__(progress_dir, READ)
        self.limits = config.read
        self.rules = config.read.parse_rules()

    def process(self, path: str):
        started = time.monotonic()
        pages = 0
        try:
            stream = open_warc(path)
        except Exception as exc:  # missing file, permissions, remote FS failure
            self.report(files=1)
            yield _error(url=None, warc_file=path, warc_offset=None, stage="read",
                         error_class=type(exc).__name__, message=str(exc)[:500])
            return
        with stream:
            for item in read_pages(stream, path, self.limits, rules=self.rules):
                self.report(records=1)
                if isinstance(item, Skipped) and item.reason == "empty_file":
                    # A 0-byte input is an input lost (a failed copy, a truncated upload), not
                    # a record: an errors row names it, and the command line counts it unread.
                    yield _error(url=None, warc_file=path, warc_offset=None, stage="read",
                                 error_class="EmptyFile", message="the file is empty (0 bytes)")
                elif isinstance(item, Skipped):
                    _count(f"records_{item.record_type or 'none'}")
                    _count(f"skipped_{item.reason}")
                elif isinstance(item, PageError):
                    if item.response is not None:
                        _count("records_response")
                        _count("html_200")
                    yield _error(**item.row)
                else:
                    _count("records_response")
                    _count("html_200")
                    record = item.record
                    pages += 1
                    self.report(pages=1)
                    _count("html_bytes", len(item.response.body))
                    yield MAIN, (record.site, record)
        self.report(files=1)
        log.info("read %s: %d pages in %.1fs", path, pages, time.monotonic() - started)


def _by_cell(item):
    """(site, PageRecord) → (its cell key, the record packed): what crosses the shard join and
    the group by shard (pipeline/wire.py). The step runs fused with the read, which hands it
    the record as an object; `compact_bytes` counts what the shuffles carry."""
    site, record = item
    directory, slot = page_cell(record.url)
    packed = pack_record(record)
    _count("compact_bytes", len(packed))
    return (site, directory, slot), packed


class CellCounts(beam.CombineFn):
    """Pages per cell of one site, as [(cell, pages)] in cell order: one combine per site
    where a count per cell and then a group by site took two shuffles. On the runners that
    combine before the shuffle (the local runner, Dataflow, Flink, Spark) a site's counts
    cross it as one dict per bundle."""

    def create_accumulator(self):
        return {}

    def add_input(self, acc, cell):
        acc[cell] = acc.get(cell, 0) + 1
        return acc

    def merge_accumulators(self, accumulators):
        merged: dict = {}
        for acc in accumulators:
            for cell, pages in acc.items():
                merged[cell] = merged.get(cell, 0) + pages
        return merged

    def extract_output(self, acc):
        return sorted(acc.items())


def _cell_shards(item, max_site_pages):
    """One site's pages counted per cell → (cell key, shard) for each of its cells."""
    site, cell_counts = item
    cell_counts = [(cell, count) for cell, count in cell_counts]
    plan = plan_shards(site, cell_counts, max_site_pages)
    pages = sum(plan.sizes)
    if pages > max_site_pages:
        _count("hot_sites")
        _count("hot_site_shards", plan.shards)
        _count("pages_in_hot_sites", pages)
        log.info("hot site %s: %d pages in %d shards (largest %d)",
                 site, pages, plan.shards, max(plan.sizes))
    for (directory, slot), _pages in cell_counts:
        yield (site, directory, slot), plan.shard_of_cell((directory, slot))


def _shard_records(item):
    """A cell's group, its shard number (the one int) and its packed records (bytes) in any
    order, read twice rather than listed."""
    (site, _directory, _slot), values = item
    shard = next(value for value in values if isinstance(value, int))
    for value in values:
        if not isinstance(value, int):
            yield (site, shard), value


def shard_sites(pages, max_site_pages: int):
    """(site, PageRecord) → ((site, shard), packed record), every shard at most
    `max_site_pages` pages.

    The shard of a page depends on its site's pages counted per cell
    (transforms/shards.py: first directory, hash slot), so it is found by two
    joins, not by side inputs (which Beam's DaskRunner does not pass,
    docs/runners.md "Dask"):

    1. Every record is keyed by its cell (site, directory, slot), and only
       integers are counted, per cell within one combine per site: the plan of
       a site is made from its cell counts (at most directories × 1,024 of them,
       whatever the site's size) and emitted as one (cell, shard) pair per cell.
    2. The records join that per-cell shard number by cell key: one group-by-key of both,
       told apart by type (an int, bytes), where a CoGroupByKey added a tagging step per
       input and one that lists each group.

    The join is by cell, not by site, so that a group holds the records of one
    cell, never a whole hot site: a plan cuts between cells, so a cell lies in
    one shard and is at most as large as it (a single slot over the limit is
    the one case transforms/shards.py cannot split either). Memory per worker
    thus stays bounded by the shard. The price is that the compact pages go
    through a shuffle twice (this join, then the group by shard) where a side
    input would need one; the counting shuffles only integers.
    """
    by_cell = pages | "CellKeys" >> beam.Map(_by_cell)
    cell_shards = (by_cell
                   | "CellOfSite" >> beam.Map(lambda item: (item[0][0], (item[0][1], item[0][2])))
                   | "PagesPerCell" >> beam.CombinePerKey(CellCounts())
                   | "PlanShards" >> beam.FlatMap(_cell_shards, max_site_pages))
    return ((by_cell, cell_shards)
            | "CellsAndShards" >> beam.Flatten()
            | "JoinShards" >> beam.GroupByKey()
            | "ShardKey" >> beam.FlatMap(_shard_records))


# A shard of this many pages or more gives the C heap's free memory back to the system when
# it is done (give_back_heap). Its pages, unpacked arrays and ETDM indexes were freed into the
# heap, where glibc keeps them, and the part writer that comes next does not need all of it:
# one 2,000-page shard, 1 worker, the heap as bound_c_heap sets it (pipeline/heap.py), peaks
# at 294-300 MB RSS with the trim and 314-320 MB without (docs/performance.md, "Memory per
# worker"). A trim walks the heap's free chunks, a few milliseconds; a shard of 250 pages
# took a second or more, so a smaller one keeps its memory for the next.
TRIM_AFTER_PAGES = 250


class ProcessSite(_Reporting):
    """One site shard (its records, packed (pipeline/wire.py) or PageRecords, and with --state
    its stored pages) → (MAIN, pages row), (ERRORS, errors row), (CLUSTER_ROWS, sites row),
    (STATE_PAGES, StoredPage) and, with output.links, (PAGE_LINKS, PageLinks) outputs and, after
    them, with `targets`, one (LINK_TARGETS, [(target URL, the source keys of the shard's pages
    linking to it)]) of the distinct targets the target join looks up (`join_link_targets`):
    one element, not one per target, through the steps that pick each kind of output
    (`_of_kind`).

    With `packed_texts` a pages row carries its long texts packed (process_site's
    `packed_texts`, compression.PACKED_TEXTS; those columns None): for a graph whose rows go to
    parts.WriteParts, which unpacks them into Arrow columns as they are. With
    `count_duplicates`, each pages row that is a duplicate is counted by its kind here. With
    `batched`, the MAIN, ERRORS, CLUSTER_ROWS and PAGE_LINKS outputs of the shard come as one
    (kind, [value, ...]) each, after the shard's last row and before LINK_TARGETS: what
    parts.WriteParts takes as one element per part (build_pipeline), where a value each made
    every page several elements of every step after this one."""

    def __init__(self, config: Config, progress_dir: str | None = None, keep_state: bool = False,
                 packed_texts: bool = False, targets: bool = True, count_duplicates: bool = False,
                 batched: bool = False):
        super().__init__(progress_dir, SITES)
        self.config = config
        self.state = config.state if keep_state else None
        self.packed_texts, self.targets, self.count_duplicates = packed_texts, targets, count_duplicates
        self.batched = batched

    def setup(self):
        super().setup()
        # Once per worker process: every site of the worker shares the model.
        self.model = load_main_content_model(self.config.main_content)

    def process(self, element):
        (site, shard), records = element
        stored = ()
        if isinstance(records, dict):     # joined with the state (build_pipeline, --state)
            records, stored = records["records"], list(records["stored"])
        records = unpacked_records(records)
        if not records:
            return
        wanted: dict | None = {} if self.targets else None
        batches: dict | None = {} if self.batched else None
        for kind, row in process_site(site, records, self.config, self.model, shard=shard,
                                      stored=stored, state=self.state, packed_texts=self.packed_texts):
            if kind == "sites":
                _count("template_clusters")
                out = CLUSTER_ROWS
            elif kind == "state":
                yield STATE_PAGES, row
                continue
            elif kind == "links":
                if wanted is not None:
                    for target in row.targets():
                        wanted.setdefault(target, []).append(row.key)
                out = PAGE_LINKS
            else:
                self.report(pages=1)
                if kind == "pages":
                    _count("pages")
                    _count(f"candidate_method_{row['candidate_method']}")
                    if self.count_duplicates and row.get("duplicate_kind"):
                        _count(f"duplicates_{row['duplicate_kind']}")
                    out = MAIN
                else:
                    _count(f"errors_{row['stage']}")
                    out = ERRORS
            if batches is None:
                yield out, row
            else:
                batches.setdefault(out, []).append(row)
        if batches:
            yield from batches.items()
        if wanted:
            yield LINK_TARGETS, [(target, tuple(keys)) for target, keys in wanted.items()]
        self.report(sites=1)
        if len(records) >= TRIM_AFTER_PAGES:
            del records, stored
            give_back_heap()


class CountMenus(beam.CombineFn):
    """Per (site, menu signature): number of pages and the smallest page URL with its links."""

    def create_accumulator(self):
        return 0, None, None

    def add_input(self, acc, item):
        url, links = item
        return self.merge_accumulators([acc, (1, url, links)])

    def merge_accumulators(self, accumulators):
        count, best_url, best_links = 0, None, None
        for c, url, links in accumulators:
            count += c
            if url is not None and (best_url is None or url < best_url):
                best_url, best_links = url, links
        return count, best_url, best_links

    def extract_output(self, acc):
        return acc


def _menu_key(row):
    if row["menu_links"] and row.get("menu_signature"):
        yield (row["site"], row["menu_signature"]), (row["url"], row["menu_links"])


def _menu_row(item):
    (site, signature), (count, example_url, links) = item
    return {"site": site, "menu_signature": signature, "menu_links": links,
            "pages": count, "example_url": example_url}


class CanonicalAcrossSites(beam.CombineFn):
    """Per content hash: (pages, the best page's key, the page) — transforms/duplicates.py."""

    def create_accumulator(self):
        return 0, None, None

    def add_input(self, acc, candidate):
        key, page = candidate
        return fewer_across_sites(acc, (1, key, page))

    def merge_accumulators(self, accumulators):
        merged = (0, None, None)
        for acc in accumulators:
            merged = fewer_across_sites(merged, acc)
        return merged

    def extract_output(self, acc):
        return acc


def _canonical_per_salt(item):
    content_hash, (count, _key, page) = item
    if count > 1:
        for salt in range(ACROSS_SALTS):
            yield (content_hash, salt), page


def _marked_across_sites(item):
    _key, joined = item
    canonical = list(joined["canonical"])
    for packed in joined["rows"]:
        row = unpack_row(packed)
        if canonical:
            marked = mark_across_sites(row, canonical[0])
            if marked is not row:
                _count(f"duplicates_{marked['duplicate_kind']}")
            row = marked
        yield row


def exact_duplicates_across_sites(pages):
    """Pages rows with exact duplicates across sites (and across a hot site's shards) marked:
    one combine per content hash finds each hash's canonical page, then the rows that take
    part meet it in groups keyed by (hash, salt) (transforms/duplicates.py). Rows without a
    content hash, or already a duplicate within their site, pass by."""
    taking_part = (pages | "AcrossSitesRows" >> beam.Filter(across_sites_eligible))
    passing = (pages | "AcrossSitesOthers" >> beam.Filter(lambda row: not across_sites_eligible(row)))
    canonical = (taking_part
                 | "ByContentHash" >> beam.Map(lambda row: (row["content_hash"], across_sites_candidate(row)))
                 | "CanonicalPerHash" >> beam.CombinePerKey(CanonicalAcrossSites())
                 | "CanonicalPerSalt" >> beam.FlatMap(_canonical_per_salt))
    # Packed as for the write shuffle (pipeline/parts.py): a pages row is mostly text, and as a
    # plain dict it tripled the join's bytes and the local runner's memory.
    rows = taking_part | "BySaltedHash" >> beam.Map(
        lambda row: ((row["content_hash"], across_sites_salt(row)), pack_row(row)))
    marked = ({"rows": rows, "canonical": canonical}
              | "JoinCanonical" >> beam.CoGroupByKey()
              | "MarkAcrossSites" >> beam.FlatMap(_marked_across_sites))
    return (marked, passing) | "AllPages" >> beam.Flatten()


def _link_targets(links):
    """A page's distinct link targets, each with a tuple of one source key, the page's: the
    targets of a caller that gives no shard's batches (join_link_targets)."""
    key = (links.key,)
    for target in links.targets():
        yield target, key


def _present_targets(item):
    """(target, tuples of the source keys of pages linking to it, one per shard, and one None
    per pages row at that URL) → (source key, target) for each page linking to it, when some
    pages row is at the target.

    The group is read twice and never listed: first up to its first None (a pages row there),
    then, only if there was one, for the source keys. A hot target (a URL every page links
    to) costs its group's values one after the other, never at once, a value at most one
    shard's keys (16 bytes a page): runners that page large groups in from the shuffle
    (Dataflow, Flink, Spark) hold a page of them; the local runner and Dask hold their
    groups in memory anyway."""
    target, values = item
    if any(value is None for value in values):
        for value in values:
            if value is not None:
                for key in value:
                    yield key, target


def _link_rows(item):
    """A page's PageLinks with target_in_input set: its rows, which the writer makes as columns
    (pipeline/parts.py, is_column_batch). Its group holds the PageLinks and the page's present
    targets (str), told apart by type."""
    _key, values = item
    present = {value for value in values if isinstance(value, str)}
    for links in values:
        if not isinstance(links, str) and len(links):
            links.set_present(present)
            _count("link_rows", len(links))
            yield links


def join_link_targets(page_links, pages, shard_targets=None):
    """PageLinks of every pages row (transforms/outlinks.py) → the same with target_in_input
    (whether each target URL has a pages row in this run), for the writer.

    Without side inputs (the DaskRunner passes none, module docstring), by two shuffles of
    small values:

    1. Each shard's distinct targets (`shard_targets`, ProcessSite's LINK_TARGETS: a target
       with the 16-byte source keys of the shard's pages linking to it; without them, each
       page's targets from `page_links`) join the pages rows' url_normalized by target URL;
       for each target some pages row is at, its (source key, target) pairs come out
       (`_present_targets`: a hot target's group streams). Targets that are pages rows of
       the page's own shard are known there (PageLinks.set_local) and skip the join: on
       docsites-dev about half of a page's distinct targets. One element per target and
       shard, not per target and page, because a runner's cost is mostly per element (about
       12 µs locally) and a site's pages share most of their targets: news-ctf2015-dev's
       30,000 (target, page) pairs are 5,600 targets.
    2. Those pairs join the PageLinks (one compact value per page: arrays and an LZ4-packed
       string) by source key, one group-by-key of both (told apart by type), which sets each
       link's target_in_input. The writer takes the PageLinks as they are, a batch of rows
       made as Arrow columns (pipeline/parts.py): no link is ever a dict in the graph. A
       group here is one page: its PageLinks and at most its distinct targets.

    Memory is bounded by one target's group in step 1 (streamed, a value at most a shard's
    keys) and one page's in step 2; what crosses the shuffles is the pages' PageLinks once,
    each shard's targets with their pages' keys once, and the (source key, target) pairs of
    the present targets once."""
    wanted = (shard_targets if shard_targets is not None
              else page_links | "LinkTargets" >> beam.FlatMap(_link_targets))
    at_pages = pages | "PageUrls" >> beam.Map(lambda row: (row["url_normalized"], None))
    present = ((wanted, at_pages)
               | "TargetsAndPages" >> beam.Flatten()
               | "GroupTargets" >> beam.GroupByKey()
               | "PresentTargets" >> beam.FlatMap(_present_targets))
    by_source = page_links | "LinksBySource" >> beam.Map(lambda links: (links.key, links))
    return ((by_source, present)
            | "LinksAndPresent" >> beam.Flatten()
            | "JoinPresent" >> beam.GroupByKey()
            | "LinkRows" >> beam.FlatMap(_link_rows))


def _unjoined_link_rows(links: list):
    """A site shard's PageLinks (ProcessSite's `batched`) as they leave it, target_in_input as
    it stands (null, for a caller that fills it over more pages than the graph holds:
    build_pipeline's `link_targets`): one list of those with links, none if none has."""
    kept = [one for one in links if len(one)]
    if kept:
        _count("link_rows", sum(map(len, kept)))
        yield kept


class _LinksPresentIn(beam.DoFn):
    """A site shard's PageLinks (ProcessSite's `batched`) with target_in_input from `lookup`,
    which knows the run's pages rows (build_pipeline's `link_targets`), where join_link_targets
    joins them in the graph: `lookup.contains(urls)`, a boolean per URL (partitions.SpilledUrls,
    whose digest of a URL is compiled), is asked about every link outside a page's shard at once;
    a digest costs less than keeping answers per target would. What leaves is _unjoined_link_rows'."""

    def __init__(self, lookup):
        self.lookup = lookup

    def process(self, links: list):
        contains = self.lookup.contains
        for one in links:
            if len(one):
                one.set_present_by(contains)
        yield from _unjoined_link_rows(links)


def dataset_prefix(output: str, name: str, part: str = "part") -> str:
    return FileSystems.join(output, name, part)


def clear_outputs(output: str) -> None:
    """Remove part files of an earlier run, temporary files a failed run left
    (pipeline/parts.py) and the earlier run's _SUCCESS, so a dataset never mixes two runs and
    no marker describes files that are gone (watch mode, which writes into the output)."""
    from sitestrip.pipeline.publish import SUCCESS
    marker = FileSystems.join(output, SUCCESS)
    if FileSystems.exists(marker):
        FileSystems.delete([marker])
    for name in DATASETS:
        prefix = dataset_prefix(output, name)
        directory, base = FileSystems.split(prefix)
        patterns = [prefix + "-*", FileSystems.join(directory, f"_{base}-*")]
        matched = [m.path for r in FileSystems.match(patterns) for m in r.metadata_list]
        if matched:
            FileSystems.delete(matched)


def pages_schema(config: Config):
    """The pages schema with the main-content method and, for the block classifiers, the
    model's id and feature set in its metadata: a row set says which model made it. Loading
    the model here also refuses a bad model file before any worker starts."""
    meta = {"sitestrip.main_content.method": config.main_content.method}
    model = load_main_content_model(config.main_content)
    if model is not None:
        meta.update({"sitestrip.model_id": model.model_id, "sitestrip.feature_set": model.feature_set,
                      "sitestrip.model_threshold": repr(model.threshold)})
    return DATASETS["pages"].with_metadata({**(DATASETS["pages"].metadata or {}),
                                            **{k.encode(): v.encode() for k, v in meta.items()}})


def _stored_for_shards(item):
    """A site's stored pages, once for each of its shards in this run."""
    site, joined = item
    shards, stored = list(joined["shards"]), list(joined["stored"])
    for shard in shards:
        for page in stored:
            yield (site, shard), page


def _carried(item):
    """The stored pages of a site this run has no page of: kept as they are."""
    site, joined = item
    if not list(joined["shards"]):
        for page in joined["stored"]:
            yield site, page


def _merged_state(item, config):
    site, stored = item
    for page in merge_site_state(site, stored, config.state, config.duplicates.max_fingerprints_per_site):
        row = stored_row(page)
        if row["kind"] == "page":
            _count("state_pages")
            _count("state_bytes", len(row["page_blob"]) + len(row["page_fields"]))
        else:
            _count("state_fingerprints")
        yield row


def read_warcs(p: beam.Pipeline, warc_paths: list[str], config: Config, progress_dir: str | None = None,
               spread: bool = True):
    """The WARC files' (MAIN, (site, PageRecord)) and (ERRORS, row) outputs (ReadWarcFile).
    `spread` False: no reshuffle of the files, for a runner of one worker (a local run's
    spill, pipeline/partitions.py), which it could only spread to that worker."""
    paths = (p
             # One file per element; the reshuffle spreads files over workers. (Create's own
             # reshuffle is off: it would be a second one, a group-by-key stage for nothing.)
             | "WarcPaths" >> beam.Create(sorted(warc_paths), reshuffle=False))
    if spread:
        paths = paths | "SpreadFiles" >> beam.Reshuffle()
    return paths | "ReadWarc" >> beam.ParDo(ReadWarcFile(config, progress_dir))


def build_pipeline(p: beam.Pipeline, warc_paths: list[str], output: str, config: Config,
                   progress_dir: str | None = None, part_files: int | None = None,
                   state_dir: str | None = None, state_version: str | None = None,
                   source=None, part_name: str = "part", link_targets=True,
                   row_spill: str | None = None):
    """Add the sitestrip graph to `p`; returns the pages, menus and errors PCollections of rows
    (the sites rows, design §11, and with output.links the links rows are written alongside).

    Each dataset is written as `part_files` Parquet files (pipeline/parts.py);
    by default one per input WARC file, so a part holds about the rows of one
    input file. With `progress_dir` (a local directory the workers can write),
    the reading and per-site steps report their progress there
    (pipeline/progress.py). With `state_dir` (pipeline/state_store.py), each site shard also
    gets its site's stored pages of earlier runs as candidates, and the new state is
    written as the next version, switched to only after every part is written; its
    files are checked here, before any worker starts (StateError names a bad one). With
    `state_version` the new state is written as that version and CURRENT is left alone: the
    caller moves it (pipeline/cli.py does, once the output is published).

    With `source`, a function of `p` that returns site shards, ((site, shard), its
    PageRecords), and errors rows (None: none), the graph starts from those instead of reading
    `warc_paths` and grouping the pages by shard: a partition of a local run
    (pipeline/partitions.py, never with `state_dir`), whose part files are named
    `{part_name}-XXXXX-of-YYYYY.parquet`. `link_targets` says how the links rows get
    target_in_input: True, by the target join over this graph's pages rows
    (join_link_targets); False, not at all (null, for the caller to fill); or an object
    whose `contains(urls)` says which of a page's link targets have a pages row in the run
    (a boolean per URL: a local run's spilled pages, partitions.SpilledUrls), set as each
    page's links leave its shard.

    The pages rows carry their long texts packed (ProcessSite's `packed_texts`) to the
    writer, which unpacks them (parts.WriteParts): what the returned `pages` holds. With
    `row_spill`, a local directory, the rows wait there for their part's writer."""
    parts = part_files if part_files is not None else max(1, len(warc_paths))
    if source is not None:
        if state_dir is not None:
            raise ValueError("build_pipeline: a source of site shards is not joined with a state")
        grouped, read_errors = source(p)
    else:
        site_pages, read_errors = split_kinds(read_warcs(p, warc_paths, config, progress_dir), "Read")
        keyed = shard_sites(site_pages, config.site.max_site_pages)
        if state_dir is None:
            grouped = keyed | "GroupBySite" >> beam.GroupByKey()
        else:
            files = state_files(state_dir)
            version = state_version or next_version(current_version(state_dir))
            stored = (p
                      | "StateFiles" >> beam.Create(files)
                      | "ReadState" >> beam.FlatMap(read_state_file))
            shard_keys = (keyed
                          | "ShardOfSite" >> beam.Map(lambda item: (item[0][0], item[0][1]))
                          | "DistinctShards" >> beam.Distinct())
            per_site = {"shards": shard_keys, "stored": stored} | "JoinState" >> beam.CoGroupByKey()
            grouped = ({"records": keyed, "stored": per_site | "StoredForShards" >> beam.FlatMap(_stored_for_shards)}
                       | "GroupBySite" >> beam.CoGroupByKey())
            carried = per_site | "CarriedState" >> beam.FlatMap(_carried)
    joined = config.output.links and link_targets is True
    # The shard's rows come in one element per kind (ProcessSite's `batched`): the writer takes
    # them so, one element per part (parts.WriteParts), and the steps that need a row each get
    # them one by one.
    sites = _batches(grouped | "ProcessSite" >> beam.ParDo(ProcessSite(
        config, progress_dir, keep_state=state_dir is not None, packed_texts=True, targets=joined,
        count_duplicates=config.duplicates.enabled, batched=True)))
    page_batches = _batches(sites | "SiteMain" >> beam.FlatMap(_of_kind, MAIN))
    site_error_batches = _batches(sites | "SiteErrors" >> beam.FlatMap(_of_kind, ERRORS))
    pages = page_batches | "SitePages" >> beam.FlatMap(_each)
    site_errors = site_error_batches | "SiteErrorRows" >> beam.FlatMap(_each)
    written_pages = page_batches
    if config.duplicates.enabled and config.duplicates.across_sites:
        pages = written_pages = exact_duplicates_across_sites(pages)
    clusters = _batches(sites | "SiteClusters" >> beam.FlatMap(_of_kind, CLUSTER_ROWS))
    errors = (site_errors if read_errors is None
              else (read_errors, site_errors) | "AllErrors" >> beam.Flatten())
    menus = (pages
             | "MenuKeys" >> beam.FlatMap(_menu_key)
             | "CountMenus" >> beam.CombinePerKey(CountMenus())
             | "MenuRows" >> beam.Map(_menu_row))
    schemas = dict(DATASETS, pages=pages_schema(config))
    rows_by_name = {"pages": written_pages, "menus": menus, "errors": errors, "sites": clusters}
    if config.output.links:
        link_batches = _batches(sites | "SiteLinks" >> beam.FlatMap(_of_kind, PAGE_LINKS))
        if joined:
            page_links = link_batches | "PageLinks" >> beam.FlatMap(_each)
            shard_targets = sites | "SiteTargets" >> beam.FlatMap(_each_of_kind, LINK_TARGETS)
            rows_by_name["links"] = join_link_targets(page_links, pages, shard_targets)
        elif link_targets is False:
            rows_by_name["links"] = _batches(link_batches | "LinkRows" >> beam.FlatMap(_unjoined_link_rows))
        else:
            rows_by_name["links"] = _batches(link_batches | "LinkRows" >> beam.ParDo(_LinksPresentIn(link_targets)))
    datasets = {name: PartDataset(dataset_prefix(output, name, part_name), schemas[name], PART_KEYS[name],
                                  PART_BY.get(name))
                for name in rows_by_name}
    written = [rows_by_name | "Write" >> WriteParts(datasets, parts, spill_dir=row_spill)]
    if state_dir is not None:
        new_state = (sites
                     | "StatePages" >> beam.FlatMap(_of_kind, STATE_PAGES)
                     | "StateBySite" >> beam.Map(lambda page: (page.site, page)))
        merged_state = ((new_state, carried)
                        | "AllState" >> beam.Flatten()
                        | "GroupState" >> beam.GroupByKey()
                        | "MergeState" >> beam.FlatMap(_merged_state, config))
        state_written = ({"state": merged_state}
                         | "WriteState" >> WriteParts(
                             {"state": PartDataset(version_prefix(state_dir, version), STATE, STATE_KEYS)},
                             parts))
        if state_version:
            written = written + [state_written]
        else:
            # CURRENT moves only after the new version and the output datasets are written.
            switched = ((tuple(written) + (state_written,))
                        | "BeforeSwitch" >> beam.Flatten()
                        | "OneKey" >> beam.Map(lambda path: (None, path))
                        | "AllParts" >> beam.GroupByKey()
                        | "SwitchState" >> beam.Map(lambda _: write_current(state_dir, version)))
            written = written + [switched]
    # The written file names of all datasets, so that the last step of the graph
    # depends on every write (the DaskRunner runs only what the last step needs).
    _ = tuple(written) | "AllWritten" >> beam.Flatten()
    return pages, menus, errors

"""The product's core, run in-process over a corpus: what tuning and the per-stage
cost breakdown need without a Beam run.

`process_site` is the same function the pipeline's ProcessSite step calls, so a
row here equals the pipeline's row for the same site (tests check this); what
is skipped is Beam's plumbing. Records are read and parsed once and reused for
every configuration tried, and sites are spread over worker processes.
"""
from __future__ import annotations

import multiprocessing as mp
import os
from collections import defaultdict
from dataclasses import dataclass, field

from sitestrip.configs import ReadLimits
from sitestrip.pipeline.page_source import Page, PageError, read_pages
from sitestrip.pipeline.warc import open_warc
from sitestrip.transforms.charset import decode_html
from sitestrip.transforms.site_step import process_site
from sitestrip.transforms.urls import normalize_url


@dataclass
class LoadedCorpus:
    """A corpus read and parsed once: site → its page records; url → decoded HTML."""
    records: dict = field(default_factory=dict)        # site key → [PageRecord]
    html: dict = field(default_factory=dict)           # url → decoded HTML (peers read this)
    html_bytes: int = 0                                # undecoded payload bytes of the pages
    failures: dict = field(default_factory=dict)       # url → why its page could not be read


def load_corpus(warc_paths, limits: ReadLimits = ReadLimits(), *, keep_html: bool = False,
                wanted=None, sites=None) -> LoadedCorpus:
    """Read every HTML 200 page of the WARC files into PageRecords, timed as the pipeline times
    them (read and parse CPU per page). `wanted(url)` restricts the decoded HTML kept, `sites`
    (a set of site keys) the records kept."""
    loaded = LoadedCorpus()
    by_site = defaultdict(list)
    for path in warc_paths:
        with open_warc(path) as stream:
            for item in read_pages(stream, path, limits):
                if isinstance(item, PageError):
                    row = item.row
                    if row["url"] or item.response is not None:
                        loaded.failures[normalize_url(row["url"]) or row["url"]] = \
                            f"{row['stage']}: {row['error_class']}: {row['message']}"
                    continue
                if not isinstance(item, Page):
                    continue
                record, response = item.record, item.response
                if sites is not None and record.site not in sites:
                    continue
                by_site[record.site].append(record)
                loaded.html_bytes += len(response.body)
                if keep_html and (wanted is None or wanted(record.url)):
                    loaded.html[record.url] = decode_html(response.body, response.http_charset)[0]
    loaded.records = dict(by_site)
    return loaded


# Worker processes inherit the records through fork instead of pickling them per task.
_SHARED: dict = {}


def _site_rows(task):
    site, config = task
    return [row for kind, row in process_site(site, _SHARED["records"][site], config) if kind == "pages"]


def extract_rows(loaded: LoadedCorpus, config, processes: int | None = None) -> list[dict]:
    """Pages rows of every site under `config`, sites spread over `processes` workers."""
    processes = processes or os.cpu_count() or 1
    # Largest sites first: the pool's tail is then made of small tasks.
    sites = sorted(loaded.records, key=lambda s: -len(loaded.records[s]))
    tasks = [(site, config) for site in sites]
    if processes == 1 or len(sites) == 1 or "fork" not in mp.get_all_start_methods():
        _SHARED["records"] = loaded.records
        results = map(_site_rows, tasks)
        return [row for rows in results for row in rows]
    _SHARED["records"] = loaded.records
    with mp.get_context("fork").Pool(processes) as pool:
        results = pool.map(_site_rows, tasks, chunksize=1)
    return [row for rows in results for row in rows]

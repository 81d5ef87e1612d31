"""One WARC stream's pages: the reader's records (pipeline/warc.py) parsed into PageRecords,
and errors rows for what could not be read or parsed.

The one loop from records to pages, used by the pipeline's read step (graph.ReadWarcFile,
and so watch mode), `sitestrip inspect`, the bench and the scripts that read pages. Opening
the file stays with the caller: a run makes an errors row of a file it cannot open, inspect
a message, the bench an exception.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import BinaryIO, Callable, Iterator

from sitestrip.configs import ReadLimits
from sitestrip.pipeline.warc import HtmlResponse, ReadError, Skipped, iter_warc_records
from sitestrip.transforms.site_step import PageRecord, StageError, error_row, record_from_response
from sitestrip.transforms.page import ParseRules


@dataclass
class Page:
    """An HTML 200 page: the response as read (its body and HTTP charset, for callers that
    keep the HTML) and its PageRecord (None when the source was asked not to parse)."""
    response: HtmlResponse
    record: PageRecord | None


@dataclass
class PageError:
    """One errors row (transforms.site_step.error_row): a record, a damaged part of the file or
    the file that could not be read, or, with `response`, an HTML 200 page that was read but
    could not be parsed."""
    row: dict
    response: HtmlResponse | None = None


def read_pages(stream: BinaryIO, warc_file: str, limits: ReadLimits = ReadLimits(), *,
               rules: ParseRules | None = None, wanted: Callable[[str], bool] | None = None,
               parse: bool = True) -> Iterator[Page | PageError | Skipped]:
    """A Page, PageError or Skipped (pipeline.warc) for each item the reader yields, in file
    order. Each record is parsed under `rules` (default: `limits`' parse rules), its read and
    parse CPU time in its timing_ms. `wanted(url)` picks the pages that are parsed and yielded
    (inspect reads one site); without `parse`, pages come without a record."""
    rules = limits.parse_rules() if rules is None else rules
    for item, read_ms in with_read_ms(iter_warc_records(stream, warc_file, limits)):
        if isinstance(item, HtmlResponse):
            if wanted is not None and not wanted(item.url):
                continue
            if not parse:
                yield Page(item, None)
                continue
            try:
                record = record_from_response(item, max_nodes=limits.max_nodes, read_ms=read_ms, rules=rules)
            except StageError as exc:
                yield PageError(error_row(url=item.url, warc_file=item.warc_file, warc_offset=item.warc_offset,
                                          stage=exc.stage, error_class=exc.error_class, message=exc.message),
                                item)
                continue
            yield Page(item, record)
        elif isinstance(item, ReadError):
            yield PageError(error_row(url=item.url, warc_file=item.warc_file, warc_offset=item.warc_offset,
                                      stage=item.stage, error_class=item.error_class, message=item.message))
        else:
            yield item


def with_read_ms(items: Iterator) -> Iterator[tuple[object, float]]:
    """(item, thread CPU ms spent producing it) for each item of a record iterator: the
    read stage's cost of each page, as the pipeline reports it in timing_ms."""
    while True:
        clock = time.thread_time()
        item = next(items, None)
        if item is None:
            return
        yield item, (time.thread_time() - clock) * 1000.0

"""The `status` of a pages row and the notes that decide it (docs/output.md "Status").

A row's notes come from reading the record (a payload cut short:
pipeline/warc.py), from parsing it (transforms/page.py) and from the WARC
record itself (WARC-Truncated). The status sums them up in one column a
consumer can filter on; a row whose status is not `ok` or `empty` carries a
note saying why.
"""
from __future__ import annotations

from typing import Iterable

OK = "ok"                        # the whole payload, parsed, with visible text
EMPTY = "empty"                  # the whole payload, parsed, no visible text
PARTIAL = "partial"              # text of a payload known to be incomplete
PARSE_FAILED = "parse_failed"    # lxml built no tree from a non-blank document: no text
STATUSES = (OK, EMPTY, PARTIAL, PARSE_FAILED)

# Note prefixes; what follows says what exactly.
PAYLOAD_CUT = "payload cut: "    # the HTTP body ends early: chunks, compressed stream, Content-Length
PARSE_FAILURE = "parse failed: "
WARC_TRUNCATED = "WARC-Truncated: "   # the crawler cut the record (the `truncated` column)


def page_status(notes: Iterable[str], words: int) -> str:
    notes = tuple(notes)
    if any(note.startswith(PARSE_FAILURE) for note in notes):
        return PARSE_FAILED
    if any(note.startswith((PAYLOAD_CUT, WARC_TRUNCATED)) for note in notes):
        return PARTIAL
    return OK if words else EMPTY

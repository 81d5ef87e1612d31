"""A page record as it crosses the shuffles: one bytes value, packed once when it is keyed
for the shard join (pipeline/graph.py, fused with the read step) and unpacked once by the
per-site step. A local run's spill (pipeline/partitions.py) writes the same bytes.

A PageRecord crosses two group-by-keys between those steps (the shard join, then the group by
shard). Given to the runner as an object, it was pickled and unpickled at each crossing, and
Beam's local runner decodes a group-by-key's input to group it and encodes it again to hand
the groups on: four pickles and four unpickles of the record and its compact page per run,
each re-packing the page's node extras (transforms/meta.py, JSON). As bytes, every crossing is
a copy, on every runner, and the record is packed and unpacked once.

Layout: one pickle of the PageRecord fields in their declared order, the compact page's state
in place of the page (CompactPage.__getstate__: its node arrays as one compressed blob).
Pickle keeps every value and type exactly; the page's blob is compressed already, so nothing
is compressed twice."""
from __future__ import annotations

import dataclasses
import pickle

from sitestrip.pipeline.page_source import PageRecord
from sitestrip.transforms.page import CompactPage

_FIELDS = tuple(f.name for f in dataclasses.fields(PageRecord) if f.name != "page")


def pack_record(record: PageRecord) -> bytes:
    return pickle.dumps((tuple(getattr(record, name) for name in _FIELDS), record.page.__getstate__()),
                        protocol=pickle.HIGHEST_PROTOCOL)


def unpack_record(packed: bytes) -> PageRecord:
    values, state = pickle.loads(packed)
    page = CompactPage.__new__(CompactPage)
    page.__setstate__(state)
    return PageRecord(page=page, **dict(zip(_FIELDS, values)))


def unpacked_records(records):
    """A shard's records (any iterable: the group by shard's values, a partition's
    partitions.ShardRecords) as PageRecords: packed ones (the graph's) unpacked, others as they
    are (a caller that gives PageRecords)."""
    return [unpack_record(r) if isinstance(r, (bytes, memoryview)) else r for r in records]

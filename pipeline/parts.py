"""Parquet part files that every Beam runner can write: no side inputs, no Beam file sink.

Beam's `WriteToParquet` finalizes through side inputs, which Beam's DaskRunner
never passes (docs/runners.md, "Dask"), so sitestrip writes its datasets itself:

- A dataset has a fixed number of parts, `part-00000-of-00004.parquet` and so
  on, under the same prefix as before (`graph.dataset_prefix`). A part without
  rows is not written, except part 0, so a dataset always has a file (a reader
  finds its schema) and an input of 90,000 files does not leave 90,000 empty
  errors files. "-of-N" is the number of parts, not the number of files on disk:
  whether a run is complete is told by `_SUCCESS` (pipeline/publish.py), which
  lists every file with its rows.
- A row goes to part crc32(its identifying fields) mod parts (`PART_KEYS`; `PART_BY`
  where fewer fields pick the part, the links of a page all going to one):
  crc32, not Python's hash(), which is salted per process. Hashing the row's
  identity rather than its site spreads even a hot site's pages over all parts,
  so a part holds about rows / parts rows, whatever the sites.
- The rows of a part are sorted by the same fields, so a part's content does
  not depend on the runner, the number of workers or the shuffle order.
- A part is written under a temporary name in its directory and renamed into
  place through Beam's FileSystems (local, gs://, s3://, hdfs://), so a
  reader never sees half a file, and an attempt that a runner retries or runs
  twice rewrites the same bytes. Temporary names begin with "_", which
  pyarrow, Spark and Hive skip when they list a dataset. A batch run writes its
  parts into a staging directory that is published as a whole
  (pipeline/publish.py), so a failed run's temporary files go with it.

A part is sorted before its rows are unpacked: each row crosses the shuffle with its
sort key (`sort_key`, the order Arrow's sort gives), the writer sorts the keys and
unpacks and converts the rows in that order, BATCH_ROWS at a time, writing a row
group whenever about ROW_GROUP_BYTES of Arrow columns are ready. So the writer holds
a part's packed rows (which the runner hands it anyway), one row group and one batch
of unpacked rows, not the whole part as Arrow columns and their sorted copy: a part
of a Common Crawl input (one part per input WARC file by default, `build_pipeline`,
tens of thousands of pages rows) no longer costs the worker twice its Parquet size
uncompressed.

Rows cross the shuffle to their part packed: one LZ4-compressed pickle per row
(`pack_row`), unpacked by the part's writer; a pages row's long texts inside it come packed
already (transforms/compression.PackedTexts, by the per-site step that held them) and are
turned into Arrow columns from their UTF-8 (`_rows_batch`), never into Python strings. Beam's local runner keeps a whole
step's output in memory and decodes a group-by-key's values into Python objects
before it groups them, so unpacked, every pages row of the run was held there
as dicts at once: on docsites-dev that group-by-key raised the run's peak RSS
from 560 to 760 MB (docs/performance.md, "Memory per worker"). Packed, the runner holds
bytes of a third of their size, and every runner shuffles fewer bytes.
"""
from __future__ import annotations

import os
import pickle
import uuid
import zlib
from dataclasses import dataclass

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from sitestrip.transforms import compression

# The fields that identify a row of each dataset: its part and its place in the part.
# pages: one row per record (a URL captured twice differs in file or offset); menus: one
# row per (site, signature); errors: one row per record or file, the rest breaks ties.
PART_KEYS = {
    "pages": ("url", "warc_file", "warc_offset"),
    "menus": ("site", "menu_signature"),
    "errors": ("warc_file", "warc_offset", "url", "stage", "error_class", "message"),
    "sites": ("site", "shard", "template_cluster"),
    # links: one row per link of a pages row (its record, its place among the page's links).
    "links": ("source_url", "warc_file", "warc_offset", "position"),
}
# Where a dataset's part is picked by fewer fields than PART_KEYS (a prefix of them): every link
# of a page goes to one part, so a page's links cross the shuffle as one batch (WriteParts).
PART_BY = {"links": ("source_url", "warc_file", "warc_offset")}
CODEC = "zstd"
# The codec of the rows crossing the shuffle to their part (pack_row): bytes a run never stores.
ROW_CODEC = "lz4"
# Rows converted to Arrow at a time, and the uncompressed bytes of one row group:
# the values Beam's WriteToParquet uses.
BATCH_ROWS = 1000
ROW_GROUP_BYTES = 64 * 1024 * 1024
# Columns whose values no two rows share: a page's own texts, a state row's page. Parquet's dictionary encoding
# (its default for every column) builds a dictionary of each before it gives up on it, which
# made writing a 9.6 MB group of 482 pages rows peak 32 MB above its columns, 17 MB without
# those dictionaries, in files 3 % smaller; the other columns keep theirs (site, warc_file, ...).
UNSHARED_COLUMNS = frozenset({"main_text", "main_markdown", "nontemplate_text", "page_blob"})


def writer_options(schema: pa.Schema) -> dict:
    """pq.ParquetWriter's options for a dataset of `schema`: codec zstd, lists keeping the
    element name "item" (Beam's WriteToParquet default, which the files of earlier sitestrip
    versions have), and dictionary encoding for every column but UNSHARED_COLUMNS."""
    return {"compression": CODEC, "use_compliant_nested_type": False,
            "use_dictionary": [name for name in schema.names if name not in UNSHARED_COLUMNS]}


def part_of(row: dict, fields: tuple[str, ...], parts: int) -> int:
    """The part file of `row`: stable in every process, Python version and machine."""
    key = "\x1f".join("" if row.get(f) is None else str(row.get(f)) for f in fields)
    return zlib.crc32(key.encode("utf-8", "surrogatepass")) % parts


def pack_row(row: dict) -> bytes:
    """A row as it crosses the shuffle to its part: exact (pickle keeps every value and type as
    it is) and small: the pickle's length, 8 bytes little-endian, then the pickle compressed
    with LZ4 (pyarrow's codec). A pages row's long texts are most of its bytes and come packed
    already (compression.PackedTexts, which the writer turns into Arrow columns as they are:
    `_rows_batch`), so what is compressed here is mostly incompressible, and LZ4 passes over it
    four times as fast as zstd did for the same size: docsites-dev's 1,881 pages rows, 14.2 MB,
    in 0.012 CPU s and 0.012 s back (zstd: 14.1 MB, 0.053 s and 0.026 s); its links rows 3.7
    MB against zstd's 3.1, in 0.008 s and 0.005 s against 0.038 s and 0.025 s. Before the
    texts came packed, zstd over the whole row took 0.15 s and 0.06 s (zlib's fastest level
    0.53 s and 0.33 s)."""
    raw = pickle.dumps(row, protocol=pickle.HIGHEST_PROTOCOL)
    return len(raw).to_bytes(8, "little") + compression.codec(ROW_CODEC).compress(raw, asbytes=True)


def unpack_row(packed: bytes) -> dict:
    size = int.from_bytes(packed[:8], "little")
    return pickle.loads(compression.codec(ROW_CODEC).decompress(memoryview(packed)[8:], decompressed_size=size,
                                                                asbytes=True))


def sort_key(row: dict, fields: tuple[str, ...]) -> tuple:
    """The place of `row` in its part, in the order `sorted_table` gives: by `fields`, a
    null after every value, a str by its code points (which is the order of its UTF-8
    bytes, Arrow's order), a number by its value."""
    return tuple((value is None, value) for value in (row.get(f) for f in fields))


def part_path(prefix: str, index: int, parts: int) -> str:
    return f"{prefix}-{index:05d}-of-{parts:05d}.parquet"


def temporary_path(path: str) -> str:
    """A name next to `path` that dataset readers skip, unique to one write attempt."""
    directory, name = FileSystems.split(path)
    return FileSystems.join(directory, f"_{name}.{uuid.uuid4().hex}.tmp")


def sorted_table(rows, schema: pa.Schema, fields: tuple[str, ...]) -> pa.Table:
    """`rows` (dicts, any iterable) as one Arrow table of `schema`, sorted by `fields`.

    Rows are converted in batches, so at no time are more than BATCH_ROWS of them
    held as Python objects besides what the caller holds."""
    batches, batch = [], []
    for row in rows:
        batch.append(row)
        if len(batch) == BATCH_ROWS:
            batches.append(_rows_batch(batch, schema))
            batch = []
    if batch:
        batches.append(_rows_batch(batch, schema))
    table = pa.Table.from_batches(batches, schema=schema)
    # Nulls last, and strings by their UTF-8 bytes: one total order on every machine.
    return table.sort_by([(f, "ascending") for f in fields])


def write_table(table: pa.Table, path: str) -> None:
    """Write `table` as Parquet to `path` (any Beam filesystem), as Beam's WriteToParquet
    with codec zstd would: the same writer options, row groups of about 64 MiB."""
    rows_per_group = max(1, ROW_GROUP_BYTES * table.num_rows // max(1, table.nbytes))
    temp = temporary_path(path)
    with FileSystems.create(temp, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
        with pq.ParquetWriter(fh, table.schema, **writer_options(table.schema)) as writer:
            if table.num_rows:      # an empty part has no row group, as Beam writes it
                writer.write_table(table, row_group_size=rows_per_group)
    FileSystems.rename([temp], [path])


def is_column_batch(value) -> bool:
    """A batch of rows given as columns (WriteParts): it has `key_row()` and `columns()`."""
    return hasattr(value, "columns") and hasattr(value, "key_row")


class _SpilledRows:
    """Reads packed rows back from their places, one open file per spill file. A place is where
    a packed row waits for its part's writer in a local run's row spill: (file path, offset,
    size), what crosses the write shuffle instead of the row (WriteParts with `spill_dir`). It
    is a plain tuple: Beam's coder writes a tuple of str and ints itself but pickles a subclass
    of tuple, which made a place cost 20 µs through the shuffle instead of 12 (the local
    runner, 20,000 places). Any tuple is a place: a packed row is bytes."""

    def __init__(self):
        self.files: dict = {}

    def packed(self, value):
        if not isinstance(value, tuple):
            return value
        path, offset, size = value
        fh = self.files.get(path)
        if fh is None:
            fh = self.files[path] = open(path, "rb")
        fh.seek(offset)
        got = fh.read(size)
        if len(got) != size:
            raise OSError(f"row spill {path}: {size} bytes at {offset}, {len(got)} there")
        return got

    def close(self):
        for fh in self.files.values():
            fh.close()
        self.files.clear()


def _record_batches(keyed_rows: list, order: list, schema: pa.Schema):
    """The packed values of `keyed_rows` in `order` as Arrow record batches of about BATCH_ROWS
    rows: rows (dicts) converted BATCH_ROWS at a time, column batches (is_column_batch) joined
    column by column until they hold BATCH_ROWS rows, each run of one kind converted apart.
    A value may be the place of a packed row in a row spill (_SpilledRows), read there."""
    spilled = _SpilledRows()
    try:
        yield from _batches(keyed_rows, order, schema, spilled.packed)
    finally:
        spilled.close()


def _batches(keyed_rows: list, order: list, schema: pa.Schema, packed):
    rows, columns, held = [], None, 0
    names = schema.names
    for i in order:
        value = unpack_row(packed(keyed_rows[i][1]))
        if is_column_batch(value):
            if rows:
                yield _rows_batch(rows, schema)
                rows = []
            if columns is None:
                columns = []
            if getattr(type(value), "arrow_batch", None) is not None:
                columns.append(value)
                held += len(value)
            else:
                got = value.columns()
                columns.append(got)
                held += len(got[names[0]])
            if held >= BATCH_ROWS:
                yield _column_batches(columns, schema)
                columns, held = None, 0
            continue
        if columns is not None:
            yield _column_batches(columns, schema)
            columns, held = None, 0
        rows.append(value)
        if len(rows) == BATCH_ROWS:
            yield _rows_batch(rows, schema)
            rows = []
    if columns is not None and held:
        yield _column_batches(columns, schema)
    if rows:
        yield _rows_batch(rows, schema)


def _rows_batch(rows: list, schema: pa.Schema) -> pa.RecordBatch:
    """Rows (dicts) as one record batch of `schema`. Long texts a row carries packed
    (compression.PACKED_TEXTS: a pages row's, as transforms/site_step.py held and sent them)
    become their columns from their UTF-8 as it is, never Python strings: each row's texts
    are unpacked in turn and copied into one buffer per column, so the batch holds its texts
    once, with their offsets (`_TextColumn`). Takes the packed texts out of `rows`."""
    packs = [row.pop(compression.PACKED_TEXTS, None) for row in rows]
    batch = pa.RecordBatch.from_pylist(rows, schema=schema)
    if all(pack is None for pack in packs):
        return batch
    names = [name for name in dict.fromkeys(name for pack in packs if pack is not None for name in pack.names)
             if schema.get_field_index(name) >= 0]
    # A column's bytes are known before any row is unpacked (a pack's text lengths, the UTF-8
    # of a text a row holds as a string), so its buffer is made once at its size: a buffer
    # grown row by row is copied as it grows and holds up to an eighth more than its bytes
    # (docsites-dev's 35 parts, the run's heap settings: 0.024 CPU s appending the texts
    # against 0.011 s at their size, and 9 MB more peak RSS).
    plain = [{name: _utf8(row.get(name)) for name in names if name not in pack.names} if pack is not None
             else {name: _utf8(row.get(name)) for name in names} for row, pack in zip(rows, packs)]
    sizes = dict.fromkeys(names, 0)
    for pack, own in zip(packs, plain):
        if pack is not None:
            for name, length in zip(pack.names, pack.lengths):
                if name in sizes:
                    sizes[name] += length
        for name, value in own.items():
            if value is not None:
                sizes[name] += len(value)
    columns = {name: _TextColumn(len(rows), sizes[name]) for name in names}
    for pack, own in zip(packs, plain):
        texts = dict(zip(pack.names, pack.utf8())) if pack is not None else {}
        texts.update(own)
        for name, column in columns.items():
            column.append(texts[name])
        del texts
    arrays = batch.columns
    for name, column in columns.items():
        at = schema.get_field_index(name)
        arrays[at] = column.array(schema.field(at).type)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _utf8(value):
    return value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value


class _TextColumn:
    """A string column built from each value's UTF-8 (bytes or a memoryview; None: null),
    copied into one buffer of the values' total size (`size`, known beforehand) as they come,
    then checked to be UTF-8. (pa.array of memoryviews would copy them too, but pyarrow 25
    keeps the buffers they view alive for good.) Not UTF-8 (a lone surrogate), or over the
    offsets' range: the column from the strings, which fails as converting such a row always
    did."""

    def __init__(self, rows: int, size: int):
        self.data = np.empty(size, dtype=np.uint8)    # every byte is written: no need to clear it
        self.view = memoryview(self.data)
        self.offsets = np.zeros(rows + 1, dtype=np.int64)
        self.valid = np.ones(rows, dtype=bool)
        self.n = self.at = 0

    def append(self, value) -> None:
        if value is None:
            self.valid[self.n] = False
        else:
            end = self.at + len(value)
            self.view[self.at:end] = value
            self.at = end
        self.n += 1
        self.offsets[self.n] = self.at

    def array(self, type_: pa.DataType) -> pa.Array:
        if self.at != self.data.size:
            raise ValueError(f"text column of {self.data.size} bytes got {self.at}")
        nulls = int(self.n - self.valid.sum())
        valid = pa.py_buffer(np.packbits(self.valid, bitorder="little")) if nulls else None
        try:
            if type_ == pa.string() and self.at < 1 << 31:
                offsets = pa.py_buffer(self.offsets.astype(np.int32))
            elif type_ == pa.large_string():
                offsets = pa.py_buffer(self.offsets)
            else:
                raise pa.ArrowInvalid(f"not a string type, or over the range of its offsets: {type_}")
            joined = pa.Array.from_buffers(type_, self.n, [valid, offsets, pa.py_buffer(self.data)],
                                           null_count=nulls)
            joined.validate(full=True)        # the values' UTF-8, what a cast from binary checks
            return joined
        except pa.ArrowInvalid:
            data = self.view
            return pa.array([str(data[self.offsets[k]:self.offsets[k + 1]], "utf-8", "surrogatepass")
                             if self.valid[k] else None for k in range(self.n)], type_)


def _column_batches(held: list, schema: pa.Schema) -> pa.RecordBatch:
    """One record batch of column batches (is_column_batch), each held as itself when its
    class makes the batch of several of its kind (a `arrow_batch(held, schema)` staticmethod:
    transforms/outlinks.PageLinks), else as its columns(): `arrow_batch` when every one is of
    one such class and it can, else their columns joined (_joined_columns)."""
    kind = type(held[0])
    if not isinstance(held[0], dict) and all(type(value) is kind for value in held):
        got = kind.arrow_batch(held, schema)
        if got is not None:
            return got
    pieces = {name: [] for name in schema.names}
    for value in held:
        got = value if isinstance(value, dict) else value.columns()
        for name in pieces:
            pieces[name].append(got[name])
    return _joined_columns(pieces, schema)


def _joined_columns(pieces: dict, schema: pa.Schema) -> pa.RecordBatch:
    """One record batch of column batches' pieces ({column: [piece, ...]}, a piece a list or
    a numpy array): a column of numpy pieces converted as one array, any other as one list."""
    arrays = []
    for field in schema:
        parts = pieces[field.name]
        if all(isinstance(part, np.ndarray) for part in parts):
            arrays.append(pa.array(np.concatenate(parts), type=field.type))
        else:
            values = []
            for part in parts:
                values.extend(part.tolist() if isinstance(part, np.ndarray) else part)
            arrays.append(pa.array(values, type=field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def write_sorted_part(keyed_rows: list, schema: pa.Schema, path: str) -> None:
    """Write (sort key, packed row) pairs to `path` as Parquet, in key order (ties keep
    their order in `keyed_rows`, as Arrow's stable sort keeps them), without holding the
    part as Arrow columns: the rows `write_table(sorted_table(...))` writes, in row groups
    of at most about ROW_GROUP_BYTES. A packed value may be a batch of rows given as columns
    (is_column_batch: its key is its first row's, and no other row sorts among its rows)."""
    order = sorted(range(len(keyed_rows)), key=lambda i: keyed_rows[i][0])
    temp = temporary_path(path)
    with FileSystems.create(temp, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
        with pq.ParquetWriter(fh, schema, **writer_options(schema)) as writer:
            group, group_bytes = [], 0.0
            for batch in _record_batches(keyed_rows, order, schema):
                # A group closes when the next rows would take it past ROW_GROUP_BYTES (rows
                # weighed at their batch's mean size), so groups stay about that size; a row
                # larger than a group on its own is a group of one row.
                per_row = batch.nbytes / batch.num_rows
                offset = 0
                while offset < batch.num_rows:
                    fit = int((ROW_GROUP_BYTES - group_bytes) // per_row)
                    take = min(batch.num_rows - offset, fit if group else max(fit, 1))
                    if take:
                        group.append(batch.slice(offset, take))
                        group_bytes += take * per_row
                        offset += take
                    if offset < batch.num_rows or group_bytes >= ROW_GROUP_BYTES:
                        _write_group(writer, group, schema)
                        group, group_bytes = [], 0.0
            if group:
                _write_group(writer, group, schema)
    FileSystems.rename([temp], [path])


def _write_group(writer: pq.ParquetWriter, batches: list, schema: pa.Schema) -> None:
    table = pa.Table.from_batches(batches, schema=schema)
    writer.write_table(table, row_group_size=table.num_rows)


@dataclass(frozen=True)
class PartDataset:
    """Where and how WriteParts writes one dataset: its path prefix, its Arrow schema, the
    fields that identify a row (its place in the part: PART_KEYS) and, when fewer, those
    that pick its part (PART_BY; None: `fields`)."""
    prefix: str
    schema: pa.Schema
    fields: tuple[str, ...]
    part_fields: tuple[str, ...] | None = None


def _keyed_row(row, name: str, fields: tuple[str, ...], parts: int, part_fields: tuple[str, ...] | None = None):
    """((dataset, part), (sort key, packed)) of a row, or of a column batch (is_column_batch):
    rows that share their `part_fields` and follow each other in the order of `fields`, placed
    by their first row (`key_row()`) and packed as the object they are (a page's links:
    transforms/outlinks.PageLinks, its rows made by the writer)."""
    first = row.key_row() if is_column_batch(row) else row
    return (name, part_of(first, part_fields or fields, parts)), (sort_key(first, fields), pack_row(row))


class _KeyedRows(beam.DoFn):
    """_keyed_row of each row; with `spill_dir` (a local directory), each packed row is appended
    to a file of the bundle there and its place (_SpilledRows) crosses the shuffle instead.

    Beam's local runner holds a step's whole output, and decodes, groups and encodes a
    group-by-key's values again in its own process: a partition of one 2,000-page site shard
    held five copies of its packed rows at once (docs/performance.md, "Memory per worker").
    Places are about 60 bytes a row whatever the row. The files are closed when the bundle
    ends, before the runner hands its output to the group-by-key, so the writer, a later
    stage, reads them whole."""

    def __init__(self, name: str, fields: tuple[str, ...], parts: int, part_fields: tuple[str, ...] | None,
                 spill_dir: str | None):
        self.name, self.fields, self.parts, self.part_fields = name, fields, parts, part_fields
        self.spill_dir = spill_dir
        self.file = None

    def start_bundle(self):
        self.file, self.path, self.end = None, None, 0

    def process(self, row):
        if type(row) is not list:
            yield self._keyed(row)
            return
        # A batch of rows (ProcessSite's `batched`: a site shard's): one element per part among
        # them, a list of (sort key, packed) pairs, where a row each cost the runner an element
        # through the shuffle (about 12 µs locally, more than packing the row).
        parts: dict = {}
        for one in row:
            key, value = self._keyed(one)
            got = parts.get(key)
            if got is None:
                parts[key] = [value]
            else:
                got.append(value)
        yield from parts.items()

    def _keyed(self, row):
        key, (order_key, packed) = _keyed_row(row, self.name, self.fields, self.parts, self.part_fields)
        if self.spill_dir is None:
            return key, (order_key, packed)
        if self.file is None:
            self.path = os.path.join(self.spill_dir, f"rows-{uuid.uuid4().hex}.bin")
            self.file = open(self.path, "wb")
            self.end = 0
        self.file.write(packed)
        place = (self.path, self.end, len(packed))
        self.end += len(packed)
        return key, (order_key, place)

    def finish_bundle(self):
        if self.file is not None:
            self.file.close()
            self.file = None


class _WritePart(beam.DoFn):
    def __init__(self, datasets: dict, parts: int):
        self.datasets, self.parts = datasets, parts

    def process(self, element):
        (name, index), values = element
        dataset = self.datasets[name]
        # None is the marker that gives every part a group (WriteParts.expand); a list is the
        # (sort key, packed) pairs of a batch's rows in this part (_KeyedRows).
        keyed_rows = []
        for value in values:
            if type(value) is list:
                keyed_rows.extend(value)
            elif value is not None:
                keyed_rows.append(value)
        if not keyed_rows and index != 0:
            # Only part 0 is written empty: a dataset always has a file (and so a schema),
            # but a run over 90,000 input files does not leave 90,000 empty errors files.
            return
        path = part_path(dataset.prefix, index, self.parts)
        write_sorted_part(keyed_rows, dataset.schema, path)
        yield path


class WriteParts(beam.PTransform):
    """{dataset name: rows (dicts)} → each dataset's `parts` Parquet files
    `{prefix}-XXXXX-of-YYYYY.parquet` (`datasets`: {name: PartDataset}); outputs their paths.
    An element may be a list of rows, which cross the shuffle as one element per part they go
    to (_KeyedRows). An element may also be a batch of rows given as columns (`is_column_batch`): the links
    dataset gives a page's links as its PageLinks, packed as they are and turned into Arrow
    columns by the writer, where a dict per link cost 14 µs to pack and as much to unpack
    (docs/performance.md, "Links").

    Every dataset goes through one group-by-key, keyed by (dataset, part), as the streaming
    writer's batching step does (pipeline/watch.py): one shuffle stage and one writing step
    where a group-by-key per dataset made four, and Beam's graph construction and local
    runner pay per transform and per stage (docs/performance.md, "Start-up and throughput
    past start-up").

    With `spill_dir`, a directory every worker of the run can read and write (a local run's
    spill: pipeline/partitions.py), the rows wait there and only their places cross the
    shuffle (_KeyedRows); the caller removes the files once the graph has run."""

    def __init__(self, datasets: dict, parts: int, spill_dir: str | None = None):
        super().__init__()
        if parts < 1:
            raise ValueError(f"parts must be at least 1, got {parts}")
        self.datasets, self.parts, self.spill_dir = dict(datasets), parts, spill_dir

    def expand(self, rows_by_name):
        parts = self.parts
        if set(rows_by_name) != set(self.datasets):
            raise ValueError(f"rows for {sorted(rows_by_name)}, datasets {sorted(self.datasets)}")
        pipeline = next(iter(rows_by_name.values())).pipeline
        keyed = [rows | f"PartKeys_{name}" >> beam.ParDo(_KeyedRows(name, self.datasets[name].fields, parts,
                                                                    self.datasets[name].part_fields, self.spill_dir))
                 for name, rows in sorted(rows_by_name.items())]
        # A few integers: not worth the group-by-key stage of Create's reshuffle.
        every_part = pipeline | "PartMarkers" >> beam.Create(
            [((name, index), None) for name in sorted(self.datasets) for index in range(parts)], reshuffle=False)
        return ((*keyed, every_part)
                | "WithMarkers" >> beam.Flatten()
                | "GroupParts" >> beam.GroupByKey()
                | "WritePart" >> beam.ParDo(_WritePart(self.datasets, parts)))

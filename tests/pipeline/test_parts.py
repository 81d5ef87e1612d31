"""Parquet part files (pipeline/parts.py): which part a row goes to, the order inside a part,
the write under a temporary name, and the whole transform through Beam."""
import os
import subprocess
import sys
from collections import Counter

import apache_beam as beam
import pyarrow.parquet as pq
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline

from sitestrip.pipeline.cli import main, written_rows
from sitestrip.pipeline.graph import clear_outputs, dataset_prefix
from sitestrip.pipeline.parts import PART_KEYS, PartDataset, WriteParts, part_of, part_path, sorted_table, write_table
from sitestrip.schemas import ERRORS, MENUS

PAGE_ROW = {"url": "https://example.org/docs/intro.html", "warc_file": "a.warc.gz", "warc_offset": 7}


def _error(warc_file, warc_offset, url, stage="read", error_class="BadUrl", message="m"):
    return {"url": url, "warc_file": warc_file, "warc_offset": warc_offset, "stage": stage,
            "error_class": error_class, "message": message}


def test_part_is_crc32_of_the_row_identity():
    # The key is "https://example.org/docs/intro.html\x1fa.warc.gz\x1f7"; its crc32 is
    # 1043794418 = 4 · 260948604 + 2.
    assert part_of(PAGE_ROW, PART_KEYS["pages"], 4) == 2
    assert part_of(PAGE_ROW, PART_KEYS["pages"], 1) == 0
    assert part_path("out/pages/part", 2, 4) == "out/pages/part-00002-of-00004.parquet"


@pytest.mark.slow
def test_part_is_the_same_in_processes_with_other_string_hashes():
    """Python's hash() of a str changes with PYTHONHASHSEED; the part must not."""
    code = ("from sitestrip.pipeline.parts import part_of, PART_KEYS\n"
            "rows = [{'url': f'https://s{i}.example/', 'warc_file': 'f', 'warc_offset': i} for i in range(50)]\n"
            "print([part_of(r, PART_KEYS['pages'], 7) for r in rows])")
    here = [part_of({"url": f"https://s{i}.example/", "warc_file": "f", "warc_offset": i},
                    PART_KEYS["pages"], 7) for i in range(50)]
    for seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONHASHSEED=seed),
                             capture_output=True, text=True, check=True).stdout
        assert out.strip() == str(here)


def test_one_sites_pages_spread_over_every_part():
    """Parts hash the row, not its site: a hot site's 1,000 pages fill all 8 parts."""
    rows = [{"url": f"https://hot.example/p{i}.html", "warc_file": "f.warc.gz", "warc_offset": i}
            for i in range(1000)]
    assert set(Counter(part_of(r, PART_KEYS["pages"], 8) for r in rows)) == set(range(8))


def test_rows_of_a_part_are_sorted_by_their_identity_nulls_last():
    """Errors rows sort by (warc_file, warc_offset, url, ...): within a.warc the offsets 5
    and 20, then the file-level row (offset null) last; then b.warc's 3 and 10."""
    rows = [_error("b.warc", 10, "https://b/10"), _error("a.warc", None, None, error_class="OSError"),
            _error("a.warc", 20, "https://a/20"), _error("b.warc", 3, "https://b/3"),
            _error("a.warc", 5, "https://a/5")]
    table = sorted_table(iter(rows), ERRORS, PART_KEYS["errors"])
    assert [(r["warc_file"], r["warc_offset"]) for r in table.to_pylist()] == [
        ("a.warc", 5), ("a.warc", 20), ("a.warc", None), ("b.warc", 3), ("b.warc", 10)]
    assert table.schema.equals(ERRORS, check_metadata=True)


def test_a_packed_row_is_the_same_row_and_smaller():
    """Rows cross the write shuffle packed (pack_row): unpacked, every value is equal and of the
    same type (a float32 stays a numpy float32, a tuple a tuple, None None), and a row whose text
    repeats packs to less than its pickle (zlib)."""
    import pickle

    import numpy as np

    from sitestrip.pipeline.parts import pack_row, unpack_row

    row = {"url": "https://a.example/p", "warc_offset": 12, "main_text": "Words of the page. " * 200,
           "template_share": np.float32(0.25), "menu_links": [{"url": "https://a.example/", "text": "Home"}],
           "candidate_urls": ("https://a.example/q",), "title": None, "timing_ms": {"total": 1.5}}
    back = unpack_row(pack_row(row))
    assert back == row
    assert [type(v) for v in back.values()] == [type(v) for v in row.values()]
    assert len(pack_row(row)) < len(pickle.dumps(row)) / 5


def test_a_part_is_renamed_into_place_with_the_schema_and_beams_list_layout(tmp_path):
    menus = [{"site": "s.example", "menu_signature": "abc", "pages": 2, "example_url": "https://s.example/",
              "menu_links": [{"url": "https://s.example/a", "text": "A"}]}]
    path = str(tmp_path / "part-00000-of-00001.parquet")
    write_table(sorted_table(menus, MENUS, PART_KEYS["menus"]), path)
    assert os.listdir(tmp_path) == ["part-00000-of-00001.parquet"]      # no temporary file left
    f = pq.ParquetFile(path)
    assert f.schema_arrow.equals(MENUS, check_metadata=True)
    assert f.read().to_pylist() == menus
    # Beam's WriteToParquet wrote lists as list<item> (use_compliant_nested_type=False)
    assert "optional group field_id=-1 item" in str(f.schema)
    assert f.metadata.row_group(0).column(0).compression == "ZSTD"

    empty = str(tmp_path / "empty.parquet")
    write_table(sorted_table([], ERRORS, PART_KEYS["errors"]), empty)
    assert pq.ParquetFile(empty).metadata.num_row_groups == 0
    assert pq.read_schema(empty).equals(ERRORS, check_metadata=True)


@pytest.mark.beam
def test_write_parts_through_beam_writes_every_part_once(tmp_path):
    """Four rows into five parts: at least one part gets no row and is not written (part 0 is
    written even when empty, so the dataset has a file); each row is in the part part_of names,
    once, and each part is sorted."""
    rows = [_error("b.warc", 10, "https://b/10"), _error("a.warc", None, None),
            _error("a.warc", 20, "https://a/20"), _error("a.warc", 5, "https://a/5")]
    prefix = dataset_prefix(str(tmp_path), "errors")
    with BeamTestPipeline(runner=FnApiRunner()) as p:
        _ = {"errors": p | beam.Create(rows)} | WriteParts({"errors": PartDataset(prefix, ERRORS, PART_KEYS["errors"])}, 5)
    names = sorted(os.listdir(tmp_path / "errors"))
    used = {0} | {part_of(r, PART_KEYS["errors"], 5) for r in rows}
    assert len(used) < 5
    assert names == [f"part-0000{i}-of-00005.parquet" for i in sorted(used)]
    seen = []
    for index, name in zip(sorted(used), names):
        part = pq.read_table(tmp_path / "errors" / name).to_pylist()
        assert all(part_of(r, PART_KEYS["errors"], 5) == index for r in part)
        assert part == sorted_table(part, ERRORS, PART_KEYS["errors"]).to_pylist()
        seen.extend(part)
    assert sorted(map(repr, seen)) == sorted(map(repr, rows))


@pytest.mark.beam
def test_an_empty_dataset_is_one_empty_part_0(tmp_path):
    prefix = dataset_prefix(str(tmp_path), "errors")
    with BeamTestPipeline(runner=FnApiRunner()) as p:
        _ = {"errors": p | beam.Create([])} | WriteParts({"errors": PartDataset(prefix, ERRORS, PART_KEYS["errors"])}, 3)
    assert os.listdir(tmp_path / "errors") == ["part-00000-of-00003.parquet"]
    assert pq.read_metadata(tmp_path / "errors" / "part-00000-of-00003.parquet").num_rows == 0


def test_clear_outputs_removes_parts_and_left_temporary_files_only(tmp_path):
    """Every dataset's parts go, the links dataset's too (a watch job, which writes none,
    clears an earlier batch run's)."""
    for dataset in ("pages", "links"):
        folder = tmp_path / dataset
        folder.mkdir()
        for name in ("part-00000-of-00002.parquet", "_part-00001-of-00002.parquet.0a1b.tmp", "notes.txt"):
            (folder / name).write_bytes(b"x")
    clear_outputs(str(tmp_path))
    assert os.listdir(tmp_path / "pages") == os.listdir(tmp_path / "links") == ["notes.txt"]


@pytest.mark.beam
@pytest.mark.slow
def test_part_files_option(tmp_path, capsys):
    """--part-files 2 on the embedded sample: two files for the pages, the sample's 59 pages
    rows between them; the errors dataset (no errors) is one empty part 0; 0 is a usage error."""
    out = str(tmp_path / "out")
    assert main(["run", "--output", out, "--quiet", "--part-files", "2"]) == 0
    assert sorted(os.listdir(os.path.join(out, "pages"))) == [
        "part-00000-of-00002.parquet", "part-00001-of-00002.parquet"]
    assert os.listdir(os.path.join(out, "errors")) == ["part-00000-of-00002.parquet"]
    assert written_rows(out)["pages"] == 59
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--output", out, "--part-files", "0"])
    assert exit_.value.code == 2 and "--part-files must be 1 or more" in capsys.readouterr().err


def test_sort_key_orders_rows_as_arrows_sort_does():
    """The writer sorts a part by `sort_key` before unpacking it; that order must be the one
    `sorted_table` (Arrow's sort_by) gives. Seeded rows whose fields mix nulls, equal prefixes,
    and code points whose UTF-16 order differs from their UTF-8 order (U+FF5E before
    U+1F600 by code point and by UTF-8 bytes, after it in UTF-16), with many ties on the
    first fields."""
    import random

    from sitestrip.pipeline.parts import sort_key

    rng = random.Random(7)
    pieces = ["a", "b", "", "é", "\uff5e", "\U0001f600", "a\x00", "Z"]

    def text():
        return None if rng.random() < 0.2 else "".join(rng.choice(pieces) for _ in range(rng.randrange(3)))

    rows = [_error(text() or "f", None if rng.random() < 0.2 else rng.randrange(-3, 4), text(),
                   stage=rng.choice(["read", "parse"]), error_class=rng.choice(["A", "B"]),
                   message=f"m{i}") for i in range(400)]
    fields = PART_KEYS["errors"]
    expected = sorted_table(iter(rows), ERRORS, fields).to_pylist()
    assert sorted(rows, key=lambda r: sort_key(r, fields)) == expected
    # nulls last, values by value: (None, 3) after (-1, ...) and (2, ...)
    keys = sorted([sort_key({"warc_file": "f", "warc_offset": o}, ("warc_file", "warc_offset"))
                   for o in (None, 2, -1)])
    assert [k[1][1] for k in keys] == [-1, 2, None]


def test_a_sorted_part_is_written_in_key_order_one_row_group_per_row_group_bytes(tmp_path, monkeypatch):
    """write_sorted_part: 7 rows given out of order, converted 2 at a time (BATCH_ROWS=2); a
    row group closes before the rows that would take it past ROW_GROUP_BYTES, here 1 byte,
    smaller than any row, so every row is a group of its own: 7 groups. Two rows with the
    same key (a.warc, 5) keep the order they were given in (m1 before m2), as Arrow's stable
    sort keeps them. The file holds the same rows as write_table(sorted_table(...))."""
    from sitestrip.pipeline import parts
    from sitestrip.pipeline.parts import pack_row, sort_key, write_sorted_part

    monkeypatch.setattr(parts, "BATCH_ROWS", 2)
    monkeypatch.setattr(parts, "ROW_GROUP_BYTES", 1)
    rows = [_error("b.warc", 10, "https://b/10"), _error("a.warc", 5, "https://a/5", message="m1"),
            _error("a.warc", None, None), _error("a.warc", 5, "https://a/5", message="m2"),
            _error("c.warc", 1, "https://c/1"), _error("a.warc", 2, "https://a/2"),
            _error("b.warc", 3, "https://b/3")]
    fields = PART_KEYS["errors"]
    path = str(tmp_path / "part-00000-of-00001.parquet")
    write_sorted_part([(sort_key(r, fields), pack_row(r)) for r in rows], ERRORS, path)
    f = pq.ParquetFile(path)
    assert [f.metadata.row_group(g).num_rows for g in range(f.metadata.num_row_groups)] == [1] * 7
    got = f.read().to_pylist()
    assert [(r["warc_file"], r["warc_offset"], r["message"]) for r in got] == [
        ("a.warc", 2, "m"), ("a.warc", 5, "m1"), ("a.warc", 5, "m2"), ("a.warc", None, "m"),
        ("b.warc", 3, "m"), ("b.warc", 10, "m"), ("c.warc", 1, "m")]
    assert got == sorted_table(iter(rows), ERRORS, fields).to_pylist()
    assert f.schema_arrow.equals(ERRORS, check_metadata=True)
    assert os.listdir(tmp_path) == ["part-00000-of-00001.parquet"]

    monkeypatch.setattr(parts, "ROW_GROUP_BYTES", 64 * 1024 * 1024)
    write_sorted_part([(sort_key(r, fields), pack_row(r)) for r in rows], ERRORS, path)
    assert pq.ParquetFile(path).metadata.num_row_groups == 1      # under 64 MiB: one group

    empty = str(tmp_path / "empty.parquet")
    write_sorted_part([], ERRORS, empty)
    assert pq.ParquetFile(empty).metadata.num_row_groups == 0
    assert pq.read_schema(empty).equals(ERRORS, check_metadata=True)


def test_packed_texts_are_written_as_their_strings(tmp_path, monkeypatch):
    """Pages rows reach the writer with their long texts packed together (site_step.held_row,
    compression.PACKED_TEXTS) and are written from their UTF-8 as it is: the same file as the
    rows with their strings, whatever the texts (non-ASCII, empty, None, missing, a row of a
    batch that came unpacked); a lone surrogate fails the part as converting its string does."""
    import pyarrow as pa

    from sitestrip.pipeline import parts
    from sitestrip.pipeline.parts import pack_row, sort_key, write_sorted_part
    from sitestrip.transforms.site_step import held_row

    monkeypatch.setattr(parts, "BATCH_ROWS", 3)
    schema = pa.schema([("url", pa.string()), ("warc_file", pa.string()), ("warc_offset", pa.int64()),
                        ("main_text", pa.string()), ("main_markdown", pa.string()),
                        ("nontemplate_text", pa.string()), ("words", pa.int32())])
    fields = PART_KEYS["pages"]

    def row(i, main, markdown="# M", nontemplate="", **more):
        return {"url": f"https://p.example/{i}", "warc_file": "f.warc", "warc_offset": i, "main_text": main,
                "main_markdown": markdown, "nontemplate_text": nontemplate, "words": i, **more}

    rows = [row(3, "café 日本 ¶\n" * 500), row(1, "", None, "Non-template text"), row(2, None, "x", None),
            {"url": "https://p.example/0", "warc_file": "f.warc", "warc_offset": 0, "words": 0},
            row(5, "Plain row, never held."), row(4, "Ω" * 70_000, "Ω")]
    held = [r if r["warc_offset"] == 5 else held_row(dict(r)) for r in rows]
    path = str(tmp_path / "part-00000-of-00001.parquet")
    write_sorted_part([(sort_key(r, fields), pack_row(r)) for r in held], schema, path)
    got = pq.read_table(path)
    assert got.equals(sorted_table(iter(rows), schema, fields))
    assert got.column("main_text").to_pylist()[:3] == [None, "", None]

    broken = held_row(row(9, "a lone \ud800 surrogate"))
    with pytest.raises(UnicodeEncodeError):
        write_sorted_part([(sort_key(broken, fields), pack_row(broken))], schema, path)
    with pytest.raises(UnicodeEncodeError):
        sorted_table(iter([row(9, "a lone \ud800 surrogate")]), schema, fields)


@pytest.mark.parametrize("preset, expected", [(None, "system"), ("mimalloc", "mimalloc")])
def test_the_cli_gives_arrow_the_system_allocator_unless_the_user_chose_one(preset, expected):
    """use_system_allocator_for_arrow runs before pyarrow is imported (run() and main() call it
    first): Arrow then allocates from the C heap; a pool the user set in the environment wins."""
    code = ("from sitestrip.pipeline.cli import use_system_allocator_for_arrow\n"
            "use_system_allocator_for_arrow()\n"
            "import pyarrow as pa\n"
            "print(pa.default_memory_pool().backend_name)")
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if preset:
        env["ARROW_DEFAULT_MEMORY_POOL"] = preset
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == expected


_HEAP_PROBE = """
import ctypes, os, sys
if sys.argv[1] == "bound":
    from sitestrip.pipeline.cli import bound_c_heap
    bound_c_heap()
def in_heap(address):
    for line in open("/proc/self/maps"):
        if line.rstrip().endswith("[heap]"):
            start, end = (int(x, 16) for x in line.split()[0].split("-"))
            if start <= address < end:
                return True
    return False
class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                     "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = Info
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
small = [libc.malloc(48) for _ in range(200)]
for address in small:
    libc.free(address)     # past the thread cache's 7 a size: into a fastbin, if there are any
fastbins = libc.mallinfo2().fsmblks > 0       # read first: a large request merges them
block = bytes(4 << 20)
print(in_heap(id(block)), fastbins, os.environ.get("MALLOC_MMAP_THRESHOLD_"),
      os.environ.get("MALLOC_TRIM_THRESHOLD_"), os.environ.get("GLIBC_TUNABLES"))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux") or __import__("platform").libc_ver()[0] != "glibc",
                    reason="glibc's malloc only")
@pytest.mark.parametrize("how, expected", [
    # glibc alone: a first 4 MiB block is mapped apart (its threshold starts at 128 KiB), and
    # small freed chunks wait in fastbins
    ("default", "False True None None None"),
    # bound: it comes from the heap (under 32 MiB), no fastbins; workers inherit the variables
    ("bound", "True False 33554432 67108864 glibc.malloc.mxfast=0"),
    # the user's own variable wins (64 KiB), nothing added
    ("user", "False True 65536 None None"),
    # a tunable of the user's: kept, and another added to it
    ("tunable", "True False 33554432 67108864 glibc.rtld.optional_static_tls=1024:glibc.malloc.mxfast=0"),
    # the user's own malloc tunable wins, nothing added
    ("user_tunable", "False True None None glibc.malloc.mxfast=64"),
])
def test_the_run_bounds_the_c_heap_unless_the_user_tuned_it(how, expected):
    """bound_c_heap (run() calls it first): blocks under 32 MiB come from the heap, where the
    next one reuses them, and freed small chunks merge at once instead of waiting in
    fastbins; unless the user tuned glibc's malloc."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    if how == "user":
        env["MALLOC_MMAP_THRESHOLD_"] = "65536"
    elif how == "tunable":
        env["GLIBC_TUNABLES"] = "glibc.rtld.optional_static_tls=1024"
    elif how == "user_tunable":
        env["GLIBC_TUNABLES"] = "glibc.malloc.mxfast=64"
    out = subprocess.run([sys.executable, "-c", _HEAP_PROBE, "default" if how == "default" else "bound"],
                         env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == expected


@pytest.mark.beam
def test_datasets_share_one_group_by_key_and_keep_their_own_files(tmp_path):
    """Two datasets through one WriteParts: the errors rows of the first test's four rows land
    in errors/ parts exactly as alone (part_of, sorted), the menus dataset gets no row and so
    only its empty part 0 with its own schema, and the graph has one group-by-key for both
    (besides the test's own Create reshuffles)."""
    from sitestrip.schemas import DATASETS
    rows = [_error("b.warc", 10, "https://b/10"), _error("a.warc", 5, "https://a/5")]
    datasets = {name: PartDataset(dataset_prefix(str(tmp_path), name), DATASETS[name], PART_KEYS[name])
                for name in ("errors", "menus")}
    p = BeamTestPipeline(runner=FnApiRunner())
    _ = {"errors": p | "E" >> beam.Create(rows), "menus": p | "M" >> beam.Create([])} | WriteParts(datasets, 2)
    grouping = [t.unique_name for t in p.to_runner_api().components.transforms.values()
                if t.spec.urn == "beam:transform:group_by_key:v1" and "Reshuffle" not in t.unique_name]
    assert grouping == ["WriteParts/GroupParts"]
    p.run().wait_until_finish()
    assert os.listdir(tmp_path / "menus") == ["part-00000-of-00002.parquet"]
    assert pq.read_schema(tmp_path / "menus" / "part-00000-of-00002.parquet").equals(DATASETS["menus"], check_metadata=True)
    written = {name: pq.read_table(tmp_path / "errors" / name).to_pylist() for name in os.listdir(tmp_path / "errors")}
    for name, part in written.items():
        index = int(name[5:10])
        assert all(part_of(r, PART_KEYS["errors"], 2) == index for r in part)
        assert part == sorted_table(part, ERRORS, PART_KEYS["errors"]).to_pylist()
    assert sorted(map(repr, sum(written.values(), []))) == sorted(map(repr, rows))


class Batch:
    """A column batch (parts.is_column_batch) of `n` links rows of one page, positions `start`.."""

    def __init__(self, url, n, start=0):
        self.url, self.n, self.start = url, n, start

    def key_row(self):
        return {"source_url": self.url, "warc_file": "f", "warc_offset": 1, "position": self.start}

    def columns(self):
        n, positions = self.n, list(range(self.start, self.start + self.n))
        return {"source_url": [self.url] * n, "site": ["s"] * n, "warc_file": ["f"] * n, "warc_offset": [1] * n,
                "position": positions, "target_url": [f"{self.url}/{k}" for k in positions], "fragment": [None] * n,
                "anchor_text": ["t"] * n, "rel_nofollow": [False] * n, "rel_ugc": [False] * n,
                "rel_sponsored": [True] * n, "in_site": [True] * n, "region": ["main"] * n,
                "target_in_input": [k % 2 == 0 for k in positions]}


def _link_row(url, position):
    return {k: v[0] for k, v in Batch(url, 1, position).columns().items()}


def test_column_batches_are_written_as_their_rows(tmp_path, monkeypatch):
    """A column batch packs as the object it is and is written as its rows, in its place among
    plain rows (its key is its first row's): batches of 3, 2 and 4 rows and two plain rows,
    given out of order, written BATCH_ROWS = 4 at a time, are the rows sorted_table gives."""
    from sitestrip.pipeline import parts
    from sitestrip.pipeline.parts import is_column_batch, pack_row, sort_key, unpack_row, write_sorted_part
    from sitestrip.schemas import LINKS

    monkeypatch.setattr(parts, "BATCH_ROWS", 4)
    fields = PART_KEYS["links"]
    values = [Batch("https://c", 3), _link_row("https://a", 0), Batch("https://b", 2), _link_row("https://d", 0),
              Batch("https://a", 4, start=1)]
    assert is_column_batch(values[0]) and not is_column_batch(values[1])
    assert is_column_batch(unpack_row(pack_row(values[0])))
    keyed = [(sort_key(v.key_row() if is_column_batch(v) else v, fields), pack_row(v)) for v in values]
    path = str(tmp_path / "part-00000-of-00001.parquet")
    write_sorted_part(keyed, LINKS, path)
    rows = [r for v in values for r in ([{k: c[i] for k, c in v.columns().items()} for i in range(v.n)]
                                        if is_column_batch(v) else [v])]
    got = pq.read_table(path).to_pylist()
    assert [(r["source_url"], r["position"]) for r in got] == [("https://a", k) for k in range(5)] + [
        ("https://b", 0), ("https://b", 1), ("https://c", 0), ("https://c", 1), ("https://c", 2), ("https://d", 0)]
    assert got == sorted_table(iter(rows), LINKS, fields).to_pylist()


def test_a_pages_links_go_to_one_part():
    """PART_BY: a links row's part is picked by its page (source_url, warc_file, warc_offset),
    so every link of a page is in one part, whatever its position."""
    from sitestrip.pipeline.parts import PART_BY, _keyed_row
    parts = {_keyed_row(_link_row("https://a", k), "links", PART_KEYS["links"], 7, PART_BY["links"])[0]
             for k in range(50)}
    assert len(parts) == 1
    assert parts == {_keyed_row(Batch("https://a", 3), "links", PART_KEYS["links"], 7, PART_BY["links"])[0]}


@pytest.mark.beam
def test_rows_spilled_for_their_writer_make_the_same_parts(tmp_path):
    """With a spill directory the rows wait there, packed, and only their places cross the
    write shuffle: the parts are the rows the shuffle of packed rows writes, and the spill
    holds every packed row once."""
    from sitestrip.pipeline.parts import pack_row

    rows = [_error(f"{'ab'[i % 2]}.warc", i, f"https://x/{i}", message="é" * i) for i in range(40)]
    spill = tmp_path / "spill"
    spill.mkdir()
    written = {}
    for name, spill_dir in (("shuffled", None), ("spilled", str(spill))):
        prefix = dataset_prefix(str(tmp_path / name), "errors")
        with BeamTestPipeline(runner=FnApiRunner()) as p:
            _ = {"errors": p | beam.Create(rows)} | WriteParts(
                {"errors": PartDataset(prefix, ERRORS, PART_KEYS["errors"])}, 3, spill_dir=spill_dir)
        files = sorted(os.listdir(tmp_path / name / "errors"))
        written[name] = {f: pq.read_table(tmp_path / name / "errors" / f).to_pylist() for f in files}
    assert written["spilled"] == written["shuffled"] and sum(map(len, written["spilled"].values())) == 40
    spilled = [f for f in os.listdir(spill) if f.startswith("rows-")]
    assert spilled and sum(os.path.getsize(spill / f) for f in spilled) == sum(len(pack_row(r)) for r in rows)


def test_a_batch_of_rows_crosses_the_shuffle_as_one_element_per_part(tmp_path):
    """_KeyedRows takes a list of rows as one element per part they go to, each the (sort key,
    packed) pairs of its rows in their order, spilled or not; a place crosses as a plain tuple
    (a subclass Beam's coder would pickle)."""
    from sitestrip.pipeline.parts import _KeyedRows, unpack_row

    rows = [_error(f"{'ab'[i % 2]}.warc", i, f"https://x/{i}", message="é" * i) for i in range(40)]
    fields = PART_KEYS["errors"]
    for spill_dir in (None, str(tmp_path)):
        one, batched = _KeyedRows("errors", fields, 3, None, spill_dir), _KeyedRows("errors", fields, 3, None, spill_dir)
        one.start_bundle()
        batched.start_bundle()
        singles = [out for row in rows for out in one.process(dict(row))]
        groups = list(batched.process([dict(row) for row in rows]))
        one.finish_bundle()
        batched.finish_bundle()
        assert len(groups) == 3 and len({key for key, _ in groups}) == 3
        for key, values in groups:
            assert type(values) is list
            expected = [value for got, value in singles if got == key]
            assert [order for order, _ in values] == [order for order, _ in expected]
            if spill_dir is None:
                assert [unpack_row(packed) for _, packed in values] == [unpack_row(packed) for _, packed in expected]
            else:
                assert all(type(place) is tuple and len(place) == 3 for _, place in values)


@pytest.mark.beam
@pytest.mark.slow
def test_rows_given_in_batches_make_the_parts_of_the_rows_given_one_by_one(tmp_path):
    rows = [_error(f"{'ab'[i % 2]}.warc", i, f"https://x/{i}", message="é" * i) for i in range(40)]
    fields = PART_KEYS["errors"]
    written = {}
    for name, given in (("rows", rows), ("batches", [rows[:7], rows[7:8], rows[8:]]), ("mixed", [rows[:20], *rows[20:]])):
        prefix = dataset_prefix(str(tmp_path / name), "errors")
        with BeamTestPipeline(runner=FnApiRunner()) as p:
            _ = {"errors": p | beam.Create(given)} | WriteParts(
                {"errors": PartDataset(prefix, ERRORS, fields)}, 3, spill_dir=str(tmp_path))
        files = sorted(os.listdir(tmp_path / name / "errors"))
        written[name] = {f: pq.read_table(tmp_path / name / "errors" / f).to_pylist() for f in files}
    assert written["batches"] == written["rows"] == written["mixed"]
    assert sum(map(len, written["rows"].values())) == 40 and len(written["rows"]) == 3


def test_a_spilled_row_cut_short_is_an_error_not_a_shorter_row(tmp_path):
    from sitestrip.pipeline.parts import _SpilledRows

    path = tmp_path / "rows-1.bin"
    path.write_bytes(b"0123456789")
    spilled = _SpilledRows()
    assert spilled.packed((str(path), 2, 3)) == b"234"
    assert spilled.packed(b"as it is") == b"as it is"
    with pytest.raises(OSError, match="8 bytes at 4"):
        spilled.packed((str(path), 4, 8))
    spilled.close()


def test_a_pages_own_texts_are_written_without_a_dictionary(tmp_path):
    """Both writers (write_table and write_sorted_part) dictionary-encode every column but the
    texts no two rows share (parts.UNSHARED_COLUMNS): the file keeps its rows, the site column a
    dictionary, main_text none."""
    import pyarrow as pa

    from sitestrip.pipeline.parts import pack_row, sort_key, write_sorted_part
    schema = pa.schema([("url", pa.string()), ("warc_file", pa.string()), ("warc_offset", pa.int64()),
                        ("site", pa.string()), ("main_text", pa.string())])
    rows = [{"url": f"https://p.example/{i}", "warc_file": "f.warc", "warc_offset": i, "site": "p.example",
             "main_text": f"Page {i} says something of its own."} for i in range(50)]
    fields = PART_KEYS["pages"]
    table = sorted_table(iter(rows), schema, fields)
    written = [str(tmp_path / "a-00000-of-00001.parquet"), str(tmp_path / "b-00000-of-00001.parquet")]
    write_table(table, written[0])
    write_sorted_part([(sort_key(r, fields), pack_row(r)) for r in rows], schema, written[1])
    for path in written:
        assert pq.read_table(path).equals(table)
        group = pq.ParquetFile(path).metadata.row_group(0)
        encodings = {group.column(c).path_in_schema: group.column(c).encodings for c in range(group.num_columns)}
        assert "RLE_DICTIONARY" in encodings["site"]
        assert "RLE_DICTIONARY" not in encodings["main_text"]


@pytest.mark.parametrize("type_", ["string", "large_string"])
def test_a_text_column_is_the_array_of_its_strings(type_):
    """_TextColumn (a buffer at the values' size, checked as UTF-8) gives pa.array's column of
    the strings, nulls and empty strings included; not UTF-8, it fails as the strings do."""
    import pyarrow as pa

    from sitestrip.pipeline.parts import _TextColumn

    type_ = getattr(pa, type_)()
    values = ["café", None, "", "日本 ¶\n" * 100, "x"]
    utf8 = [None if v is None else memoryview(v.encode("utf-8")) for v in values]
    column = _TextColumn(len(values), sum(len(v) for v in utf8 if v is not None))
    for value in utf8:
        column.append(value)
    got = column.array(type_)
    assert got.type == type_ and got.equals(pa.array(values, type_)) and got.null_count == 1

    lone = "a lone \ud800".encode("utf-8", "surrogatepass")
    column = _TextColumn(1, len(lone))
    column.append(lone)
    with pytest.raises(UnicodeEncodeError):
        column.array(type_)


def test_column_batches_of_two_kinds_in_one_batch_are_written_as_their_rows(tmp_path):
    """A page's PageLinks (which make their own Arrow batch, outlinks.PageLinks.arrow_batch)
    and another kind of column batch within one record batch: all are converted from their
    columns(), and the part holds every row of both in key order."""
    from sitestrip.pipeline.parts import pack_row, sort_key, write_sorted_part
    from sitestrip.schemas import LINKS
    from sitestrip.transforms.outlinks import page_links
    from sitestrip.transforms.page import parse_page

    url = "https://m.test/"
    links = page_links(parse_page('<body><a href="/a">A</a> <a href="/b#x">B</a></body>', url), None, None, None,
                       source_url=url, row_url=url, site="m.test", warc_file="f", warc_offset=1)
    links.seal()
    links.set_present({url + "a"})
    values = [Batch("https://z", 2), links]
    fields = PART_KEYS["links"]
    keyed = [(sort_key(v.key_row(), fields), pack_row(v)) for v in values]
    path = str(tmp_path / "part-00000-of-00001.parquet")
    write_sorted_part(keyed, LINKS, path)
    rows = [{k: c[i] for k, c in Batch("https://z", 2).columns().items()} for i in range(2)] + list(links.rows())
    assert pq.read_table(path).to_pylist() == sorted_table(iter(rows), LINKS, fields).to_pylist()
    assert [r["fragment"] for r in pq.read_table(path).to_pylist()][:2] == [None, "x"]

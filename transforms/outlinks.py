"""The links dataset: one row per (source page, link), with the region of the page the link
sits in (docs/output.md "Links", docs/algorithms.md "Link regions").

A search engine's link analysis weighs a link by where it sits: links of the site template
repeat on every page and distort it (Bar-Yossef & Rajagopalan, WWW 2002), and a page-level
link extractor (Common Crawl's WAT files) cannot tell them apart. sitestrip knows, per page,
its main content, its TemEx template nodes and its menu, so every `<a href>` and `<area href>`
with an http(s) target gets a `region`:

- `main`: the link lies in the page's main content: its element is in the main-content node
  set (`PageAnalysis.main`: the text nodes of the kept blocks and every element whose text is
  all in them, or ConEx's subtrees); a link without text (an image, an `<area>`) is judged by
  its nearest ancestor that has text;
- `menu`: it lies in the page's final menu: the site menu when one applies (design §12), else
  its page-level MenEx menu (design §2);
- `template`: its element is a TemEx/HybEx template node (design §6);
- `other`: none of these.

The first that holds wins (main > menu > template > other): a link the main content kept is
content even inside a block that recurs (a table of contents the main content starts with),
and a menu is always template (000 §4.3.4), so `menu` only narrows `template`.

A page's links are held compactly from its analysis until its rows are made (`PageLinks`: a
few arrays and one LZ4-packed string of its target URLs and anchor texts), not as dicts: a
site shard holds every page's links until its site menus are chosen, and the Beam graph
ships them through two shuffles before the rows are made (pipeline/graph.py,
`join_link_targets`). `target_in_input` (the target has a pages row in this run) is known only
there; `PageLinks.rows` takes the run's URLs, or None for a null column.
"""
from __future__ import annotations

import hashlib
from itertools import chain, compress, repeat
from typing import Container, Iterator, Sequence

import numpy as np

from sitestrip.transforms import compression, tree
from sitestrip.transforms import text as text_module
from sitestrip.transforms.meta import REL_NOFOLLOW, REL_SPONSORED, REL_UGC
from sitestrip.transforms.page import F_RAISED, F_SPACE_BEFORE, TEXT, CompactPage
from sitestrip.transforms.text import joined, separators
from sitestrip.transforms.tree import text_nodes_below

REGIONS = ("main", "menu", "template", "other")

# Per link, bits of PageLinks.flags.
_MAIN, _TEMPLATE, _MENU, _IN_SITE = 1, 2, 4, 8
# Index into REGIONS per value of the flags (PageLinks.regions), and the name itself: a link's
# region is one table lookup.
_REGION_OF_FLAGS = np.array([0 if f & _MAIN else 1 if f & _MENU else 2 if f & _TEMPLATE else 3 for f in range(256)],
                            dtype=np.int8)
_REGION_NAME_OF_FLAGS = np.array([REGIONS[r] for r in _REGION_OF_FLAGS.tolist()], dtype=object)


class PageLinks:
    """The links of one pages row, document order, with what their rows need.

    `key` identifies the pages row (source_key); `nodes` are the links' node indexes in the
    page (kept only until the menu is known); `flags` the _MAIN/_TEMPLATE/_MENU/_IN_SITE bits
    per link, `rel` the REL_* bits, `fragment_at`/`fragments` the links whose href has a
    fragment, `local` the links whose target is a pages row of the page's own shard (known
    there: set_local; None before), `in_input` whether each target has a pages row in this
    run (None until the target join says: set_present). Target URLs and anchor texts are one LZ4-packed UTF-8
    string (`_strings`): the URLs, then the texts, each ended by a NUL (which neither holds:
    a normalized URL percent-encodes it, and parsing turns it into U+FFFD).

    The Parquet writer (pipeline/parts.py) takes a PageLinks as a batch of rows: `key_row`
    places it (its first row's identifying fields), `columns` gives its rows as columns."""
    __slots__ = ("source_url", "site", "warc_file", "warc_offset", "key", "nodes", "page_id", "flags", "rel",
                 "fragment_at", "fragments", "local", "in_input", "_strings", "_decoded")

    def __len__(self) -> int:
        return int(self.flags.size)

    def set_menu(self, page: CompactPage, node: int | None) -> None:
        """Mark the links in subtree(`node`) of `page` as the page's menu links (None: it has no
        menu), replacing an earlier menu: called with the page-level menu, then with the site
        menu. A menu found on another page than the links' (the site menus of a URL captured
        twice are looked up on its first capture) leaves them as they were."""
        if self.nodes is None or id(page) != self.page_id:
            return
        self.flags &= np.uint8(~_MENU & 0xFF)
        if node is not None and self.nodes.size:
            lo, hi = self.nodes.searchsorted((node, page.end[node])).tolist()
            self.flags[lo:hi] |= _MENU

    def seal(self) -> None:
        """The menu is final: the node indexes are no longer needed."""
        self.nodes = self.page_id = None

    def strings(self) -> tuple[list[str], list[str]]:
        """(target URLs, anchor texts), in link order."""
        n = len(self)
        if not n:
            return [], []
        parts = compression.unpack(self._strings, "lz4").decode("utf-8", "surrogatepass").split("\x00")
        return parts[:n], parts[n:2 * n]

    def _target_urls(self) -> list[str]:
        """strings()[0], without a str made for each anchor text; the ones set_local keeps for
        targets, which is called right after it in the page's shard (pipeline/graph.py) and
        lets them go (a shard holds every page's links packed until its menus are known; a
        pickled copy never holds them)."""
        if self._decoded is not None:
            return self._decoded
        n = len(self)
        if not n:
            return []
        return compression.unpack(self._strings, "lz4").decode("utf-8", "surrogatepass").split("\x00", n)[:n]

    def set_local(self, shard_urls: Container) -> None:
        """Mark the links whose target is one of `shard_urls`, the normalized URLs of the pages
        rows of the page's own shard: their target_in_input is True whatever the join says,
        and they need not go through it (targets). page_links marks them from its URLs as
        they are (`local_urls`), before they are packed; this reads them back from the packed
        string, for a shard where some page got no pages row."""
        self._decoded = urls = self._target_urls()
        self.local = _among(urls, shard_urls)

    def targets(self) -> list[str]:
        """The distinct target URLs the target join must look up (those not known in the
        page's shard: set_local), sorted."""
        urls = self._target_urls()
        self._decoded = None
        if self.local is not None:
            urls = compress(urls, (~self.local).tolist())
        return sorted(set(urls))

    def set_present_by(self, contains) -> None:
        """target_in_input from `contains(urls)`, a boolean per URL of a list: whether it has a
        pages row in this run (a local run's spilled pages: partitions.SpilledUrls.contains),
        asked about the links outside the page's shard (set_local) only."""
        urls = self._target_urls()
        self._decoded = None
        if self.local is None:
            self.in_input = np.asarray(contains(urls), dtype=bool)
            return
        found = self.local.copy()
        outside = ~self.local
        found[outside] = contains(list(compress(urls, outside.tolist())))
        self.in_input = found

    def set_present(self, present: Container) -> None:
        """target_in_input from `present`, the normalized URLs that have a pages row in this run
        (those of the page's shard aside, set_local: they need not be in it)."""
        self.set_present_by(lambda urls: _among(urls, present))

    def regions(self) -> np.ndarray:
        """Index into REGIONS per link: main > menu > template > other."""
        return _REGION_OF_FLAGS[self.flags]

    def key_row(self) -> dict:
        """The identifying fields (PART_KEYS["links"]) of the first row."""
        return {"source_url": self.source_url, "warc_file": self.warc_file, "warc_offset": self.warc_offset,
                "position": 0}

    def columns(self) -> dict:
        """The links rows as columns: {column of schemas.LINKS: its values in link order}, a
        list, or a numpy array for the numbers and flags (the writer converts those without
        a Python object per value: pipeline/parts.py)."""
        urls, texts = self.strings()
        n = len(urls)
        fragments = [None] * n
        for k, fragment in zip(self.fragment_at.tolist(), self.fragments):
            fragments[k] = fragment
        rel, flags = self.rel, self.flags
        return {
            "source_url": [self.source_url] * n, "site": [self.site] * n, "warc_file": [self.warc_file] * n,
            "warc_offset": np.full(n, self.warc_offset, dtype=np.int64) if self.warc_offset is not None else [None] * n,
            "position": np.arange(n, dtype=np.int32), "target_url": urls, "fragment": fragments, "anchor_text": texts,
            "rel_nofollow": (rel & REL_NOFOLLOW) != 0, "rel_ugc": (rel & REL_UGC) != 0,
            "rel_sponsored": (rel & REL_SPONSORED) != 0, "in_site": (flags & _IN_SITE) != 0,
            "region": _REGION_NAME_OF_FLAGS[self.flags].tolist(),
            "target_in_input": [None] * n if self.in_input is None else self.in_input.copy(),
        }

    @staticmethod
    def arrow_batch(held: list, schema):
        """The rows of one or more PageLinks (`held`, in order) as one pyarrow RecordBatch of
        `schema` (schemas.LINKS): the values and buffers pa.array gives for the columns()
        joined, built from the links' arrays and packed strings with a few numpy calls per
        batch. columns() made every link's strings, regions and page fields Python objects
        for pa.array to read back: on docsites-dev's 163,596 links that and the conversion
        were 0.13 CPU s of the part writer (pipeline/parts.py). None where those values cannot
        be told apart so (a column this does not know, a string holding a NUL, overlapping
        fragments, text that is not UTF-8): the caller then converts columns() as before."""
        import pyarrow as pa

        counts = np.fromiter((links.flags.size for links in held), dtype=np.int64, count=len(held))
        total = int(counts.sum())
        starts = np.zeros(len(held), dtype=np.int64)
        np.cumsum(counts[:-1], out=starts[1:])
        page = np.repeat(np.arange(len(held), dtype=np.int64), counts)
        raw = np.frombuffer(b"".join(compression.unpack(links._strings, "lz4") for links in held if links.flags.size),
                            dtype=np.uint8)
        split = _split_links(raw, counts)
        if split is None:
            return None
        url_data, url_lengths, text_data, text_lengths = split
        flags = np.concatenate([links.flags for links in held])
        rel = np.concatenate([links.rel for links in held])
        fragment_at = np.concatenate([links.fragment_at.astype(np.int64) + start
                                      for links, start in zip(held, starts.tolist())])
        if fragment_at.size > 1 and not (np.diff(fragment_at) > 0).all():
            return None
        offsets = [links.warc_offset for links in held]
        in_input = [links.in_input for links in held]
        per_page = counts.tolist()
        made = {
            "source_url": lambda type_: _repeated([links.source_url for links in held], per_page, type_),
            "site": lambda type_: _repeated([links.site for links in held], per_page, type_),
            "warc_file": lambda type_: _repeated([links.warc_file for links in held], per_page, type_),
            "warc_offset": lambda type_: _numbers([0 if o is None else o for o in offsets],
                                                  [o is None for o in offsets], page, type_),
            "position": lambda type_: pa.array((np.arange(total, dtype=np.int64) - starts[page]).astype(np.int32),
                                               type_),
            "target_url": lambda type_: _utf8_array(url_data, url_lengths, None, type_),
            "fragment": lambda type_: _sparse(list(chain.from_iterable(links.fragments for links in held)),
                                              fragment_at, total, type_),
            "anchor_text": lambda type_: _utf8_array(text_data, text_lengths, None, type_),
            "rel_nofollow": lambda type_: pa.array((rel & REL_NOFOLLOW) != 0, type_),
            "rel_ugc": lambda type_: pa.array((rel & REL_UGC) != 0, type_),
            "rel_sponsored": lambda type_: pa.array((rel & REL_SPONSORED) != 0, type_),
            "in_site": lambda type_: pa.array((flags & _IN_SITE) != 0, type_),
            "region": lambda type_: _coded(_REGION_TABLE, _REGION_OF_FLAGS[flags], type_),
            "target_in_input": lambda type_: (
                pa.array([None] * total, type_) if all(known is None for known in in_input) else
                _numbers(np.concatenate([np.zeros(n, dtype=bool) if known is None else known
                                         for known, n in zip(in_input, counts.tolist())]),
                         [known is None for known in in_input], page, type_, per_page=False)),
        }
        arrays = []
        for field in schema:
            make = made.get(field.name)
            got = make(field.type) if make is not None else None
            if got is None:
                return None
            arrays.append(got)
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    def rows(self, present: Container | None = None) -> Iterator[dict]:
        """The links rows as dicts; `present`: the normalized URLs that have a pages row in this
        run (set_present), None to keep what the links know (a null column before the join)."""
        if present is not None:
            self.set_present(present)
        columns = {name: values.tolist() if isinstance(values, np.ndarray) else values
                   for name, values in self.columns().items()}
        names = list(columns)
        for values in zip(*columns.values()):
            yield dict(zip(names, values))

    # Pickled (Beam's coder: through the target join and to the writer) without the nodes.
    def __getstate__(self):
        return (self.source_url, self.site, self.warc_file, self.warc_offset, self.key, self.flags.tobytes(),
                self.rel.tobytes(), self.fragment_at.tobytes(), self.fragments,
                None if self.local is None else self.local.tobytes(),
                None if self.in_input is None else self.in_input.tobytes(), self._strings)

    def __setstate__(self, state):
        (self.source_url, self.site, self.warc_file, self.warc_offset, self.key, flags, rel, fragment_at,
         self.fragments, local, in_input, self._strings) = state
        self.flags = np.frombuffer(flags, dtype=np.uint8).copy()
        self.rel = np.frombuffer(rel, dtype=np.uint8).copy()
        self.fragment_at = np.frombuffer(fragment_at, dtype=np.int32)
        self.local = None if local is None else np.frombuffer(local, dtype=bool)
        self.in_input = None if in_input is None else np.frombuffer(in_input, dtype=bool)
        self.nodes = self.page_id = self._decoded = None


def _split_links(raw: np.ndarray, counts: np.ndarray, compiled: bool | None = None):
    """(URL bytes, their lengths, text bytes, their lengths) of pages' strings one after the
    other (`raw`: each page's PageLinks._strings unpacked, `counts` its links), without their
    NULs; None when `raw` is not that many NUL-ended strings. Compiled (transforms/_site.c
    `split_links`: one memchr and memcpy a string) unless SITESTRIP_FEATURES=python or
    `compiled` is False; the numpy below is its reference."""
    total = int(counts.sum())
    if (tree._COMPILED if compiled is None else compiled) and tree._site_compiled is not None:
        url_data, text_data = np.empty(raw.size, dtype=np.uint8), np.empty(raw.size, dtype=np.uint8)
        url_lengths, text_lengths = np.empty(total, dtype=np.int64), np.empty(total, dtype=np.int64)
        got = tree._site_compiled.split_links(raw, np.ascontiguousarray(counts, dtype=np.int64), url_data,
                                              url_lengths, text_data, text_lengths)
        if got is None:
            return None
        return url_data[:got[0]], url_lengths, text_data[:got[1]], text_lengths
    ends = np.flatnonzero(raw == 0)
    if ends.size != 2 * total:
        return None
    lengths = np.diff(ends, prepend=-1) - 1
    starts = np.zeros(counts.size, dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    within = np.arange(2 * total, dtype=np.int64) - np.repeat(2 * starts, 2 * counts)
    is_text = within >= np.repeat(counts, 2 * counts)
    byte_text = np.repeat(is_text, lengths + 1)
    kept = raw != 0
    return raw[kept & ~byte_text], lengths[~is_text], raw[kept & byte_text], lengths[is_text]


def _numbers(values, missing: list, page: np.ndarray, type_, per_page: bool = True):
    """A column of numbers or flags: `values` per page (`per_page`, repeated over its links
    by `page`) or per link already, null for the links of the pages `missing` says; a
    validity buffer only when some value is null, as pa.array makes it."""
    import pyarrow as pa

    values = np.asarray(values)[page] if per_page else values
    if not any(missing):
        return pa.array(values, type_)
    return pa.array(values, type_, mask=np.asarray(missing, dtype=bool)[page])


def _repeated(values: list, counts: list, type_):
    """The string column of each of `values` (str or None) repeated its count of `counts`."""
    try:
        encoded = [b"" if value is None else value.encode("utf-8") for value in values]
    except UnicodeEncodeError:          # a lone surrogate, which pa.array refuses
        return None
    lengths = np.repeat(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), counts)
    valid = None
    if any(value is None for value in values):
        valid = np.repeat(np.array([value is not None for value in values], dtype=bool), counts)
    data = np.frombuffer(b"".join(value * count for value, count in zip(encoded, counts)), dtype=np.uint8)
    return _utf8_array(data, lengths, valid, type_, checked=True)


def _sparse(values: list, at: np.ndarray, total: int, type_):
    """The string column of `total` nulls but `values` (str) at the increasing places `at`.
    None if a value holds a NUL, which the values are told apart by here."""
    try:
        data = np.frombuffer("\x00".join(values).encode("utf-8"), dtype=np.uint8)
    except (TypeError, UnicodeEncodeError):     # not all str, or a lone surrogate
        return None
    ends = np.flatnonzero(data == 0)
    if ends.size != max(len(values) - 1, 0):
        return None
    lengths = np.zeros(total, dtype=np.int64)
    valid = np.zeros(total, dtype=bool)
    if values:
        lengths[at] = np.diff(ends, prepend=-1, append=data.size) - 1
        valid[at] = True
    return _utf8_array(data[data != 0] if ends.size else data, lengths, valid, type_, checked=True)


def _name_table(names: tuple) -> tuple[np.ndarray, np.ndarray]:
    """(one row per name: its UTF-8 padded with zeros, each name's byte length)."""
    encoded = [name.encode("utf-8") for name in names]
    sizes = np.array([len(name) for name in encoded], dtype=np.int64)
    table = np.zeros((len(names), int(sizes.max())), dtype=np.uint8)
    for k, name in enumerate(encoded):
        table[k, :len(name)] = np.frombuffer(name, dtype=np.uint8)
    return table, sizes


_REGION_TABLE = _name_table(REGIONS)


def _coded(table: tuple[np.ndarray, np.ndarray], codes: np.ndarray, type_):
    """The string column of the name of each code of `codes` in `table` (_name_table)."""
    rows, sizes = table
    lengths = sizes[codes]
    data = rows[codes][np.arange(rows.shape[1]) < lengths[:, None]]
    return _utf8_array(data, lengths, None, type_, checked=True)


def _utf8_array(data: np.ndarray, lengths: np.ndarray, valid, type_, checked: bool = False):
    """A string column from its values' UTF-8 (`data`, bytes one after the other), their
    byte `lengths` and `valid` (None: no null): the buffers pa.array makes of their strings.
    None when that cannot be: not UTF-8 (a lone surrogate, which pa.array refuses), over the
    offsets' range or not a string type. `checked`: the bytes are UTF-8 already (encoded
    from str strictly), so not validated again."""
    import pyarrow as pa

    if type_ == pa.string() and data.size < 1 << 31:
        offsets = np.zeros(lengths.size + 1, dtype=np.int32)
    elif type_ == pa.large_string():
        offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    else:
        return None
    np.cumsum(lengths, out=offsets[1:])
    nulls = 0 if valid is None else int(valid.size - np.count_nonzero(valid))
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    array = pa.Array.from_buffers(type_, lengths.size, [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)],
                                  null_count=nulls)
    try:
        array.validate(full=not checked)
    except pa.ArrowInvalid:
        return None
    return array


def source_key(url: str, warc_file, warc_offset) -> bytes:
    """16 bytes naming one pages row (its PART_KEYS: url, warc_file, warc_offset), what the
    target join keys a page's links by: a digest, not the fields, so that each of the join's
    (target, page) pairs carries 16 bytes for its page."""
    raw = "\x1f".join(("" if v is None else str(v)) for v in (url, warc_file, warc_offset))
    return hashlib.blake2b(raw.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _in_site(urls, site: str, compiled: bool | None = None) -> np.ndarray:
    """Per normalized URL of `urls`: its site key (urls.site_key: the host without one leading
    "www." and without its port) is `site`. A normalized URL is "scheme://host[:port]/...",
    so that is its beginning with `site` or "www." + `site` as the host, then "/" or ":".
    Compiled (transforms/_site.c `in_site`) unless SITESTRIP_FEATURES=python or `compiled` is
    False; the reference is str.startswith over the eight prefixes."""
    if (tree._COMPILED if compiled is None else compiled) and tree._site_compiled is not None:
        out = np.zeros(len(urls), dtype=bool)
        tree._site_compiled.in_site(urls if type(urls) is list else list(urls), site, out)
        return out
    starts = tuple(f"{scheme}://{host}{after}" for scheme in ("http", "https") for host in (site, "www." + site)
                   for after in ("/", ":"))
    return np.fromiter(map(str.startswith, urls, repeat(starts)), dtype=bool, count=len(urls))


def _among(urls: Sequence[str], shard_urls: Container) -> np.ndarray:
    """Per link URL: whether it is one of `shard_urls` (the links to the page's own shard)."""
    return np.fromiter(map(shard_urls.__contains__, urls), dtype=bool, count=len(urls))


def page_links(page: CompactPage, main: np.ndarray | None, template: np.ndarray | None, menu_node: int | None,
               *, source_url: str, row_url: str, site: str, warc_file, warc_offset,
               local_urls: Container | None = None) -> PageLinks:
    """The PageLinks of a page from its analysis: `main`, the main-content node mask
    (None: no main content); `template`, TemEx's template node mask (None: no template
    ran); `menu_node`, its page-level menu's node (None: no menu). `source_url`: the page's
    normalized URL; `row_url`, `warc_file`, `warc_offset`: its pages row's identity.
    `local_urls`: the normalized URLs of the shard's pages, to mark the links to them as
    set_local does (None: the links are not marked)."""
    side = page.side
    nodes, urls = page.link_node, page.link_url
    texts = _anchor_texts(page, nodes)
    frag_nodes, frag_values = side.fragment_node, side.fragment
    if side.area_node.size:
        # The <area> links (meta.NodeExtras) among the <a> links, in document order.
        pooled = np.concatenate((nodes, side.area_node)).astype(np.int32)
        order = np.argsort(pooled, kind="stable")
        nodes, order = pooled[order], order.tolist()
        pooled_urls, pooled_texts = urls + side.area_url, texts + [""] * side.area_node.size
        urls, texts = [pooled_urls[k] for k in order], [pooled_texts[k] for k in order]
        with_fragment = [k for k, f in enumerate(side.area_fragment) if f]
        frag_nodes = np.concatenate((frag_nodes, side.area_node[with_fragment]))
        frag_values = frag_values + tuple(side.area_fragment[k] for k in with_fragment)
    n = nodes.size
    out = PageLinks()
    out.source_url, out.site, out.warc_file, out.warc_offset = source_url, site, warc_file, warc_offset
    out.key = source_key(row_url, warc_file, warc_offset)
    out.nodes, out.page_id, out.local, out.in_input, out._decoded = nodes, id(page), None, None, None
    # Alt text of the links without text (meta.node_extras): the image's, or the area's own.
    if side.alt_node.size and n:
        at = nodes.searchsorted(side.alt_node)
        found = nodes[np.minimum(at, n - 1)] == side.alt_node
        for k, alt, ok in zip(at.tolist(), side.alt, found.tolist()):
            if ok and not texts[k]:
                texts[k] = alt
    flags = np.zeros(n, dtype=np.uint8)
    rel = np.zeros(n, dtype=np.uint8)
    out.fragment_at, out.fragments = np.zeros(0, dtype=np.int32), ()
    if n:
        flags[_in_site(urls, site)] |= _IN_SITE
        if template is not None:
            flags[template[nodes]] |= _TEMPLATE
        if main is not None:
            flags[_in_main(page, nodes, main)] |= _MAIN
        if side.rel_node.size:
            at = np.minimum(nodes.searchsorted(side.rel_node), n - 1)
            ok = nodes[at] == side.rel_node
            rel[at[ok]] = np.array(side.rel, dtype=np.uint8)[ok]
        if frag_nodes.size:
            at = nodes.searchsorted(frag_nodes).astype(np.int32)
            if side.area_node.size:         # the areas' fragments came after the links'
                order = np.argsort(at, kind="stable")
                at, frag_values = at[order], tuple(frag_values[k] for k in order.tolist())
            out.fragment_at, out.fragments = at, tuple(frag_values)
    out.flags, out.rel = flags, rel
    if local_urls is not None:
        out.local = _among(urls, local_urls)
    strings = "\x00".join(texts)
    if strings.count("\x00") != len(texts) - 1:     # a text holds one: not from a parsed page
        strings = "\x00".join(t.replace("\x00", "\ufffd") for t in texts)
    out._strings = compression.pack(("\x00".join(urls) + "\x00" + strings + "\x00").encode("utf-8", "surrogatepass"),
                               "lz4")
    out.set_menu(page, menu_node)
    return out


def _anchor_texts(page: CompactPage, nodes: np.ndarray, compiled: bool | None = None) -> list[str]:
    """The text of each link's subtree, as the text joiner gives it (transforms/text.py):
    tree.subtree_texts with the joiner's own separators and joining. Compiled
    (transforms/_text.c `subtree_texts`: the subtrees walked, no pass over the page) unless
    SITESTRIP_TEXT=python or `compiled` is False; the numpy below is its reference, fast for
    the common case: most links hold one text node, whose text is its own, and when every link
    does no separator is computed."""
    if not nodes.size:
        return []
    if (text_module._COMPILED if compiled is None else compiled) and text_module._compiled is not None:
        return text_module._compiled.subtree_texts(
            _int32(page.tag), np.ascontiguousarray(page.flags, dtype=np.uint16), _int32(page.line),
            _int32(page.end), page.text, _int32(page.text_ptr), _int32(nodes), TEXT, F_SPACE_BEFORE | F_RAISED)
    text_nodes = (page.tag == TEXT).nonzero()[0]
    first = text_nodes.searchsorted(nodes)
    counts = text_nodes.searchsorted(page.end[nodes]) - first
    bounds = np.zeros(nodes.size + 1, dtype=np.int64)
    counts.cumsum(out=bounds[1:])
    total = int(bounds[-1])
    if total == nodes.size and (counts == 1).all():
        idx = text_nodes[first]
        codes = np.zeros(total, dtype=np.int8)
    else:
        # Each link's text nodes, one run after the other (subtree_texts, run_texts).
        starts = bounds[:-1]
        idx = text_nodes[(first - starts).repeat(counts) + np.arange(total)]
        codes = separators(page, idx)
        codes[starts[counts > 0]] = 0           # a run starts with nothing before it
    return joined(page, idx, codes, bounds.tolist())


def _int32(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.int32)


def _in_main(page: CompactPage, nodes: np.ndarray, main: np.ndarray, compiled: bool | None = None) -> np.ndarray:
    """Per link node: in the main-content node set, a link without text judged by its nearest
    ancestor that has text (an image link in a kept paragraph is content, a logo in a header
    is not). Compiled (transforms/_site.c `in_main`) unless SITESTRIP_FEATURES=python or
    `compiled` is False; the reference climbs one vector step per level, for the links
    without text only."""
    if not main.any():
        return np.zeros(nodes.size, dtype=bool)
    below = text_nodes_below(page)
    if (tree._COMPILED if compiled is None else compiled) and tree._site_compiled is not None:
        out = np.zeros(nodes.size, dtype=bool)
        tree._site_compiled.in_main(_int32(page.parent), np.ascontiguousarray(below, dtype=np.int64),
                                    np.ascontiguousarray(main, dtype=bool), _int32(nodes), out)
        return out
    judged = nodes.astype(np.int64)
    climbing = (below[judged] == 0).nonzero()[0]
    parent = page.parent
    while climbing.size:
        judged[climbing] = parent[judged[climbing]]
        up = judged[climbing]
        climbing = climbing[(up >= 0) & (below[np.maximum(up, 0)] == 0)]
    out = np.zeros(nodes.size, dtype=bool)
    ok = judged >= 0
    out[ok] = main[judged[ok]]
    return out


def rows_with_targets(held: list, urls: Container) -> Iterator[dict]:
    """The rows of PageLinks `held`, target_in_input from `urls` (the run's normalized page
    URLs): what the Beam graph's target join gives, in one process (tests, the bench)."""
    for links in held:
        yield from links.rows(urls)

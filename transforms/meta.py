"""What a page declares about itself, read once at parse time (the raw document never
crosses the shuffle): `<html lang>`, canonical URL, description, publication date and
author from standard meta tags, OpenGraph and JSON-LD.

Only declared values are read; nothing is guessed from the page's text or URL. A value
that is missing, malformed or implausible is None: a bad declaration costs its column,
never the page. JSON-LD is bounded (scripts, bytes, objects visited) and walked without
recursion.

Per node, for the Markdown of the main content (transforms/markdown.py), `node_extras`
keeps each image's URL and alt text and each code block's language (NodeExtras).

Sources, first found wins:

| column | sources |
|---|---|
| html_lang | `<html lang>`, `<html xml:lang>` (BCP 47 tag, conventional casing) |
| canonical_url | `<link rel="canonical">`, `og:url` (absolute http(s), normalized) |
| description | `<meta name="description">`, `og:description`, `twitter:description`, JSON-LD `description` |
| published_date | `article:published_time`, JSON-LD `datePublished`, meta names of `_DATE_NAMES` (ISO 8601) |
| author | `<meta name="author">`, JSON-LD `author` (names), `article:author`, `dc.creator`, `citation_author`, `parsely-author`, `byl` (not a URL) |
"""
from __future__ import annotations

import json
import os
import re
import zlib
from collections import deque
from dataclasses import dataclass, field
from datetime import date, datetime
from email.utils import parsedate_to_datetime
from functools import lru_cache

import numpy as np

from sitestrip.transforms import compression
from sitestrip.transforms.urls import link_fragment, resolve_link

try:
    # One pass over the parsed tree for the <meta>, <link> and <script> elements
    # (transforms/_flatten.c); _declared_elements iterates lxml's tree where it is missing.
    from sitestrip.transforms import _flatten as _compiled
except ImportError:  # pragma: no cover - a source tree used without installing
    _compiled = None
# Whether _declared_elements reads the tree with the compiled pass when it is built: the
# switch of the compiled flattening (page.py), SITESTRIP_FLATTEN=python.
_COMPILED = os.environ.get("SITESTRIP_FLATTEN", "compiled") != "python"

# Longest value kept per column: a description is a sentence or two, an author a name or a
# short list of names; longer ones are cut at a word boundary.
MAX_DESCRIPTION = 1000
MAX_AUTHOR = 300
# JSON-LD bounds: scripts read per page, characters per script, objects visited per page.
MAX_JSONLD_SCRIPTS = 8
MAX_JSONLD_CHARS = 200_000
MAX_JSONLD_OBJECTS = 2000

_DATE_NAMES = ("article:published_time", "og:published_time", "date",
               "dc.date", "dc.date.issued", "dc.date.created", "dcterms.date", "dcterms.issued",
               "dcterms.created", "citation_publication_date", "citation_date", "citation_online_date",
               "publication_date", "publish-date", "publish_date", "publishdate", "pubdate",
               "sailthru.date", "parsely-pub-date", "article.published", "published_time",
               "originalpublicationdate", "displaydate")
_AUTHOR_NAMES = ("dc.creator", "dcterms.creator", "citation_author", "parsely-author", "sailthru.author",
                 "byl")
_AUTHOR_KEYS = ("article:author",) + _AUTHOR_NAMES
_ARTICLE_TYPE = re.compile(r"(article|posting|report|review|webpage|creativework|recipe|howto|"
                           r"question|book|movie|event|product)$", re.IGNORECASE)
_LANG_TAG = re.compile(r"[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*")
_BY = re.compile(r"^\s*by\s+", re.IGNORECASE)
_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"


@dataclass(frozen=True)
class PageMeta:
    html_lang: str | None = None
    canonical_url: str | None = None
    description: str | None = None
    published_date: str | None = None
    author: str | None = None
    # What the page says it is: og:type and every JSON-LD @type, lower-cased, space-separated
    # in the order found (at most MAX_DECLARED_TYPES). Not an output column: a page-type
    # feature (transforms/page_type.py).
    declared_types: str | None = None

    def as_tuple(self) -> tuple:
        return (self.html_lang, self.canonical_url, self.description, self.published_date, self.author,
                self.declared_types)


NO_META = PageMeta()
COLUMNS = ("html_lang", "canonical_url", "description", "published_date", "author")
MAX_DECLARED_TYPES = 8
_TYPE_NAME = re.compile(r"[a-z][a-z0-9_.:-]{0,40}")


def page_metadata(root, base_url: str, declared: tuple | None = None) -> PageMeta:
    """The declared metadata of a parsed document (`root`: lxml's root element, or None).
    `declared`: what _declared_elements gives of the document, already gathered (the compiled
    walk gathers it as it reads the body), or None to gather it here."""
    if root is None:
        return NO_META
    try:
        return _page_metadata(root, base_url, declared)
    except Exception:  # noqa: BLE001 - hostile markup must cost the columns, never the page
        return NO_META


def _declared_elements(root) -> tuple:
    """What _page_metadata reads of root.iter("meta", "link", "script"), as
    transforms/_flatten.c's meta_elements gathers it in one pass over libxml2's tree (this is
    its reference): ([(name, property, content)] of the <meta> elements with a content
    attribute, [(rel, href)] of <link> elements, [<script> elements]), in document order, each
    list holding at least the elements _page_metadata takes from it."""
    if _compiled is not None and _COMPILED:
        got = _compiled.meta_elements(root)
        if got is not None:
            return got
    metas, links, scripts = [], [], []
    for el in root.iter("meta", "link", "script"):
        tag = el.tag
        if tag == "script":
            scripts.append(el)
        elif tag == "link":
            links.append((el.get("rel"), el.get("href")))
        else:
            content = el.get("content")
            if content is not None:
                metas.append((el.get("name"), el.get("property"), content))
    return metas, links, scripts


def _page_metadata(root, base_url: str, declared: tuple | None = None) -> PageMeta:
    names: dict = {}          # lower-cased meta name/property → first non-empty content
    canonical = None
    scripts: list = []        # the JSON-LD scripts, document order (the first MAX_JSONLD_SCRIPTS)
    metas, links, script_elements = _declared_elements(root) if declared is None else declared
    for el in script_elements:
        if len(scripts) < MAX_JSONLD_SCRIPTS and \
                (el.get("type") or "").strip().lower() == "application/ld+json":
            scripts.append(el)
    for rel, href in links:
        if "canonical" in (rel or "").lower().split():
            canonical = resolve_link(base_url, href or "")
            if canonical is not None:
                break
    for name, prop, content in metas:
        if not content.strip():
            continue
        # Not itemprop: microdata describes any item on the page (a related video's
        # datePublished), not necessarily the page.
        for key in (name, prop):
            if key:
                names.setdefault(key.strip().lower(), content)
    if canonical is None and "og:url" in names:
        canonical = resolve_link(base_url, names["og:url"])

    description = _first_text(names, ("description", "og:description", "twitter:description"), MAX_DESCRIPTION)
    published = _first_date(names, ("article:published_time", "og:published_time"))
    author = _author_text(names.get("author"))
    types: list = []
    og_type = names.get("og:type")
    if og_type:
        _add_type(types, og_type)
    ld = _jsonld(scripts, types)
    if description is None or published is None or author is None:
        if description is None:
            description = _clip(ld.get("description"), MAX_DESCRIPTION)
        if published is None:
            published = iso_date(ld.get("datePublished"))
        if author is None:
            author = _author_text(ld.get("author"))
    if published is None:
        published = _first_date(names, _DATE_NAMES)
    if author is None:
        for key in _AUTHOR_KEYS:
            value = names.get(key)
            if value is not None:       # _author_text(None) is None
                author = _author_text(value)
                if author is not None:
                    break
    return PageMeta(html_lang=language_tag(root.get("lang") or root.get("xml:lang") or root.get(_XML_LANG)),
                    canonical_url=canonical, description=description, published_date=published,
                    author=author, declared_types=" ".join(types) or None)


def _add_type(types: list, value) -> None:
    """One declared type name, lower-cased, without a schema.org prefix; malformed ones are
    dropped (a type is a name, never free text)."""
    if not isinstance(value, str) or len(types) >= MAX_DECLARED_TYPES:
        return
    name = value.strip().lower().rsplit("/", 1)[-1]
    if _TYPE_NAME.fullmatch(name) and name not in types:
        types.append(name)


def language_tag(value: str | None) -> str | None:
    """A BCP 47 tag in its conventional casing ('EN_us' → 'en-US'), None if not one."""
    if not value:
        return None
    value = value.strip().replace("_", "-")
    if len(value) > 35 or not _LANG_TAG.fullmatch(value):
        return None
    parts = value.split("-")
    out = [parts[0].lower()]
    for p in parts[1:]:
        if len(p) == 2 and p.isalpha():
            out.append(p.upper())
        elif len(p) == 4 and p.isalpha():
            out.append(p.title())
        else:
            out.append(p.lower())
    return "-".join(out)


def _clip(value, limit: int) -> str | None:
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    if not text:
        return None
    if len(text) > limit:
        cut = text.rfind(" ", 0, limit)
        text = text[:cut if cut > limit // 2 else limit]
    return text


def _first_text(names: dict, keys, limit: int) -> str | None:
    for key in keys:
        text = _clip(names.get(key), limit)
        if text is not None:
            return text
    return None


def _first_date(names: dict, keys) -> str | None:
    for key in keys:
        value = names.get(key)
        # most keys are absent (a page declares a few of _DATE_NAMES): iso_date(None) is None
        if value is not None:
            got = iso_date(value)
            if got is not None:
                return got
    return None


_DATE_ONLY = re.compile(r"(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})$")
_COMPACT = re.compile(r"(\d{4})(\d{2})(\d{2})$")
_RFC_2822 = re.compile(r"(?:[A-Za-z]{3},\s*)?\d{1,2}\s+[A-Za-z]{3}\s+\d{4}\s+\d{1,2}:\d{2}")
# "July 31, 2012, 2:42 pm", "31 July 2012": the date only (the clock of such text has no
# zone and its am/pm is easily misread).
_MONTHS = {m: i for i, names in enumerate((("jan", "january"), ("feb", "february"), ("mar", "march"),
                                           ("apr", "april"), ("may",), ("jun", "june"), ("jul", "july"),
                                           ("aug", "august"), ("sep", "sept", "september"),
                                           ("oct", "october"), ("nov", "november"), ("dec", "december")), 1)
           for m in names}
_MONTH_DAY_YEAR = re.compile(r"([A-Za-z]{3,9})\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b")
_DAY_MONTH_YEAR = re.compile(r"(\d{1,2})(?:st|nd|rd|th)?\s+([A-Za-z]{3,9})\.?,?\s+(\d{4})\b")


def iso_date(value) -> str | None:
    """ISO 8601 of a declared date: 'YYYY-MM-DD' for a date, 'YYYY-MM-DDTHH:MM:SS[±HH:MM]' for
    a moment (with the declared offset, 'Z' as +00:00). Accepts ISO 8601, RFC 2822,
    'YYYY/MM/DD' and English 'Month D, YYYY' / 'D Month YYYY' (the date only); anything else,
    or a year outside 1900–2100, is None."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text or len(text) > 64:
        return None
    m = _DATE_ONLY.match(text) or _COMPACT.match(text)
    if m:
        try:
            return _plausible(date(int(m.group(1)), int(m.group(2)), int(m.group(3))))
        except ValueError:
            return None
    try:
        return _plausible(datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00")))
    except ValueError:
        pass
    if _RFC_2822.match(text):
        try:
            return _plausible(parsedate_to_datetime(text))
        except (TypeError, ValueError, IndexError):
            return None
    m = _MONTH_DAY_YEAR.match(text)
    month_first = m is not None
    m = m or _DAY_MONTH_YEAR.match(text)
    if m:
        month, day = (m.group(1), m.group(2)) if month_first else (m.group(2), m.group(1))
        number = _MONTHS.get(month.lower())
        if number:
            try:
                return _plausible(date(int(m.group(3)), number, int(day)))
            except ValueError:
                return None
    return None


def _plausible(value) -> str | None:
    if not 1900 <= value.year <= 2100:
        return None
    if isinstance(value, datetime):
        return value.replace(microsecond=0).isoformat()
    return value.isoformat()


def _author_text(value) -> str | None:
    """Names from a meta value or a JSON-LD author (a string, a Person/Organization object, or
    a list of them), joined by ', '; None for URLs and empty values."""
    if value is None:           # the usual case: no such meta or JSON-LD field
        return None
    names = []
    todo = deque([value])
    budget = 50
    while todo and budget:
        budget -= 1
        item = todo.popleft()
        if isinstance(item, list):
            todo.extend(item[:20])
        elif isinstance(item, dict):
            todo.append(item.get("name"))
        elif isinstance(item, str):
            name = " ".join(_BY.sub("", item).split())
            if name and "://" not in name and not name.startswith("www.") and name not in names:
                names.append(name)
    return _clip(", ".join(names), MAX_AUTHOR) if names else None


def _jsonld(scripts: list, types: list) -> dict:
    """description, datePublished and author of the page's JSON-LD (`scripts`: its
    application/ld+json script elements, the first MAX_JSONLD_SCRIPTS): taken from the first
    object of an article- or page-like @type that has them, else from the first object
    that has them. Every @type met is added to `types` (_add_type)."""
    found: dict = {}
    fallback: dict = {}
    visited = 0
    for el in scripts[:MAX_JSONLD_SCRIPTS]:
        text = el.text or ""
        if not text.strip() or len(text) > MAX_JSONLD_CHARS:
            continue
        try:
            data = json.loads(text, strict=False)
        except ValueError:
            continue
        todo = deque([data])
        while todo and visited < MAX_JSONLD_OBJECTS:
            item = todo.popleft()
            visited += 1
            if isinstance(item, list):
                todo.extend(item)
                continue
            if not isinstance(item, dict):
                continue
            kind = item.get("@type")
            kinds = kind if isinstance(kind, list) else [kind]
            for k in kinds:
                _add_type(types, k)
            target = found if any(isinstance(k, str) and _ARTICLE_TYPE.search(k) for k in kinds) else fallback
            for key in ("description", "datePublished", "author"):
                if key in item and key not in target and item[key]:
                    target[key] = item[key]
            for key in ("@graph", "mainEntity", "mainEntityOfPage", "itemListElement"):
                child = item.get(key)
                if isinstance(child, (list, dict)):
                    todo.append(child)
    return {**fallback, **found}


# Elements whose attributes the output columns need (read by node_extras while the tree exists):
# Markdown's images and code blocks, and the links dataset's <area> links. An <a> with a `rel`
# attribute and an http(s) target joins them too (both flatteners add it), for its rel flags.
EXTRA_TAGS = frozenset({"img", "picture", "pre", "area"})
MAX_ALT = 300
_LAZY_SRC = ("src", "data-src", "data-lazy-src", "data-original")
# Code-language class conventions: Prism and CommonMark renderers (language-X, lang-X),
# Sphinx (highlight-X on the wrapper), GitHub (highlight-source-X), SyntaxHighlighter
# ("brush: X"), pandoc (sourceCode X).
_CODE_CLASS = re.compile(r"(?:^|\s)(?:language|lang|highlight(?:-source)?)-([A-Za-z0-9_+#.-]{1,32})(?=\s|$)"
                         r"|brush:\s*([A-Za-z0-9_+#.-]{1,32})|(?:^|\s)sourceCode\s+([A-Za-z0-9_+#.-]{1,32})")
_NOT_A_LANGUAGE = frozenset({"default", "none", "nohighlight", "notranslate", "source", "sourcecode"})
_CODE_ANCESTORS = 3

# Link types of a `rel` attribute that tell a search engine how to weigh a link (Google's
# "qualify your outbound links"), one bit each in NodeExtras.rel: the links dataset's rel_* columns.
REL_NOFOLLOW, REL_UGC, REL_SPONSORED = 1, 2, 4
_REL_BITS = {"nofollow": REL_NOFOLLOW, "ugc": REL_UGC, "sponsored": REL_SPONSORED}


def rel_bits(value) -> int:
    """REL_* bits of a `rel` attribute: its space-separated link types, in any case."""
    if not isinstance(value, str):
        return 0
    bits = 0
    for token in value.lower().split():
        bits |= _REL_BITS.get(token, 0)
    return bits


def _empty_nodes() -> np.ndarray:
    return np.zeros(0, dtype=np.int32)


@dataclass(frozen=True, eq=False)
class NodeExtras:
    """Images (node, absolute http(s) URL, alt text), code blocks (the <pre> node, its
    language) and link fragments (the <a> node, the fragment of its href, percent-encoded:
    urls.link_fragment), sparse and in document order.

    For the links dataset (transforms/outlinks.py), also sparse and in document order:
    `<area href>` links with an http(s) target (the area node, its normalized URL, its
    fragment or ""), which are not in the page's link_node/link_url (the algorithms read
    `<a>` links only, design §1); the REL_* bits of the links (`<a>` of link_node and the
    areas) whose `rel` has any; and the alt text a link without text shows: an `<a>`'s
    first image with a non-empty alt, an `<area>`'s own alt."""
    image_node: np.ndarray = field(default_factory=_empty_nodes)
    image_src: tuple = ()
    image_alt: tuple = ()
    code_node: np.ndarray = field(default_factory=_empty_nodes)
    code_lang: tuple = ()
    fragment_node: np.ndarray = field(default_factory=_empty_nodes)
    fragment: tuple = ()
    area_node: np.ndarray = field(default_factory=_empty_nodes)
    area_url: tuple = ()
    area_fragment: tuple = ()
    rel_node: np.ndarray = field(default_factory=_empty_nodes)
    rel: tuple = ()
    alt_node: np.ndarray = field(default_factory=_empty_nodes)
    alt: tuple = ()

    def packed(self) -> bytes:
        """What crosses the shuffle: b"" for a page without any, else `_LAYOUT` then the fields
        in a fixed layout, zstd-compressed (compression.pack), or zlib'd JSON where a string
        holds the layout's separator. Kept once made: a page's size is counted (wire_bytes)
        before it is pickled. Packs of older versions (JSON, which starts with zlib's 0x78,
        never `_LAYOUT`) still read back."""
        got = self.__dict__.get("_packed")
        if got is None:
            if not self.image_src and not self.code_lang and not self.fragment and not self.area_url \
                    and not self.rel and not self.alt:
                got = b""
            else:
                raw = self._layout()
                got = self._packed_json() if raw is None else _LAYOUT + compression.pack(raw, "zstd")
            self.__dict__["_packed"] = got        # frozen: past __setattr__, as cached_property does
        return got

    def _layout(self) -> bytes | None:
        """The counts of the six node lists (int32), their nodes with the rel bits after the rel
        nodes (int32), and the strings' UTF-8 (lone surrogates kept) joined by NUL: images' URLs
        and alt texts, code languages, fragments, areas' URLs and fragments, alt texts. None
        for what the layout cannot hold as it is (a string with a NUL, a value not a string,
        rel bits past int32, parallel fields of unequal lengths), which packs as JSON did.
        A fixed layout where JSON was: over a docsites-dev run (1 worker, thread CPU) packing
        took 0.057 s where JSON and zlib took 0.112, unpacking 0.042 where 0.054, in 3% fewer
        bytes."""
        strings = (*self.image_src, *self.image_alt, *self.code_lang, *self.fragment, *self.area_url,
                   *self.area_fragment, *self.alt)
        nodes = (self.image_node, self.code_node, self.fragment_node, self.area_node, self.rel_node,
                 self.alt_node)
        counts = [len(self.image_src), len(self.code_lang), len(self.fragment), len(self.area_url),
                  len(self.rel), len(self.alt)]
        if [len(self.image_alt), len(self.area_fragment)] != [counts[0], counts[3]] \
                or [len(a) for a in nodes] != counts:
            return None
        try:
            joined = "\0".join(strings)
            rel = np.array(self.rel, dtype=np.int32)
        except (TypeError, OverflowError):
            return None
        if strings and joined.count("\0") != len(strings) - 1:
            return None
        ints = np.concatenate([np.array(counts, dtype=np.int32), *nodes[:5], rel, nodes[5]])
        return ints.astype(np.int32, copy=False).tobytes() + joined.encode("utf-8", "surrogatepass")

    def _packed_json(self) -> bytes:
        """The pack of older versions: zlib'd JSON of the five lists of images and code blocks,
        then the fragments' two and the links dataset's seven where the page has any."""
        links = bool(self.area_url or self.rel or self.alt)
        doc = [self.image_node.tolist(), self.image_src, self.image_alt, self.code_node.tolist(), self.code_lang]
        if self.fragment or links:   # absent from pages written before fragments were kept
            doc += [self.fragment_node.tolist(), self.fragment]
        if links:                    # absent from pages written before the links dataset
            doc += [self.area_node.tolist(), self.area_url, self.area_fragment,
                    self.rel_node.tolist(), list(self.rel), self.alt_node.tolist(), self.alt]
        return zlib.compress(json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass"), 1)

    @staticmethod
    def unpacked(blob: bytes) -> "NodeExtras":
        if not blob:
            return NO_EXTRAS
        if blob[:1] != _LAYOUT:
            return NodeExtras._unpacked_json(blob)
        raw = compression.unpack(memoryview(blob)[1:], "zstd", limit=_MAX_LAYOUT)
        if len(raw) < 24:
            raise ValueError("node extras shorter than their counts")
        counts = np.frombuffer(raw, dtype=np.int32, count=6).tolist()
        if min(counts) < 0:
            raise ValueError("node extras of negative counts")
        n_image, n_code, n_fragment, n_area, n_rel, n_alt = counts
        n_ints = n_image + n_code + n_fragment + n_area + 2 * n_rel + n_alt
        # One array of its own, aligned and writable, that the node lists are parts of.
        ints = np.frombuffer(raw, dtype=np.int32, count=n_ints, offset=24).copy()
        n_strings = 2 * n_image + n_code + n_fragment + 2 * n_area + n_alt
        text = str(memoryview(raw)[24 + 4 * n_ints:], "utf-8", "surrogatepass")
        strings = text.split("\0") if n_strings else [] if not text else [text]
        if len(strings) != n_strings:
            raise ValueError(f"node extras of {len(strings)} strings declare {n_strings}")
        at, lists = 0, []
        for count in (n_image, n_code, n_fragment, n_area, n_rel, n_rel, n_alt):
            lists.append(ints[at:at + count])
            at += count
        image_node, code_node, fragment_node, area_node, rel_node, rel, alt_node = lists
        at, lists = 0, []
        for count in (n_image, n_image, n_code, n_fragment, n_area, n_area, n_alt):
            lists.append(tuple(strings[at:at + count]))
            at += count
        src, alt, lang, fragment, area_url, area_fragment, alt_text = lists
        return NodeExtras(image_node, src, alt, code_node, lang, fragment_node, fragment, area_node, area_url,
                          area_fragment, rel_node, tuple(rel.tolist()), alt_node, alt_text)

    @staticmethod
    def _unpacked_json(blob: bytes) -> "NodeExtras":
        """A pack of older versions: zlib'd JSON of the five lists of images and code blocks, then
        (when a page had them) the fragments' two, then the links dataset's seven."""
        nodes, src, alt, code, lang, *rest = json.loads(zlib.decompress(blob).decode("utf-8", "surrogatepass"))
        fragment_node, fragment = rest[:2] or ([], [])
        area_node, area_url, area_fragment, rel_node, rel, alt_node, alt_text = rest[2:9] or ([],) * 7
        i32 = np.int32
        return NodeExtras(np.array(nodes, dtype=i32), tuple(src), tuple(alt),
                          np.array(code, dtype=i32), tuple(lang),
                          np.array(fragment_node, dtype=i32), tuple(fragment),
                          np.array(area_node, dtype=i32), tuple(area_url), tuple(area_fragment),
                          np.array(rel_node, dtype=i32), tuple(rel), np.array(alt_node, dtype=i32), tuple(alt_text))

    def __eq__(self, other) -> bool:
        return isinstance(other, NodeExtras) and self.packed() == other.packed()

    __hash__ = None

    def image_of(self) -> dict:
        return dict(zip(self.image_node.tolist(), zip(self.image_src, self.image_alt)))

    def code_language_of(self) -> dict:
        return dict(zip(self.code_node.tolist(), self.code_lang))

    def fragment_of(self) -> dict:
        return dict(zip(self.fragment_node.tolist(), self.fragment))

    def check(self, size: int) -> None:
        """ValueError unless every node index lies in a page of `size` nodes and the parallel
        fields have the same lengths (a damaged stored page: transforms/state.py)."""
        pairs = ((self.image_node, self.image_src), (self.image_node, self.image_alt),
                 (self.code_node, self.code_lang), (self.fragment_node, self.fragment),
                 (self.area_node, self.area_url), (self.area_node, self.area_fragment),
                 (self.rel_node, self.rel), (self.alt_node, self.alt))
        for nodes, values in pairs:
            if nodes.size != len(values) or (nodes.size and not ((nodes >= 0) & (nodes < size)).all()):
                raise ValueError("node extras do not fit the page's nodes")


NO_EXTRAS = NodeExtras()
# The first byte of a NodeExtras pack in the fixed layout (NodeExtras._layout); a larger raw
# layout than _MAX_LAYOUT is damage.
_LAYOUT = b"\x01"
_MAX_LAYOUT = 1 << 31


def node_extras(found: list, base_url: str, hrefs: list = (), page=None, fragments=None) -> NodeExtras:
    """NodeExtras of the (node index, lxml element) pairs of EXTRA_TAGS (and of `<a>` links
    with a `rel`) a flattening met and of the (node index, href) pairs of its links whose
    href holds a "#". `page`: the flattened page (its link_node, end and tag arrays), which
    tells the links without text whose image's alt text is kept; None keeps none.

    The compiled walk (transforms/_flatten.c) hands over what it has read itself instead:
    `fragments`, the link_fragment of `hrefs` already taken (int32 nodes, the non-empty
    fragments), and among `found` (node, image_url's answer or None, alt attribute) for an
    image or picture, (node, rel_bits) for a link and (node, tuple of class values) for a code
    block (_classes_language)."""
    if fragments is not None:
        fragment_node, fragment = fragments
        fragment_node = fragment_node.tolist()
    else:
        fragment_node, fragment = [], []
        fragment_of = link_fragment
        for i, href in hrefs:
            value = fragment_of(href)
            if value:
                fragment_node.append(i)
                fragment.append(value)
    if not found and not fragment:
        return NO_EXTRAS
    image_node, image_src, image_alt, code_node, code_lang = [], [], [], [], []
    area_node, area_url, area_fragment, rel_node, rel, alt_node, alt = [], [], [], [], [], [], []
    images_in_links = []     # (node, alt attribute) of the images and pictures, for the links without text
    for item in found:
        if len(item) == 3:
            # an image the compiled walk read: (node, image_url's answer or None for a pixel, alt)
            i, src, alt_value = item
            images_in_links.append((i, alt_value))
            if src:
                image_node.append(i)
                image_src.append(src)
                image_alt.append(_clip(alt_value, MAX_ALT) or "")
            continue
        i, el = item
        if type(el) is int:     # a link's rel bits, as the compiled walk read them
            if el:
                rel_node.append(i)
                rel.append(el)
            continue
        if type(el) is tuple:   # a code block's class values, as the compiled walk read them
            lang = _classes_language(el)
            if lang:
                code_node.append(i)
                code_lang.append(lang)
            continue
        try:
            tag = el.tag
            if tag == "pre":
                lang = code_language(el)
                if lang:
                    code_node.append(i)
                    code_lang.append(lang)
                continue
            if tag == "a":       # added for its rel only (an http(s) link of link_node)
                bits = rel_bits(el.get("rel"))
                if bits:
                    rel_node.append(i)
                    rel.append(bits)
                continue
            if tag == "area":
                href = el.get("href")
                url = resolve_link(base_url, href) if href is not None else None
                if url is not None:
                    area_node.append(i)
                    area_url.append(url)
                    area_fragment.append(link_fragment(href))
                    bits = rel_bits(el.get("rel"))
                    if bits:
                        rel_node.append(i)
                        rel.append(bits)
                    text = _clip(el.get("alt"), MAX_ALT)
                    if text:
                        alt_node.append(i)
                        alt.append(text)
                continue
            img = el if tag == "img" else next(el.iterdescendants("img"), None)     # el.find(".//img")
            if img is None:
                continue
            images_in_links.append((i, img.get("alt")))
            src = image_url(img, base_url) if not _is_pixel(img) else None
            if src:
                image_node.append(i)
                image_src.append(src)
                image_alt.append(_clip(img.get("alt"), MAX_ALT) or "")
        except Exception:  # noqa: BLE001 - one odd element costs its image, language or link only
            continue
    if page is not None and images_in_links and page.link_node.size:
        for link, text in _image_alts(page, images_in_links):
            alt_node.append(link)
            alt.append(text)
    # Document order (areas and images were met apart; a nested link's image can come late).
    alt_node, alt = _in_node_order(alt_node, alt)
    rel_node, rel = _in_node_order(rel_node, rel)
    if not image_node and not code_node and not fragment and not area_node and not rel_node and not alt_node:
        return NO_EXTRAS
    i32 = np.int32
    return NodeExtras(np.array(image_node, dtype=i32), tuple(image_src), tuple(image_alt),
                      np.array(code_node, dtype=i32), tuple(code_lang),
                      np.array(fragment_node, dtype=i32), tuple(fragment),
                      np.array(area_node, dtype=i32), tuple(area_url), tuple(area_fragment),
                      np.array(rel_node, dtype=i32), tuple(rel), np.array(alt_node, dtype=i32), tuple(alt))


def _in_node_order(nodes: list, values: list) -> tuple[list, list]:
    if all(a < b for a, b in zip(nodes, nodes[1:])):
        return nodes, values
    order = np.argsort(np.array(nodes), kind="stable").tolist()
    return [nodes[k] for k in order], [values[k] for k in order]


def _image_alts(page, images: list) -> list:
    """(link node, alt text) of the `<a>` links of `page` (its link_node) that hold no text
    node and an image (of `images`: (node, the <img> element's alt attribute or None), document
    order) with a non-empty alt: the first such image's alt, in link order."""
    # Only an image with alt text can give a link its text: the others are passed over below
    # (most images on most pages), and without any no link is looked up.
    images = [image for image in images if isinstance(image[1], str) and not _blank(image[1])]
    if not images:
        return []
    nodes = np.fromiter((node for node, _ in images), dtype=np.int64, count=len(images))
    if _compiled is not None and _COMPILED:
        # One pass in C (transforms/_flatten.c image_links) where the numpy reading below takes
        # a dozen calls: on docsites-dev's 1,204 pages with images, 8 ms against 21.
        held = _compiled.image_links(page.link_node, page.end, page.tag, nodes)
        if held is not None:
            out, done = [], set()
            for link, (_, alt) in zip(held, images):
                if link < 0 or link in done:
                    continue
                text = _clip(alt, MAX_ALT)
                if not text:
                    continue
                done.add(link)
                out.append((link, text))
            return out
    return _image_alts_reference(page, images, nodes)


def _image_alts_reference(page, images: list, nodes: np.ndarray) -> list:
    """_image_alts of the images with alt text (`nodes`: their nodes, int64) with numpy."""
    links, end, tag = page.link_node, page.end, page.tag
    # The links holding each image (a subtree is a preorder range): those starting at or
    # before it less those ending at or before it. An image in none is passed over at once.
    holding = links.searchsorted(nodes, side="right") - np.sort(end[links]).searchsorted(nodes, side="right")
    inside = (holding > 0).nonzero()[0]
    if not inside.size:
        return []
    nodes = nodes[inside]
    # The innermost link holding each image: the last link starting before it, when that
    # one holds it. Parsed HTML may nest links (libxml2 does not close an open <a>); an
    # image after a nested link that closed is looked up among its ancestors, once per page.
    held = links[links.searchsorted(nodes) - 1].astype(np.int64)
    closed = end[held] <= nodes
    if closed.any():
        from sitestrip.transforms.tree import nearest_in_mask
        mask = np.zeros(page.size, dtype=bool)
        mask[links] = True
        held[closed] = nearest_in_mask(page, mask)[nodes[closed]]
    # Only a link without a text node gets an alt text: the images of the others are not read.
    text_nodes = (tag == 0).nonzero()[0]        # 0: page.TEXT, the text-node pseudo tag
    textless = text_nodes.searchsorted(end[held]) == text_nodes.searchsorted(held)
    out, done = [], set()
    for k, link in zip(textless.nonzero()[0].tolist(), held[textless].tolist()):
        if link in done:
            continue
        text = _clip(images[inside[k]][1], MAX_ALT)
        if not text:
            continue
        done.add(link)
        out.append((link, text))
    return out


def _blank(value: str) -> bool:
    """Whether _clip(value, ...) is None for the str `value`: it holds no word."""
    return not value or value.isspace()


def _is_pixel(img) -> bool:
    """A tracking pixel or spacer: width or height declared as at most 1 (design §10's rule)."""
    for attr in ("width", "height"):
        value = img.get(attr)
        if value and _at_most_one_pixel(value):
            return True
    return False


@lru_cache(maxsize=1 << 12)
def _at_most_one_pixel(value: str) -> bool:
    """A width or height attribute's value declares at most 1 (pixel); sizes repeat."""
    value = value.strip().lower().removesuffix("px")
    return value.isdigit() and int(value) <= 1


def image_url(img, base_url: str) -> str | None:
    """The absolute http(s) URL an <img> shows: src, or a lazy-loading attribute when src is
    missing or not http(s) (a data: placeholder), or the first srcset candidate."""
    for attr in _LAZY_SRC:
        value = img.get(attr)
        if value and value.strip():
            url = resolve_link(base_url, value)
            if url:
                return url
    srcset = img.get("srcset")
    if srcset and srcset.strip():
        return resolve_link(base_url, srcset.strip().split(",")[0].split()[0])
    return None


def code_language(pre) -> str | None:
    """The language a code block declares by class: on the <pre>, its <code> child, or a
    wrapper up to three levels above it (Sphinx's div.highlight-X)."""
    code = next(pre.iterchildren("code"), None)         # pre.find("code"), without ElementPath
    for el in (code, pre):
        if el is not None:
            cls = el.get("class")
            lang = _class_language(cls) if cls else None
            if lang:
                return lang
    up = pre.getparent()
    for _ in range(_CODE_ANCESTORS):
        if up is None:
            break
        cls = up.get("class")
        lang = _class_language(cls) if cls else None
        if lang:
            return lang
        up = up.getparent()
    return None


def _classes_language(classes: tuple) -> str | None:
    """code_language of a <pre> from the class values it reads there, in its order (the
    compiled walk's item: transforms/_flatten.c pre_item)."""
    for cls in classes:
        lang = _class_language(cls)
        if lang:
            return lang
    return None


@lru_cache(maxsize=1 << 12)
def _class_language(cls: str) -> str | None:
    """The code language a class attribute declares (code_language), or None; a site's code
    blocks repeat a few class values."""
    for m in _CODE_CLASS.finditer(cls):
        lang = next(g for g in m.groups() if g).rstrip(";").lower()
        if lang.startswith("source-"):
            lang = lang[len("source-"):]
        if lang and lang not in _NOT_A_LANGUAGE:
            return lang
    return None

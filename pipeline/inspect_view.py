"""`sitestrip inspect`: one archived page with what sitestrip kept and removed marked on it.

The inspect command reads the WARC files directly (no Beam): it parses every
HTML page of the key page's site as the pipeline does, asks
transforms/explain.py for the per-node labels, re-parses the key page's HTML
and puts the labels back onto the elements through page.aligned_nodes (the
walk that built the compact page), and writes one self-contained HTML file.

The archived page is untrusted. Its scripts, event handlers, javascript: and
data: links, frames' sources, <base>, <meta> and every URL that would load
something are removed, its text and attribute values are escaped by our own
serializer, and a Content-Security-Policy lets only our inline script run and
only inline styles and data: images load, so even a rule the rewriting misses
fetches nothing.
"""
from __future__ import annotations

import html as htmlmod
import json
import re
import secrets
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
from lxml import etree

from sitestrip.configs import ReadLimits
from sitestrip.pipeline.page_source import Page, PageError, read_pages
from sitestrip.pipeline.warc import iter_payloads, open_warc
from sitestrip.transforms.charset import decode_html
from sitestrip.transforms.explain import Explanation, explain_page
from sitestrip.transforms.site_step import PageRecord, StageError
from sitestrip.transforms.page import PRODUCT_RULES, TEXT, ParseRules, aligned_nodes, parse_tree, tag_id, tag_name
from sitestrip.transforms.shards import shard_urls
from sitestrip.transforms.tree import subtree_sum
from sitestrip.transforms.urls import normalize_url, resolve_link, site_key

MODES = ("marked", "original", "template", "main", "nontemplate")
MODE_LABELS = {
    "marked": "Marked", "original": "Original", "template": "Template only",
    "main": "Main content only", "nontemplate": "Non-template",
}
# The three marker colours; tests look for them in screenshots.
TEMPLATE_COLOR = "#e8590c"
MAIN_COLOR = "#2b8a3e"
MENU_COLOR = "#1971c2"
HOVER_COLOR = "#ae3ec9"

CANDIDATE_METHOD_TEXT = {
    "cs": "complete subdigraph: the comparison pages all link to each other and with the key page",
    "partial_cs": "partial complete subdigraph: some comparison pages link to each other and with "
                  "the key page; the rest are linked pages or other pages of the site",
    "linked": "no complete subdigraph in the archive: pages the key page links to",
    "site_sample": "no linked page in the archive: other pages of the site, same directory first",
    "page_only": "no other page of the site in the archive: page-level methods "
                 "(MenEx + page-level ConEx); the non-template text is the page without its menu",
}

MAIN_CONTENT_TEXT = {
    "learned": "the product's block classifier: gradient-boosted trees over each block's page and "
               "site features (design §10)",
    "ceml": "seed 002's published classifier: its hard rules, then one decision tree per kind of "
            "block (design §10)",
    "conex": "ConEx: site-level with candidate pages (design §7), page-level without (§3); "
             "no blocks, so no content probabilities",
}


class InspectError(Exception):
    """A user-facing failure: page not in the inputs, or not processable."""


def _opened(path: str):
    try:
        return open_warc(path)
    except Exception as exc:  # missing file, permissions, remote FS failure: as a run's errors row says
        raise InspectError(f"cannot read {path}: {type(exc).__name__}: {exc}") from exc


@dataclass
class LoadedSite:
    key: PageRecord
    key_html: str
    records: list
    skipped: int          # pages of the site that could not be parsed (errors rows in a run)


def load_site(paths: Sequence[str], url: str, limits: ReadLimits = ReadLimits()) -> LoadedSite:
    """The key page (first capture in the pipeline's (url, file, offset) order) and its site's pages."""
    key_url = normalize_url(url)
    site = site_key(key_url) if key_url else None
    if not site:
        raise InspectError(f"not an absolute http(s) URL: {url!r}")
    records: list[PageRecord] = []
    key: tuple | None = None          # (order, record, body, http charset)
    key_failure: dict | None = None   # the key page's errors row
    skipped = 0

    def of_site(page_url: str) -> bool:
        normalized = normalize_url(page_url)
        return bool(normalized) and site_key(normalized) == site

    for path in paths:
        with _opened(path) as stream:
            for item in read_pages(stream, path, limits, wanted=of_site):
                if isinstance(item, PageError):
                    if item.response is not None:
                        skipped += 1
                        if normalize_url(item.response.url) == key_url:
                            key_failure = item.row
                    continue
                if not isinstance(item, Page):
                    continue
                record = item.record
                records.append(record)
                order = (record.warc_file, record.warc_offset)
                if record.url == key_url and (key is None or order < key[0]):
                    key = (order, record, item.response.body, item.response.http_charset)
    if key is None:
        if key_failure is not None:
            raise InspectError(f"{key_url} is in the inputs but failed in stage "
                               f"{key_failure['stage']}: {key_failure['error_class']}: {key_failure['message']}")
        known = sorted({r.url for r in records})
        hint = ("; pages of " + site + " in the inputs: " + ", ".join(known[:10])
                + (f" and {len(known) - 10} more" if len(known) > 10 else "")) if known else \
            f"; no page of {site} is in the inputs"
        raise InspectError(f"{key_url} is not an HTML 200 page of the inputs{hint}")
    _, record, body, http_charset = key
    html, _ = decode_html(body, http_charset)
    return LoadedSite(key=record, key_html=html, records=records, skipped=skipped)


# ---------------------------------------------------------------------------
# Stylesheets: the page's own CSS, inlined when the archive holds it

_CSS_IMPORT = re.compile(r"@import\b(?:[^;\"']|\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')*;?", re.I)
_CSS_URL = re.compile(r"""\burl\(\s*(?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[^)]*)\s*\)""", re.I)
# Functions that fetch without url(): renamed to one no browser knows, so the declaration is dropped.
_CSS_FETCHING = re.compile(r"(?<![\w-])((?:-webkit-)?image-set|src)\(", re.I)
_CSS_CHARSET = re.compile(rb"""^@charset\s+["']([A-Za-z0-9_.:-]{1,40})["']""")


def clean_css(css: str) -> str:
    """CSS that loads nothing and cannot close the <style> element it is put in."""
    css = _CSS_IMPORT.sub("", css)
    css = _CSS_URL.sub("none", css)
    css = _CSS_FETCHING.sub("ss-blocked(", css)
    # "<\/" is "</" to CSS but never an end tag to the HTML tokenizer.
    return css.replace("</", "<\\/")


def decode_css(body: bytes, http_charset: str | None) -> str:
    charset = http_charset
    if not charset:
        declared = _CSS_CHARSET.match(body)
        charset = declared.group(1).decode("ascii") if declared else "utf-8"
    if body.startswith(b"\xef\xbb\xbf"):
        body, charset = body[3:], "utf-8"
    try:
        return body.decode(charset, "replace")
    except LookupError:
        return body.decode("utf-8", "replace")


def _inert(el) -> bool:
    """Inside <template> or <noscript>: a stylesheet there does not apply to the page as shown."""
    return any(isinstance(a.tag, str) and a.tag.lower() in ("template", "noscript") for a in el.iterancestors())


def _stylesheet_link(el) -> bool:
    rel = (el.get("rel") or "").lower().split()
    # Alternate stylesheets are not applied until the reader picks one.
    return "stylesheet" in rel and "alternate" not in rel and bool(el.get("href"))


def stylesheet_links(root, base_url: str) -> list[str]:
    """Normalized URLs of the page's <link rel=stylesheet>, document order."""
    urls = []
    if root is None:
        return urls
    for el in root.iter("link"):
        if _stylesheet_link(el) and not _inert(el):
            target = resolve_link(base_url, el.get("href"))
            if target and target not in urls:
                urls.append(target)
    return urls


def load_stylesheets(paths: Sequence[str], urls: Iterable[str], limits: ReadLimits = ReadLimits()) -> dict:
    """normalized URL → CSS text, for the stylesheets of `urls` the archives hold (first capture)."""
    wanted = set(urls)
    found: dict[str, str] = {}
    if not wanted:
        return found
    for path in paths:
        with _opened(path) as stream:
            for url, _, charset, body in iter_payloads(stream, lambda u: normalize_url(u) in wanted, limits):
                found.setdefault(normalize_url(url), decode_css(body, charset))
        if len(found) == len(wanted):
            break
    return found


def _page_css(root, base_url: str, stylesheets: dict) -> list[tuple[str | None, str]]:
    """(media, cleaned CSS) of the page's <style> elements and archived stylesheets, document order."""
    out = []
    if root is None:
        return out
    for el in root.iter("link", "style"):
        if _inert(el):
            continue
        if el.tag == "style":
            css = "".join(el.itertext())
        else:
            if not _stylesheet_link(el):
                continue
            css = stylesheets.get(resolve_link(base_url, el.get("href")) or "")
            if css is None:
                continue
        out.append((el.get("media"), clean_css(css)))
    return out


# ---------------------------------------------------------------------------
# Per-node annotation

@dataclass
class _Annotation:
    element: dict        # lxml element → node index
    text: dict           # element → node index of its .text
    tail: dict           # element → node index of its .tail
    classes: list        # node index → "ss-..." class string
    occurrences: np.ndarray | None
    # Block methods: first and last block of each node's text (-1: none) and each block's
    # content probability; None for conex.
    block_first: np.ndarray | None = None
    block_last: np.ndarray | None = None
    proba: np.ndarray | None = None


def _annotate(expl: Explanation, body, rules: ParseRules = PRODUCT_RULES) -> _Annotation:
    page = expl.page
    nodes = list(aligned_nodes(body, rules))
    if len(nodes) != page.size:
        raise InspectError(f"the page re-parsed into {len(nodes)} nodes, its compact page has {page.size}")
    element, text, tail = {}, {}, {}
    for i, el, kind in nodes:
        if kind == "element":
            if el is not None and tag_id(el.tag.lower()) != page.tag[i]:
                raise InspectError(f"node {i}: <{el.tag}> re-parsed where the compact page has "
                                   f"<{tag_name(int(page.tag[i]))}>")
            if el is not None:
                element[el] = i
        else:
            if page.tag[i] != TEXT:
                raise InspectError(f"node {i}: text re-parsed where the compact page has an element")
            (text if kind == "text" else tail)[el] = i

    n = page.size
    parent = page.parent
    removed, main = expl.removed, expl.main
    is_element = page.tag != TEXT
    has_parent = parent >= 0
    safe_parent = np.where(has_parent, parent, 0)
    # Maximal subtrees that are all template, and the roots of the main content:
    # outlined, so a block reads as one mark instead of a nest of them.
    all_removed = subtree_sum(page, (~removed).astype(np.int32)) == 0
    template_block = is_element & all_removed & ~(has_parent & all_removed[safe_parent])
    if expl.block_proba is not None:
        # Block methods mark text nodes only (the selected blocks' own text, as main_text has
        # it); an element is main content when all the text it holds is, so a run of main
        # blocks is outlined as one region, as ConEx's node set is.
        is_text = page.tag == TEXT
        holds_text = subtree_sum(page, is_text.astype(np.int32)) > 0
        all_main = subtree_sum(page, (is_text & ~main).astype(np.int32)) == 0
        main = main | (is_element & holds_text & all_main)
    main_root = is_element & main & ~(has_parent & main[safe_parent])
    hide = {}
    for mode in ("template", "main", "nontemplate"):
        kept = expl.kept_in(mode)
        kept[0] = True        # BODY holds the panel: hide its children instead
        hide[mode] = ~kept & kept[safe_parent] & has_parent

    menu_node = expl.menu.node if expl.menu is not None else -1
    classes = []
    for i in range(n):
        c = []
        if removed[i]:
            c.append("ss-template")
        if main[i]:
            c.append("ss-main")
        if i == menu_node:
            c.append("ss-menu")
        if template_block[i]:
            c.append("ss-tb")
        if main_root[i]:
            c.append("ss-mr")
        for mode, mask in hide.items():
            if mask[i]:
                c.append("ss-h-" + mode)
        classes.append(" ".join(c))
    blocks = expl.node_blocks()
    first, last = blocks if blocks is not None else (None, None)
    return _Annotation(element=element, text=text, tail=tail, classes=classes,
                       occurrences=expl.occurrences, block_first=first, block_last=last,
                       proba=expl.block_proba)


# ---------------------------------------------------------------------------
# Serialization of the untrusted tree: our own, so that escaping is ours too

_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                   "param", "source", "track", "wbr", "keygen", "frame"})
_TAG_OK = re.compile(r"[a-z][a-z0-9._:-]*")
_ATTR_OK = re.compile(r"[a-z_:][a-z0-9_.:-]*")
# Attributes that make the browser load or submit something, or hand content to a
# frame; dropped wherever they appear.
_LOADING_ATTRS = frozenset({
    "src", "srcset", "srcdoc", "data", "poster", "background", "lowsrc", "dynsrc", "codebase",
    "archive", "classid", "manifest", "longdesc", "action", "formaction", "ping", "profile",
    "icon", "imagesrcset", "xlink:href", "cite", "nonce", "autofocus", "http-equiv",
})
# Kept as rendered (nothing inside is a node of the compact page, but svg and math draw it).
_RENAMED = {"plaintext": "pre", "xmp": "pre"}
PLACEHOLDER_IMG = ("data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='48' "
                   "height='32'%3E%3Crect width='48' height='32' fill='%23dee2e6'/%3E%3Cpath "
                   "d='M6 26l10-12 8 9 6-6 12 9z' fill='%23adb5bd'/%3E%3C/svg%3E")


def _esc_text(s: str) -> str:
    return htmlmod.escape(s, quote=False)


def _esc_attr(s: str) -> str:
    return htmlmod.escape(s, quote=True)


def _tag_out(name: str) -> str:
    name = _RENAMED.get(name, name)
    return name if _TAG_OK.fullmatch(name) else "span"


def _attributes(el, name: str, base_url: str, extra_class: str, extra: dict) -> str:
    parts = []
    classes = extra_class
    for key, value in el.attrib.items():
        key = key.lower()
        if not _ATTR_OK.fullmatch(key) or key.startswith("on") or key in _LOADING_ATTRS \
                or key.startswith("data-ss-") or key in extra:
            continue
        if key == "href":
            if name not in ("a", "area"):
                continue
            value = resolve_link(base_url, value)
            if value is None:
                continue
        elif key == "style":
            value = clean_css(value).replace("<\\/", "</")
        elif key == "class":
            # The page's own "ss-" classes would pass for our marks.
            own = " ".join(c for c in value.split() if not c.startswith("ss-"))
            classes = f"{own} {classes}".strip()
            continue
        elif key == "id" and value.startswith("ss-"):
            continue
        elif key == "value" and name == "param":
            continue    # a plugin's source URL
        parts.append(f' {key}="{_esc_attr(value)}"')
    if name == "img":
        parts.append(f' src="{_esc_attr(PLACEHOLDER_IMG)}"')
    if classes:
        parts.append(f' class="{_esc_attr(classes)}"')
    for key, value in extra.items():
        parts.append(f' {key}="{_esc_attr(str(value))}"')
    return "".join(parts)


def _node_extra(ann: _Annotation, i: int) -> dict:
    extra = {"data-ss-node": i}
    if ann.occurrences is not None:
        extra["data-ss-occ"] = int(ann.occurrences[i])
    if ann.proba is not None:
        first, last = int(ann.block_first[i]), int(ann.block_last[i])
        if first >= 0 and first == last:
            extra["data-ss-block"] = first
            extra["data-ss-p"] = f"{float(ann.proba[first]):.4f}"
        elif first >= 0:
            extra["data-ss-blocks"] = f"{first}-{last}"
    return extra


def _text_piece(ann: _Annotation, index: dict, el, raw: str) -> str:
    i = index.get(el)
    if i is None:
        return _esc_text(raw)
    extra = "".join(f' {k}="{v}"' for k, v in _node_extra(ann, i).items())
    return f'<span class="ss-t {ann.classes[i]}"{extra}>{_esc_text(raw)}</span>'


def _serialize_body(body, ann: _Annotation, base_url: str, closing: str,
                    rules: ParseRules = PRODUCT_RULES) -> str:
    """The annotated BODY, walked without recursion; `closing` goes in just before </body>."""
    if body is None:
        extra = "".join(f' {k}="{v}"' for k, v in _node_extra(ann, 0).items())
        return (f'<body class="{ann.classes[0]}"{extra}><p class="ss-empty">The archived page has '
                f'no BODY element.</p>{closing}</body>')
    out = []
    dropped = rules.dropped
    walker = etree.iterwalk(body, events=("start", "end"))
    skip = walker.skip_subtree
    for event, el in walker:
        if not isinstance(el.tag, str):
            if event == "end" and el.tail:
                out.append(_esc_text(el.tail))
            continue
        name = el.tag.lower()
        if event == "start":
            if name in dropped and el is not body:
                skip()
                continue
            i = ann.element.get(el)
            extra = _node_extra(ann, i) if i is not None else {}
            classes = ann.classes[i] if i is not None else ""
            out.append(f"<{_tag_out(name)}{_attributes(el, name, base_url, classes, extra)}>")
            if name == "iframe":
                skip()    # its inside is never rendered, only parsed as text
                continue
            if name in _VOID and (len(el) or el.text):
                # libxml2 nests what follows some void elements (embed, source) inside them; a
                # browser makes it siblings. A wrapper keeps it hidden along with its element.
                hides = " ".join(c for c in classes.split() if c.startswith("ss-h-"))
                out.append(f'<span class="ss-void {hides}">' if hides else '<span class="ss-void">')
            if el.text:
                out.append(_text_piece(ann, ann.text, el, el.text))
        else:
            if name in dropped and el is not body:
                if el.tail:
                    out.append(_text_piece(ann, ann.tail, el, el.tail))
                continue
            if el is body:
                out.append(closing)
            if name in _VOID and (len(el) or el.text) and el is not body:
                out.append("</span>")
            elif name not in _VOID or el is body:
                out.append(f"</{_tag_out(name)}>")
            if el.tail and el is not body:
                out.append(_text_piece(ann, ann.tail, el, el.tail))
    return "".join(out)


# ---------------------------------------------------------------------------
# The page around it: our style, panel and script

def _style() -> str:
    # Specificity boosters: the page's own rules (even with ids) must not win over the marks.
    s2 = ":not(#ss-z):not(#ss-z)"
    s3 = s2 + ":not(#ss-z)"
    t, m, u, h = TEMPLATE_COLOR, MAIN_COLOR, MENU_COLOR, HOVER_COLOR
    hides = "\n".join(f"html.ss-mode-{mode} .ss-h-{mode}{s3} {{ display: none !important; }}"
                      for mode in ("template", "main", "nontemplate"))
    return f"""
html {{ margin-right: 360px !important; }}
/* Our text wrappers must look like the bare text they wrap, whatever the page says about spans. */
span.ss-t{s2} {{ all: unset !important; }}
/* The template-only view marks template alone, the main-content view main content alone.
   Text both main content and template shows as template: it is what template removal drops. */
html.ss-marks:not(.ss-mode-template) span.ss-t.ss-main{s2} {{ background-color: rgba(43, 138, 62, .25) !important; }}
html.ss-marks:not(.ss-mode-main) span.ss-t.ss-template{s2} {{ background-color: rgba(232, 89, 12, .22) !important; }}
/* Outlines sit outside the box so they never cover the page's own text. */
html.ss-marks:not(.ss-mode-main) .ss-tb{s2} {{ outline: 2px dashed {t} !important; outline-offset: 0 !important; }}
html.ss-marks:not(.ss-mode-template) .ss-mr{s2} {{ outline: 3px solid {m} !important; outline-offset: 2px !important; }}
html.ss-marks .ss-menu{s2} {{ box-shadow: 0 0 0 3px {u} !important; }}
html.ss-marks .ss-hover{s3} {{ outline: 2px solid {h} !important; outline-offset: 0 !important; }}
{hides}
img[src^="data:image/svg+xml"]{s2} {{ background: #f1f3f5; }}
#ss-panel, #ss-panel * {{ all: revert; box-sizing: border-box; }}
#ss-panel {{ position: fixed !important; top: 0; right: 0; bottom: 0; width: 360px; overflow: auto;
  z-index: 2147483647; background: #fff; color: #212529; border-left: 1px solid #ced4da;
  font: 13px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; padding: 12px 14px;
  text-align: left; display: block !important; margin: 0; box-shadow: -2px 0 8px rgba(0,0,0,.08); }}
#ss-panel h1 {{ font-size: 15px; margin: 0 0 6px; }}
#ss-panel h2 {{ font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: #495057;
  margin: 14px 0 4px; border-bottom: 1px solid #e9ecef; padding-bottom: 2px; }}
#ss-panel p, #ss-panel ul, #ss-panel dl {{ margin: 4px 0; }}
#ss-panel ul {{ padding-left: 18px; }}
#ss-panel li {{ margin: 2px 0; overflow-wrap: anywhere; }}
#ss-panel code {{ font: 12px ui-monospace, Menlo, Consolas, monospace; overflow-wrap: anywhere; }}
#ss-panel .ss-url {{ color: #495057; overflow-wrap: anywhere; font-size: 12px; }}
#ss-panel .ss-legend span.ss-sw {{ display: inline-block; width: 14px; height: 10px; margin-right: 6px;
  vertical-align: middle; }}
#ss-panel .ss-legend li {{ list-style: none; margin-left: -18px; }}
#ss-panel .ss-modes {{ display: flex; flex-wrap: wrap; gap: 4px; }}
#ss-panel .ss-modes button {{ font: inherit; font-size: 12px; padding: 3px 8px; border: 1px solid #adb5bd;
  border-radius: 4px; background: #f8f9fa; color: #212529; cursor: pointer; }}
#ss-panel .ss-modes button[aria-pressed="true"] {{ background: #343a40; color: #fff; border-color: #343a40; }}
#ss-panel .ss-tag {{ display: inline-block; font-size: 11px; padding: 0 5px; border-radius: 3px;
  background: #e9ecef; color: #343a40; margin-right: 4px; }}
#ss-panel .ss-bar {{ height: 8px; background: #e9ecef; border-radius: 4px; overflow: hidden; margin: 4px 0; }}
#ss-panel .ss-bar div {{ height: 100%; background: {t}; }}
#ss-panel #ss-hover-info {{ background: #f8f9fa; border: 1px solid #e9ecef; border-radius: 4px;
  padding: 6px 8px; min-height: 3.2em; }}
#ss-panel dt {{ font-weight: 600; float: left; clear: left; width: 118px; }}
#ss-panel dd {{ margin: 0 0 2px 122px; }}
"""


_SCRIPT = """
(function () {
  var root = document.documentElement;
  var modes = %(modes)s;
  var candidates = %(candidates)d;
  // Block methods: the threshold and which blocks are main (1) by index; null for conex.
  var blocks = %(blocks)s;
  var panel = document.getElementById("ss-panel");
  var info = document.getElementById("ss-hover-info");
  var buttons = panel.querySelectorAll("button[data-ss-mode]");
  var current = null;
  function params() {
    var out = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
      var i = kv.indexOf("=");
      if (i > 0) { out[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1)); }
    });
    return out;
  }
  function setMode(mode) {
    if (modes.indexOf(mode) < 0) { mode = "marked"; }
    modes.forEach(function (m) { root.classList.toggle("ss-mode-" + m, m === mode); });
    root.classList.toggle("ss-marks", mode !== "original");
    root.setAttribute("data-ss-mode", mode);
    Array.prototype.forEach.call(buttons, function (b) {
      b.setAttribute("aria-pressed", String(b.getAttribute("data-ss-mode") === mode));
    });
  }
  function fmt(x, other) {
    // Two decimals, more when they would make a probability look equal to the threshold.
    var s = x.toFixed(2);
    return s === other.toFixed(2) && x !== other ? x.toFixed(4) : s;
  }
  function blockLine(el) {
    if (blocks === null) {
      return "content probability: not computed (main content by ConEx, which has no blocks)";
    }
    var b = el.getAttribute("data-ss-block");
    if (b !== null) {
      var p = parseFloat(el.getAttribute("data-ss-p"));
      return "block " + b + " \\u00b7 content probability " + fmt(p, blocks.threshold) + " (threshold "
             + fmt(blocks.threshold, p) + ") \\u2192 " + (blocks.main[+b] ? "main" : "not main");
    }
    var range = el.getAttribute("data-ss-blocks");
    if (range !== null) {
      var ends = range.split("-").map(Number), n = 0;
      for (var i = ends[0]; i <= ends[1]; i++) { n += blocks.main[i]; }
      return "blocks " + ends[0] + "\\u2013" + ends[1] + ": " + n + " of " + (ends[1] - ends[0] + 1) + " main";
    }
    return "in no block (holds no text)";
  }
  function describe(el) {
    var labels = [];
    if (el.classList.contains("ss-template")) { labels.push("template"); }
    if (el.classList.contains("ss-main")) { labels.push("main content"); }
    if (el.closest(".ss-menu")) { labels.push("in the menu"); }
    var kind = el.classList.contains("ss-t") ? "text" : "<" + el.tagName.toLowerCase() + ">";
    var occ = el.getAttribute("data-ss-occ");
    var lines = ["node " + el.getAttribute("data-ss-node") + " \\u00b7 " + kind];
    lines.push(occ === null ? "occurrences: none computed (page-level methods)"
               : "mapped into " + occ + " of " + candidates + " template candidate page" + (candidates === 1 ? "" : "s"));
    lines.push(blockLine(el));
    lines.push(labels.length ? labels.join(", ") : "non-template, not main content");
    var text = (el.textContent || "").replace(/\\s+/g, " ").trim();
    if (text) { lines.push("\\u201c" + (text.length > 90 ? text.slice(0, 90) + "\\u2026" : text) + "\\u201d"); }
    return lines;
  }
  function show(el) {
    if (current) { current.classList.remove("ss-hover"); }
    current = el;
    el.classList.add("ss-hover");
    info.textContent = "";
    describe(el).forEach(function (line, i) {
      var div = document.createElement("div");
      div.textContent = line;
      if (i === 0) { div.style.fontWeight = "600"; }
      info.appendChild(div);
    });
    info.setAttribute("data-ss-shown", el.getAttribute("data-ss-node"));
  }
  function apply() {
    var p = params();
    setMode(p.mode);
    if (p.node !== undefined) {
      var el = document.querySelector('[data-ss-node="' + String(parseInt(p.node, 10)) + '"]');
      if (el) { show(el); }
    }
  }
  document.addEventListener("mouseover", function (e) {
    var el = e.target && e.target.closest ? e.target.closest("[data-ss-node]") : null;
    if (el && !panel.contains(el)) { show(el); }
  });
  Array.prototype.forEach.call(buttons, function (b) {
    b.addEventListener("click", function () {
      var p = params();
      p.mode = b.getAttribute("data-ss-mode");
      location.hash = Object.keys(p).map(function (k) {
        return encodeURIComponent(k) + "=" + encodeURIComponent(p[k]);
      }).join("&");
    });
  });
  window.addEventListener("hashchange", apply);
  apply();
})();
"""


def _candidate_list(expl: Explanation, selection, title: str, n: int) -> str:
    if selection is None:
        return ""
    items = []
    for pos, url in enumerate(selection.candidates):
        if pos < selection.cs_size:
            role = "in the complete subdigraph"
        elif url in expl.linked:
            role = "linked from the key page"
        else:
            role = "other page of the site"
        items.append(f'<li><span class="ss-url">{_esc_text(url)}</span><br><span class="ss-tag">'
                     f'{role}</span></li>')
    if selection.cs_size == n:
        verdict = f"yes: all {n} wanted pages link to each other and with the key page"
    elif selection.cs_size >= 2:
        verdict = f"partly: {selection.cs_size} of the {n} wanted pages do"
    else:
        verdict = "no"
    return (f"<h2>{_esc_text(title)}</h2><p>Candidate method <code>{_esc_text(selection.method)}</code>; "
            f"{selection.pages_loaded} linked page(s) looked up. Complete subdigraph: {verdict}.</p>"
            f"<ul>{''.join(items) or '<li>none</li>'}</ul>")


def _candidate_method_text(expl: Explanation) -> str:
    if expl.candidate_method == "page_only" and expl.block_proba is not None:
        # The block classifier replaces page-level ConEx; the site features take their no-site values.
        return ("no other page of the site in the archive: MenEx, and the block classifier without "
                "site features; the non-template text is the page without its menu")
    return CANDIDATE_METHOD_TEXT.get(expl.candidate_method, "")


def _main_content_html(expl: Explanation, config) -> str:
    method = expl.main_content_method
    text = f"<p><code>{_esc_text(method)}</code>: {_esc_text(MAIN_CONTENT_TEXT.get(method, ''))}.</p>"
    if expl.block_proba is None:
        return text
    selected = expl.block_selected
    smoothing = (f", after mixing in each neighbouring block's probability with weight "
                 f"{config.main_content.neighbour_weight:g}"
                 if method == "learned" and config.main_content.neighbour_weight else "")
    return (text + f"<dl><dt>model</dt><dd><code title=\"{_esc_attr(expl.model_id or '')}\">"
            f"{_esc_text((expl.model_id or '?')[:12])}</code></dd>"
            f'<dt>threshold</dt><dd id="ss-threshold"><b>{expl.threshold:.4g}</b></dd>'
            f'<dt>main blocks</dt><dd id="ss-main-blocks"><b>{int(selected.sum())}</b> of '
            f"{selected.size}</dd></dl>"
            f"<p>A block is main content when its content probability{smoothing} is at least the "
            f"threshold; hover over the page to see a block's probability.</p>")


def _panel(expl: Explanation, config, skipped: int, mode_words: dict) -> str:
    page, record = expl.page, expl.record
    words = expl.words()
    share = expl.template_share
    t, m, u = TEMPLATE_COLOR, MAIN_COLOR, MENU_COLOR
    buttons = "".join(
        f'<button type="button" data-ss-mode="{mode}" aria-pressed="{str(mode == "marked").lower()}" '
        f'title="{_esc_attr(_mode_title(mode, mode_words))}">{MODE_LABELS[mode]}</button>'
        for mode in MODES)
    if share is None:
        share_html = ("<p>No template detection at page level; the MenEx menu is what the "
                      "non-template text leaves out.</p>")
    else:
        share_html = (f"<p><b>{share:.0%}</b> of the page's {words['page']} words are template "
                      f"({config.template.method}, a node is template when it maps into at least "
                      f"{config.template.votes} of the candidate pages).</p>"
                      f'<div class="ss-bar"><div style="width:{share * 100:.1f}%"></div></div>')
    menu = expl.menu
    if menu is None:
        menu_html = "<p>No menu: no node holds two or more links.</p>"
    else:
        links = "".join(f"<li>{_esc_text(text or '(no text)')} <span class=\"ss-url\">"
                        f"{_esc_text(url)}</span></li>" for url, text in menu.links[:12])
        more = f"<li>… and {len(menu.links) - 12} more</li>" if len(menu.links) > 12 else ""
        menu_html = (f"<p>Node {menu.node}, <code>&lt;{tag_name(int(page.tag[menu.node]))}&gt;</code>, "
                     f"{len(menu.links)} link(s):</p><ul>{links}{more}</ul>")
    notes = list(page.notes) + (["WARC-Truncated: " + record.truncated] if record.truncated else [])
    if expl.block_selected is not None and not expl.block_selected.any():
        notes.append("no main content: no block classified as main content")
    elif expl.block_selected is None and expl.candidate_method != "page_only" and not expl.main.any():
        notes.append("no main content: the page maps entirely onto its candidate pages")
    if skipped:
        notes.append(f"{skipped} page(s) of the site could not be parsed and were left out, "
                     "as in a run")
    notes_html = ("<h2>Notes</h2><ul>" + "".join(f"<li>{_esc_text(x)}</li>" for x in notes) + "</ul>") \
        if notes else ""
    return f"""<aside id="ss-panel" aria-label="sitestrip inspect">
<h1>sitestrip inspect</h1>
<p><b>{_esc_text(page.title or "(no title)")}</b><br><span class="ss-url">{_esc_text(record.url)}</span></p>
<dl>
<dt>site</dt><dd>{_esc_text(record.site)} · {expl.site_pages} page(s) in the input</dd>
<dt>WARC</dt><dd><code>{_esc_text(record.warc_file.rsplit("/", 1)[-1])}</code> @ {record.warc_offset}</dd>
<dt>fetched</dt><dd>{_esc_text(record.fetch_date or "?")}</dd>
<dt>words</dt><dd>{words['page']} page · {words['main']} main · {words['nontemplate']} non-template</dd>
</dl>
<h2>View</h2>
<div class="ss-modes">{buttons}</div>
<ul class="ss-legend">
<li><span class="ss-sw" style="outline:2px dashed {t};outline-offset:-2px;background:rgba(232,89,12,.22)"></span>template</li>
<li><span class="ss-sw" style="outline:2px solid {m};outline-offset:-2px;background:rgba(43,138,62,.25)"></span>main content</li>
<li><span class="ss-sw" style="box-shadow:0 0 0 2px {u} inset"></span>menu (MenEx)</li>
</ul>
<h2>Node under the pointer</h2>
<div id="ss-hover-info">Hover over the page to see a node's occurrences, block and labels.</div>
<h2>Candidate method</h2>
<p><code>{_esc_text(expl.candidate_method)}</code>: {_esc_text(_candidate_method_text(expl))}</p>
<h2>Main content</h2>
{_main_content_html(expl, config)}
{_candidate_list(expl, expl.conex_selection, "Candidate pages (site ConEx)", config.candidates.conex_n)
 if expl.block_proba is None else ""}
{_candidate_list(expl, expl.template_selection, "Candidate pages (template)", config.candidates.template_n)}
<h2>Template share</h2>
{share_html}
<h2>Menu</h2>
{menu_html}
{notes_html}
</aside>"""


def _mode_title(mode: str, mode_words: dict) -> str:
    if mode in mode_words:
        return f"{mode_words[mode]} words shown"
    return "the page as archived, without marks" if mode == "original" else "every node, marked"


def render(expl: Explanation, html: str, stylesheets: dict | None = None, config=None,
           skipped: int = 0) -> str:
    """The self-contained inspect page of an explained key page, from the page's decoded HTML.

    `stylesheets`: normalized URL → CSS of the page's linked stylesheets the
    archive holds; `skipped`: pages of the site that could not be read.
    """
    if config is None:
        from sitestrip.configs import load_config
        config = load_config()
    root, body, _ = parse_tree(html)
    rules = config.read.parse_rules()
    ann = _annotate(expl, body, rules)
    page = expl.page
    nonce = secrets.token_urlsafe(18)
    csp = (f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; "
           f"script-src 'nonce-{nonce}'; base-uri 'none'; form-action 'none'")
    mode_words = {mode: int(page.words[expl.kept_in(mode) & (page.tag == TEXT)].sum())
                  for mode in ("template", "main", "nontemplate")}
    candidates = len(expl.template_selection.candidates) if expl.template_selection else 0
    blocks = None
    if expl.block_proba is not None:
        blocks = {"threshold": expl.threshold, "main": expl.block_selected.astype(int).tolist()}
    # "</" cannot occur in these numbers, so the JSON cannot end the script element.
    script = _SCRIPT % {"modes": json.dumps(list(MODES)), "candidates": candidates,
                        "blocks": json.dumps(blocks)}
    closing = (_panel(expl, config, skipped, mode_words)
               + f'<script nonce="{nonce}">{script}</script>')
    css = "".join(
        f'<style{f" media={chr(34)}{_esc_attr(media)}{chr(34)}" if media else ""}>{text}</style>\n'
        for media, text in _page_css(root, page.base_url, stylesheets or {}))
    html_attrs = ""
    if root is not None and root is not body:
        html_attrs = _attributes(root, "html", page.base_url, "ss-marks ss-mode-marked", {})
    else:
        html_attrs = ' class="ss-marks ss-mode-marked"'
    doctype = "<!DOCTYPE html>\n" if root is not None and root.getroottree().docinfo.doctype else ""
    return (f"{doctype}<html{html_attrs}>\n<head>\n<meta charset=\"utf-8\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{_esc_attr(csp)}\">\n"
            f"<title>sitestrip inspect: {_esc_text(page.title or expl.record.url)}</title>\n"
            f"{css}<style id=\"ss-style\">{_style()}</style>\n</head>\n"
            f"{_serialize_body(body, ann, page.base_url, closing, rules)}\n</html>\n")


def inspect(paths: Sequence[str], url: str, config) -> tuple[str, Explanation]:
    """(inspect page HTML, explanation) of `url` in the WARC files `paths`."""
    site = load_site(paths, url, config.read)
    # A run compares a page only with the pages of its shard (design "Hot sites").
    shards = shard_urls(site.key.site, [r.url for r in site.records], config.site.max_site_pages)
    shard = [r for r in site.records if shards[r.url] == shards[site.key.url]]
    try:
        expl = explain_page(site.key, shard, config)
    except StageError as exc:
        raise InspectError(f"{site.key.url} failed in stage {exc.stage}: {exc.error_class}: "
                           f"{exc.message}") from exc
    root, _, _ = parse_tree(site.key_html)
    stylesheets = load_stylesheets(paths, stylesheet_links(root, site.key.page.base_url), config.read)
    return render(expl, site.key_html, stylesheets, config, site.skipped), expl

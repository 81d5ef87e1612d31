"""main_markdown: the main content as CommonMark (pipe tables as in GitHub's dialect).

It is rendered from a set of text nodes, the very set main_text is made of, so the two
never disagree on what is content; the page's tags around those nodes give the form:

- headings `#` by level; paragraphs; a `<br>` inside a paragraph is a hard break (`\\`);
- lists `-` / `1.`, nested by the items actually written (a list item whose parent item
  wrote nothing is not indented under it, so it never turns into an indented code block);
- data tables as pipe tables: header row (the first row), escaped pipes, empty cells
  for cells without main text; a table holding another table or block structure (lists,
  headings, code, quotes, sections) lays a page out and is read through, as are 1×1 ones;
- code blocks fenced, verbatim (the joiner keeps <pre> text as the page has it), with
  the language a class declares (transforms/meta.py: language-X, highlight-X, ...);
- block quotes `>`; emphasis `*`, strong `**`, inline code `` ` ``;
- links `[text](absolute URL#fragment)` (the href's fragment, kept here only: not links to
  the page itself without one) and images `![alt](URL)`, each kept or dropped by
  MarkdownOptions. An image is written when the nearest block-level element around it is
  mostly main content (at least half of its words);
- a superscript's text after a `^` (`2^48`), where main_text sets it apart by a space.

Inline runs are joined by the product's one text joiner (transforms/text.py: the
whitespace the HTML has), and a new line starts where the page starts one; where main_text
starts a line inside a page line (two blocks of one line, e.g. a drop cap and its
paragraph), Markdown puts at least a space, so no two of main_text's words glue into one.
Text is escaped where Markdown would read it as syntax (`*`, `` ` ``, `\\`, `<`, `](`, `_` at
word edges, entities, and block markers at a line's start), so every word of main_text is
in main_markdown as a CommonMark reader reads it, in the same order, and nothing else
(link and image targets, alt texts, list numbers and code languages are markup, not text;
tests/transforms/test_markdown.py and bench/sitestrip_bench/output_columns.py check it).

Everything is a loop over the selected nodes and their ancestors (memoized per element);
no recursion over the DOM.

transforms/_markdown.c does all of page_markdown in one call per page (the written items and
their separators, the climbs from them, the block contexts, every line's inline Markdown, the
layout with its tables and code blocks), with no Python object per node or line; the Python
code here is its reference (tests/transforms/test_markdown_compiled.py,
sitestrip-bench compare-markdown) and runs where the extension is missing or with
SITESTRIP_MARKDOWN=python: change the two together.
"""
from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from sitestrip.transforms.page import (BLOCK_LEVEL, F_PRE, F_RAISED, F_SPACE_BEFORE, KNOWN_TAGS, TAG_ID, TEXT,
                                       CompactPage, has_tag, tag_ids, tag_table)
from sitestrip.transforms.text import _NEWLINE, _NONE, gaps, separators

try:
    # main_markdown compiled (transforms/_markdown.c, built by `pip install`); the Python code
    # below is its reference and runs where it is missing.
    from sitestrip.transforms import _markdown as _compiled
except ImportError:  # pragma: no cover - a source tree used without installing
    _compiled = None

# Whether page_markdown uses the compiled code when it is built (tests switch it off to run the
# reference); SITESTRIP_MARKDOWN=python does the same for a whole process.
_COMPILED = os.environ.get("SITESTRIP_MARKDOWN", "compiled") != "python"


@dataclass(frozen=True)
class MarkdownOptions:
    links: bool = True
    images: bool = True


_ID = TAG_ID
_HEADING = {_ID[f"h{k}"]: k for k in range(1, 7)}
_PRE = set(tag_ids("pre", "listing", "xmp", "plaintext").tolist())
_OL, _LI, _TABLE, _TR = _ID["ol"], _ID["li"], _ID["table"], _ID["tr"]
_CELL = set(tag_ids("td", "th").tolist())
_QUOTE = _ID["blockquote"]
_STRONG = set(tag_ids("strong", "b").tolist())
_EM = set(tag_ids("em", "i", "cite", "dfn", "var").tolist())
_CODE = set(tag_ids("code", "kbd", "samp", "tt").tolist())
_A = _ID["a"]
_SUP = _ID["sup"]
# A table that holds any of these lays the page out: it is read through, not drawn.
_LAYOUT_INSIDE = tag_ids("table", "ul", "ol", "dl", "pre", "blockquote", "h1", "h2", "h3", "h4",
                         "h5", "h6", "form", "section", "article", "header", "footer", "nav",
                         "aside", "main", "figure", "hr", "listing", "xmp")

_ESCAPE = re.compile(r"[\\`*<]|\](?=\()|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|&(?=#?[A-Za-z0-9]+;)")
_ESCAPE_BRACKETS = re.compile(r"[\\`*<\[\]]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|&(?=#?[A-Za-z0-9]+;)")
_ESCAPABLE = re.compile(r"[\\`*<\]_&]")
_ESCAPABLE_BRACKETS = re.compile(r"[\\`*<\[\]_&]")
# What a line may not begin with unless escaped: ATX heading, quote, bullet, setext
# underline, thematic break, fence, ordered-list number.
_LINE_START = re.compile(r"(#{1,6}(?:\s|$)|>|[-+](?:\s|$)|=+\s*$|-+\s*$|~~~)")
_NUMBERED = re.compile(r"(\d{1,9})([.)])(\s|$)")
_BACKTICKS = re.compile(r"`+")


def escape_text(text: str, brackets: bool = False) -> str:
    # Most text has none of these characters: one scan of a character class decides.
    if not (_ESCAPABLE_BRACKETS if brackets else _ESCAPABLE).search(text):
        return text
    return (_ESCAPE_BRACKETS if brackets else _ESCAPE).sub(r"\\\g<0>", text)


def escape_line_start(line: str) -> str:
    """A rendered line with the Markdown block syntax its first characters would start escaped."""
    if _LINE_START.match(line):
        return "\\" + line
    m = _NUMBERED.match(line)
    if m:
        return f"{m.group(1)}\\{m.group(2)}{line[m.end(2):]}"
    return line


def _fence(content: str, minimum: int) -> str:
    longest = max((len(r) for r in _BACKTICKS.findall(content)), default=0)
    return "`" * max(minimum, longest + 1)


def _code_span(content: str) -> str:
    if not content:
        return ""
    fence = _fence(content, 1)
    pad = " " if content[0] == "`" or content[-1] == "`" or (content[0] == " " and content[-1] == " "
                                                              and content.strip()) else ""
    return f"{fence}{pad}{content}{pad}{fence}"


def _destination(url: str) -> str:
    return f"<{url}>" if any(c in url for c in " ()<>") else url


class _Context:
    """Structure of a block-level element, from its ancestors: memoized per element. `nest`:
    the list items and block quotes around it, outermost first."""
    __slots__ = ("heading", "pre", "cell", "table", "li", "nest")

    def __init__(self, heading=0, pre=-1, cell=-1, table=-1, li=-1, nest=()):
        self.heading, self.pre, self.cell, self.table, self.li, self.nest = heading, pre, cell, table, li, nest


# The elements that can change a context (_Structure.context's cases), as a tag_table.
_STRUCTURAL = tag_table("h1", "h2", "h3", "h4", "h5", "h6", "pre", "listing", "xmp", "plaintext",
                        "td", "th", "li", "blockquote", "table")
# Per known tag id (unknown ones: the last slot, _known), the inline kind (1 strong, 2 em, 3 code).
_N_KNOWN = len(KNOWN_TAGS)
_KIND_OF = np.zeros(_N_KNOWN + 1, dtype=np.int8)
for _k, _tags in enumerate((_STRONG, _EM, _CODE), 1):
    _KIND_OF[sorted(_tags)] = _k
# Per known tag id, what it changes in a context (_Structure.context's cases, as
# transforms/_markdown.c reads them): a heading's level 1..6, 7 pre, 8 list item, 9 quote,
# 10 table, 11 cell.
_ROLE_OF = np.zeros(_N_KNOWN + 1, dtype=np.uint8)
for _t, _level in _HEADING.items():
    _ROLE_OF[_t] = _level
for _role, _tags in ((7, _PRE), (8, {_LI}), (9, {_QUOTE}), (10, {_TABLE}), (11, _CELL)):
    _ROLE_OF[sorted(_tags)] = _role
# Per known tag id, what _Structure.is_data_table counts inside a table (for _markdown.c):
# 1 a row, 2 a cell, 4 a layout element.
_INSIDE_OF = np.zeros(_N_KNOWN + 1, dtype=np.uint8)
_INSIDE_OF[_TR] |= 1
_INSIDE_OF[sorted(_CELL)] |= 2
_INSIDE_OF[_LAYOUT_INSIDE] |= 4

if _compiled is not None:
    _compiled.configure(BLOCK_LEVEL.view(np.uint8), _KIND_OF.view(np.uint8), _STRUCTURAL.view(np.uint8), _ROLE_OF,
                        _INSIDE_OF, TEXT, _OL, _QUOTE, _LI, _SUP, F_SPACE_BEFORE, F_RAISED, F_PRE,
                        unicodedata.category)


def _known(tags: np.ndarray) -> np.ndarray:
    """Tag ids as indexes of the per-tag tables (unknown tags, ids from 2**16 on: the last,
    empty, slot)."""
    return np.minimum(tags, _N_KNOWN)


class _Structure:
    """The page's structure as Markdown needs it: block contexts (memoized per element), data
    tables, and the inline elements around each written node."""

    def __init__(self, page: CompactPage, options: MarkdownOptions):
        self.page = page
        self.parent, self.tag, self.end = page.parent, page.tag, page.end
        self.blockish = has_tag(page.tag, BLOCK_LEVEL)
        self.blockish[0] = True
        self.contexts: dict = {-1: _Context()}
        self.data_table: dict = {}
        self.linked = np.zeros(page.size, dtype=bool)
        self.urls: dict = {}
        self.targets = page.link_url if type(page.link_url) is tuple else tuple(page.link_url)
        if options.links and page.link_node.size:
            side = page.side
            if side.fragment:
                # A link keeps its fragment here only (an API cross-reference points at its
                # entry, not at the top of the page); link_url, which names pages, has none.
                targets = list(self.targets)
                at = np.searchsorted(page.link_node, side.fragment_node).tolist()
                for k, fragment in zip(at, side.fragment):
                    targets[k] = f"{targets[k]}#{fragment}"
                self.targets = tuple(targets)
            # A link to the page itself is text, unless it points at a place on it.
            own = page.url
            keep = np.array([u != own for u in self.targets], dtype=bool)
            self.linked[page.link_node[keep]] = True

    def url(self, link: int) -> str:
        got = self.urls.get(link)
        if got is None:
            k = int(np.searchsorted(self.page.link_node, link))
            got = self.urls[link] = self.targets[k]
        return got

    def around(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(container, inline) of each node: its nearest block-level ancestor, and per inline
        kind (link, strong, em, code) its nearest such ancestor below the container, -1 if none.
        One vector step per level of inline nesting, whatever the number of nodes."""
        cur = self.parent[nodes].astype(np.int64)
        inline = np.full((4, nodes.size), -1, dtype=np.int64)
        active = np.flatnonzero(~self.blockish[cur])
        while active.size:
            c = cur[active]
            kind = _KIND_OF[_known(self.tag[c])]
            for k, hit in enumerate((self.linked[c], kind == 1, kind == 2, kind == 3)):
                hit &= inline[k, active] < 0
                inline[k, active[hit]] = c[hit]
            cur[active] = self.parent[c]
            active = active[~self.blockish[cur[active]]]
        return cur, inline

    def structural_anchor(self, elements: np.ndarray) -> np.ndarray:
        """Each element's nearest ancestor-or-self whose tag can change a context (context's
        cases), or -1 (the page's context): one vector step per level climbed."""
        cur = elements.astype(np.int64)
        active = np.flatnonzero((cur >= 0) & ~has_tag(self.tag[np.maximum(cur, 0)], _STRUCTURAL))
        while active.size:
            cur[active] = self.parent[cur[active]]
            active = active[cur[active] >= 0]
            active = active[~has_tag(self.tag[cur[active]], _STRUCTURAL)]
        return cur

    def context(self, element: int) -> _Context:
        got = self.contexts.get(element)
        if got is not None:
            return got
        chain = []
        e = element
        while e not in self.contexts:
            chain.append(e)
            e = int(self.parent[e])
        ctx = self.contexts[e]
        for e in reversed(chain):
            t = int(self.tag[e])
            new = _Context(ctx.heading, ctx.pre, ctx.cell, ctx.table, ctx.li, ctx.nest)
            if t in _HEADING:
                new.heading = _HEADING[t]
            elif t in _PRE:
                new.pre = e
            elif t == _LI:
                new.li = e
                new.nest = ctx.nest + (e,)
            elif t == _QUOTE:
                new.nest = ctx.nest + (e,)
            elif t == _TABLE:
                if self.is_data_table(e):
                    new.table, new.cell = e, -1
            elif t in _CELL and ctx.table >= 0 and new.cell < 0:
                new.cell = e
            self.contexts[e] = new
            ctx = new
        return ctx

    def is_data_table(self, table: int) -> bool:
        got = self.data_table.get(table)
        if got is None:
            inside = self.tag[table + 1:self.end[table]]
            rows = int(np.count_nonzero(inside == _TR))
            cells = np.isin(inside, list(_CELL))
            got = not np.isin(inside, _LAYOUT_INSIDE).any() and rows >= 1 and \
                (rows >= 2 or int(np.count_nonzero(cells)) >= 2)
            self.data_table[table] = got
        return got


def _image_nodes(page: CompactPage, text_mask: np.ndarray, holders: np.ndarray) -> np.ndarray:
    """Images (given their nearest block-level ancestors) whose holder is not BODY and has main
    text in at least half of its words."""
    nodes = page.side.image_node
    words = np.concatenate(([0], np.cumsum(page.words, dtype=np.int64)))
    main_words = np.concatenate(([0], np.cumsum(np.where(text_mask, page.words, 0), dtype=np.int64)))
    ends = page.end[holders]
    total = words[ends] - words[holders]
    main = main_words[ends] - main_words[holders]
    return nodes[(holders > 0) & (main > 0) & (2 * main >= total)]


@dataclass
class _Unit:
    """One line of main_text: items[start:stop] of the written nodes."""
    start: int
    stop: int
    container: int
    ctx: _Context
    number: int                 # index among the units


class _Lines:
    """The written nodes (text and images) in document order, with what goes before each,
    their texts and inline elements, cut into units where main_text starts a new line."""

    def __init__(self, page: CompactPage, text_mask: np.ndarray, options: MarkdownOptions,
                 line_starts: np.ndarray | None = None):
        self.structure = s = _Structure(page, options)
        idx = np.flatnonzero(text_mask & (page.tag == TEXT))
        images = np.zeros(0, dtype=np.int64)
        if options.images and page.side.image_node.size:
            holders, _ = s.around(page.side.image_node)
            images = _image_nodes(page, text_mask, holders).astype(np.int64)
        gap = gaps(page, idx)
        text_sep = separators(page, idx, gap)
        carets, raised_at = _caret_nodes(page, idx)
        caret_sep = np.zeros(carets.size, dtype=np.int8)
        if carets.size:
            # A superscript is `^` and its text: the `^` takes the separator the HTML gives the
            # text (text.py's space for F_RAISED is main_text's way of writing it), the text none.
            caret_sep = separators(page, idx, gap, raised=False)[raised_at]
            text_sep[raised_at] = _NONE
        nodes = np.concatenate((idx, images, carets))
        order = np.argsort(nodes, kind="stable")
        nodes = nodes[order]
        # Items written as given Markdown (images, carets) rather than escaped text.
        is_image = (order >= idx.size)
        sep = np.concatenate((text_sep, np.zeros(images.size, dtype=np.int8), caret_sep))[order]
        if images.size:
            # An image is apart from what is next to it on its line.
            picture = (order >= idx.size) & (order < idx.size + images.size)
            apart = np.zeros(nodes.size, dtype=bool)
            apart[1:] = picture[1:] | picture[:-1]
            sep = np.where(apart, 1, sep).astype(np.int8)
        line = page.line[nodes]
        new_line = np.zeros(nodes.size, dtype=bool)
        new_line[1:] = line[1:] != line[:-1]
        if line_starts is not None and nodes.size:
            # main_text starts a line here although the page does not (two blocks of one
            # line): a space at least, so that no word of main_text is glued to another.
            starts = np.zeros(page.size, dtype=bool)
            starts[line_starts] = True
            sep[starts[nodes] & ~new_line & (sep == _NONE)] = 1
        sep[new_line] = _NEWLINE
        if nodes.size:
            sep[0] = _NEWLINE
        self.nodes, self.is_image, self.sep = nodes, is_image, sep
        self.container, inline = s.around(nodes)
        # Which inline kinds (bit k: link, strong, em, code) each node sits in: _inline_markdown
        # skips a level by one test of a line's or a group's combined bits.
        kinds = ((inline >= 0) * np.array([[1], [2], [4], [8]])).sum(axis=0)
        self.inline, self.inline_kinds = inline, kinds
        self.page = page
        self.image_strings = []
        if images.size or carets.size:
            image_of = page.side.image_of() if images.size else {}
            caret = order >= idx.size + images.size
            for k in np.flatnonzero(is_image).tolist():
                if caret[k]:
                    self.image_strings.append("^")
                    continue
                src, alt = image_of[int(nodes[k])]
                self.image_strings.append(f"![{escape_text(alt, brackets=True)}]({_destination(src)})")
        self._strings = None
        starts = np.flatnonzero(sep == _NEWLINE)
        self.bounds = np.append(starts, nodes.size)
        self.starts = starts
        self.firsts = firsts = self.container[starts]
        # Only headings, code, list items, quotes, tables and cells change a context; any other
        # element has its nearest such ancestor's: contexts are built for those alone.
        anchor = s.structural_anchor(firsts)
        self.distinct, where = np.unique(anchor, return_inverse=True)
        self.where = where.reshape(-1)
        self._contexts = self._units = None

    # The rendering reads these as Python lists, item by item.
    @cached_property
    def sep_of(self) -> list:
        return self.sep.tolist()

    @cached_property
    def image_of(self) -> list:
        return self.is_image.tolist()

    @cached_property
    def inline_of(self) -> list:
        return np.concatenate((self.inline, self.inline_kinds[None, :])).T.tolist()

    @cached_property
    def plain(self) -> np.ndarray:
        marked = (self.inline >= 0).any(axis=0) | self.is_image
        starts = self.starts
        return ~np.logical_or.reduceat(marked, starts) if starts.size else np.zeros(0, dtype=bool)

    @cached_property
    def kinds(self) -> list:
        starts = self.starts
        return np.bitwise_or.reduceat(self.inline_kinds, starts).tolist() if starts.size else []

    @property
    def contexts(self) -> list:
        """The _Context of each distinct structural anchor (`where` indexes it per unit)."""
        if self._contexts is None:
            self._contexts = [self.structure.context(e) for e in self.distinct.tolist()]
        return self._contexts

    def unit(self, i: int) -> _Unit:
        return _Unit(int(self.bounds[i]), int(self.bounds[i + 1]), int(self.firsts[i]),
                     self.contexts[self.where[i]], i)

    @property
    def units(self) -> list:
        if self._units is None:
            bounds, contexts = self.bounds.tolist(), self.contexts
            self._units = [_Unit(a, b, c, contexts[w], i)
                           for i, (a, b, c, w) in enumerate(zip(bounds[:-1], bounds[1:], self.firsts.tolist(),
                                                                self.where.tolist()))]
        return self._units

    @property
    def strings(self) -> list:
        """Each written node's text (an image's: its Markdown), for the reference rendering."""
        if self._strings is None:
            strings = self.page.node_texts(self.nodes)
            for k, markdown in zip(np.flatnonzero(self.is_image).tolist(), self.image_strings):
                strings[k] = markdown
            self._strings = strings
        return self._strings

    def raw(self, u: _Unit) -> str:
        """The unit's text as the page has it (code): the joiner's spacing, no markup."""
        sep, strings, image = self.sep_of, self.strings, self.image_of
        return "".join((" " + strings[k]) if sep[k] == 1 and k > u.start else strings[k]
                       for k in range(u.start, u.stop) if not image[k])

    def markdown(self, u: _Unit) -> str:
        """The unit's inline Markdown."""
        if self.plain[u.number]:
            return escape_text(self.raw(u))
        sep, strings, image, inline = self.sep_of, self.strings, self.image_of, self.inline_of
        items = [(sep[k], strings[k], image[k], *inline[k]) for k in range(u.start, u.stop)]
        items[0] = (_NONE,) + items[0][1:]
        return _inline_markdown(items, self.structure, kinds=self.kinds[u.number])


# An item of _inline_markdown: (separator code, text, is image, link, strong, em, code node,
# kind bits: 1 in a link, 2 strong, 4 emphasis, 8 code).
_SEP, _STR, _IMG, _KINDS = 0, 1, 2, 7


def _is_space(ch: str) -> bool:
    return not ch or ch.isspace()


def _is_punct(ch: str) -> bool:
    return bool(ch) and unicodedata.category(ch)[0] in "PS"


def _can_wrap(before: str, inner: str, after: str) -> bool:
    """CommonMark's flanking rules for `*` around `inner`, between the characters `before` and
    `after` ("" or a space: line edge or whitespace): else the marks would show as stars."""
    first, last = inner[0], inner[-1]
    opens = not _is_space(first) and (not _is_punct(first) or _is_space(before) or _is_punct(before))
    closes = not _is_space(last) and (not _is_punct(last) or _is_space(after) or _is_punct(after))
    return opens and closes


def _inline_markdown(items: list, structure: _Structure, level: int = 0, in_link: bool = False,
                     before: str = "", after: str = "", kinds: int = 15) -> str:
    """Items of one line with links, strong, emphasis and code spans, nested in that order
    (the nesting is bounded by the four levels). In a link's text, brackets are escaped too.
    `before`, `after`: the characters around these items (for the emphasis rules); `kinds`:
    the items' kind bits combined (a level whose bit is off has no element around any item)."""
    while level < 4 and not kinds >> level & 1:
        level += 1
    if level == 4:
        # Runs of text escaped at once; images are Markdown already.
        out, run = [], []
        for it in items:
            if it[_IMG]:
                if run:
                    out.append(escape_text("".join(run), in_link))
                    run = []
                out.append((" " if it[_SEP] else "") + it[_STR])
            else:
                run.append((" " + it[_STR]) if it[_SEP] else it[_STR])
        if run:
            out.append(escape_text("".join(run), in_link))
        return "".join(out)
    # Groups of items under the same element of this level: (lead, body, emphasis mark).
    key_at = 3 + level
    groups = []
    start = 0
    count = len(items)
    while start < count:
        key = items[start][key_at]
        group_kinds = items[start][_KINDS]
        stop = start + 1
        while stop < count and items[stop][key_at] == key:
            group_kinds |= items[stop][_KINDS]
            stop += 1
        group = items[start:stop]
        lead = " " if group[0][_SEP] else ""
        group[0] = (_NONE,) + group[0][1:]          # the space before a group goes outside its marks
        mark = ""
        if key < 0:
            body = _inline_markdown(group, structure, level + 1, in_link, "*", "*", group_kinds)
        elif level == 3:                            # code: raw text
            body = _code_span("".join((" " if it[_SEP] else "") + it[_STR] for it in group))
        elif level == 0:
            inner = _inline_markdown(group, structure, level + 1, True, "[", "]", group_kinds)
            body = f"[{inner}]({_destination(structure.url(key))})" if inner.strip() else inner
        else:
            mark = "**" if level == 1 else "*"
            body = _inline_markdown(group, structure, level + 1, in_link, "*", "*", group_kinds)
        groups.append((lead, body, mark if body.strip() else ""))
        start = stop
    out = []
    prev = before
    for g, (lead, body, mark) in enumerate(groups):
        if mark:
            if g + 1 < len(groups):
                nxt_lead, nxt_body, nxt_mark = groups[g + 1]
                nxt = " " if nxt_lead else (nxt_mark or nxt_body)[:1]
            else:
                nxt = after
            if _can_wrap(" " if lead else prev, body, nxt):
                body = f"{mark}{body}{mark}"
        text = lead + body
        out.append(text)
        if text:
            prev = text[-1]
    return "".join(out)


def _caret_nodes(page: CompactPage, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the <sup> elements whose first text is written, the positions in `idx` of those texts):
    where Markdown writes a `^`. The text is the sup's first (F_RAISED, never inside <pre>) on
    the sup's own line; of nested sups the outermost takes it."""
    sups = np.flatnonzero(page.tag == _SUP)
    if not sups.size or not idx.size:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    at = np.searchsorted(idx, sups + 1)
    inside = at < idx.size
    sups, at = sups[inside], at[inside]
    first = idx[at]
    keep = (first < page.end[sups]) & ((page.flags[first] & F_RAISED) != 0) & (page.line[first] == page.line[sups])
    sups, at = sups[keep], at[keep]
    at, outer = np.unique(at, return_index=True)
    return sups[outer].astype(np.int64), at.astype(np.int64)


def page_markdown(page: CompactPage, text_mask: np.ndarray, options: MarkdownOptions = MarkdownOptions(),
                  line_starts: np.ndarray | None = None) -> str:
    """Markdown of the text nodes in `text_mask` (and the images among them, see module doc).

    `line_starts`: text nodes where main_text starts a new line even inside a line of the page
    (the block methods write one line per block, and two blocks can share a page line).
    """
    if not text_mask.any():
        return ""
    if _compiled is not None and _COMPILED:
        return _render_compiled(page, text_mask, options, line_starts)
    return _Writer(page, _Lines(page, text_mask, options, line_starts)).write()


def _int32(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.int32)


def _render_compiled(page: CompactPage, text_mask: np.ndarray, options: MarkdownOptions,
                     line_starts: np.ndarray | None) -> str:
    """page_markdown by transforms/_markdown.c: the page's arrays and extras as they are."""
    side = page.side
    link_url = page.link_url if type(page.link_url) is tuple else tuple(page.link_url)
    return _compiled.render(
        page.text, _int32(page.text_ptr), _int32(page.parent), _int32(page.tag), _int32(page.end),
        np.ascontiguousarray(page.flags, dtype=np.uint16), _int32(page.line), _int32(page.words),
        np.ascontiguousarray(text_mask, dtype=bool),
        None if line_starts is None else np.ascontiguousarray(line_starts, dtype=np.int64),
        options.links, options.images, page.url, _int32(page.link_node), link_url,
        _int32(side.fragment_node), tuple(side.fragment), _int32(side.image_node), tuple(side.image_src),
        tuple(side.image_alt), _int32(side.code_node), tuple(side.code_lang))


class _Open:
    """A list item or block quote being written: what its lines start with."""
    __slots__ = ("node", "quote", "marker", "width")

    def __init__(self, node: int, quote: bool, marker: str = ""):
        self.node, self.quote, self.marker, self.width = node, quote, marker, len(marker)

    def prefix(self, first: bool) -> str:
        if self.quote:
            return "> "
        return self.marker if first else " " * self.width


class _Writer:
    """Lays out the lines: blocks, list items, quotes, tables and code blocks, each line led by
    the prefixes of the list items and quotes around it in their nesting order."""

    def __init__(self, page: CompactPage, lines: _Lines):
        self.page, self.lines, self.r = page, lines, lines.structure
        self.code_lang = page.side.code_language_of()
        self.li_number: dict | None = None

    def write(self) -> str:
        units = self.lines.units
        parts: list[str] = []
        open_: list = []            # the list items and quotes being written, outermost first
        prev = None                 # (unit, kind, it began an item on its only line)
        k = 0
        while k < len(units):
            u = units[k]
            ctx = u.ctx
            if ctx.table >= 0:
                stop = k
                while stop < len(units) and units[stop].ctx.table == ctx.table:
                    stop += 1
                block, kind = self.table(ctx.table, units[k:stop]), "table"
            elif ctx.pre >= 0:
                stop = k
                while stop < len(units) and units[stop].ctx.pre == ctx.pre:
                    stop += 1
                block, kind = self.code_block(ctx.pre, units[k:stop]), "code"
            else:
                stop = k + 1
                text = escape_line_start(self.lines.markdown(u))
                if ctx.heading:
                    text = "#" * ctx.heading + " " + text
                    if text.endswith("#"):
                        text = text[:-1] + "\\#"
                block, kind = text, "line"
            if open_ or ctx.nest:
                kept, popped, pushed = self.enter(open_, ctx)
            else:
                kept, popped, pushed = 0, [], []    # outside lists and quotes: nothing to open or close
            if prev is not None:
                parts.append(self.separator(prev, u, kind, open_[:kept], popped, pushed))
            if not open_ and "\n" not in block:
                parts.append(block.rstrip() if not block.strip(" >") else block)
            else:
                lines = block.split("\n")
                first = "".join(o.prefix(o in pushed) for o in open_)
                rest = "".join(o.prefix(False) for o in open_)
                body = [first + lines[0]] + [rest + ln if ln else rest.rstrip() for ln in lines[1:]]
                parts.append("\n".join(ln.rstrip() if not ln.strip(" >") else ln for ln in body))
            prev = (u, kind, kind == "line" and any(not o.quote for o in pushed))
            k = stop
        return "".join(parts).strip("\n")

    def enter(self, open_: list, ctx: _Context) -> tuple[int, list, list]:
        """Update the open list items and quotes for a line in `ctx`: (how many stayed open,
        those closed, those opened). Quotes always open; of the list items around the line,
        the nearest opens, and outer ones only stay open if an earlier line opened them (an
        item with no main text of its own is not written, so nothing is indented under it)."""
        is_open = {o.node for o in open_}
        chain = [e for e in ctx.nest if e == ctx.li or e in is_open or int(self.r.tag[e]) == _QUOTE]
        kept = 0
        while kept < len(open_) and kept < len(chain) and open_[kept].node == chain[kept]:
            kept += 1
        popped = open_[kept:]
        del open_[kept:]
        pushed = []
        for e in chain[kept:]:
            if int(self.r.tag[e]) == _QUOTE:
                o = _Open(e, True)
            else:
                parent = int(self.r.parent[e])
                o = _Open(e, False, f"{self.number(e)}. " if int(self.r.tag[parent]) == _OL else "- ")
            open_.append(o)
            pushed.append(o)
        return kept, popped, pushed

    def separator(self, prev, u: _Unit, kind: str, shared: list, popped: list, pushed: list) -> str:
        """What goes between the previous block and this one: a line break inside a paragraph
        (`<br>`), a plain newline between items of a tight list, else a blank line (carrying
        the quote marks of the quotes both are in)."""
        prev_unit, prev_kind, prev_began_item = prev
        blank = "\n" + "".join(o.prefix(False) for o in shared).rstrip() + "\n"
        if kind != "line" or prev_kind != "line":
            return blank
        if not popped and not pushed:
            if u.ctx.heading or prev_unit.ctx.heading:
                return blank if not shared else "\n"
            return "\\\n" if u.container == prev_unit.container else blank
        new_items = [o for o in pushed if not o.quote]
        if prev_began_item and len(new_items) == 1 and len(pushed) == 1:
            item = new_items[0].node
            parent = int(self.r.parent[item])
            sibling = any(not o.quote and int(self.r.parent[o.node]) == parent for o in popped)
            # A nested list may interrupt its item's first line; an ordered one only from 1.
            nested = not popped and (int(self.r.tag[parent]) != _OL or self.number(item) == 1)
            if sibling or nested:
                return "\n"
        return blank

    def number(self, li: int) -> int:
        if self.li_number is None:
            lis = np.flatnonzero(self.page.tag == _LI)
            parents = self.page.parent[lis]
            order = np.lexsort((lis, parents))
            rank = np.zeros(lis.size, dtype=np.int64)
            if lis.size:
                sp = parents[order]
                starts = np.r_[0, np.flatnonzero(np.diff(sp)) + 1]
                run = np.repeat(starts, np.diff(np.r_[starts, sp.size]))
                rank[order] = np.arange(sp.size) - run
            self.li_number = dict(zip(lis.tolist(), (rank + 1).tolist()))
        return self.li_number.get(li, 1)

    def code_block(self, pre: int, units: list) -> str:
        content = "\n".join(self.lines.raw(u) for u in units)
        fence = _fence(content, 3)
        lang = self.code_lang.get(pre, "")
        return f"{fence}{lang}\n{content}\n{fence}"

    def table(self, table: int, units: list) -> str:
        page = self.page
        tag, parent = page.tag, page.parent
        cell_text: dict = {}
        for u in units:
            c = u.ctx.cell
            text = self.lines.markdown(u).replace("|", "\\|")
            if c in cell_text and text:
                cell_text[c] += " " + text
            elif text:
                cell_text[c] = text
        lo, hi = table + 1, int(page.end[table])
        span = np.arange(lo, hi)
        rows = span[tag[lo:hi] == _TR]
        cells = span[np.isin(tag[lo:hi], list(_CELL))]
        cells_of: dict = {}
        for cell, row in zip(cells.tolist(), parent[cells].tolist()):
            cells_of.setdefault(row, []).append(cell)
        # The first row written is the header, <th> or not: a pipe table must have one.
        grid = []
        for row in rows.tolist():
            texts = [cell_text.get(c, "") for c in cells_of.get(row, ())]
            if any(texts):
                grid.append(texts)
        loose = cell_text.get(-1)
        if not grid:
            return loose or ""
        width = max(len(r) for r in grid)
        grid = [r + [""] * (width - len(r)) for r in grid]
        lines = ["| " + " | ".join(grid[0]) + " |", "|" + "---|" * width]
        lines += ["| " + " | ".join(r) + " |" for r in grid[1:]]
        if loose:
            lines.insert(0, loose + "\n")
        return "\n".join(lines)


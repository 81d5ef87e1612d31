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
- links `[text](absolute URL)` (not links to the page itself) and images `![alt](URL)`,
  each kept or dropped by MarkdownOptions. An image is written when the nearest
  block-level element around it is mostly main content (at least half of its words).

Inline runs are joined by the product's one text joiner (transforms/text.py: the
whitespace the HTML has), and a new line starts where main_text starts one. Text is
escaped where Markdown would read it as syntax (`*`, `` ` ``, `\\`, `<`, `](`, `_` at
word edges, entities, and block markers at a line's start), so every word of main_text is
in main_markdown, in the same order, and nothing else but link and image targets, image
alt texts, list numbers and code-fence languages (tests/test_markdown.py checks this).

Everything is a loop over the selected nodes and their ancestors (memoized per element);
no recursion over the DOM.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from sitestrip.transforms.page import BLOCK_TAGS, TAG_ID, TEXT, CompactPage, tag_ids
from sitestrip.transforms.text import _NEWLINE, _NONE, gaps, separators


@dataclass(frozen=True)
class MarkdownOptions:
    links: bool = True
    images: bool = True


_ID = TAG_ID
_HEADING = {_ID[f"h{k}"]: k for k in range(1, 7)}
_PRE = set(tag_ids("pre", "listing", "xmp", "plaintext").tolist())
_LIST = set(tag_ids("ul", "ol", "menu", "dir").tolist())
_OL, _LI, _TABLE, _TR = _ID["ol"], _ID["li"], _ID["table"], _ID["tr"]
_CELL = set(tag_ids("td", "th").tolist())
_QUOTE = _ID["blockquote"]
_STRONG = set(tag_ids("strong", "b").tolist())
_EM = set(tag_ids("em", "i", "cite", "dfn", "var").tolist())
_CODE = set(tag_ids("code", "kbd", "samp", "tt").tolist())
_A = _ID["a"]
# Block-level elements: where a line of text belongs (br and hr are boundaries, not holders).
_BLOCKISH = tag_ids(*sorted(BLOCK_TAGS - {"br", "hr"}))
# A table that holds any of these lays the page out: it is read through, not drawn.
_LAYOUT_INSIDE = tag_ids("table", "ul", "ol", "dl", "pre", "blockquote", "h1", "h2", "h3", "h4",
                         "h5", "h6", "form", "section", "article", "header", "footer", "nav",
                         "aside", "main", "figure", "hr", "listing", "xmp")

_ESCAPE = re.compile(r"[\\`*<]|\](?=\()|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|&(?=#?[A-Za-z0-9]+;)")
_ESCAPE_BRACKETS = re.compile(r"[\\`*<\[\]]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|&(?=#?[A-Za-z0-9]+;)")
# What a line may not begin with unless escaped: ATX heading, quote, bullet, setext
# underline, thematic break, fence, ordered-list number.
_LINE_START = re.compile(r"(#{1,6}(?:\s|$)|>|[-+](?:\s|$)|=+\s*$|-{3,}\s*$|~~~|\+{3})")
_NUMBERED = re.compile(r"(\d{1,9})([.)])(\s|$)")
_BACKTICKS = re.compile(r"`+")


def escape_text(text: str, brackets: bool = False) -> str:
    return (_ESCAPE_BRACKETS if brackets else _ESCAPE).sub(lambda m: "\\" + m.group(0), text)


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


@dataclass
class _Item:
    node: int
    sep: int          # text.py separator code before it
    text: str         # raw text, or the image's Markdown
    image: bool
    inline: tuple     # (link url or None, link node, strong node, em node, code node)


class _Context:
    """Structure of a block-level element, from its ancestors: memoized per element."""
    __slots__ = ("heading", "pre", "cell", "table", "li", "quote")

    def __init__(self, heading=0, pre=-1, cell=-1, table=-1, li=-1, quote=0):
        self.heading, self.pre, self.cell, self.table, self.li, self.quote = heading, pre, cell, table, li, quote


class _Renderer:
    def __init__(self, page: CompactPage, options: MarkdownOptions):
        self.page, self.options = page, options
        self.parent = page.parent
        self.tag = page.tag
        self.end = page.end
        self.blockish = np.isin(page.tag, _BLOCKISH)
        self.blockish[0] = True
        self.contexts: dict = {-1: _Context()}
        self.data_table: dict = {}
        links = {}
        if options.links:
            own = page.url
            links = {n: u for n, u in zip(page.link_node.tolist(), page.link_url) if u != own}
        self.link_url = links

    # -- structure ------------------------------------------------------------------
    def container(self, node: int) -> int:
        """Nearest block-level ancestor of a text or image node."""
        p = int(self.parent[node])
        while p > 0 and not self.blockish[p]:
            p = int(self.parent[p])
        return max(p, 0)

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
            new = _Context(ctx.heading, ctx.pre, ctx.cell, ctx.table, ctx.li, ctx.quote)
            if t in _HEADING:
                new.heading = _HEADING[t]
            elif t in _PRE:
                new.pre = e
            elif t == _LI:
                new.li = e
            elif t == _QUOTE:
                new.quote += 1
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

    def inline(self, node: int, stop: int) -> tuple:
        """(link url, link node, strong node, em node, code node) around a node, below `stop`."""
        url = None
        link = strong = em = code = -1
        p = int(self.parent[node])
        while p > stop:
            t = int(self.tag[p])
            if t == _A:
                if link < 0 and p in self.link_url:
                    link, url = p, self.link_url[p]
            elif t in _STRONG:
                strong = p if strong < 0 else strong
            elif t in _EM:
                em = p if em < 0 else em
            elif t in _CODE:
                code = p if code < 0 else code
            p = int(self.parent[p])
        return url, link, strong, em, code


def _image_nodes(page: CompactPage, text_mask: np.ndarray) -> np.ndarray:
    """Images whose nearest block-level element (not BODY) holds main text in at least half
    of its words."""
    nodes = page.side.image_node
    if nodes.size == 0:
        return nodes
    blockish = np.isin(page.tag, _BLOCKISH)
    holders = []
    for n in nodes.tolist():
        p = int(page.parent[n])
        while p > 0 and not blockish[p]:
            p = int(page.parent[p])
        holders.append(p)
    holders = np.array(holders, dtype=np.int64)
    words = np.concatenate(([0], np.cumsum(page.words, dtype=np.int64)))
    main_words = np.concatenate(([0], np.cumsum(np.where(text_mask, page.words, 0), dtype=np.int64)))
    ends = page.end[holders]
    total = words[ends] - words[holders]
    main = main_words[ends] - main_words[holders]
    keep = (holders > 0) & (main > 0) & (2 * main >= total)
    return nodes[keep]


def page_markdown(page: CompactPage, text_mask: np.ndarray, options: MarkdownOptions = MarkdownOptions()) -> str:
    """Markdown of the text nodes in `text_mask` (and the images among them, see module doc)."""
    idx = np.flatnonzero(text_mask & (page.tag == TEXT))
    images = _image_nodes(page, text_mask) if options.images else np.zeros(0, dtype=np.int32)
    if idx.size == 0 and images.size == 0:
        return ""
    r = _Renderer(page, options)
    codes = separators(page, idx, gaps(page, idx))
    items = _items(page, r, idx, codes, images)
    units = _units(page, r, items)
    return _Writer(page, r).write(units)


def _items(page: CompactPage, r: _Renderer, idx: np.ndarray, codes: np.ndarray, images: np.ndarray) -> list:
    ptr, text, line = page.text_ptr, page.text, page.line
    out = []
    image_of = page.side.image_of() if images.size else {}
    order = np.sort(np.concatenate((idx.astype(np.int64), images.astype(np.int64))))
    code_of = dict(zip(idx.tolist(), codes.tolist()))
    prev_line = None
    for n in order.tolist():
        stop = r.container(n)
        inline = r.inline(n, stop) if r.parent[n] != stop else (None, -1, -1, -1, -1)
        if n in code_of:
            sep = code_of[n]
            if prev_line is not None and sep == _NONE and line[n] != prev_line:
                sep = _NEWLINE
            out.append(_Item(n, sep, text[ptr[n]:ptr[n + 1]], False, inline))
        else:
            src, alt = image_of[n]
            sep = 1 if prev_line is not None and line[n] == prev_line else (_NEWLINE if prev_line is not None else _NONE)
            md = f"![{escape_text(alt, brackets=True)}]({_destination(src)})"
            out.append(_Item(n, sep, md, True, inline))
        prev_line = int(line[n])
        if len(out) > 1 and out[-2].image and not out[-1].image and out[-1].sep == _NONE:
            out[-1].sep = 1        # an image and the text after it are apart
    if out:
        out[0].sep = _NONE
    return out


@dataclass
class _Unit:
    items: list
    container: int
    ctx: _Context


def _units(page: CompactPage, r: _Renderer, items: list) -> list:
    """Lines of the main content: items split where main_text starts a new line."""
    units = []
    for item in items:
        if item.sep == _NEWLINE or not units:
            item.sep = _NONE
            c = r.container(item.node)
            units.append(_Unit([item], c, r.context(c)))
        else:
            units[-1].items.append(item)
    return units


def _inline_markdown(items: list, level: int = 0) -> str:
    """Items of one line with links, strong, emphasis and code spans, nested in that order
    (depth bounded by the four levels)."""
    if level == 4:
        return "".join((" " if it.sep else "") + (it.text if it.image else escape_text(it.text))
                       for it in items)
    out = []
    key_at = level + 1            # inline tuple: url, link, strong, em, code
    start = 0
    while start < len(items):
        key = items[start].inline[key_at]
        stop = start + 1
        while stop < len(items) and items[stop].inline[key_at] == key:
            stop += 1
        group = items[start:stop]
        lead = " " if group[0].sep else ""
        if key < 0:
            body = _inline_markdown(group, level + 1)
            out.append(body)
        else:
            first = group[0]
            saved = first.sep
            first.sep = _NONE
            if level == 3:        # code: raw text
                body = _code_span("".join((" " if it.sep else "") + it.text for it in group))
            else:
                inner = _inline_markdown(group, level + 1)
                if not inner.strip():
                    body = inner
                elif level == 0:
                    body = f"[{inner}]({_destination(first.inline[0])})"
                elif level == 1:
                    body = f"**{inner}**"
                else:
                    body = f"*{inner}*"
            first.sep = saved
            out.append(lead + body)
        start = stop
    return "".join(out)


class _Writer:
    """Lays out the lines: blocks, list items, tables and code blocks, with their separators."""

    def __init__(self, page: CompactPage, r: _Renderer):
        self.page, self.r = page, r
        self.code_lang = page.side.code_language_of()
        self.li_number: dict | None = None
        self.continues = False      # the last list item written continues a list being written

    def write(self, units: list) -> str:
        parts: list[str] = []
        open_items: list = []       # stack of (li node, content indent) of the list items written
        prev = None                 # previous unit, for separators
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
                block, kind = None, "line"
            indent, marker = self.list_position(open_items, ctx.li)
            if kind == "line":
                text = escape_line_start(_inline_markdown(u.items))
                if ctx.heading:
                    text = "#" * ctx.heading + " " + text
                    if text.endswith("#"):
                        text = text[:-1] + "\\#"
                block = text
            lines = block.split("\n")
            if marker:
                first = " " * (indent - len(marker)) + marker + lines[0]
            else:
                first = " " * indent + lines[0]
            body = [first] + [(" " * indent + ln) if ln else ln for ln in lines[1:]]
            quote = "> " * ctx.quote
            if quote:
                body = [(quote + ln).rstrip() if ln else quote.rstrip() for ln in body]
            rendered = "\n".join(body)
            if prev is not None:
                parts.append(self.separator(prev, u, ctx, marker, kind, open_items))
            parts.append(rendered)
            prev = (u, kind, ctx)
            k = stop
        return "".join(parts).strip("\n")

    def separator(self, prev, u: _Unit, ctx: _Context, marker: str, kind: str, open_items: list) -> str:
        prev_unit, prev_kind, prev_ctx = prev
        quote = ">" * min(prev_ctx.quote, ctx.quote)
        blank = "\n" + (" ".join(quote) if quote else "") + "\n"
        if ctx.li >= 0 and prev_ctx.li >= 0 and kind == prev_kind == "line" and (marker or ctx.li == prev_ctx.li):
            if marker and self.continues:
                return "\n"                                        # next item of a tight list
            if marker:
                return blank                                       # a list after another
            if ctx.heading or prev_ctx.heading:
                return "\n"
            if u.container == prev_unit.container:
                return "\\\n"                                      # <br> inside an item
            return blank                                           # another paragraph of the item
        if kind == prev_kind == "line" and u.container == prev_unit.container and not ctx.heading \
                and not prev_ctx.heading:
            return "\\\n"                                          # <br> inside a paragraph
        return blank

    def list_position(self, open_items: list, li: int) -> tuple[int, str]:
        """(content indent, marker or "") of a line in list item `li` (-1: none), updating the
        stack of open items."""
        end, parent_of = self.r.end, self.r.parent
        parent = int(parent_of[li]) if li >= 0 else -2
        self.continues = False
        while open_items and not (li >= 0 and (open_items[-1][0] == li or open_items[-1][0] < li < end[open_items[-1][0]])):
            self.continues |= int(parent_of[open_items.pop()[0]]) == parent
        if li < 0:
            return 0, ""
        if open_items and open_items[-1][0] == li:
            return open_items[-1][1], ""
        self.continues |= bool(open_items)
        base = open_items[-1][1] if open_items else 0
        if int(self.r.tag[parent]) == _OL:
            marker = f"{self.number(li)}. "
        else:
            marker = "- "
        open_items.append((li, base + len(marker)))
        return base + len(marker), marker

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
        content = "\n".join("".join((" " if it.sep else "") + (it.text if not it.image else "") for it in u.items)
                            for u in units)
        fence = _fence(content, 3)
        lang = self.code_lang.get(pre, "")
        return f"{fence}{lang}\n{content}\n{fence}"

    def table(self, table: int, units: list) -> str:
        page = self.page
        tag, parent = page.tag, page.parent
        cell_text: dict = {}
        for u in units:
            c = u.ctx.cell
            text = _inline_markdown(u.items).replace("|", "\\|")
            if c in cell_text and text:
                cell_text[c] += " " + text
            elif text:
                cell_text[c] = text
        lo, hi = table + 1, int(page.end[table])
        span = np.arange(lo, hi)
        rows = span[tag[lo:hi] == _TR]
        cells = span[np.isin(tag[lo:hi], list(_CELL))]
        cell_row = parent[cells]
        # The first row written is the header, <th> or not: a pipe table must have one.
        grid = []
        for row in rows.tolist():
            texts = [cell_text.get(c, "") for c in cells[cell_row == row].tolist()]
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

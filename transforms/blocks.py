"""Blocks of a page (design §10; seed 002 §3.5, §4.3).

A block is the unit main content is decided on: a run of text nodes that a
reader sees as one paragraph, list item, heading, cell or line. Seed 002's
*instances* are `p`, `li`, `h1`–`h6`, `figcaption`, `pre`, and `div`/`td`/`th`
holding no other content element and at most two element levels; every text
node belongs to its nearest instance ancestor (its "own text", so no word is
counted twice). Text under no instance belongs to its nearest block-level
element, or to a nearer inline element that carries its own class or id
(a byline `<span class="author">` inside a story `div` is its own block).

design §10's refinement, measured (docs/model.md, block oracle): a block is also
cut wherever a block boundary (`<br>`, a nested block element) falls between
two of its text nodes, so a `div` of text and `<br>`s holding the byline,
the share links and the story becomes one block per line.

Blocks are maximal runs of consecutive text nodes with the same owner and
the same line, so they are contiguous in document order and everything here
is a vector operation over the text nodes.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from sitestrip.transforms.page import (BLOCK_LEVEL, F_HIDDEN, KNOWN_TAGS, TAG_ID, TEXT, CompactPage, has_tag,
                                       tag_table)
from sitestrip.transforms.text import run_texts
from sitestrip.transforms.tree import nearest_in_mask

try:
    # A page's blocks in one pass, compiled (transforms/_features.c, built by `pip install`);
    # _page_blocks_python is the reference and runs where it is missing.
    from sitestrip.transforms import _features as _compiled
except ImportError:  # pragma: no cover - a source tree used without installing
    _compiled = None
# The same switch as features.py's (SITESTRIP_FEATURES=python runs both modules' references);
# tests set both module flags to compare the paths.
_COMPILED = os.environ.get("SITESTRIP_FEATURES", "compiled") != "python"

# Seed 002's content elements and instance groups (one CART per group in `ceml`), as tables
# per tag id (page.has_tag: one lookup per page instead of np.isin's pass per tag of a set).
_CONTENT_TAGS = tag_table("p", "li", "h1", "h2", "h3", "h4", "h5", "h6", "figcaption", "pre", "td", "th")
_ALWAYS_INSTANCE = tag_table("p", "li", "h1", "h2", "h3", "h4", "h5", "h6", "figcaption", "pre")
_LEAF_INSTANCE = tag_table("div", "td", "th")
GROUPS = ("p", "li", "h", "figcaption", "pre", "div", "td", "other")
_GROUP_OF_TAG = {"p": 0, "li": 1, "h1": 2, "h2": 2, "h3": 2, "h4": 2, "h5": 2, "h6": 2,
                 "figcaption": 3, "pre": 4, "div": 5, "td": 6, "th": 6}
# The group code per known tag id, "other" for the rest and (last entry) for every unknown
# tag, looked up as page.has_tag looks up its tables.
_GROUP_TABLE = np.full(len(KNOWN_TAGS) + 1, GROUPS.index("other"), dtype=np.int8)
_GROUP_TABLE[[TAG_ID[name] for name in _GROUP_OF_TAG]] = list(_GROUP_OF_TAG.values())
# Per tag id, what transforms/_features.c page_blocks reads of it: bit 0 a content element, bit 1
# an always-instance tag, bit 2 div/td/th, bit 3 block level, bits 8-15 its group (the last
# entry, every unknown tag's, "other").
_BLOCK_TAG_BITS = (_CONTENT_TAGS.astype(np.int64) | (_ALWAYS_INSTANCE.astype(np.int64) << 1)
                   | (_LEAF_INSTANCE.astype(np.int64) << 2) | (BLOCK_LEVEL.astype(np.int64) << 3)
                   | (_GROUP_TABLE.astype(np.int64) << 8))
assert TEXT == 0                       # page_blocks's text nodes are the nodes of tag 0


@dataclass
class Blocks:
    """The blocks of one page, in document order.

    Block b owns text nodes text_nodes[ptr[b]:ptr[b+1]] (document order).
    """
    owner: np.ndarray        # int32, the element whose own text the block is
    group: np.ndarray        # int8, index into GROUPS (seed 002's instance group)
    is_instance: np.ndarray  # bool, the owner is one of seed 002's instances
    ptr: np.ndarray          # int64[n_blocks + 1] into text_nodes
    text_nodes: np.ndarray   # int64, every text node of the page, grouped by block
    words: np.ndarray        # int64, tokens per block

    @property
    def count(self) -> int:
        return int(self.owner.shape[0])

    def first_node(self) -> np.ndarray:
        return self.text_nodes[self.ptr[:-1]]

    def block_of_text(self) -> np.ndarray:
        """Block index of each entry of text_nodes."""
        return np.repeat(np.arange(self.count), np.diff(self.ptr))

    def node_mask(self, page: CompactPage, selected: np.ndarray) -> np.ndarray:
        """Bool mask over the page's nodes: the text nodes of the selected blocks."""
        mask = np.zeros(page.size, dtype=bool)
        mask[self.text_nodes[np.repeat(selected, np.diff(self.ptr))]] = True
        return mask


def instance_mask(page: CompactPage) -> np.ndarray:
    """Seed 002's instances: the always-instance tags, and div/td/th with no content
    element below them and no element more than two levels below them."""
    tag = page.tag
    element = tag != TEXT
    content = has_tag(tag, _CONTENT_TAGS)
    # Content elements strictly inside each node's subtree, by prefix sums.
    prefix = np.concatenate(([0], np.cumsum(content, dtype=np.int64)))
    content_below = prefix[page.end] - prefix[:-1] - content
    # A node with an element three levels down is some element's great-grandparent.
    too_deep = np.zeros(page.size, dtype=bool)
    up = np.flatnonzero(element)
    for _ in range(3):
        up = page.parent[up]
        up = up[up >= 0]
    too_deep[up] = True
    leafish = has_tag(tag, _LEAF_INSTANCE) & (content_below == 0) & ~too_deep
    return has_tag(tag, _ALWAYS_INSTANCE) | leafish


def hidden_elements(page: CompactPage) -> np.ndarray:
    """Per node: an element the markup hides (page.F_HIDDEN), never BODY, whose display:none
    is an anti-flicker style a script lifts."""
    hidden = (page.flags & F_HIDDEN) != 0
    hidden[0] = False
    return hidden


def hidden_text(page: CompactPage, nodes: np.ndarray) -> np.ndarray | None:
    """Per node of `nodes`: inside a hidden element (hidden_elements; None: the page hides
    nothing). Subtrees are preorder ranges: a running count of hidden starts minus ends."""
    hidden = np.flatnonzero(hidden_elements(page))
    if hidden.size == 0:
        return None
    diff = np.zeros(page.size + 1, dtype=np.int64)
    np.add.at(diff, hidden, 1)
    np.add.at(diff, page.end[hidden].astype(np.int64), -1)
    return np.cumsum(diff)[nodes] > 0


def page_blocks(page: CompactPage) -> Blocks:
    """Every text node in exactly one block (design §10)."""
    if _compiled is not None and _COMPILED:
        return _page_blocks_compiled(page)
    return _page_blocks_python(page)


def _page_blocks_compiled(page: CompactPage) -> Blocks:
    """_page_blocks_python's blocks from one pass of transforms/_features.c over the page's
    nodes (page_blocks), written into arrays of the page's length and copied to their sizes."""
    n = page.size
    text_nodes, ptr = np.empty(n, dtype=np.int64), np.empty(n + 1, dtype=np.int64)
    owner, group = np.empty(n, dtype=np.int32), np.empty(n, dtype=np.int8)
    is_inst, words = np.empty(n, dtype=bool), np.empty(n, dtype=np.int64)
    i32 = np.int32
    nt, nb = _compiled.page_blocks(
        page.parent, page.tag, page.end, np.ascontiguousarray(page.line, dtype=i32),
        np.ascontiguousarray(page.words, dtype=i32), np.ascontiguousarray(page.flags, dtype=np.uint16),
        np.ascontiguousarray(page.id_hash, dtype=np.uint32), np.ascontiguousarray(page.class_ptr, dtype=i32),
        _BLOCK_TAG_BITS, F_HIDDEN, text_nodes, ptr, owner, group, is_inst, words)
    return Blocks(owner=owner[:nb].copy(), group=group[:nb].copy(), is_instance=is_inst[:nb].copy(),
                  ptr=ptr[:nb + 1].copy(), text_nodes=text_nodes[:nt].copy(), words=words[:nb].copy())


def _page_blocks_python(page: CompactPage) -> Blocks:
    """page_blocks with numpy: the reference of transforms/_features.c page_blocks."""
    text = np.flatnonzero(page.tag == TEXT)
    if text.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Blocks(owner=empty.astype(np.int32), group=empty.astype(np.int8),
                      is_instance=empty.astype(bool), ptr=np.zeros(1, dtype=np.int64),
                      text_nodes=empty, words=empty)
    inst = instance_mask(page)
    parent = page.parent[text]
    owner = nearest_in_mask(page, inst)[parent]
    orphan = owner < 0
    if orphan.any():
        element = page.tag != TEXT
        has_name = (page.id_hash != 0) | (np.diff(page.class_ptr) > 0)
        holder = (has_tag(page.tag, BLOCK_LEVEL) | (has_name & element)) & element
        holder[0] = True                       # BODY holds whatever nothing else does
        owner[orphan] = nearest_in_mask(page, holder)[parent[orphan]]
    line = page.line[text]
    cut = np.ones(text.size, dtype=bool)
    cut[1:] = (owner[1:] != owner[:-1]) | (line[1:] != line[:-1])
    # Text the markup hides (page.F_HIDDEN, never BODY's) is a block of its own even inline (an
    # unknown <h style="display:none"> inside a paragraph), so that no block mixes what a reader
    # sees with what it does not.
    hidden = hidden_text(page, text)
    if hidden is not None:
        cut[1:] |= hidden[1:] != hidden[:-1]
    starts = np.flatnonzero(cut)
    ptr = np.concatenate((starts, [text.size])).astype(np.int64)
    block_owner = owner[starts].astype(np.int32)
    words = np.add.reduceat(page.words[text].astype(np.int64), starts)
    is_inst = inst[block_owner]
    group = np.where(is_inst, np.take(_GROUP_TABLE, page.tag[block_owner], mode="clip"),
                     _GROUP_TABLE[-1]).astype(np.int8)
    return Blocks(owner=block_owner, group=group, is_instance=is_inst, ptr=ptr,
                  text_nodes=text.astype(np.int64), words=words)


def block_texts(page: CompactPage, blocks: Blocks) -> list[str]:
    """Own text of every block: its text nodes joined as a browser shows them
    (transforms/text.py; a block is one line, so only inline spacing applies)."""
    return run_texts(page, blocks.text_nodes, blocks.ptr[:-1])


def render_blocks(texts: list[str], selected: np.ndarray) -> str:
    """main_text: the own text of the selected blocks in document order, one line per block."""
    return "\n".join(t for t, keep in zip(texts, selected.tolist()) if keep and t)

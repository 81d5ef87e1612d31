"""Link-dense blocks and comment sections inside the main content: a product
extension to design §3 and §7.

Neither ConEx removes what is page-specific but not content: "more stories",
"see also", tag lists, follow/share bars, reader comments. Site-level ConEx
keeps them because they differ from page to page (lists change as the site
publishes, every article has its own comments), and page-level ConEx's Alg. 7
only catches lists of single short links.

- Link-dense blocks: an element of LINK_DENSITY_TAGS inside the main content
  (never a main-content root) whose link words make up at least
  `max_link_density` of its words is dropped with its subtree. When the main content itself is mostly link text
  (a listing, a table of contents, a forum index) the links are the content
  and nothing is dropped.
- Comment sections: an element whose id or class names comments (a word part
  beginning with "comment", or "disqus"; F_COMMENT_HINT) is dropped with its
  subtree, unless such sections hold most of the main content's words — on a
  forum or Q&A page the posts are the content.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sitestrip.transforms.page import F_COMMENT_HINT, F_IN_LINK, TEXT, CompactPage, has_tag, tag_table
from sitestrip.transforms.tree import mask_roots, subtree_mask, subtree_sum

# The elements whose link density is judged: block-level elements (page.BLOCK_TAGS) that
# group a page's parts, and tbody; inline elements (a, span, b...) are judged as part of the
# element around them. Not every block-level element: headings, pre, th, article, main,
# address, fieldset, details and the like are left to the element around them, as the
# settled parameters were measured (with all of page.BLOCK_LEVEL and tbody, site ConEx's
# main_text changes on 278 of docsites-dev's 1881 pages and 4 of news-ctf2015-dev's 252).
LINK_DENSITY_TAG_NAMES = ("div", "ul", "ol", "dl", "li", "p", "table", "tbody", "tr", "td", "section", "aside",
                          "nav", "footer", "header", "form", "figure", "figcaption", "blockquote", "dd", "dt",
                          "menu", "center")
LINK_DENSITY_TAGS = tag_table(*LINK_DENSITY_TAG_NAMES)     # has_tag: one lookup, not np.isin's sort


@dataclass(frozen=True)
class LinkBlockParams:
    enabled: bool = True
    max_link_density: float = 0.67   # link words ÷ words at or above which a block goes
    listing_link_density: float = 0.67  # ... and at or above which the main content is a listing
    drop_comments: bool = True


def drop_link_blocks(page: CompactPage, main: np.ndarray, params: LinkBlockParams) -> np.ndarray:
    """The main-content mask without its link-dense blocks and comment sections."""
    if not params.enabled or not main.any():
        return main
    if params.drop_comments:
        main = _drop_comments(page, main)
    is_text = page.tag == TEXT
    in_link = (page.flags & F_IN_LINK) != 0
    words = np.where(main & is_text, page.words, 0).astype(np.int64)
    link_words = np.where(main & is_text & in_link, page.words, 0).astype(np.int64)
    total = subtree_sum(page, words)
    linked = subtree_sum(page, link_words)
    roots = mask_roots(page, main)
    inside = main.copy()
    inside[roots] = False                  # main-content nodes below a root
    main_words, main_link_words = total[roots].sum(), linked[roots].sum()
    if main_words == 0 or main_link_words >= params.listing_link_density * main_words:
        return main
    dense = (inside & has_tag(page.tag, LINK_DENSITY_TAGS) & (total > 0)
             & (linked >= params.max_link_density * total))
    if not dense.any():
        return main
    return main & ~subtree_mask(page, np.flatnonzero(dense))


def _drop_comments(page: CompactPage, main: np.ndarray) -> np.ndarray:
    hinted = main & ((page.flags & F_COMMENT_HINT) != 0)
    if not hinted.any():
        return main
    in_comments = subtree_mask(page, np.flatnonzero(hinted))
    text_words = np.where(main & (page.tag == TEXT), page.words, 0)
    comment_words = int(text_words[in_comments].sum())
    if comment_words * 2 >= int(text_words.sum()):
        return main
    return main & ~in_comments

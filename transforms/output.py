"""The columns made from a page's main content for the ones who load it as is: its
Markdown, its language, and what the page declares about itself (config section `output`).

Markdown is rendered from the very text nodes main_text is made of (the main-content
node mask), never from a second extraction, so the two agree on what is content.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sitestrip.transforms.language import DEFAULT_LANGUAGE_CHARS, identify_language
from sitestrip.transforms.markdown import MarkdownOptions, page_markdown
from sitestrip.transforms.meta import COLUMNS as DECLARED_COLUMNS
from sitestrip.transforms.page import TEXT, CompactPage

KEEP_DROP = ("keep", "drop")


@dataclass(frozen=True)
class OutputParams:
    """What the pages rows carry beyond the algorithms' columns (configs: `output`).

    markdown: fill main_markdown; markdown_links / markdown_images: `keep` writes links as
    [text](url) and images as ![alt](url), `drop` keeps a link's text and leaves images out;
    language: fill language and language_score from the first `language_chars` characters
    of main_text; links: write the links dataset (transforms/outlinks.py), off: nothing about
    links is computed, shuffled or written. Off here, on in both presets: a caller of
    process_site with Config() gets the outputs it got before the dataset existed.
    """
    markdown: bool = True
    markdown_links: str = "keep"
    markdown_images: str = "keep"
    language: bool = True
    language_chars: int = DEFAULT_LANGUAGE_CHARS
    links: bool = False

    def __post_init__(self):
        for name in ("markdown_links", "markdown_images"):
            if getattr(self, name) not in KEEP_DROP:
                raise ValueError(f"{name} must be keep or drop, got {getattr(self, name)!r}")

    def markdown_options(self) -> MarkdownOptions:
        return MarkdownOptions(links=self.markdown_links == "keep", images=self.markdown_images == "keep")


def main_markdown(page: CompactPage, main: np.ndarray, params: OutputParams,
                  line_starts: np.ndarray | None = None) -> str | None:
    """main_markdown of the main-content node mask `main` (its text nodes are main_text's);
    `line_starts`: the text nodes main_text starts a line with (the block methods: each
    block's first node), None when main_text breaks lines where the page does (conex)."""
    if not params.markdown:
        return None
    return page_markdown(page, main & (page.tag == TEXT), params.markdown_options(), line_starts)


def main_language(main_text: str, params: OutputParams) -> tuple[str | None, float | None]:
    if not params.language or not main_text:
        return None, None
    return identify_language(main_text, params.language_chars)


def declared_columns(page: CompactPage) -> dict:
    """html_lang, canonical_url, description, published_date, author (None when not declared)."""
    values = page.meta or (None,) * len(DECLARED_COLUMNS)
    return dict(zip(DECLARED_COLUMNS, values))

"""Evaluation corpora: what a benchmark scores against.

Two on-disk formats are read:

- the corpus-directory format: `DIR/warc/*.warc[.gz]` plus `DIR/gold.jsonl`, one
  object per HTML 200 page (`url`, `site`, `corpus`, `genre`, `main_text`,
  `menu_links`);
- the TeCo format (`bench/sitestrip_bench/teco.py`): a folder per site, the key page labelled
  with `TECO_*` classes, its sibling pages beside it. It is converted to a
  WARC plus gold pages once, so both formats go through the same pipeline.
"""
from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass, field

from sitestrip.transforms.urls import normalize_url, site_key


@dataclass
class GoldPage:
    """The expected result for one page of a corpus."""
    url: str                           # normalized, as in the pages table
    site: str                          # the corpus' own site label (reports group by it)
    corpus: str
    genre: str
    main_text: str
    menu_links: tuple | None = None    # absolute, normalized URLs; None = gold has no menu
    # TeCo only: the key page's text outside the template, and per-node labels
    # (see bench/sitestrip_bench/teco.py) for the DOM-node metrics of design §9.
    nontemplate_text: str | None = None
    nodes: dict | None = None


@dataclass
class Corpus:
    name: str
    warc_paths: list[str]
    gold: list[GoldPage]
    kind: str = "warc"                 # "warc" (warc/ + gold.jsonl) or "teco"
    source: str = ""                   # the folder it was read from
    notes: list[str] = field(default_factory=list)

    @property
    def genres(self) -> list[str]:
        return sorted({g.genre for g in self.gold})


def _norm(url: str) -> str:
    return normalize_url(url) or url


def read_shared_corpus(directory: str) -> Corpus:
    """A corpus directory: DIR/warc/*.warc[.gz] plus DIR/gold.jsonl (the module doc)."""
    directory = os.path.abspath(directory)
    gold_path = os.path.join(directory, "gold.jsonl")
    warcs = sorted(glob.glob(os.path.join(directory, "warc", "*.warc.gz"))
                   + glob.glob(os.path.join(directory, "warc", "*.warc")))
    if not os.path.exists(gold_path):
        raise ValueError(f"{directory}: no gold.jsonl (expected DIR/gold.jsonl and DIR/warc/*.warc.gz)")
    if not warcs:
        raise ValueError(f"{directory}: no WARC files under {directory}/warc")
    name = os.path.basename(directory.rstrip(os.sep))
    gold = []
    with open(gold_path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                url = obj["url"]
            except (ValueError, KeyError) as exc:
                raise ValueError(f"{gold_path}:{n}: not a gold object with a url ({exc})") from None
            menu = obj.get("menu_links")
            gold.append(GoldPage(
                url=_norm(url), site=obj.get("site") or site_key(_norm(url)) or "?",
                corpus=obj.get("corpus") or name, genre=obj.get("genre") or "?",
                main_text=obj.get("main_text") or "",
                menu_links=tuple(_norm(u) for u in menu) if menu else None))
    return Corpus(name=name, warc_paths=warcs, gold=gold, kind="warc", source=directory)


def is_shared_corpus(directory: str) -> bool:
    return os.path.exists(os.path.join(directory, "gold.jsonl")) and os.path.isdir(
        os.path.join(directory, "warc"))

"""design §9 scores of extracted text against gold, and their aggregates.

Every extractor (the product's fields and each peer) is scored by the same
function on the same gold pages. A gold page an extractor produced nothing for
(no row, an errors row, a peer exception) scores as an empty output: it costs
recall, it is never left out.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from statistics import mean

from sitestrip_bench.metrics import PRF, micro, set_prf, word_prf


@dataclass
class PageScore:
    """One extractor's output for one gold page, scored."""
    system: str           # "sitestrip", "sitestrip:nontemplate", "trafilatura", ...
    corpus: str
    genre: str
    site: str
    url: str
    words: PRF
    menu: PRF | None = None


@dataclass(frozen=True)
class Aggregate:
    pages: int
    mean_p: float
    mean_r: float
    mean_f1: float
    micro: PRF

    def as_dict(self) -> dict:
        return {"pages": self.pages, "mean_precision": round(self.mean_p, 4),
                "mean_recall": round(self.mean_r, 4), "mean_f1": round(self.mean_f1, 4),
                "micro_precision": round(self.micro.precision, 4),
                "micro_recall": round(self.micro.recall, 4), "micro_f1": round(self.micro.f1, 4)}


def aggregate(scores: list[PRF]) -> Aggregate:
    """Mean of per-page values (the thesis's convention) and micro totals."""
    if not scores:
        return Aggregate(0, 0.0, 0.0, 0.0, PRF(0, 0, 0))
    return Aggregate(len(scores), mean(s.precision for s in scores), mean(s.recall for s in scores),
                     mean(s.f1 for s in scores), micro(scores))


def score_texts(system: str, gold_pages, texts: dict, *, field: str = "main_text") -> list[PageScore]:
    """Word P/R/F1 of texts[url] against each gold page's `field` (missing output = "")."""
    out = []
    for g in gold_pages:
        expected = getattr(g, field)
        if expected is None:
            continue
        out.append(PageScore(system, g.corpus, g.genre, g.site, g.url,
                             word_prf(texts.get(g.url) or "", expected)))
    return out


def as_pages(urls) -> set:
    """Menu links compared as pages: each URL without its fragment, duplicates removed (the
    corpora readers normalize URLs, which drops fragments already; a link that is not an
    http(s) URL is compared as written, less its fragment)."""
    return {u.partition("#")[0] for u in urls}


def score_menus(system: str, gold_pages, menus: dict) -> list[PageScore]:
    """Set P/R/F1 of the menu's links compared as pages (as_pages), for gold pages that have
    menu links."""
    out = []
    for g in gold_pages:
        if not g.menu_links:
            continue
        got = menus.get(g.url) or ()
        out.append(PageScore(system, g.corpus, g.genre, g.site, g.url, PRF(0, 0, 0),
                             menu=set_prf(as_pages(got), as_pages(g.menu_links))))
    return out


def menu_sites(scores: list[PageScore]) -> dict:
    """Menu link scores per site (mean of per-page values within a site), their mean over the
    sites and the weakest site: {"sites": {site: Aggregate.as_dict()}, "mean_f1_over_sites",
    "min_site", "min_site_f1"} (empty when no page has menu gold)."""
    by_site = defaultdict(list)
    for s in scores:
        if s.menu is not None:
            by_site[s.site].append(s.menu)
    if not by_site:
        return {}
    sites = {site: aggregate(prfs).as_dict() for site, prfs in sorted(by_site.items())}
    weakest = min(sites, key=lambda site: (sites[site]["mean_f1"], site))
    return {"sites": sites, "mean_f1_over_sites": round(mean(v["mean_f1"] for v in sites.values()), 4),
            "min_site": weakest, "min_site_f1": sites[weakest]["mean_f1"]}


def group_scores(scores: list[PageScore], by: str, *, menu: bool = False) -> dict:
    """{(system, key): Aggregate} with key the value of `by` ("corpus", "genre", "site",
    or "all"); corpus-qualified for genre and site so two corpora never mix."""
    groups = defaultdict(list)
    for s in scores:
        if by == "all":
            key = "all"
        elif by == "corpus":
            key = s.corpus
        else:
            key = (s.corpus, getattr(s, by))
        groups[(s.system, key)].append(s.menu if menu else s.words)
    return {k: aggregate(v) for k, v in groups.items()}


def worst_pages(scores: list[PageScore], n: int = 10) -> list[PageScore]:
    """The n lowest-F1 pages, ties broken by the larger gold (a bigger miss first), then URL."""
    return sorted(scores, key=lambda s: (s.words.f1, -s.words.expected, s.url))[:n]

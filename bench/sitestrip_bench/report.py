"""The benchmark's report: report.md plus PNG charts, from results.json alone.

Everything here reads the summary dict `bench/sitestrip_bench/run.py` writes, so a report can
be redrawn from an old results.json (`redraw(RESULTS_DIR)`).
"""
from __future__ import annotations

import difflib
import json
import os

from sitestrip_bench.stages import STAGES

PRODUCT = "sitestrip"
DIFF_LINES = 40
# The product in black; peers in colours that are never black or near it.
PRODUCT_COLOR = "#111111"
PEER_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")


def _f(x, digits=3):
    return "–" if x is None else f"{x:.{digits}f}"


# The product's other main-content methods, shown after the product column when present.
VARIANTS = (f"{PRODUCT}:learned", f"{PRODUCT}:ceml", f"{PRODUCT}:conex")


def _systems(summary) -> list[str]:
    return [PRODUCT] + [p for p in summary["peers"]]


def _quality_systems(summary) -> list[str]:
    present = {s for c in summary["corpora"] for s in c["quality"]}
    return [PRODUCT] + [v for v in VARIANTS if v in present] + [p for p in summary["peers"]]


def _throughput(summary, system) -> float | None:
    """Pages per second over all corpora: total pages / total seconds."""
    pages = seconds = 0.0
    for c in summary["corpora"]:
        info = c["product"] if system == PRODUCT else c["peers"].get(system)
        if not info or not info.get("wall_seconds"):
            return None
        pages += info["pages"]
        seconds += info["wall_seconds"]
    return pages / seconds if seconds else None


def quality_table(summary, field: str = "mean_f1") -> list[str]:
    systems = _quality_systems(summary)
    lines = ["| corpus | pages | " + " | ".join(systems) + " | sitestrip − best peer |",
             "|---|---|" + "---|" * (len(systems) + 1)]
    for c in summary["corpora"]:
        values = {s: c["quality"].get(s, {}).get("corpus", {}).get(c["name"], {}).get(field)
                  for s in systems}
        best = max((v for v in values.values() if v is not None), default=None)
        peers = [values[s] for s in systems[1:] if values[s] is not None and not s.startswith(PRODUCT)]
        gap = values[PRODUCT] - max(peers) if peers and values[PRODUCT] is not None else None
        cells = [("**" + _f(values[s]) + "**") if values[s] is not None and values[s] == best
                 else _f(values[s]) for s in systems]
        lines.append(f"| {c['name']} | {c['pages_gold']} | " + " | ".join(cells)
                     + f" | {'–' if gap is None else f'{gap * 100:+.1f} pts'} |")
    return lines


def page_type_section(summary) -> list[str]:
    """The page type model's cross-validated scores against the gold types."""
    scores = summary.get("cross_validation", {}).get("learned", {}).get("page_type")
    if not scores:
        return []
    types = sorted({t for v in scores.values() for t in v["f1"]})
    lines = ["## Page type (cross-validated, folds grouped by site)", "",
             "| pages of | pages | accuracy | macro F1 | " + " | ".join(types) + " |",
             "|---|---|---|---|" + "---|" * len(types)]
    for name, v in scores.items():
        lines.append(f"| {name} | {v['pages']} | {v['accuracy']:.3f} | {v['macro_f1']:.3f} | "
                     + " | ".join(_f(v["f1"].get(t)) for t in types) + " |")
    return lines + [""]


def error_class_section(summary) -> list[str]:
    """Pages where the best peer beats the product, by the product's main error there
    (bench/sitestrip_bench/errors.py)."""
    classes = summary.get("error_classes")
    if not classes:
        return []
    names = sorted({c for v in classes.values() for c in v}, key=lambda c: (c.split(":")[0], c))
    lines = ["## Where a peer wins: the product's main error on those pages", "",
             "| corpus | losing pages | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
    for corpus, v in classes.items():
        lines.append(f"| {corpus} | {summary.get('losing_pages', {}).get(corpus, 0)} | "
                     + " | ".join(str(v.get(n, 0)) for n in names) + " |")
    return lines + [""]


def genre_table(summary) -> list[str]:
    systems = _quality_systems(summary)
    lines = ["| corpus / genre | pages | " + " | ".join(systems) + " |",
             "|---|---|" + "---|" * len(systems)]
    for c in summary["corpora"]:
        genres = c["quality"].get(PRODUCT, {}).get("genre", {})
        for genre in sorted(genres):
            cells = [_f(c["quality"].get(s, {}).get("genre", {}).get(genre, {}).get("mean_f1"))
                     for s in systems]
            lines.append(f"| {c['name']} / {genre} | {genres[genre]['pages']} | " + " | ".join(cells) + " |")
    return lines


def product_table(summary) -> list[str]:
    lines = ["| corpus | main P / R / F1 (mean) | main micro F1 | nontemplate F1 (mean / micro) "
             "| menu links P / R / F1 | candidate methods | mean template share |",
             "|---|---|---|---|---|---|---|"]
    for c in summary["corpora"]:
        q = c["quality"].get(PRODUCT, {}).get("corpus", {}).get(c["name"], {})
        nt = c["quality"].get(f"{PRODUCT}:nontemplate", {}).get("corpus", {}).get(c["name"], {})
        m = c.get("menus") or {}
        menu = (f"{_f(m.get('mean_precision'))} / {_f(m.get('mean_recall'))} / {_f(m.get('mean_f1'))}"
                if m else "no menu gold")
        methods = ", ".join(f"{k} {v}" for k, v in sorted(c["methods"].items(), key=lambda kv: -kv[1]))
        shares = c.get("template_shares") or []
        share = sum(shares) / len(shares) if shares else None
        lines.append(f"| {c['name']} | {_f(q.get('mean_precision'))} / {_f(q.get('mean_recall'))} / "
                     f"{_f(q.get('mean_f1'))} | {_f(q.get('micro_f1'))} | {_f(nt.get('mean_f1'))} / "
                     f"{_f(nt.get('micro_f1'))} | {menu} | {methods} | {_f(share)} |")
    return lines


def menu_site_table(summary) -> list[str]:
    """Menu link P / R / F1 per site (links as pages), the mean over sites and the weakest."""
    rows = [c for c in summary["corpora"] if (c.get("menu_sites") or {}).get("sites")]
    if not rows:
        return []
    lines = ["| corpus | site | pages | menu links P / R / F1 |", "|---|---|---|---|"]
    for c in rows:
        m = c["menu_sites"]
        for site, v in m["sites"].items():
            lines.append(f"| {c['name']} | {site} | {v['pages']} | {_f(v['mean_precision'])} / "
                         f"{_f(v['mean_recall'])} / {_f(v['mean_f1'])} |")
        lines.append(f"| {c['name']} | **mean over {len(m['sites'])} sites** | | **{_f(m['mean_f1_over_sites'])}** "
                     f"(weakest: {m['min_site']} {_f(m['min_site_f1'])}) |")
    return lines


def speed_table(summary) -> list[str]:
    systems = _systems(summary)
    lines = ["| corpus | " + " | ".join(f"{s} pages/s" for s in systems)
             + " | sitestrip ÷ trafilatura |", "|---|" + "---|" * (len(systems) + 1)]
    for c in summary["corpora"]:
        values = {PRODUCT: c["product"].get("pages_per_second")}
        values.update({s: (c["peers"].get(s) or {}).get("pages_per_second") for s in systems[1:]})
        ratio = (values[PRODUCT] / values["trafilatura"]
                 if values.get("trafilatura") and values[PRODUCT] else None)
        lines.append(f"| {c['name']} | " + " | ".join(_f(values[s], 1) for s in systems)
                     + f" | {'–' if ratio is None else f'{ratio:.2f}×'} |")
    totals = {s: _throughput(summary, s) for s in systems}
    ratio = totals[PRODUCT] / totals["trafilatura"] if totals.get("trafilatura") and totals[PRODUCT] else None
    lines.append("| **all corpora** | " + " | ".join(_f(totals[s], 1) for s in systems)
                 + f" | {'–' if ratio is None else f'**{ratio:.2f}×**'} |")
    return lines


def memory_table(summary) -> list[str]:
    systems = _systems(summary)
    lines = ["| corpus | " + " | ".join(f"{s} peak RSS MB" for s in systems)
             + " | compact ÷ HTML bytes (shuffle form) |", "|---|" + "---|" * (len(systems) + 1)]
    for c in summary["corpora"]:
        p = c["product"]
        cells = [_f(p.get("max_rss_mb"), 0)] + [_f((c["peers"].get(s) or {}).get("max_rss_mb"), 0)
                                              for s in systems[1:]]
        share = p["compact_wire_bytes"] / p["html_bytes"] if p.get("html_bytes") else None
        lines.append(f"| {c['name']} | " + " | ".join(cells) + f" | {_f(share and share * 100, 1)}% "
                     f"({p.get('compact_wire_bytes', 0):,} / {p.get('html_bytes', 0):,}) |")
    return lines


def stage_table(summary) -> list[str]:
    lines = ["| corpus | " + " | ".join(STAGES) + " | page total |", "|---|" + "---|" * (len(STAGES) + 1)]
    for c in summary["corpora"]:
        stages = c["product"]["stages_ms"]
        cells = []
        for s in STAGES:
            st = stages.get(s) or {}
            if st.get("p50") is None:
                cells.append(f"{_f(st.get('mean'), 2)} (mean)" if st.get("mean") is not None else "–")
            else:
                cells.append(f"{_f(st['p50'], 2)} / {_f(st['p99'], 1)}")
        t = c["product"]["page_total_ms"]
        lines.append(f"| {c['name']} | " + " | ".join(cells) + f" | {_f(t.get('p50'), 1)} / {_f(t.get('p99'), 0)} |")
    return lines


def links_section(summary) -> list[str]:
    """The links dataset per corpus (bench/sitestrip_bench/links.py): size, cost, and region accuracy against
    the gold columns (all links of each set / without the ambiguous ones) and against the
    corpus' selectors."""
    rows = [c for c in summary["corpora"] if c.get("links")]
    if not rows:
        return []
    lines = ["## Links dataset", "",
             "Regions of the links rows (docs/output.md \"Links\"). Gold columns: links to a page's gold menu "
             "targets marked `menu` or `template`, links whose anchor text stands in its gold main text "
             "marked `main` (every such link / without the ambiguous ones: in-page links, and menu "
             "targets whose anchor stands in the main text). Selectors: each link's region cut from the "
             "HTML by the selectors the gold was made with (docsites' manifest). Cost: CPU ms per page of "
             "the `links` stage plus making its rows; bytes: the links Parquet files per pages row.", "",
             "| corpus | links / page | bytes / page | cost ms / page (stage + rows) | menu targets → menu/template "
             "| main anchors → main | selectors: menu → menu/template | selectors: main → main (precision) |",
             "|---|---|---|---|---|---|---|---|"]
    for c in rows:
        k = c["links"]
        gold = k.get("gold_columns") or {}
        menu, main = gold.get("menu") or {}, gold.get("main") or {}
        sel = k.get("selectors") or {}
        stage = (k.get("stage_ms_per_page") or {}).get("mean")
        made = (sel.get("rows_ms_per_page") or {}).get("mean")
        cost = f"{_f(k.get('cost_ms_per_page'))} ({_f(stage)} + {_f(made)})" if made is not None else _f(stage)
        lines.append(
            f"| {c['name']} | {_f(k.get('links_per_page'), 1)} | {_f(k.get('links_bytes_per_page'), 0)} | {cost} "
            f"| {_f(menu.get('accuracy'))} / {_f(menu.get('accuracy_clean'))} ({menu.get('links', 0):,}) "
            f"| {_f(main.get('accuracy'))} / {_f(main.get('accuracy_clean'))} ({main.get('links', 0):,}) "
            f"| {_f(sel.get('menu'))} ({sel.get('menu_links', 0):,}) "
            f"| {_f(sel.get('main'))} ({_f(sel.get('main_precision'))}) |")
    return lines + [""]


def node_table(summary) -> list[str]:
    rows = [c for c in summary["corpora"] if c.get("nodes")]
    if not rows:
        return []
    lines = ["| corpus | main content nodes P / R / F1 | template nodes P / R / F1 | menu nodes P / R / F1 |",
             "|---|---|---|---|"]
    for c in rows:
        cells = []
        for part in ("main", "template", "menu"):
            n = c["nodes"].get(part)
            cells.append(f"{_f(n['mean_precision'])} / {_f(n['mean_recall'])} / {_f(n['mean_f1'])}"
                         if n else "–")
        lines.append(f"| {c['name']} | " + " | ".join(cells) + " |")
    return lines


def text_diff(gold: str, output: str, limit: int = DIFF_LINES) -> str:
    """Line diff, gold as '-' and output as '+', cut to `limit` lines."""
    diff = list(difflib.unified_diff(gold.splitlines(), output.splitlines(), "gold", "sitestrip",
                                     n=0, lineterm=""))
    cut = len(diff) - limit
    diff = diff[:limit]
    if cut > 0:
        diff.append(f"... {cut} more diff lines")
    return "\n".join(line[:300] for line in diff) or "(identical after line splitting)"


def write_report(summary, out_dir: str, *, charts: bool = True) -> str:
    images = draw_charts(summary, out_dir) if charts else {}
    peers = ", ".join(f"{k} {v}" for k, v in summary["peers"].items()) or "none installed"
    lines = [
        "# sitestrip benchmark",
        "",
        f"Run {summary['created']} in {summary['seconds']} s on {summary['machine'].get('cpu', '?')} "
        f"({summary['machine'].get('cpus')} CPUs), Python {summary['machine'].get('python')}; "
        f"config: {summary['config']}.",
        f"Peers: {peers}." + (f" Not installed: {', '.join(summary['peers_missing'])} "
                              "(`pip install '.[bench]'`)." if summary.get("peers_missing") else ""),
        "",
        "Every system is scored on the same gold pages with the same scorer (design §9: bag of "
        "case-folded words; mean of per-page F1, micro totals in results.json). A page a system "
        "produced nothing for scores as empty output.",
        "",
        "## main_text word F1 (mean of per-page F1)",
        "",
        *quality_table(summary),
        "",
        "Micro F1 (all words of a corpus pooled):",
        "",
        *quality_table(summary, "micro_f1"),
        "",
    ]
    if "f1_by_corpus" in images:
        lines += [f"![F1 per corpus]({images['f1_by_corpus']})", ""]
    lines += ["## By genre (mean per-page F1)", "", *genre_table(summary), ""]
    if "f1_by_genre" in images:
        lines += [f"![F1 per genre]({images['f1_by_genre']})", ""]
    lines += [*page_type_section(summary), *error_class_section(summary)]
    lines += ["## sitestrip in detail", "", *product_table(summary), ""]
    menu_sites = menu_site_table(summary)
    if menu_sites:
        lines += ["### Site menus: link F1 per site", "",
                  "Menu links compared as pages (fragment dropped, duplicates removed); per site the "
                  "mean of per-page values, then the mean over the sites.", "", *menu_sites, ""]
    nodes = node_table(summary)
    if nodes:
        lines += ["### DOM-node metrics (TeCo gold)", "", *nodes, ""]
    for key, title in (("methods", "Candidate method mix"), ("template_share", "Template share")):
        if key in images:
            lines += [f"![{title}]({images[key]})", ""]
    lines += links_section(summary)
    lines += [
        "## Speed",
        "",
        "sitestrip: `sitestrip run` end to end in a child process (interpreter start, WARC "
        "reading, parsing, grouping, all site-level stages, Parquet writing) ÷ its wall time. "
        "Peers: extraction only, from already decoded HTML, warm, each in its own child "
        "process — reading and decoding the WARC is not charged to them.",
        "",
        *speed_table(summary),
        "",
    ]
    if "speed" in images:
        lines += [f"![Speed]({images['speed']})", ""]
    lines += ["CPU ms per page, p50 / p99, by stage (`etdm` is the tree-mapping part of `template` "
              "and `site_conex`; `group` = the page through the shuffle coder; `write` = Parquet "
              "writing, mean per page):", "", *stage_table(summary), "",
              "Peak memory and page size through the shuffle:", "", *memory_table(summary), ""]
    lines += ["## Ten worst pages per corpus (sitestrip main_text)", ""]
    for c in summary["corpora"]:
        lines += [f"### {c['name']}", ""]
        for w in c["worst"]:
            lines += [f"- {w['url']} (site {w['site']}, candidate method {w['candidate_method']}): F1 {w['f1']:.3f}, "
                      f"P {w['precision']:.3f}, R {w['recall']:.3f}", "",
                      "```diff", text_diff(w["gold"], w["output"]), "```", ""]
    path = os.path.join(out_dir, "report.md")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines))
    return path


def draw_charts(summary, out_dir: str) -> dict:
    """PNG charts next to report.md; {name: file name}."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    systems = _systems(summary)
    corpora = [c["name"] for c in summary["corpora"]]
    out = {}

    def save(fig, name):
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, f"{name}.png"), dpi=110)
        plt.close(fig)
        out[name] = f"{name}.png"

    def grouped(groups, value, title, name, ylabel="word F1 (mean per page)"):
        fig, ax = plt.subplots(figsize=(max(7, 1.4 * len(groups) + 3), 4.8))
        width = 0.8 / len(systems)
        x = np.arange(len(groups))
        for i, s in enumerate(systems):
            ys = [value(s, g) or 0.0 for g in groups]
            ax.bar(x + i * width - 0.4 + width / 2, ys, width, label=s,
                   color=PRODUCT_COLOR if s == PRODUCT else PEER_COLORS[(i - 1) % len(PEER_COLORS)])
        ax.set_xticks(x)
        ax.set_xticklabels([g if isinstance(g, str) else "/".join(g) for g in groups],
                           rotation=20, ha="right", fontsize=8)
        ax.set_ylim(0, 1)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.legend(fontsize=7, ncol=min(7, len(systems)), loc="upper center", bbox_to_anchor=(0.5, -0.22))
        ax.grid(axis="y", alpha=0.3)
        save(fig, name)

    by_name = {c["name"]: c for c in summary["corpora"]}
    grouped(corpora, lambda s, g: by_name[g]["quality"].get(s, {}).get("corpus", {}).get(g, {}).get("mean_f1"),
            "main_text word F1 per corpus", "f1_by_corpus")
    genres = [(c["name"], genre) for c in summary["corpora"]
              for genre in sorted(c["quality"].get(PRODUCT, {}).get("genre", {}))]
    if len(genres) > 1:
        grouped(genres, lambda s, g: by_name[g[0]]["quality"].get(s, {}).get("genre", {}).get(g[1], {})
                .get("mean_f1"), "main_text word F1 per genre", "f1_by_genre")

    fig, ax = plt.subplots(figsize=(7, 4))
    speeds = [_throughput(summary, s) or 0.0 for s in systems]
    ax.barh(systems, speeds, color=[PRODUCT_COLOR if s == PRODUCT else "#95a5a6" for s in systems])
    for i, v in enumerate(speeds):
        ax.text(v, i, f" {v:.1f}", va="center", fontsize=8)
    ax.set_xlabel("pages per second, all corpora (sitestrip: end to end incl. WARC reading)")
    ax.set_title("Throughput on the same pages, same machine, same run")
    ax.invert_yaxis()
    save(fig, "speed")

    methods = sorted({m for c in summary["corpora"] for m in c["methods"]})
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(corpora) + 2), 4))
    bottom = np.zeros(len(corpora))
    for m in methods:
        share = np.array([by_name[n]["methods"].get(m, 0) / max(sum(by_name[n]["methods"].values()), 1)
                          for n in corpora])
        ax.bar(corpora, share, bottom=bottom, label=m)
        bottom += share
    ax.set_ylabel("share of pages")
    ax.set_title("How candidate pages were found (candidate_method)")
    ax.legend(fontsize=7)
    plt.setp(ax.get_xticklabels(), rotation=20, ha="right", fontsize=8)
    save(fig, "methods")

    fig, ax = plt.subplots(figsize=(7, 4))
    bins = np.linspace(0, 1, 21)
    drawn = False
    for c in summary["corpora"]:
        if c["template_shares"]:
            ax.hist(c["template_shares"], bins=bins, histtype="step", linewidth=1.5,
                    label=f"{c['name']} ({len(c['template_shares'])})")
            drawn = True
    ax.set_xlabel("template share (template words ÷ page words)")
    ax.set_ylabel("pages")
    ax.set_title("Template share of site-level pages")
    if drawn:
        ax.legend(fontsize=7)
    save(fig, "template_share")
    return out


def redraw(out_dir: str, charts: bool = True) -> str:
    with open(os.path.join(out_dir, "results.json"), encoding="utf-8") as fh:
        summary = json.load(fh)
    return write_report(summary, out_dir, charts=charts)

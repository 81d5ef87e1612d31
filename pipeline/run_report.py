"""`sitestrip report`: a finished run, summarized from its Parquet output.

`summarize` reduces the three datasets to a small dict (Arrow does the
per-row work, so a large run costs one scan of a few columns);
`render_html` draws it with inline SVG charts we generate ourselves, and
`render_markdown` writes the same numbers as tables for diffs, tickets and
terminals. Nothing here loads anything from the network.
"""
from __future__ import annotations

import datetime as dt
import html as htmlmod
import math
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from sitestrip.schemas import DATASETS
from sitestrip.schemas.tables import METHODS, RENAMED_COLUMNS, TIMING_STAGES
from sitestrip.transforms.urls import site_key

METHOD_COLORS = {"cs": "#2b8a3e", "partial_cs": "#74b816", "linked": "#1971c2",
                 "site_sample": "#f08c00", "page_only": "#868e96"}
OTHER_COLOR = "#495057"
BAR_COLOR = "#1971c2"
ERROR_COLOR = "#c92a2a"
SHARE_BINS = 10
PAGE_COLUMNS = ["site", "candidate_method", "template_share", "words_page", "words_main", "status",
                "html_bytes", "timing_ms"]


class ReportError(Exception):
    """The directory is not the output of a run."""


def _dataset(run_dir: str, name: str, required: bool):
    """(schema version of the files or None, table of the columns the report reads).

    Read with the current schema, so output of an older schema version
    (fewer columns) reads with nulls where it lacks a column, and a column
    renamed since (schemas RENAMED_COLUMNS) under its old name.
    """
    path = os.path.join(run_dir, name) if "://" not in run_dir else run_dir.rstrip("/") + "/" + name
    schema = DATASETS[name]
    columns = PAGE_COLUMNS if name == "pages" else schema.names
    try:
        data = ds.dataset(path, format="parquet", schema=schema)
        files = data.files
    except (FileNotFoundError, OSError, pa.ArrowInvalid) as exc:
        if required:
            raise ReportError(f"no {name}/ dataset under {run_dir} ({exc}); "
                              "is it the --output of `sitestrip run`?") from None
        return None, schema.empty_table().select(columns)
    if required and not files:
        raise ReportError(f"{path} holds no Parquet file; is it the --output of `sitestrip run`?")
    version = None
    if files:
        written = pq.read_schema(files[0], filesystem=data.filesystem)
        value = (written.metadata or {}).get(b"sitestrip.schema_version")
        version = value.decode() if value else None
        old = {new: before for new, before in RENAMED_COLUMNS.get(name, {}).items()
               if new in columns and before in written.names and new not in written.names}
        if old:
            as_written = pa.schema([f.with_name(old.get(f.name, f.name)) for f in schema])
            table = ds.dataset(path, format="parquet", schema=as_written).to_table(
                columns=[old.get(c, c) for c in columns])
            return version, table.rename_columns(columns)
    return version, data.to_table(columns=columns)


def _counts(array) -> list[tuple[str, int]]:
    """(value, count), most frequent first, ties by value."""
    if len(array) == 0:
        return []
    vc = pc.value_counts(array).to_pylist()
    pairs = [("(null)" if d["values"] is None else str(d["values"]), int(d["counts"])) for d in vc]
    return sorted(pairs, key=lambda p: (-p[1], p[0]))


def _quantiles(values: np.ndarray) -> dict:
    if values.size == 0:
        return {"mean": None, "median": None, "p10": None, "p90": None}
    q10, q50, q90 = np.quantile(values, [0.1, 0.5, 0.9]).tolist()
    return {"mean": float(values.mean()), "median": q50, "p10": q10, "p90": q90}


def _floats(column) -> np.ndarray:
    arr = column.to_numpy(zero_copy_only=False) if len(column) else np.zeros(0)
    arr = np.asarray(arr, dtype=np.float64)
    return arr[~np.isnan(arr)]


def summarize(run_dir: str, top: int = 15) -> dict:
    """The numbers of the report: plain Python values only."""
    version, pages = _dataset(run_dir, "pages", required=True)
    _, menus = _dataset(run_dir, "menus", required=False)
    _, errors = _dataset(run_dir, "errors", required=False)
    n_pages = pages.num_rows

    method_counts = dict(_counts(pages["candidate_method"]))
    candidate_methods = [(m, method_counts.pop(m, 0)) for m in METHODS] + sorted(method_counts.items())

    shares = _floats(pages["template_share"])
    hist, _ = np.histogram(np.clip(shares, 0.0, 1.0), bins=SHARE_BINS, range=(0.0, 1.0))
    words_main = pages["words_main"]
    no_main = 0
    if n_pages:
        no_main = int(pc.sum(pc.and_(pc.equal(words_main, 0), pc.greater(pages["words_page"], 0))).as_py() or 0)

    # Sites: pages, mean template share, main words, candidate method mix.
    sites = []
    if n_pages:
        grouped = pages.group_by("site").aggregate([
            ("site", "count"), ("template_share", "mean"), ("words_main", "sum"),
            ("words_page", "sum")]).to_pylist()
        mix: dict = {}
        for row in pages.group_by(["site", "candidate_method"]).aggregate([("candidate_method", "count")]).to_pylist():
            mix.setdefault(row["site"], {})[row["candidate_method"]] = row["candidate_method_count"]
        for row in grouped:
            sites.append({"site": row["site"], "pages": row["site_count"],
                          "template_share": row["template_share_mean"],
                          "words_main": row["words_main_sum"] or 0,
                          "words_page": row["words_page_sum"] or 0,
                          "candidate_methods": mix.get(row["site"], {})})
    sites.sort(key=lambda s: (-s["pages"], s["site"] or ""))

    # Menus: distinct menus per site, and how much of the site its commonest menu covers.
    per_site_menus: dict = {}
    for row in menus.select(["site", "pages", "example_url"]).to_pylist():
        entry = per_site_menus.setdefault(row["site"], {"menus": 0, "top_pages": 0, "example_url": None,
                                                        "menu_pages": 0})
        entry["menus"] += 1
        entry["menu_pages"] += row["pages"] or 0
        if (row["pages"] or 0) > entry["top_pages"]:
            entry["top_pages"], entry["example_url"] = row["pages"], row["example_url"]
    site_pages = {s["site"]: s["pages"] for s in sites}
    menus_rows = []
    for site, entry in per_site_menus.items():
        total = site_pages.get(site, 0)
        menus_rows.append({"site": site, "menus": entry["menus"], "pages": total,
                           "top_menu_pages": entry["top_pages"],
                           "top_menu_share": entry["top_pages"] / total if total else None,
                           "example_url": entry["example_url"]})
    menus_rows.sort(key=lambda r: (-r["pages"], r["site"] or ""))
    sites_without_menu = sum(1 for s in sites if s["site"] not in per_site_menus)
    buckets = [("0", 0), ("1", 0), ("2", 0), ("3", 0), ("4–5", 0), ("6–10", 0), ("> 10", 0)]
    counts = dict(buckets)
    counts["0"] = sites_without_menu
    for entry in per_site_menus.values():
        k = entry["menus"]
        key = str(k) if k <= 3 else "4–5" if k <= 5 else "6–10" if k <= 10 else "> 10"
        counts[key] += 1
    for s in sites:
        s["menus"] = per_site_menus.get(s["site"], {}).get("menus", 0)

    # Errors by stage, and by (stage, class) with an example.
    by_class: dict = {}
    for row in errors.select(["url", "stage", "error_class", "message"]).to_pylist():
        key = (row["stage"] or "?", row["error_class"] or "?")
        entry = by_class.setdefault(key, {"stage": key[0], "error_class": key[1], "count": 0,
                                          "example_url": row["url"], "example": row["message"],
                                          "sites": set()})
        entry["count"] += 1
        if row["url"]:
            entry["sites"].add(site_key(row["url"]) or "?")
    error_classes = sorted(by_class.values(), key=lambda e: (-e["count"], e["stage"], e["error_class"]))
    for e in error_classes:
        e["sites"] = len(e["sites"])
    stages: dict = {}
    for e in error_classes:
        stages[e["stage"]] = stages.get(e["stage"], 0) + e["count"]

    timing = []
    if n_pages and "timing_ms" in pages.column_names:
        for stage in TIMING_STAGES:
            values = _floats(pc.struct_field(pages["timing_ms"], stage))
            if values.size:
                timing.append({"stage": stage, "pages": int(values.size),
                               "median": float(np.median(values)),
                               "p90": float(np.quantile(values, 0.9)), "sum": float(values.sum())})

    status = dict(_counts(pages["status"])) if n_pages else {}
    return {
        "run_dir": run_dir,
        "generated": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "schema_version": version,
        "pages": n_pages,
        "sites": len(sites),
        "errors": errors.num_rows,
        "menus": menus.num_rows,
        "status": status,
        "words_page": int(pc.sum(pages["words_page"]).as_py() or 0) if n_pages else 0,
        "words_main": int(pc.sum(words_main).as_py() or 0) if n_pages else 0,
        "html_bytes": int(pc.sum(pages["html_bytes"]).as_py() or 0) if n_pages else 0,
        "no_main": no_main,
        "candidate_methods": candidate_methods,
        "share": {"pages": int(shares.size), "without": n_pages - int(shares.size),
                  "hist": hist.tolist(), **_quantiles(shares)},
        "errors_by_stage": sorted(stages.items(), key=lambda p: (-p[1], p[0])),
        "error_classes": error_classes,
        "largest_sites": sites[:top],
        "menus_per_site": menus_rows[:top],
        "menus_histogram": [(k, counts[k]) for k, _ in buckets],
        "sites_without_menu": sites_without_menu,
        "timing": timing,
        "top": top,
    }


# ---------------------------------------------------------------------------
# Formatting helpers

def _e(value) -> str:
    return htmlmod.escape("" if value is None else str(value), quote=True)


def _pct(x, digits: int = 0) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x * 100:.{digits}f}%"


def _num(x) -> str:
    return f"{x:,}" if isinstance(x, int) else ("–" if x is None else f"{x:,.1f}")


def _share_label(i: int) -> str:
    lo, hi = i * 100 // SHARE_BINS, (i + 1) * 100 // SHARE_BINS
    return f"{lo}–{hi}%"


def _mix_text(methods: dict) -> str:
    order = [m for m in METHODS if m in methods] + sorted(m for m in methods if m not in METHODS)
    return ", ".join(f"{m} {methods[m]}" for m in order)


# ---------------------------------------------------------------------------
# SVG charts

_FONT = 'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif" font-size="12"'


def _empty_svg(message: str, width: int = 640) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} 40" width="{width}" '
            f'height="40" role="img"><text x="8" y="24" {_FONT} fill="#868e96">{_e(message)}</text></svg>')


def hbar_svg(rows, title: str, colors=None, width: int = 640, label_width: int = 200) -> str:
    """Horizontal bars: rows of (label, value); colors: label → colour (default one colour)."""
    rows = [(label, value) for label, value in rows]
    if not rows or max(v for _, v in rows) <= 0:
        return _empty_svg(f"{title}: nothing to show", width)
    bar_h, gap, top = 20, 6, 4
    height = top + len(rows) * (bar_h + gap)
    plot = width - label_width - 70
    vmax = max(v for _, v in rows)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
             f'height="{height}" role="img" aria-label="{_e(title)}"><title>{_e(title)}</title>']
    for k, (label, value) in enumerate(rows):
        y = top + k * (bar_h + gap)
        w = 0 if vmax == 0 else max(plot * value / vmax, 1 if value else 0)
        color = (colors or {}).get(label, BAR_COLOR)
        short = label if len(label) <= 30 else label[:29] + "…"
        parts.append(f'<text x="{label_width - 8}" y="{y + 14}" text-anchor="end" {_FONT} fill="#343a40">'
                     f'{_e(short)}</text>')
        parts.append(f'<rect x="{label_width}" y="{y}" width="{w:.1f}" height="{bar_h}" rx="2" '
                     f'fill="{color}"><title>{_e(label)}: {value:,}</title></rect>')
        parts.append(f'<text x="{label_width + w + 6:.1f}" y="{y + 14}" {_FONT} fill="#343a40">{value:,}</text>')
    parts.append("</svg>")
    return "".join(parts)


def stacked_hbar_svg(rows, title: str, width: int = 640, label_width: int = 200) -> str:
    """Horizontal stacked bars: rows of (label, {method: count}), one colour per method."""
    if not rows:
        return _empty_svg(f"{title}: nothing to show", width)
    bar_h, gap, top = 20, 6, 4
    height = top + len(rows) * (bar_h + gap) + 22
    plot = width - label_width - 70
    vmax = max(sum(mix.values()) for _, mix in rows) or 1
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
             f'height="{height}" role="img" aria-label="{_e(title)}"><title>{_e(title)}</title>']
    used = []
    for k, (label, mix) in enumerate(rows):
        y = top + k * (bar_h + gap)
        x = float(label_width)
        short = label if len(label) <= 30 else label[:29] + "…"
        parts.append(f'<text x="{label_width - 8}" y="{y + 14}" text-anchor="end" {_FONT} fill="#343a40">'
                     f'{_e(short)}</text>')
        order = [m for m in METHODS if m in mix] + sorted(m for m in mix if m not in METHODS)
        for method in order:
            w = plot * mix[method] / vmax
            color = METHOD_COLORS.get(method, OTHER_COLOR)
            if method not in used:
                used.append(method)
            parts.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{color}">'
                         f'<title>{_e(label)}: {_e(method)} {mix[method]:,}</title></rect>')
            x += w
        parts.append(f'<text x="{x + 6:.1f}" y="{y + 14}" {_FONT} fill="#343a40">{sum(mix.values()):,}</text>')
    x = float(label_width)
    y = height - 8
    for method in used:
        parts.append(f'<rect x="{x:.0f}" y="{y - 10}" width="10" height="10" '
                     f'fill="{METHOD_COLORS.get(method, OTHER_COLOR)}"/>')
        parts.append(f'<text x="{x + 14:.0f}" y="{y}" {_FONT} fill="#343a40">{_e(method)}</text>')
        x += 24 + 7.5 * len(method)
    parts.append("</svg>")
    return "".join(parts)


def histogram_svg(counts, labels, title: str, color: str = BAR_COLOR, width: int = 640,
                  height: int = 220) -> str:
    """Vertical bars over labelled bins, with the count above each bar."""
    if not counts or max(counts) <= 0:
        return _empty_svg(f"{title}: nothing to show", width)
    left, right, top, bottom = 40, 10, 18, 36
    plot_w, plot_h = width - left - right, height - top - bottom
    n = len(counts)
    step = plot_w / n
    vmax = max(counts)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
             f'height="{height}" role="img" aria-label="{_e(title)}"><title>{_e(title)}</title>',
             f'<line x1="{left}" y1="{top + plot_h}" x2="{width - right}" y2="{top + plot_h}" stroke="#adb5bd"/>',
             f'<text x="{left - 6}" y="{top + 4}" text-anchor="end" {_FONT} fill="#868e96">{vmax:,}</text>',
             f'<text x="{left - 6}" y="{top + plot_h}" text-anchor="end" {_FONT} fill="#868e96">0</text>']
    for i, (value, label) in enumerate(zip(counts, labels)):
        h = plot_h * value / vmax
        x = left + i * step + 2
        parts.append(f'<rect x="{x:.1f}" y="{top + plot_h - h:.1f}" width="{step - 4:.1f}" height="{h:.1f}" '
                     f'fill="{color}"><title>{_e(label)}: {value:,}</title></rect>')
        if value:
            parts.append(f'<text x="{x + (step - 4) / 2:.1f}" y="{top + plot_h - h - 4:.1f}" text-anchor="middle" '
                         f'{_FONT} fill="#343a40">{value:,}</text>')
        parts.append(f'<text x="{x + (step - 4) / 2:.1f}" y="{top + plot_h + 16}" text-anchor="middle" '
                     f'{_FONT} font-size="11" fill="#495057">{_e(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


# ---------------------------------------------------------------------------
# HTML

_CSS = """
body { font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #212529;
  margin: 0; background: #f8f9fa; }
main { max-width: 1040px; margin: 0 auto; padding: 20px 24px 40px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #dee2e6; padding-bottom: 4px; }
.meta { color: #6c757d; margin: 0 0 16px; overflow-wrap: anywhere; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); gap: 10px; }
.card { background: #fff; border: 1px solid #dee2e6; border-radius: 6px; padding: 10px 12px; }
.card b { display: block; font-size: 20px; }
.card span { color: #6c757d; font-size: 12px; }
.row { display: flex; flex-wrap: wrap; gap: 18px; align-items: flex-start; }
.chart { background: #fff; border: 1px solid #dee2e6; border-radius: 6px; padding: 10px; max-width: 100%;
  overflow-x: auto; }
.chart svg { display: block; max-width: 100%; height: auto; }
table { border-collapse: collapse; background: #fff; font-size: 13px; margin: 8px 0; }
th, td { border: 1px solid #dee2e6; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f1f3f5; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
td.msg { max-width: 420px; overflow-wrap: anywhere; color: #495057; }
p.note { color: #6c757d; font-size: 13px; }
"""


def _table(headers, rows, numeric=()) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f'<td class="{"n" if i in numeric else "msg" if h == "example" else ""}">{_e(v)}</td>'
                         for i, (h, v) in enumerate(zip(headers, row))) + "</tr>"
        for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cards(s: dict) -> list[tuple[str, str]]:
    share = s["share"]
    return [
        ("pages", _num(s["pages"])), ("sites", _num(s["sites"])), ("errors", _num(s["errors"])),
        ("distinct menus", _num(s["menus"])), ("words (page)", _num(s["words_page"])),
        ("words (main)", _num(s["words_main"])),
        ("median template share", _pct(share["median"])),
        ("pages with no main content", _num(s["no_main"])),
        ("HTML", f"{s['html_bytes'] / 1e6:,.1f} MB"),
    ]


def _share_rows(s):
    share = s["share"]
    return [("pages with one", _num(share["pages"])), ("without (page_only)", _num(share["without"])),
            ("mean", _pct(share["mean"], 1)), ("p10", _pct(share["p10"], 1)),
            ("median", _pct(share["median"], 1)), ("p90", _pct(share["p90"], 1))]


def _method_rows(s):
    total = s["pages"] or 1
    return [(m, _num(c), _pct(c / total, 1)) for m, c in s["candidate_methods"]]


def _site_rows(s):
    return [(r["site"], _num(r["pages"]), _mix_text(r["candidate_methods"]), _pct(r["template_share"]),
             _num(r["words_main"]), _num(r["menus"])) for r in s["largest_sites"]]


def _menu_rows(s):
    return [(r["site"], _num(r["menus"]), _num(r["pages"]), _num(r["top_menu_pages"]), _pct(r["top_menu_share"]),
             r["example_url"] or "") for r in s["menus_per_site"]]


def _error_rows(s):
    return [(e["stage"], e["error_class"], _num(e["count"]), _num(e["sites"]), e["example_url"] or "(file)",
             (e["example"] or "")[:200]) for e in s["error_classes"]]


def _timing_rows(s):
    return [(t["stage"], f"{t['median']:.2f}", f"{t['p90']:.2f}", f"{t['sum'] / 1000:.1f}")
            for t in s["timing"]]


SITE_HEADERS = ("site", "pages", "candidate methods", "mean template share", "main words", "menus")
MENU_HEADERS = ("site", "menus", "pages", "pages with its commonest menu", "share", "example page")
ERROR_HEADERS = ("stage", "class", "count", "sites", "example url", "example")
TIMING_HEADERS = ("stage", "median ms", "p90 ms", "total s")


def render_html(s: dict) -> str:
    share = s["share"]
    cards = "".join(f"<div class=card><b>{_e(v)}</b><span>{_e(k)}</span></div>" for k, v in _cards(s))
    method_chart = hbar_svg([(m, c) for m, c in s["candidate_methods"]], "pages by candidate method",
                            METHOD_COLORS)
    share_chart = histogram_svg(share["hist"], [_share_label(i) for i in range(SHARE_BINS)],
                                "pages by template share")
    stage_chart = hbar_svg(s["errors_by_stage"], "errors by stage", {k: ERROR_COLOR for k, _ in s["errors_by_stage"]})
    sites_chart = stacked_hbar_svg([(r["site"], r["candidate_methods"]) for r in s["largest_sites"]],
                                   "largest sites by pages, by candidate method")
    menus_chart = histogram_svg([c for _, c in s["menus_histogram"]], [k for k, _ in s["menus_histogram"]],
                                "sites by number of distinct menus", color="#1971c2", height=180)
    status = ", ".join(f"{k} {v:,}" for k, v in s["status"].items()) or "none"
    errors_html = (f'<div class="row"><div class="chart">{stage_chart}</div></div>'
                   + _table(ERROR_HEADERS, _error_rows(s), numeric=(2, 3))) if s["errors"] else \
        "<p>No errors: every HTML 200 record became a pages row.</p>"
    timing_html = (f"<h2>CPU time per page</h2>{_table(TIMING_HEADERS, _timing_rows(s), numeric=(1, 2, 3))}"
                   if s["timing"] else "")
    version = f" · schema version {_e(s['schema_version'])}" if s["schema_version"] else ""
    warning = (f'<p style="background:#fff3bf;border:2px solid #c92a2a;padding:8px"><b>Warning:</b> '
               f'{_e(s["warning"])}</p>') if s.get("warning") else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>sitestrip report: {_e(s['run_dir'])}</title>
<style>{_CSS}</style></head>
<body><main>
<h1>sitestrip run report</h1>{warning}
<p class="meta">{_e(s['run_dir'])} · generated {_e(s['generated'])}{version} · status: {_e(status)}</p>
<div class="cards">{cards}</div>
<h2>Candidate methods</h2>
<div class="row"><div class="chart">{method_chart}</div>
{_table(("candidate method", "pages", "share"), _method_rows(s), numeric=(1, 2))}</div>
<p class="note">How the comparison pages of each key page were found: a complete subdigraph (cs), part
of one (partial_cs), linked pages, other pages of the site, or none (page_only: page-level methods).</p>
<h2>Template share</h2>
<div class="row"><div class="chart">{share_chart}</div>
{_table(("", "template share"), _share_rows(s), numeric=(1,))}</div>
<p class="note">Share of a page's words that are template (TemEx/HybEx). Pages processed with the
page-level methods have none.</p>
<h2>Errors by stage and class</h2>
{errors_html}
<h2>Largest sites</h2>
<div class="row"><div class="chart">{sites_chart}</div></div>
{_table(SITE_HEADERS, _site_rows(s), numeric=(1, 4, 5))}
<h2>Menus per site</h2>
<div class="row"><div class="chart">{menus_chart}</div></div>
<p class="note">{s['sites_without_menu']:,} site(s) without any menu. The largest sites, with their distinct
menus and how many pages carry the commonest one:</p>
{_table(MENU_HEADERS, _menu_rows(s), numeric=(1, 2, 3, 4))}
{timing_html}
</main></body></html>
"""


# ---------------------------------------------------------------------------
# Markdown

def _md_cell(value) -> str:
    return str("" if value is None else value).replace("|", "\\|").replace("\n", " ")


def _md_table(headers, rows) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_md_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _md_bar(value: int, vmax: int, width: int = 30) -> str:
    return "█" * (round(width * value / vmax) if vmax else 0)


def render_markdown(s: dict) -> str:
    share = s["share"]
    hist_max = max(share["hist"]) if share["hist"] else 0
    version = f" · schema version {s['schema_version']}" if s["schema_version"] else ""
    out = [
        "# sitestrip run report", "",
        *([f"**Warning: {s['warning']}**", ""] if s.get("warning") else []),
        f"`{s['run_dir']}` · generated {s['generated']}{version}", "",
        _md_table(("", ""), [(k, v) for k, v in _cards(s)]), "",
        "## Candidate methods", "",
        _md_table(("candidate method", "pages", "share", ""),
                  [(m, _num(c), _pct(c / (s["pages"] or 1), 1),
                    _md_bar(c, max((x for _, x in s["candidate_methods"]), default=0)))
                   for m, c in s["candidate_methods"]]), "",
        "## Template share", "",
        _md_table(("", "template share"), _share_rows(s)), "",
        _md_table(("template share", "pages", ""),
                  [(_share_label(i), _num(c), _md_bar(c, hist_max)) for i, c in enumerate(share["hist"])]), "",
        "## Errors by stage and class", "",
    ]
    if s["errors"]:
        stage_max = max(c for _, c in s["errors_by_stage"])
        out += [_md_table(("stage", "errors", ""), [(k, _num(c), _md_bar(c, stage_max)) for k, c in s["errors_by_stage"]]),
                "", _md_table(ERROR_HEADERS, _error_rows(s)), ""]
    else:
        out += ["No errors: every HTML 200 record became a pages row.", ""]
    menus_max = max((c for _, c in s["menus_histogram"]), default=0)
    out += [
        f"## Largest sites (top {s['top']})", "",
        _md_table(SITE_HEADERS, _site_rows(s)), "",
        "## Menus per site", "",
        _md_table(("distinct menus", "sites", ""),
                  [(k, _num(c), _md_bar(c, menus_max)) for k, c in s["menus_histogram"]]), "",
        _md_table(MENU_HEADERS, _menu_rows(s)), "",
    ]
    if s["timing"]:
        out += ["## CPU time per page", "", _md_table(TIMING_HEADERS, _timing_rows(s)), ""]
    return "\n".join(out)


def write_report(run_dir: str, out: str, top: int = 15, warning: str | None = None) -> tuple[str, str, dict]:
    """Write the HTML report to `out` and its Markdown twin next to it; (html path, md path, summary).
    `warning` is shown at the top of both (an output that is not one complete run)."""
    if top < 1:
        raise ReportError("--top must be 1 or more")
    summary = summarize(run_dir, top)
    summary["warning"] = warning
    md_path = os.path.splitext(out)[0] + ".md"
    directory = os.path.dirname(os.path.abspath(out))
    os.makedirs(directory, exist_ok=True)
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(render_html(summary))
    with open(md_path, "w", encoding="utf-8") as fh:
        fh.write(render_markdown(summary))
    return out, md_path, summary

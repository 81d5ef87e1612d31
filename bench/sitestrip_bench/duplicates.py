"""Duplicate detection measured on dev corpora with injected duplicates.

A corpus's pages are read once; a seeded generator picks a share of them and injects, for
each, one copy of a kind an indexer meets:
- `url_variant`: the same bytes under the URL with tracking parameters added (exact);
- `session_path`: the same bytes under the URL with a `;jsessionid=` path parameter (exact);
- `near_edit`: under another URL, the page with a short editor's note put in front of its
  longest paragraph and the years in that paragraph changed (a near duplicate);
- `recapture`: the same URL fetched a year later with the same edit (a capture).
The product's site step (the pipeline's own process_site) then runs over the corpus with
its injections, and over the corpus alone. Measured:
- recall per kind: the injected page and its original end in one duplicate cluster (one
  names the other, or both name one canonical page; for a recapture, the older names the
  newer);
- pages of the corpus itself marked duplicates (not of their own injected copy): an upper
  bound of false positives, since corpora hold real duplicates too (listed for reading);
- main_text of the corpus's own pages with and without the injections against the gold
  (mean word F1): the injections must not change what a page keeps;
- the duplicates stage's CPU per page (timing_ms.duplicates);
- a threshold sweep: the same measures for other near_threshold values, recomputed from
  the rows' signatures (no second run).

    sitestrip-bench duplicates --corpus DIR [--corpus DIR ...] --out DIR
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import re
import sys
from collections import Counter, defaultdict

import numpy as np

from sitestrip_bench.core import extract_rows, load_corpus
from sitestrip_bench.corpora import read_shared_corpus
from sitestrip_bench.scoring import score_texts
from sitestrip.configs import load_config
from sitestrip.configs import ReadLimits
from sitestrip.transforms.duplicates import Fingerprint, find_duplicates, signature_from_bytes
from sitestrip.transforms.site_step import PageRecord, build_page_record

KINDS = ("url_variant", "session_path", "near_edit", "recapture")
NOTE = ("Editor's note: this page was updated after publication to correct a date and to "
        "add a link to the follow-up.")
_P_OPEN = re.compile(r"<p(\s[^>]*)?>", re.I)
_YEAR = re.compile(r"\b(19[5-9]\d|20[0-4]\d)\b")


def _with_note(html: str) -> str:
    """The page with NOTE in front of its longest paragraph and the years in that paragraph
    moved by one: an edit of the content, the template untouched."""
    best, best_len, best_end = None, -1, -1
    for m in _P_OPEN.finditer(html):
        end = html.find("</p", m.end())
        end = end if end >= 0 else len(html)
        if end - m.end() > best_len:
            best, best_len, best_end = m, end - m.end(), end
    if best is None:
        return html
    paragraph = _YEAR.sub(lambda m: str(int(m.group(1)) + 1), html[best.end():best_end])
    return html[:best.end()] + NOTE + " " + paragraph + html[best_end:]


def _variant_url(url: str, kind: str) -> str:
    if kind == "url_variant":
        return url + ("&" if "?" in url else "?") + "utm_source=newsletter&utm_medium=email"
    if kind == "session_path":
        path, q, query = url.partition("?")
        return path + ";jsessionid=8F3A2C1D9E" + (q + query if q else "")
    if kind == "near_edit":
        return url + ("&" if "?" in url else "?") + "version=2"
    return url


def _later(date: str) -> str:
    year = date[:4]
    return str(int(year) + 1) + date[4:] if year.isdigit() else "2100-01-01T00:00:00Z"


def inject(loaded, share: float, seed: int = 7) -> tuple[dict, list]:
    """(site → records with injections, [(kind, original record, injected record)])."""
    rng = random.Random(seed)
    records = {site: list(rs) for site, rs in loaded.records.items()}
    chosen = sorted((r for rs in loaded.records.values() for r in rs if r.url in loaded.html),
                    key=lambda r: (r.site, r.url, r.warc_offset))
    chosen = rng.sample(chosen, int(round(share * len(chosen))))
    pairs = []
    for k, original in enumerate(sorted(chosen, key=lambda r: (r.site, r.url))):
        kind = KINDS[k % len(KINDS)]
        html = loaded.html[original.url]
        if kind in ("near_edit", "recapture"):
            html = _with_note(html)
        url = _variant_url(original.url, kind)
        copy = build_page_record(url=url, body=html.encode("utf-8"), http_charset="utf-8",
                                 warc_file="injected.warc.gz", warc_offset=k,
                                 warc_record_id=f"<urn:injected:{k}>",
                                 fetch_date=_later(original.fetch_date) if kind == "recapture" else original.fetch_date,
                                 content_type="text/html", truncated=None)
        records[copy.site].append(copy)
        pairs.append((kind, original, copy))
    return records, pairs


def _row_key(row):
    return row["warc_file"], row["warc_offset"]


def _canonical_of(row, by_record):
    """The end of the row's duplicate_of chain (its own record id when it is canonical)."""
    seen = set()
    while row.get("duplicate_of_record") and row["warc_record_id"] not in seen:
        seen.add(row["warc_record_id"])
        nxt = by_record.get(row["duplicate_of_record"])
        if nxt is None:
            return row["duplicate_of_record"]
        row = nxt
    return row["warc_record_id"]


def measure(rows: list, pairs: list, injected_ids: set) -> dict:
    by_record = {r["warc_record_id"]: r for r in rows}
    by_key = {_row_key(r): r for r in rows}
    found, total = Counter(), Counter()
    for kind, original, copy in pairs:
        o = by_key.get((original.warc_file, original.warc_offset))
        c = by_key.get((copy.warc_file, copy.warc_offset))
        total[kind] += 1
        if o is None or c is None:
            continue
        if kind == "recapture":
            ok = o.get("duplicate_of_record") == c["warc_record_id"]
        else:
            ok = _canonical_of(o, by_record) == _canonical_of(c, by_record)
        found[kind] += ok
    own = [r for r in rows if r["warc_record_id"] not in injected_ids]
    copies_of = {}
    for _kind, original, copy in pairs:
        copies_of.setdefault(original.warc_record_id, set()).add(copy.warc_record_id)
    marked = [r for r in own if r.get("duplicate_of_record")
              and r["duplicate_of_record"] not in copies_of.get(r["warc_record_id"], ())]
    out = {"pairs": dict(total), "found": dict(found),
           "recall": {k: found[k] / total[k] for k in total if total[k]},
           "recall_all": sum(found.values()) / max(sum(total.values()), 1),
           "own_pages": len(own), "own_marked": len(marked), "own_marked_share": len(marked) / max(len(own), 1),
           "own_marked_kinds": dict(Counter(r["duplicate_kind"] for r in marked)),
           "own_marked_examples": [(r["url"], r["duplicate_of"], r["duplicate_kind"]) for r in marked[:12]]}
    return out


def _with_threshold(rows: list, threshold: float, params) -> list:
    """The rows' duplicate columns again for another near_threshold, from their signatures."""
    params = dataclasses.replace(params, near_threshold=threshold)
    out = []
    by_site = defaultdict(list)
    for r in rows:
        by_site[r["site"]].append(r)
    for site_rows in by_site.values():
        fps = [Fingerprint(url=r["url"], url_normalized=r["url_normalized"], record_id=r["warc_record_id"],
                           fetch_date=r["fetch_date"] or "", canonical_url=r.get("canonical_url"),
                           content_hash=r["content_hash"], signature=signature_from_bytes(r["near_signature"]),
                           warc_file=r["warc_file"], warc_offset=r["warc_offset"]) for r in site_rows]
        found = find_duplicates(fps, params)
        for k, r in enumerate(site_rows):
            d = found.get(k)
            r = dict(r)
            r["duplicate_of_record"] = fps[d.canonical].record_id if d else None
            r["duplicate_of"] = fps[d.canonical].url if d else None
            r["duplicate_kind"] = d.kind if d else None
            out.append(r)
    return out


def _mean_f1(rows, gold, own_ids):
    texts = {r["url_normalized"]: r["main_text"] or "" for r in rows if r["warc_record_id"] in own_ids}
    scores = score_texts("sitestrip", gold, texts)
    return float(np.mean([s.words.f1 for s in scores])) if scores else None


def run_corpus(directory: str, config, share: float, processes: int) -> dict:
    corpus = read_shared_corpus(directory)
    loaded = load_corpus(corpus.warc_paths, ReadLimits(), keep_html=True)
    plain = extract_rows(loaded, config, processes)
    records, pairs = inject(loaded, share)
    with_injections = dataclasses.replace(loaded, records=records)
    rows = extract_rows(with_injections, config, processes)
    injected_ids = {c.warc_record_id for _, _, c in pairs}
    own_ids = {r.warc_record_id for rs in loaded.records.values() for r in rs}
    result = {"corpus": corpus.name, "pages": len(plain), "injected": len(pairs),
              "threshold": config.duplicates.near_threshold, **measure(rows, pairs, injected_ids),
              "main_f1_alone": _mean_f1(plain, corpus.gold, own_ids),
              "main_f1_with_injections": _mean_f1(rows, corpus.gold, own_ids),
              "main_text_changed": sum(1 for a, b in zip(sorted(plain, key=_row_key),
                                                         sorted((r for r in rows if r["warc_record_id"] in own_ids),
                                                                key=_row_key))
                                       if a["main_text"] != b["main_text"]),
              "duplicates_ms_per_page": float(np.mean([(r["timing_ms"] or {}).get("duplicates") or 0.0 for r in rows])),
              "sweep": {}}
    for threshold in (0.6, 0.7, 0.75, 0.8, 0.85, 0.9):
        m = measure(_with_threshold(rows, threshold, config.duplicates), pairs, injected_ids)
        result["sweep"][str(threshold)] = {"recall_all": m["recall_all"], "recall": m["recall"],
                                           "own_marked_share": m["own_marked_share"]}
    return result


def report(results: list) -> str:
    lines = ["| corpus | pages | injected | recall url_variant / session_path / near_edit / recapture | all | own pages marked | main F1 alone → with injections (rows changed) | duplicates ms/page |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        rec = " / ".join(f"{r['recall'].get(k, float('nan')):.3f}" for k in KINDS)
        lines.append(f"| {r['corpus']} | {r['pages']} | {r['injected']} | {rec} | {r['recall_all']:.3f} | "
                     f"{r['own_marked']} ({100 * r['own_marked_share']:.2f}%) | "
                     f"{r['main_f1_alone']:.4f} → {r['main_f1_with_injections']:.4f} ({r['main_text_changed']}) | "
                     f"{r['duplicates_ms_per_page']:.3f} |")
    lines += ["", "near_threshold sweep (recall of all injected pairs / own pages marked):", "",
              "| corpus | " + " | ".join(results[0]["sweep"]) + " |", "|---|" + "---|" * len(results[0]["sweep"])]
    for r in results:
        lines.append(f"| {r['corpus']} | " + " | ".join(
            f"{v['recall_all']:.3f} / {100 * v['own_marked_share']:.2f}%" for v in r["sweep"].values()) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="sitestrip-bench duplicates", description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", action="append", required=True, help="a dev corpus folder (DIR/gold.jsonl, DIR/warc)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--config", default=None)
    parser.add_argument("--share", type=float, default=0.1, help="share of pages given an injected copy")
    parser.add_argument("--processes", type=int, default=None)
    args = parser.parse_args(argv)
    config = load_config(args.config)
    if not config.duplicates.enabled:
        config = dataclasses.replace(config, duplicates=dataclasses.replace(config.duplicates, enabled=True))
    os.makedirs(args.out, exist_ok=True)
    results = [run_corpus(d, config, args.share, args.processes) for d in args.corpus]
    with open(os.path.join(args.out, "duplicates.json"), "w") as f:
        json.dump(results, f, indent=1)
    text = report(results)
    with open(os.path.join(args.out, "duplicates.md"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

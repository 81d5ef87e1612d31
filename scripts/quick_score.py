"""Score a sitestrip output against a corpus gold.jsonl (SPEC §9 word metrics).

    python scripts/quick_score.py OUTPUT_DIR GOLD_JSONL

Prints per-page mean and micro P/R/F1 of main_text and nontemplate_text, per
genre, and menu-link F1 where the gold has menu links. The benchmark command
will supersede this; it exists so numbers can be reported now.
"""
import json
import sys
from collections import defaultdict
from statistics import mean

import pyarrow.dataset as ds

from transforms.metrics import micro, set_prf, word_prf
from transforms.urls import normalize_url


def main(output, gold_path):
    rows = ds.dataset(f"{output}/pages", format="parquet").to_table(
        columns=["url", "main_text", "nontemplate_text", "menu_links", "method"]).to_pylist()
    by_url = {r["url"]: r for r in rows}
    gold = [json.loads(line) for line in open(gold_path, encoding="utf-8")]
    scores = defaultdict(lambda: defaultdict(list))
    missing = 0
    for g in gold:
        row = by_url.get(normalize_url(g["url"]))
        if row is None:
            missing += 1
            continue
        for genre in ("all", g.get("genre") or "?"):
            scores[genre]["main"].append(word_prf(row["main_text"], g["main_text"]))
            scores[genre]["nontemplate"].append(word_prf(row["nontemplate_text"], g["main_text"]))
            if g.get("menu_links"):
                got = [normalize_url(m["url"]) for m in row["menu_links"] or []]
                want = [normalize_url(u) for u in g["menu_links"]]
                scores[genre]["menu"].append(set_prf(got, want))
    print(f"{gold_path}: {len(gold)} gold pages, {missing} without a row")
    for genre, by_field in scores.items():
        for field, s in by_field.items():
            m = micro(s)
            print(f"  {genre:14s} {field:12s} n={len(s):4d}  mean P {mean(x.precision for x in s):.3f} "
                  f"R {mean(x.recall for x in s):.3f} F1 {mean(x.f1 for x in s):.3f}   "
                  f"micro P {m.precision:.3f} R {m.recall:.3f} F1 {m.f1:.3f}")


if __name__ == "__main__":
    main(*sys.argv[1:3])

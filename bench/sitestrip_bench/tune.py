"""Settle the tuned parameters (docs/design.md) on the dev corpora: a staged, coarse grid.

Each stage varies one group of parameters with everything else at the best
values found so far (coordinate descent from the shipped defaults); the stage's
winner is carried into the next stage. A stage is judged by the field it acts
on: site-ConEx choices by `main_text` word F1, template choices by
`nontemplate_text` word F1 (gold is the main content, so text left outside the
template that is not main content costs precision), each as the mean over
corpora of the per-page mean F1 (every corpus weighs the same; micro F1 breaks
ties). Results are cached per configuration, so an interrupted run resumes.

Only the dev corpora are used: the choices are not fitted to anything
the benchmark later reports as held out.
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import time
from dataclasses import dataclass

import yaml

from sitestrip_bench.core import extract_rows, load_corpus
from sitestrip_bench.corpora import Corpus
from sitestrip_bench.scoring import aggregate, score_texts
from sitestrip.configs import DEFAULT_CONFIG, config_from_dict


@dataclass(frozen=True)
class Stage:
    name: str
    judged_by: str                   # "main_text" or "nontemplate_text"
    variants: tuple                  # (label, overrides) pairs; overrides = {"section.key": value}


def _weights(section: str, wc, wp, wa, wch, t, option=None) -> dict:
    out = {f"{section}.w_classes": wc, f"{section}.w_position": wp,
           f"{section}.w_attributes": wa, f"{section}.w_children": wch, f"{section}.threshold": t}
    if option is not None:
        out[f"{section}.position_option"] = option
    return out


STAGES = (
    Stage("text_equality", "main_text", (
        ("both on", {"template_etdm.text_equality": True, "site_conex_etdm.text_equality": True}),
        ("TemEx off", {"template_etdm.text_equality": False, "site_conex_etdm.text_equality": True}),
        ("site ConEx off", {"template_etdm.text_equality": True, "site_conex_etdm.text_equality": False}),
        ("both off", {"template_etdm.text_equality": False, "site_conex_etdm.text_equality": False}),
    )),
    Stage("site_conex_variant", "main_text", (
        ("text_aware, branch by words, content-aware merge",
         {"site_conex.variant": "text_aware", "site_conex.branch": "words", "site_conex.merge": "content"}),
        ("text_aware, published Alg. 13 + 15",
         {"site_conex.variant": "text_aware", "site_conex.branch": "nodes", "site_conex.merge": "always"}),
        ("published, branch by words, content-aware merge",
         {"site_conex.variant": "published", "site_conex.branch": "words", "site_conex.merge": "content"}),
        ("published (Alg. 12-15 as printed)",
         {"site_conex.variant": "published", "site_conex.branch": "nodes", "site_conex.merge": "always"}),
    )),
    Stage("template_position_option", "nontemplate_text", tuple(
        (f"option {o}", {"template_etdm.position_option": o}) for o in (1, 2, 3, 4))),
    Stage("template_n_votes", "nontemplate_text", tuple(
        (f"n={n} v={v}", {"candidates.template_n": n, "template.votes": v})
        for n, v in ((2, 1), (2, 2), (3, 2), (3, 3), (4, 2), (4, 3)))),
    Stage("template_weights", "nontemplate_text", (
        ("published 0.1/0.1/0.5/0.3 t=0.7", _weights("template_etdm", 0.1, 0.1, 0.5, 0.3, 0.7)),
        ("0.1/0.1/0.5/0.3 t=0.8", _weights("template_etdm", 0.1, 0.1, 0.5, 0.3, 0.8)),
        ("0.3/0.1/0.3/0.3 t=0.7", _weights("template_etdm", 0.3, 0.1, 0.3, 0.3, 0.7)),
        ("0.1/0.0/0.2/0.7 t=0.9", _weights("template_etdm", 0.1, 0.0, 0.2, 0.7, 0.9)),
    )),
    Stage("conex_n", "main_text", tuple(
        (f"n={n}", {"candidates.conex_n": n}) for n in (3, 4, 5))),
    Stage("conex_weights", "main_text", (
        ("published 0.1/0.0/0.2/0.7 t=0.9 opt 4", _weights("site_conex_etdm", 0.1, 0.0, 0.2, 0.7, 0.9, 4)),
        ("0.1/0.0/0.2/0.7 t=0.8", _weights("site_conex_etdm", 0.1, 0.0, 0.2, 0.7, 0.8, 4)),
        ("0.1/0.1/0.5/0.3 t=0.7 opt 2", _weights("site_conex_etdm", 0.1, 0.1, 0.5, 0.3, 0.7, 2)),
        ("0.2/0.1/0.2/0.5 t=0.9 opt 2", _weights("site_conex_etdm", 0.2, 0.1, 0.2, 0.5, 0.9, 2)),
        ("0.3/0.0/0.3/0.4 t=0.9 opt 4", _weights("site_conex_etdm", 0.3, 0.0, 0.3, 0.4, 0.9, 4)),
    )),
    Stage("link_blocks", "main_text", (
        ("link-dense blocks and comments dropped (0.67)", {"link_blocks.enabled": True,
                                                          "link_blocks.max_link_density": 0.67,
                                                          "link_blocks.listing_link_density": 0.67,
                                                          "link_blocks.drop_comments": True}),
        ("off", {"link_blocks.enabled": False}),
        ("link-dense blocks only (0.67)", {"link_blocks.enabled": True, "link_blocks.drop_comments": False}),
        ("blocks 0.5, listing 0.5", {"link_blocks.enabled": True, "link_blocks.max_link_density": 0.5,
                                     "link_blocks.listing_link_density": 0.5}),
        ("blocks 0.67, listing 0.4", {"link_blocks.enabled": True, "link_blocks.max_link_density": 0.67,
                                      "link_blocks.listing_link_density": 0.4}),
    )),
)


def default_config_dict() -> dict:
    with open(DEFAULT_CONFIG, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def apply_overrides(base: dict, overrides: dict) -> dict:
    out = copy.deepcopy(base)
    for dotted, value in overrides.items():
        section, key = dotted.split(".", 1)
        out.setdefault(section, {})[key] = value
    return out


def _key(config_dict: dict) -> str:
    return hashlib.sha1(json.dumps(config_dict, sort_keys=True).encode()).hexdigest()[:16]


def evaluate(corpora: list[Corpus], loaded: dict, config_dict: dict, processes: int | None = None) -> dict:
    """Per corpus: main and nontemplate aggregates (as dicts) under one configuration."""
    config = config_from_dict(config_dict)
    result = {}
    for corpus in corpora:
        started = time.monotonic()
        rows = extract_rows(loaded[corpus.name], config, processes)
        main = {r["url_normalized"]: r["main_text"] for r in rows}
        nontemplate = {r["url_normalized"]: r["nontemplate_text"] for r in rows}
        result[corpus.name] = {
            "main_text": aggregate([s.words for s in score_texts("p", corpus.gold, main)]).as_dict(),
            "nontemplate_text": aggregate(
                [s.words for s in score_texts("p", corpus.gold, nontemplate)]).as_dict(),
            "seconds": round(time.monotonic() - started, 1),
        }
    return result


def objective(result: dict, field: str) -> tuple:
    """(mean over corpora of per-page mean F1, mean of micro F1)."""
    names = [n for n in result if isinstance(result[n], dict) and field in result[n]]
    mean_f1 = sum(result[n][field]["mean_f1"] for n in names) / len(names)
    micro_f1 = sum(result[n][field]["micro_f1"] for n in names) / len(names)
    return round(mean_f1, 4), round(micro_f1, 4)


def select_stages(names) -> tuple:
    """The named stages of STAGES, in grid order; unknown names are an error."""
    if not names:
        return STAGES
    known = {s.name for s in STAGES}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown stage(s) {', '.join(unknown)}; known: {', '.join(s.name for s in STAGES)}")
    return tuple(s for s in STAGES if s.name in names)


def run_grid(corpora: list[Corpus], out_dir: str, *, processes: int | None = None,
             stages=STAGES, log=print) -> dict:
    """Run the staged grid; returns {"stages": [...], "final": config dict}. Cached in out_dir."""
    os.makedirs(out_dir, exist_ok=True)
    cache_path = os.path.join(out_dir, "tune-cache.json")
    cache = {}
    if os.path.exists(cache_path):
        with open(cache_path, encoding="utf-8") as fh:
            cache = json.load(fh)
    log(f"reading {len(corpora)} corpora once")
    current = default_config_dict()
    # Parsed once, under default.yaml's read rules: no stage varies them.
    read = config_from_dict(current).read
    loaded = {c.name: load_corpus(c.warc_paths, read) for c in corpora}
    report = {"corpora": [c.name for c in corpora], "stages": []}
    for stage in stages:
        rows = []
        for label, overrides in stage.variants:
            candidate = apply_overrides(current, overrides)
            key = _key({"corpora": sorted(c.name for c in corpora), "config": candidate})
            if key not in cache:
                started = time.monotonic()
                cache[key] = evaluate(corpora, loaded, candidate, processes)
                cache[key]["_seconds"] = round(time.monotonic() - started, 1)
                with open(cache_path, "w") as fh:
                    json.dump(cache, fh, indent=1, sort_keys=True)
            result = cache[key]
            rows.append({"label": label, "overrides": overrides, "result": result,
                         "objective": objective(result, stage.judged_by),
                         "main": objective(result, "main_text"),
                         "nontemplate": objective(result, "nontemplate_text")})
            log(f"  {stage.name:26s} {label:48s} main {rows[-1]['main']} "
                f"nontemplate {rows[-1]['nontemplate']} ({result.get('_seconds', 0)} s)")
        best = max(rows, key=lambda r: r["objective"])
        # A variant must beat the incumbent (the values already in `current`) to replace it,
        # so a tie keeps the published or shipped value.
        incumbent = next((r for r in rows if all(
            _get(current, k) == v for k, v in r["overrides"].items())), None)
        if incumbent is not None and incumbent["objective"] >= best["objective"]:
            best = incumbent
        current = apply_overrides(current, best["overrides"])
        report["stages"].append({"name": stage.name, "judged_by": stage.judged_by,
                                 "rows": rows, "winner": best["label"]})
        log(f"  → {stage.name}: {best['label']}")
    report["final"] = current
    with open(os.path.join(out_dir, "tune.json"), "w") as fh:
        json.dump(report, fh, indent=1)
    return report


def _get(config_dict: dict, dotted: str):
    section, key = dotted.split(".", 1)
    return config_dict.get(section, {}).get(key)


def markdown_table(report: dict) -> str:
    """The comparison table of every stage: per corpus main / nontemplate mean F1."""
    names = report["corpora"]
    lines = []
    for stage in report["stages"]:
        lines.append(f"### {stage['name']} (judged by {stage['judged_by']} F1; winner: {stage['winner']})")
        lines.append("")
        header = "| variant | " + " | ".join(names) + " | mean over corpora (per-page mean / micro) |"
        lines.append(header)
        lines.append("|" + "---|" * (len(names) + 2))
        field = stage["judged_by"]
        for row in stage["rows"]:
            cells = [f"{row['result'][n][field]['mean_f1']:.3f} / {row['result'][n][field]['micro_f1']:.3f}"
                     for n in names]
            mark = "**" if row["label"] == stage["winner"] else ""
            lines.append(f"| {mark}{row['label']}{mark} | " + " | ".join(cells)
                         + f" | {mark}{row['objective'][0]:.3f} / {row['objective'][1]:.3f}{mark} |")
        lines.append("")
    return "\n".join(lines)

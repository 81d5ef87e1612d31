"""Where a run's CPU goes, the stages' clocks and what lies outside them: `sitestrip run` in
this process, with the thread CPU time of named steps.

    sitestrip-bench steps CORPUS [--config NAME|FILE] [--work DIR] [--json FILE]

A pages row's `timing_ms` times the per-page stages inside the read step and the per-site
step. A run also pays for what no stage clock holds: the spill, the part writer, and the
untimed Python of the per-site step (records unpacked, each page's first unpacking for the
shard's key links, the held texts packed, the site menus, the row assembled). Here the run's
steps (its DoFns' `process`, a generator timed step by step) and named functions inside the
per-site step are wrapped, for the one run, so that each adds the thread CPU time of its
calls (an inner call of a step to itself counts once); the functions are put back after the
run. Per page, it prints:

- each step's CPU ms a page (its calls and CPU seconds beside it); a step written "· name" is
  part of the step above it, not added to it;
- the stages' means from the run's own pages rows (`timing_ms`);
- the read step less its `read` and `parse` stages, and the per-site step less the stages
  it times (every stage but those two, `etdm` inside `template` and `total`): the untimed
  work of each.

A wrapper adds about 1.5 µs a call (two reads of the thread CPU clock, a system call each,
and its own Python), which the step it times and every step around it carry: a few per cent
of a small step. The run is the local runner's one worker, with start-up included in the
process CPU (its steps' times are not). `sitestrip-bench speed` gives the throughput past
start-up, `sitestrip-bench profile` a cProfile of the per-site step.
"""
from __future__ import annotations

import argparse
import collections
import functools
import importlib
import inspect
import json
import os
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager, redirect_stdout

from sitestrip_bench.stages import stage_percentiles

# (label, "module:attribute path"). Two targets with one label add up. The first six are a
# run's steps (its DoFns); the others run inside the per-site step, looked up where that step
# calls them (transforms/site_step.py's names).
STEPS = (
    ("read step", "sitestrip.pipeline.graph:ReadWarcFile.process"),
    ("spill", "sitestrip.pipeline.partitions:SpillPages.process"),
    ("per-site step", "sitestrip.pipeline.graph:ProcessSite.process"),
    ("· records unpacked", "sitestrip.pipeline.graph:unpacked_records"),
    ("· key links (a page's first unpacking)", "sitestrip.transforms.site_step:page_key_links"),
    ("· cluster signatures", "sitestrip.transforms.site_step:page_signature"),
    ("· every page's blocks", "sitestrip.transforms.site_step:SiteBlocks.prepare_page"),
    ("· page analysed", "sitestrip.transforms.site_step:analyse_page"),
    ("· · block features", "sitestrip.transforms.site_step:block_features"),
    ("· · · role columns", "sitestrip.transforms.features:_role_columns"),
    ("· · block model, page type, region", "sitestrip.transforms.site_step:classify_page"),
    ("· · · page type features", "sitestrip.transforms.classify:page_type_features"),
    ("· · · page type model", "sitestrip.transforms.classify:page_type_proba"),
    ("· · · region features and model", "sitestrip.transforms.classify:region_proba"),
    ("· · · region features and model", "sitestrip.transforms.classify:owner_ancestors"),
    ("· page links", "sitestrip.transforms.site_step:_page_outlinks"),
    ("· row assembled", "sitestrip.transforms.site_step:_site_row"),
    ("· · main columns (main text, Markdown, language)", "sitestrip.transforms.site_step:_main_columns"),
    ("· · non-template text", "sitestrip.transforms.site_step:text_of"),
    ("· duplicate fingerprint", "sitestrip.transforms.site_step:fingerprint"),
    ("· held texts packed", "sitestrip.transforms.site_step:held_row"),
    ("· site menus", "sitestrip.transforms.site_step:_apply_site_menus"),
    ("part writer", "sitestrip.pipeline.parts:_WritePart.process"),
    ("rows keyed for their parts", "sitestrip.pipeline.parts:_KeyedRows.process"),
    ("links' targets looked up", "sitestrip.pipeline.graph:_LinksPresentIn.process"),
)
# The stages each step's clock covers (the rest of the step is untimed).
_READ_STAGES = ("read", "parse")
_NOT_ADDED = ("etdm", "total")


def resolve(target: str) -> tuple[object, str]:
    """(owner, attribute name) of "module:a.b.c": the object holding the attribute and its
    name. Raises AttributeError or ImportError where the product no longer has it."""
    module_name, _, path = target.partition(":")
    owner = importlib.import_module(module_name)
    *outer, name = path.split(".")
    for part in outer:
        owner = getattr(owner, part)
    getattr(owner, name)
    return owner, name


def _timed(fn, label: str, cpu: collections.Counter, calls: collections.Counter):
    depth = [0]

    def timed_iterator(iterator):
        while True:
            depth[0] += 1
            start = time.thread_time()
            try:
                item = next(iterator)
            except StopIteration:
                return
            finally:
                cpu[label] += time.thread_time() - start
                depth[0] -= 1
            yield item

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if depth[0]:
            return fn(*args, **kwargs)
        calls[label] += 1
        depth[0] += 1
        start = time.thread_time()
        try:
            out = fn(*args, **kwargs)
        finally:
            cpu[label] += time.thread_time() - start
            depth[0] -= 1
        return timed_iterator(out) if inspect.isgenerator(out) else out

    return wrapper


@contextmanager
def timed_steps(steps=STEPS):
    """Within the block, every target of `steps` adds its calls' thread CPU seconds to
    cpu[label] and its calls to calls[label]; yields (cpu, calls). A generator's time is its
    steps' (the caller's time between them is not its own). Every target is put back on exit,
    whatever the block raised."""
    cpu: collections.Counter = collections.Counter()
    calls: collections.Counter = collections.Counter()
    saved = []
    try:
        for label, target in steps:
            owner, name = resolve(target)
            original = owner.__dict__[name] if name in vars(owner) else None
            saved.append((owner, name, original))
            setattr(owner, name, _timed(getattr(owner, name), label, cpu, calls))
        yield cpu, calls
    finally:
        for owner, name, original in reversed(saved):
            if original is None:
                delattr(owner, name)
            else:
                setattr(owner, name, original)


def step_table(cpu: dict, calls: dict, stage_ms: dict, pages: int, steps=STEPS) -> dict:
    """The figures `steps` prints: per step label (in `steps` order) its calls, CPU s and ms a
    page; per stage (`stage_ms`: its CPU ms summed over the pages rows) its ms a page; and the
    untimed part of the read and per-site steps."""
    n = max(pages, 1)
    labels = list(dict.fromkeys(label for label, _ in steps))
    table = {"pages": pages, "steps": {}, "stages": {}, "untimed": {}}
    for label in labels:
        table["steps"][label] = {"calls": int(calls.get(label, 0)), "cpu_s": round(cpu.get(label, 0.0), 3),
                                 "ms_per_page": round(1000 * cpu.get(label, 0.0) / n, 3)}
    for stage, total in stage_ms.items():
        table["stages"][stage] = round(total / n, 3)
    read_stages = sum(stage_ms.get(s, 0.0) for s in _READ_STAGES)
    site_stages = sum(total for stage, total in stage_ms.items() if stage not in _READ_STAGES + _NOT_ADDED)
    if "read step" in cpu:
        table["untimed"]["read step outside read and parse"] = round((1000 * cpu["read step"] - read_stages) / n, 3)
    if "per-site step" in cpu:
        table["untimed"]["per-site step outside its stages"] = round((1000 * cpu["per-site step"] - site_stages) / n, 3)
    return table


def markdown(table: dict, name: str, process_cpu: float) -> str:
    lines = [f"## {name}: {table['pages']} pages, process CPU {process_cpu:.2f} s (start-up included)", "",
             "| step | calls | CPU s | CPU ms a page |", "|---|---|---|---|"]
    for label, got in table["steps"].items():
        lines.append(f"| {label} | {got['calls']} | {got['cpu_s']:.3f} | {got['ms_per_page']:.3f} |")
    lines += ["", "| stage (timing_ms) | CPU ms a page |", "|---|---|"]
    lines += [f"| {stage} | {ms:.3f} |" for stage, ms in table["stages"].items()]
    lines += ["", "| untimed | CPU ms a page |", "|---|---|"]
    lines += [f"| {label} | {ms:.3f} |" for label, ms in table["untimed"].items()]
    return "\n".join(lines)


def measure(inputs: list[str], work: str, config: str | None = None, steps=STEPS) -> tuple[dict, float]:
    """(step_table, process CPU s) of one `sitestrip run` of `inputs` into `work`/out."""
    import pyarrow.parquet as pq
    from sitestrip.pipeline.cli import main as sitestrip

    out = os.path.join(work, "out")
    shutil.rmtree(out, ignore_errors=True)
    argv = ["run", "--input", *inputs, "--output", out, "--quiet"] + (["--config", config] if config else [])
    # The run's own summary goes to stderr: stdout is the table.
    with timed_steps(steps) as (cpu, calls), redirect_stdout(sys.stderr):
        start = time.process_time()
        code = sitestrip(argv)
        process_cpu = time.process_time() - start
    if code != 0:
        raise RuntimeError(f"sitestrip run exited {code}")
    timings = pq.read_table(os.path.join(out, "pages"), columns=["timing_ms"]).column("timing_ms").to_pylist()
    # Each stage's CPU summed over the pages rows (the stages' shared percentiles, in ms).
    stage_ms = {stage: 1000 * got["total_s"] for stage, got in stage_percentiles(timings).items()}
    return step_table(cpu, calls, stage_ms, len(timings), steps), process_cpu


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="sitestrip-bench steps", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", help="a corpus folder (with warc/) or WARC files' folder")
    parser.add_argument("--config", default=None, help="preset name or file (default: configs/default.yaml)")
    parser.add_argument("--work", default=None, help="where the run writes (default: a temporary folder)")
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    args = parser.parse_args(argv)
    warc = os.path.join(args.corpus, "warc")
    inputs = [warc if os.path.isdir(warc) else args.corpus]
    work = args.work or tempfile.mkdtemp(prefix="sitestrip-steps-")
    try:
        table, process_cpu = measure(inputs, work, args.config)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    name = os.path.basename(os.path.normpath(args.corpus))
    print(markdown(table, name, process_cpu))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"corpus": name, "process_cpu_s": round(process_cpu, 3), **table}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

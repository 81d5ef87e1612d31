"""How sitestrip scales: site size, page size, workers, and memory.

One subcommand per measurement. Each prints Markdown tables; `--json FILE` (before the
subcommand, like `--work`) also writes the numbers. Inputs and run outputs go under `--work` (default /tmp/sitestrip-scaling); the
synthetic sites are generated there once and reused (they are deterministic).

    # $CORPORA: a directory of corpus directories, each warc/*.warc.gz + gold.jsonl
    S="-m sitestrip_bench.scaling"; C=$CORPORA     # or: sitestrip-bench scaling ...
    # a. a synthetic site of N pages (one host, a docs-like template), as WARC files
    python $S synth --pages 2000 --out /tmp/synth-2000
    # b. cost per page as a site grows: the site step in process (CPU ms per page) for
    #    synthetic sites of 10..2,000 pages and the first N pages of the largest real sites,
    #    and the whole `sitestrip run` (wall, CPU) on the synthetic sites; --chart draws the curve
    python $S --json /tmp/curve.json curve --real $C/docsites-dev --chart docs/bench/scaling.png
    # c. nodes per page against CPU ms per stage, from a pipeline run's rows
    python $S nodes --corpus $C/docsites-dev --corpus $C/news-ctf2015-dev
    # d. --workers 1 against --workers 2, end to end (wall, pages/s, peak RSS of the process tree)
    python $S workers --corpus $C/docsites-dev --corpus $C/news-ctf2015-dev
    # e. peak RSS (1 worker) against the input size at a fixed shard size, and on the dev corpora
    python $S rss --synthetic 2000 5000 10000 20000 --corpus $C/docsites-dev ...
    #    and what holds it: the pipeline in this process, RSS and the runner's buffers per stage
    python $S memory --corpus $C/docsites-dev --trim
    #    peak RSS against input size, before and after a change (rss --json files)
    python $S chart-rss "before=/tmp/before.json" "after=/tmp/after.json" --out docs/bench/scaling-rss.png
    # everything above, one after the other (about 40 minutes on 2 idle cores)
    python $S all --corpora $C --json docs/bench/scaling.json --chart docs/bench/scaling.png
    # and apart from `all`: the per-site step's instructions, which do not move with the
    # machine's load (a corpus's count minus its --load-only count; docs/performance.md,
    # "Reproducing the numbers")
    valgrind --tool=callgrind python $S site-step --corpus $C/news-ctf2010-dev
    valgrind --tool=callgrind python $S site-step --corpus $C/news-ctf2010-dev --load-only

CPU time is the measure of cost: on a shared machine wall time moves with the load, CPU
time much less. The site step's CPU is time.process_time() around `process_site`; a
pipeline run's CPU is the sum over its process tree (/proc/PID/stat utime + stime of every
process, last sample before it ended) and the user + system time /usr/bin/time reports.

Peak memory of a run: /usr/bin/time -v reports the largest single process's peak RSS
(ru_maxrss of the waited-for children), not the sum over workers. A sampler thread reads
/proc every 0.1 s for every process descended from the run and records the peak of the
summed RSS and of the summed PSS (proportional set size: shared pages, e.g. the libraries
that every worker maps, split between the processes), and each process's own VmHWM.

`memory` wraps FnApiRunner._execute_bundle and reads the runner's buffers (Beam 2.77
internals): a measuring tool, to be checked when Beam is upgraded.

Not part of the test suite.
"""
from __future__ import annotations

import argparse
import gc
import glob
import json
import math
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict

import numpy as np

from sitestrip.schemas.tables import TIMING_STAGES

WORK = os.path.join(tempfile.gettempdir(), "sitestrip-scaling")
HOST = "docs.synthdoc.example"
SECTION_PAGES = 100          # pages per first-level directory of the synthetic site
PAGES_PER_FILE = 500         # WARC responses per synthetic file (the dev corpora have 80-420)
CURVE_SIZES = (10, 50, 200, 500, 1000, 2000)
REAL_SIZES = (10, 50, 100, 200, 300)
# The row's stages (schemas TIMING_STAGES) the scaling tables show, as in docs/performance.md:
# all but read, site_conex, duplicates and links.
STAGES = tuple(s for s in TIMING_STAGES if s not in ("read", "site_conex", "duplicates", "links"))
CLI = [sys.executable, "-m", "sitestrip.pipeline.cli", "run", "--quiet"]


# --------------------------------------------------------------------------------------------
# a. The synthetic site


_COMMON = ("the of and to in is for that with as on by this be are it from or an can which when "
           "you use each all not if will one any new first value option file default must may set "
           "should other only more see also returns given data system server page call list").split()
_SYLLABLES = ("ka to ri mon sel va pra dun el or ix qua ter lo men sta bri co fel gar hu "
              "in jo kel lum ne op pe rus si tan ur vel wo xen yo zar").split()


def _vocabulary(seed: int, size: int = 3000) -> list[str]:
    rng = random.Random(seed)
    words = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


class SyntheticSite:
    """N pages of one host with a documentation site's template.

    Template (on every page, the same except where said): a header with the site's name
    and a tagline; a nav menu (home and the first eight section index pages); a sidebar
    listing the page's section neighbours (up to 5 on each side: varies per page, as in real
    manuals) with a constant note; a breadcrumb; prev/next links; a footer with two
    constant paragraphs and links. Main content per page: a title and 1-200 blocks (median
    12, log-normal: paragraphs, lists, code, tables under h2 headings), with inline links to
    nearby pages of the section and to anywhere in the site. Pages i and i+1..i+5 of one
    section link to each other through the sidebar, so complete subdigraphs exist.

    Deterministic: page i depends on (seed, i) and on N only through link targets and the
    sidebar's clipping at the site's end.
    """

    def __init__(self, pages: int, seed: int | str = 7, host: str = HOST, words: list[str] | None = None):
        self.pages, self.seed, self.host = pages, seed, host
        self.words = words if words is not None else _vocabulary(seed)

    def _rng(self, *key: int) -> random.Random:
        # A str seed is hashed with SHA-512: the same numbers in every process and version.
        return random.Random(f"{self.seed}:{':'.join(map(str, key))}")

    def _phrase(self, rng: random.Random, n: int) -> str:
        return " ".join(rng.choice(_COMMON) if rng.random() < 0.45 else rng.choice(self.words)
                        for _ in range(n))

    def section_slug(self, s: int) -> str:
        return f"s{s:03d}-{self._rng(1, s).choice(self.words)}"

    def title(self, i: int) -> str:
        return self._phrase(self._rng(2, i), 3).capitalize()

    def url(self, i: int) -> str:
        s, k = divmod(i, SECTION_PAGES)
        if k == 0:
            return f"https://{self.host}/{self.section_slug(s)}/"
        return f"https://{self.host}/{self.section_slug(s)}/{self.title(i).lower().replace(' ', '-')}-{i}.html"

    def _paragraph(self, rng: random.Random, i: int) -> str:
        words = self._phrase(rng, rng.randint(15, 90)).split()
        if rng.random() < 0.35:
            j = self._link_target(rng, i)
            at = rng.randrange(len(words))
            words[at] = f'<a href="{self.url(j)}">{words[at]}</a>'
        if rng.random() < 0.3:
            at = rng.randrange(len(words))
            words[at] = f"<code>{words[at]}()</code>"
        return "<p>" + " ".join(words).capitalize() + ".</p>"

    def _link_target(self, rng: random.Random, i: int) -> int:
        if rng.random() < 0.6:
            return max(0, min(self.pages - 1, i + rng.randint(-10, 10)))
        return rng.randrange(self.pages)

    def _block(self, rng: random.Random, i: int) -> str:
        kind = rng.random()
        if kind < 0.70:
            return self._paragraph(rng, i)
        if kind < 0.82:
            items = "".join(f"<li>{self._phrase(rng, rng.randint(3, 14))}</li>" for _ in range(rng.randint(3, 8)))
            return f"<ul>{items}</ul>"
        if kind < 0.92:
            lines = "\n".join(f"{rng.choice(self.words)}({rng.choice(self.words)}, {rng.randint(0, 99)});"
                              for _ in range(rng.randint(2, 12)))
            return f'<pre class="code">{lines}</pre>'
        rows = "".join("<tr>" + "".join(f"<td>{self._phrase(rng, rng.randint(1, 4))}</td>" for _ in range(4))
                       + "</tr>" for _ in range(rng.randint(2, 8)))
        return f'<table class="params"><tr><th>Name</th><th>Type</th><th>Default</th><th>Meaning</th></tr>{rows}</table>'

    def html(self, i: int) -> bytes:
        rng = self._rng(3, i)
        s, _k = divmod(i, SECTION_PAGES)
        first, last = s * SECTION_PAGES, min(self.pages, (s + 1) * SECTION_PAGES) - 1
        nav = "".join(f'<li><a href="https://{self.host}/{self.section_slug(t)}/">{self.title(t * SECTION_PAGES)}</a></li>'
                      for t in range(8))
        sidebar = "".join(
            f'<li{" class=current" if j == i else ""}><a href="{self.url(j)}">{self.title(j)}</a></li>'
            for j in range(max(first, i - 5), min(last, i + 5) + 1))
        blocks = max(1, min(200, int(math.exp(rng.gauss(math.log(12), 1.0)))))
        body, done = [], 0
        while done < blocks:
            body.append(f"<h2>{self._phrase(rng, rng.randint(2, 6)).capitalize()}</h2>")
            n = min(blocks - done, rng.randint(2, 6))
            body.extend(self._block(rng, i) for _ in range(n))
            done += n
        prev = f'<a rel="prev" href="{self.url(i - 1)}">Previous: {self.title(i - 1)}</a>' if i > 0 else ""
        nxt = (f'<a rel="next" href="{self.url(i + 1)}">Next: {self.title(i + 1)}</a>'
               if i + 1 < self.pages else "")
        title = self.title(i)
        return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title} &mdash; Synthdoc 4.2 Manual</title>
<meta name="description" content="{self._phrase(rng, 12)}">
<link rel="stylesheet" href="https://{self.host}/static/site.css"></head>
<body>
<header class="site-header"><div class="logo"><a href="{self.url(0)}">Synthdoc</a></div>
<p class="tagline">The reference manual of the Synthdoc toolkit, version 4.2.</p>
<nav class="main-nav"><ul><li><a href="https://{self.host}/">Home</a></li>{nav}</ul></nav>
<form class="search" action="https://{self.host}/search"><input type="text" name="q"><button>Search</button></form>
</header>
<div class="container">
<aside class="sidebar"><h3>In this section</h3><ul>{sidebar}</ul>
<div class="sidebar-note"><p>This manual documents the current release. Older releases have their own manuals; see the download page.</p></div>
</aside>
<main class="content"><article>
<div class="breadcrumbs"><a href="https://{self.host}/">Home</a> &rsaquo; <a href="{self.url(s * SECTION_PAGES)}">{self.title(s * SECTION_PAGES)}</a> &rsaquo; {title}</div>
<h1>{title}</h1>
{"".join(body)}
<div class="pager">{prev} {nxt}</div>
</article></main></div>
<footer class="site-footer">
<p>Copyright &copy; 2026 The Synthdoc Project. Documentation licensed under CC BY 4.0.</p>
<p>Found a mistake? Report it on the issue tracker; every page has an edit link.</p>
<ul class="footer-links"><li><a href="https://{self.host}/about.html">About</a></li><li><a href="https://{self.host}/license.html">License</a></li><li><a href="https://{self.host}/contact.html">Contact</a></li></ul>
<p class="updated">Page generated on 2026-01-{1 + i % 28:02d}.</p>
</footer>
</body></html>
""".encode("utf-8")


def _reuse_or_clear(out: str, params: dict) -> list[str] | None:
    """The WARC files of `out` when they were written with `params`; else None, `out` emptied."""
    marker = os.path.join(out, "synthetic.json")
    if os.path.exists(marker):
        with open(marker) as fh:
            # Compared as JSON gives them back: a tuple in `params` is a list in the file.
            written = json.load(fh) == json.loads(json.dumps(params))
        found = sorted(glob.glob(os.path.join(out, "*.warc.gz")))
        if written and found:
            return found
        # The marker goes first: files half rewritten are never taken for a finished input.
        os.remove(marker)
    os.makedirs(out, exist_ok=True)
    for stale in glob.glob(os.path.join(out, "*.warc.gz")):
        os.remove(stale)
    return None


def _write_warcs(out: str, responses, pages_per_file: int, params: dict) -> list[str]:
    """(url, HTML bytes) responses, in order, as gzipped WARC files of `pages_per_file` each."""
    from sitestrip.pipeline.warc_writer import WarcWriter

    paths, fh, writer = [], None, None
    for n, (url, body) in enumerate(responses):
        if n % pages_per_file == 0:
            if fh is not None:
                fh.close()
            paths.append(os.path.join(out, f"synthetic-{len(paths):05d}.warc.gz"))
            fh = open(paths[-1], "wb")
            writer = WarcWriter(fh)
        writer.response(url, body, headers=[("Content-Type", "text/html; charset=utf-8"),
                                            ("Content-Length", str(len(body)))],
                        warc_headers={"WARC-Date": "2026-01-01T00:00:00Z",
                                      "WARC-Record-ID": f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, url)}>"})
    if fh is not None:
        fh.close()
    with open(os.path.join(out, "synthetic.json"), "w") as fh:
        json.dump(params, fh)
    return paths


def write_synthetic(out: str, pages: int, seed: int = 7, pages_per_file: int = PAGES_PER_FILE) -> list[str]:
    """The synthetic site as gzipped WARC files in `out` (reused if already written with the
    same parameters); returns their paths. Responses are in a seeded shuffled order, as a
    crawl interleaves a site's sections."""
    params = {"pages": pages, "seed": seed, "pages_per_file": pages_per_file, "host": HOST,
              "section_pages": SECTION_PAGES, "version": 2}
    found = _reuse_or_clear(out, params)
    if found is not None:
        return found
    site = SyntheticSite(pages, seed)
    order = list(range(pages))
    random.Random(seed).shuffle(order)
    return _write_warcs(out, ((site.url(i), site.html(i)) for i in order), pages_per_file, params)


def synthetic_dir(work: str, pages: int, seed: int = 7) -> str:
    return os.path.join(work, "synthetic", f"pages-{pages}-seed-{seed}")


# Sites of the multi-site input, by share of the sites drawn: (share, smallest, largest pages).
# Small sites are log-normal around 8 pages; a large site is over site.max_site_pages (2,000),
# so it is split into shards.
MULTI_SMALL, MULTI_MEDIUM, MULTI_LARGE = (0.84, 1, 150), (0.15, 150, 800), (0.01, 2500, 5000)


def multisite_sizes(pages: int, seed: int = 7) -> list[int]:
    """Pages per site of the multi-site input of `pages` pages: sites drawn one after the
    other from one seeded sequence until the pages are used up (the last one cut short), so
    a smaller input's sites are the first sites of a larger one's. 100,000 pages are 785
    sites, 31 % of the pages in the large ones; 1,000 pages are 12 sites, none of them large."""
    rng = random.Random(f"multisite:{seed}")
    sizes, left = [], pages
    while left > 0:
        draw = rng.random()
        if draw < MULTI_LARGE[0]:
            size = rng.randint(MULTI_LARGE[1], MULTI_LARGE[2])
        elif draw < MULTI_LARGE[0] + MULTI_MEDIUM[0]:
            size = rng.randint(MULTI_MEDIUM[1], MULTI_MEDIUM[2])
        else:
            size = max(MULTI_SMALL[1], min(MULTI_SMALL[2], int(math.exp(rng.gauss(math.log(8), 1.0)))))
        size = min(size, left)
        sizes.append(size)
        left -= size
    return sizes


def multisite_host(j: int) -> str:
    return f"docs{j:05d}.synth{j % 97:02d}.example"


def write_multisite(out: str, pages: int, seed: int = 7, pages_per_file: int = PAGES_PER_FILE) -> list[str]:
    """`pages` pages of many synthetic sites (`multisite_sizes`; each a SyntheticSite of its own
    host and seed, one shared vocabulary) as gzipped WARC files in `out`, the sites' pages
    interleaved in a seeded shuffled order as in a crawl's files."""
    params = {"pages": pages, "seed": seed, "pages_per_file": pages_per_file, "kind": "multisite",
              "section_pages": SECTION_PAGES, "sizes": [MULTI_SMALL, MULTI_MEDIUM, MULTI_LARGE], "version": 2}
    found = _reuse_or_clear(out, params)
    if found is not None:
        return found
    words = _vocabulary(seed)
    sites = [SyntheticSite(size, f"{seed}-{j}", multisite_host(j), words)
             for j, size in enumerate(multisite_sizes(pages, seed))]
    order = [(j, i) for j, site in enumerate(sites) for i in range(site.pages)]
    random.Random(seed).shuffle(order)
    return _write_warcs(out, ((sites[j].url(i), sites[j].html(i)) for j, i in order), pages_per_file, params)


def multisite_dir(work: str, pages: int, seed: int = 7) -> str:
    return os.path.join(work, "synthetic", f"multisite-{pages}-seed-{seed}")


# --------------------------------------------------------------------------------------------
# Running `sitestrip run` with its whole process tree measured


def _proc_table() -> dict[int, int]:
    """pid → parent pid of every process."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    stat = fh.read()
            except OSError:
                continue
            parents[int(entry)] = int(stat[stat.rindex(")") + 2:].split()[1])
    return parents


def _status_kb(pid: int, *fields: str) -> dict[str, int]:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                name = line.split(":", 1)[0]
                if name in fields:
                    out[name] = int(line.split()[1])
    except OSError:
        pass
    return out


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _cpu_s(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _cmd(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = fh.read().split(b"\0")
    except OSError:
        return "?"
    text = " ".join(a.decode("utf-8", "replace") for a in argv if a)
    if "sitestrip.pipeline.worker" in text:
        return "worker"
    if "sitestrip.pipeline.cli" in text or "sitestrip run" in text:
        return "main"
    return os.path.basename(argv[0].decode("utf-8", "replace")) if argv and argv[0] else "?"


class TreeSampler(threading.Thread):
    """Samples every process descended from `root` (not `root` itself) every `interval` s."""

    def __init__(self, root: int, interval: float = 0.1):
        super().__init__(daemon=True)
        self.root, self.interval = root, interval
        self.stop = threading.Event()
        # RssAnon apart: VmRSS also counts the shared libraries' pages the process touched,
        # which vary with the page cache by tens of MB between installs of the same packages.
        self.peak_rss_kb = self.peak_pss_kb = self.peak_anon_kb = 0
        self.hwm_kb: dict[int, int] = {}
        self.cpu: dict[int, float] = {}
        self.names: dict[int, str] = {}
        self.series: list[tuple[float, int, int, int]] = []     # (s, processes, rss kB, pss kB)
        self.started = time.monotonic()

    def run(self):
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(self.interval)
        self.sample()

    def sample(self):
        parents = _proc_table()
        children = defaultdict(list)
        for pid, ppid in parents.items():
            children[ppid].append(pid)
        tree, stack = [], list(children.get(self.root, ()))
        while stack:
            pid = stack.pop()
            tree.append(pid)
            stack.extend(children.get(pid, ()))
        rss = pss = anon = 0
        for pid in tree:
            status = _status_kb(pid, "VmRSS", "VmHWM", "RssAnon")
            if not status:
                continue
            if pid not in self.names:
                self.names[pid] = _cmd(pid)
            rss += status.get("VmRSS", 0)
            anon += status.get("RssAnon", 0)
            pss += _pss_kb(pid)
            self.hwm_kb[pid] = max(self.hwm_kb.get(pid, 0), status.get("VmHWM", 0))
            self.cpu[pid] = max(self.cpu.get(pid, 0.0), _cpu_s(pid))
        self.peak_rss_kb, self.peak_pss_kb = max(self.peak_rss_kb, rss), max(self.peak_pss_kb, pss)
        self.peak_anon_kb = max(self.peak_anon_kb, anon)
        self.series.append((round(time.monotonic() - self.started, 2), len(tree), rss, pss))


_TIME_FIELDS = {"User time (seconds)": "user_s", "System time (seconds)": "sys_s",
                "Maximum resident set size (kbytes)": "maxrss_kb",
                "Elapsed (wall clock) time (h:mm:ss or m:ss)": "wall"}


def _parse_time_v(text: str) -> dict:
    out = {}
    for line in text.splitlines():
        key, _, value = line.strip().rpartition(": ")
        if key in _TIME_FIELDS:
            if _TIME_FIELDS[key] == "wall":
                seconds = 0.0
                for part in value.split(":"):
                    seconds = seconds * 60 + float(part)
                out["time_wall_s"] = seconds
            else:
                out[_TIME_FIELDS[key]] = float(value)
    return out


def run_pipeline(inputs: list[str], output: str, workers: int = 1, extra: tuple = ()) -> dict:
    """One `sitestrip run --quiet` under /usr/bin/time -v, its process tree sampled."""
    argv = ["/usr/bin/time", "-v", *CLI, "--output", output, "--workers", str(workers), *extra,
            "--input", *inputs]
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    sampler = TreeSampler(proc.pid)
    sampler.start()
    stdout, stderr = proc.communicate()
    wall = time.monotonic() - started
    sampler.stop.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"sitestrip run failed ({proc.returncode}):\n{stdout[-2000:]}\n{stderr[-4000:]}")
    pages = int(re.search(r"^\s*pages: (\d+)", stdout, re.M).group(1))
    timed = _parse_time_v(stderr)
    by_kind: dict[str, list[int]] = defaultdict(list)
    for pid, hwm in sampler.hwm_kb.items():
        by_kind[sampler.names.get(pid, "?")].append(hwm)
    return {
        "workers": workers, "pages": pages, "wall_s": round(wall, 2),
        "pages_per_s": round(pages / wall, 1),
        "user_s": timed.get("user_s"), "sys_s": timed.get("sys_s"),
        "tree_cpu_s": round(sum(sampler.cpu.values()), 2),
        "maxrss_mb_time_v": round(timed.get("maxrss_kb", 0) / 1024),
        "peak_tree_rss_mb": round(sampler.peak_rss_kb / 1024),
        "peak_tree_pss_mb": round(sampler.peak_pss_kb / 1024),
        "peak_tree_anon_mb": round(sampler.peak_anon_kb / 1024),
        "peak_mb_by_process": {k: [round(v / 1024) for v in sorted(vs, reverse=True)] for k, vs in by_kind.items()},
        "rss_series": sampler.series[::max(1, len(sampler.series) // 400)],
        "summary": stdout.strip().splitlines(),
    }


# --------------------------------------------------------------------------------------------
# b. The site step in process


def warc_files(directory: str) -> list[str]:
    root = os.path.join(directory, "warc") if os.path.isdir(os.path.join(directory, "warc")) else directory
    return sorted(glob.glob(os.path.join(root, "**", "*.warc*"), recursive=True))


def _site_step_child(spec_json: str) -> None:
    """In a fresh process: [(label, warc paths, site or None, first N or None)] → one JSON line each:
    the site step's CPU seconds (process_site over the site's first N records in WARC order),
    per-stage p50/p99/mean CPU ms from the rows, and the process's peak RSS so far."""
    from sitestrip_bench.core import load_corpus
    from sitestrip.configs import load_config
    from sitestrip.transforms.classify import load_main_content_model
    from sitestrip.transforms.site_step import process_site

    config = load_config(None)
    model = load_main_content_model(config.main_content)
    loaded_cache: dict = {}
    warmed = False
    for label, paths, site, first in json.loads(spec_json):
        key = (tuple(paths), site)
        if key not in loaded_cache:
            loaded_cache.clear()
            gc.collect()
            loaded_cache[key] = load_corpus(paths, config.read, sites={site} if site else None)
        loaded = loaded_cache[key]
        site = site or max(loaded.records, key=lambda s: len(loaded.records[s]))
        records = loaded.records[site][:first] if first else loaded.records[site]
        if not warmed:      # imports, numpy and regex caches: once, not in the first size's cost
            list(process_site(site, records[:10], config, model))
            warmed = True
        gc.collect()
        start, wall = time.process_time(), time.monotonic()
        rows = [row for kind, row in process_site(site, records, config, model) if kind == "pages"]
        cpu = time.process_time() - start
        wall = time.monotonic() - wall
        stages = {}
        for stage in STAGES:
            values = np.array([r["timing_ms"][stage] for r in rows
                               if r.get("timing_ms") and r["timing_ms"].get(stage) is not None])
            if values.size:
                stages[stage] = [round(float(np.percentile(values, 50)), 2),
                                 round(float(np.percentile(values, 99)), 1), round(float(values.mean()), 2)]
        nodes = [r.page.size for r in records]
        print(json.dumps({"label": label, "site": site, "pages": len(records), "rows": len(rows),
                          "site_step_cpu_s": round(cpu, 3), "site_step_wall_s": round(wall, 3),
                          "cpu_ms_per_page": round(1000 * cpu / max(1, len(records)), 2),
                          "nodes_mean": round(float(np.mean(nodes)), 1),
                          "methods": dict(sorted(_count(r["candidate_method"] for r in rows).items())),
                          "stages": stages,
                          "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}),
              flush=True)


def cmd_site_step(args) -> dict:
    """The per-site step over every site of a corpus, in this process: each site's records
    packed and unpacked as the shuffle delivers them (pickle), then process_site over them in
    site order. Made to run under `valgrind --tool=callgrind`, whose instruction counts do not
    move with the machine's load: the step's count is a run's minus a `--load-only` run's
    (reading, parsing and pickling the corpus and loading the model, then no site)."""
    import pickle

    from sitestrip_bench.core import load_corpus
    from sitestrip.configs import load_config
    from sitestrip.transforms.classify import load_main_content_model
    from sitestrip.transforms.site_step import process_site

    config = load_config(None)
    model = load_main_content_model(config.main_content)
    out = {}
    for corpus in args.corpus:
        loaded = load_corpus(warc_files(corpus), config.read)
        packed = {site: [pickle.dumps(r, protocol=pickle.HIGHEST_PROTOCOL) for r in records]
                  for site, records in loaded.records.items()}
        del loaded
        gc.collect()
        start, rows = time.process_time(), 0
        if not args.load_only:
            for site in sorted(packed):
                records = [pickle.loads(b) for b in packed[site]]
                rows += sum(1 for _ in process_site(site, records, config, model))
        cpu = time.process_time() - start
        name = os.path.basename(corpus.rstrip(os.sep))
        out[name] = {"sites": len(packed), "pages": sum(len(v) for v in packed.values()), "rows": rows,
                     "site_step_cpu_s": round(cpu, 2), "load_only": bool(args.load_only)}
        print(f"{name}: {out[name]}")
    return out


def _count(values) -> dict:
    out: dict = defaultdict(int)
    for v in values:
        out[v] += 1
    return out


def site_step(specs: list) -> list[dict]:
    proc = subprocess.run([sys.executable, "-m", "sitestrip_bench.scaling", "_site-step", json.dumps(specs)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"site step failed:\n{proc.stderr[-4000:]}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def _largest_sites(directory: str, count: int) -> list[tuple[str, int]]:
    """The `count` sites with the most HTML pages in a corpus (by its gold URLs' hosts, or by reading)."""
    from sitestrip.transforms.urls import site_key
    gold = os.path.join(directory, "gold.jsonl")
    sizes: dict[str, int] = defaultdict(int)
    with open(gold) as fh:
        for line in fh:
            sizes[site_key(json.loads(line)["url"])] += 1
    return sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0]))[:count]


def cmd_curve(args) -> dict:
    result = {"synthetic_site_step": [], "real_site_step": [], "synthetic_pipeline": []}
    sizes = [int(s) for s in args.sizes]
    dirs = {n: synthetic_dir(args.work, n, args.seed) for n in sizes}
    for n in sizes:
        write_synthetic(dirs[n], n, args.seed)
    result["synthetic_site_step"] = site_step([[f"synthetic-{n}", warc_files(dirs[n]), None, None] for n in sizes])
    for corpus in args.real or ():
        for site, total in _largest_sites(corpus, args.real_sites):
            specs = [[f"{site}-{n}", warc_files(corpus), site, n] for n in REAL_SIZES if n <= total]
            result["real_site_step"].extend(site_step(specs))
    if not args.no_pipeline:
        for n in sizes:
            out = os.path.join(args.work, "runs", f"curve-synthetic-{n}")
            run = run_pipeline(warc_files(dirs[n]), out)
            run["site_pages"] = n
            result["synthetic_pipeline"].append(run)
    _print_curve(result)
    if args.chart:
        _chart(result, args.chart)
    return result


def _print_curve(result: dict) -> None:
    print("\n### Site step in process: CPU ms per page as a site grows\n")
    print("| site | pages | nodes/page | site step CPU s | CPU ms/page | parse p50 | etdm p50 / p99 | total p50 / p99 | peak RSS MB | methods |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in result["synthetic_site_step"] + result["real_site_step"]:
        st = r["stages"]
        print(f"| {r['site'] if not r['label'].startswith('synthetic') else 'synthetic'} | {r['pages']} | "
              f"{r['nodes_mean']:.0f} | {r['site_step_cpu_s']:.2f} | {r['cpu_ms_per_page']:.1f} | "
              f"{st.get('parse', [0])[0]:.1f} | {st.get('etdm', [0, 0])[0]:.1f} / {st.get('etdm', [0, 0])[1]:.1f} | "
              f"{st.get('total', [0, 0])[0]:.1f} / {st.get('total', [0, 0])[1]:.1f} | {r['peak_rss_mb']} | "
              f"{', '.join(f'{k} {v}' for k, v in r['methods'].items())} |")
    if result["synthetic_pipeline"]:
        print("\n### `sitestrip run` (1 worker) on the synthetic site\n")
        print("| pages | wall s | user+sys CPU s | CPU ms/page | marginal CPU ms/page | pages/s (wall) | peak RSS MB (tree) |")
        print("|---|---|---|---|---|---|---|")
        prev = None
        for r in result["synthetic_pipeline"]:
            cpu = (r["user_s"] or 0) + (r["sys_s"] or 0)
            marginal = "" if prev is None else f"{1000 * (cpu - prev[1]) / (r['pages'] - prev[0]):.1f}"
            print(f"| {r['pages']} | {r['wall_s']:.1f} | {cpu:.1f} | {1000 * cpu / r['pages']:.1f} | {marginal} | "
                  f"{r['pages_per_s']:.1f} | {r['peak_tree_rss_mb']} |")
            prev = (r["pages"], cpu)


def _chart(result: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    syn, runs = result["synthetic_site_step"], result["synthetic_pipeline"]
    by_site = defaultdict(list)
    for r in result["real_site_step"]:
        by_site[r["site"]].append(r)

    def run_cpu_ms(r):
        return 1000 * ((r["user_s"] or 0) + (r["sys_s"] or 0)) / r["pages"]

    # Per panel: the site step's value, the whole run's value and its legend, axis label, title, log y.
    panels = [(lambda r: r["cpu_ms_per_page"], run_cpu_ms, "sitestrip run (user+sys)", "site step",
               "CPU ms per page", "Cost per page as a site grows", True),
              (lambda r: r["peak_rss_mb"], lambda r: r["peak_tree_rss_mb"], "sitestrip run", "site step process",
               "peak RSS MB", "Peak RSS as a site grows", False)]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, (step_value, run_value, run_label, step_label, ylabel, title, log_y) in zip(axes, panels):
        if syn:
            ax.plot([r["pages"] for r in syn], [step_value(r) for r in syn], "o-", label=f"synthetic: {step_label}")
        if runs:
            ax.plot([r["pages"] for r in runs], [run_value(r) for r in runs], "s--", label=f"synthetic: {run_label}")
        for site, rows in by_site.items():
            ax.plot([r["pages"] for r in rows], [step_value(r) for r in rows], ".-", label=f"{site}: {step_label}")
        ax.set_xscale("log")
        if log_y:
            ax.set_yscale("log")
        ax.set_xlabel("pages of the site")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"\nchart: {path}")


# --------------------------------------------------------------------------------------------
# c. Nodes per page against ms


NODE_BUCKETS = (0, 250, 500, 1000, 2000, 4000, 8000, 16000, 10 ** 9)


def _node_counts(corpus: str) -> dict[tuple[str, int], int]:
    """(WARC file name, offset) → nodes of the compact page, parsed here as the pipeline parses."""
    from sitestrip_bench.core import load_corpus
    from sitestrip.configs import load_config
    loaded = load_corpus(warc_files(corpus), load_config(None).read)
    return {(os.path.basename(r.warc_file), r.warc_offset): r.page.size
            for records in loaded.records.values() for r in records}


def _run_rows(output: str) -> list[dict]:
    import pyarrow.dataset as ds
    table = ds.dataset(os.path.join(output, "pages"), format="parquet").to_table(
        columns=["url", "warc_file", "warc_offset", "timing_ms", "candidate_method"])
    return table.to_pylist()


def cmd_nodes(args) -> dict:
    result = {}
    for i, corpus in enumerate(args.corpus):
        name = os.path.basename(os.path.normpath(corpus))
        output = args.run[i] if args.run and i < len(args.run) else os.path.join(args.work, "runs", f"nodes-{name}")
        if not (args.run and i < len(args.run)):
            run_pipeline(warc_files(corpus), output)
        nodes = _node_counts(corpus)
        rows = []
        for row in _run_rows(output):
            n = nodes.get((os.path.basename(row["warc_file"]), row["warc_offset"]))
            if n is not None and row["timing_ms"]:
                rows.append((n, row["timing_ms"]))
        result[name] = _nodes_tables(name, rows)
    return result


def _fit(x: np.ndarray, y: np.ndarray) -> dict:
    """Least squares y = a + b x (ms, nodes), and the exponent k of y ∝ x^k on log-log."""
    keep = (x > 0) & (y > 0)
    if keep.sum() < 3:
        return {}
    b, a = np.polyfit(x, y, 1)
    r2 = 1 - np.sum((y - (a + b * x)) ** 2) / max(1e-12, np.sum((y - y.mean()) ** 2))
    k, _ = np.polyfit(np.log(x[keep]), np.log(y[keep]), 1)
    return {"intercept_ms": round(float(a), 2), "ms_per_1k_nodes": round(float(1000 * b), 2),
            "r2": round(float(r2), 3), "loglog_exponent": round(float(k), 2)}


def _nodes_tables(name: str, rows: list) -> dict:
    nodes = np.array([n for n, _ in rows], dtype=float)
    out = {"pages": len(rows), "buckets": [], "fits": {}}
    print(f"\n### {name}: {len(rows)} pages by nodes per page (CPU ms, pipeline run rows' timing_ms)\n")
    header = "| nodes | pages | nodes p50 | total p50 / p99 | total ms per 1k nodes p50 | " + \
             " | ".join(f"{s} p50" for s in STAGES if s != "total") + " |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for lo, hi in zip(NODE_BUCKETS, NODE_BUCKETS[1:]):
        sel = [(n, t) for n, t in rows if lo <= n < hi]
        if not sel:
            continue
        ns = np.array([n for n, _ in sel], dtype=float)
        per = {s: np.array([t.get(s) or 0.0 for _, t in sel]) for s in STAGES}
        bucket = {"nodes": [lo, hi], "pages": len(sel), "nodes_p50": float(np.median(ns)),
                  "p50": {s: round(float(np.percentile(v, 50)), 2) for s, v in per.items()},
                  "p99": {s: round(float(np.percentile(v, 99)), 2) for s, v in per.items()},
                  "total_ms_per_1k_nodes_p50": round(float(np.median(1000 * per["total"] / ns)), 2)}
        out["buckets"].append(bucket)
        label = f"{lo:,}–{hi:,}" if hi < 10 ** 9 else f"≥ {lo:,}"
        print(f"| {label} | {len(sel)} | {bucket['nodes_p50']:.0f} | {bucket['p50']['total']:.1f} / "
              f"{bucket['p99']['total']:.1f} | {bucket['total_ms_per_1k_nodes_p50']:.1f} | "
              + " | ".join(f"{bucket['p50'][s]:.2f}" for s in STAGES if s != "total") + " |")
    print("\nFit per stage over all pages: ms = a + b·nodes (b as ms per 1,000 nodes, R²), "
          "and k of ms ∝ nodes^k (log-log; 1 = linear):\n")
    print("| stage | a ms | b ms/1k nodes | R² | k |")
    print("|---|---|---|---|---|")
    for s in STAGES:
        fit = _fit(nodes, np.array([t.get(s) or 0.0 for _, t in rows]))
        out["fits"][s] = fit
        if fit:
            print(f"| {s} | {fit['intercept_ms']:.2f} | {fit['ms_per_1k_nodes']:.2f} | {fit['r2']:.2f} | "
                  f"{fit['loglog_exponent']:.2f} |")
    return out


# --------------------------------------------------------------------------------------------
# d. workers; e. peak RSS


def _run_table(title: str, runs: list[dict]) -> None:
    print(f"\n### {title}\n")
    print("| input | workers | pages | wall s | pages/s | user+sys s (time -v) | CPU s (tree) | "
          "peak RSS MB (time -v, largest process) | peak RSS MB (tree sum) | peak PSS MB (tree sum) | "
          "peak anonymous RSS MB (tree sum) | per process peak MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        per = "; ".join(f"{k} {', '.join(map(str, v))}" for k, v in sorted(r["peak_mb_by_process"].items()))
        print(f"| {r['input']} | {r['workers']} | {r['pages']} | {r['wall_s']:.1f} | {r['pages_per_s']:.1f} | "
              f"{(r['user_s'] or 0) + (r['sys_s'] or 0):.1f} | {r['tree_cpu_s']:.1f} | {r['maxrss_mb_time_v']} | "
              f"{r['peak_tree_rss_mb']} | {r['peak_tree_pss_mb']} | {r.get('peak_tree_anon_mb', '–')} | {per} |")


def cmd_workers(args) -> dict:
    runs = []
    for corpus in args.corpus:
        name = os.path.basename(os.path.normpath(corpus))
        for w in args.workers:
            for rep in range(args.repeat):
                run = run_pipeline(warc_files(corpus), os.path.join(args.work, "runs", f"workers-{name}-{w}"), int(w))
                run["input"] = name
                runs.append(run)
    _run_table("--workers: end to end", runs)
    return {"runs": runs}


def cmd_rss(args) -> dict:
    runs = []
    for n in args.synthetic or ():
        paths = write_synthetic(synthetic_dir(args.work, int(n), args.seed), int(n), args.seed)
        run = run_pipeline(paths, os.path.join(args.work, "runs", f"rss-synthetic-{n}"), 1, tuple(args.extra))
        run["input"] = f"synthetic {int(n):,}"
        runs.append(run)
    for n in args.multisite or ():
        paths = write_multisite(multisite_dir(args.work, int(n), args.seed), int(n), args.seed)
        run = run_pipeline(paths, os.path.join(args.work, "runs", f"rss-multisite-{n}"), 1, tuple(args.extra))
        run["input"] = f"multisite {int(n):,}"
        run["sites"] = len(multisite_sizes(int(n), args.seed))
        runs.append(run)
    for corpus in args.corpus or ():
        name = os.path.basename(os.path.normpath(corpus))
        run = run_pipeline(warc_files(corpus), os.path.join(args.work, "runs", f"rss-{name}"), 1, tuple(args.extra))
        run["input"] = name
        runs.append(run)
    _run_table(f"Peak RSS, 1 worker{' ' + ' '.join(args.extra) if args.extra else ''}", runs)
    return {"runs": runs}


# --------------------------------------------------------------------------------------------
# e. What holds the memory: the pipeline in this process, per stage


def _rss_mb() -> tuple[int, int]:
    status = _status_kb(os.getpid(), "VmRSS", "VmHWM")
    return round(status.get("VmRSS", 0) / 1024), round(status.get("VmHWM", 0) / 1024)


def _buffer_bytes(buffer) -> tuple[int, int]:
    """(encoded bytes, decoded values) held by one of the runner's PCollection buffers."""
    from apache_beam.runners.portability.fn_api_runner.execution import GroupingBuffer, ListBuffer
    if isinstance(buffer, ListBuffer):
        return sum(len(b) for b in buffer._inputs), 0
    if isinstance(buffer, GroupingBuffer):
        encoded = sum(len(b) for part in (buffer._grouped_output or ()) for b in part)
        return encoded, sum(len(v) for v in buffer._table.values())
    return 0, 0


def _held(context, bundle_input) -> tuple[int, int]:
    """Bytes and decoded values in every buffer the runner holds between stages."""
    seen, encoded, decoded = set(), 0, 0
    buffers = list(context.pcoll_buffers.values())
    for queue in (context.queues.ready_inputs, context.queues.watermark_pending_inputs,
                  context.queues.time_pending_inputs):
        for _key, data_input in list(queue._q):
            buffers.extend(data_input.data.values())
    buffers.extend(bundle_input.data.values())
    for buffer in buffers:
        if id(buffer) in seen:
            continue
        seen.add(id(buffer))
        e, d = _buffer_bytes(buffer)
        encoded, decoded = encoded + e, decoded + d
    return encoded, decoded


def _stage_label(fused: str) -> str:
    """A fused stage's name, e.g. '((GroupBySite/Read)+(ref_AppliedPTransform_ProcessSite_35))+...',
    as its transforms' short names: 'GroupBySite/Read + ProcessSite + ...'."""
    names = []
    for part in re.split(r"[()+]+", fused):
        part = re.sub(r"^ref_AppliedPTransform_|_\d+$", "", part.strip())
        part = part.split("-", 1)[0] if "/" not in part and "-" in part else part
        if part and part not in names:
            names.append(part)
    return " + ".join(names[:3]) + (f" + {len(names) - 3} more" if len(names) > 3 else "")


def cmd_memory(args) -> dict:
    """Run the pipeline in this process (FnApiRunner in memory, as --workers 1) with the runner's
    bundle execution wrapped: per stage, RSS before/after, the peak (VmHWM) reached during it,
    and the bytes the runner holds in its buffers between stages."""
    from apache_beam.runners.portability.fn_api_runner import fn_runner

    from sitestrip.pipeline.cli import run as cli_run

    log: list[dict] = []
    original = fn_runner.FnApiRunner._execute_bundle

    snapshots: list = []

    def traced(self, context, bundle_manager, bundle_input):
        held_before = _held(context, bundle_input)
        rss_before, hwm_before = _rss_mb()
        label = _stage_label(bundle_manager.stage.name)
        traced_stage = args.tracemalloc and args.tracemalloc in label
        if traced_stage:
            import tracemalloc
            tracemalloc.start()
        started = time.process_time()
        result = original(self, context, bundle_manager, bundle_input)
        if traced_stage:
            snapshots.append((label, tracemalloc.take_snapshot(), tracemalloc.get_traced_memory()))
            tracemalloc.stop()
        rss_after, hwm_after = _rss_mb()
        held_after = _held(context, bundle_input)
        trimmed = None
        if args.trim:
            # What the C allocator keeps of freed memory: RSS after giving it back.
            from sitestrip.pipeline.heap import give_back_heap
            give_back_heap()
            trimmed = _rss_mb()[0]
        log.append({"stage": bundle_manager.stage.name, "cpu_s": round(time.process_time() - started, 2),
                    "rss_before": rss_before, "rss_after": rss_after, "hwm_before": hwm_before,
                    "hwm_after": hwm_after, "held_mb_before": round(held_before[0] / 2 ** 20, 1),
                    "held_values_before": held_before[1], "held_mb_after": round(held_after[0] / 2 ** 20, 1),
                    "held_values_after": held_after[1], "rss_after_trim": trimmed})
        return result

    fn_runner.FnApiRunner._execute_bundle = traced
    inputs = []
    for corpus in args.corpus or ():
        inputs.extend(warc_files(corpus))
    for n in args.synthetic or ():
        inputs.extend(write_synthetic(synthetic_dir(args.work, int(n), args.seed), int(n), args.seed))
    output = os.path.join(args.work, "runs", "memory")
    base_rss = _rss_mb()
    code = cli_run(["--quiet", "--output", output, *args.extra, "--input", *inputs])
    if code != 0:
        raise SystemExit(f"run failed: {code}")
    print(f"\n### In-process run, RSS per stage ({len(inputs)} WARC files; before the run: {base_rss[0]} MB)\n")
    print("| stage (fused) | CPU s | RSS MB before → after | peak MB reached during | runner-held MB before → after "
          "(encoded) | decoded values held before → after |" + (" RSS MB after malloc_trim |" if args.trim else ""))
    print("|---|---|---|---|---|---|" + ("---|" if args.trim else ""))
    for e in log:
        name = _stage_label(e["stage"])
        peak = f"**{e['hwm_after']}**" if e["hwm_after"] > e["hwm_before"] + 5 else f"{e['hwm_after']}"
        print(f"| {name} | {e['cpu_s']:.1f} | {e['rss_before']} → {e['rss_after']} | {peak} | "
              f"{e['held_mb_before']} → {e['held_mb_after']} | {e['held_values_before']} → {e['held_values_after']} |"
              + (f" {e['rss_after_trim']} |" if args.trim else ""))
    allocations = []
    for label, snapshot, (current, peak) in snapshots:
        print(f"\n### Python allocations made during {label} and still alive after it "
              f"(tracemalloc: {current / 2 ** 20:.1f} MB alive, {peak / 2 ** 20:.1f} MB at its peak)\n")
        print("| MB | blocks | where |")
        print("|---|---|---|")
        for stat in snapshot.statistics("lineno")[:args.top]:
            frame = stat.traceback[0]
            where = f"{os.path.relpath(frame.filename, os.path.dirname(os.path.dirname(np.__file__)))}:{frame.lineno}"
            print(f"| {stat.size / 2 ** 20:.1f} | {stat.count} | {where} |")
            allocations.append({"stage": label, "mb": round(stat.size / 2 ** 20, 2), "blocks": stat.count,
                                "where": where})
    return {"inputs": inputs, "base_rss_mb": base_rss[0], "stages": log, "allocations": allocations}


# --------------------------------------------------------------------------------------------


def cmd_chart_rss(args) -> dict:
    """Peak RSS against pages of the synthetic input, one line per `rss --json` file
    (LABEL=FILE); `--kind multisite` plots the multi-site runs, `--speed` adds pages/s."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = 2 if args.speed else 1
    fig, axes = plt.subplots(1, panels, figsize=(6.5 * panels, 4.2), squeeze=False)
    rss_ax = axes[0][0]
    for spec in args.runs:
        label, _, path = spec.rpartition("=")     # a label may hold "=", a path seldom does
        with open(path) as fh:
            runs = [r for r in json.load(fh)["runs"] if r["input"].startswith(args.kind)]
        runs.sort(key=lambda r: r["pages"])
        pages = [r["pages"] for r in runs]
        rss_ax.plot(pages, [r["peak_tree_rss_mb"] for r in runs], "o-", label=label)
        if args.speed:
            axes[0][1].plot(pages, [r["pages_per_s"] for r in runs], "o-", label=label)
    what = ("pages of the input (multi-site synthetic input)" if args.kind == "multisite"
            else "pages of the input (one synthetic site, shards of at most 2,000 pages)")
    if args.budget:
        rss_ax.axhline(args.budget, color="grey", linestyle=":", linewidth=1, label=f"{args.budget:g} MB")
    rss_ax.set_ylabel("peak RSS MB, 1 worker (process tree)")
    rss_ax.set_title("sitestrip run: peak memory against input size")
    if args.speed:
        axes[0][1].set_ylabel("pages per second (wall), 1 worker")
        axes[0][1].set_title("sitestrip run: speed against input size")
    for ax in axes[0]:
        ax.set_xlabel(what)
        if args.log_x:
            ax.set_xscale("log")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"chart: {args.out}")
    return {}


def cmd_synth(args) -> dict:
    paths = write_synthetic(args.out, args.pages, args.seed, args.pages_per_file)
    size = sum(os.path.getsize(p) for p in paths)
    print(f"{args.pages} pages of {HOST} in {len(paths)} WARC file(s), {size / 2 ** 20:.1f} MiB, under {args.out}")
    return {"paths": paths, "bytes": size}


def cmd_all(args) -> dict:
    """b-e one after the other (docs/performance.md, "Scaling with site size and page size")."""
    corpora = sorted(d for d in glob.glob(os.path.join(args.corpora, "*-dev")) if os.path.isdir(d))
    docs = [d for d in corpora if d.endswith("docsites-dev")]
    pair = docs + [d for d in corpora if d.endswith("news-ctf2015-dev")]
    ns = argparse.Namespace
    result = {"uptime_start": _uptime()}
    result["rss"] = cmd_rss(ns(work=args.work, seed=args.seed, synthetic=[2000, 5000, 10000, 20000],
                               corpus=corpora, extra=[]))
    result["workers"] = cmd_workers(ns(work=args.work, corpus=pair, workers=[1, 2], repeat=1))
    result["nodes"] = cmd_nodes(ns(work=args.work, corpus=pair,
                                   run=[os.path.join(args.work, "runs", f"workers-{os.path.basename(d)}-1")
                                        for d in pair]))
    result["curve"] = cmd_curve(ns(work=args.work, seed=args.seed, sizes=CURVE_SIZES, real=docs, real_sites=3,
                                   no_pipeline=False, chart=args.chart))
    result["memory"] = cmd_memory(ns(work=args.work, seed=args.seed, corpus=docs, synthetic=None, extra=[],
                                     tracemalloc=None, top=15, trim=True))
    result["uptime_end"] = _uptime()
    return result


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_site-step":
        _site_step_child(argv[1])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=WORK, help=f"inputs and run outputs (default {WORK})")
    parser.add_argument("--seed", type=int, default=7, help="synthetic site seed")
    parser.add_argument("--json", help="also write the numbers to this JSON file")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("synth", help="write a synthetic site as WARC files")
    p.add_argument("--pages", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--pages-per-file", type=int, default=PAGES_PER_FILE)
    p = sub.add_parser("curve", help="cost per page as a site grows")
    p.add_argument("--sizes", nargs="+", default=CURVE_SIZES)
    p.add_argument("--real", action="append", help="a corpus folder: also the first N pages of its largest sites")
    p.add_argument("--real-sites", type=int, default=3)
    p.add_argument("--no-pipeline", action="store_true", help="the site step only, no `sitestrip run`")
    p.add_argument("--chart", help="PNG of the curve")
    p = sub.add_parser("nodes", help="nodes per page against CPU ms, per stage")
    p.add_argument("--corpus", action="append", required=True)
    p.add_argument("--run", action="append", help="an existing run output of the corpus (same order)")
    p = sub.add_parser("site-step", help="the per-site step over a whole corpus in process (for callgrind)")
    p.add_argument("--corpus", action="append", required=True)
    p.add_argument("--load-only", action="store_true", help="read, parse and pickle, then stop: the baseline")
    p = sub.add_parser("workers", help="--workers 1 against 2 end to end")
    p.add_argument("--corpus", action="append", required=True)
    p.add_argument("--workers", nargs="+", type=int, default=[1, 2])
    p.add_argument("--repeat", type=int, default=1)
    p = sub.add_parser("rss", help="peak RSS with 1 worker")
    p.add_argument("--synthetic", nargs="*", type=int, help="synthetic site sizes")
    p.add_argument("--multisite", nargs="*", type=int, help="pages of multi-site synthetic inputs (write_multisite)")
    p.add_argument("--corpus", action="append")
    p.add_argument("--extra", action="append", default=[], help="an extra `sitestrip run` option, e.g. --extra=--part-files=50")
    p = sub.add_parser("memory", help="in-process run: RSS and runner buffers per stage")
    p.add_argument("--corpus", action="append")
    p.add_argument("--synthetic", nargs="*", type=int)
    p.add_argument("--extra", action="append", default=[])
    p.add_argument("--tracemalloc", metavar="NAME", help="trace Python allocations during the stages whose "
                   "label contains NAME (e.g. ProcessSite; makes that stage 2-3 times slower)")
    p.add_argument("--top", type=int, default=15, help="allocation sites listed with --tracemalloc")
    p.add_argument("--trim", action="store_true", help="after each stage, give the C allocator's free memory "
                   "back (glibc malloc_trim) and report RSS again: what is left is live")
    p = sub.add_parser("chart-rss", help="PNG of peak RSS against input size from `rss --json` files")
    p.add_argument("runs", nargs="+", metavar="LABEL=FILE")
    p.add_argument("--out", required=True)
    p.add_argument("--kind", choices=("synthetic", "multisite"), default="synthetic",
                   help="which synthetic runs to plot (default: the one-site ones)")
    p.add_argument("--speed", action="store_true", help="a second panel: pages/s against input size")
    p.add_argument("--log-x", action="store_true", help="input size on a log scale")
    p.add_argument("--budget", type=float, default=None, help="a horizontal line at this many MB")
    p = sub.add_parser("all", help="every measurement, one after the other")
    p.add_argument("--corpora", required=True, help="the folder of the dev corpora")
    p.add_argument("--chart", default=None)
    args = parser.parse_args(argv)
    print(f"<!-- {_uptime()} -->")
    result = {"synth": cmd_synth, "curve": cmd_curve, "nodes": cmd_nodes, "workers": cmd_workers,
              "rss": cmd_rss, "memory": cmd_memory, "site-step": cmd_site_step, "chart-rss": cmd_chart_rss, "all": cmd_all}[args.command](args)
    print(f"\n<!-- {_uptime()} -->")
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1, default=str)


if __name__ == "__main__":
    main()

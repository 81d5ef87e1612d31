"""Peak memory and wall time of one large site, with and without hot-site sharding.

Writes synthetic inputs of N pages (small templated pages in a few
directories, linked to the site menu and to their neighbours in the
directory) as WARC files into a temporary folder and runs `sitestrip run` on
each in a fresh process (FnApiRunner, one in-process worker):

  sharded    one site of N pages, site.max_site_pages = LIMIT
  unsharded  one site of N pages, no limit: the whole site is one shard
  control    N pages as sites of LIMIT pages each: nothing to shard

and prints a Markdown table of each child process's peak RSS and wall time.
If memory follows the shard size, "sharded" needs what "control" needs, and
only "unsharded" grows with the site.

    sitestrip-bench hot-sites                      # 1k, 10k, 50k pages; limit 2,000
    sitestrip-bench hot-sites --sizes 1000 20000 --modes sharded control

Not part of the test suite: the 50k-page runs take minutes.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter

from sitestrip.pipeline.warc_writer import WarcWriter
from sitestrip.transforms.shards import shard_urls

SITE = "bench.example"
DIRECTORIES = ("docs", "blog", "news", "shop", "wiki")
RECORDS_PER_FILE = 5000
UNSHARDED = 1_000_000_000


def page_url(directory: str, i: int, site: str = SITE) -> str:
    return f"https://{site}/{directory}/page-{i}.html"


def site_layout(pages: int) -> list[tuple[str, int]]:
    """Pages spread unevenly over the directories, so some directories exceed the limit alone."""
    weights = (8, 4, 2, 1, 1)
    total = sum(weights)
    counts = [pages * w // total for w in weights]
    counts[0] += pages - sum(counts)
    return list(zip(DIRECTORIES, counts))


def page_html(site: str, directory: str, i: int, count: int) -> bytes:
    menu = "".join(f"<li><a href='/{d}/page-0.html'>{d.title()}</a></li>" for d in DIRECTORIES)
    neighbours = "".join(f"<a href='{page_url(directory, (i + step) % count, site)}'>next {step}</a> "
                         for step in (1, 2, count - 1))
    text = " ".join(f"Item {i} of {directory}: sentence {k} with words {i * 31 + k} and {k * 17}."
                    for k in range(5))
    return (f"<!DOCTYPE html><html><head><title>{directory} {i}</title></head><body>"
            f"<header><ul class=menu>{menu}</ul></header><main><h1>{directory} {i}</h1>"
            f"<p>{text}</p><nav class=pager>{neighbours}</nav></main>"
            f"<footer>Copyright {site} · <a href='/about.html'>About</a></footer></body></html>"
            ).encode()


def site_names(pages: int, site_pages: int | None) -> list[tuple[str, int]]:
    """(site, pages): one site of `pages`, or as many sites of `site_pages` as make up `pages`."""
    if site_pages is None:
        return [(SITE, pages)]
    return [(f"s{k:04d}.{SITE}", min(site_pages, pages - start))
            for k, start in enumerate(range(0, pages, site_pages))]


def write_sites(folder: str, pages: int, site_pages: int | None = None) -> dict[str, list[str]]:
    """The pages as WARC files of RECORDS_PER_FILE responses; returns the URLs of every site."""
    os.makedirs(folder, exist_ok=True)
    urls: list[str] = []
    by_site: dict[str, list[str]] = {}
    writer = out = None
    headers = [("Content-Type", "text/html; charset=utf-8")]
    layouts = [(site, directory, count) for site, size in site_names(pages, site_pages)
               for directory, count in site_layout(size) if count]
    for site, directory, count in layouts:
        for i in range(count):
            if len(urls) % RECORDS_PER_FILE == 0:
                if out:
                    out.close()
                out = open(os.path.join(folder, f"site-{len(urls) // RECORDS_PER_FILE:03d}.warc.gz"), "wb")
                writer = WarcWriter(out)
            url = page_url(directory, i, site)
            writer.response(url, page_html(site, directory, i, count), headers=headers)
            urls.append(url)
            by_site.setdefault(site, []).append(url)
    if out:
        out.close()
    return by_site


def run_pipeline(warcs: str, output: str, limit: int, workdir: str) -> tuple[float, float]:
    """(peak RSS in MiB, wall seconds) of one `sitestrip run` in a child process."""
    config = os.path.join(workdir, f"limit-{limit}.yaml")
    with open(config, "w") as fh:
        fh.write(f"site:\n  max_site_pages: {limit}\n")
    command = [sys.executable, "-m", "sitestrip.pipeline.cli", "run", "--input", warcs, "--output", output,
               "--config", config, "--workers", "1", "--quiet"]
    started = time.monotonic()
    child = subprocess.Popen(command, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # wait4 gives this child's own rusage; RUSAGE_CHILDREN would be the maximum over all runs so far.
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - started
    stdout, stderr = child.stdout.read(), child.stderr.read()
    child.stdout.close()
    child.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"sitestrip run failed:\n{stdout.decode()}\n{stderr.decode()[-4000:]}")
    return usage.ru_maxrss / 1024.0, wall   # ru_maxrss is in KiB on Linux


MODES = {
    # mode: (the input is one site?, max_site_pages is the limit?)
    "sharded": (True, True),
    "unsharded": (True, False),
    # The same number of pages as sites of `limit` pages: nothing to shard, and the
    # per-site step holds as many pages at a time as in "sharded". What this run
    # needs beyond the per-site step (Beam, the runner's in-memory shuffle) is
    # what "sharded" needs too.
    "control": (False, True),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 50000],
                        help="pages of each synthetic input (default: 1000 10000 50000)")
    parser.add_argument("--limit", type=int, default=2000, help="max_site_pages of the sharded runs")
    parser.add_argument("--modes", nargs="+", choices=tuple(MODES), default=list(MODES))
    parser.add_argument("--workdir", default=None, help="keep WARCs and outputs here (default: a temp dir)")
    args = parser.parse_args(argv)

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-hot-sites-") as tmp:
        workdir = args.workdir or tmp
        written: dict[str, dict[str, list[str]]] = {}
        for pages in args.sizes:
            for mode in args.modes:
                one_site, limited = MODES[mode]
                limit = args.limit if limited else UNSHARDED
                site_pages = None if one_site else args.limit
                warcs = os.path.join(workdir, f"warc-{pages}-{'one' if one_site else 'many'}")
                if warcs not in written:
                    written[warcs] = write_sites(warcs, pages, site_pages)
                sizes = Counter()
                for site, urls in written[warcs].items():
                    sizes.update((site, shard) for shard in shard_urls(site, urls, limit).values())
                rss, wall = run_pipeline(warcs, os.path.join(workdir, f"out-{pages}-{mode}"), limit, workdir)
                input_ = "1 site" if one_site else f"{len(written[warcs])} sites of {args.limit:,}"
                rows.append((pages, mode, input_, limit, len(sizes), max(sizes.values()), rss, wall))
                print(f"{pages} pages, {mode}: {rss:.0f} MiB peak RSS, {wall:.1f} s", file=sys.stderr,
                      flush=True)

    print("| pages | mode | input | max_site_pages | shards | largest shard | peak RSS (MiB) | wall (s) |")
    print("|---:|---|---|---:|---:|---:|---:|---:|")
    for pages, mode, input_, limit, shards, largest, rss, wall in rows:
        shown = f"{limit:,}" if limit != UNSHARDED else "none"
        print(f"| {pages:,} | {mode} | {input_} | {shown} | {shards} | {largest:,} | {rss:.0f} | {wall:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

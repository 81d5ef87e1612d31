#!/usr/bin/env python3
"""Build the embedded sample WARC for sitestrip.

The sample is made from two HTML documentation sites that Debian ships as
packages, served under their real public base URLs:

* ``sqlite3-doc``      -> https://www.sqlite.org/            (public domain)
* ``python-click-doc`` -> https://click.palletsprojects.com/en/8.1.x/  (BSD-3-Clause)

From each site a few dozen pages are taken in breadth-first link order
starting at the site's ``index.html``, so the selected pages link to each
other and share the site template.  A handful of extra fetches exercise the
pipeline's skip logic: non-HTML 200 responses, a 404, a 301 and a revisit.

Outputs (next to this script unless ``--out-dir`` is given):

* ``sitestrip-sample.warc.gz``     WARC/1.0, one gzip member per record
* ``manifest.json``                every URL in the WARC with its expected handling
* ``LICENSE-python-click-doc.txt`` the Click package's copyright/licence file

Everything is deterministic: record IDs are uuid5 values, WARC-Date values
are fixed, the fetch order is shuffled with a fixed seed and warcio's gzip
members carry mtime 0, so rebuilding from the same .deb files gives
byte-identical output (given the same zlib build).

The records are written with sitestrip's WARC writer (``pipeline/warc_writer.py``,
on warcio) and read back with warcio's ``ArchiveIterator``, so sitestrip must be
installed (the checkout's ``.venv``).  ``apt-get`` (for downloading, unless
``--deb-dir`` is given) and ``dpkg-deb`` must be on PATH.

Usage::

    python sample/build_sample.py                      # downloads the .debs
    python sample/build_sample.py --deb-dir /some/dir  # uses existing .debs
"""

import argparse
import base64
import glob
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections import Counter, deque
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from html.parser import HTMLParser
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

from warcio.archiveiterator import ArchiveIterator

from sitestrip.pipeline.warc_writer import WarcWriter, http_request, http_response

HERE = os.path.dirname(os.path.abspath(__file__))

WARC_NAME = "sitestrip-sample.warc.gz"
MANIFEST_NAME = "manifest.json"

# Fixed inputs that make the build reproducible.
SHUFFLE_SEED = 20240301
START_TIME = datetime(2024, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
SECONDS_PER_FETCH = 3
MAX_PAGE_BYTES = 150_000          # skip pages larger than this
MAX_WARC_BYTES = 5 * 1024 * 1024  # hard limit for the output
USER_AGENT = "sitestrip-sample-builder/1.0 (+offline; built from Debian packages)"
UUID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://sitestrip.invalid/sample-warc")

SITES = [
    {
        "key": "sqlite",
        "package": "sqlite3-doc",
        "version": "3.40.1-2+deb12u2",
        "html_dir": "usr/share/doc/sqlite3",
        "copyright": "usr/share/doc/sqlite3-doc/copyright",
        "base": "https://www.sqlite.org/",
        "start": "index.html",
        "max_pages": 35,
        "license": "public domain",
        "license_file": None,
    },
    {
        "key": "click",
        "package": "python-click-doc",
        "version": "8.1.3-2",
        "html_dir": "usr/share/doc/python-click-doc/html",
        "copyright": "usr/share/doc/python-click-doc/copyright",
        "base": "https://click.palletsprojects.com/en/8.1.x/",
        "start": "index.html",
        "max_pages": 35,
        "license": "BSD-3-Clause",
        "license_file": "LICENSE-python-click-doc.txt",
    },
]

# Non-HTML 200 responses: (site key, path relative to html_dir, content type).
NON_HTML = [
    ("sqlite", "sqlite.css", "text/css; charset=utf-8"),
    ("sqlite", "images/sqlite370_banner.gif", "image/gif"),
    ("click", "_static/click-logo-sidebar.png", "image/png"),
]

NOT_FOUND_URL = "https://click.palletsprojects.com/en/8.1.x/no-such-page.html"
NOT_FOUND_BODY = (
    b"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
    b"<title>404 Not Found</title></head>\n<body><h1>Not Found</h1>\n"
    b"<p>The requested URL was not found on this server.</p>\n</body></html>\n"
)

REDIRECT_URL = "http://www.sqlite.org/index.html"
REDIRECT_LOCATION = "https://www.sqlite.org/index.html"
REDIRECT_BODY = (
    b"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
    b"<title>301 Moved Permanently</title></head>\n<body><h1>Moved Permanently</h1>\n"
    b"<p>The document has moved <a href=\"https://www.sqlite.org/index.html\">here</a>.</p>\n"
    b"</body></html>\n"
)

# The revisit record is a later re-fetch of this page with an identical payload.
REVISIT_OF = "https://www.sqlite.org/index.html"


# --------------------------------------------------------------------------
# Obtaining and unpacking the packages


def run(cmd, **kwargs):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, **kwargs).stdout


def download_debs(dest):
    """apt-get download each package, preferring the pinned version."""
    for site in SITES:
        pinned = "%s=%s" % (site["package"], site["version"])
        try:
            run(["apt-get", "download", pinned], cwd=dest, stderr=subprocess.PIPE)
        except subprocess.CalledProcessError:
            print("warning: %s not available, downloading the current candidate "
                  "(output will differ from the committed sample)" % pinned,
                  file=sys.stderr)
            run(["apt-get", "download", site["package"]], cwd=dest)


def find_deb(deb_dir, package):
    matches = sorted(glob.glob(os.path.join(deb_dir, package + "_*.deb")))
    if not matches:
        sys.exit("error: no %s_*.deb in %s" % (package, deb_dir))
    if len(matches) > 1:
        sys.exit("error: several %s .debs in %s: %s" % (package, deb_dir, matches))
    return matches[0]


def deb_field(deb, field):
    return run(["dpkg-deb", "-f", deb, field]).decode("utf-8").strip()


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


# --------------------------------------------------------------------------
# Page selection


class LinkCollector(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.hrefs = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            for name, value in attrs:
                if name == "href" and value:
                    self.hrefs.append(value.strip())


def page_file(root, rel):
    """Return the file for a relative URL path, or None if it is not a usable page."""
    if not rel or rel.startswith("/") or "?" in rel or not rel.endswith(".html"):
        return None
    path = os.path.join(root, *unquote(rel).split("/"))
    if os.path.islink(path) or not os.path.isfile(path):
        return None
    if os.path.getsize(path) > MAX_PAGE_BYTES:
        return None
    return path


def select_pages(site, root):
    """Breadth-first walk of <a href> links from the start page, in document order."""
    base = site["base"]
    selected = []   # list of (rel, path)
    seen = {site["start"]}
    queue = deque([site["start"]])
    while queue and len(selected) < site["max_pages"]:
        rel = queue.popleft()
        path = page_file(root, rel)
        if path is None:
            continue
        with open(path, "rb") as f:
            body = f.read()
        selected.append((rel, path))
        parser = LinkCollector()
        parser.feed(body.decode("utf-8"))
        parser.close()
        page_url = base + rel
        for href in parser.hrefs:
            target = urldefrag(urljoin(page_url, href)).url
            if not target.startswith(base):
                continue
            target_rel = target[len(base):] or site["start"]
            if target_rel not in seen:
                seen.add(target_rel)
                queue.append(target_rel)
    return selected


# --------------------------------------------------------------------------
# WARC writing


def record_id(*parts):
    return "<urn:uuid:%s>" % uuid.uuid5(UUID_NAMESPACE, "\n".join(parts))


def warc_date(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def payload_digest(body):
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")


def http_request_headers(url):
    parts = urlsplit(url)
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return http_request(
        "GET %s HTTP/1.1" % target,
        [
            ("Host", parts.netloc),
            ("User-Agent", USER_AGENT),
            ("Accept", "text/html,application/xhtml+xml,*/*;q=0.8"),
            ("Accept-Encoding", "identity"),
            ("Connection", "close"),
        ],
    )


def http_response_headers(fetch, dt):
    headers = [
        ("Date", format_datetime(dt, usegmt=True)),
        ("Content-Type", fetch["content_type"]),
        ("Content-Length", str(len(fetch["body"]))),
    ]
    if fetch.get("location"):
        headers.append(("Location", fetch["location"]))
    headers.append(("Connection", "close"))
    return http_response(fetch["status_line"], headers)


def write_warc(path, fetches, info_fields):
    """Write the warcinfo record and one request + response/revisit per fetch.

    Fills in ``record_id`` / ``warc_date`` on each fetch dict.
    """
    writer_out = open(path, "wb")
    writer = WarcWriter(writer_out)

    info_id = record_id("warcinfo", WARC_NAME)
    info_body = "".join("%s: %s\r\n" % kv for kv in info_fields).encode("utf-8")
    writer.record(
        "warcinfo", "", info_body,
        content_type="application/warc-fields",
        warc_headers={
            "WARC-Record-ID": info_id,
            "WARC-Date": warc_date(START_TIME),
            "WARC-Filename": WARC_NAME,
        },
    )

    by_url = {}
    for i, fetch in enumerate(fetches):
        url = fetch["url"]
        dt = START_TIME + timedelta(seconds=SECONDS_PER_FETCH * (i + 1))
        date = warc_date(dt)
        rec_type = "revisit" if fetch["kind"] == "revisit" else "response"
        resp_id = record_id(rec_type, url)
        req_id = record_id("request", rec_type, url)
        fetch["record_id"] = resp_id
        fetch["warc_date"] = date

        common = {"WARC-Date": date, "WARC-Warcinfo-ID": info_id}
        writer.record(
            "request", url,
            http=http_request_headers(url),
            warc_headers=dict(common, **{
                "WARC-Record-ID": req_id,
                "WARC-Concurrent-To": resp_id,
            }),
        )

        if rec_type == "revisit":
            original = by_url[fetch["refers_to_uri"]]
            writer.revisit(
                url,
                payload_digest(original["body"]),
                original["url"],
                original["warc_date"],
                http=http_response_headers(fetch, dt),
                warc_headers=dict(common, **{
                    "WARC-Record-ID": resp_id,
                    "WARC-Refers-To": original["record_id"],
                }),
            )
            fetch["refers_to"] = original["record_id"]
        else:
            writer.record(
                "response", url, fetch["body"],
                http=http_response_headers(fetch, dt),
                warc_headers=dict(common, **{"WARC-Record-ID": resp_id}),
            )
            by_url[url] = fetch

    writer_out.close()


def order_fetches(fetches, revisit):
    """Shuffle with a fixed seed, then place the revisit after its original."""
    rng = random.Random(SHUFFLE_SEED)
    rng.shuffle(fetches)
    original_pos = next(i for i, f in enumerate(fetches) if f["url"] == revisit["refers_to_uri"])
    pos = rng.randint(original_pos + 1, len(fetches))
    fetches.insert(pos, revisit)
    return fetches


# --------------------------------------------------------------------------
# Verification


def verify(warc_path, manifest):
    counts = Counter()
    seen = []
    concurrent = {}
    ids = set()
    with open(warc_path, "rb") as f:
        it = ArchiveIterator(f)
        for rec in it:
            rtype = rec.rec_type
            counts[rtype] += 1
            rid = rec.rec_headers.get_header("WARC-Record-ID")
            assert rid not in ids, "duplicate record id " + rid
            ids.add(rid)
            rec.content_stream().read()
            if rtype == "request":
                concurrent[rec.rec_headers.get_header("WARC-Concurrent-To")] = \
                    rec.rec_headers.get_header("WARC-Target-URI")
            elif rtype in ("response", "revisit"):
                seen.append((rec.rec_headers.get_header("WARC-Target-URI"), rid,
                             rec.http_headers.get_statuscode()))
    expected = [(e["url"], e["record_id"], str(e["status"])) for e in manifest["urls"]]
    assert seen == expected, "WARC responses do not match the manifest"
    for url, rid, _ in seen:
        assert concurrent.get(rid) == url, "no request record for " + url
    return counts


def check_one_member_per_record(warc_path, n_records):
    """Each gzip member holds exactly one record (count gzip members)."""
    import zlib
    with open(warc_path, "rb") as f:
        data = f.read()
    members = 0
    while data:
        d = zlib.decompressobj(zlib.MAX_WBITS | 16)
        d.decompress(data)
        data = d.unused_data
        members += 1
    assert members == n_records, "%d gzip members for %d records" % (members, n_records)


# --------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--deb-dir", help="directory holding already-downloaded .debs "
                    "(default: apt-get download into a temporary directory)")
    ap.add_argument("--out-dir", default=HERE, help="output directory (default: %(default)s)")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="sitestrip-sample-")
    try:
        deb_dir = args.deb_dir
        if deb_dir is None:
            deb_dir = os.path.join(tmp, "debs")
            os.makedirs(deb_dir)
            download_debs(deb_dir)

        packages = []
        fetches = []
        site_pages = {}
        for site in SITES:
            deb = find_deb(deb_dir, site["package"])
            version = deb_field(deb, "Version")
            if version != site["version"]:
                print("warning: %s version %s differs from the pinned %s"
                      % (site["package"], version, site["version"]), file=sys.stderr)
            unpack = os.path.join(tmp, site["package"])
            run(["dpkg-deb", "-x", deb, unpack])
            site["root"] = os.path.join(unpack, site["html_dir"])

            packages.append({
                "package": site["package"],
                "version": version,
                "deb": os.path.basename(deb),
                "sha256": sha256_file(deb),
                "base_url": site["base"],
                "license": site["license"],
            })
            if site["license_file"]:
                shutil.copyfile(os.path.join(unpack, site["copyright"]),
                                os.path.join(args.out_dir, site["license_file"]))

            pages = select_pages(site, site["root"])
            site_pages[site["key"]] = len(pages)
            for rel, path in pages:
                with open(path, "rb") as f:
                    body = f.read()
                body.decode("utf-8")  # the charset we declare must be right
                fetches.append({
                    "url": site["base"] + rel, "kind": "html_page", "site": site["key"],
                    "status_line": "200 OK", "content_type": "text/html; charset=utf-8",
                    "body": body,
                })

        sites = {s["key"]: s for s in SITES}
        for key, rel, ctype in NON_HTML:
            site = sites[key]
            with open(os.path.join(site["root"], rel), "rb") as f:
                body = f.read()
            fetches.append({
                "url": site["base"] + rel, "kind": "non_html", "site": key,
                "status_line": "200 OK", "content_type": ctype, "body": body,
            })
        fetches.append({
            "url": NOT_FOUND_URL, "kind": "not_found", "site": "click",
            "status_line": "404 Not Found", "content_type": "text/html; charset=utf-8",
            "body": NOT_FOUND_BODY,
        })
        fetches.append({
            "url": REDIRECT_URL, "kind": "redirect", "site": "sqlite",
            "status_line": "301 Moved Permanently", "content_type": "text/html; charset=utf-8",
            "body": REDIRECT_BODY, "location": REDIRECT_LOCATION,
        })
        original = next(f for f in fetches if f["url"] == REVISIT_OF)
        revisit = dict(original, kind="revisit", refers_to_uri=REVISIT_OF)
        fetches = order_fetches(fetches, revisit)

        info_fields = [
            ("software", "sitestrip sample/build_sample.py (warcio)"),
            ("format", "WARC File Format 1.0"),
            ("conformsTo", "http://bibnum.bnf.fr/WARC/WARC_ISO_28500_version1_latestdraft.pdf"),
            ("description", "Synthetic crawl for sitestrip tests: pages from the Debian "
                            "packages %s served under their public URLs; not a live crawl."
                            % ", ".join("%s %s" % (p["package"], p["version"]) for p in packages)),
        ]
        for p in packages:
            info_fields.append(("source-package", "%s %s (%s) sha256:%s"
                                % (p["package"], p["version"], p["license"], p["sha256"])))

        warc_path = os.path.join(args.out_dir, WARC_NAME)
        write_warc(warc_path, fetches, info_fields)

        manifest = {
            "warc": WARC_NAME,
            "packages": packages,
            "counts": dict(Counter(f["kind"] for f in fetches)),
            "html_pages_per_site": site_pages,
            "urls": [],
        }
        for f in fetches:
            entry = {
                "url": f["url"],
                "kind": f["kind"],
                "site": f["site"],
                "status": int(f["status_line"].split()[0]),
                "content_type": f["content_type"],
                "record_id": f["record_id"],
                "warc_date": f["warc_date"],
            }
            if f.get("location"):
                entry["location"] = f["location"]
            if f["kind"] == "revisit":
                entry["refers_to"] = f["refers_to"]
                entry["refers_to_uri"] = f["refers_to_uri"]
            manifest["urls"].append(entry)
        with open(os.path.join(args.out_dir, MANIFEST_NAME), "w", encoding="utf-8") as out:
            json.dump(manifest, out, indent=2)
            out.write("\n")
    finally:
        shutil.rmtree(tmp)

    counts = verify(warc_path, manifest)
    check_one_member_per_record(warc_path, sum(counts.values()))
    size = os.path.getsize(warc_path)
    if size > MAX_WARC_BYTES:
        sys.exit("error: %s is %d bytes, over the %d limit" % (warc_path, size, MAX_WARC_BYTES))

    print("wrote %s (%d bytes, sha256 %s)" % (warc_path, size, sha256_file(warc_path)))
    for p in packages:
        print("  package %s %s (%s)" % (p["package"], p["version"], p["license"]))
    for key, n in site_pages.items():
        print("  html pages %-7s %3d  %s" % (key, n, sites[key]["base"]))
    for kind, n in manifest["counts"].items():
        print("  fetches %-10s %3d" % (kind, n))
    for rtype, n in sorted(counts.items()):
        print("  records %-10s %3d" % (rtype, n))


if __name__ == "__main__":
    main()

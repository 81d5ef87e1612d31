"""A corpus of hostile WARC input, generated on demand (nothing large is committed).

`write_corpus(directory)` writes WARC files that hold one record (or file) per
case of design "Bad input", each case named by its URL, mixed with ordinary
pages of one small site (ordinary.test) so a test can show that those are
unaffected. It returns a `Corpus` saying which URL is which case and which
rows the pipeline must end with; `write_ordinary_only` writes the ordinary
pages alone, for comparison.

    python tests/helpers/hostile.py DIR     # write the corpus into DIR

The WARC records are written here byte by byte rather than with warcio so
that the cases that break the format (cut files, declared lengths that lie,
raw non-ASCII header values) are exactly what they claim to be.
"""
from __future__ import annotations

import gzip
import os
import random
import sys
import uuid
from collections import Counter
from dataclasses import dataclass, field

ORDINARY_SITE = "https://ordinary.test"
_DATE = "2024-03-01T12:00:00Z"

# Sizes of the cases; the test and the budget measurements refer to them.
DEEP_LEVELS = 100_000
BIG_PAGE_BYTES = 20_000_000        # under the 20 MiB payload cap, so it is parsed
OVERSIZE_PAGE_BYTES = 21 * 1024 * 1024
MANY_LINKS = 100_000
WIDE_CHILDREN = 60_000
CLIQUE_PAGES = 250
LONG_URL_CHARS = 20_000
BOMB_LEVELS = 10                   # 10^10 "lol"s if the parser expanded the entities


@dataclass
class Corpus:
    files: list[str]
    cases: dict[str, str] = field(default_factory=dict)   # case name → URL
    ordinary: list[str] = field(default_factory=list)     # URLs of ordinary.test
    clique: list[str] = field(default_factory=list)
    # URL of every HTML 200 record that must end in one pages or errors row;
    # None once per file-level failure (a file that is not a WARC).
    expected_rows: Counter = field(default_factory=Counter)


class _Writer:
    """WARC/1.0 response records, gzip member per record or plain."""

    def __init__(self, path: str, gzip_records: bool = True):
        self.path, self.gzip_records = path, gzip_records
        self.out = open(path, "wb")
        self.count = 0

    def response(self, url: str, body: bytes, headers=(("Content-Type", "text/html; charset=utf-8"),),
                 status: str = "200 OK", warc_headers=()) -> int:
        """Writes one response record; returns its offset in the file."""
        http = f"HTTP/1.1 {status}\r\n".encode()
        for name, value in headers:
            http += f"{name}: {value}\r\n".encode("utf-8")
        block = http + b"\r\n" + body
        self.count += 1
        record_id = uuid.uuid5(uuid.NAMESPACE_URL, f"{self.path}#{self.count}")
        head = [("WARC-Type", "response"), ("WARC-Record-ID", f"<urn:uuid:{record_id}>"),
                ("WARC-Date", _DATE), ("WARC-Target-URI", url),
                ("Content-Type", "application/http; msgtype=response"), *warc_headers,
                ("Content-Length", str(len(block)))]
        record = b"WARC/1.0\r\n" + b"".join(f"{k}: {v}\r\n".encode("utf-8") for k, v in head)
        record += b"\r\n" + block + b"\r\n\r\n"
        offset = self.out.tell()
        # Level 1: the large cases are repetitive, and generation must stay fast.
        self.out.write(gzip.compress(record, compresslevel=1, mtime=0) if self.gzip_records else record)
        return offset

    def close(self) -> str:
        self.out.close()
        return self.path


def _doc(title: str, body: str, head_extra: str = "") -> str:
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>{head_extra}</head>"
            f"<body>{body}</body></html>")


def _ordinary_pages() -> list[tuple[str, bytes]]:
    """Four pages of one site sharing a menu and a footer, each with its own article."""
    names = ("alpha", "beta", "gamma", "delta")
    menu = "".join(f"<li><a href='/{n}.html'>{n.title()}</a></li>" for n in names)
    pages = []
    for n in names:
        article = (f"<h1>{n.title()} report</h1><p>The {n} report explains how the {n} survey was run "
                   f"and what it found in the northern districts.</p><p>Readers of the {n} report "
                   f"will find the tables of the {n} survey in the appendix, with notes.</p>")
        body = (f"<div id=header><ul id=menu>{menu}</ul></div><div id=content>{article}</div>"
                f"<div id=footer>Ordinary Test Site, all rights reserved</div>")
        pages.append((f"{ORDINARY_SITE}/{n}.html", _doc(f"{n.title()} report", body).encode()))
    return pages


def _chunked(body: bytes, size: int = 100) -> bytes:
    parts = [b"%x\r\n%s\r\n" % (len(body[i:i + size]), body[i:i + size]) for i in range(0, len(body), size)]
    return b"".join(parts) + b"0\r\n\r\n"


def _small(title: str, text: str, links=()) -> bytes:
    anchors = "".join(f"<li><a href='{href}'>{href}</a></li>" for href in links)
    return _doc(title, f"<ul class=nav>{anchors}</ul><div class=main><p>{text}</p></div>").encode()


def _deep_page(levels: int, word: str) -> bytes:
    # Far deeper than Python's recursion limit and libxml2's 2048-level cap.
    return _doc("Deep", f"<p>Above the pit: {word}.</p>" + "<div>" * levels
                + f"<p>Bottom of the pit {word}</p>" + "</div>" * levels
                + "<p><a href='/a'>a</a> <a href='/b'>b</a></p>").encode()


def _big_page(size: int) -> bytes:
    # Paragraphs of prose plus one megabyte-long line without a space.
    para = "<p>" + " ".join(f"word{i % 97}" for i in range(300)) + "</p>\n"
    line = "<p>" + "x" * (1 << 20) + "</p>\n"
    head = "<p><a href='/small'>small</a></p>" + line
    shell = len(_doc("Big", "").encode())
    count = (size - shell - len(head)) // len(para)
    body = head + para * count
    body += " " * (size - shell - len(body))   # pad to the exact size
    return _doc("Big", body).encode()


def _many_links_page(n: int) -> bytes:
    rows = []
    for start in range(0, n, 100):
        rows.append("<p>" + " ".join(f"<a href='/l/{i}'>link {i}</a>" for i in range(start, start + 100)) + "</p>")
    return _doc("Many links", "<div class=main><p>A page of links.</p></div>" + "".join(rows)).encode()


def _wide_page(n: int, variant: str, links) -> bytes:
    items = "".join(f"<li>{variant if i % 1000 == 0 else ''}item {i}</li>" for i in range(n))
    nav = "".join(f"<a href='{href}'>{href}</a> " for href in links)
    return _doc("Wide", f"<div class=nav>{nav}</div><ul>{items}</ul>").encode()


def _clique_page(i: int, n: int) -> bytes:
    # Short relative links and one short paragraph: 250 × 249 links stay a few MB.
    links = "".join(f"<a href=p{j}>{j}</a>" for j in range(n) if j != i)
    return (f"<html><head><title>P{i}</title></head><body><div class=nav>{links}</div>"
            f"<p>Clique page {i} tells story {i}.</p></body></html>").encode()


def _bomb_page() -> bytes:
    entities = ['<!ENTITY lol0 "lol">'] + [
        f'<!ENTITY lol{k} "{f"&lol{k - 1};" * 10}">' for k in range(1, BOMB_LEVELS)]
    # Also an external entity on the local network: nothing may fetch it.
    subset = "".join(entities) + '<!ENTITY ext SYSTEM "http://127.0.0.1:9/ext.dtd">'
    return (f"<!DOCTYPE html [{subset}]><html><head><title>Bomb</title></head><body>"
            f"<p>&lol{BOMB_LEVELS - 1};</p><p>&ext;</p><p>Text beside the bomb.</p></body></html>").encode()


def write_ordinary_only(directory: str) -> str:
    os.makedirs(directory, exist_ok=True)
    writer = _Writer(os.path.join(directory, "ordinary.warc.gz"))
    for url, body in _ordinary_pages():
        writer.response(url, body)
    return writer.close()


def write_corpus(directory: str) -> Corpus:
    os.makedirs(directory, exist_ok=True)
    corpus = Corpus(files=[])
    ordinary = _ordinary_pages()
    corpus.ordinary = [url for url, _ in ordinary]

    def page(writer: _Writer, case: str | None, url: str, body: bytes, rows: int = 1, **kwargs):
        writer.response(url, body, **kwargs)
        if case:
            corpus.cases[case] = url
        corpus.expected_rows[url] += rows

    utf8 = (("Content-Type", "text/html; charset=utf-8"),)
    html_only = (("Content-Type", "text/html"),)

    # --- hostile-1.warc.gz: per-record gzip, the page-content cases -----------------
    w = _Writer(os.path.join(directory, "hostile-1.warc.gz"))
    page(w, None, *ordinary[0])
    for k in (1, 2):
        page(w, "deep" if k == 1 else None, f"https://deep.hostile.test/{k}", _deep_page(DEEP_LEVELS, f"w{k}"))
    page(w, "big", "https://big.hostile.test/", _big_page(BIG_PAGE_BYTES))
    page(w, None, "https://big.hostile.test/small", _small("Small", "Next to a big page.", ["/"]))
    page(w, "oversize", "https://oversize.hostile.test/", _big_page(OVERSIZE_PAGE_BYTES))
    page(w, "many_links", "https://links.hostile.test/", _many_links_page(MANY_LINKS))
    for k in (1, 2, 3):
        page(w, None, f"https://links.hostile.test/l/{k}",
             _small(f"L{k}", f"Linked page {k}.", ["/", "/l/1", "/l/2", "/l/3"]))
    page(w, "wide", "https://wide.hostile.test/a", _wide_page(WIDE_CHILDREN, "A", ["/a", "/b"]))
    page(w, None, "https://wide.hostile.test/b", _wide_page(WIDE_CHILDREN, "B", ["/a", "/b"]))
    page(w, "binary", "https://binary.hostile.test/", random.Random(7).randbytes(64 * 1024), headers=html_only)
    page(w, "empty_body", "https://empty.hostile.test/", b"")
    page(w, "nul_bytes", "https://nul.hostile.test/",
         _doc("Nul", "<p>Before\x00the\x00nul bytes</p><p>After them, more text.</p>").encode())
    page(w, "wrong_charset", "https://charset.hostile.test/wrong",
         _doc("Caf\xe9", "<p>Caf\xe9 cr\xe8me br\xfbl\xe9e, served daily.</p>").replace(
             "<meta charset='utf-8'>", "").encode("cp1252"))
    page(w, "missing_charset", "https://charset.hostile.test/missing",
         _doc("Caf\xe9", "<p>Caf\xe9 cr\xe8me br\xfbl\xe9e, served daily at noon.</p>").replace(
             "<meta charset='utf-8'>", "").encode("cp1252"), headers=html_only)
    gz = _doc("Gzip", "<p>Gzip-encoded payload text.</p>").encode()
    page(w, "gzip", "https://encoding.hostile.test/gzip", gzip.compress(gz, mtime=0),
         headers=utf8 + (("Content-Encoding", "gzip"),))
    ch = _doc("Chunked", "<p>Chunked payload text, in pieces.</p>").encode()
    page(w, "chunked", "https://encoding.hostile.test/chunked", _chunked(ch, 7),
         headers=utf8 + (("Transfer-Encoding", "chunked"),))
    both = _doc("Both", "<p>Gzip inside chunks.</p>").encode()
    page(w, "gzip_chunked", "https://encoding.hostile.test/both", _chunked(gzip.compress(both, mtime=0), 11),
         headers=utf8 + (("Content-Encoding", "gzip"), ("Transfer-Encoding", "chunked")))
    page(w, "bad_gzip", "https://encoding.hostile.test/badgzip", b"<html>not gzip at all</html>",
         headers=utf8 + (("Content-Encoding", "gzip"),))
    long_url = "https://longurl.hostile.test/" + "a" * (LONG_URL_CHARS - len("https://longurl.hostile.test/"))
    page(w, "long_url", long_url, _small("Long", "A page with a very long URL."))
    page(w, "idn", "https://bücher.example/", _small("Bücher", "Bücher über Bücher.", ["/seite"]),
         headers=utf8)
    page(w, "idn_punycode", "https://xn--bcher-kva.example/seite", _small("Seite", "Eine Seite.", ["/"]))
    page(w, "idn_cyrillic", "https://пример.испытание/", _small("Пример", "Пример страницы."))
    page(w, "entity_bomb", "https://bomb.hostile.test/", _bomb_page())
    # Names that would escape the output directory if a URL or site ever became a path.
    page(w, "path_dotdot_host", "https://../../etc/sitestrip-escape", _small("Esc", "Escape by host."))
    page(w, "path_dotdot_path", "https://escape.hostile.test/../../../../tmp/sitestrip-escape",
         _small("Esc", "Escape by path."))
    page(w, "path_slash_site", "http://escape.hostile.test%2F..%2F..%2Fetc/x", _small("Esc", "Escape by site."))
    page(w, None, *ordinary[1])
    corpus.files.append(w.close())

    # --- hostile-2.warc: plain (no gzip), record-level cases ------------------------
    w = _Writer(os.path.join(directory, "hostile-2.warc"), gzip_records=False)
    page(w, None, *ordinary[2])
    cut_html = _doc("Truncated", "<p>This capture stopped at the crawler's size limit, in the mid")
    page(w, "warc_truncated", "https://truncated.hostile.test/", cut_html.encode(),
         warc_headers=(("WARC-Truncated", "length"),))
    corpus.files.append(w.close())

    # --- clique.warc.gz: 250 pages that all link to each other -----------------------
    w = _Writer(os.path.join(directory, "clique.warc.gz"))
    for i in range(CLIQUE_PAGES):
        url = f"https://clique.hostile.test/p{i}"
        page(w, "clique" if i == 0 else None, url, _clique_page(i, CLIQUE_PAGES))
        corpus.clique.append(url)
    corpus.files.append(w.close())

    # --- cut.warc.gz: cut in the middle of its last record ---------------------------
    path = os.path.join(directory, "cut.warc.gz")
    w = _Writer(path)
    page(w, None, *ordinary[3])
    page(w, "before_cut", "https://cut.hostile.test/before", _small("Before", "Written before the cut."))
    rng = random.Random(11)
    filler = " ".join(f"w{rng.randrange(10 ** 6)}" for _ in range(4000))
    last = w.response("https://cut.hostile.test/cut", _doc("Cut", f"<p>{filler}</p>").encode())
    w.close()
    size = os.path.getsize(path)
    with open(path, "r+b") as fh:
        fh.truncate(last + (size - last) // 2)
    corpus.cases["cut_record"] = "https://cut.hostile.test/cut"
    corpus.expected_rows["https://cut.hostile.test/cut"] += 1
    corpus.files.append(path)

    # --- files that are not WARCs at all ---------------------------------------------
    path = os.path.join(directory, "not-a-warc.warc.gz")
    with open(path, "wb") as fh:
        fh.write(b"<html><body>This file is an HTML page, not a WARC.</body></html>\n" * 10)
    corpus.files.append(path)
    corpus.expected_rows[None] += 1
    path = os.path.join(directory, "empty.warc.gz")
    open(path, "wb").close()     # an empty file: an input lost, one errors row naming it
    corpus.files.append(path)
    corpus.expected_rows[None] += 1
    return corpus


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/helpers/hostile.py DIR")
    result = write_corpus(sys.argv[1])
    for name, url in sorted(result.cases.items()):
        print(f"{name:18} {url[:100]}")

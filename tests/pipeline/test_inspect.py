"""`sitestrip inspect`: explanation = the pipeline's row, a self-contained and inert page, and
(in headless Chromium) marks that show and toggles that work."""
import re
import struct
import subprocess
import zlib

import numpy as np
import pytest
from lxml import etree

from sitestrip.configs import Config, load_config
from sitestrip.pipeline.cli import main
from sitestrip.pipeline.inspect_view import MAIN_COLOR, MENU_COLOR, TEMPLATE_COLOR, clean_css, render
from sitestrip.transforms.explain import explain_page
from sitestrip.transforms.site_step import PageRecord, process_site
from sitestrip.transforms.blocks import render_blocks
from sitestrip.transforms.page import TEXT, parse_page
from sitestrip.transforms.tree import text_of
from helpers.warcs import response, write_warc
from helpers.fruit import ARTICLES, PAGES

SITE = "https://fruit.example"
MAGENTA = (255, 0, 255)
CSS = (b"body { margin: 16px; font: 16px sans-serif; background: #fff; }\n"
       b"#header, #footer { padding: 12px; }\n"
       b"#content { padding: 10px; }\n"
       b"blockquote.quote { background: #ff00ff; padding: 14px; margin: 12px 0; }\n"
       b".archived-css-marker { color: #123456; }\n"
       b"@import url(http://evil.example/imported.css);\n"
       b"#footer { background: url('http://evil.example/bg.png') no-repeat; }\n")
# Only page a carries these: they are not template (nothing to map onto) and sit in the content.
HOSTILE = (
    "<blockquote class='quote ss-template'>A quote only this page has, long enough to be seen.</blockquote>"
    "<script>document.documentElement.setAttribute('data-pwned', 'script')</script>"
    "<img src='http://evil.example/pixel.gif' onerror=\"document.documentElement.setAttribute('data-pwned', 'img')\">"
    "<a href='javascript:alert(1)' onclick='alert(2)'>js link</a>"
    "<iframe src='http://evil.example/frame.html' srcdoc='<script>alert(3)</script>'></iframe>"
    "<object data='http://evil.example/x.swf'><param name=movie value='http://evil.example/x.swf'></object>"
    "<embed src='http://evil.example/y.swf'>"
    "<form action='http://evil.example/post'><input type=image src='http://evil.example/btn.png'></form>"
    "<span title='\"&gt;&lt;script&gt;alert(4)&lt;/script&gt;' style=\"background: url(http://evil.example/s.png)\">"
    "&lt;/span&gt;&lt;script&gt;alert(5)&lt;/script&gt;</span>"
)


def site_page(name):
    title, first, second = ARTICLES[name]
    menu = "".join(f"<li><a href='/{p}.html'>{p.upper()}</a></li>" for p in PAGES)
    extra = HOSTILE if name == "a" else ""
    head = ("<meta http-equiv='refresh' content='0; url=http://evil.example/'>"
            "<base href='https://fruit.example/'>"
            "<link rel=stylesheet href='/site.css'>"
            "<link rel=stylesheet href='https://cdn.example/missing.css'>"
            "<style>.inline-css-marker { color: #654321 } </style></style><script>alert(6)</script>"
            if name == "a" else "<link rel=stylesheet href='/site.css'>")
    return (f"<!DOCTYPE html><html><head><title>{title}</title>{head}</head>"
            f"<body onload=\"document.documentElement.setAttribute('data-pwned', 'onload')\">"
            f"<div id=header><h1>Fruit Site</h1><ul id=menu>{menu}</ul></div>"
            f"<div id=content><h2>{title}</h2><p>{first}</p><p>{second}</p>{extra}</div>"
            f"<div id=footer><p>Copyright 2024 Fruit Site</p></div></body></html>").encode()


@pytest.fixture
def fruit_warc(tmp_path):
    records = [response(f"{SITE}/{p}.html", site_page(p)) for p in PAGES]
    records.append(response(f"{SITE}/site.css", CSS, headers=[("Content-Type", "text/css")]))
    records.append(response("https://alone.example/only.html",
                            b"<html><body><ul><li><a href='/x'>X</a></li><li><a href='/y'>Y</a></li></ul>"
                            b"<p>The only page of its site, with a few words.</p></body></html>"))
    return write_warc(tmp_path / "fruit.warc.gz", records)


def record(name, url=None):
    url = url or f"{SITE}/{name}.html"
    return PageRecord(url=url, site="fruit.example", warc_file="f.warc.gz", warc_offset=PAGES.index(name),
                      warc_record_id=f"<urn:{name}>", fetch_date="2024-01-01T00:00:00Z",
                      content_type="text/html", charset="utf-8", truncated=None,
                      page=parse_page(site_page(name).decode(), url))


@pytest.fixture(params=["conex", "learned"])
def main_config(request, tmp_path):
    """ConEx, and the block classifier with the hand-built model of write_block_model (below)."""
    if request.param == "conex":
        return _block_config("conex")
    return _block_config("learned", write_block_model(tmp_path)[0])


def _main_text_matches(expl, row):
    """The explained main mask is what the row's main_text was made of: ConEx's node set, or
    exactly the text nodes of the selected blocks (plus the elements holding only them),
    rendered one line per block."""
    page = expl.page
    if expl.block_selected is None:
        return text_of(page, expl.main) == row["main_text"]
    own = expl.analysis.blocks
    is_text = page.tag == TEXT
    return (np.array_equal(expl.main & is_text, own.blocks.node_mask(page, expl.block_selected))
            and render_blocks(own.texts, expl.block_selected) == row["main_text"])


def test_explanation_is_what_the_pipeline_writes(main_config):
    """For every page of the site, the explained masks give exactly the row's texts and numbers."""
    config = main_config
    records = [record(p) for p in PAGES]
    rows = {row["url"]: row for kind, row in process_site("fruit.example", records, config) if kind == "pages"}
    for key in records:
        expl = explain_page(key, records, config)
        row = rows[key.url]
        page = key.page
        assert row["main_text"] and _main_text_matches(expl, row)
        assert text_of(page, expl.nontemplate) == row["nontemplate_text"]
        assert expl.candidate_method == row["candidate_method"] == "cs"
        assert expl.conex_selection.candidates == row["candidate_urls"]
        assert expl.template_selection.candidates == row["template_candidate_urls"]
        assert expl.conex_selection.cs_size == row["cs_size"]
        assert expl.template_share == pytest.approx(row["template_share"])
        assert [(u, t) for u, t in expl.menu.links] == [(m["url"], m["text"]) for m in row["menu_links"]]
        # the template view drops exactly what nontemplate_text leaves out
        text = page.tag == TEXT
        assert np.array_equal(text & ~expl.removed, expl.nontemplate)
        assert expl.occurrences[0] == 3 and expl.site_pages == 5


def test_single_page_site_is_explained_with_page_level_methods(main_config):
    config = main_config
    key = record("a", url="https://fruit.example/a.html")
    expl = explain_page(key, [key], config)
    (kind, row), = list(process_site("fruit.example", [key], config))
    assert expl.candidate_method == row["candidate_method"] == "page_only"
    assert expl.occurrences is None and expl.template_share is None
    assert row["main_text"] and _main_text_matches(expl, row)
    assert text_of(key.page, expl.nontemplate) == row["nontemplate_text"]
    assert expl.template.any() and np.array_equal(expl.template, expl.menu_mask)


def _inspected(fruit_warc, tmp_path, url=f"{SITE}/a.html"):
    """The view with ConEx main content (what these tests expect: its main-content root, its
    candidate method), so that they do not depend on what the shipped model learned."""
    out = tmp_path / "page.html"
    conex = tmp_path / "conex.yaml"
    conex.write_text("main_content:\n  method: conex\n", encoding="utf-8")
    assert main(["inspect", "--input", fruit_warc, "--url", url, "--out", str(out),
                 "--config", str(conex)]) == 0
    return out, out.read_text(encoding="utf-8")


def test_inspect_page_is_self_contained_and_inert(fruit_warc, tmp_path, capsys):
    out, doc = _inspected(fruit_warc, tmp_path)
    assert "candidate method partial_cs" in capsys.readouterr().out
    tree = etree.fromstring(doc.encode(), etree.HTMLParser())
    # one script: ours, carrying the nonce the CSP allows
    scripts = tree.findall(".//script")
    assert len(scripts) == 1
    csp = tree.find(".//meta[@http-equiv='Content-Security-Policy']").get("content")
    assert f"'nonce-{scripts[0].get('nonce')}'" in csp and "default-src 'none'" in csp
    assert "alert(" not in "".join(s.text or "" for s in scripts)
    for el in tree.iter():
        if not isinstance(el.tag, str):
            continue
        for name, value in el.attrib.items():
            assert not name.startswith("on"), (el.tag, name)
            assert name not in ("srcdoc", "data", "action", "srcset"), (el.tag, name)
            if name in ("src", "href"):
                assert value.startswith(("data:", "https://fruit.example/")), (el.tag, name, value)
    assert tree.find(".//base") is None and tree.find(".//link") is None
    assert tree.find(".//meta[@http-equiv='refresh']") is None
    # nothing of the hostile host, the missing CDN stylesheet or an import survives anywhere
    assert "evil.example" not in doc and "cdn.example" not in doc and "@import" not in doc
    assert re.search(r"url\((?!data:)", doc) is None
    # the archived stylesheet and the page's own <style> are inlined
    assert ".archived-css-marker" in doc and ".inline-css-marker" in doc
    # a hostile attribute value stays an attribute value, hostile text stays text
    span = [el for el in tree.iter("span") if el.get("title")][0]
    assert span.get("title") == '"><script>alert(4)</script>'
    assert "</span><script>alert(5)</script>" in "".join(span.itertext())
    # the page's own "ss-" classes are not taken for marks
    quote = tree.find(".//blockquote")
    assert "ss-template" not in quote.get("class").split() and "quote" in quote.get("class").split()


def test_inspect_page_marks_every_node(fruit_warc, tmp_path):
    _, doc = _inspected(fruit_warc, tmp_path)
    tree = etree.fromstring(doc.encode(), etree.HTMLParser())
    key = record("a")
    annotated = {int(el.get("data-ss-node")): el for el in tree.iter() if el.get("data-ss-node") is not None}
    assert sorted(annotated) == list(range(key.page.size))
    menu = tree.find(".//ul[@id='menu']")
    assert "ss-menu" in menu.get("class").split() and "ss-template" in menu.get("class").split()
    assert menu.get("data-ss-occ") == "2"   # found in both template candidates (tuned template_n 2)
    header = tree.find(".//div[@id='header']")
    assert "ss-tb" in header.get("class").split()             # a block that is template throughout
    content = tree.find(".//div[@id='content']")
    assert "ss-mr" in content.get("class").split()            # the main content's root
    first = content.find("p/span")
    assert first.text == ARTICLES["a"][1]
    assert {"ss-t", "ss-main"} <= set(first.get("class").split())
    assert "ss-template" not in first.get("class").split()
    title = tree.find(".//h1/span")
    assert title.text == "Fruit Site" and "ss-template" in title.get("class").split()
    # hidden per mode: the template block in the main view, the article text in the template view
    assert "ss-h-main" in header.get("class").split()
    assert "ss-h-nontemplate" in header.get("class").split()
    assert "ss-h-template" in first.get("class").split()
    # libxml2 nests what follows <embed> inside it, a browser does not: wrapped to hide along with it
    embed = tree.find(".//embed")
    wrapper = embed.getnext() if embed.getnext() is not None else embed.find("span")
    assert wrapper.tag == "span" and "ss-void" in wrapper.get("class").split()
    assert "ss-h-template" in wrapper.get("class").split() and wrapper.find(".//form") is not None


def test_inspect_errors_name_the_problem(fruit_warc, tmp_path, capsys):
    assert main(["inspect", "--input", fruit_warc, "--url", f"{SITE}/zzz.html",
                 "--out", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err
    assert "not an HTML 200 page of the inputs" in err and f"{SITE}/a.html" in err
    assert main(["inspect", "--input", fruit_warc, "--url", "https://nowhere.example/",
                 "--out", str(tmp_path / "x.html")]) == 2
    assert "no page of nowhere.example" in capsys.readouterr().err
    assert not (tmp_path / "x.html").exists()


def test_inspect_finds_a_page_by_its_target_uri_or_its_normalized_url(tmp_path, capsys):
    """A pages row names a page by its WARC-Target-URI as written (`url`) and by its
    normalized URL (`url_normalized`): inspect takes either, since it normalizes both sides."""
    raw = "HTTPS://Fruit.Example:443/a.html"
    warc = write_warc(tmp_path / "raw.warc.gz", [response(raw if p == "a" else f"{SITE}/{p}.html", site_page(p))
                                                 for p in PAGES])
    docs = []
    for url in (raw, f"{SITE}/a.html"):
        out = tmp_path / "page.html"
        assert main(["inspect", "--input", warc, "--url", url, "--out", str(out)]) == 0
        # the script nonce is drawn per view
        docs.append(re.sub(r"nonce[-=][\"']?[A-Za-z0-9+/_=-]+", "nonce", out.read_text(encoding="utf-8")))
    assert docs[0] == docs[1] and "Apple" in docs[0]
    assert f"sitestrip inspect: {SITE}/a.html: candidate method " in capsys.readouterr().out


def test_single_page_site_inspects_with_page_level_methods(fruit_warc, tmp_path):
    out, doc = _inspected(fruit_warc, tmp_path, url="https://alone.example/only.html")
    assert "page_only" in doc and "data-ss-occ=" not in doc
    tree = etree.fromstring(doc.encode(), etree.HTMLParser())
    assert "ss-menu" in tree.find(".//ul").get("class").split()


@pytest.mark.parametrize("config, shown", [("default", True), ("published", False)])
def test_inspect_follows_the_presets_parse_rules(tmp_path, config, shown):
    """Under the published preset <noscript> is dropped and <select> is an ordinary element
    (design §1): the view annotates exactly the compact page's nodes either way, and shows the
    <noscript> note only under the defaults, which read it as text."""
    def page(name):
        return (f"<html><body><div id=nav><a href=/a.html>A</a> <a href=/b.html>B</a></div>"
                f"<div id=content><p>Page {name} text.</p><noscript><p>Note on {name}</p></noscript>"
                f"<select><option>Choice {name}</option></select></div></body></html>").encode()
    warc = write_warc(tmp_path / "n.warc.gz", [response(f"https://n.example/{x}.html", page(x)) for x in "ab"])
    out = tmp_path / "n.html"
    assert main(["inspect", "--input", warc, "--url", "https://n.example/a.html", "--out", str(out),
                 "--config", config]) == 0
    tree = etree.fromstring(out.read_text(encoding="utf-8").encode(), etree.HTMLParser())
    nodes = sorted(int(el.get("data-ss-node")) for el in tree.iter() if el.get("data-ss-node") is not None)
    rules = load_config(config).read.parse_rules()
    compact = parse_page(page("a").decode(), "https://n.example/a.html", rules=rules)
    assert nodes == list(range(compact.size))
    assert ("Note on a" in "".join(tree.itertext())) == shown
    # the option's text is a node of its own only where <select> is not a leaf
    option = tree.find(".//option")
    assert (option.find("span") is not None) == (not rules.widget_leaves)


def test_css_cleaning_and_serializer_edge_cases():
    css = clean_css("@import 'x.css'; a{background:URL( \"http://e/x.png\" )} b{src: url(f.woff)}"
                    "c{background-image:image-set('a.png' 1x)} </style><script>")
    assert "@import" not in css and "http://e" not in css and "f.woff" not in css
    assert "image-set(" not in css and "</style" not in css
    html = ("<html><body><p>x</p><xmp><b>raw</b></xmp><textarea></textarea><script>bad()</script>"
            "</textarea><plaintext><p>after plaintext</p></body></html>")
    key = PageRecord(url="http://e.example/", site="e.example", warc_file="w", warc_offset=0,
                     warc_record_id="", fetch_date="", content_type="text/html", charset="utf-8",
                     truncated=None, page=parse_page(html, "http://e.example/"))
    doc = render(explain_page(key, [key], Config()), html, {}, Config())
    assert "<plaintext" not in doc and "<xmp" not in doc
    assert doc.count("<script") == 1 and "bad()" not in doc
    assert doc.rstrip().endswith("</html>")


# ---------------------------------------------------------------------------
# Headless Chromium: the page as a browser shows it

WINDOW = (1200, 800)
PANEL = 360            # the side panel's width: its legend uses the marker colours too


def _browse(binary, tmp_path, url, *args):
    profile = tmp_path / "chromium-profile"
    profile.mkdir(exist_ok=True)
    cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", "--hide-scrollbars", "--force-color-profile=srgb",
           "--force-device-scale-factor=1", f"--window-size={WINDOW[0]},{WINDOW[1]}", *args, url]
    done = subprocess.run(cmd, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    return done.stdout.decode("utf-8", "replace")


def read_png(path) -> np.ndarray:
    """8-bit RGB/RGBA PNG → (height, width, 3) uint8. Enough of PNG for Chromium's screenshots."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, []
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color in (2, 6) and interlace == 0
        elif kind == b"IDAT":
            idat.append(body)
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.int64)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=y * (stride + 1) + 1).astype(np.int64)
        if kind == 0:
            row = line
        elif kind == 1:        # Sub: a running sum per channel
            row = np.cumsum(line.reshape(width, bpp), axis=0).reshape(-1) & 255
        elif kind == 2:        # Up
            row = (line + prev) & 255
        else:                  # Average, Paeth: each byte needs the one to its left
            up, vals, acc = prev.tolist(), line.tolist(), [0] * stride
            for i in range(stride):
                a = acc[i - bpp] if i >= bpp else 0
                b = up[i]
                if kind == 3:
                    pred = (a + b) >> 1
                else:
                    c = up[i - bpp] if i >= bpp else 0
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                acc[i] = (vals[i] + pred) & 255
            row = np.array(acc, dtype=np.int64)
        out[y] = row
        prev = row
    return out.reshape(height, width, bpp)[:, :, :3]


def _count(pixels, hex_color) -> int:
    if isinstance(hex_color, str):
        hex_color = tuple(int(hex_color[i:i + 2], 16) for i in (1, 3, 5))
    return int(np.all(pixels == np.array(hex_color, dtype=np.uint8), axis=2).sum())


def test_png_reader_on_a_hand_made_png(tmp_path):
    """Each filter type once, on a 3x2 RGB image, against the pixels it was made from."""
    pixels = np.array([[[10, 20, 30], [200, 100, 50], [255, 0, 255]],
                       [[1, 2, 3], [40, 50, 60], [90, 80, 70]]], dtype=np.int64)

    def filtered(row, prev, kind):
        out = []
        flat, up = row.reshape(-1).tolist(), prev.reshape(-1).tolist()
        for i, x in enumerate(flat):
            a = flat[i - 3] if i >= 3 else 0
            b, c = up[i], (up[i - 3] if i >= 3 else 0)
            p = a + b - c
            paeth = a if abs(p - a) <= abs(p - b) and abs(p - a) <= abs(p - c) else (b if abs(p - b) <= abs(p - c) else c)
            out.append((x - [0, a, b, (a + b) >> 1, paeth][kind]) & 255)
        return bytes([kind] + out)

    for kinds in ((0, 1), (2, 3), (4, 4)):
        raw = filtered(pixels[0], np.zeros(3 * 3, dtype=np.int64), kinds[0]) + \
            filtered(pixels[1], pixels[0], kinds[1])

        def chunk(kind, body):
            return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 3, 2, 8, 2, 0, 0, 0))
               + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
        path = tmp_path / f"t{kinds[0]}.png"
        path.write_bytes(png)
        assert read_png(path).tolist() == pixels.tolist(), kinds


def test_chromium_runs_only_our_script_and_applies_modes(chromium, fruit_warc, tmp_path):
    out, doc = _inspected(fruit_warc, tmp_path)
    tree = etree.fromstring(doc.encode(), etree.HTMLParser())
    menu_node = tree.find(".//ul[@id='menu']").get("data-ss-node")
    for mode in ("marked", "original", "template", "main", "nontemplate"):
        dom = _browse(chromium, tmp_path, f"{out.as_uri()}#mode={mode}&node={menu_node}", "--dump-dom")
        root = etree.fromstring(dom.encode(), etree.HTMLParser())
        classes = root.get("class").split()
        assert root.get("data-ss-mode") == mode
        assert f"ss-mode-{mode}" in classes
        assert ("ss-marks" in classes) == (mode != "original")
        assert sum(c.startswith("ss-mode-") for c in classes) == 1
        pressed = root.findall(".//button[@aria-pressed='true']")
        assert [b.get("data-ss-mode") for b in pressed] == [mode]
        # the page's script, onload and onerror never ran
        assert root.get("data-pwned") is None
        # the node named in the URL is shown as on hover: its occurrences and labels
        info = root.find(".//*[@id='ss-hover-info']")
        assert info.get("data-ss-shown") == menu_node
        shown = " ".join(info.itertext())
        assert "<ul>" in shown and "mapped into 2 of 2 template candidate pages" in shown
        assert "template" in shown and "in the menu" in shown


def test_chromium_screenshots_show_the_marks_and_the_toggles(chromium, fruit_warc, tmp_path):
    """Marker colours counted in the page area (left of the panel), per mode. The quote only page
    a has is magenta by the archived stylesheet: main content, not template."""
    out, _ = _inspected(fruit_warc, tmp_path)
    seen = {}
    for mode in ("marked", "original", "template", "main", "nontemplate"):
        png = tmp_path / f"{mode}.png"
        _browse(chromium, tmp_path, f"{out.as_uri()}#mode={mode}", f"--screenshot={png}")
        pixels = read_png(png)
        assert pixels.shape[:2] == (WINDOW[1], WINDOW[0])
        page_area = pixels[:, : WINDOW[0] - PANEL - 10]
        seen[mode] = {name: _count(page_area, color) for name, color in
                      (("template", TEMPLATE_COLOR), ("main", MAIN_COLOR), ("menu", MENU_COLOR),
                       ("quote", MAGENTA))}
    visible = {mode: {k for k, n in counts.items() if n >= 40} for mode, counts in seen.items()}
    assert visible["marked"] == {"template", "main", "menu", "quote"}, seen
    assert visible["original"] == {"quote"}, seen
    assert visible["template"] == {"template", "menu"}, seen
    assert visible["main"] == {"main", "quote"}, seen
    assert visible["nontemplate"] == {"main", "quote"}, seen


def test_deep_pages_render_without_recursion(main_config):
    depth = 4000
    html = "<html><body>" + "<div>x" * depth + "</div>" * depth + "</body></html>"
    key = PageRecord(url="http://deep.example/", site="deep.example", warc_file="w", warc_offset=0,
                     warc_record_id="", fetch_date="", content_type="text/html", charset="utf-8",
                     truncated=None, page=parse_page(html, "http://deep.example/"))
    doc = render(explain_page(key, [key], main_config), html, {}, main_config)
    nodes = [int(n) for n in re.findall(r'data-ss-node="(\d+)"', doc)]
    assert sorted(nodes) == list(range(key.page.size))
    if main_config.main_content.method != "conex":
        # each "x" is its own block (a nested div cuts it from the next) and carries it
        texts = int((key.page.tag == TEXT).sum())
        assert texts > 1000 and len(re.findall(r'<span class="ss-t[^"]*"[^>]* data-ss-block="\d+" '
                                               r'data-ss-p="', doc)) == texts


def test_unreadable_input_is_a_clear_error(tmp_path, capsys):
    missing = tmp_path / "gone.warc.gz"
    from sitestrip.pipeline.inspect_view import InspectError, load_site
    with pytest.raises(InspectError, match="cannot read"):
        load_site([str(missing)], "https://fruit.example/a.html")


# ---------------------------------------------------------------------------
# Block classification (design §10): each block's content probability and the threshold

BLOCK_SITE = "https://blocks.example"
BLOCK_PAGES = {"x": ("Pears ripen off the tree, so growers pick them hard.",
                     "A ripe pear yields to gentle pressure near the stem."),
               "y": ("Plums come in hundreds of kinds, from yellow to purple.",
                     "Dried plums keep for a year in a cool place."),
               "z": ("Quinces are too hard to eat raw and are cooked first.",
                     "Quince paste is served with cheese in Spain.")}


def block_page(name: str) -> str:
    first, second = BLOCK_PAGES[name]
    menu = "".join(f"<li><a href='/{p}.html'>{p.upper()} page</a></li>" for p in BLOCK_PAGES)
    return (f"<html><head><title>{name}</title></head><body><ul id=menu>{menu}</ul>"
            f"<div id=story><p>{first}</p><p>{second}</p></div>"
            f"<p id=legal>Copyright 2024 Blocks Example</p></body></html>")


def block_record(name: str) -> PageRecord:
    url = f"{BLOCK_SITE}/{name}.html"
    return PageRecord(url=url, site="blocks.example", warc_file="b.warc.gz",
                      warc_offset=list(BLOCK_PAGES).index(name), warc_record_id=f"<urn:{name}>",
                      fetch_date="2024-01-01T00:00:00Z", content_type="text/html", charset="utf-8",
                      truncated=None, page=parse_page(block_page(name), url))


def _leaf(value):
    return {"feature": [-1], "threshold": [0.0], "left": [-1], "right": [-1], "default_left": [0],
            "value": [value]}


def _split(feature, threshold, left, right):
    from sitestrip.transforms.features import FEATURE_NAMES
    return {"feature": [FEATURE_NAMES.index(feature), -1, -1], "threshold": [threshold, 0.0, 0.0],
            "left": [1, -1, -1], "right": [2, -1, -1], "default_left": [0, 0, 0],
            "value": [0.0, left, right]}


def write_block_model(tmp_path, kind="gbdt", threshold=0.6) -> tuple[str, str]:
    """(path, model_id) of a tiny model over the shipped feature set.

    gbdt: base 0; tree 0 `link_char_share <= 0.5` -> +1 | -1; tree 1
    `contains_rights <= 0.5` -> 0 | -1. So a menu item (all link text) scores
    sigmoid(-1), a story paragraph sigmoid(1), the copyright line sigmoid(0) = 0.5.
    ceml: one leaf per instance group, P 0.9 for p, 0.3 for li, 0.5 elsewhere."""
    from sitestrip_bench.train_models import write_model
    from sitestrip.transforms.blocks import GROUPS
    from sitestrip.transforms.features import FEATURE_NAMES, FEATURE_SET_VERSION
    if kind == "gbdt":
        payload = {"base_score": 0.0, "trees": [_split("link_char_share", 0.5, 1.0, -1.0),
                                                _split("contains_rights", 0.5, 0.0, -1.0)]}
    else:
        payload = {"group_names": list(GROUPS),
                   "trees": [_leaf({"p": 0.9, "li": 0.3}.get(g, 0.5)) for g in GROUPS]}
    path = str(tmp_path / f"{kind}.json.gz")
    model_id = write_model(path, kind, payload, FEATURE_NAMES, FEATURE_SET_VERSION, threshold,
                           {"note": "hand-built for tests/pipeline/test_inspect.py"})
    return path, model_id


def _sig(z):
    return 1 / (1 + np.exp(-z))


# Blocks of each page, document order: the three menu items, the two story paragraphs, the
# copyright line. Raw gbdt probabilities s(-1), s(-1), s(-1), s(1), s(1), 0.5; smoothed with the
# default neighbour weight 0.1 (0.8 p + 0.1 previous + 0.1 next, an end block counting itself):
LEARNED_P = [_sig(-1), _sig(-1), 0.9 * _sig(-1) + 0.1 * _sig(1), 0.9 * _sig(1) + 0.1 * _sig(-1),
             0.9 * _sig(1) + 0.05, 0.45 + 0.1 * _sig(1)]   # 0.269 0.269 0.315 0.685 0.708 0.523


def _block_config(method, model=""):
    from sitestrip.configs import config_from_dict
    return config_from_dict({"main_content": {"method": method, "model": model}})


def _rendered(name, config):
    records = [block_record(p) for p in BLOCK_PAGES]
    key = records[list(BLOCK_PAGES).index(name)]
    expl = explain_page(key, records, config)
    doc = render(expl, block_page(name), {}, config)
    return expl, etree.fromstring(doc.encode(), etree.HTMLParser()), records


def test_learned_blocks_carry_their_probability_and_the_panel_the_threshold(tmp_path):
    """With threshold 0.6 the story paragraphs (blocks 3, 4: 0.685, 0.708) are main and the
    copyright line (0.523) is not: main_text is the two paragraphs, and exactly their text
    is marked main, their div outlined as the main region."""
    path, model_id = write_block_model(tmp_path)
    config = _block_config("learned", path)
    expl, tree, records = _rendered("x", config)
    key = records[0]
    np.testing.assert_allclose(expl.block_proba, LEARNED_P, rtol=1e-6)
    row = {r["url"]: r for kind, r in process_site("blocks.example", records, config) if kind == "pages"}[key.url]
    assert row["main_text"] == "\n".join(BLOCK_PAGES["x"])
    # Every text piece carries its block and the probability the threshold saw.
    spans = [el for el in tree.iter("span") if "ss-t" in (el.get("class") or "").split()]
    assert [int(s.get("data-ss-block")) for s in spans] == [0, 1, 2, 3, 4, 5]
    assert [s.get("data-ss-p") for s in spans] == [f"{p:.4f}" for p in LEARNED_P]
    assert [s.text for s in spans if "ss-main" in s.get("class").split()] == list(BLOCK_PAGES["x"])
    # An element inside one block carries that block; one spanning several, their range.
    link = tree.find(".//li/a")
    assert (link.get("data-ss-block"), link.get("data-ss-p")) == ("0", f"{LEARNED_P[0]:.4f}")
    assert tree.find(".//ul").get("data-ss-blocks") == "0-2" and tree.find(".//ul").get("data-ss-p") is None
    story = tree.find(".//div[@id='story']")
    assert story.get("data-ss-blocks") == "3-4"
    assert {"ss-main", "ss-mr"} <= set(story.get("class").split())
    legal = tree.find(".//p[@id='legal']")
    assert legal.get("data-ss-block") == "5" and "ss-main" not in legal.get("class").split()
    # The side panel: method, the model's short id, the threshold, main blocks of all blocks.
    panel = tree.find(".//aside[@id='ss-panel']")
    assert "".join(panel.find(".//*[@id='ss-threshold']").itertext()) == "0.6"
    assert " ".join("".join(panel.find(".//*[@id='ss-main-blocks']").itertext()).split()) == "2 of 6"
    assert model_id[:12] in "".join(panel.itertext()) and "learned" in "".join(panel.itertext())
    script = tree.find(".//script").text
    assert '{"threshold": 0.6, "main": [0, 0, 0, 1, 1, 0]}' in script


def test_ceml_probabilities_are_its_trees_after_the_hard_rules(tmp_path):
    """ceml takes each group's leaf as is (no smoothing): menu items (li) 0.3, paragraphs 0.9;
    no hard rule applies (the items are li, the paragraphs are neither links nor in a menu).
    Threshold 0.5: the paragraphs and the copyright line are main."""
    path, _ = write_block_model(tmp_path, "ceml", threshold=0.5)
    config = _block_config("ceml", path)
    expl, tree, _ = _rendered("y", config)
    spans = [el for el in tree.iter("span") if "ss-t" in (el.get("class") or "").split()]
    assert [s.get("data-ss-p") for s in spans] == ["0.3000"] * 3 + ["0.9000"] * 3
    assert expl.block_selected.tolist() == [False] * 3 + [True] * 3
    panel_text = " ".join("".join(tree.find(".//aside").itertext()).split())
    assert "ceml: seed 002's published classifier" in panel_text and "3 of 6" in panel_text


def test_conex_has_no_block_probabilities():
    config = _block_config("conex")
    expl, tree, _ = _rendered("x", config)
    assert expl.block_proba is None and expl.node_blocks() is None
    assert not [el for el in tree.iter() if el.get("data-ss-p") or el.get("data-ss-block")]
    assert tree.find(".//*[@id='ss-threshold']") is None
    assert "no blocks, so no content probabilities" in "".join(tree.find(".//aside").itertext())
    assert "var blocks = null;" in tree.find(".//script").text


def test_chromium_hover_shows_a_blocks_probability(chromium, tmp_path):
    """The pinned node (`#node=N`, shown as on hover) of each story paragraph's text, of the
    copyright line and of the menu list, with the learned model above."""
    path, _ = write_block_model(tmp_path)
    config_file = tmp_path / "blocks.yaml"
    config_file.write_text(f"main_content:\n  method: learned\n  model: {path}\n", encoding="utf-8")
    warc = write_warc(tmp_path / "blocks.warc.gz",
                      [response(f"{BLOCK_SITE}/{p}.html", block_page(p).encode()) for p in BLOCK_PAGES])
    out = tmp_path / "x.html"
    assert main(["inspect", "--input", warc, "--url", f"{BLOCK_SITE}/x.html", "--out", str(out),
                 "--config", str(config_file)]) == 0
    tree = etree.fromstring(out.read_bytes(), etree.HTMLParser())
    spans = {int(s.get("data-ss-block")): s.get("data-ss-node") for s in tree.iter("span")
             if s.get("data-ss-block") is not None}
    expected = {spans[3]: "block 3 \u00b7 content probability 0.68 (threshold 0.60) \u2192 main",
                spans[5]: "block 5 \u00b7 content probability 0.52 (threshold 0.60) \u2192 not main",
                tree.find(".//ul").get("data-ss-node"): "blocks 0\u20132: 0 of 3 main"}
    for node, line in expected.items():
        dom = _browse(chromium, tmp_path, f"{out.as_uri()}#node={node}", "--dump-dom")
        info = etree.fromstring(dom.encode(), etree.HTMLParser()).find(".//*[@id='ss-hover-info']")
        assert info.get("data-ss-shown") == node
        assert line in [" ".join(div.itertext()) for div in info], list(info.itertext())


def test_inspect_without_input_where_the_sample_is_not_installed(tmp_path, capsys, monkeypatch):
    """An installed wheel has no sample/: one line saying to give --input, not a path error."""
    from sitestrip.pipeline import cli
    monkeypatch.setattr(cli, "SAMPLE_WARC", str(tmp_path / "sample" / "sitestrip-sample.warc.gz"))
    assert main(["inspect", "--url", "https://www.sqlite.org/about.html", "--out", str(tmp_path / "p.html")]) == 2
    err = capsys.readouterr().err
    assert "the embedded sample is not installed" in err and "--input" in err
    assert len(err.strip().splitlines()) == 1

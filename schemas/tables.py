"""Arrow schemas of the three output datasets (DESIGN "Outputs").

Column names are a contract with the indexers that load the output; add
columns, never rename or retype them without bumping SCHEMA_VERSION.
"""
from __future__ import annotations

import pyarrow as pa

# 2: `url` is the record's WARC-Target-URI as written (it was the normalized URL, now
# `url_normalized`); `status` gained `partial` and `parse_failed`; timing_ms gained
# `blocks` and `classify` (SPEC §10 main content).
# 3: pages gained `main_markdown`, `language`, `language_score`, and what the page declares
# (`html_lang`, `canonical_url`, `description`, `published_date`, `author`); timing_ms
# gained `markdown` and `language`.
SCHEMA_VERSION = "3"

LINK = pa.struct([("url", pa.string()), ("text", pa.string())])

# Stages whose CPU time each pages row reports, in pipeline order. Stages the
# row's method did not run are null. "etdm" is the share of "template" and
# "site_conex" spent mapping trees; "total" counts it once. "blocks" (blocks and
# their features) and "classify" (the block model) are SPEC §10's main content;
# "markdown" and "language" make main_markdown and language from it.
TIMING_STAGES = ("read", "parse", "candidates", "etdm", "template", "site_conex",
                 "page_conex", "menex", "blocks", "classify", "markdown", "language", "total")
TIMING = pa.struct([(stage, pa.float32()) for stage in TIMING_STAGES])

METHODS = ("cs", "partial_cs", "linked", "site_sample", "page_only")

PAGES = pa.schema([
    ("url", pa.string()),                  # WARC-Target-URI as written: joins the archive and its index
    ("url_normalized", pa.string()),       # what site keys, links and candidate URLs use
    ("site", pa.string()),
    ("warc_file", pa.string()),
    ("warc_offset", pa.int64()),
    ("warc_record_id", pa.string()),
    ("fetch_date", pa.string()),           # WARC-Date as recorded (ISO 8601)
    ("content_type", pa.string()),
    ("charset", pa.string()),
    ("truncated", pa.string()),            # WARC-Truncated reason, null if complete
    ("title", pa.string()),
    # What the page declares about itself (transforms/meta.py); null when it does not.
    ("html_lang", pa.string()),            # <html lang>, BCP 47 casing ("en-US")
    ("canonical_url", pa.string()),        # <link rel=canonical> or og:url, absolute, normalized
    ("description", pa.string()),          # meta description, og:/twitter:description, JSON-LD
    ("published_date", pa.string()),       # ISO 8601: article:published_time, JSON-LD, meta names
    ("author", pa.string()),               # meta author, JSON-LD author names, ...
    ("main_text", pa.string()),
    ("main_markdown", pa.string()),        # the same content as CommonMark (transforms/markdown.py)
    ("language", pa.string()),             # ISO 639-1 of main_text (transforms/language.py)
    ("language_score", pa.float32()),      # the identifier's probability of `language`
    ("nontemplate_text", pa.string()),
    ("menu_links", pa.list_(LINK)),
    ("method", pa.string()),
    ("candidate_urls", pa.list_(pa.string())),
    ("cs_size", pa.int32()),
    ("pages_loaded", pa.int32()),
    ("template_share", pa.float32()),
    ("template_candidate_urls", pa.list_(pa.string())),  # TemEx/HybEx candidates (n = 3)
    ("words_page", pa.int32()),
    ("words_main", pa.int32()),
    ("html_bytes", pa.int64()),
    ("timing_ms", TIMING),
    ("status", pa.string()),               # transforms/status.py: ok | empty | partial | parse_failed
    ("notes", pa.list_(pa.string())),
], metadata={"sitestrip.schema_version": SCHEMA_VERSION, "sitestrip.dataset": "pages"})

MENUS = pa.schema([
    ("site", pa.string()),
    ("menu_signature", pa.string()),       # hash of the menu's normalized link URLs, in order
    ("menu_links", pa.list_(LINK)),
    ("pages", pa.int64()),                 # pages of the site carrying this menu
    ("example_url", pa.string()),          # the smallest such page URL
], metadata={"sitestrip.schema_version": SCHEMA_VERSION, "sitestrip.dataset": "menus"})

ERRORS = pa.schema([
    ("url", pa.string()),                  # WARC-Target-URI; null for a file or a non-page record
    ("warc_file", pa.string()),
    ("warc_offset", pa.int64()),
    ("stage", pa.string()),                # read | decode | parse | site | menex | page_conex | ...
    ("error_class", pa.string()),
    ("message", pa.string()),
], metadata={"sitestrip.schema_version": SCHEMA_VERSION, "sitestrip.dataset": "errors"})

DATASETS = {"pages": PAGES, "menus": MENUS, "errors": ERRORS}

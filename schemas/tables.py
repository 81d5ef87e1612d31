"""Arrow schemas of the output datasets (design "Outputs").

Column names are a contract with the indexers that load the output; add
columns, never rename or retype them without bumping SCHEMA_VERSION; CHANGELOG.md
says what each version changed.
"""
from __future__ import annotations

import pyarrow as pa

# 2: `url` is the record's WARC-Target-URI as written (it was the normalized URL, now
# `url_normalized`); `status` gained `partial` and `parse_failed`; timing_ms gained
# `blocks` and `classify` (design §10 main content).
# 3: pages gained `template_cluster` (design §11), `candidate_sources` and `menu_signature`
# (menus rows are per site menu block, design §12); method gained `cluster`; the `sites`
# dataset (one row per site shard and template cluster); `state_candidate_urls` (--state).
# Pages also gained `main_markdown`,
# `language`, `language_score`, and what the page declares (`html_lang`, `canonical_url`,
# `description`, `published_date`, `author`); timing_ms gained `markdown` and `language`.
# 4: pages gained `page_type` and `page_type_score` (docs/algorithms.md "Page type").
# 5: pages gained `content_hash`, `near_signature`, `duplicate_of`, `duplicate_of_record` and
# `duplicate_kind` (docs/algorithms.md "Duplicates"); timing_ms gained `duplicates`.
# 6: the `links` dataset (one row per source page and link, transforms/outlinks.py; output.links);
# timing_ms gained `links`.
# 7: pages' `method` is `candidate_method` (how the candidate pages were found, which the name
# `method` confused with main_content.method); every column's description is in its field metadata.
SCHEMA_VERSION = "7"

# Columns renamed since an earlier schema version, per dataset: {name now: name before}. Readers of
# older output (`sitestrip report`) read the old name under the new one.
RENAMED_COLUMNS = {"pages": {"candidate_method": "method"}}

LINK = pa.struct([("url", pa.string()), ("text", pa.string())])

# Stages whose CPU time each pages row reports, in pipeline order. Stages the
# row's candidate method did not run are null. "etdm" is the share of "template" and
# "site_conex" spent mapping trees; "total" counts it once. "blocks" (blocks and
# their features) and "classify" (the block model) are design §10's main content;
# "markdown" and "language" make main_markdown and language from it; "links" the page's
# links for the links dataset (null with output.links off).
TIMING_STAGES = ("read", "parse", "candidates", "etdm", "template", "site_conex",
                 "page_conex", "menex", "blocks", "classify", "markdown", "language", "duplicates", "links",
                 "total")
TIMING = pa.struct([(stage, pa.float32()) for stage in TIMING_STAGES])

# The values of pages' `candidate_method`: how a key page's candidate pages were found (design §4).
METHODS = ("cs", "partial_cs", "linked", "cluster", "site_sample", "page_only")

def column(name: str, type_: pa.DataType, description: str) -> pa.Field:
    """An output column with its description in the field metadata: the Parquet files carry it,
    and README's column tables are generated from it (schemas/readme.py)."""
    return pa.field(name, type_, metadata={"description": description})


def description(field: pa.Field) -> str:
    return (field.metadata or {}).get(b"description", b"").decode()


PAGES = pa.schema([
    column("url", pa.string(),
           "the record's `WARC-Target-URI` as written (without the angle brackets some WARC 1.0 "
           "writers add): it joins the archive and its CDX/columnar index"),
    column("url_normalized", pa.string(),
           "the URL normalized (lower-case scheme and host, punycode, default port, dot segments "
           "and fragment dropped, percent-encoding normalized), as links, candidate URLs and "
           "`links/` name pages"),
    column("site", pa.string(), "site key: the host without one leading `www.` (`sqlite.org`)"),
    column("warc_file", pa.string(), "the WARC file the record is in, as given to `--input`"),
    column("warc_offset", pa.int64(),
           "offset of the record's gzip member (in an uncompressed WARC, of the record)"),
    column("warc_record_id", pa.string(), "`WARC-Record-ID`"),
    column("fetch_date", pa.string(), "when it was fetched: `WARC-Date`, ISO 8601"),
    column("content_type", pa.string(), "the payload's MIME type"),
    column("charset", pa.string(),
           "the charset used to decode it (HTTP header, then `<meta>`, then detection)"),
    column("truncated", pa.string(), "the record's `WARC-Truncated` reason; null if complete"),
    column("title", pa.string(), "`<title>`"),
    # What the page declares about itself (transforms/meta.py); null when it does not.
    column("html_lang", pa.string(),
           "the declared `<html lang>` (or `xml:lang`), a BCP 47 tag in its usual casing (`en-US`)"),
    column("canonical_url", pa.string(),
           "`<link rel=\"canonical\">`, else `og:url`: absolute, normalized"),
    column("description", pa.string(),
           "`<meta name=\"description\">`, else `og:description`, `twitter:description`, JSON-LD "
           "`description` (whitespace collapsed, at most 1,000 characters)"),
    column("published_date", pa.string(),
           "the declared publication date (`article:published_time`, JSON-LD `datePublished`, "
           "date meta tags), ISO 8601: a date, or a moment with its declared offset"),
    column("author", pa.string(),
           "`<meta name=\"author\">`, else JSON-LD `author` names, `article:author`, `dc.creator`, "
           "... (never a URL); several names joined by `, `"),
    column("main_text", pa.string(),
           "the main content, one line per block, in document order: on an article the body, "
           "never the headline, bylines, datelines, captions, related-story lists or hidden text"),
    column("main_markdown", pa.string(),
           "the same content as CommonMark: headings, lists, tables, code, quotes, emphasis, "
           "links and images; the same words as `main_text`, in the same order"),
    column("language", pa.string(),
           "language of `main_text`: ISO 639-1 code, or 639-2/3 for a language without one "
           "(`ceb`); null for a text without a letter"),
    column("language_score", pa.float32(), "the language identifier's probability of `language` (0-1)"),
    column("page_type", pa.string(),
           "`article`, `documentation`, `forum`, `product`, `listing`, `collection`, `service`, or "
           "`other` (no text); null unless `main_content.method` is `learned`"),
    column("page_type_score", pa.float32(),
           "the page type model's probability of `page_type`; null with `page_type` null or `other`"),
    column("nontemplate_text", pa.string(),
           "the page's text without its site template (a page alone on its site: without its "
           "menu), one line per text line (a run of text with no block boundary in it)"),
    column("menu_links", pa.list_(LINK),
           "the main menu's links: the site menu (the template link block that recurs over the "
           "site's pages), else the page's own menu (MenEx)"),
    # The menu's id in the menus dataset: "SITE:KEY" for a site menu (design §12, named by its
    # block, so a previous/next bar is one menu), else a hash of its link URLs (page MenEx).
    column("menu_signature", pa.string(),
           "the menu's id in `menus/`: `SITE:KEY` for a site menu (named by its block, so a bar "
           "whose links change is one menu), else a hash of its link URLs"),
    column("candidate_method", pa.string(),
           "how the pages compared with this one were chosen: `cs`, `partial_cs`, `linked`, "
           "`cluster`, `site_sample`, `page_only` (no other page of its site)"),
    column("candidate_urls", pa.list_(pa.string()),
           "the compared pages behind `main_text`; null for `page_only`"),
    # Per candidate URL, where it came from: cs | linked | cluster | site (design §4, §11).
    column("candidate_sources", pa.list_(pa.string()),
           "per `candidate_urls` entry, where it came from: `cs`, `linked`, `cluster`, `site`"),
    column("cs_size", pa.int32(),
           "size of the complete subdigraph (pages that all link to each other) among them, this "
           "page not counted; null for `page_only`"),
    column("pages_loaded", pa.int32(), "how many linked pages were looked up; null for `page_only`"),
    column("template_share", pa.float32(), "share of the page's words that are template"),
    column("template_candidate_urls", pa.list_(pa.string()),
           "the pages the template was found with (TemEx/HybEx)"),
    column("template_cluster", pa.string(),
           "the page's template cluster (a row of `sites/`); null for a one-page site"),
    column("state_candidate_urls", pa.list_(pa.string()),
           "with `--state`: the candidate URLs that are stored pages of earlier runs; null without"),
    # Duplicates (transforms/duplicates.py); all null when duplicates are off or main_text has
    # no word.
    column("content_hash", pa.string(),
           "64-bit BLAKE2b (hex) of `main_text`'s case-folded words: equal for texts that differ "
           "only in case, spaces or punctuation; null when `main_text` has no word"),
    column("near_signature", pa.binary(),
           "MinHash of `main_text`'s 5-word shingles, `duplicates.num_perm` (64) little-endian "
           "uint32 values; null as `content_hash`"),
    column("duplicate_of", pa.string(),
           "the `url` of the page this one duplicates; null for a unique page and for the "
           "canonical page of a group"),
    column("duplicate_of_record", pa.string(), "that page's `warc_record_id`"),
    column("duplicate_kind", pa.string(),
           "`capture` (older capture of the same URL), `exact` (same `content_hash`, same site), "
           "`near` (similar signatures), `exact_across_sites`; null when `duplicate_of` is"),
    column("words_page", pa.int32(), "words of the page"),
    column("words_main", pa.int32(), "words of the main content"),
    column("html_bytes", pa.int64(), "decoded HTML size"),
    column("timing_ms", TIMING,
           "CPU milliseconds per stage (" + ", ".join(TIMING_STAGES) + "); null for a stage the "
           "row did not run"),
    column("status", pa.string(),
           "`ok`, `empty` (no visible text), `partial` (the payload is known to be incomplete), "
           "`parse_failed`"),
    column("notes", pa.list_(pa.string()),
           "why the status is not `ok`, parser limits, and how the row was made when it was "
           "not the usual way"),
], metadata={"sitestrip.schema_version": SCHEMA_VERSION, "sitestrip.dataset": "pages"})

MENUS = pa.schema([
    column("site", pa.string(), "the site"),
    column("menu_signature", pa.string(), "the menu's id, as in `pages/`"),
    column("menu_links", pa.list_(LINK), "the menu's links on `example_url`"),
    column("pages", pa.int64(), "pages of the site carrying this menu"),
    column("example_url", pa.string(), "the smallest URL of such a page"),
], metadata={"sitestrip.schema_version": SCHEMA_VERSION, "sitestrip.dataset": "menus"})

ERRORS = pa.schema([
    column("url", pa.string(),
           "the record's `WARC-Target-URI`; null for a file-level failure or damage that hides "
           "the record's header"),
    column("warc_file", pa.string(), "the WARC file"),
    column("warc_offset", pa.int64(), "offset of the record or of the damage; null for a whole file"),
    column("stage", pa.string(),
           "where it failed: `read`, `decode`, `parse`, `candidates`, `template`, `site_conex`, "
           "`menex`, `page_conex`, ..., `links`"),
    column("error_class", pa.string(),
           "what failed, e.g. `BadGzipMember`, `TruncatedRecord`, `NotAWarc`, `TooManyNodes`, "
           "`TimeBudgetExceeded`"),
    column("message", pa.string(), "the error's message"),
], metadata={"sitestrip.schema_version": SCHEMA_VERSION, "sitestrip.dataset": "errors"})

SITES = pa.schema([
    column("site", pa.string(), "the site"),
    column("shard", pa.int32(),
           "the site's shard (a site of more than `site.max_site_pages` pages is split); 0 for "
           "most sites"),
    column("template_cluster", pa.string(),
           "the cluster's id (a hash of the site and the representative's URL)"),
    column("representative_url", pa.string(), "the page that founded the cluster (URL order)"),
    column("example_urls", pa.list_(pa.string()), "up to 8 members most like the representative"),
    column("pages", pa.int64(), "pages of the shard in the cluster"),
    column("overflow_pages", pa.int64(), "pages that joined past `clusters.max_representatives`"),
    column("mean_similarity", pa.float32(),
           "the members' mean similarity (shared root-to-leaf paths) to the representative"),
    column("template_share_mean", pa.float32(), "mean `template_share` of the cluster's pages"),
    column("template_share_p50", pa.float32(), "its median"),
    column("template_share_min", pa.float32(), "its minimum"),
    column("template_share_max", pa.float32(), "its maximum"),
    column("menu_signature", pa.string(), "the menu most of its pages carry (`menus/`); null if none"),
    column("menu_pages", pa.int64(), "pages of the cluster carrying that menu"),
], metadata={"sitestrip.schema_version": SCHEMA_VERSION, "sitestrip.dataset": "sites"})

# One row per (source page, link): every <a href> and <area href> of a pages row whose target is
# an http(s) URL (transforms/outlinks.py). Written when output.links is on.
LINKS = pa.schema([
    column("source_url", pa.string(), "the page's `url_normalized`"),
    column("site", pa.string(), "the page's `site`"),
    column("warc_file", pa.string(), "the page's record, with `warc_offset` and `source_url`: its `pages/` row"),
    column("warc_offset", pa.int64(), "see `warc_file`"),
    column("position", pa.int32(),
           "the link's place among the page's links, from 0 (`<a>` and `<area>`, document order)"),
    column("target_url", pa.string(),
           "the target, resolved and normalized as `url_normalized` (so it joins `pages/`), "
           "without its fragment; an in-page link targets the page itself"),
    column("fragment", pa.string(), "the href's fragment, percent-encoded; null when it has none"),
    column("anchor_text", pa.string(),
           "the link's text; a link without text shows its image's `alt`; `\"\"` when it shows "
           "nothing"),
    column("rel_nofollow", pa.bool_(), "`rel` holds `nofollow`"),
    column("rel_ugc", pa.bool_(), "`rel` holds `ugc`"),
    column("rel_sponsored", pa.bool_(), "`rel` holds `sponsored`"),
    column("in_site", pa.bool_(), "the target's site is the page's `site`"),
    column("region", pa.string(),
           "where the link sits: `main` (main content), `menu` (the page's menu), `template` "
           "(the site template), `other`; the first that holds"),
    column("target_in_input", pa.bool_(), "the target has a `pages/` row in this run"),
], metadata={"sitestrip.schema_version": SCHEMA_VERSION, "sitestrip.dataset": "links"})

# The per-site state of incremental runs (transforms/state.py, pipeline/state_store.py): not an
# output dataset, a versioned directory under --state.
# Two kinds of rows: "page", a stored compact page (a candidate of later runs), and
# "fingerprint", what duplicate detection needs of a page of an earlier run
# (transforms/duplicates.py); the other kind's columns are null.
STATE_COLUMNS = [
    ("site", pa.string()),
    ("kind", pa.string()),                 # page | fingerprint
    ("template_cluster", pa.string()),
    ("representative", pa.bool_()),
    ("url", pa.string()),                  # normalized
    ("cluster_pages", pa.int64()),         # pages the cluster has seen over all runs
    ("page_fields", pa.string()),          # the compact page's scalar fields, JSON
    ("page_blob", pa.binary()),            # the compact page's packed arrays (zstd)
    ("target_uri", pa.string()),           # fingerprint: the page's url column
    ("warc_record_id", pa.string()),
    ("fetch_date", pa.string()),
    ("canonical_url", pa.string()),
    ("content_hash", pa.string()),
    ("near_signature", pa.binary()),
]
STATE = pa.schema(STATE_COLUMNS, metadata={"sitestrip.state_version": "2", "sitestrip.dataset": "state"})
# Version 1 (stored pages only) is still read.
STATE_V1 = pa.schema([c for c in STATE_COLUMNS if c[0] in ("site", "template_cluster", "representative", "url",
                                                           "cluster_pages", "page_fields", "page_blob")],
                     metadata={"sitestrip.state_version": "1", "sitestrip.dataset": "state"})
# The order rows of a state part are sorted in.
STATE_KEYS = ("site", "url", "kind", "warc_record_id")

DATASETS = {"pages": PAGES, "menus": MENUS, "errors": ERRORS, "sites": SITES, "links": LINKS}
# The datasets a run writes only when its config asks (output.links): the others always are.
OPTIONAL_DATASETS = ("links",)

"""Arrow schemas of the output datasets (DESIGN "Outputs").

Column names are a contract with the indexers that load the output; add
columns, never rename or retype them without bumping SCHEMA_VERSION.
"""
from __future__ import annotations

import pyarrow as pa

# 2: `url` is the record's WARC-Target-URI as written (it was the normalized URL, now
# `url_normalized`); `status` gained `partial` and `parse_failed`; timing_ms gained
# `blocks` and `classify` (SPEC §10 main content).
# 3: pages gained `template_cluster` (SPEC §11), `candidate_sources` and `menu_signature`
# (menus rows are per site menu block, SPEC §12); method gained `cluster`; the `sites`
# dataset (one row per site shard and template cluster); `state_candidate_urls` (--state).
# Pages also gained `main_markdown`,
# `language`, `language_score`, and what the page declares (`html_lang`, `canonical_url`,
# `description`, `published_date`, `author`); timing_ms gained `markdown` and `language`.
# 4: pages gained `page_type` and `page_type_score` (docs/algorithms.md "Page type").
# 5: pages gained `content_hash`, `near_signature`, `duplicate_of`, `duplicate_of_record` and
# `duplicate_kind` (docs/algorithms.md "Duplicates"); timing_ms gained `duplicates`.
# 6: the `links` dataset (one row per source page and link, transforms/outlinks.py; output.links);
# timing_ms gained `links`.
SCHEMA_VERSION = "6"

LINK = pa.struct([("url", pa.string()), ("text", pa.string())])

# Stages whose CPU time each pages row reports, in pipeline order. Stages the
# row's method did not run are null. "etdm" is the share of "template" and
# "site_conex" spent mapping trees; "total" counts it once. "blocks" (blocks and
# their features) and "classify" (the block model) are SPEC §10's main content;
# "markdown" and "language" make main_markdown and language from it; "links" the page's
# links for the links dataset (null with output.links off).
TIMING_STAGES = ("read", "parse", "candidates", "etdm", "template", "site_conex",
                 "page_conex", "menex", "blocks", "classify", "markdown", "language", "duplicates", "links",
                 "total")
TIMING = pa.struct([(stage, pa.float32()) for stage in TIMING_STAGES])

METHODS = ("cs", "partial_cs", "linked", "cluster", "site_sample", "page_only")

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
    # article | documentation | forum | product | listing | collection | service | other (no
    # text block); null when main_content.method is not learned.
    ("page_type", pa.string()),
    ("page_type_score", pa.float32()),     # the page type model's probability of `page_type`
    ("nontemplate_text", pa.string()),
    ("menu_links", pa.list_(LINK)),
    # The menu's id in the menus dataset: "SITE:KEY" for a site menu (SPEC §12, named by its
    # block, so a previous/next bar is one menu), else a hash of its link URLs (page MenEx).
    ("menu_signature", pa.string()),
    ("method", pa.string()),
    ("candidate_urls", pa.list_(pa.string())),
    # Per candidate URL, where it came from: cs | linked | cluster | site (SPEC §4, §11).
    ("candidate_sources", pa.list_(pa.string())),
    ("cs_size", pa.int32()),
    ("pages_loaded", pa.int32()),
    ("template_share", pa.float32()),
    ("template_candidate_urls", pa.list_(pa.string())),  # TemEx/HybEx candidates (n = 3)
    ("template_cluster", pa.string()),     # SPEC §11 cluster id (sites dataset); null: not clustered
    # With --state: the candidate URLs that are stored pages of earlier runs (null without).
    ("state_candidate_urls", pa.list_(pa.string())),
    # Duplicates (transforms/duplicates.py); all null when duplicates are off or main_text has
    # no word. content_hash: BLAKE2b-64 (hex) of main_text's case-folded words.
    ("content_hash", pa.string()),
    ("near_signature", pa.binary()),       # MinHash of main_text's word shingles: uint32 LE values
    ("duplicate_of", pa.string()),         # the canonical page's url; null: canonical or unique
    ("duplicate_of_record", pa.string()),  # the canonical page's warc_record_id
    ("duplicate_kind", pa.string()),       # capture | exact | near | exact_across_sites
    ("words_page", pa.int32()),
    ("words_main", pa.int32()),
    ("html_bytes", pa.int64()),
    ("timing_ms", TIMING),
    ("status", pa.string()),               # transforms/status.py: ok | empty | partial | parse_failed
    ("notes", pa.list_(pa.string())),
], metadata={"sitestrip.schema_version": SCHEMA_VERSION, "sitestrip.dataset": "pages"})

MENUS = pa.schema([
    ("site", pa.string()),
    ("menu_signature", pa.string()),       # pages rows' menu_signature (SPEC §12 block or link hash)
    ("menu_links", pa.list_(LINK)),        # the links of the menu on example_url
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

SITES = pa.schema([
    ("site", pa.string()),
    ("shard", pa.int32()),                 # site shard (DESIGN "Hot sites"); 0 for most sites
    ("template_cluster", pa.string()),     # id: hash of the site and the representative's URL
    ("representative_url", pa.string()),   # the page that founded the cluster (URL order)
    ("example_urls", pa.list_(pa.string())),  # up to 8 members most similar to the representative
    ("pages", pa.int64()),                 # pages of the shard in the cluster
    ("overflow_pages", pa.int64()),        # pages that joined past max_representatives
    ("mean_similarity", pa.float32()),     # members' common-paths similarity to the representative
    ("template_share_mean", pa.float32()), # over the cluster's pages rows with a template share
    ("template_share_p50", pa.float32()),
    ("template_share_min", pa.float32()),
    ("template_share_max", pa.float32()),
    ("menu_signature", pa.string()),       # the cluster's site menu (menus dataset), null if none
    ("menu_pages", pa.int64()),            # pages of the cluster whose menu is that menu
], metadata={"sitestrip.schema_version": SCHEMA_VERSION, "sitestrip.dataset": "sites"})

# One row per (source page, link): every <a href> and <area href> of a pages row whose target is
# an http(s) URL (transforms/outlinks.py). Written when output.links is on.
LINKS = pa.schema([
    ("source_url", pa.string()),           # the page's url_normalized
    ("site", pa.string()),                 # the page's site
    ("warc_file", pa.string()),            # with warc_offset: the pages row's record
    ("warc_offset", pa.int64()),
    ("position", pa.int32()),              # the link's place among the page's links, from 0
    ("target_url", pa.string()),           # absolute, normalized as url_normalized, no fragment
    ("fragment", pa.string()),             # the href's fragment (percent-encoded), null if none
    ("anchor_text", pa.string()),          # the text joiner's text; a linked image's alt; "" if none
    ("rel_nofollow", pa.bool_()),          # rel holds nofollow
    ("rel_ugc", pa.bool_()),
    ("rel_sponsored", pa.bool_()),
    ("in_site", pa.bool_()),               # the target's site key is the page's site
    ("region", pa.string()),               # main | menu | template | other
    ("target_in_input", pa.bool_()),       # the target has a pages row in this run
], metadata={"sitestrip.schema_version": SCHEMA_VERSION, "sitestrip.dataset": "links"})

# The per-site state of incremental runs (transforms/state.py, pipeline/state.py): not an
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

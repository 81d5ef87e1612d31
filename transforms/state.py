"""Per-site state of incremental runs: stored representatives (design §11 use (b), seed 003).

A crawl lands file by file, and one site's pages are spread over all of them. The state
keeps, per site and template cluster, a bounded set of compact pages (the cluster's
representative first, then its members most similar to it) and how many pages the
cluster has seen. A later run loads a site's stored pages beside its own: they are
candidate pages for the run's key pages (rows are written only for the run's input),
and the stored representatives seed the leader clustering, so a new page finds its
cluster among them. Bounded: `max_pages_per_cluster` pages per cluster and
`max_clusters_per_site` clusters per site (the clusters that have seen the most pages).

The state also keeps, per site, the fingerprints of its pages (transforms/duplicates.py:
URL, record, content hash, signature; the newest `duplicates.max_fingerprints_per_site`),
so that a page of a later run finds its duplicate among the pages of earlier runs.
A stored page is its compact page's own packed form (transforms/page.py: zstd of the
node arrays; zlib in state files written before that, still read) plus its few scalar fields as JSON: nothing is unpickled, so a state file
loads without executing anything, and a damaged one is refused naming the file and URL.
This module is pure; reading and writing state files is pipeline/state_store.py.
"""
from __future__ import annotations

import base64
import binascii
import json
import zlib
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

from sitestrip.transforms.clusters import SiteClusters, cluster_id
from sitestrip.transforms.duplicates import Fingerprint, signature_bytes, signature_from_bytes
from sitestrip.transforms.page import CompactPage

STATE_VERSION = "2"
READ_VERSIONS = ("1", "2")   # a version 1 state (no fingerprints) is read as it is


class StateError(ValueError):
    """A state that cannot be used: the message names the file (and the row) at fault."""


@dataclass(frozen=True)
class StateParams:
    max_pages_per_cluster: int = 4
    max_clusters_per_site: int = 64

    def __post_init__(self):
        if self.max_pages_per_cluster < 1:
            raise ValueError(f"max_pages_per_cluster must be at least 1, got {self.max_pages_per_cluster}")
        if self.max_clusters_per_site < 1:
            raise ValueError(f"max_clusters_per_site must be at least 1, got {self.max_clusters_per_site}")


@dataclass
class StoredPage:
    """One page of the state: a candidate page for its site's key pages."""
    site: str
    url: str                   # normalized
    template_cluster: str
    representative: bool
    cluster_pages: int         # pages the cluster has seen, over all runs so far
    page: CompactPage


def _to_json(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"base64": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, (tuple, list)):
        return [_to_json(v) for v in value]
    return value


def _from_json(value):
    # Sequences come back as tuples (the page's own fields are tuples), bytes from base64.
    if isinstance(value, dict) and set(value) == {"base64"}:
        return base64.b64decode(value["base64"].encode("ascii"), validate=True)
    if isinstance(value, list):
        return tuple(_from_json(v) for v in value)
    return value


def page_columns(page: CompactPage) -> tuple[str, bytes]:
    """(fields JSON, packed arrays) of a compact page."""
    state = page.__getstate__()
    blob = state.pop("blob")
    return json.dumps({k: _to_json(v) for k, v in state.items()}, sort_keys=True, ensure_ascii=False), bytes(blob)


def page_from_columns(fields: str, blob: bytes, where: str, check: bool = True) -> CompactPage:
    """The compact page of a state row; StateError naming `where` when it is damaged. `check`
    False skips the tree check, which rebuilds the node arrays: for pages this run wrote
    itself (pipeline/partitions.py), whose arrays are rebuilt when first read."""
    try:
        state = json.loads(fields)
        if not isinstance(state, dict):
            raise ValueError("fields are not a JSON object")
        state = {k: _from_json(v) for k, v in state.items()}
        state["blob"] = bytes(blob)
        page = CompactPage.__new__(CompactPage)
        page.__setstate__(state)
        if check:
            _check(page)
        return page
    except StateError:
        raise
    except (ValueError, KeyError, TypeError, zlib.error, UnicodeDecodeError, IndexError, binascii.Error,
            OSError, MemoryError) as exc:        # OSError: pyarrow's zstd refusing a damaged blob
        raise StateError(f"{where}: damaged stored page ({type(exc).__name__}: {str(exc)[:200]})") from None


def _check(page: CompactPage) -> None:
    """The invariants the algorithms rely on (a tree in preorder), so a damaged blob that
    still inflates is refused here, not deep in a mapping."""
    n = page.size
    if n == 0:
        return
    idx = np.arange(n)
    ok = (page.parent[0] == -1 and (page.parent[1:] >= 0).all() and (page.parent[1:] < idx[1:]).all()
          and (page.end > idx).all() and (page.end <= n).all()
          and page.depth.shape == (n,) and page.link_node.size == len(page.link_url)
          and (page.link_node < n).all())
    if not ok:
        raise ValueError("node arrays are not a tree in preorder")
    page.side.check(n)


@dataclass
class StoredFingerprint:
    """What duplicate detection needs of a page of an earlier run (transforms/duplicates.py):
    a later run's pages of its site can be its duplicates."""
    site: str
    fingerprint: Fingerprint

    @property
    def url(self) -> str:
        return self.fingerprint.url_normalized


def stored_row(stored) -> dict:
    if isinstance(stored, StoredFingerprint):
        fp = stored.fingerprint
        return {"site": stored.site, "kind": "fingerprint", "url": fp.url_normalized, "target_uri": fp.url,
                "warc_record_id": fp.record_id, "fetch_date": fp.fetch_date, "canonical_url": fp.canonical_url,
                "content_hash": fp.content_hash, "near_signature": signature_bytes(fp.signature)}
    fields, blob = page_columns(stored.page)
    return {"site": stored.site, "kind": "page", "template_cluster": stored.template_cluster,
            "representative": stored.representative, "url": stored.url,
            "cluster_pages": stored.cluster_pages, "page_fields": fields, "page_blob": blob}


def _fingerprint_from_row(row: Mapping, where: str) -> StoredFingerprint:
    try:
        signature = signature_from_bytes(row["near_signature"])
        fp = Fingerprint(url=str(row["target_uri"]), url_normalized=str(row["url"]),
                         record_id=str(row["warc_record_id"] or ""), fetch_date=str(row["fetch_date"] or ""),
                         canonical_url=row["canonical_url"], content_hash=row["content_hash"],
                         signature=signature, stored=True)
        return StoredFingerprint(str(row["site"]), fp)
    except (KeyError, TypeError, ValueError) as exc:
        raise StateError(f"{where}: damaged fingerprint row ({type(exc).__name__}: {exc})") from None


def stored_from_row(row: Mapping, where: str):
    """A StoredPage, or a StoredFingerprint for a fingerprint row."""
    if row.get("kind") == "fingerprint":
        return _fingerprint_from_row(row, where)
    try:
        site, url, cluster = str(row["site"]), str(row["url"]), str(row["template_cluster"])
        representative, pages = bool(row["representative"]), int(row["cluster_pages"])
        fields, blob = row["page_fields"], row["page_blob"]
    except (KeyError, TypeError, ValueError) as exc:
        raise StateError(f"{where}: not a state row ({type(exc).__name__}: {exc})") from None
    if fields is None or blob is None:
        raise StateError(f"{where}: state row for {url} has no page")
    page = page_from_columns(fields, blob, f"{where}, {url}")
    return StoredPage(site, url, cluster, representative, pages, page)


def shard_state(site: str, clusters: SiteClusters, pages: Mapping[str, CompactPage],
                run_urls: Iterable[str], stored: Sequence[StoredPage], params: StateParams) -> list[StoredPage]:
    """The state of one site shard after a run: per cluster its representative and the members
    most similar to it (ties: URL), up to `max_pages_per_cluster`; each cluster's count of
    pages seen = its stored count (from its stored representative) + the run's pages in it.
    The cluster bound is applied per site by merge_site_state."""
    run_urls = set(run_urls)
    seen_before = {s.template_cluster: s.cluster_pages for s in stored if s.representative}
    out = []
    for number, representative in enumerate(clusters.representatives):
        ident = cluster_id(site, representative)
        seen = seen_before.get(ident, 0) + sum(1 for u in clusters.members(number) if u in run_urls)
        others = clusters.closest_members(number)
        for url in [representative] + others[:params.max_pages_per_cluster - 1]:
            out.append(StoredPage(site, url, ident, url == representative, seen, pages[url]))
    return out


def merge_site_state(site: str, stored: Iterable, params: StateParams, max_fingerprints: int | None = None) -> list:
    """One site's state from its shards' (and carried-over) stored pages: a URL once (the
    representative copy, then the larger count), the clusters that have seen the most pages
    first (ties: id), each cut to `max_pages_per_cluster` (representative first); then its
    fingerprints (StoredFingerprint), a record once, the newest `max_fingerprints` (fetch
    date, then record id)."""
    stored = list(stored)
    fingerprints = {}
    for item in stored:
        if isinstance(item, StoredFingerprint):
            fingerprints.setdefault(item.fingerprint.record_id, item)
    newest = sorted(fingerprints.values(), key=lambda f: (f.fingerprint.fetch_date, f.fingerprint.record_id),
                    reverse=True)
    if max_fingerprints is not None:
        newest = newest[:max_fingerprints]
    newest.sort(key=lambda f: (f.url, f.fingerprint.record_id))
    return _merge_pages([item for item in stored if not isinstance(item, StoredFingerprint)], params) + newest


def _merge_pages(stored: list, params: StateParams) -> list[StoredPage]:
    by_url: dict[str, StoredPage] = {}
    for page in sorted(stored, key=lambda s: (s.url, not s.representative, -s.cluster_pages, s.template_cluster)):
        by_url.setdefault(page.url, page)
    clusters: dict[str, list[StoredPage]] = {}
    for page in by_url.values():
        clusters.setdefault(page.template_cluster, []).append(page)
    seen = {ident: max(p.cluster_pages for p in members) for ident, members in clusters.items()}
    kept = sorted(clusters, key=lambda ident: (-seen[ident], ident))[:params.max_clusters_per_site]
    out = []
    for ident in sorted(kept):
        members = sorted(clusters[ident], key=lambda p: (not p.representative, p.url))
        out.extend(members[:params.max_pages_per_cluster])
    return out

"""URL normalization and site keys.

Two URLs that a browser would fetch as the same resource should normalize to
the same string, because page records (WARC target URIs) and the links found
inside pages are matched against each other and grouped by site.  The rules
follow RFC 3986 section 6 plus the few WHATWG behaviours that decide what a
browser actually requests:

* scheme and host lower-cased, IDN hosts in punycode, trailing host dot
  removed, default port dropped, userinfo and fragment dropped;
* dot segments resolved, percent-encoding normalized (unreserved characters
  decoded, other escapes upper-cased, characters not allowed raw encoded as
  UTF-8); reserved escapes such as ``%2F`` stay encoded since decoding them
  can change what the server sees;
* query kept verbatim apart from percent-encoding (it can identify a page),
  trailing slash kept (``/a`` and ``/a/`` may be different pages);
* backslashes read as ``/`` before the query, tab/CR/LF removed, surrounding C0
  controls and spaces trimmed, as browsers do with hrefs;
* only http and https URLs are accepted; everything else yields ``None``.

Only the site key drops ``www.``: ``www.example.com/a`` and ``example.com/a``
may serve different content, but they belong to the same site.

Every function returns ``None`` instead of raising, so hostile input from
crawled pages cannot fail a pipeline stage.
"""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from urllib.parse import unquote_to_bytes

__all__ = ["normalize_url", "resolve_link", "site_key", "url_host"]

_UNRESERVED = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
)

# WHATWG trims C0 controls and space (not all Unicode whitespace): an NBSP in
# front of "http:" makes the href invalid in a browser, so it must here too.
_C0_OR_SPACE = "".join(chr(i) for i in range(0x21))

# pchar of RFC 3986 minus "%", which is handled as an escape; "?" is legal raw
# in the query only.
_PATH_SAFE = r"A-Za-z0-9\-._~!$&'()*+,;=:@/"
_QUERY_SAFE = _PATH_SAFE + "?"
# The "needs work" probes let the common already-clean component skip the
# (much slower) substitution with a Python callback.
_PATH_NEEDS_WORK = re.compile(f"[^{_PATH_SAFE}]")
_QUERY_NEEDS_WORK = re.compile(f"[^{_QUERY_SAFE}]")
# A valid escape, a lone "%", or a run of characters that must be encoded.
_PATH_TOKEN = re.compile(f"%([0-9A-Fa-f]{{2}})|%|[^{_PATH_SAFE}%]+")
_QUERY_TOKEN = re.compile(f"%([0-9A-Fa-f]{{2}})|%|[^{_QUERY_SAFE}%]+")

_BYTE_ESCAPE = tuple(f"%{b:02X}" for b in range(256))


def _build_escape_map() -> dict[str, str]:
    digits = "0123456789abcdefABCDEF"
    table = {}
    for hi in digits:
        for lo in digits:
            ch = chr(int(hi + lo, 16))
            table[hi + lo] = ch if ch in _UNRESERVED else f"%{(hi + lo).upper()}"
    return table


_ESCAPE_MAP = _build_escape_map()

# The four dots IDNA treats as label separators; splitting on all of them keeps
# the fallback path (IDNA failure) consistent with the codec.
_IDNA_DOTS = re.compile("[.\u3002\uff0e\uff61]")
# ASCII is limited to the RFC 3986 reg-name set (stricter than WHATWG, which
# lets '"', '{', '`' through; no DNS name contains them).  Non-ASCII is left
# to IDNA, except lone surrogates, which cannot be encoded to UTF-8 and would
# break any downstream writer (Arrow, JSON).
_FORBIDDEN_HOST = re.compile(
    "[^A-Za-z0-9\\-._~!$&'()*+,;=\x80-\ud7ff\ue000-\U0010ffff]"
)
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")

_DEFAULT_PORT = {"http": "80", "https": "443"}


def _fix_token(match: re.Match) -> str:
    hexpair = match.group(1)
    if hexpair is not None:
        return _ESCAPE_MAP[hexpair]
    text = match.group(0)
    if text == "%":
        # A "%" not starting a valid escape is data; encoding it is the only
        # reading that stays stable under repeated normalization.
        return "%25"
    # surrogatepass: lone surrogates (impossible in parsed HTML, possible in
    # arbitrary str input) get a deterministic encoding instead of raising.
    return "".join(_BYTE_ESCAPE[b] for b in text.encode("utf-8", "surrogatepass"))


def _normalize_path(path: str) -> str:
    if _PATH_NEEDS_WORK.search(path) is not None:
        path = _PATH_TOKEN.sub(_fix_token, path)
    # Percent-normalize before removing dot segments so that "%2E%2E" counts as
    # "..", as it does for browsers and servers.
    if "/." in path:
        path = _remove_dot_segments(path)
    return path


def _remove_dot_segments(path: str) -> str:
    # Equivalent to RFC 3986 5.2.4 for paths starting with "/" (ours always
    # do): ".." above the root is discarded, and a final "." or ".." leaves a
    # trailing slash because it names a directory.
    segments = path.split("/")
    out: list[str] = []
    for seg in segments[1:]:
        if seg == "..":
            if out:
                out.pop()
        elif seg != ".":
            out.append(seg)
    if segments[-1] in (".", ".."):
        out.append("")
    return "/" + "/".join(out)


# Hosts repeat far more than URLs (every link of a site shares one), and the
# idna codec costs tens of microseconds per non-ASCII host.
@lru_cache(maxsize=1 << 14)
def _normalize_host(host: str) -> str | None:
    if "%" in host:
        # Browsers percent-decode the host before IDNA; undecodable bytes make
        # the URL invalid rather than producing a replacement character.
        try:
            host = unquote_to_bytes(host).decode("utf-8")
        except UnicodeDecodeError:
            return None
    if _FORBIDDEN_HOST.search(host) is not None:
        return None
    if host.isascii():
        host = host.lower()
    else:
        labels = []
        for label in _IDNA_DOTS.split(host):
            if label.isascii():
                labels.append(label.lower())
                continue
            try:
                labels.append(label.encode("idna").decode("ascii").lower())
            except UnicodeError:
                # Unconvertible label (too long, prohibited code point): keep
                # it readable rather than dropping the whole URL.
                labels.append(label.lower())
        host = ".".join(labels)
        # Nameprep applies NFKC, which can turn e.g. U+FF0F into "/"; the
        # host must not smuggle in delimiters that way.
        if _FORBIDDEN_HOST.search(host) is not None:
            return None
    # All trailing dots, not just one, or normalization would not be
    # idempotent for "example.com..".
    host = host.rstrip(".")
    return host or None


def _normalize_ipv6(literal: str) -> str | None:
    try:
        # Compressed lower-case form, so "[0:0::1]" and "[::1]" are equal.
        return f"[{ipaddress.IPv6Address(literal).compressed}]"
    except ValueError:
        return None


def _normalize_port(port: str, scheme: str) -> str | None:
    """Return the canonical port ("" for none/default) or None if invalid."""
    if not port:
        return ""
    if not (port.isascii() and port.isdigit()):
        return None
    # Strip zeros by hand: int() on a huge digit string raises (Python's
    # int-max-str-digits limit) and is slow before that.
    port = port.lstrip("0") or "0"
    if len(port) > 5 or int(port) > 65535:
        return None
    return "" if port == _DEFAULT_PORT[scheme] else port


def _clean(url: str) -> str:
    url = url.strip(_C0_OR_SPACE)
    # Browsers drop tab/CR/LF anywhere, e.g. in hrefs wrapped across lines.
    if "\t" in url or "\n" in url or "\r" in url:
        url = url.replace("\t", "").replace("\n", "").replace("\r", "")
    return url


def _backslashes_to_slashes(url: str) -> str:
    # Browsers treat "\" as "/" in the scheme, authority and path of http(s)
    # URLs (not in query or fragment), so that is what they request and what
    # a crawler records.
    end = len(url)
    for delim in "?#":
        i = url.find(delim, 0, end)
        if i >= 0:
            end = i
    return url[:end].replace("\\", "/") + url[end:]


@lru_cache(maxsize=1 << 16)
def _normalize_cached(url: str) -> str | None:
    url = _clean(url)
    head = url[:6].lower()
    if head.startswith("http:"):
        scheme = "http"
    elif head == "https:":
        scheme = "https"
    else:
        return None
    if "\\" in url:
        url = _backslashes_to_slashes(url)
    rest = url[len(scheme) + 1 :]
    # Only the hierarchical form is accepted: "http:/x" and "http:x" are
    # relative references in RFC 3986 and have no host of their own.
    if not rest.startswith("//"):
        return None
    rest = rest[2:]

    hash_at = rest.find("#")
    if hash_at >= 0:
        rest = rest[:hash_at]
    query_at = rest.find("?")
    if query_at >= 0:
        query = rest[query_at + 1 :]
        rest = rest[:query_at]
    else:
        query = ""
    slash_at = rest.find("/")
    if slash_at >= 0:
        authority, path = rest[:slash_at], rest[slash_at:]
    else:
        authority, path = rest, "/"

    # A bracket without its partner anywhere in the authority ("//[@host") is no URL, as
    # for urllib's parser: the userinfo may not hold a raw "[" or "]" either (RFC 3986 3.2.1).
    if ("[" in authority) != ("]" in authority):
        return None
    # The last "@" ends the userinfo (a raw "@" inside a password is common).
    hostport = authority.rpartition("@")[2]
    if hostport.startswith("["):
        close = hostport.find("]")
        if close < 0:
            return None
        host = _normalize_ipv6(hostport[1:close])
        after = hostport[close + 1 :]
        if after and not after.startswith(":"):
            return None
        port = after[1:]
    else:
        host, colon, port = hostport.rpartition(":")
        if not colon:
            host, port = port, ""
        host = _normalize_host(host)
    if host is None:
        return None
    port = _normalize_port(port, scheme)
    if port is None:
        return None

    parts = [scheme, "://", host]
    if port:
        parts += [":", port]
    parts.append(_normalize_path(path))
    if query:
        if _QUERY_NEEDS_WORK.search(query) is not None:
            query = _QUERY_TOKEN.sub(_fix_token, query)
        parts += ["?", query]
    return "".join(parts)


def normalize_url(url: str) -> str | None:
    """Canonical form of an absolute http(s) URL, or None if it is not one."""
    if not isinstance(url, str):
        return None
    return _normalize_cached(url)


def resolve_link(base_url: str, href: str) -> str | None:
    """Resolve an ``<a href>`` (or ``<base href>``) against ``base_url``.

    Returns the normalized absolute URL, or None when the link does not lead
    to an http(s) page (javascript:, mailto:, tel:, data:, ftp:, ...) or
    cannot be parsed.  An empty or fragment-only href names the base page.
    """
    if not isinstance(href, str):
        return None
    # Pages of a site link the same URLs (menus, sidebars, footers), so answers are kept per
    # process, keyed by the href and what its answer reads of the base, no more (_href_kind):
    # nothing for an http(s) URL or another scheme, the base's origin for a rooted path, its
    # directory for a relative one. The fragment is cut from the key after its "#" (which keeps
    # a space before it from being stripped as trailing space): no answer reads it. _resolve
    # computes every answer from the whole base, the reference the tests compare them with.
    if href.startswith(_ABSOLUTE):
        # _resolve_against's cleaning and backslashes are normalize_url's own first steps.
        return _normalize_cached(href)
    at = href.find("#")
    if at >= 0:
        href = href[: at + 1]
    if len(href) > _MAX_CACHED_HREF:
        return _resolve(base_url, href)
    # An href beginning "/" stays rooted once cleaned (nothing in front is stripped).
    kind = _ORIGIN if href.startswith("/") else _href_kind(href)
    if kind >= _NOT_HTTP:
        return None if kind == _NOT_HTTP else _normalize_cached(href)
    base = _base_parts(base_url) if isinstance(base_url, str) else None
    if base is None:
        return None
    if kind == _PAGE:
        return base[0]
    if kind == _WHOLE:
        return _resolve_against(base[0], href)
    return _resolve_in(base[kind], base[4], href)


_ABSOLUTE = ("http://", "https://")
# Longer hrefs (a data: URI, a long query) are computed each time, not kept: they are rare, and a
# cache of them would be bounded by its entries only.
_MAX_CACHED_HREF = 256

# What resolving an href reads of a normalized base (_href_kind), as _resolve_against does it.
# _ORIGIN, _PATH and _DIRECTORY index the part it reads in _base_parts' tuple.
_PAGE, _ORIGIN, _PATH, _DIRECTORY, _WHOLE, _NOT_HTTP, _ANY_BASE = range(7)


@lru_cache(maxsize=1 << 16)
def _href_kind(href: str) -> int:
    """What _resolve_against(base, href) reads of a base that is a URL, decided on the cleaned
    href as it decides: _NOT_HTTP, nothing (another scheme: None); _ANY_BASE, nothing (an
    http(s) scheme and "//": normalize_url of the href); _ORIGIN, the base's scheme and
    authority (a rooted or protocol-relative path); _PAGE, the whole base, which is the answer
    ("", a fragment); _PATH, the base without its query ("?..."); _DIRECTORY, the base up to the
    last "/" of its path (a relative path, merged there); _WHOLE, all of it (an http(s) scheme
    without "//": relative, against a base of that scheme only)."""
    href = _clean(href)
    scheme_match = _SCHEME.match(href)
    if scheme_match is not None:
        if scheme_match.group(1).lower() not in _DEFAULT_PORT:
            return _NOT_HTTP
        if "\\" in href:
            href = _backslashes_to_slashes(href)
        return _ANY_BASE if href[scheme_match.end() :].startswith("//") else _WHOLE
    if href.startswith(("/", "\\")):    # a leading backslash is read as "/"
        return _ORIGIN
    if not href or href.startswith("#"):
        return _PAGE
    if href.startswith("?"):
        return _PATH
    return _DIRECTORY


@lru_cache(maxsize=1 << 12)
def _base_parts(base_url: str) -> tuple | None:
    """(the normalized base; the parts of it that the hrefs of kinds _ORIGIN, _PATH and
    _DIRECTORY read: its origin and "/", the base without its query, the base up to the last
    "/" of its path; the length of its origin, or 0), or None when the base is no URL.

    Each part is a normalized URL, without query or fragment, that resolves the hrefs of its
    kind as the whole base does. The origin's length lets _join put a merged path after it,
    which holds when normalize_url leaves the origin as it is (it does: normalize_url is
    idempotent), checked here once per base all the same; 0 leaves it to _resolve_against."""
    base = normalize_url(base_url)
    if base is None:
        return None
    path_start = base.index("/", base.index(":") + 3)
    query_at = base.find("?", path_start)
    path = base if query_at < 0 else base[:query_at]
    root = base[: path_start + 1]
    return base, root, path, path[: path.rindex("/") + 1], path_start if normalize_url(root) == root else 0


@lru_cache(maxsize=1 << 16)
def _resolve_in(part: str, origin_length: int, href: str) -> str | None:
    """_resolve_against(part, href) for a part of _base_parts and an href of its kind (which any
    base with that part resolves alike): by _join, or by _resolve_against itself where the
    origin's length is 0."""
    if origin_length:
        return _join(part, origin_length, href)
    return _resolve_against(part, href)


def _join(part: str, origin_length: int, href: str) -> str | None:
    """_resolve_against(part, href) for an href of kind _ORIGIN, _PATH or _DIRECTORY and a
    part (_base_parts) whose origin, part[:origin_length], normalize_url leaves as it is.

    _resolve_against answers normalize_url(P + h), h the cleaned href with its backslashes
    read, P the origin for a rooted h, else the part (a path, or a directory ending "/"). That
    string needs no cleaning (P begins "http", h is cleaned and not empty), has its first "?"
    or "#" in h (P has neither) and its authority in P: so its normalization is the origin, then
    _normalize_path of P's path and h's path, then h's query as normalize_url writes it. A
    protocol-relative h ("//host") is left to _resolve_against."""
    h = _clean(href)
    if "\\" in h:
        h = _backslashes_to_slashes(h)
    if h.startswith("//"):
        return _resolve_against(part, href)
    at = h.find("#")
    if at >= 0:
        h = h[:at]
    at = h.find("?")
    if at >= 0:
        query, h = h[at + 1 :], h[:at]
    else:
        query = ""
    path = _normalize_path(h if h.startswith("/") else part[origin_length:] + h)
    if not query:
        return part[:origin_length] + path
    if _QUERY_NEEDS_WORK.search(query) is not None:
        query = _QUERY_TOKEN.sub(_fix_token, query)
    return part[:origin_length] + path + "?" + query


def _resolve(base_url: str, href: str) -> str | None:
    """resolve_link of a str href, computed (the reference of its cached paths)."""
    return _resolve_against(normalize_url(base_url), href)


def _resolve_against(base: str | None, href: str) -> str | None:
    """resolve_link against a base already normalized (None: the base is no URL)."""
    href = _clean(href)
    scheme_match = _SCHEME.match(href)
    if scheme_match is not None and scheme_match.group(1).lower() not in _DEFAULT_PORT:
        return None
    if "\\" in href:
        href = _backslashes_to_slashes(href)
    if scheme_match is not None:
        rest = href[scheme_match.end() :]
        if rest.startswith("//"):
            return normalize_url(href)
    # Resolve against the normalized base, as browsers resolve against the
    # parsed base URL: "/a/b/.." then acts as "/a/", not as a file "..".
    if base is None:
        return None
    colon = base.index(":")
    if scheme_match is not None:
        if scheme_match.group(1).lower() != base[:colon]:
            # "http:x" has no host of its own; with a different base scheme
            # there is nothing to borrow it from.
            return None
        # Same scheme without "//": relative, like urljoin and browsers do.
        href = rest
    # RFC 3986 5.2.2 done on strings: every branch builds an absolute URL and
    # normalize_url removes dot segments.  Not urljoin: it is slower (two
    # parses per call) and loses empty ";" params ("/;" -> "/") and treats
    # "//" as the base page where a browser fails.
    # The fragment stays on the href (normalize_url drops it) so that a
    # trailing space before it, as in "/ #", is not exposed to stripping.
    if href.startswith("//"):
        return normalize_url(base[: colon + 1] + href)
    path_start = base.index("/", colon + 3)
    if href.startswith("/"):
        return normalize_url(base[:path_start] + href)
    if not href or href.startswith("#"):
        return base
    query_at = base.find("?", path_start)
    base_path = base if query_at < 0 else base[:query_at]
    if href.startswith("?"):
        return normalize_url(base_path + href)
    # Merge: drop the last segment of the base path (the "file").
    return normalize_url(base_path[: base_path.rindex("/") + 1] + href)


def url_host(url: str) -> str | None:
    """Normalized host of ``url`` (``www.`` kept, port removed), or None."""
    normalized = normalize_url(url)
    if normalized is None:
        return None
    start = normalized.index("//") + 2
    hostport = normalized[start : normalized.index("/", start)]
    if hostport.startswith("["):
        return hostport[: hostport.index("]") + 1]
    return hostport.partition(":")[0]


def site_key(url: str) -> str | None:
    """Host of ``url`` without one leading ``www.``, or None if invalid.

    A non-default port is left out: the design defines the site as the host,
    and a host serving on several ports (a mirror on :8080, a staging port) in
    practice serves the same site templates, which is what the key groups.
    """
    host = url_host(url)
    if host is None:
        return None
    if host.startswith("www.") and len(host) > 4:
        return host[4:]
    return host


# What a Markdown link's fragment may not hold raw: WHATWG's fragment percent-encode set
# (C0 controls, space, '"', '<', '>', '`', and every non-ASCII character, as UTF-8) plus the
# parentheses, which would end a Markdown link destination.
_FRAGMENT_RAW = frozenset(chr(c) for c in range(0x21, 0x7F)) - set('"<>`()')


# Any character that _FRAGMENT_RAW does not hold: the common fragment has none.
_FRAGMENT_NOT_RAW = re.compile("[^" + "".join(re.escape(c) for c in sorted(_FRAGMENT_RAW)) + "]")


def link_fragment(href: str) -> str:
    """The fragment of an ``<a href>`` ("" when it has none or an empty one), percent-encoded
    as a browser sends it to the address bar, so that it can follow a Markdown link's URL.

    Only Markdown keeps it: a page is named by its URL without the fragment everywhere else
    (normalize_url)."""
    if not isinstance(href, str):
        return ""
    return _link_fragment(href) if len(href) <= _MAX_CACHED_HREF else _link_fragment.__wrapped__(href)


# A site's pages repeat their in-page and sidebar links ("page.html#section").
@lru_cache(maxsize=1 << 16)
def _link_fragment(href: str) -> str:
    href = _clean(href)
    at = href.find("#")
    if at < 0:
        return ""
    fragment = href[at + 1:]
    if _FRAGMENT_NOT_RAW.search(fragment) is None:
        return fragment
    return "".join(c if c in _FRAGMENT_RAW else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass"))
                   for c in fragment)


def forget_site_urls() -> None:
    """Empty the caches keyed by URLs and hrefs (normalize_url, resolve_link, link_fragment).
    What they hold comes from one site's pages: its URLs, its links, its bases, which the next
    site shard does not share. The per-site step empties them as a shard begins, so a worker
    holds at most one shard's entries, where a long run would otherwise keep every cache full
    (about 13 MB for normalize_url's 65,536 URLs alone) whatever the size of its sites."""
    for cache in (_normalize_cached, _href_kind, _base_parts, _resolve_in, _link_fragment):
        cache.cache_clear()

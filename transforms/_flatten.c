/* Parse flattening, compiled (design §1; page.py _flatten).
 *
 * page.py's `_flatten` stays the reference: it walks lxml's tree with etree.iterwalk and
 * builds the CompactPage arrays in Python. `walk` here reads libxml2's node tree under the
 * lxml element directly and builds the same arrays, step for step in the same order:
 *   - the same events: an element's start, its children, its end; comments and processing
 *     instructions give nothing (iterwalk yields them, _flatten skips them, so their tail
 *     text is nobody's); dropped elements end at once with their tail kept; leaves are
 *     nodes whose inside is skipped;
 *   - lxml's text: .text is the run of text/CDATA nodes starting at the first child,
 *     .tail the run after the element (XInclude markers skipped), "" and None both falsy;
 *   - lxml's attributes: the order of the node's attribute list, the namespaced name
 *     "{href}name", the value xmlGetNsProp gives (the first attribute of that name);
 *   - Python's whitespace and letters: str.split/isspace/strip are Py_UNICODE_ISSPACE and
 *     str.isalnum is Py_UNICODE_ISALNUM on code points, decoded from strict UTF-8 as lxml
 *     decodes them.
 * Class and id hints (_class_info, _id_info), the hidden-style pattern and the role and
 * aria-hidden tests are answered here for ASCII values, the hints from page.py's word tables
 * (set_hint_tables) and kept per process by value. Links are resolved here (urls.py's
 * resolve_link and link_fragment, on the href's UTF-8 bytes), permalink anchors decided
 * (_is_permalink), and what meta.py reads of the tree is read as the walk passes: the images'
 * URL, pixel size and alt, the links' rel flags and the code blocks' class values
 * (node_extras), the document's meta, link and script elements (page_metadata). What is rare or intricate stays in Python and is
 * called back: a tag's properties (name.lower() and the rules' sets, once per name and
 * process), values that are not ASCII where Python's case or whitespace rules matter, the
 * rare hrefs (resolve_link, its
 * answer kept per page, and per process for the absolute ones). count_words' tokens are
 * counted here (tokens.py's pattern, with its CJK and mark ranges handed over by
 * set_token_ranges; Python's count_words where they are not set).
 * Anything this file does not read exactly as lxml would
 * (entity references, invalid UTF-8, an element that is not lxml's) makes `walk` return
 * None, and page.py runs the reference instead, so the result is the same either way.
 *
 * No recursion over the DOM: the walk climbs back through parent pointers. lxml's public C
 * API (its headers ship in the lxml wheel) gives the element objects Python reads: the
 * EXTRA_TAGS elements and http(s) <a> links with a rel that are not read here, the JSON-LD
 * scripts, in node order.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libxml/tree.h"
#include "lxml.etree_api.h"
#include "_crc32.h"

static PyTypeObject *element_type;

/* Tag property bits, as page.py _tag_props returns them. */
enum { T_DROP = 1, T_LEAF = 2, T_BLOCK = 4, T_PRE = 8, T_EXTRA = 16, T_A = 32, T_NAV = 64, T_TITLE = 128,
       T_RAISED = 256, T_BUTTON = 512 };

typedef struct {
    int f_link, f_in_link, f_nav_hint, f_nav_word, f_nav_all, f_space_before, f_pre, f_raised, f_hidden;
    unsigned long hint_nav, hint_hidden;   /* "k" in PyArg_ParseTuple */
    int browser;
} Consts;

/* ------------------------------------------------------------------ growable arrays */

typedef struct { void *data; size_t len, cap, item; } Vec;

static int vec_grow(Vec *v, size_t more);

static inline int vec_reserve(Vec *v, size_t more) {
    return v->len + more <= v->cap ? 0 : vec_grow(v, more);
}

static int vec_grow(Vec *v, size_t more) {
    size_t cap = v->cap ? v->cap : 64;
    while (cap < v->len + more) cap *= 2;
    void *p = realloc(v->data, cap * v->item);
    if (!p) { PyErr_NoMemory(); return -1; }
    v->data = p;
    v->cap = cap;
    return 0;
}
#define VPUSH(v, T, x) (vec_reserve(&(v), 1) < 0 ? -1 : (((T *)(v).data)[(v).len++] = (x), 0))
#define VAT(v, T, i) (((T *)(v).data)[i])

/* ------------------------------------------------------------------ crc32 (zlib's): _crc32.h */

/* ------------------------------------------------------------------ strict UTF-8 */

/* Appends the code points of NUL-terminated `s` to `out` (a Vec of Py_UCS4); -1 when `s`
 * is not valid UTF-8 as Python's strict decoder reads it (no surrogates, no overlongs). */
static int utf8_append(Vec *out, const unsigned char *s) {
    size_t n = strlen((const char *)s);
    if (vec_reserve(out, n) < 0) return -2;
    Py_UCS4 *o = (Py_UCS4 *)out->data + out->len;
    size_t k = 0, m = 0;
    while (k < n) {
        unsigned char c = s[k];
        if (c < 0x80) {
            o[m++] = c;
            k++;
            while (k + 8 <= n) {      /* ASCII runs 8 bytes at a time, as utf8_valid reads them */
                uint64_t x;
                memcpy(&x, s + k, 8);
                if (x & 0x8080808080808080ULL) break;
                for (int j = 0; j < 8; j++) o[m + j] = s[k + j];
                m += 8;
                k += 8;
            }
            continue;
        }
        Py_UCS4 cp;
        int extra;
        if (c >= 0xC2 && c <= 0xDF) { cp = c & 0x1F; extra = 1; }
        else if (c >= 0xE0 && c <= 0xEF) { cp = c & 0x0F; extra = 2; }
        else if (c >= 0xF0 && c <= 0xF4) { cp = c & 0x07; extra = 3; }
        else return -1;
        if (k + (size_t)extra >= n) return -1;
        for (int j = 1; j <= extra; j++) {
            unsigned char d = s[k + j];
            if ((d & 0xC0) != 0x80) return -1;
            cp = (cp << 6) | (d & 0x3F);
        }
        if ((extra == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (extra == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return -1;
        o[m++] = cp;
        k += extra + 1;
    }
    out->len += m;
    return 0;
}

static int utf8_valid(const unsigned char *s, size_t n) {
    size_t k = 0;
    while (k < n) {
        unsigned char c = s[k];
        if (c < 0x80) {
            k++;
            while (k + 8 <= n) {      /* ASCII runs 8 bytes at a time */
                uint64_t x;
                memcpy(&x, s + k, 8);
                if (x & 0x8080808080808080ULL) break;
                k += 8;
            }
            continue;
        }
        Py_UCS4 cp;
        int extra;
        if (c >= 0xC2 && c <= 0xDF) { cp = c & 0x1F; extra = 1; }
        else if (c >= 0xE0 && c <= 0xEF) { cp = c & 0x0F; extra = 2; }
        else if (c >= 0xF0 && c <= 0xF4) { cp = c & 0x07; extra = 3; }
        else return 0;
        if (k + (size_t)extra >= n) return 0;
        for (int j = 1; j <= extra; j++) {
            unsigned char d = s[k + j];
            if ((d & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (d & 0x3F);
        }
        if ((extra == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (extra == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return 0;
        k += extra + 1;
    }
    return 1;
}

/* The base of a page's links (urls._base_parts) and the scratch of resolving them (below). */
typedef struct {
    int state;               /* 0: the base is no URL (relative hrefs give None), 1: parts below, 2: Python */
    PyObject *base;          /* the normalized base, the answer of "" and "#..." */
    const char *part[4];     /* _base_parts' base, root, path and directory, ASCII */
    size_t part_n[4];
    size_t origin;           /* the origin's length, 0: _join does not apply */
} BaseParts;

typedef struct { Vec out, in, tmp, tmp2; } UrlBufs;

/* ------------------------------------------------------------------ the walk's state */

typedef struct {
    const xmlChar *name;
    const xmlNs *ns;
    int used;
    int32_t tid;
    int bits;
    uint32_t hint;
} TagSlot;

typedef struct {
    Consts k;
    PyObject *tag_props, *class_info, *id_info, *resolve, *count_words, *hidden_style, *permalink, *base_url;
    PyObject *links;          /* list of link URLs */
    PyObject *fragments;      /* link_fragment of the links' hrefs that have one, parallel to fragment_node */
    BaseParts parts;          /* urls._base_parts of the base */
    xmlNode *root;            /* the document's root, when the walk gathers its declared elements too */
    Vec declared;             /* xmlNode *: the body's meta, link and script elements, document order */
    int declared_bail;        /* ... of which one is not read here as lxml reads it */
    UrlBufs url;
    struct LxmlDocument *doc;
    PyObject *href_cache;     /* href -> resolve_link result, this page */
    xmlNode *body;
    int bail;                 /* 1: not read exactly here, let Python do the page */
    /* The body's nodes of every kind but attributes, as count_nodes counts them, against walk's
     * `limit` where `counting`; uncounted: a node whose descendants are not counted lies in it. */
    long long count, limit;
    int counting, uncounted;
    /* per node */
    Vec parent, depth, tag, end, flags, hints, line, id_hash, class_ptr, attr_ptr, text_len, words, chars;
    Vec class_hash, attr_hash, link_node, extra_node, extra_ptr, fragment_node;
    Vec text;                 /* Py_UCS4: all text nodes concatenated */
    Vec raw, pending, scratch;  /* Py_UCS4 scratch: the raw text, pre's pending whitespace, collapsed */
    Vec hint_buf;             /* bytes: class_hints' and id_hints' scratch */
    /* the walk */
    Vec stack_i, stack_bits;  /* node index and tag bits of the open elements */
    int in_link, line_no, pre_depth, in_title;
    int raise_pending;        /* a <sup>/<sub> opened and no text node since (F_RAISED) */
    Py_ssize_t pre_first_text, n_texts, last_text;
    int space_pending, closed_since, opened_since, word_end;
    TagSlot *tags;
    size_t tag_cap, tag_used;
} W;

static void w_free(W *w) {
    Vec *all[] = {&w->parent, &w->depth, &w->tag, &w->end, &w->flags, &w->hints, &w->line, &w->id_hash,
                  &w->class_ptr, &w->attr_ptr, &w->text_len, &w->words, &w->chars, &w->class_hash,
                  &w->attr_hash, &w->link_node, &w->extra_node, &w->extra_ptr, &w->text, &w->raw,
                  &w->pending, &w->scratch, &w->hint_buf, &w->stack_i, &w->stack_bits, &w->fragment_node,
                  &w->url.out, &w->url.in, &w->url.tmp, &w->url.tmp2, &w->declared};
    for (size_t k = 0; k < sizeof(all) / sizeof(all[0]); k++) free(all[k]->data);
    free(w->tags);
    Py_XDECREF(w->links);
    Py_XDECREF(w->fragments);
    Py_XDECREF(w->href_cache);
}

/* ------------------------------------------------------------------ lxml's readings */

/* lxml's _collectText: the text/CDATA run starting at `c`, XInclude markers skipped, decoded
 * into w->raw. 0 on success (w->raw.len 0: None or ""), -1 on error, 1 to bail. */
static int collect_text(W *w, xmlNode *c) {
    w->raw.len = 0;
    for (; c; c = c->next) {
        if (c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) {
            if (c->content) {
                int r = utf8_append(&w->raw, c->content);
                if (r == -2) return -1;
                if (r == -1) return 1;
            }
        } else if (c->type != XML_XINCLUDE_START && c->type != XML_XINCLUDE_END) {
            break;
        }
    }
    return 0;
}

/* The value of attribute `a` of `node` as lxml reads it (xmlGetNsProp: the first attribute of
 * that name and namespace), as UTF-8 bytes in *s, *n. When lxml's own reading is needed,
 * *owned holds the Python str the bytes belong to. -1 error, 1 bail. */
static int attr_bytes(W *w, xmlNode *node, xmlAttr *a, const char **s, Py_ssize_t *n, PyObject **owned) {
    *owned = NULL;
    if (a->ns && !a->ns->href) return 1;
    const xmlChar *href = a->ns ? a->ns->href : NULL;
    int first = 1;
    for (xmlAttr *b = node->properties; b && b != a; b = b->next) {
        const xmlChar *bh = b->ns ? b->ns->href : NULL;
        if (b->type == XML_ATTRIBUTE_NODE && b->name && (b->name == a->name || (b->name[0] == a->name[0] &&
            strcmp((const char *)b->name, (const char *)a->name) == 0)) &&
            ((!href && !bh) || (href && bh && strcmp((const char *)href, (const char *)bh) == 0))) {
            first = 0;
            break;
        }
    }
    xmlNode *c = a->children;
    if (first && !c) { *s = ""; *n = 0; return 0; }
    if (first && !c->next && (c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) && c->content) {
        *s = (const char *)c->content;
        *n = (Py_ssize_t)strlen(*s);
        if (!utf8_valid((const unsigned char *)*s, (size_t)*n)) return 1;
        return 0;
    }
    PyObject *v = attributeValue(node, a);
    if (!v) {
        PyErr_Clear();
        return 1;
    }
    if (!PyUnicode_Check(v)) { Py_DECREF(v); return 1; }
    *s = PyUnicode_AsUTF8AndSize(v, n);
    if (!*s) { Py_DECREF(v); PyErr_Clear(); return 1; }
    *owned = v;
    (void)w;
    return 0;
}

/* ------------------------------------------------------------------ text nodes */

static int is_ascii(const Py_UCS4 *s, size_t n) {
    for (size_t k = 0; k < n; k++) if (s[k] >= 0x80) return 0;
    return 1;
}

static int ascii_alnum(Py_UCS4 c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* tokens.py's ranges: CJK characters (a token each) and combining marks (continue a token),
 * sorted [lo, hi] pairs. */
static Py_UCS4 *cjk_ranges, *mark_ranges;
static Py_ssize_t n_cjk, n_marks;

static int in_ranges(Py_UCS4 c, const Py_UCS4 *r, Py_ssize_t n) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (c < r[2 * mid]) hi = mid;
        else if (c > r[2 * mid + 1]) lo = mid + 1;
        else return 1;
    }
    return 0;
}

/* str.isalnum of one code point, without Python's tables for ASCII. */
static inline int uni_alnum(Py_UCS4 c) { return c < 0x80 ? ascii_alnum(c) : Py_UNICODE_ISALNUM(c); }

static int is_cjk(Py_UCS4 c) { return c >= 0x3040 && in_ranges(c, cjk_ranges, n_cjk); }
static int is_mark(Py_UCS4 c) { return c >= 0x300 && in_ranges(c, mark_ranges, n_marks); }

/* The number of matches of tokens.py's _TOKEN in s[0..n): re's [^\W_] is Py_UNICODE_ISALNUM.
 * A token starts at a letter or digit: a CJK one stands alone with the marks after it, any
 * other continues over letters and digits that are not CJK, and marks. */
static Py_ssize_t count_tokens(const Py_UCS4 *s, size_t n) {
    Py_ssize_t count = 0;
    size_t k = 0;
    while (k < n) {
        Py_UCS4 c = s[k++];
        if (!uni_alnum(c)) continue;
        count++;
        if (is_cjk(c)) {
            while (k < n && is_mark(s[k])) k++;
        } else {
            while (k < n && ((uni_alnum(s[k]) && !is_cjk(s[k])) || is_mark(s[k]))) k++;
        }
    }
    return count;
}

/* count_words of a collapsed text: the ASCII pattern ([A-Za-z0-9]+) or the full one. */
static Py_ssize_t words_of(W *w, const Py_UCS4 *s, size_t n) {
    if (!is_ascii(s, n)) {
        if (cjk_ranges && mark_ranges) return count_tokens(s, n);
        PyObject *str = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, s, (Py_ssize_t)n);
        if (!str) return -1;
        PyObject *r = PyObject_CallOneArg(w->count_words, str);
        Py_DECREF(str);
        if (!r) return -1;
        Py_ssize_t count = PyLong_AsSsize_t(r);
        Py_DECREF(r);
        return count;
    }
    Py_ssize_t count = 0;
    int in = 0;
    for (size_t k = 0; k < n; k++) {
        int a = ascii_alnum(s[k]);
        if (a && !in) count++;
        in = a;
    }
    return count;
}

/* " ".join(s.split()) of s[0..n) appended to `out`; returns the number of code points added. */
static Py_ssize_t collapse_into(Vec *out, const Py_UCS4 *s, size_t n) {
    if (vec_reserve(out, n) < 0) return -1;
    Py_UCS4 *o = (Py_UCS4 *)out->data + out->len;
    size_t m = 0;
    int gap = 0;
    for (size_t k = 0; k < n; k++) {
        Py_UCS4 c = s[k];
        if (Py_UNICODE_ISSPACE(c)) { gap = 1; continue; }
        if (gap && m) o[m++] = ' ';
        gap = 0;
        o[m++] = c;
    }
    out->len += m;
    return (Py_ssize_t)m;
}

/* Python's whitespace (Py_UNICODE_ISSPACE) and ascii_alnum of each ASCII code point, one
 * lookup for both in the loop every text node goes through (collapse_counting). */
enum { C_SPACE = 1, C_ALNUM = 2 };
static unsigned char ascii_class[0x80];

static void ascii_class_init(void) {
    for (Py_UCS4 c = 0; c < 0x80; c++)
        ascii_class[c] = (Py_UNICODE_ISSPACE(c) ? C_SPACE : 0) | (ascii_alnum(c) ? C_ALNUM : 0);
}

/* collapse_into, and in *ascii_words words_of's count where the collapsed text is ASCII (-1
 * where it is not): collapsing only removes whitespace and puts single spaces between what it
 * keeps, so the runs of letters and digits of the text are those of the collapsed text. */
static Py_ssize_t collapse_counting(Vec *out, const Py_UCS4 *s, size_t n, Py_ssize_t *ascii_words) {
    if (vec_reserve(out, n) < 0) return -1;
    Py_UCS4 *o = (Py_UCS4 *)out->data + out->len;
    size_t m = 0;
    int gap = 0, in = 0;
    Py_ssize_t words = 0;
    Py_UCS4 high = 0;
    for (size_t k = 0; k < n; k++) {
        Py_UCS4 c = s[k];
        if (c < 0x80) {
            unsigned char cls = ascii_class[c];
            if (cls & C_SPACE) { gap = 1; in = 0; continue; }
            int a = cls & C_ALNUM;
            words += a && !in;
            in = a;
        } else {
            if (Py_UNICODE_ISSPACE(c)) { gap = 1; in = 0; continue; }
            high = c;
            in = 0;
        }
        if (gap && m) o[m++] = ' ';
        gap = 0;
        o[m++] = c;
    }
    out->len += m;
    *ascii_words = high ? -1 : words;
    return (Py_ssize_t)m;
}

/* ------------------------------------------------------------------ class and id hints */

/* page.py's _class_info and _id_info for values made of ASCII characters only, from the word
 * tables set_hint_tables hands over (HINT_WORDS' exact words and prefixes, _hides' word sets)
 * and the responsive exception (_SHOWN_AT_A_SIZE, shown_at_a_size below). What is not ASCII is
 * called back to Python. */

typedef struct { char **word; uint32_t *bits; size_t *len; size_t n; } WordSet;

static WordSet hint_exact, hint_prefix, hide_parts, hide_qualifiers, sr_parts, sr_runs;
static int hints_ready;
static struct {
    int f_nav_exact, f_nav_hint, f_nav_word, f_comment, f_volatile;
    uint32_t ad, nav, hidden;
    int max_classes;
} hk;

static void words_free(WordSet *s) {
    for (size_t k = 0; k < s->n; k++) PyMem_RawFree(s->word[k]);
    PyMem_RawFree(s->word);
    PyMem_RawFree(s->bits);
    PyMem_RawFree(s->len);
    memset(s, 0, sizeof(*s));
}

/* A WordSet from an iterable of str or of (str, bits) pairs; the words must be ASCII. */
static int words_of_py(PyObject *items, WordSet *out) {
    PyObject *fast = PySequence_Fast(items, "expected a sequence of words");
    if (!fast) return -1;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(fast);
    WordSet s = {PyMem_RawCalloc((size_t)m + 1, sizeof(char *)), PyMem_RawCalloc((size_t)m + 1, sizeof(uint32_t)),
                 PyMem_RawCalloc((size_t)m + 1, sizeof(size_t)), 0};
    if (!s.word || !s.bits || !s.len) { PyErr_NoMemory(); goto bad; }
    for (Py_ssize_t k = 0; k < m; k++) {
        PyObject *it = PySequence_Fast_GET_ITEM(fast, k), *w = it;
        unsigned long bits = 0;
        if (PyTuple_Check(it) && !PyArg_ParseTuple(it, "Uk", &w, &bits)) goto bad;
        if (!PyUnicode_Check(w) || !PyUnicode_IS_ASCII(w)) {
            PyErr_SetString(PyExc_ValueError, "hint words must be ASCII str");
            goto bad;
        }
        Py_ssize_t len;
        const char *c = PyUnicode_AsUTF8AndSize(w, &len);
        if (!c) goto bad;
        s.word[k] = PyMem_RawMalloc((size_t)len + 1);
        if (!s.word[k]) { PyErr_NoMemory(); goto bad; }
        memcpy(s.word[k], c, (size_t)len + 1);
        s.bits[k] = (uint32_t)bits;
        s.len[k] = (size_t)len;
        s.n = (size_t)k + 1;
    }
    Py_DECREF(fast);
    words_free(out);
    *out = s;
    return 0;
bad:
    Py_DECREF(fast);
    words_free(&s);
    return -1;
}

typedef struct { const char *s; size_t n; } Span;

static int span_is(Span p, const char *w) { size_t n = strlen(w); return p.n == n && memcmp(p.s, w, n) == 0; }
static int span_starts(Span p, const char *w) { size_t n = strlen(w); return p.n >= n && memcmp(p.s, w, n) == 0; }

/* index + 1 of the word equal to p in s, or 0 */
static size_t set_find(const WordSet *s, Span p) {
    for (size_t k = 0; k < s->n; k++)
        if (s->len[k] == p.n && s->word[k][0] == p.s[0] && memcmp(s->word[k], p.s, p.n) == 0) return k + 1;
    return 0;
}

static int any_part_in(const Span *parts, size_t n, const WordSet *s) {
    for (size_t k = 0; k < n; k++) if (set_find(s, parts[k])) return 1;
    return 0;
}

static int any_part_is(const Span *parts, size_t n, const char *w) {
    for (size_t k = 0; k < n; k++) if (span_is(parts[k], w)) return 1;
    return 0;
}

static int is_upper(char c) { return c >= 'A' && c <= 'Z'; }
static int is_lower_digit(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
static int is_word(char c) { return ascii_alnum((unsigned char)c) || c == '_'; }

/* _CAMEL.findall(value) ([A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])) as spans of `v`; returns the count. */
static size_t camel_parts(const char *v, size_t n, Span *parts) {
    size_t m = 0, i = 0;
    while (i < n) {
        size_t j;
        if (is_upper(v[i])) {
            if (i + 1 < n && is_lower_digit(v[i + 1])) {
                for (j = i + 1; j < n && is_lower_digit(v[j]); j++) {}
            } else {
                for (j = i; j < n && is_upper(v[j]); j++) {}
                if (j < n && v[j] >= 'a' && v[j] <= 'z') j--;   /* the last capital starts a word */
            }
        } else if (is_lower_digit(v[i])) {
            for (j = i; j < n && is_lower_digit(v[j]); j++) {}
        } else {
            i++;
            continue;
        }
        parts[m++] = (Span){v + i, j - i};
        i = j;
    }
    return m;
}

/* _AD.search(low): seed 002's advertisement patterns on a lower-cased ASCII value. */
static int ad_search(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const char *p = s + i;
        size_t left = n - i;
        int before = i == 0 || !is_word(s[i - 1]);          /* \b before a word character */
#define AT(w) (left >= sizeof(w) - 1 && memcmp(p, w, sizeof(w) - 1) == 0)
#define AFTER(k) (i + (k) == n || !is_word(s[i + (k)]))     /* \b after a word character */
        if (AT("advert") || AT("adblock") || AT("adbox")) return 1;
        if (before && (AT("ad-") || AT("ad_") || AT("adv-") || AT("adv_") || AT("ads"))) return 1;
        if ((AT("-ad") || AT("_ad")) && AFTER(3)) return 1;
        if ((AT("-adv") || AT("_adv")) && AFTER(4)) return 1;
#undef AT
#undef AFTER
    }
    return 0;
}

/* _hides(low, parts) */
static int hides(const char *low, size_t n, const Span *parts, size_t np, char *run) {
    Span whole = {low, n};
    if (span_is(whole, "d-none") || span_is(whole, "display-none")) return 1;
    if (any_part_in(parts, np, &hide_parts) && !any_part_in(parts, np, &hide_qualifiers)) return 1;
    if (any_part_in(parts, np, &sr_parts)) return 1;
    if (any_part_is(parts, np, "print") &&
        (any_part_is(parts, np, "only") || any_part_is(parts, np, "visible") || any_part_is(parts, np, "show")))
        return 1;
    size_t r = 0;
    for (size_t k = 0; k < np; k++) { memcpy(run + r, parts[k].s, parts[k].n); r += parts[k].n; }
    run[r] = 0;
    if (strstr(run, "printonly")) return 1;
    for (size_t k = 0; k < sr_runs.n; k++) if (strstr(run, sr_runs.word[k])) return 1;
    return 0;
}

/* _name_hints(value, parts) and, with `roles`, _role_hints(value, parts) of the ASCII value
 * v[0..n) (no NUL inside); `low`, `run` are n + 1 bytes of scratch, `parts` n spans. */
static void value_hints(const char *v, size_t n, char *low, char *run, Span *parts, int *flags, uint32_t *roles) {
    for (size_t k = 0; k < n; k++) low[k] = (v[k] >= 'A' && v[k] <= 'Z') ? (char)(v[k] + 32) : v[k];
    low[n] = 0;
    size_t np = camel_parts(v, n, parts);
    for (size_t k = 0; k < np; k++) parts[k].s = low + (parts[k].s - v);   /* lower-cased parts */
    Span whole = {low, n};
    int f = (span_is(whole, "nav") || span_is(whole, "menu")) ? hk.f_nav_exact : 0;
    for (size_t k = 0; k < np; k++) {
        Span p = parts[k];
        if (span_starts(p, "nav") || span_starts(p, "menu")) {
            f |= hk.f_nav_hint;
            if (span_is(p, "nav") || span_is(p, "menu")) f |= hk.f_nav_word;
        } else if (span_starts(p, "comment") || span_is(p, "disqus")) {
            f |= hk.f_comment;
        }
    }
    *flags |= f;
    if (!roles) return;
    uint32_t b = ad_search(low, n) ? hk.ad : 0;
    if (strstr(low, "nav")) b |= hk.nav;
    for (size_t k = 0; k < np; k++) {
        size_t at = set_find(&hint_exact, parts[k]);
        if (at) b |= hint_exact.bits[at - 1];
        for (size_t j = 0; j < hint_prefix.n; j++)
            if (parts[k].n >= hint_prefix.len[j] && parts[k].s[0] == hint_prefix.word[j][0] &&
                memcmp(parts[k].s, hint_prefix.word[j], hint_prefix.len[j]) == 0)
                b |= hint_prefix.bits[j];
    }
    if (hides(low, n, parts, np, run)) b |= hk.hidden;
    *roles |= b;
}


/* Answers by value, for the whole process: class lists repeat across a site's pages, and a
 * cached answer costs a hash of the value where computing it walks the word tables. A full
 * table is emptied and filled again. */
typedef struct { char *key; size_t n; uint32_t code, roles, nh, *hashes; int flags, used; } Answer;
typedef struct { Answer *slot; size_t cap, used; } Answers;
static Answers class_answers, id_answers;
enum { ANSWERS_CAP = 1 << 16 };

static void answers_clear(Answers *a) {
    for (size_t k = 0; k < a->cap; k++) if (a->slot[k].used) free(a->slot[k].key);
    if (a->slot) memset(a->slot, 0, a->cap * sizeof(Answer));
    a->used = 0;
}

static Answer *answer_find(Answers *a, const char *s, size_t n, uint32_t code) {
    if (!a->slot) return NULL;
    for (size_t h = code & (a->cap - 1);; h = (h + 1) & (a->cap - 1)) {
        Answer *e = &a->slot[h];
        if (!e->used) return NULL;
        if (e->code == code && e->n == n && memcmp(e->key, s, n) == 0) return e;
    }
}

/* The table grown to twice its slots (from a few: a site has hundreds of distinct values, and
 * a small table stays in the cache); 0, or -1 when it could not grow. */
static int answers_grow(Answers *a) {
    size_t cap = a->cap ? a->cap * 2 : 1024;
    Answer *slot = calloc(cap, sizeof(Answer));
    if (!slot) return -1;
    for (size_t k = 0; k < a->cap; k++) {
        if (!a->slot[k].used) continue;
        size_t h = a->slot[k].code & (cap - 1);
        while (slot[h].used) h = (h + 1) & (cap - 1);
        slot[h] = a->slot[k];
    }
    free(a->slot);
    a->slot = slot;
    a->cap = cap;
    return 0;
}

/* Stores an answer (the value and its nh hashes in one block); a failed allocation stores
 * nothing. */
static void answer_put(Answers *a, const char *s, size_t n, uint32_t code, int flags, uint32_t roles,
                       const uint32_t *hashes, uint32_t nh) {
    if (a->used * 2 >= a->cap) {
        if (a->cap >= ANSWERS_CAP) answers_clear(a);
        else if (answers_grow(a) < 0) return;
    }
    size_t at = (n + 3) & ~(size_t)3;
    char *key = malloc(at + nh * sizeof(uint32_t) + 1);
    if (!key) return;
    memcpy(key, s, n);
    uint32_t *hs = (uint32_t *)(void *)(key + at);
    if (nh) memcpy(hs, hashes, nh * sizeof(uint32_t));
    size_t h = code & (a->cap - 1);
    while (a->slot[h].used) h = (h + 1) & (a->cap - 1);
    a->slot[h] = (Answer){key, n, code, roles, nh, hs, flags, 1};
    a->used++;
}

static int u32_cmp(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int ascii_only(const char *s, Py_ssize_t n) {
    for (Py_ssize_t k = 0; k < n; k++) if ((unsigned char)s[k] >= 0x80 || !s[k]) return 0;
    return 1;
}

/* Scratch of a hint computation: 3n + 2 bytes and n spans. */
static int hint_scratch(Vec *v, size_t n, char **low, char **run, Span **parts) {
    size_t need = n * (sizeof(Span) + 2) + 2 + sizeof(Span);
    v->len = 0;
    if (vec_reserve(v, need) < 0) return -1;
    *parts = (Span *)v->data;
    *low = (char *)v->data + (n + 1) * sizeof(Span);
    *run = *low + n + 1;
    return 0;
}

/* Whether the lower-cased ASCII token t[0..n) is in `words` (NULL-ended) followed by the end or,
 * with `more`, by "-" and one or more of [a-z-]; the index past the word matched, or 0. */
static int word_then(const char *t, size_t n, size_t at, const char *const *words, int more) {
    for (const char *const *w = words; *w; w++) {
        size_t len = strlen(*w);
        if (at + len > n || memcmp(t + at, *w, len) != 0) continue;
        size_t k = at + len;
        if (k == n) return 1;
        if (more && t[k] == '-' && k + 1 < n) {
            size_t j = k + 1;
            while (j < n && ((t[j] >= 'a' && t[j] <= 'z') || t[j] == '-')) j++;
            if (j == n) return 1;
        }
    }
    return 0;
}

/* page.py's _SHOWN_AT_A_SIZE.fullmatch(token.lower()) of an ASCII token: a class that shows its
 * element at some screen size (d-md-block, md:flex, visible-lg, show-for-medium). */
static int shown_at_a_size_of(const char *t, size_t n);

static int shown_at_a_size(const char *s, size_t n) {
    char small[64], *t = n <= sizeof(small) ? small : malloc(n);
    if (!t) return 0;
    for (size_t k = 0; k < n; k++) t[k] = (char)(s[k] >= 'A' && s[k] <= 'Z' ? s[k] + 32 : s[k]);
    int shown = shown_at_a_size_of(t, n);
    if (t != small) free(t);
    return shown;
}

/* shown_at_a_size of the lower-cased token t[0..n) */
static int shown_at_a_size_of(const char *t, size_t n) {
    static const char *const d_sizes[] = {"sm", "md", "lg", "xl", "xxl", NULL};
    static const char *const sizes[] = {"sm", "md", "lg", "xl", "2xl", NULL};
    static const char *const displays[] = {"block", "inline", "inline-block", "flex", "inline-flex", "grid",
                                           "inline-grid", "table", "table-row", "table-cell", "contents",
                                           "flow-root", "list-item", "visible", "not-sr-only", NULL};
    static const char *const visible[] = {"xs", "sm", "md", "lg", "xl", NULL};
    static const char *const show_for[] = {"small", "medium", "large", "xlarge", "xxlarge", NULL};
    if (n > 2 && t[0] == 'd' && t[1] == '-') {
        for (const char *const *w = d_sizes; *w; w++) {
            size_t len = strlen(*w), k = 2 + len;
            if (k + 1 >= n || memcmp(t + 2, *w, len) != 0 || t[k] != '-') continue;
            size_t j = k + 1;
            while (j < n && ((t[j] >= 'a' && t[j] <= 'z') || t[j] == '-')) j++;
            if (j == n && !(n - k - 1 == 4 && memcmp(t + k + 1, "none", 4) == 0)) return 1;
        }
    }
    for (const char *const *w = sizes; *w; w++) {
        size_t len = strlen(*w);
        if (len + 1 < n && memcmp(t, *w, len) == 0 && t[len] == ':') {
            for (const char *const *d = displays; *d; d++)
                if (n - len - 1 == strlen(*d) && memcmp(t + len + 1, *d, n - len - 1) == 0) return 1;
        }
    }
    if (n > 8 && memcmp(t, "visible-", 8) == 0 && word_then(t, n, 8, visible, 1)) return 1;
    if (n > 9 && memcmp(t, "show-for-", 9) == 0 && word_then(t, n, 9, show_for, 1)) return 1;
    return 0;
}

/* _class_info(value) of an ASCII class value into `hashes` (sorted, distinct), *flags,
 * *roles: 1 done, 0 when Python must answer (not ASCII), -1 error. */
static int class_hints(Vec *scratch, const char *s, Py_ssize_t n, Vec *hashes, int *flags, uint32_t *roles) {
    if (!hints_ready || !ascii_only(s, n)) return 0;
    uint32_t code = crc_end(crc_feed(crc_begin(), (const unsigned char *)s, (size_t)n));
    Answer *got = answer_find(&class_answers, s, (size_t)n, code);
    if (got) {
        if (vec_reserve(hashes, got->nh) < 0) return -1;
        if (got->nh) memcpy((uint32_t *)hashes->data + hashes->len, got->hashes, got->nh * sizeof(uint32_t));
        hashes->len += got->nh;
        *flags |= got->flags;
        *roles |= got->roles;
        return 1;
    }
    char *low, *run;
    Span *parts;
    if (hint_scratch(scratch, (size_t)n, &low, &run, &parts) < 0) return -1;
    size_t ntok = 0;
    for (Py_ssize_t k = 0; k < n;) {
        while (k < n && Py_UNICODE_ISSPACE((Py_UCS4)(unsigned char)s[k])) k++;
        if (k == n) break;
        ntok++;
        while (k < n && !Py_UNICODE_ISSPACE((Py_UCS4)(unsigned char)s[k])) k++;
    }
    int with_roles = ntok <= (size_t)hk.max_classes;
    size_t start = hashes->len;
    if (vec_reserve(hashes, ntok) < 0) return -1;
    int f = 0;
    uint32_t r = 0;
    for (Py_ssize_t k = 0; k < n;) {
        while (k < n && Py_UNICODE_ISSPACE((Py_UCS4)(unsigned char)s[k])) k++;
        if (k == n) break;
        Py_ssize_t a = k;
        while (k < n && !Py_UNICODE_ISSPACE((Py_UCS4)(unsigned char)s[k])) k++;
        value_hints(s + a, (size_t)(k - a), low, run, parts, &f, with_roles ? &r : NULL);
        VAT(*hashes, uint32_t, hashes->len++) = crc_end(crc_feed(crc_begin(), (const unsigned char *)s + a, (size_t)(k - a)));
    }
    if (r & hk.hidden) {
        /* responsive: hidden on some screens, shown on others (_class_info) */
        for (Py_ssize_t k = 0; k < n;) {
            while (k < n && Py_UNICODE_ISSPACE((Py_UCS4)(unsigned char)s[k])) k++;
            Py_ssize_t a = k;
            while (k < n && !Py_UNICODE_ISSPACE((Py_UCS4)(unsigned char)s[k])) k++;
            if (k > a && shown_at_a_size(s + a, (size_t)(k - a))) { r &= ~hk.hidden; break; }
        }
    }
    uint32_t *h = (uint32_t *)hashes->data + start;
    size_t m = hashes->len - start, u = 0;
    qsort(h, m, sizeof(uint32_t), u32_cmp);
    for (size_t k = 0; k < m; k++) if (!u || h[k] != h[u - 1]) h[u++] = h[k];
    hashes->len = start + u;
    answer_put(&class_answers, s, (size_t)n, code, f, r, h, (uint32_t)u);
    *flags |= f;
    *roles |= r;
    return 1;
}

/* _id_info(value) of an ASCII id: 1 done (*hash 0: no id), 0 for Python, -1 error. */
static int id_hints(Vec *scratch, const char *s, Py_ssize_t n, uint32_t *hash, int *flags, uint32_t *roles) {
    if (!hints_ready || !ascii_only(s, n)) return 0;
    while (n && Py_UNICODE_ISSPACE((Py_UCS4)(unsigned char)s[n - 1])) n--;
    while (n && Py_UNICODE_ISSPACE((Py_UCS4)(unsigned char)s[0])) { s++; n--; }
    *hash = 0;
    if (!n) return 1;
    uint32_t h = crc_end(crc_feed(crc_begin(), (const unsigned char *)s, (size_t)n));
    Answer *got = answer_find(&id_answers, s, (size_t)n, h);
    if (got) {
        *hash = h ? h : 1;
        *flags |= got->flags;
        *roles |= got->roles;
        return 1;
    }
    char *low, *run;
    Span *parts;
    if (hint_scratch(scratch, (size_t)n, &low, &run, &parts) < 0) return -1;
    int f = 0;
    uint32_t r = 0;
    value_hints(s, (size_t)n, low, run, parts, &f, &r);
    for (Py_ssize_t k = 0, digits = 0; k < n; k++) {
        digits = (s[k] >= '0' && s[k] <= '9') ? digits + 1 : 0;
        if (digits >= 3) { f |= hk.f_volatile; break; }
    }
    answer_put(&id_answers, s, (size_t)n, h, f, r, NULL, 0);
    *hash = h ? h : 1;
    *flags |= f;
    *roles |= r;
    return 1;
}

/* A node's class and attribute hashes are the ones added since cls_start, attr_start. */
static int push_node(W *w, int32_t parent, int32_t tag, int flags, uint32_t hint, int32_t cls_start,
                     int32_t attr_start) {
    int32_t i = (int32_t)w->parent.len;
    int32_t zero = 0;
    if (VPUSH(w->class_ptr, int32_t, cls_start) < 0 || VPUSH(w->attr_ptr, int32_t, attr_start) < 0 ||
        VPUSH(w->parent, int32_t, parent) < 0 || VPUSH(w->depth, int32_t, (int32_t)w->stack_i.len) < 0 ||
        VPUSH(w->tag, int32_t, tag) < 0 || VPUSH(w->end, int32_t, i + 1) < 0 ||
        VPUSH(w->flags, uint16_t, (uint16_t)flags) < 0 || VPUSH(w->hints, uint32_t, hint) < 0 ||
        VPUSH(w->line, int32_t, (int32_t)w->line_no) < 0 || VPUSH(w->id_hash, uint32_t, 0) < 0 ||
        VPUSH(w->text_len, int32_t, zero) < 0 || VPUSH(w->words, int32_t, zero) < 0 ||
        VPUSH(w->chars, int32_t, zero) < 0)
        return -1;
    return 0;
}

/* _flatten's add_text of the raw text in w->raw (non-empty), child of node p. */
static int add_text(W *w, int32_t p) {
    const Py_UCS4 *raw = (const Py_UCS4 *)w->raw.data;
    size_t rn = w->raw.len;
    int flag;
    size_t start = w->text.len;
    Py_ssize_t text_n, chars, words;
    if (w->pre_depth) {
        int all_space = 1;
        for (size_t k = 0; k < rn && all_space; k++) all_space = Py_UNICODE_ISSPACE(raw[k]);
        if (all_space) {
            if (vec_reserve(&w->pending, rn) < 0) return -1;
            memcpy((Py_UCS4 *)w->pending.data + w->pending.len, raw, rn * sizeof(Py_UCS4));
            w->pending.len += rn;
            return 0;
        }
        /* s = pending + raw */
        const Py_UCS4 *s = raw;
        size_t sn = rn;
        if (w->pending.len) {
            if (vec_reserve(&w->pending, rn) < 0) return -1;
            memcpy((Py_UCS4 *)w->pending.data + w->pending.len, raw, rn * sizeof(Py_UCS4));
            w->pending.len += rn;
            s = (const Py_UCS4 *)w->pending.data;
            sn = w->pending.len;
        }
        if (w->n_texts == w->pre_first_text) {
            size_t lead = 0;
            while (lead < sn && Py_UNICODE_ISSPACE(s[lead])) lead++;
            size_t cut = 0;
            for (size_t k = lead; k > 0; k--)
                if (s[k - 1] == '\n') { cut = k; break; }
            s += cut;
            sn -= cut;
        }
        if (vec_reserve(&w->text, sn) < 0) return -1;
        memcpy((Py_UCS4 *)w->text.data + w->text.len, s, sn * sizeof(Py_UCS4));
        w->text.len += sn;
        text_n = (Py_ssize_t)sn;
        w->scratch.len = 0;
        chars = collapse_into(&w->scratch, s, sn);
        w->pending.len = 0;
        if (chars < 0) return -1;
        words = words_of(w, (const Py_UCS4 *)w->scratch.data, (size_t)chars);
        flag = w->k.f_pre;
    } else {
        Py_ssize_t ascii_words;
        chars = collapse_counting(&w->text, raw, rn, &ascii_words);
        if (chars < 0) return -1;
        if (chars == 0) {
            w->space_pending = 1;
            return 0;
        }
        const Py_UCS4 *s = (const Py_UCS4 *)w->text.data + start;
        int apart = w->closed_since && w->opened_since && w->word_end && uni_alnum(s[0]);
        flag = (w->space_pending || Py_UNICODE_ISSPACE(raw[0]) || apart || !w->k.browser) ? w->k.f_space_before : 0;
        w->space_pending = Py_UNICODE_ISSPACE(raw[rn - 1]) ? 1 : 0;
        w->word_end = uni_alnum(s[chars - 1]) ? 1 : 0;
        text_n = chars;
        words = ascii_words >= 0 ? ascii_words : words_of(w, s, (size_t)chars);
    }
    if (words < 0) return -1;
    w->closed_since = w->opened_since = 0;
    if (w->raise_pending) {
        if (!w->pre_depth) flag |= w->k.f_raised;
        w->raise_pending = 0;
    }
    int32_t i = (int32_t)w->parent.len;
    if (push_node(w, p, 0, w->in_link ? flag | w->k.f_in_link : flag, 0, (int32_t)w->class_hash.len,
                  (int32_t)w->attr_hash.len) < 0)
        return -1;
    VAT(w->text_len, int32_t, i) = (int32_t)text_n;
    VAT(w->words, int32_t, i) = (int32_t)words;
    VAT(w->chars, int32_t, i) = (int32_t)chars;
    w->last_text = i;
    w->n_texts++;
    return 0;
}

/* The text run starting at `c` as a text node of p, if truthy. */
static int text_run(W *w, xmlNode *c, int32_t p) {
    int r = collect_text(w, c);
    if (r) return r;
    if (!w->raw.len) return 0;
    return add_text(w, p);
}

/* ------------------------------------------------------------------ elements */

/* tag_props' answers for names in no namespace, kept per process for one tag_props (the
 * rules' function): a page asks for its forty-odd tags, every page the same ones. Emptied when
 * full or asked for another function. */
typedef struct { char *name; uint32_t code; long tid, bits; unsigned long hint; } TagProps;
static TagProps *known_tags;
static size_t known_cap, known_used;
static PyObject *known_tags_of;
enum { KNOWN_TAGS_MAX = 1 << 12 };

static void tag_props_forget(void) {
    for (size_t k = 0; k < known_cap; k++) free(known_tags[k].name);
    if (known_tags) memset(known_tags, 0, known_cap * sizeof(TagProps));
    known_used = 0;
}

static TagProps *tag_props_known(PyObject *fn, const char *name) {
    if (fn != known_tags_of || !known_tags) return NULL;
    size_t n = strlen(name);
    uint32_t code = crc_end(crc_feed(crc_begin(), (const unsigned char *)name, n));
    for (size_t h = code & (known_cap - 1);; h = (h + 1) & (known_cap - 1)) {
        TagProps *t = &known_tags[h];
        if (!t->name) return NULL;
        if (t->code == code && strcmp(t->name, name) == 0) return t;
    }
}

static void tag_props_keep(PyObject *fn, const char *name, long tid, long bits, unsigned long hint) {
    if (fn != known_tags_of) {
        tag_props_forget();
        Py_XSETREF(known_tags_of, Py_NewRef(fn));
    }
    if (!known_tags) {
        known_tags = calloc(2 * KNOWN_TAGS_MAX, sizeof(TagProps));
        if (!known_tags) return;
        known_cap = 2 * KNOWN_TAGS_MAX;
    }
    if (known_used >= KNOWN_TAGS_MAX) tag_props_forget();
    size_t n = strlen(name);
    char *copy = malloc(n + 1);
    if (!copy) return;
    memcpy(copy, name, n + 1);
    uint32_t code = crc_end(crc_feed(crc_begin(), (const unsigned char *)name, n));
    size_t h = code & (known_cap - 1);
    while (known_tags[h].name) h = (h + 1) & (known_cap - 1);
    known_tags[h] = (TagProps){copy, code, tid, bits, hint};
    known_used++;
}

static int tag_of(W *w, xmlNode *node, TagSlot **out) {
    const xmlNs *ns = node->ns;
    if (w->tag_used * 2 >= w->tag_cap) {
        size_t cap = w->tag_cap ? w->tag_cap * 2 : 256;
        TagSlot *t = calloc(cap, sizeof(TagSlot));
        if (!t) { PyErr_NoMemory(); return -1; }
        for (size_t k = 0; k < w->tag_cap; k++) {
            if (!w->tags[k].used) continue;
            size_t h = (((uintptr_t)w->tags[k].name >> 3) ^ ((uintptr_t)w->tags[k].ns >> 3) * 31) & (cap - 1);
            while (t[h].used) h = (h + 1) & (cap - 1);
            t[h] = w->tags[k];
        }
        free(w->tags);
        w->tags = t;
        w->tag_cap = cap;
    }
    size_t h = (((uintptr_t)node->name >> 3) ^ ((uintptr_t)ns >> 3) * 31) & (w->tag_cap - 1);
    while (w->tags[h].used) {
        if (w->tags[h].name == node->name && w->tags[h].ns == ns) { *out = &w->tags[h]; return 0; }
        h = (h + 1) & (w->tag_cap - 1);
    }
    if (!node->name) return 1;
    long tid, bits;
    unsigned long hint;
    TagProps *known = ns ? NULL : tag_props_known(w->tag_props, (const char *)node->name);
    if (known) {
        tid = known->tid;
        bits = known->bits;
        hint = known->hint;
    } else {
        /* lxml's tag: "{href}name" in a namespace, else the name. */
        PyObject *name;
        if (ns && ns->href) name = PyUnicode_FromFormat("{%s}%s", (const char *)ns->href, (const char *)node->name);
        else name = PyUnicode_DecodeUTF8((const char *)node->name, (Py_ssize_t)strlen((const char *)node->name), NULL);
        if (!name) { PyErr_Clear(); return 1; }
        PyObject *props = PyObject_CallOneArg(w->tag_props, name);
        Py_DECREF(name);
        if (!props) return -1;
        if (!PyArg_ParseTuple(props, "llk", &tid, &bits, &hint)) { Py_DECREF(props); return -1; }
        Py_DECREF(props);
        if (!ns) tag_props_keep(w->tag_props, (const char *)node->name, tid, bits, hint);
    }
    TagSlot *slot = &w->tags[h];
    slot->name = node->name;
    slot->ns = ns;
    slot->used = 1;
    slot->tid = (int32_t)tid;
    slot->bits = (int)bits;
    slot->hint = (uint32_t)hint;
    w->tag_used++;
    *out = slot;
    return 0;
}

static int is_name(xmlAttr *a, const char *name) {
    return !(a->ns && a->ns->href) && strcmp((const char *)a->name, name) == 0;
}

/* The attributes the walk reads, by name (is_name), one test per attribute. */
enum { A_OTHER, A_CLASS, A_ID, A_HREF, A_REL, A_ROLE, A_HIDDEN, A_ARIA_HIDDEN, A_STYLE };

static int attr_kind(xmlAttr *a) {
    if (a->ns && a->ns->href) return A_OTHER;
    const char *s = (const char *)a->name;
    switch (s[0]) {
    case 'c': return strcmp(s, "class") == 0 ? A_CLASS : A_OTHER;
    case 'i': return strcmp(s, "id") == 0 ? A_ID : A_OTHER;
    case 'h': return strcmp(s, "href") == 0 ? A_HREF : strcmp(s, "hidden") == 0 ? A_HIDDEN : A_OTHER;
    case 'r': return strcmp(s, "rel") == 0 ? A_REL : strcmp(s, "role") == 0 ? A_ROLE : A_OTHER;
    case 'a': return strcmp(s, "aria-hidden") == 0 ? A_ARIA_HIDDEN : A_OTHER;
    case 's': return strcmp(s, "style") == 0 ? A_STYLE : A_OTHER;
    default: return A_OTHER;
    }
}

static int ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* v.strip().lower() == word (word: lower-case ASCII) */
static int stripped_lower_is(const char *s, Py_ssize_t n, const char *word) {
    if (ascii_only(s, n)) {
        while (n && Py_UNICODE_ISSPACE((Py_UCS4)(unsigned char)s[n - 1])) n--;
        while (n && Py_UNICODE_ISSPACE((Py_UCS4)(unsigned char)*s)) { s++; n--; }
        if ((size_t)n != strlen(word)) return 0;
        for (Py_ssize_t k = 0; k < n; k++) if (ascii_lower(s[k]) != word[k]) return 0;
        return 1;
    }
    PyObject *v = PyUnicode_DecodeUTF8(s, n, NULL);
    if (!v) return -1;
    PyObject *st = PyObject_CallMethod(v, "strip", NULL);
    Py_DECREF(v);
    if (!st) return -1;
    PyObject *low = PyObject_CallMethod(st, "lower", NULL);
    Py_DECREF(st);
    if (!low) return -1;
    int eq = PyUnicode_CompareWithASCIIString(low, word) == 0;
    Py_DECREF(low);
    return eq;
}

/* The ASCII `word` (lower case) at s[k..n) in any case; the index past it, or -1. */
static Py_ssize_t word_at(const char *s, Py_ssize_t n, Py_ssize_t k, const char *word) {
    for (; *word; word++, k++) if (k >= n || ascii_lower(s[k]) != *word) return -1;
    return k;
}

/* page.py's _HIDDEN_STYLE.search(v) (display\s*:\s*none|visibility\s*:\s*hidden, any case) of
 * an ASCII value: 1 or 0; -1 when the value is not ASCII (Python's case folding then decides). */
static int hidden_style_ascii(const char *s, Py_ssize_t n) {
    if (!ascii_only(s, n)) return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        char c = ascii_lower(s[i]);
        const char *name = c == 'd' ? "display" : c == 'v' ? "visibility" : NULL;
        if (!name) continue;
        Py_ssize_t k = word_at(s, n, i, name);
        if (k < 0) continue;
        while (k < n && Py_UNICODE_ISSPACE((Py_UCS4)(unsigned char)s[k])) k++;
        if (k >= n || s[k] != ':') continue;
        k++;
        while (k < n && Py_UNICODE_ISSPACE((Py_UCS4)(unsigned char)s[k])) k++;
        if (word_at(s, n, k, c == 'd' ? "none" : "hidden") >= 0) return 1;
    }
    return 0;
}

/* Unpacks (hash or hashes, flag bits, role bits) from _class_info / _id_info. */
static PyObject *call_info(PyObject *fn, const char *s, Py_ssize_t n, long *bits, unsigned long *roles) {
    PyObject *v = PyUnicode_DecodeUTF8(s, n, NULL);
    if (!v) return NULL;
    PyObject *r = PyObject_CallOneArg(fn, v);
    Py_DECREF(v);
    if (!r) return NULL;
    if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 3) {
        Py_DECREF(r);
        PyErr_SetString(PyExc_TypeError, "class/id info: expected a 3-tuple");
        return NULL;
    }
    *bits = PyLong_AsLong(PyTuple_GET_ITEM(r, 1));
    *roles = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(r, 2));
    if (PyErr_Occurred()) { Py_DECREF(r); return NULL; }
    return r;
}

/* ------------------------------------------------------------------ links (urls.py) */

/* urls.resolve_link and urls.link_fragment computed here for the common hrefs, on the UTF-8
 * bytes of the href, step for step as urls.py does them on code points (every delimiter they
 * look for is ASCII, and a non-ASCII character is percent-encoded as its UTF-8 bytes). What is
 * rare or intricate is left to Python (R_PY): a backslash, a host that is not ASCII or holds a
 * "%", an IPv6 literal, an http(s) scheme not written "http://" or "https://" at the start,
 * a base that is not ASCII or whose origin _join does not rebuild. */

enum { U_PATH = 1, U_QUERY = 2, U_HOST = 4, U_UNRESERVED = 8, U_FRAGMENT = 16, U_HEX = 32, U_SCHEME = 64 };
static unsigned char url_class[256];
static const char HEX_DIGITS[] = "0123456789ABCDEF";

static void url_init(void) {
    for (int c = 1; c < 256; c++) {
        int alnum = c < 0x80 && ascii_alnum((Py_UCS4)c);
        unsigned char k = 0;
        if (alnum || strchr("-._~", c)) k |= U_UNRESERVED;
        if (alnum || strchr("-._~!$&'()*+,;=:@/", c)) k |= U_PATH | U_QUERY;
        if (c == '?') k |= U_QUERY;
        if (alnum || strchr("-._~!$&'()*+,;=", c)) k |= U_HOST;
        if (c >= 0x21 && c < 0x7F && !strchr("\"<>`()", c)) k |= U_FRAGMENT;
        if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')) k |= U_HEX;
        if (alnum || c == '+' || c == '.' || c == '-') k |= U_SCHEME;
        url_class[c] = k;
    }
}

/* R_NONE: resolve_link answers None; R_URL: the answer is in the output buffer; R_PY: Python
 * answers; -1: an error is set. */
enum { R_NONE, R_URL, R_PY, R_BASE };


static int put_bytes(Vec *b, const char *s, size_t n) {
    if (vec_reserve(b, n) < 0) return -1;
    if (n) memcpy((char *)b->data + b->len, s, n);
    b->len += n;
    return 0;
}

/* _clean: C0 controls and spaces off both ends, tab, CR and LF out of the middle (into tmp). */
static int url_clean(const char **s, size_t *n, Vec *tmp) {
    const char *p = *s;
    size_t a = 0, e = *n;
    while (a < e && (unsigned char)p[a] <= 0x20) a++;
    while (e > a && (unsigned char)p[e - 1] <= 0x20) e--;
    p += a;
    size_t m = e - a;
    if (memchr(p, '\t', m) || memchr(p, '\n', m) || memchr(p, '\r', m)) {
        tmp->len = 0;
        if (vec_reserve(tmp, m) < 0) return -1;
        char *o = (char *)tmp->data;
        size_t j = 0;
        for (size_t k = 0; k < m; k++)
            if (p[k] != '\t' && p[k] != '\n' && p[k] != '\r') o[j++] = p[k];
        tmp->len = j;
        p = o;
        m = j;
    }
    *s = p;
    *n = m;
    return 0;
}

static int hex_value(unsigned char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

/* _PATH_TOKEN.sub(_fix_token, s) (`safe` U_PATH) or _QUERY_TOKEN's (U_QUERY), appended to b. */
static int url_escape(Vec *b, const char *s, size_t n, int safe) {
    if (vec_reserve(b, 3 * n) < 0) return -1;
    char *o = (char *)b->data + b->len;
    size_t m = 0;
    for (size_t k = 0; k < n;) {
        unsigned char c = (unsigned char)s[k];
        if (c == '%') {
            if (k + 2 < n && (url_class[(unsigned char)s[k + 1]] & U_HEX) && (url_class[(unsigned char)s[k + 2]] & U_HEX)) {
                int v = hex_value((unsigned char)s[k + 1]) * 16 + hex_value((unsigned char)s[k + 2]);
                if (url_class[v] & U_UNRESERVED) {
                    o[m++] = (char)v;
                } else {
                    o[m++] = '%';
                    o[m++] = HEX_DIGITS[v >> 4];
                    o[m++] = HEX_DIGITS[v & 15];
                }
                k += 3;
            } else {
                o[m++] = '%';
                o[m++] = '2';
                o[m++] = '5';
                k++;
            }
        } else if (url_class[c] & safe) {
            o[m++] = (char)c;
            k++;
        } else {
            o[m++] = '%';
            o[m++] = HEX_DIGITS[c >> 4];
            o[m++] = HEX_DIGITS[c & 15];
            k++;
        }
    }
    b->len += m;
    return 0;
}

/* _remove_dot_segments of the path b[start:] (it begins "/"), in place when it holds "/.":
 * each kept segment is written at or before where it was read. */
static void url_dot_segments(Vec *b, size_t start) {
    char *p = (char *)b->data + start;
    size_t n = b->len - start, m = 0, k = 1;
    int found = 0;
    for (size_t j = 0; j + 1 < n; j++) if (p[j] == '/' && p[j + 1] == '.') { found = 1; break; }
    if (!found) return;
    int last_dot = 0;
    for (;;) {
        size_t e = k;
        while (e < n && p[e] != '/') e++;
        size_t len = e - k;
        if (len == 2 && p[k] == '.' && p[k + 1] == '.') {
            while (m > 0 && p[--m] != '/') {}
            last_dot = 1;
        } else if (len == 1 && p[k] == '.') {
            last_dot = 1;
        } else {
            p[m++] = '/';
            memmove(p + m, p + k, len);
            m += len;
            last_dot = 0;
        }
        if (e >= n) break;
        k = e + 1;
    }
    if (last_dot || !m) p[m++] = '/';
    b->len = start + m;
}

/* _normalize_path of s[0..n) (it begins "/"), appended to b. */
static int url_path(Vec *b, const char *s, size_t n) {
    size_t start = b->len;
    if (url_escape(b, s, n, U_PATH) < 0) return -1;
    url_dot_segments(b, start);
    return 0;
}

/* normalize_url (_normalize_cached) of s[0..n) into u->out. */
static int url_normalize(UrlBufs *u, const char *s, size_t n) {
    if (url_clean(&s, &n, &u->tmp2) < 0) return -1;
    size_t scheme;
    if (n >= 5 && (s[0] | 0x20) == 'h' && (s[1] | 0x20) == 't' && (s[2] | 0x20) == 't' && (s[3] | 0x20) == 'p') {
        if (s[4] == ':') scheme = 4;
        else if (n >= 6 && (s[4] | 0x20) == 's' && s[5] == ':') scheme = 5;
        else return R_NONE;
    } else {
        return R_NONE;
    }
    if (memchr(s, '\\', n)) return R_PY;
    const char *rest = s + scheme + 1;
    size_t rn = n - scheme - 1;
    if (rn < 2 || rest[0] != '/' || rest[1] != '/') return R_NONE;
    rest += 2;
    rn -= 2;
    const char *at = memchr(rest, '#', rn);
    if (at) rn = (size_t)(at - rest);
    const char *query = NULL;
    size_t qn = 0;
    at = memchr(rest, '?', rn);
    if (at) {
        query = at + 1;
        qn = (size_t)(rest + rn - query);
        rn = (size_t)(at - rest);
    }
    at = memchr(rest, '/', rn);
    size_t an = at ? (size_t)(at - rest) : rn;
    const char *path = at ? at : "/";
    size_t pn = at ? rn - an : 1;
    if (memchr(rest, '[', an) || memchr(rest, ']', an)) return R_PY;
    const char *host = rest;
    size_t hn = an;
    for (size_t k = an; k > 0; k--)
        if (rest[k - 1] == '@') { host = rest + k; hn = an - k; break; }
    const char *port = host + hn;
    size_t portn = 0;
    for (size_t k = hn; k > 0; k--)
        if (host[k - 1] == ':') { port = host + k; portn = hn - k; hn = k - 1; break; }
    for (size_t k = 0; k < hn; k++) {
        unsigned char c = (unsigned char)host[k];
        if (c == '%' || c >= 0x80) return R_PY;
    }
    for (size_t k = 0; k < hn; k++)
        if (!(url_class[(unsigned char)host[k]] & U_HOST)) return R_NONE;
    while (hn && host[hn - 1] == '.') hn--;
    if (!hn) return R_NONE;
    for (size_t k = 0; k < portn; k++)
        if (port[k] < '0' || port[k] > '9') return R_NONE;
    while (portn > 1 && port[0] == '0') { port++; portn--; }
    if (portn > 5) return R_NONE;
    long value = 0;
    for (size_t k = 0; k < portn; k++) value = value * 10 + (port[k] - '0');
    if (value > 65535) return R_NONE;
    if (portn && value == (scheme == 4 ? 80 : 443) && (portn == 2 || portn == 3)) portn = 0;
    Vec *b = &u->out;
    b->len = 0;
    if (put_bytes(b, scheme == 4 ? "http://" : "https://", scheme + 3) < 0 || vec_reserve(b, hn) < 0) return -1;
    for (size_t k = 0; k < hn; k++) ((char *)b->data)[b->len++] = (char)(host[k] >= 'A' && host[k] <= 'Z' ? host[k] + 32 : host[k]);
    if (portn && (put_bytes(b, ":", 1) < 0 || put_bytes(b, port, portn) < 0)) return -1;
    if (url_path(b, path, pn) < 0) return -1;
    if (qn && (put_bytes(b, "?", 1) < 0 || url_escape(b, query, qn, U_QUERY) < 0)) return -1;
    return R_URL;
}

enum { K_PAGE, K_ORIGIN, K_PATH, K_DIRECTORY };

/* resolve_link(base, href) of the href s[0..n): R_URL (in u->out), R_NONE, R_BASE (the
 * normalized base), R_PY or -1. */
static int url_resolve(UrlBufs *u, const BaseParts *b, const char *s, size_t n) {
    if ((n >= 7 && memcmp(s, "http://", 7) == 0) || (n >= 8 && memcmp(s, "https://", 8) == 0))
        return url_normalize(u, s, n);
    const char *at = memchr(s, '#', n);
    if (at) n = (size_t)(at - s) + 1;
    int rooted = n && s[0] == '/';
    const char *h = s;
    size_t hn = n;
    if (url_clean(&h, &hn, &u->tmp) < 0) return -1;
    int kind;
    if (rooted) {
        kind = K_ORIGIN;
    } else {
        if (hn && ((h[0] | 0x20) >= 'a' && (h[0] | 0x20) <= 'z')) {
            size_t k = 1;
            while (k < hn && (url_class[(unsigned char)h[k]] & U_SCHEME)) k++;
            if (k < hn && h[k] == ':') {
                int http = (k == 4 || k == 5) && (h[0] | 0x20) == 'h' && (h[1] | 0x20) == 't' &&
                           (h[2] | 0x20) == 't' && (h[3] | 0x20) == 'p' && (k == 4 || (h[4] | 0x20) == 's');
                return http ? R_PY : R_NONE;
            }
        }
        if (hn && (h[0] == '/' || h[0] == '\\')) kind = K_ORIGIN;
        else if (!hn || h[0] == '#') kind = K_PAGE;
        else if (h[0] == '?') kind = K_PATH;
        else kind = K_DIRECTORY;
    }
    if (b->state == 0) return R_NONE;
    if (b->state != 1) return R_PY;
    if (kind == K_PAGE) return R_BASE;
    if (!b->origin) return R_PY;
    /* _join */
    if (memchr(h, '\\', hn)) return R_PY;
    const char *part = b->part[kind];
    size_t part_n = b->part_n[kind], origin = b->origin;
    if (hn >= 2 && h[0] == '/' && h[1] == '/') {
        size_t colon = (size_t)((const char *)memchr(part, ':', part_n) - part);
        u->in.len = 0;
        if (put_bytes(&u->in, part, colon + 1) < 0 || put_bytes(&u->in, h, hn) < 0) return -1;
        return url_normalize(u, (const char *)u->in.data, u->in.len);
    }
    at = memchr(h, '#', hn);
    if (at) hn = (size_t)(at - h);
    const char *query = NULL;
    size_t qn = 0;
    at = memchr(h, '?', hn);
    if (at) {
        query = at + 1;
        qn = (size_t)(h + hn - query);
        hn = (size_t)(at - h);
    }
    u->in.len = 0;
    if (!(hn && h[0] == '/') && put_bytes(&u->in, part + origin, part_n - origin) < 0) return -1;
    if (put_bytes(&u->in, h, hn) < 0) return -1;
    Vec *o = &u->out;
    o->len = 0;
    if (put_bytes(o, part, origin) < 0 || url_path(o, (const char *)u->in.data, u->in.len) < 0) return -1;
    if (qn && (put_bytes(o, "?", 1) < 0 || url_escape(o, query, qn, U_QUERY) < 0)) return -1;
    return R_URL;
}

/* link_fragment of the href s[0..n) into u->out (empty: none). */
static int url_fragment(UrlBufs *u, const char *s, size_t n) {
    u->out.len = 0;
    if (url_clean(&s, &n, &u->tmp) < 0) return -1;
    const char *at = memchr(s, '#', n);
    if (!at) return 0;
    at++;
    size_t fn = (size_t)(s + n - at);
    if (vec_reserve(&u->out, 3 * fn) < 0) return -1;
    char *o = (char *)u->out.data;
    size_t m = 0;
    for (size_t k = 0; k < fn; k++) {
        unsigned char c = (unsigned char)at[k];
        if (url_class[c] & U_FRAGMENT) {
            o[m++] = (char)c;
        } else {
            o[m++] = '%';
            o[m++] = HEX_DIGITS[c >> 4];
            o[m++] = HEX_DIGITS[c & 15];
        }
    }
    u->out.len = m;
    return 0;
}

/* BaseParts of urls._base_parts(base) (`parts`: its tuple or None). */
static int base_parts_of(PyObject *parts, BaseParts *b) {
    memset(b, 0, sizeof(*b));
    if (parts == Py_None) return 0;
    if (!PyTuple_Check(parts) || PyTuple_GET_SIZE(parts) != 5) {
        PyErr_SetString(PyExc_TypeError, "base parts: expected urls._base_parts' tuple or None");
        return -1;
    }
    b->state = 2;
    b->base = PyTuple_GET_ITEM(parts, 0);
    for (int k = 0; k < 4; k++) {
        PyObject *p = PyTuple_GET_ITEM(parts, k);
        if (!PyUnicode_Check(p)) {
            PyErr_SetString(PyExc_TypeError, "base parts: expected str parts");
            return -1;
        }
        if (!PyUnicode_IS_ASCII(p)) return 0;
        b->part[k] = (const char *)PyUnicode_DATA(p);
        b->part_n[k] = (size_t)PyUnicode_GET_LENGTH(p);
    }
    Py_ssize_t origin = PyLong_AsSsize_t(PyTuple_GET_ITEM(parts, 4));
    if (origin < 0) {
        if (PyErr_Occurred()) return -1;
        origin = 0;
    }
    for (int k = 1; k < 4; k++)
        if ((size_t)origin > b->part_n[k]) return 0;
    b->origin = (size_t)origin;
    b->state = 1;
    return 0;
}

static PyObject *ascii_str(const Vec *v) {
    PyObject *s = PyUnicode_New((Py_ssize_t)v->len, 127);
    if (s && v->len) memcpy(PyUnicode_DATA(s), v->data, v->len);
    return s;
}

/* The answer of url_resolve as a new reference (str or None), NULL for R_PY (no error) or an
 * error. */
static PyObject *resolved_object(UrlBufs *u, const BaseParts *b, const char *s, size_t n, int *python) {
    *python = 0;
    int r = url_resolve(u, b, s, n);
    switch (r) {
    case R_NONE: Py_RETURN_NONE;
    case R_URL: return ascii_str(&u->out);
    case R_BASE: return Py_NewRef(b->base);
    case R_PY: *python = 1; return NULL;
    default: return NULL;
    }
}

/* resolve_link's answers for the hrefs that begin "http://" or "https://", for the whole
 * process: resolve_link gives those normalize_url(href), whatever the base, and a site's
 * pages link the same absolute URLs (its menus, its other sites). Kept for one resolve
 * function; emptied when full. */
static PyObject *absolute_links, *absolute_links_of;
enum { ABSOLUTE_LINKS_MAX = 1 << 16 };

static int is_absolute_http(const char *s, Py_ssize_t n) {
    return (n >= 7 && memcmp(s, "http://", 7) == 0) || (n >= 8 && memcmp(s, "https://", 8) == 0);
}

static PyObject *resolve_uncached(W *w, PyObject *href, int absolute) {
    if (absolute) {
        if (absolute_links_of != w->resolve) {
            Py_CLEAR(absolute_links);
            Py_XSETREF(absolute_links_of, Py_NewRef(w->resolve));
            if (!(absolute_links = PyDict_New())) return NULL;
        }
        PyObject *got = PyDict_GetItemWithError(absolute_links, href);
        if (got) return Py_NewRef(got);
        if (PyErr_Occurred()) return NULL;
    }
    PyObject *target = PyObject_CallFunctionObjArgs(w->resolve, w->base_url, href, NULL);
    if (target && absolute) {
        if (PyDict_GET_SIZE(absolute_links) >= ABSOLUTE_LINKS_MAX) PyDict_Clear(absolute_links);
        if (PyDict_SetItem(absolute_links, href, target) < 0) Py_CLEAR(target);
    }
    return target;
}

/* The answer of resolve_link for the href Python answers: kept per page, and per process for
 * the absolute ones (resolve_uncached). */
static PyObject *resolve_in_python(W *w, const char *s, Py_ssize_t n) {
    PyObject *href = PyUnicode_DecodeUTF8(s, n, NULL);
    if (!href) return NULL;
    PyObject *target = PyDict_GetItemWithError(w->href_cache, href);
    if (target) {
        Py_INCREF(target);
    } else if (!PyErr_Occurred()) {
        target = resolve_uncached(w, href, is_absolute_http(s, n));
        if (target && PyDict_SetItem(w->href_cache, href, target) < 0) Py_CLEAR(target);
    }
    Py_DECREF(href);
    return target;
}

static int resolve_href(W *w, const char *s, Py_ssize_t n, int32_t i) {
    int python;
    PyObject *target = resolved_object(&w->url, &w->parts, s, (size_t)n, &python);
    if (!target && python) target = resolve_in_python(w, s, n);
    if (!target) return -1;
    int r = 0;
    if (target != Py_None) {
        r = VPUSH(w->link_node, int32_t, i);
        if (!r) r = PyList_Append(w->links, target);
        if (!r && memchr(s, '#', (size_t)n)) {
            r = url_fragment(&w->url, s, (size_t)n);
            if (!r && w->url.out.len) {
                PyObject *fragment = ascii_str(&w->url.out);
                r = fragment ? PyList_Append(w->fragments, fragment) : -1;
                Py_XDECREF(fragment);
                if (!r) r = VPUSH(w->fragment_node, int32_t, i);
            }
        }
    }
    Py_DECREF(target);
    return r;
}

enum { S_DROPPED, S_LEAF, S_DESCEND };

/* Whether page.py's _is_permalink may hold for the <a> `node`: it lies in a title, or has an
 * aria-hidden attribute, or a class attribute that may hold "headerlink" (one not read as a
 * single text here counts as may). Only these are asked, each with lxml's element. */
static int may_be_permalink(W *w, xmlNode *node) {
    int href = 0, marked = w->in_title > 0;
    for (xmlAttr *a = node->properties; a; a = a->next) {
        if (a->type != XML_ATTRIBUTE_NODE || !a->name) continue;
        if (is_name(a, "href")) {
            /* _is_permalink reads el.get("href"), the first href in no namespace: one without
             * a "#" is no permalink */
            xmlNode *c = a->children;
            if (!href && !a->ns && (!c || (!c->next && c->type == XML_TEXT_NODE && c->content &&
                                           !strchr((const char *)c->content, '#'))))
                return 0;
            href = 1;
        }
        else if (is_name(a, "aria-hidden")) marked = 1;
        else if (is_name(a, "class")) {
            xmlNode *c = a->children;
            if (!c || c->next || c->type != XML_TEXT_NODE || !c->content ||
                strstr((const char *)c->content, "headerlink"))
                marked = 1;
        }
    }
    return href && marked;
}

/* page.py's _is_permalink(element, in_title) of an <a> or <button>: 1, 0, or -1 on error. */
static int attr_of(xmlNode *node, const char *name, const char **s, Py_ssize_t *n, PyObject **owned);
static int ascii_space(unsigned char c);

/* The first element at or after `c` among its siblings; *bail at an entity reference. */
static xmlNode *first_element_from(xmlNode *c, int *bail) {
    for (; c; c = c->next) {
        if (c->type == XML_ELEMENT_NODE) return c;
        if (c->type == XML_ENTITY_REF_NODE || c->type == XML_ENTITY_NODE || c->type == XML_DOCUMENT_NODE) {
            *bail = 1;
            return NULL;
        }
    }
    return NULL;
}

/* page.py's _is_permalink(element, in_title) of the <a> or <button> `node`, read here: 1, 0,
 * 2 where Python is asked (a value or a text that is not ASCII where that matters), -1 error.
 * The anchor's text is its subtree's text as iterwalk gives it (dropped and leaf elements'
 * insides left out, their tails kept), at most 64 events of elements below it. */
static int permalink_here(W *w, xmlNode *node, int button) {
    const char *s;
    Py_ssize_t n;
    PyObject *owned;
    int r;
    if (button) {
        if (!w->in_title) return 0;
    } else {
        r = attr_of(node, "href", &s, &n, &owned);
        if (r == 2) return 0;
        if (r) return r < 0 ? -1 : 2;
        int hash = memchr(s, '#', (size_t)n) != NULL;
        Py_XDECREF(owned);
        if (!hash) return 0;
        if (!w->in_title) {
            int marked = 0;
            r = attr_of(node, "class", &s, &n, &owned);
            if (r == 1 || r < 0) return r < 0 ? -1 : 2;
            if (r == 0) {
                if (!ascii_only(s, n)) { Py_XDECREF(owned); return 2; }
                for (Py_ssize_t k = 0; k < n && !marked;) {
                    while (k < n && ascii_space((unsigned char)s[k])) k++;
                    Py_ssize_t a = k;
                    while (k < n && !ascii_space((unsigned char)s[k])) k++;
                    marked = k - a == 10 && memcmp(s + a, "headerlink", 10) == 0;
                }
                Py_XDECREF(owned);
            }
            if (!marked) {
                r = attr_of(node, "aria-hidden", &s, &n, &owned);
                if (r == 1 || r < 0) return r < 0 ? -1 : 2;
                if (r == 0) {
                    marked = stripped_lower_is(s, n, "true");
                    Py_XDECREF(owned);
                    if (marked < 0) return -1;
                }
            }
            if (!marked) return 0;
        }
    }
    Py_UCS4 text[10];
    int count = 0, size = 0, bail = 0;
#define FEED()                                                                                 \
    do {                                                                                       \
        const Py_UCS4 *t_ = (const Py_UCS4 *)w->raw.data;                                     \
        for (size_t k_ = 0; k_ < w->raw.len; k_++)                                             \
            if (!Py_UNICODE_ISSPACE(t_[k_])) {                                                 \
                if (count == 9) return 0;                                                      \
                text[count++] = t_[k_];                                                        \
            }                                                                                  \
    } while (0)
    if ((r = collect_text(w, node->children)) != 0) return r < 0 ? -1 : 2;
    FEED();
    xmlNode *cur = first_element_from(node->children, &bail);
    while (cur) {
        if (++size > 64) return 0;
        TagSlot *t;
        if ((r = tag_of(w, cur, &t)) != 0) return r < 0 ? -1 : 2;
        if (!(t->bits & (T_DROP | T_LEAF))) {
            if ((r = collect_text(w, cur->children)) != 0) return r < 0 ? -1 : 2;
            FEED();
            xmlNode *child = first_element_from(cur->children, &bail);
            if (bail) return 2;
            if (child) { cur = child; continue; }
        }
        for (;;) {
            /* the end event of cur: its tail */
            if (++size > 64) return 0;
            if ((r = collect_text(w, cur->next)) != 0) return r < 0 ? -1 : 2;
            FEED();
            xmlNode *sib = first_element_from(cur->next, &bail);
            if (bail) return 2;
            if (sib) { cur = sib; break; }
            cur = cur->parent;
            if (!cur || cur == node) { cur = NULL; break; }
            if (cur->type != XML_ELEMENT_NODE) return 2;
        }
    }
#undef FEED
    if (bail) return 2;
    int ascii = 1;
    for (int k = 0; k < count; k++) if (text[k] >= 0x80) ascii = 0;
    if (count == 9) {
        if (!ascii) return 2;
        static const char word[] = "permalink";
        for (int k = 0; k < 9; k++) if (ascii_lower((char)text[k]) != word[k]) return 0;
        return 1;
    }
    if (count > 4) return 0;
    for (int k = 0; k < count; k++) if (uni_alnum(text[k])) return 0;
    return 1;
}

static int is_permalink(W *w, xmlNode *node) {
    PyObject *el = (PyObject *)elementFactory(w->doc, node);
    if (!el) return -1;
    PyObject *r = PyObject_CallFunctionObjArgs(w->permalink, el, w->in_title > 0 ? Py_True : Py_False, NULL);
    Py_DECREF(el);
    if (!r) return -1;
    int truth = PyObject_IsTrue(r);
    Py_DECREF(r);
    return truth;
}

/* The start event of element `node`: returns S_* or -1 (error) / -2 (bail). */
static int declared_kind(const xmlNode *node);

/* The subtree below `top`, which the walk skips (a dropped element, a leaf): its meta, link
 * and script elements for the declared metadata (walk's `root`), and its nodes for the count. */
static int skipped_below(W *w, xmlNode *top) {
    xmlNode *cur = top->children;
    while (cur) {
        w->count++;
        if (cur->type == XML_ENTITY_REF_NODE || cur->type == XML_ENTITY_NODE) {
            w->declared_bail = w->uncounted = 1;
            return 0;
        }
        if (cur->type == XML_ELEMENT_NODE) {
            if (w->root && declared_kind(cur) && VPUSH(w->declared, xmlNode *, cur) < 0) return -1;
            if (cur->children) { cur = cur->children; continue; }
        } else if (cur->children) {
            w->uncounted = 1;
        }
        while (cur != top && !cur->next) cur = cur->parent;
        if (cur == top) break;
        cur = cur->next;
    }
    return 0;
}

static int start(W *w, xmlNode *node) {
    if (++w->count > w->limit && w->counting) return -3;
    TagSlot *t;
    int r = tag_of(w, node, &t);
    if (r) return r < 0 ? -1 : -2;
    if (w->root && declared_kind(node) && VPUSH(w->declared, xmlNode *, node) < 0) return -1;
    int bits = t->bits;
    int32_t i = (int32_t)w->parent.len;
    if (node != w->body && (((bits & T_A) && may_be_permalink(w, node)) || ((bits & T_BUTTON) && w->in_title > 0))) {
        r = permalink_here(w, node, !(bits & T_A));
        if (r == 2) r = is_permalink(w, node);
        if (r < 0) return -1;
        if (r) bits |= T_DROP;
    }
    if ((bits & T_DROP) && node != w->body) {
        if ((w->root || w->counting) && node->children && skipped_below(w, node) < 0) return -1;
        /* skipped subtree (a permalink anchor too); its end event adds the tail to the open
         * element */
        r = text_run(w, node->next, VAT(w->stack_i, int32_t, w->stack_i.len - 1));
        return r < 0 ? -1 : r > 0 ? -2 : S_DROPPED;
    }
    int flag = w->in_link ? w->k.f_in_link : 0;
    uint32_t role = t->hint;
    int32_t cls_start = (int32_t)w->class_hash.len, attr_start = (int32_t)w->attr_hash.len;
    int has_href = 0, has_rel = 0;
    const char *href_s = NULL;
    Py_ssize_t href_n = 0;
    PyObject *href_owner = NULL;
    uint32_t id_value = 0;
    int has_id = 0;
    for (xmlAttr *a = node->properties; a; a = a->next) {
        if (a->type != XML_ATTRIBUTE_NODE || !a->name) continue;
        const char *s;
        Py_ssize_t n;
        PyObject *owned;
        r = attr_bytes(w, node, a, &s, &n, &owned);
        if (r) { Py_XDECREF(href_owner); return r < 0 ? -1 : -2; }
        long fb = 0;
        unsigned long rb = 0;
        int hf = 0;
        uint32_t hr = 0, hh = 0;
        int kind = attr_kind(a);
        if (kind == A_CLASS && (r = class_hints(&w->hint_buf, s, n, &w->class_hash, &hf, &hr)) != 0) {
            if (r < 0) goto fail_attr;
            flag |= hf;
            role |= hr;
        } else if (kind == A_ID && (r = id_hints(&w->hint_buf, s, n, &hh, &hf, &hr)) != 0) {
            if (r < 0) goto fail_attr;
            if (hh) { id_value = hh; has_id = 1; }
            flag |= hf;
            role |= hr;
        } else if (kind == A_CLASS) {
            PyObject *info = call_info(w->class_info, s, n, &fb, &rb);
            if (!info) goto fail_attr;
            PyObject *hashes = PyTuple_GET_ITEM(info, 0);
            Py_ssize_t m = PyTuple_Check(hashes) ? PyTuple_GET_SIZE(hashes) : -1;
            if (m < 0 || vec_reserve(&w->class_hash, (size_t)m) < 0) {
                if (m < 0) PyErr_SetString(PyExc_TypeError, "class info: expected a tuple of hashes");
                Py_DECREF(info);
                goto fail_attr;
            }
            for (Py_ssize_t k = 0; k < m; k++)
                VAT(w->class_hash, uint32_t, w->class_hash.len++) = (uint32_t)PyLong_AsUnsignedLong(PyTuple_GET_ITEM(hashes, k));
            Py_DECREF(info);
            if (PyErr_Occurred()) goto fail_attr;
            flag |= (int)fb;
            role |= (uint32_t)rb;
        } else if (kind == A_ID) {
            PyObject *info = call_info(w->id_info, s, n, &fb, &rb);
            if (!info) goto fail_attr;
            unsigned long h = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(info, 0));
            Py_DECREF(info);
            if (PyErr_Occurred()) goto fail_attr;
            if (h) { id_value = (uint32_t)h; has_id = 1; }
            flag |= (int)fb;
            role |= (uint32_t)rb;
        } else {
            uint32_t c = crc_begin();
            if (a->ns && a->ns->href) {
                c = crc_feed(c, (const unsigned char *)"{", 1);
                c = crc_feed(c, a->ns->href, strlen((const char *)a->ns->href));
                c = crc_feed(c, (const unsigned char *)"}", 1);
            }
            c = crc_feed(c, a->name, strlen((const char *)a->name));
            c = crc_feed(c, (const unsigned char *)"=", 1);
            c = crc_feed(c, (const unsigned char *)s, (size_t)n);
            if (VPUSH(w->attr_hash, uint32_t, crc_end(c)) < 0) goto fail_attr;
            if (kind == A_HREF) {
                has_href = 1;
                Py_XDECREF(href_owner);
                href_s = s;
                href_n = n;
                href_owner = owned;
                owned = NULL;
            } else if (kind == A_REL) {
                has_rel = 1;
            } else if (kind == A_ROLE && (r = stripped_lower_is(s, n, "navigation")) != 0) {
                if (r < 0) goto fail_attr;
                flag |= w->k.f_nav_hint | w->k.f_nav_word;
                role |= w->k.hint_nav;
            } else if (kind == A_HIDDEN) {
                role |= w->k.hint_hidden;
                flag |= w->k.f_hidden;
            } else if (kind == A_ARIA_HIDDEN) {
                if ((r = stripped_lower_is(s, n, "true")) < 0) goto fail_attr;
                if (r) {
                    role |= w->k.hint_hidden;
                    flag |= w->k.f_hidden;
                }
            } else if (kind == A_STYLE) {
                int truth = hidden_style_ascii(s, n);
                if (truth < 0) {
                    PyObject *v = PyUnicode_DecodeUTF8(s, n, NULL);
                    PyObject *m = v ? PyObject_CallOneArg(w->hidden_style, v) : NULL;
                    Py_XDECREF(v);
                    if (!m) goto fail_attr;
                    truth = PyObject_IsTrue(m);
                    Py_DECREF(m);
                    if (truth < 0) goto fail_attr;
                }
                if (truth) {
                    role |= w->k.hint_hidden;
                    flag |= w->k.f_hidden;
                }
            }
        }
        Py_XDECREF(owned);
        continue;
    fail_attr:
        Py_XDECREF(owned);
        Py_XDECREF(href_owner);
        return -1;
    }
    if ((bits & T_A) && has_href) {
        size_t links_before = w->link_node.len;
        flag |= w->k.f_link;
        r = resolve_href(w, href_s, href_n, i);
        if (r < 0) { Py_XDECREF(href_owner); return -1; }
        /* an http(s) link with a rel: node_extras reads its rel flags from the element */
        if (has_rel && w->link_node.len > links_before &&
            (VPUSH(w->extra_node, int32_t, i) < 0 || VPUSH(w->extra_ptr, xmlNode *, node) < 0)) {
            Py_XDECREF(href_owner);
            return -1;
        }
    }
    Py_XDECREF(href_owner);
    if (bits & T_NAV) flag |= w->k.f_nav_all;
    if (bits & T_EXTRA) {
        if (VPUSH(w->extra_node, int32_t, i) < 0 || VPUSH(w->extra_ptr, xmlNode *, node) < 0) return -1;
    }
    w->opened_since = 1;
    if (bits & T_BLOCK) w->line_no++;
    int32_t parent = w->stack_i.len ? VAT(w->stack_i, int32_t, w->stack_i.len - 1) : -1;
    if (push_node(w, parent, t->tid, flag, role, cls_start, attr_start) < 0) return -1;
    if (has_id) VAT(w->id_hash, uint32_t, i) = id_value;
    if (VPUSH(w->stack_i, int32_t, i) < 0 || VPUSH(w->stack_bits, int, bits) < 0) return -1;
    if (bits & T_A) w->in_link++;
    if (bits & T_TITLE) w->in_title++;
    if (bits & T_LEAF) {
        if ((w->root || w->counting) && node->children && skipped_below(w, node) < 0) return -1;
        return S_LEAF;
    }
    if ((bits & T_PRE) && w->k.browser) {
        if (!w->pre_depth) {
            w->pre_first_text = w->n_texts;
            w->pending.len = 0;
        }
        w->pre_depth++;
    }
    if (bits & T_RAISED) w->raise_pending = 1;
    r = text_run(w, node->children, i);
    return r < 0 ? -1 : r > 0 ? -2 : S_DESCEND;
}

/* The end event of the open element `node` (not a dropped one). */
static int finish(W *w, xmlNode *node) {
    w->stack_i.len--;
    w->stack_bits.len--;
    int32_t i = VAT(w->stack_i, int32_t, w->stack_i.len);
    int bits = VAT(w->stack_bits, int, w->stack_bits.len);
    VAT(w->end, int32_t, i) = (int32_t)w->parent.len;
    w->closed_since = 1;
    if (bits & T_A) w->in_link--;
    if (bits & T_TITLE) w->in_title--;
    if (bits & T_RAISED) w->raise_pending = 0;
    if ((bits & T_PRE) && w->k.browser && !(bits & T_LEAF)) {
        w->pre_depth--;
        if (!w->pre_depth) {
            if (w->n_texts > w->pre_first_text) {
                /* texts[-1].rstrip(): the last text is the end of the text buffer */
                int32_t *len = &VAT(w->text_len, int32_t, w->last_text);
                const Py_UCS4 *t = (const Py_UCS4 *)w->text.data;
                while (*len > 0 && Py_UNICODE_ISSPACE(t[w->text.len - 1])) {
                    (*len)--;
                    w->text.len--;
                }
            }
            w->pending.len = 0;
            w->space_pending = 1;
        }
    }
    if (bits & T_BLOCK) w->line_no++;
    if (node != w->body) {
        int r = text_run(w, node->next, VAT(w->stack_i, int32_t, w->stack_i.len - 1));
        if (r) return r < 0 ? -1 : -2;
    }
    return 0;
}

/* The first node at or after `c` that iterwalk yields as an element; sets bail for node
 * kinds read differently here (entity references). */
static xmlNode *next_element(W *w, xmlNode *c) {
    for (; c; c = c->next) {
        if (c->type == XML_ELEMENT_NODE) return c;
        if (c->type == XML_ENTITY_REF_NODE || c->type == XML_ENTITY_NODE || c->type == XML_DOCUMENT_NODE) {
            w->bail = 1;
            return NULL;
        }
        /* every child of an element the walk descends into passes here or through start */
        w->count++;
        if (c->children) w->uncounted = 1;
    }
    return NULL;
}

static int run(W *w) {
    xmlNode *node = w->body;
    for (;;) {
        int r = start(w, node);
        if (r < 0) return r;
        xmlNode *child = r == S_DESCEND ? next_element(w, node->children) : NULL;
        if (w->bail) return -2;
        if (child) { node = child; continue; }
        if (r != S_DROPPED && (r = finish(w, node)) < 0) return r;
        for (;;) {
            if (node == w->body) return 0;
            xmlNode *sib = next_element(w, node->next);
            if (w->bail) return -2;
            if (sib) { node = sib; break; }
            node = node->parent;
            if (!node || node->type != XML_ELEMENT_NODE) return -2;
            if ((r = finish(w, node)) < 0) return r;
        }
    }
}

/* ------------------------------------------------------------------ node extras (meta.py) */

/* What meta.node_extras reads of an image or of a link's rel, read here where the walk can
 * (ASCII values, hrefs url_resolve answers); anything else is left to node_extras with lxml's
 * element. The items: (node, src, alt) of an <img> or <picture> (src: image_url's answer, None
 * for a pixel or no URL; alt: the alt attribute as read, None where absent), (node, rel bits)
 * of an <a>, (node, element) for Python. */

/* meta.py's REL_NOFOLLOW, REL_UGC, REL_SPONSORED (tests/transforms/test_flatten.py checks them). */
enum { REL_NOFOLLOW = 1, REL_UGC = 2, REL_SPONSORED = 4 };

static int ascii_space(unsigned char c) { return c < 0x80 && Py_UNICODE_ISSPACE((Py_UCS4)c); }

/* The first attribute `name` of `node` in no namespace, as lxml's get reads it: 0 with its
 * bytes, 2 absent, 1 not read here, -1 error. */
static int attr_of(xmlNode *node, const char *name, const char **s, Py_ssize_t *n, PyObject **owned) {
    *owned = NULL;
    for (xmlAttr *a = node->properties; a; a = a->next)
        if (a->type == XML_ATTRIBUTE_NODE && a->name && !a->ns && strcmp((const char *)a->name, name) == 0)
            return attr_bytes(NULL, node, a, s, n, owned);
    return 2;
}

/* Whether s.strip() is not empty: 1, 0, or -1 where only Python can tell (spaces and
 * characters that are not ASCII, which may be spaces too). */
static int not_blank(const char *s, Py_ssize_t n) {
    int other = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        unsigned char c = (unsigned char)s[k];
        if (c >= 0x80) other = 1;
        else if (!ascii_space(c)) return 1;
    }
    return other ? -1 : 0;
}

/* meta._at_most_one_pixel of a value: 1, 0, or -1 for Python (not ASCII, or past int()'s
 * digit limit). */
static int one_pixel(const char *s, Py_ssize_t n) {
    if (!ascii_only(s, n)) return -1;
    Py_ssize_t a = 0, e = n;
    while (a < e && ascii_space((unsigned char)s[a])) a++;
    while (e > a && ascii_space((unsigned char)s[e - 1])) e--;
    if (e - a >= 2 && ascii_lower(s[e - 2]) == 'p' && ascii_lower(s[e - 1]) == 'x') e -= 2;
    if (e == a) return 0;
    if (e - a > 4000) return -1;
    for (Py_ssize_t k = a; k < e; k++) if (s[k] < '0' || s[k] > '9') return 0;
    while (a < e && s[a] == '0') a++;
    return e == a || (e - a == 1 && s[a] == '1');
}

/* resolve_link(base, s) as a new reference in *out: 0, 1 for Python, -1 error. */
static int resolve_value(W *w, const char *s, Py_ssize_t n, PyObject **out) {
    int python;
    *out = resolved_object(&w->url, &w->parts, s, (size_t)n, &python);
    if (*out) return 0;
    return python ? 1 : -1;
}

/* meta.image_url(img, base) as a new reference in *out: 0, 1 for Python, -1 error. */
static int image_url_of(W *w, xmlNode *img, PyObject **out) {
    static const char *const lazy[] = {"src", "data-src", "data-lazy-src", "data-original"};
    const char *s;
    Py_ssize_t n;
    PyObject *owned;
    *out = NULL;
    for (int k = 0; k < 4; k++) {
        int r = attr_of(img, lazy[k], &s, &n, &owned);
        if (r == 2) continue;
        if (r) return r;
        int blank = n ? not_blank(s, n) : 0;
        if (blank == 1) r = resolve_value(w, s, n, out);
        Py_XDECREF(owned);
        if (blank < 0) return 1;
        if (blank == 0) continue;
        if (r) return r;
        if (*out != Py_None) return 0;
        Py_CLEAR(*out);
    }
    int r = attr_of(img, "srcset", &s, &n, &owned);
    if (r == 2) { *out = Py_NewRef(Py_None); return 0; }
    if (r) return r;
    int blank = n ? not_blank(s, n) : 0;
    if (blank == 0) { Py_XDECREF(owned); *out = Py_NewRef(Py_None); return 0; }
    if (blank < 0 || !ascii_only(s, n)) { Py_XDECREF(owned); return 1; }
    /* srcset.strip().split(",")[0].split()[0]: the first word before the first comma */
    Py_ssize_t a = 0, e = n;
    while (a < e && ascii_space((unsigned char)s[a])) a++;
    const char *comma = memchr(s + a, ',', (size_t)(e - a));
    if (comma) e = comma - s;
    while (a < e && ascii_space((unsigned char)s[a])) a++;
    Py_ssize_t b = a;
    while (b < e && !ascii_space((unsigned char)s[b])) b++;
    r = b > a ? resolve_value(w, s + a, b - a, out) : 1;
    Py_XDECREF(owned);
    return r;
}

/* The first <img> below `root` in document order (iterdescendants("img")); *bail where the
 * tree is not read here as lxml reads it. */
static xmlNode *first_img(xmlNode *root, int *bail) {
    xmlNode *cur = root->children;
    while (cur) {
        if (cur->type == XML_ENTITY_REF_NODE || cur->type == XML_ENTITY_NODE) { *bail = 1; return NULL; }
        if (cur->type == XML_ELEMENT_NODE) {
            if (cur->name && strcmp((const char *)cur->name, "img") == 0) {
                if (cur->ns) *bail = 1;
                return cur->ns ? NULL : cur;
            }
            if (cur->children) { cur = cur->children; continue; }
        }
        while (cur != root && !cur->next) cur = cur->parent;
        if (cur == root) return NULL;
        cur = cur->next;
    }
    return NULL;
}

/* The item of an <img> or <picture> `node`: 0 (*item NULL: a picture without an image), 1 for
 * Python, -1 error. */
static int image_item(W *w, xmlNode *node, int32_t i, PyObject **item) {
    *item = NULL;
    xmlNode *img = node;
    if (strcmp((const char *)node->name, "img") != 0) {
        int bail = 0;
        img = first_img(node, &bail);
        if (bail) return 1;
        if (!img) return 0;
    }
    const char *s;
    Py_ssize_t n;
    PyObject *owned;
    int pixel = 0;
    static const char *const sizes[] = {"width", "height"};
    for (int k = 0; k < 2 && !pixel; k++) {
        int r = attr_of(img, sizes[k], &s, &n, &owned);
        if (r == 2) continue;
        if (r) return r;
        pixel = n ? one_pixel(s, n) : 0;
        Py_XDECREF(owned);
        if (pixel < 0) return 1;
    }
    PyObject *src = NULL, *alt = NULL;
    if (pixel) {
        src = Py_NewRef(Py_None);
    } else {
        int r = image_url_of(w, img, &src);
        if (r) return r;
    }
    int r = attr_of(img, "alt", &s, &n, &owned);
    if (r == 2) {
        alt = Py_NewRef(Py_None);
        r = 0;
    } else if (r == 0) {
        alt = owned ? owned : PyUnicode_DecodeUTF8(s, n, NULL);
        if (!alt) r = -1;
    }
    if (r) { Py_DECREF(src); return r; }
    *item = Py_BuildValue("(iNN)", (int)i, src, alt);
    return *item ? 0 : -1;
}

/* The item of an <a>: (node, meta.rel_bits(rel)); 1 for Python where rel is not ASCII. */
static int rel_item(xmlNode *node, int32_t i, PyObject **item) {
    const char *s;
    Py_ssize_t n;
    PyObject *owned;
    *item = NULL;
    int r = attr_of(node, "rel", &s, &n, &owned), bits = 0;
    if (r == 1 || r < 0) return r;
    if (r == 0) {
        if (!ascii_only(s, n)) { Py_XDECREF(owned); return 1; }
        for (Py_ssize_t k = 0; k < n;) {
            while (k < n && ascii_space((unsigned char)s[k])) k++;
            Py_ssize_t a = k;
            while (k < n && !ascii_space((unsigned char)s[k])) k++;
            Py_ssize_t len = k - a;
            char low[10];
            if (!len || len > 9) continue;
            for (Py_ssize_t j = 0; j < len; j++) low[j] = (char)ascii_lower(s[a + j]);
            low[len] = 0;
            bits |= strcmp(low, "nofollow") == 0 ? REL_NOFOLLOW : strcmp(low, "ugc") == 0 ? REL_UGC
                    : strcmp(low, "sponsored") == 0 ? REL_SPONSORED : 0;
        }
        Py_XDECREF(owned);
    }
    *item = Py_BuildValue("(ii)", (int)i, bits);
    return *item ? 0 : -1;
}

/* The item of a <pre>: (node, the non-empty class attributes meta.code_language reads, in its
 * order: the first <code> child's, the <pre>'s, then up to three ancestors'), so that it asks
 * _class_language of strings and needs no element; 1 for Python where the tree is not read
 * here as lxml reads it, -1 error. */
static int pre_item(xmlNode *node, int32_t i, PyObject **item) {
    enum { CODE_ANCESTORS = 3 };           /* meta._CODE_ANCESTORS */
    xmlNode *order[2 + CODE_ANCESTORS];
    int count = 0;
    *item = NULL;
    for (xmlNode *c = node->children; c; c = c->next) {
        if (c->type == XML_ENTITY_REF_NODE || c->type == XML_ENTITY_NODE || c->type == XML_DOCUMENT_NODE) return 1;
        if (c->type == XML_ELEMENT_NODE && c->name && strcmp((const char *)c->name, "code") == 0) {
            if (c->ns) return 1;
            order[count++] = c;
            break;
        }
    }
    order[count++] = node;
    xmlNode *up = node->parent;
    for (int d = 0; d < CODE_ANCESTORS && up; d++, up = up->parent) {
        if (up->type == XML_DOCUMENT_NODE || up->type == XML_HTML_DOCUMENT_NODE) break;
        if (up->type != XML_ELEMENT_NODE || up->ns) return 1;
        order[count++] = up;
    }
    PyObject *classes = PyList_New(0);
    if (!classes) return -1;
    for (int k = 0; k < count; k++) {
        const char *s;
        Py_ssize_t n;
        PyObject *owned;
        int r = attr_of(order[k], "class", &s, &n, &owned);
        if (r == 2) continue;
        if (r) { Py_DECREF(classes); return r; }
        if (!n) { Py_XDECREF(owned); continue; }
        PyObject *value = owned ? owned : PyUnicode_DecodeUTF8(s, n, NULL);
        if (!value || PyList_Append(classes, value) < 0) {
            Py_XDECREF(value);
            Py_DECREF(classes);
            return -1;
        }
        Py_DECREF(value);
    }
    PyObject *values = PyList_AsTuple(classes);
    Py_DECREF(classes);
    if (!values) return -1;
    *item = Py_BuildValue("(iN)", (int)i, values);
    return *item ? 0 : -1;
}

/* ------------------------------------------------------------------ results */

static PyObject *as_bytes(const Vec *v, size_t item) {
    return PyByteArray_FromStringAndSize(v->data ? (const char *)v->data : "", (Py_ssize_t)(v->len * item));
}

static PyObject *declared_tuple(struct LxmlDocument *doc, xmlNode *top, xmlNode *skip, const Vec *instead);

static PyObject *results(W *w, struct LxmlDocument *doc) {
    size_t n = w->parent.len;
    if (VPUSH(w->class_ptr, int32_t, (int32_t)w->class_hash.len) < 0) return NULL;
    if (VPUSH(w->attr_ptr, int32_t, (int32_t)w->attr_hash.len) < 0) return NULL;
    /* text pointers from the text lengths: </pre> trims its last text after later elements exist */
    Vec tp = {0, 0, 0, sizeof(int32_t)}, cc = {0, 0, 0, sizeof(int32_t)};
    PyObject *out = NULL;
    if (vec_reserve(&tp, n + 1) < 0 || vec_reserve(&cc, n + 1) < 0) goto done;
    {
        int32_t t_at = 0;
        for (size_t i = 0; i < n; i++) {
            VAT(tp, int32_t, i) = t_at;
            t_at += VAT(w->text_len, int32_t, i);
            VAT(cc, int32_t, i) = 0;
        }
        VAT(tp, int32_t, n) = t_at;
        for (size_t i = 1; i < n; i++) VAT(cc, int32_t, VAT(w->parent, int32_t, i))++;
        tp.len = n + 1;
        cc.len = n;
    }
    PyObject *extras = PyList_New(0);
    if (!extras) goto done;
    for (size_t k = 0; k < w->extra_node.len; k++) {
        xmlNode *node = VAT(w->extra_ptr, xmlNode *, k);
        int32_t i = VAT(w->extra_node, int32_t, k);
        PyObject *item = NULL;
        int r = 1;
        if (!node->ns && node->name) {
            const char *name = (const char *)node->name;
            if (strcmp(name, "img") == 0 || strcmp(name, "picture") == 0) r = image_item(w, node, i, &item);
            else if (strcmp(name, "a") == 0) r = rel_item(node, i, &item);
            else if (strcmp(name, "pre") == 0) r = pre_item(node, i, &item);
        }
        if (r == 1) {
            PyErr_Clear();
            PyObject *el = (PyObject *)elementFactory(doc, node);
            item = el ? Py_BuildValue("(iN)", (int)i, el) : NULL;
            r = item ? 0 : -1;
        }
        if (r < 0 || (item && PyList_Append(extras, item) < 0)) {
            Py_XDECREF(item);
            Py_DECREF(extras);
            goto done;
        }
        Py_XDECREF(item);
    }
    PyObject *text = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, w->text.data ? w->text.data : (void *)"\0\0\0",
                                               (Py_ssize_t)w->text.len);
    if (!text) { Py_DECREF(extras); goto done; }
    PyObject *declared = !w->root || w->declared_bail ? Py_NewRef(Py_None)
                         : declared_tuple(doc, w->root, w->body, &w->declared);
    if (!declared) { Py_DECREF(extras); Py_DECREF(text); goto done; }
    out = Py_BuildValue("(NNNNNNNNNNNNNNNNNNONNON)",
                        as_bytes(&w->parent, 4), as_bytes(&w->depth, 4), as_bytes(&w->tag, 4),
                        as_bytes(&w->end, 4), as_bytes(&cc, 4), as_bytes(&w->flags, 2),
                        as_bytes(&w->hints, 4), as_bytes(&w->line, 4), as_bytes(&w->id_hash, 4),
                        as_bytes(&w->class_ptr, 4), as_bytes(&w->class_hash, 4), as_bytes(&w->attr_ptr, 4),
                        as_bytes(&w->attr_hash, 4), as_bytes(&tp, 4), text, as_bytes(&w->words, 4),
                        as_bytes(&w->chars, 4), as_bytes(&w->link_node, 4), w->links, extras,
                        as_bytes(&w->fragment_node, 4), w->fragments, declared);
done:
    free(tp.data);
    free(cc.data);
    return out;
}

/* walk(body, base_url, base_parts, tag_props, class_info, id_info, resolve_link, count_words,
 *      hidden_style, permalink, browser, consts[, root[, limit]]); base_parts: urls._base_parts(base_url);
 * with the document's root, the result's last item is meta_elements(root), gathered as the
 * body is read (None without a root, or where meta_elements gives None). With a limit (an int),
 * the walk counts the body's nodes as count_nodes does, those of the subtrees it skips
 * included, and gives False, unread, where the count passes the limit or cannot be made (an
 * entity reference in a skipped subtree): a page within it needs no count_nodes pass of its
 * own, and one past it is left before it is read to the end. */
static PyObject *walk(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *body_o, *parts, *root_o = Py_None, *limit_o = Py_None;
    W w;
    memset(&w, 0, sizeof(w));
    if (!PyArg_ParseTuple(args, "OUOOOOOOOOp(iiiiiiiiikk)|OO", &body_o, &w.base_url, &parts, &w.tag_props, &w.class_info,
                          &w.id_info, &w.resolve, &w.count_words, &w.hidden_style, &w.permalink, &w.k.browser,
                          &w.k.f_link, &w.k.f_in_link, &w.k.f_nav_hint, &w.k.f_nav_word, &w.k.f_nav_all,
                          &w.k.f_space_before, &w.k.f_pre, &w.k.f_raised, &w.k.f_hidden, &w.k.hint_nav,
                          &w.k.hint_hidden, &root_o, &limit_o))
        return NULL;
    if (limit_o != Py_None) {
        w.limit = PyLong_AsLongLong(limit_o);
        if (w.limit == -1 && PyErr_Occurred()) return NULL;
        w.counting = 1;
    }
    if (base_parts_of(parts, &w.parts) < 0) return NULL;
    if (!element_type || !PyObject_TypeCheck(body_o, element_type)) Py_RETURN_NONE;
    struct LxmlElement *body = (struct LxmlElement *)body_o;
    if (!body->_c_node || body->_c_node->type != XML_ELEMENT_NODE) Py_RETURN_NONE;
    Vec i32 = {0, 0, 0, sizeof(int32_t)};
    w.parent = w.depth = w.tag = w.end = w.line = w.class_ptr = w.attr_ptr = w.text_len = w.words = w.chars = i32;
    w.link_node = w.extra_node = w.stack_i = w.fragment_node = i32;
    w.url.out = w.url.in = w.url.tmp = w.url.tmp2 = (Vec){0, 0, 0, 1};
    w.declared = (Vec){0, 0, 0, sizeof(xmlNode *)};
    w.flags = (Vec){0, 0, 0, sizeof(uint16_t)};
    w.hints = w.id_hash = w.class_hash = w.attr_hash = (Vec){0, 0, 0, sizeof(uint32_t)};
    w.extra_ptr = (Vec){0, 0, 0, sizeof(xmlNode *)};
    w.stack_bits = (Vec){0, 0, 0, sizeof(int)};
    w.text = w.raw = w.pending = w.scratch = (Vec){0, 0, 0, sizeof(Py_UCS4)};
    w.hint_buf = (Vec){0, 0, 0, 1};
    w.body = body->_c_node;
    w.doc = body->_doc;
    if (root_o != Py_None) {
        /* the root of the body's own document */
        struct LxmlElement *root = (struct LxmlElement *)root_o;
        if (!PyObject_TypeCheck(root_o, element_type) || !root->_c_node || root->_doc != body->_doc ||
            root->_c_node->type != XML_ELEMENT_NODE) {
            PyErr_SetString(PyExc_ValueError, "walk: root must be an element of the body's document");
            return NULL;
        }
        xmlNode *up = w.body;
        while (up && up != root->_c_node) up = up->parent;
        if (!up) {
            PyErr_SetString(PyExc_ValueError, "walk: the body must lie under the root");
            return NULL;
        }
        w.root = root->_c_node;
    }
    w.links = PyList_New(0);
    w.fragments = PyList_New(0);
    w.href_cache = PyDict_New();
    PyObject *out = NULL;
    if (!w.links || !w.fragments || !w.href_cache) goto done;
    int r = run(&w);
    if (r == 0 && w.counting && (w.count > w.limit || w.uncounted)) r = -3;
    if (r == -2) {
        PyErr_Clear();
        out = Py_None;
        Py_INCREF(out);
    } else if (r == -3) {
        out = Py_NewRef(Py_False);
    } else if (r == 0) {
        out = results(&w, body->_doc);
    }
done:
    w_free(&w);
    return out;
}

static int ranges_of(PyObject *seq, Py_UCS4 **out, Py_ssize_t *n) {
    PyObject *fast = PySequence_Fast(seq, "expected a sequence of (lo, hi) pairs");
    if (!fast) return -1;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(fast);
    Py_UCS4 *r = PyMem_RawMalloc((size_t)(2 * m + 1) * sizeof(Py_UCS4));
    if (!r) { Py_DECREF(fast); PyErr_NoMemory(); return -1; }
    for (Py_ssize_t k = 0; k < m; k++) {
        unsigned long lo, hi;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, k), "kk", &lo, &hi)) goto bad;
        if (lo > hi || hi > 0x10FFFF || (k && lo <= r[2 * k - 1])) {
            PyErr_SetString(PyExc_ValueError, "ranges must be sorted, disjoint code point pairs");
            goto bad;
        }
        r[2 * k] = (Py_UCS4)lo;
        r[2 * k + 1] = (Py_UCS4)hi;
    }
    Py_DECREF(fast);
    PyMem_RawFree(*out);
    *out = r;
    *n = m;
    return 0;
bad:
    Py_DECREF(fast);
    PyMem_RawFree(r);
    return -1;
}

static PyObject *set_token_ranges(PyObject *self, PyObject *args) {
    PyObject *cjk, *marks;
    (void)self;
    if (!PyArg_ParseTuple(args, "OO", &cjk, &marks)) return NULL;
    if (ranges_of(cjk, &cjk_ranges, &n_cjk) < 0 || ranges_of(marks, &mark_ranges, &n_marks) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *count_words_c(PyObject *self, PyObject *arg) {
    (void)self;
    if (!PyUnicode_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "count_words: expected a str");
        return NULL;
    }
    if (!cjk_ranges || !mark_ranges) {
        PyErr_SetString(PyExc_RuntimeError, "count_words: set_token_ranges was not called");
        return NULL;
    }
    Py_UCS4 *s = PyUnicode_AsUCS4Copy(arg);
    if (!s) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(arg);
    Py_ssize_t count;
    if (is_ascii(s, (size_t)n)) {
        count = 0;
        int in = 0;
        for (Py_ssize_t k = 0; k < n; k++) {
            int a = ascii_alnum(s[k]);
            if (a && !in) count++;
            in = a;
        }
    } else {
        count = count_tokens(s, (size_t)n);
    }
    PyMem_Free(s);
    return PyLong_FromSsize_t(count);
}

/* set_hint_tables(exact, prefixes, hide_parts, hide_qualifiers, sr_parts, sr_runs, consts):
 * page.py's hint words for class_hints and id_hints; consts are (F_NAV_EXACT, F_NAV_HINT,
 * F_NAV_WORD, F_COMMENT_HINT, F_VOLATILE_ID, the ad, nav and hidden hint bits,
 * _MAX_HINT_CLASSES). Until it is called, class and id values are called back to Python. */
static PyObject *set_hint_tables(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *exact, *prefix, *hp, *hq, *sp, *sr;
    int fe, fh, fw, fc, fv, mc;
    unsigned long ad, nav, hidden;
    if (!PyArg_ParseTuple(args, "OOOOOO(iiiiikkki)", &exact, &prefix, &hp, &hq, &sp, &sr, &fe, &fh, &fw, &fc, &fv,
                          &ad, &nav, &hidden, &mc))
        return NULL;
    hints_ready = 0;
    answers_clear(&class_answers);
    answers_clear(&id_answers);
    if (words_of_py(exact, &hint_exact) < 0 || words_of_py(prefix, &hint_prefix) < 0 ||
        words_of_py(hp, &hide_parts) < 0 || words_of_py(hq, &hide_qualifiers) < 0 ||
        words_of_py(sp, &sr_parts) < 0 || words_of_py(sr, &sr_runs) < 0)
        return NULL;
    hk.f_nav_exact = fe; hk.f_nav_hint = fh; hk.f_nav_word = fw; hk.f_comment = fc; hk.f_volatile = fv;
    hk.ad = (uint32_t)ad; hk.nav = (uint32_t)nav; hk.hidden = (uint32_t)hidden; hk.max_classes = mc;
    hints_ready = 1;
    Py_RETURN_NONE;
}

/* class_info(value) and id_info(value): page.py's _class_info and _id_info as the walk answers
 * them here, or None where the walk calls Python (for tests). */
static PyObject *class_info_c(PyObject *self, PyObject *arg) {
    (void)self;
    Py_ssize_t n;
    const char *s = PyUnicode_Check(arg) ? PyUnicode_AsUTF8AndSize(arg, &n) : NULL;
    if (!s) { if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "class_info: expected a str"); return NULL; }
    Vec scratch = {0, 0, 0, 1}, hashes = {0, 0, 0, sizeof(uint32_t)};
    int f = 0;
    uint32_t roles = 0;
    PyObject *out = NULL;
    int r = class_hints(&scratch, s, n, &hashes, &f, &roles);
    if (r == 0) { out = Py_None; Py_INCREF(out); }
    else if (r > 0) {
        PyObject *t = PyTuple_New((Py_ssize_t)hashes.len);
        for (size_t k = 0; t && k < hashes.len; k++) {
            PyObject *h = PyLong_FromUnsignedLong(VAT(hashes, uint32_t, k));
            if (!h) { Py_CLEAR(t); break; }
            PyTuple_SET_ITEM(t, (Py_ssize_t)k, h);
        }
        if (t) out = Py_BuildValue("(Nik)", t, f, (unsigned long)roles);
    }
    free(scratch.data);
    free(hashes.data);
    return out;
}

static PyObject *id_info_c(PyObject *self, PyObject *arg) {
    (void)self;
    Py_ssize_t n;
    const char *s = PyUnicode_Check(arg) ? PyUnicode_AsUTF8AndSize(arg, &n) : NULL;
    if (!s) { if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "id_info: expected a str"); return NULL; }
    Vec scratch = {0, 0, 0, 1};
    int f = 0;
    uint32_t roles = 0, h = 0;
    int r = id_hints(&scratch, s, n, &h, &f, &roles);
    free(scratch.data);
    if (r < 0) return NULL;
    if (r == 0) Py_RETURN_NONE;
    if (!h) return Py_BuildValue("(iii)", 0, 0, 0);
    return Py_BuildValue("(kik)", (unsigned long)h, f, (unsigned long)roles);
}

/* count_nodes(element, limit): the nodes under libxml2's tree of `element`, itself included,
 * of every kind but attributes, counted until the count passes `limit`; -1 where an entity
 * reference sits in it (its children are the entity's, not the tree's). Every node XPath's
 * descendant-or-self::node() selects is one of these, so a count at most `limit` says that
 * page.py's exact XPath count is too. */
static PyObject *count_nodes(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *el_o;
    long long limit;
    if (!PyArg_ParseTuple(args, "OL", &el_o, &limit)) return NULL;
    if (!element_type || !PyObject_TypeCheck(el_o, element_type) || !((struct LxmlElement *)el_o)->_c_node)
        return PyLong_FromLong(-1);
    xmlNode *root = ((struct LxmlElement *)el_o)->_c_node, *cur = root->children;
    long long count = 1;
    while (cur && count <= limit) {
        if (cur->type == XML_ENTITY_REF_NODE) return PyLong_FromLong(-1);
        count++;
        if (cur->children) { cur = cur->children; continue; }
        while (cur && cur != root && !cur->next) cur = cur->parent;
        if (!cur || cur == root) break;
        cur = cur->next;
    }
    return PyLong_FromLongLong(count);
}

/* utf8_extent(data): how Python's incremental UTF-8 decoder (strict, not final) reads the bytes
 * `data`: None where it raises, else (code points, bytes) of what it decodes, which is all of
 * `data` but an incomplete character at its end (a valid start of one, held back for more
 * input). The bytes are not decoded: charset.html_for_parse gives them to lxml as they are.
 * Strict is Python's reading: no surrogates, no overlong forms, nothing past U+10FFFF; the
 * second byte of E0, ED, F0 and F4 is checked as soon as it is there, as Python does, but for
 * the first two bytes of a surrogate at the very end, which Python holds back (unicodeobject.c
 * unicode_decode_utf8: "Truncated surrogate code"). */
static PyObject *utf8_extent(PyObject *self, PyObject *arg) {
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *s = (const unsigned char *)view.buf;
    size_t n = (size_t)view.len, k = 0, end = n, cont = 0;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    while (k < n) {
        unsigned char c = s[k];
        if (c < 0x80) {
            k++;
            /* ASCII runs 8 bytes at a time */
            while (k + 8 <= n) {
                uint64_t x;
                memcpy(&x, s + k, 8);
                if (x & 0x8080808080808080ULL) break;
                k += 8;
            }
            continue;
        }
        size_t extra;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) extra = 1;
        else if (c >= 0xE0 && c <= 0xEF) { extra = 2; if (c == 0xE0) lo = 0xA0; else if (c == 0xED) hi = 0x9F; }
        else if (c >= 0xF0 && c <= 0xF4) { extra = 3; if (c == 0xF0) lo = 0x90; else if (c == 0xF4) hi = 0x8F; }
        else { bad = 1; break; }
        if (k + 1 >= n) { end = k; break; }
        if (s[k + 1] < lo || s[k + 1] > hi) {
            /* A surrogate's first two bytes end the data: Python holds them back too. */
            if (c == 0xED && k + 2 == n && s[k + 1] >= 0xA0 && s[k + 1] <= 0xBF) { end = k; break; }
            bad = 1;
            break;
        }
        size_t j = 2;
        for (; j <= extra && k + j < n; j++)
            if ((s[k + j] & 0xC0) != 0x80) { bad = 1; break; }
        if (bad) break;
        if (j <= extra) { end = k; break; }     /* the data ends inside this character */
        cont += extra;
        k += extra + 1;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (bad) Py_RETURN_NONE;
    return Py_BuildValue("(nn)", (Py_ssize_t)(end - cont), (Py_ssize_t)end);
}

/* ------------------------------------------------------------------ the declared metadata (meta.py) */

/* The value of node's attribute `name` (no namespace) as lxml's get reads it, as a new str in
 * *out (NULL: absent): 0, or -1 error, 1 not read here. */
static int get_attr(xmlNode *node, const char *name, PyObject **out) {
    *out = NULL;
    for (xmlAttr *a = node->properties; a; a = a->next) {
        if (a->type != XML_ATTRIBUTE_NODE || !a->name || a->ns || strcmp((const char *)a->name, name) != 0)
            continue;
        const char *s;
        Py_ssize_t n;
        PyObject *owned;
        int r = attr_bytes(NULL, node, a, &s, &n, &owned);
        if (r) return r;
        if (owned) {
            *out = owned;
            return 0;
        }
        *out = PyUnicode_DecodeUTF8(s, n, NULL);
        return *out ? 0 : -1;
    }
    return 0;
}

/* Whether the ASCII letters of v hold `word` (lower case) in any case, or v is not ASCII. */
static int may_hold(PyObject *v, const char *word) {
    if (!PyUnicode_IS_ASCII(v)) return 1;
    const char *s = (const char *)PyUnicode_DATA(v);
    size_t n = (size_t)PyUnicode_GET_LENGTH(v), w = strlen(word);
    for (size_t i = 0; i + w <= n; i++) {
        size_t k = 0;
        while (k < w && ascii_lower(s[i + k]) == word[k]) k++;
        if (k == w) return 1;
    }
    return 0;
}

/* 1, 2, 3 for an element named meta, link, script (in any namespace), else 0. */
static int declared_kind(const xmlNode *node) {
    const char *name = (const char *)node->name;
    if (!name) return 0;
    switch (name[0]) {
    case 'm': return strcmp(name, "meta") == 0 ? 1 : 0;
    case 'l': return strcmp(name, "link") == 0 ? 2 : 0;
    case 's': return strcmp(name, "script") == 0 ? 3 : 0;
    default: return 0;
    }
}

typedef struct { PyObject *metas, *links, *scripts; struct LxmlDocument *doc; } Declared;

/* What meta._page_metadata reads of one element of the document: 0, 1 where it is not read
 * here as lxml reads it, -1 error. */
static int declared_of(Declared *d, xmlNode *cur) {
    int kind = declared_kind(cur);
    if (!kind) return 0;
    if (cur->ns) return 1;
    PyObject *a = NULL, *b = NULL, *c = NULL;
    int r = 0, keep = 0;
    if (kind == 1) {
        r = get_attr(cur, "content", &c);
        if (!r && c) {
            r = get_attr(cur, "name", &a);
            if (!r) r = get_attr(cur, "property", &b);
            keep = !r;
        }
    } else if (kind == 2) {
        r = get_attr(cur, "rel", &a);
        if (!r && a && may_hold(a, "canonical")) {
            r = get_attr(cur, "href", &b);
            keep = !r;
        }
    } else {
        r = get_attr(cur, "type", &a);
        keep = !r && a && may_hold(a, "application/ld+json");
    }
    if (keep) {
        PyObject *item;
        if (kind == 1)
            item = Py_BuildValue("(OOO)", a ? a : Py_None, b ? b : Py_None, c);
        else if (kind == 2)
            item = Py_BuildValue("(OO)", a, b ? b : Py_None);
        else
            item = (PyObject *)elementFactory(d->doc, cur);
        if (!item || PyList_Append(kind == 1 ? d->metas : kind == 2 ? d->links : d->scripts, item) < 0) r = -1;
        Py_XDECREF(item);
    }
    Py_XDECREF(a);
    Py_XDECREF(b);
    Py_XDECREF(c);
    if (r > 0) PyErr_Clear();
    return r;
}

/* declared_of of every element of `top`'s subtree in document order (root.iter's), `top`
 * itself with `with_top`; at `skip`, the elements listed in `instead` (the walk's, for the
 * body it read) in place of its subtree's. 0, 1 where it is not read here, -1 error. */
static int declared_scan(Declared *d, xmlNode *top, int with_top, xmlNode *skip, const Vec *instead) {
    xmlNode *cur = with_top ? top : top->children;
    if (!with_top && !cur) return 0;
    while (cur) {
        if (cur->type == XML_ENTITY_REF_NODE || cur->type == XML_ENTITY_NODE) return 1;
        int descend = 0;
        if (cur == skip) {
            for (size_t k = 0; k < instead->len; k++) {
                int r = declared_of(d, VAT(*instead, xmlNode *, k));
                if (r) return r;
            }
        } else if (cur->type == XML_ELEMENT_NODE) {
            int r = declared_of(d, cur);
            if (r) return r;
            descend = cur->children != NULL;
        }
        if (descend) { cur = cur->children; continue; }
        while (cur != top && !cur->next) cur = cur->parent;
        if (cur == top) break;
        cur = cur->next;
    }
    return 0;
}

/* The declared elements as meta._declared_elements hands them over, or None (see above). */
static PyObject *declared_tuple(struct LxmlDocument *doc, xmlNode *top, xmlNode *skip, const Vec *instead) {
    Declared d = {PyList_New(0), PyList_New(0), PyList_New(0), doc};
    PyObject *out = NULL;
    if (d.metas && d.links && d.scripts) {
        int r = declared_scan(&d, top, 1, skip, instead);
        if (r == 0) out = PyTuple_Pack(3, d.metas, d.links, d.scripts);
        else if (r > 0) out = Py_NewRef(Py_None);
    }
    Py_XDECREF(d.metas);
    Py_XDECREF(d.links);
    Py_XDECREF(d.scripts);
    return out;
}

/* meta_elements(root): what meta._page_metadata reads of root.iter("meta", "link", "script"),
 * in document order: ([(name, property, content)] of the <meta> elements with a content
 * attribute, [(rel, href)] of the <link> elements whose rel may hold "canonical", [the <script>
 * elements whose type may be application/ld+json]), attributes None where absent; None where
 * the tree is not read here as lxml reads it (the caller then iterates it itself). The walk
 * gathers the same for parse_page (walk's `root`) as it reads the body. */
static PyObject *meta_elements(PyObject *self, PyObject *arg) {
    (void)self;
    if (!element_type || !PyObject_TypeCheck(arg, element_type) || !((struct LxmlElement *)arg)->_c_node)
        Py_RETURN_NONE;
    struct LxmlElement *el = (struct LxmlElement *)arg;
    if (el->_c_node->type != XML_ELEMENT_NODE) Py_RETURN_NONE;
    return declared_tuple(el->_doc, el->_c_node, NULL, NULL);
}

/* resolve_link(base_parts, href): urls.resolve_link(base, href) as the walk answers it (base_parts:
 * urls._base_parts(base)), or NotImplemented where the walk calls Python. */
static PyObject *resolve_link_c(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *parts;
    const char *s;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "Os#", &parts, &s, &n)) return NULL;
    BaseParts b;
    if (base_parts_of(parts, &b) < 0) return NULL;
    UrlBufs u = {{0, 0, 0, 1}, {0, 0, 0, 1}, {0, 0, 0, 1}, {0, 0, 0, 1}};
    int python;
    PyObject *out = resolved_object(&u, &b, s, (size_t)n, &python);
    if (!out && python) out = Py_NewRef(Py_NotImplemented);
    free(u.out.data);
    free(u.in.data);
    free(u.tmp.data);
    free(u.tmp2.data);
    return out;
}

/* link_fragment(href): urls.link_fragment(href) as the walk computes it. */
static PyObject *link_fragment_c(PyObject *self, PyObject *arg) {
    (void)self;
    Py_ssize_t n;
    const char *s = PyUnicode_Check(arg) ? PyUnicode_AsUTF8AndSize(arg, &n) : NULL;
    if (!s) { if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "link_fragment: expected a str"); return NULL; }
    UrlBufs u = {{0, 0, 0, 1}, {0, 0, 0, 1}, {0, 0, 0, 1}, {0, 0, 0, 1}};
    PyObject *out = url_fragment(&u, s, (size_t)n) < 0 ? NULL : ascii_str(&u.out);
    free(u.out.data);
    free(u.tmp.data);
    return out;
}

/* hidden_style(value): page._HIDDEN_STYLE.search(value) as the walk answers it (a bool), or
 * None where the walk calls Python (for tests). */
static PyObject *hidden_style_c(PyObject *self, PyObject *arg) {
    (void)self;
    Py_ssize_t n;
    const char *s = PyUnicode_Check(arg) ? PyUnicode_AsUTF8AndSize(arg, &n) : NULL;
    if (!s) { if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "hidden_style: expected a str"); return NULL; }
    int r = hidden_style_ascii(s, n);
    if (r < 0) Py_RETURN_NONE;
    return PyBool_FromLong(r);
}

/* image_links(link_node, end, tag, images): for each image node of `images` (int64, ascending)
 * the innermost link of `link_node` (int32, ascending, preorder) whose subtree holds it when
 * that subtree holds no text node (tag 0), else -1, as a list; None where the arrays are not a
 * page's (a node out of range, images out of order), for meta._image_alts' numpy reading.
 * Subtrees are preorder ranges [i, end[i]), nested or apart, so one pass over the links with
 * a stack of the open ones finds each image's innermost holder; the text nodes before each
 * node, counted once, say whether a range holds one. */
static PyObject *image_links(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[4];
    if (!PyArg_ParseTuple(args, "OOOO", &objs[0], &objs[1], &objs[2], &objs[3])) return NULL;
    static const Py_ssize_t sizes[4] = {4, 4, 4, 8};
    Py_buffer v[4];
    int got = 0;
    PyObject *out = NULL;
    int32_t *stack = NULL, *texts_before = NULL;
    for (; got < 4; got++) {
        if (PyObject_GetBuffer(objs[got], &v[got], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) goto done;
        if (v[got].ndim != 1 || v[got].itemsize != sizes[got]) {
            got++;
            out = Py_NewRef(Py_None);
            goto done;
        }
    }
    const int32_t *links = v[0].buf, *end = v[1].buf, *tag = v[2].buf;
    const int64_t *images = v[3].buf;
    const Py_ssize_t n_links = v[0].len / 4, n = v[1].len / 4, n_images = v[3].len / 8;
    int bad = v[2].len / 4 != n;
    for (Py_ssize_t k = 0; k < n_links && !bad; k++)
        bad = links[k] < 0 || links[k] >= n || (k && links[k] <= links[k - 1]) || end[links[k]] < links[k]
              || end[links[k]] > n;
    for (Py_ssize_t k = 0; k < n_images && !bad; k++)
        bad = images[k] < 0 || images[k] >= n || (k && images[k] < images[k - 1]);
    if (bad) { out = Py_NewRef(Py_None); goto done; }
    stack = malloc(sizeof(int32_t) * (size_t)(n_links ? n_links : 1));
    texts_before = malloc(sizeof(int32_t) * (size_t)(n + 1));
    if (!stack || !texts_before) { PyErr_NoMemory(); goto done; }
    texts_before[0] = 0;
    for (Py_ssize_t i = 0; i < n; i++) texts_before[i + 1] = texts_before[i] + (tag[i] == 0);
    out = PyList_New(n_images);
    if (!out) goto done;
    Py_ssize_t open = 0, next = 0;
    for (Py_ssize_t k = 0; k < n_images; k++) {
        int64_t x = images[k];
        while (next < n_links && links[next] < x) {
            while (open && end[stack[open - 1]] <= links[next]) open--;
            stack[open++] = links[next++];
        }
        while (open && end[stack[open - 1]] <= x) open--;
        long held = -1;
        if (open) {
            int32_t link = stack[open - 1];
            if (texts_before[end[link]] == texts_before[link]) held = link;
        }
        PyObject *item = PyLong_FromLong(held);
        if (!item) { Py_CLEAR(out); goto done; }
        PyList_SET_ITEM(out, k, item);
    }
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    free(stack);
    free(texts_before);
    return out;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, "walk(body, ...): the arrays of page._flatten, or None to run the reference."},
    {"set_token_ranges", set_token_ranges, METH_VARARGS,
     "set_token_ranges(cjk, marks): tokens.py's ranges, for counting words here."},
    {"count_words", count_words_c, METH_O, "count_words(text): tokens.count_words, compiled (for tests)."},
    {"set_hint_tables", set_hint_tables, METH_VARARGS, "set_hint_tables(...): page.py's class/id hint words."},
    {"class_info", class_info_c, METH_O, "class_info(value): page._class_info as the walk answers it, or None."},
    {"count_nodes", count_nodes, METH_VARARGS, "count_nodes(element, limit): an upper bound of the XPath node count."},
    {"hidden_style", hidden_style_c, METH_O, "hidden_style(value): the walk's inline-style test, or None."},
    {"utf8_extent", utf8_extent, METH_O,
     "utf8_extent(data): (code points, bytes) Python's incremental UTF-8 decoder reads of data, or None."},
    {"id_info", id_info_c, METH_O, "id_info(value): page._id_info as the walk answers it, or None."},
    {"resolve_link", resolve_link_c, METH_VARARGS,
     "resolve_link(base_parts, href): urls.resolve_link as the walk answers it, or NotImplemented."},
    {"meta_elements", meta_elements, METH_O,
     "meta_elements(root): what meta._page_metadata reads of the document's meta, link and script elements."},
    {"link_fragment", link_fragment_c, METH_O, "link_fragment(href): urls.link_fragment as the walk computes it."},
    {"image_links", image_links, METH_VARARGS,
     "image_links(link_node, end, tag, images): the textless link holding each image, -1 for none, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_flatten",
                                    "Parse flattening, compiled (see page.py _flatten).", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__flatten(void) {
    crc_init();
    url_init();
    ascii_class_init();
    if (import_lxml__etree() < 0) return NULL;
    PyObject *etree = PyImport_ImportModule("lxml.etree");
    if (!etree) return NULL;
    element_type = (PyTypeObject *)PyObject_GetAttrString(etree, "_Element");
    Py_DECREF(etree);
    if (!element_type) return NULL;
    if (!PyType_Check(element_type)) {
        PyErr_SetString(PyExc_ImportError, "lxml.etree._Element is not a type");
        return NULL;
    }
    return PyModule_Create(&module);
}

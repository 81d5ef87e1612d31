/* Block texts' columns and identities, and the blocks stage's per-node loops, compiled (design §10;
 * blocks.py, features.py).
 *
 * features.py stays the reference: `_text_columns_python` and `text_key` define the values,
 * and the tests run hand-built and generated texts through both. This file reads each block
 * text once instead of building joined copies, code-point arrays and per-character masks
 * per page and scanning the lowered page text with one regular expression:
 *
 * text_columns: per block, the integer counts the character columns are computed from
 *   (words, punctuation, sentence ends, commas, digits, length, closing character, upper
 *   first character) and a bit per _TEXT_PATTERNS entry. features.py divides the counts
 *   exactly as the reference does, so the float columns are the same bit for bit.
 *   - A "space" is U+0020 or U+000A only, as in the reference's character table; a block
 *     ends right before the newline the reference joins the page's texts with, so a block's
 *     first character follows a space and its last precedes one.
 *   - Digits and upper case are the C API's own predicates behind str.isdigit and
 *     str.isupper for one character (Py_UNICODE_ISDIGIT, Py_UNICODE_ISUPPER).
 *   - The patterns are matched on str.lower() of the block (called, not re-implemented:
 *     final-sigma rules and length-changing lowercasings stay Python's), the way Python's re
 *     scans the reference's alternation: leftmost match first, the eight patterns tried in
 *     order at a position and each one's alternatives in order, the scan resuming after a
 *     match. `\b` is re's Unicode word boundary (a word character is Py_UNICODE_ISALNUM or
 *     '_', a text's ends count as non-word) and `^` (multiline) holds at the block's start
 *     and after a '\n'. No match can hold a '\n', so scanning each block alone finds what
 *     the reference's scan over the newline-joined page finds in it.
 *
 * text_keys: crc32 of " ".join(text.lower().split()) encoded UTF-8 with surrogates passed
 *   through: words split on Py_UNICODE_ISSPACE (what str.split() splits on), each code point
 *   encoded as it is (a lone surrogate, or each half of a pair, as three bytes), the CRC
 *   computed with zlib's polynomial from a table built here, so no zlib headers are needed.
 *
 * The blocks stage's per-node loops (blocks.py, features.py), each where numpy spent dozens
 * of calls on a page's small arrays; every output is an integer or an integer count,
 * so the matrices are the reference's bit for bit:
 *   nearest_in_mask: tree.nearest_in_mask (the node itself included), one preorder pass;
 *   subtree_totals: tree.py's subtree totals and conex_page.word_ratio, one backward pass;
 *   menu_scores: menex.menu_features and menu_weights, one pass;
 *   children: tree.children's CSR arrays, a counting sort;
 *   template_votes: template.detect_template's votes, masks and word totals, two passes;
 *   sibling_shapes: features._sibling_shapes_python's same-shape and same-tag sibling counts;
 *   owner_hints: block_features's near/far class/id hint bits of each block's owner;
 *   structure_columns: block_features's owner, position and neighbour columns
 *     (features._structure_python), raw: the *_log ones before numpy's log1p;
 *   page_blocks: blocks.page_blocks (blocks._page_blocks_python), one pass over the nodes;
 *   role_nodes, role_text, role_any: features._role_columns's element columns, ASCII case
 *     counts and cue heads, and anywhere cues (_role_elements_python, _role_text_python,
 *     _role_any_python); text_role_columns: text_columns, role_text, role_any and the page
 *     type's count_lowered in one pass over the page's block texts, each lowered once.
 *   menu_pick: menex.detect_menu's and sitemenus.propose_menus's roots, scores and choice;
 *   page_conex: conex_page.main_content_and_features (excluded tags, wide-page rule, content
 *     features, c-SET, select_main, remove_link_lists); its floats are standardize's and
 *     content_features's operations in numpy's order, so the selection and the ratios are the
 *     reference's bit for bit.
 * and two of classify's per-page steps outside the model:
 *   count_strings: str.count of many strings in one pass (page_type._cue_counts);
 *   region_columns: region.region_features's arithmetic (region._region_features_python),
 *     its logarithms and pairwise total left to numpy.
 *
 * Only the Python C API and the buffer protocol are used (no numpy headers).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_crc32.h"
#include "_buffers.h"
#include "_keys.h"

/* The columns of the counts array, in this order (features.py reads them by these names). */
enum { C_WORDS, C_PUNCT, C_SENTENCES, C_COMMAS, C_DIGITS, C_LENGTH, C_CLOSING, C_UPPER, C_PATTERNS, C_COUNT };

static PyObject *lower_name;   /* "lower", interned */

static int is_punct(Py_UCS4 c) {       /* ",;:.!?、，。！？" */
    switch (c) {
    case ',': case ';': case ':': case '.': case '!': case '?':
    case 0x3001: case 0xFF0C: case 0x3002: case 0xFF01: case 0xFF1F: return 1;
    default: return 0;
    }
}

static int is_end(Py_UCS4 c) {         /* ".!?。！？" */
    switch (c) {
    case '.': case '!': case '?': case 0x3002: case 0xFF01: case 0xFF1F: return 1;
    default: return 0;
    }
}

static int is_closing(Py_UCS4 c) {     /* ".!?:;。！？\"”'" */
    switch (c) {
    case '.': case '!': case '?': case ':': case ';': case 0x3002: case 0xFF01: case 0xFF1F:
    case '"': case 0x201D: case '\'': return 1;
    default: return 0;
    }
}

/* A text as code points: a str of 4-byte kind in place, any other widened into a scratch
 * buffer (`own`, reused from text to text), so the loops below read plain arrays. */
typedef struct {
    const Py_UCS4 *s;
    Py_ssize_t n;
    Py_UCS4 *own;
    Py_ssize_t cap;
} Text;

static inline Py_UCS4 at(const Text *t, Py_ssize_t i) { return t->s[i]; }

static inline int is_word(Py_UCS4 c) { return Py_UNICODE_ISALNUM(c) || c == '_'; }

/* \b before position p, where the character at p is a word character. */
static inline int starts_word(const Text *t, Py_ssize_t p) { return p == 0 || !is_word(at(t, p - 1)); }

/* End of the ASCII literal `lit` at p, or -1. `left`/`right`: \b before/after it (the
 * literals that carry one begin/end with a letter, so the boundary is a test of one side). */
static Py_ssize_t lit(const Text *t, Py_ssize_t p, const char *lit, int left, int right) {
    Py_ssize_t i = 0;
    for (; lit[i]; i++)
        if (p + i >= t->n || at(t, p + i) != (Py_UCS4)(unsigned char)lit[i]) return -1;
    if (left && !starts_word(t, p)) return -1;
    Py_ssize_t e = p + i;
    if (right && e < t->n && is_word(at(t, e))) return -1;
    return e;
}

/* End of the first alternative of pattern g (features._TEXT_PATTERNS order) matching at p,
 * or -1. Each line is one alternative of the regular expression, in its order. */
static Py_ssize_t pattern_at(const Text *t, Py_ssize_t p, int g) {
    Py_ssize_t e;
    Py_UCS4 c = at(t, p);
    switch (g) {
    case 0:  /* rights reserved|copyright|© */
        if ((e = lit(t, p, "rights reserved", 0, 0)) >= 0) return e;
        if ((e = lit(t, p, "copyright", 0, 0)) >= 0) return e;
        return c == 0xA9 ? p + 1 : -1;
    case 1:  /* \blike\b|\bfollow\b */
        if ((e = lit(t, p, "like", 1, 1)) >= 0) return e;
        return lit(t, p, "follow", 1, 1);
    case 2:  /* \bshare\b|\btweet\b|facebook|pinterest|\bemail this\b */
        if ((e = lit(t, p, "share", 1, 1)) >= 0) return e;
        if ((e = lit(t, p, "tweet", 1, 1)) >= 0) return e;
        if ((e = lit(t, p, "facebook", 0, 0)) >= 0) return e;
        if ((e = lit(t, p, "pinterest", 0, 0)) >= 0) return e;
        return lit(t, p, "email this", 1, 1);
    case 3:  /* \bcomments?\b|\brepl(?:y|ies)\b: the optional "s" is greedy, tried first */
        if ((e = lit(t, p, "comments", 1, 1)) >= 0) return e;
        if ((e = lit(t, p, "comment", 1, 1)) >= 0) return e;
        if ((e = lit(t, p, "reply", 1, 1)) >= 0) return e;
        return lit(t, p, "replies", 1, 1);
    case 4:  /* read more|continue reading|\bmore\b|»|› */
        if ((e = lit(t, p, "read more", 0, 0)) >= 0) return e;
        if ((e = lit(t, p, "continue reading", 0, 0)) >= 0) return e;
        if ((e = lit(t, p, "more", 1, 1)) >= 0) return e;
        return (c == 0xBB || c == 0x203A) ? p + 1 : -1;
    case 5:  /* advertis|sponsored|\bpromoted\b */
        if ((e = lit(t, p, "advertis", 0, 0)) >= 0) return e;
        if ((e = lit(t, p, "sponsored", 0, 0)) >= 0) return e;
        return lit(t, p, "promoted", 1, 1);
    case 6:  /* subscribe|sign up|newsletter|log ?in\b|sign in|cookie: " ?" greedy */
        if ((e = lit(t, p, "subscribe", 0, 0)) >= 0) return e;
        if ((e = lit(t, p, "sign up", 0, 0)) >= 0) return e;
        if ((e = lit(t, p, "newsletter", 0, 0)) >= 0) return e;
        if ((e = lit(t, p, "log in", 0, 1)) >= 0) return e;
        if ((e = lit(t, p, "login", 0, 1)) >= 0) return e;
        if ((e = lit(t, p, "sign in", 0, 0)) >= 0) return e;
        return lit(t, p, "cookie", 0, 0);
    default: /* (?m:^)[ \t]*(?:by|posted|published|updated)\b: [ \t]* is greedy, and giving
              * a blank back leaves a blank where a keyword would have to start */
        if (p > 0 && at(t, p - 1) != '\n') return -1;
        {
            Py_ssize_t q = p;
            while (q < t->n && (at(t, q) == ' ' || at(t, q) == '\t')) q++;
            if ((e = lit(t, q, "by", 0, 1)) >= 0) return e;
            if ((e = lit(t, q, "posted", 0, 1)) >= 0) return e;
            if ((e = lit(t, q, "published", 0, 1)) >= 0) return e;
            return lit(t, q, "updated", 0, 1);
        }
    }
}

#define N_PATTERNS 8

/* The patterns with an alternative that begins with the non-ASCII character c (bit g: pattern g):
 * ©, », ›, each an alternative of one character. A pattern left out cannot match at the
 * position, so trying only these, in order, finds the same first match (features.py's
 * _MATCH_STARTS is the same filter for the regular expression); the ASCII starts are looked
 * up in pair_slot and slot_third below, and the byline, which begins at a line start instead,
 * is among neither. */
static unsigned may_start(Py_UCS4 c) {
    switch (c) {
    case 0xA9: return 1u << 0;                                               /* © */
    case 0xBB: case 0x203A: return 1u << 4;                                  /* » › */
    default: return 0;
    }
}

/* The ASCII alternatives of the patterns (pattern_at's literals but the byline's), each
 * with its pattern: every one is at least three characters long. */
static const struct { const char *text; int g; } pattern_literals[] = {
    {"rights reserved", 0}, {"copyright", 0}, {"like", 1}, {"follow", 1}, {"share", 2}, {"tweet", 2},
    {"facebook", 2}, {"pinterest", 2}, {"email this", 2}, {"comment", 3}, {"reply", 3}, {"replies", 3},
    {"read more", 4}, {"continue reading", 4}, {"more", 4}, {"advertis", 5}, {"sponsored", 5},
    {"promoted", 5}, {"subscribe", 6}, {"sign up", 6}, {"newsletter", 6}, {"log in", 6}, {"login", 6},
    {"sign in", 6}, {"cookie", 6},
};
#define N_PATTERN_LITERALS ((int)(sizeof pattern_literals / sizeof pattern_literals[0]))

/* The patterns that may match at a position holding the ASCII characters c, d, e, looked up in
 * two steps: pair_slot[c][d] (0: no literal begins with c, d), then slot_third[slot][e]. A
 * literal needs all three of its first characters there, so a pattern left out cannot match at
 * the position, and the common two-letter starts ("re", "co", "li") rarely reach pattern_at; a
 * switch on the text's characters jumps somewhere else at almost every position, which the
 * processor cannot predict, a table lookup does not. */
static uint8_t pair_slot[128][128];
static uint8_t slot_third[N_PATTERN_LITERALS + 1][128];

static void may_start_init(void) {
    int slots = 0;
    for (int k = 0; k < N_PATTERN_LITERALS; k++) {
        const unsigned char *q = (const unsigned char *)pattern_literals[k].text;
        if (pair_slot[q[0]][q[1]] == 0) pair_slot[q[0]][q[1]] = (uint8_t)++slots;
        slot_third[pair_slot[q[0]][q[1]]][q[2]] |= (uint8_t)(1u << pattern_literals[k].g);
    }
}

/* Bit g set for every pattern g that the reference's leftmost, non-overlapping scan finds. At a
 * position with two characters after it, the three are looked up with no branch but the rare
 * non-ASCII one; nearer the end, only a one-character alternative (©, », ›) fits. */
static int64_t pattern_bits(const Text *t) {
    int64_t bits = 0;
    const Py_UCS4 *s = t->s;
    Py_ssize_t p = 0, n = t->n;
    while (p < n) {
        Py_UCS4 c = s[p];
        unsigned tried;
        if (p + 2 < n) {
            Py_UCS4 d = s[p + 1], e = s[p + 2];
            tried = (c | d | e) < 128 ? slot_third[pair_slot[c][d]][e] : c >= 128 ? may_start(c) : 0;
        } else {
            tried = c >= 128 ? may_start(c) : 0;
        }
        if (p == 0 || s[p - 1] == '\n') tried |= 1u << (N_PATTERNS - 1);
        if (!tried) {
            p++;
            continue;
        }
        Py_ssize_t e = -1;
        for (int g = 0; g < N_PATTERNS; g++) {
            if (!(tried >> g & 1)) continue;
            if ((e = pattern_at(t, p, g)) >= 0) {
                bits |= (int64_t)1 << g;
                break;
            }
        }
        p = e > p ? e : p + 1;
    }
    return bits;
}

/* Room for n characters in t's own buffer, grown as needed and kept for the next text: 0, or
 * -1 with MemoryError set. */
static int text_room(Text *t, Py_ssize_t n) {
    if (n <= t->cap) return 0;
    Py_UCS4 *grown = PyMem_Realloc(t->own, (size_t)n * sizeof(Py_UCS4));
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    t->own = grown;
    t->cap = n;
    return 0;
}

static int as_text(PyObject *s, Text *t) {
    if (!PyUnicode_Check(s)) {
        PyErr_Format(PyExc_TypeError, "block texts must be str, not %.100s", Py_TYPE(s)->tp_name);
        return -1;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(s) < 0) return -1;      /* a legacy str; 3.12 has none */
#endif
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    t->n = n;
    if (kind == PyUnicode_4BYTE_KIND) {
        t->s = data;
        return 0;
    }
    if (text_room(t, n) < 0) return -1;
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *from = data;
        for (Py_ssize_t i = 0; i < n; i++) t->own[i] = from[i];
    } else {
        const Py_UCS2 *from = data;
        for (Py_ssize_t i = 0; i < n; i++) t->own[i] = from[i];
    }
    t->s = t->own;
    return 0;
}

/* `s` lower-cased as str.lower() does, into `l`. An ASCII str is lowered here, code point by
 * code point into l's scratch buffer (str.lower maps A-Z and nothing else of ASCII, to one
 * code point each); any other is str.lower's, called, whose result is held in *low until the
 * caller releases it (Py_XDECREF), since `l` may read it in place. */
static int lower_text(PyObject *s, Text *l, PyObject **low) {
    *low = NULL;
    if (!PyUnicode_Check(s)) {
        PyErr_Format(PyExc_TypeError, "block texts must be str, not %.100s", Py_TYPE(s)->tp_name);
        return -1;
    }
    if (PyUnicode_CheckExact(s) && PyUnicode_IS_ASCII(s)) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(s);
        if (text_room(l, n) < 0) return -1;
        const Py_UCS1 *from = PyUnicode_1BYTE_DATA(s);
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_UCS4 c = from[i];
            l->own[i] = c >= 'A' && c <= 'Z' ? c + 32 : c;
        }
        l->s = l->own;
        l->n = n;
        return 0;
    }
    *low = PyObject_CallMethodNoArgs(s, lower_name);
    if (*low == NULL) return -1;
    return as_text(*low, l);
}

static int writable_int64(PyObject *obj, Py_buffer *view, Py_ssize_t items, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) return -1;
    if (view->itemsize != 8 || view->len != items * 8) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd contiguous int64 items", what, items);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* What text_columns counts of a character: a space (' ', '\n'), a digit (str.isdigit), is_punct,
 * is_end, a comma; the ASCII ones looked up in a table (a switch per character of a text is a
 * jump the processor mostly mispredicts). */
enum { K_SPACE = 1, K_DIGIT = 2, K_PUNCT = 4, K_END = 8, K_COMMA = 16 };

static unsigned wide_class(Py_UCS4 c) {
    return (c == ' ' || c == '\n' ? K_SPACE : 0) | (c < 128 ? (c >= '0' && c <= '9' ? K_DIGIT : 0)
                                                           : (Py_UNICODE_ISDIGIT(c) ? K_DIGIT : 0))
           | (is_punct(c) ? K_PUNCT : 0) | (is_end(c) ? K_END : 0) | (c == ',' ? K_COMMA : 0);
}

static uint8_t ascii_class[128];

static void ascii_class_init(void) {
    for (Py_UCS4 c = 0; c < 128; c++) ascii_class[c] = (uint8_t)wide_class(c);
}

/* The counts of one block text `t` (C_WORDS .. C_UPPER) into row. */
static void text_counts(const Text *t, int64_t *row) {
    int64_t words = 0, punct = 0, sentences = 0, commas = 0, digits = 0;
    int after_space = 1;
    for (Py_ssize_t i = 0; i < t->n; i++) {
        Py_UCS4 c = at(t, i);
        unsigned k = c < 128 ? ascii_class[c] : wide_class(c);
        int space = (k & K_SPACE) != 0;
        words += !space && after_space;
        after_space = space;
        digits += (k & K_DIGIT) != 0;
        if (k & K_PUNCT) {
            punct++;
            commas += (k & K_COMMA) != 0;
            if (k & K_END) {
                Py_UCS4 next = i + 1 < t->n ? at(t, i + 1) : '\n';
                sentences += next == ' ' || next == '\n';
            }
        }
    }
    row[C_WORDS] = words;
    row[C_PUNCT] = punct;
    row[C_SENTENCES] = sentences;
    row[C_COMMAS] = commas;
    row[C_DIGITS] = digits;
    row[C_LENGTH] = t->n;
    row[C_CLOSING] = t->n > 0 && is_closing(at(t, t->n - 1));
    row[C_UPPER] = t->n > 0 && Py_UNICODE_ISUPPER(at(t, 0)) != 0;
}

/* text_columns(texts, counts): counts is int64 [len(texts), C_COUNT], written row by row.
 * An ASCII text is counted over its lowered copy, the one the patterns read: lowering maps
 * A-Z to a-z and nothing else, which no count but the upper first character tells apart,
 * and that one is read from the text itself. */
static PyObject *text_columns(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *texts, *out_o;
    if (!PyArg_ParseTuple(args, "O!O", &PyList_Type, &texts, &out_o)) return NULL;
    Py_ssize_t nb = PyList_GET_SIZE(texts);
    Py_buffer view;
    if (writable_int64(out_o, &view, nb * C_COUNT, "counts") < 0) return NULL;
    int64_t *row = view.buf;
    Text t = {0}, l = {0};
    for (Py_ssize_t b = 0; b < nb; b++, row += C_COUNT) {
        PyObject *s = PyList_GET_ITEM(texts, b);
        int ascii = PyUnicode_Check(s) && PyUnicode_CheckExact(s) && PyUnicode_IS_ASCII(s);
        if (!ascii) {
            if (as_text(s, &t) < 0) goto fail;
            text_counts(&t, row);
        }
        PyObject *low;
        if (lower_text(s, &l, &low) < 0) { Py_XDECREF(low); goto fail; }
        if (ascii) {
            text_counts(&l, row);
            Py_UCS1 first = l.n > 0 ? PyUnicode_1BYTE_DATA(s)[0] : 0;
            row[C_UPPER] = first >= 'A' && first <= 'Z';
        }
        row[C_PATTERNS] = pattern_bits(&l);
        Py_XDECREF(low);
    }
    PyMem_Free(t.own);
    PyMem_Free(l.own);
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
fail:
    PyMem_Free(t.own);
    PyMem_Free(l.own);
    PyBuffer_Release(&view);
    return NULL;
}

static inline uint32_t crc_code_point(uint32_t crc, Py_UCS4 c) {
    if (c < 0x80) return crc_byte(crc, (unsigned char)c);
    if (c < 0x800) {
        crc = crc_byte(crc, (unsigned char)(0xC0 | (c >> 6)));
    } else if (c < 0x10000) {
        crc = crc_byte(crc, (unsigned char)(0xE0 | (c >> 12)));
        crc = crc_byte(crc, (unsigned char)(0x80 | ((c >> 6) & 0x3F)));
    } else {
        crc = crc_byte(crc, (unsigned char)(0xF0 | (c >> 18)));
        crc = crc_byte(crc, (unsigned char)(0x80 | ((c >> 12) & 0x3F)));
        crc = crc_byte(crc, (unsigned char)(0x80 | ((c >> 6) & 0x3F)));
    }
    return crc_byte(crc, (unsigned char)(0x80 | (c & 0x3F)));
}

/* text_keys(texts, keys): keys is int64 [len(texts)]. */
static PyObject *text_keys(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *texts, *out_o;
    if (!PyArg_ParseTuple(args, "O!O", &PyList_Type, &texts, &out_o)) return NULL;
    Py_ssize_t nb = PyList_GET_SIZE(texts);
    Py_buffer view;
    if (writable_int64(out_o, &view, nb, "keys") < 0) return NULL;
    int64_t *keys = view.buf;
    Text l = {0};
    for (Py_ssize_t b = 0; b < nb; b++) {
        PyObject *s = PyList_GET_ITEM(texts, b);
        if (PyUnicode_Check(s) && PyUnicode_CheckExact(s) && PyUnicode_IS_ASCII(s)) {
            /* Read in place, A-Z lowered as lower_text lowers them, no copy made. */
            const Py_UCS1 *from = PyUnicode_1BYTE_DATA(s);
            Py_ssize_t n = PyUnicode_GET_LENGTH(s);
            uint32_t crc = crc_begin();
            int in_word = 0, words = 0;
            for (Py_ssize_t i = 0; i < n; i++) {
                Py_UCS4 c = from[i];
                if (Py_UNICODE_ISSPACE(c)) {
                    in_word = 0;
                    continue;
                }
                if (!in_word && words++) crc = crc_byte(crc, ' ');
                in_word = 1;
                crc = crc_byte(crc, (unsigned char)(c >= 'A' && c <= 'Z' ? c + 32 : c));
            }
            keys[b] = (int64_t)crc_end(crc);
            continue;
        }
        PyObject *low;
        if (lower_text(s, &l, &low) < 0) { Py_XDECREF(low); goto fail; }
        uint32_t crc = crc_begin();
        int in_word = 0, words = 0;
        for (Py_ssize_t i = 0; i < l.n; i++) {
            Py_UCS4 c = at(&l, i);
            if (Py_UNICODE_ISSPACE(c)) {
                in_word = 0;
                continue;
            }
            if (!in_word && words++) crc = crc_byte(crc, ' ');
            in_word = 1;
            crc = crc_code_point(crc, c);
        }
        keys[b] = (int64_t)crc_end(crc);
        Py_XDECREF(low);
    }
    PyMem_Free(l.own);
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
fail:
    PyMem_Free(l.own);
    PyBuffer_Release(&view);
    return NULL;
}

/* ---------------------------------------------------------------- per-node loops
 *
 * features.py's and blocks.py's per-node columns, one pass over the page's arrays where the
 * reference spends a few dozen numpy calls on small arrays. Every output is an integer
 * (or an integer count stored as float64), and the one float the grouping compares, a
 * node's class sum, is summed here in the order np.bincount sums it: each node's class
 * hashes as float64, in index order, from 0.0. */

/* nearest_in_mask(parent int32[n], mask bool[n], out int64[n]): tree.nearest_in_mask with the
 * node itself included. Preorder puts a parent before its children, so one forward pass
 * sees every parent's answer before the child needs it. */
static PyObject *nearest_in_mask(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *parent_o, *mask_o, *out_o;
    if (!PyArg_ParseTuple(args, "OOO", &parent_o, &mask_o, &out_o)) return NULL;
    Py_buffer pv, mv, ov;
    if (get_array(parent_o, &pv, 4, -1, 0, "parent") < 0) return NULL;
    Py_ssize_t n = pv.len / 4;
    if (get_array(mask_o, &mv, 1, n, 0, "mask") < 0) { PyBuffer_Release(&pv); return NULL; }
    if (get_array(out_o, &ov, 8, n, 1, "out") < 0) { PyBuffer_Release(&pv); PyBuffer_Release(&mv); return NULL; }
    const int32_t *parent = pv.buf;
    const uint8_t *mask = mv.buf;
    int64_t *out = ov.buf;
    PyObject *result = Py_None;
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t p = parent[i];
        if (mask[i]) {
            out[i] = i;
        } else if (p < 0) {
            out[i] = -1;
        } else if (p >= i) {
            PyErr_Format(PyExc_ValueError, "parent[%zd] = %d is not before the node (not preorder)", i, (int)p);
            result = NULL;
            break;
        } else {
            out[i] = out[p];
        }
    }
    PyBuffer_Release(&pv);
    PyBuffer_Release(&mv);
    PyBuffer_Release(&ov);
    Py_XINCREF(result);
    return result;
}

/* subtree_totals(parent int32[n], tag int32[n], flags uint16[n], words int32[n], chars int32[n],
 *                link_flag, in_link_flag, a_tag, totals int64[5n], word_ratio float64[n]):
 * the per-node subtree sums that page ConEx, MenEx and the block features read (tree.py's
 * links_below, words_below, elements_below, text_nodes_below and MenEx's characters outside
 * links, rows of `totals` in that order), summed child into parent in one backward pass over
 * the preorder parents; and conex_page.word_ratio. Sums of integers are exact in any order;
 * word_ratio's floats are summed as the reference sums them: per distance d, each node's
 * words/d of its leaves in leaf order from 0.0 (np.bincount), that sum then added to the
 * node's running total. */
static PyObject *subtree_totals(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *parent_o, *tag_o, *flags_o, *words_o, *chars_o, *totals_o, *ratio_o;
    int link_flag, in_link_flag, a_tag;
    if (!PyArg_ParseTuple(args, "OOOOOiiiOO", &parent_o, &tag_o, &flags_o, &words_o, &chars_o,
                          &link_flag, &in_link_flag, &a_tag, &totals_o, &ratio_o)) return NULL;
    Py_buffer pv, tv, fv, wv, cv, ov, rv;
    if (get_array(parent_o, &pv, 4, -1, 0, "parent") < 0) return NULL;
    Py_ssize_t n = pv.len / 4;
    int got = 1;
    if (get_array(tag_o, &tv, 4, n, 0, "tag") < 0) { got = 0; goto release_p; }
    if (get_array(flags_o, &fv, 2, n, 0, "flags") < 0) { got = 0; goto release_t; }
    if (get_array(words_o, &wv, 4, n, 0, "words") < 0) { got = 0; goto release_f; }
    if (get_array(chars_o, &cv, 4, n, 0, "chars") < 0) { got = 0; goto release_w; }
    if (get_array(totals_o, &ov, 8, 5 * n, 1, "totals") < 0) { got = 0; goto release_c; }
    if (get_array(ratio_o, &rv, 8, n, 1, "word_ratio") < 0) { got = 0; goto release_o; }

    const int32_t *parent = pv.buf, *tag = tv.buf, *words = wv.buf, *chars = cv.buf;
    const uint16_t *flags = fv.buf;
    int64_t *links = (int64_t *)ov.buf, *wsum = links + n, *elements = links + 2 * n,
            *texts = links + 3 * n, *outside = links + 4 * n;
    double *ratio = rv.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t p = parent[i];
        if (p >= i) {
            PyErr_Format(PyExc_ValueError, "parent[%zd] = %d is not before the node (not preorder)", i, (int)p);
            got = 0;
            goto release_r;
        }
        int text = tag[i] == 0;
        links[i] = (flags[i] & link_flag) != 0;
        wsum[i] = words[i];
        elements[i] = !text;
        texts[i] = text;
        outside[i] = text && (flags[i] & in_link_flag) == 0 ? chars[i] : 0;
        ratio[i] = 0.0;
    }
    for (Py_ssize_t i = n - 1; i > 0; i--) {
        int32_t p = parent[i];
        if (p < 0) continue;
        links[p] += links[i];
        wsum[p] += wsum[i];
        elements[p] += elements[i];
        texts[p] += texts[i];
        outside[p] += outside[i];
    }

    /* word_ratio: the counted leaves (text whose parent is no <a>, with words), walked up one
     * level per round, as the reference's vector rounds. */
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (tag[i] == 0 && words[i] > 0 && parent[i] >= 0 && tag[parent[i]] != a_tag) m++;
    if (m > 0) {
        int32_t *current = PyMem_Malloc(m * sizeof(int32_t));
        double *weight = PyMem_Malloc(m * sizeof(double));
        double *round = PyMem_Calloc(n, sizeof(double));
        int32_t *touched = PyMem_Malloc(m * sizeof(int32_t));
        uint8_t *seen = PyMem_Calloc(n, 1);
        if (!current || !weight || !round || !touched || !seen) {
            PyMem_Free(current); PyMem_Free(weight); PyMem_Free(round); PyMem_Free(touched); PyMem_Free(seen);
            PyErr_NoMemory();
            got = 0;
            goto release_r;
        }
        Py_ssize_t k = 0;
        for (Py_ssize_t i = 0; i < n; i++)
            if (tag[i] == 0 && words[i] > 0 && parent[i] >= 0 && tag[parent[i]] != a_tag) {
                current[k] = parent[i];
                weight[k] = (double)words[i];
                k++;
            }
        for (int64_t distance = 1; m > 0; distance++) {
            Py_ssize_t t = 0;
            for (Py_ssize_t j = 0; j < m; j++) {
                int32_t c = current[j];
                round[c] += weight[j] / (double)distance;
                if (!seen[c]) { seen[c] = 1; touched[t++] = c; }
            }
            for (Py_ssize_t j = 0; j < t; j++) {
                int32_t c = touched[j];
                ratio[c] += round[c];
                round[c] = 0.0;
                seen[c] = 0;
            }
            Py_ssize_t alive = 0;       /* the leaves still below the root, order kept */
            for (Py_ssize_t j = 0; j < m; j++) {
                int32_t up = parent[current[j]];
                if (up >= 0) { current[alive] = up; weight[alive] = weight[j]; alive++; }
            }
            m = alive;
        }
        PyMem_Free(current); PyMem_Free(weight); PyMem_Free(round); PyMem_Free(touched); PyMem_Free(seen);
    }

release_r: PyBuffer_Release(&rv);
release_o: PyBuffer_Release(&ov);
release_c: PyBuffer_Release(&cv);
release_w: PyBuffer_Release(&wv);
release_f: PyBuffer_Release(&fv);
release_t: PyBuffer_Release(&tv);
release_p: PyBuffer_Release(&pv);
    if (!got) return NULL;
    Py_RETURN_NONE;
}

/* menu_scores(tag int32[n], child_count int32[n], flags uint16[n], end int32[n],
 *             hyperlinks int64[n], chars int64[n], ul_tag, representative_flag,
 *             w (6 float64: amplitude, link, text, ul, representative, position weights),
 *             rated bool[n], out float64[7n]): menex.menu_features and menu_weights in one pass,
 * `out` rows amplitude, link, text, ul, representative, position, weight. Each value is the
 * reference's expression with its operations in numpy's order (each term a product, the
 * terms added left to right), so every float is the same. `chars`: the characters outside
 * links below each node (tree.outside_link_chars_below). */
static PyObject *menu_scores(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *tag_o, *cc_o, *flags_o, *end_o, *links_o, *chars_o, *w_o, *rated_o, *out_o;
    int ul_tag, rep_flag;
    if (!PyArg_ParseTuple(args, "OOOOOOiiOOO", &tag_o, &cc_o, &flags_o, &end_o, &links_o, &chars_o,
                          &ul_tag, &rep_flag, &w_o, &rated_o, &out_o)) return NULL;
    Py_buffer views[9];
    PyObject *objs[9] = {tag_o, cc_o, flags_o, end_o, links_o, chars_o, w_o, rated_o, out_o};
    static const Py_ssize_t sizes[9] = {4, 4, 2, 4, 8, 8, 8, 1, 8};
    static const char *names[9] = {"tag", "child_count", "flags", "end", "hyperlinks", "chars", "w", "rated", "out"};
    Py_ssize_t n = -1;
    int got = 0;
    for (; got < 9; got++) {
        Py_ssize_t items = got == 0 ? -1 : got == 6 ? 6 : got == 8 ? 7 * n : n;
        if (get_array(objs[got], &views[got], sizes[got], items, got >= 7, names[got]) < 0) break;
        if (got == 0) n = views[0].len / 4;
    }
    if (got == 9) {
        const int32_t *tag = views[0].buf, *cc = views[1].buf, *end = views[3].buf;
        const uint16_t *flags = views[2].buf;
        const int64_t *links = views[4].buf, *chars = views[5].buf;
        const double *w = views[6].buf;
        uint8_t *rated = views[7].buf;
        double *amplitude = views[8].buf, *link = amplitude + n, *text = amplitude + 2 * n, *ul = amplitude + 3 * n,
               *rep = amplitude + 4 * n, *position = amplitude + 5 * n, *weight = amplitude + 6 * n;
        double total = n ? (double)chars[0] : 0.0;
        double root = sqrt(total);
        double count = (double)(n > 1 ? n : 1);
        for (Py_ssize_t i = 0; i < n; i++) {
            int r = tag[i] != 0 && cc[i] > 0;
            rated[i] = (uint8_t)r;
            if (!r) {
                amplitude[i] = link[i] = text[i] = ul[i] = rep[i] = position[i] = weight[i] = 0.0;
                continue;
            }
            amplitude[i] = 1.0 - 1.0 / (double)cc[i];
            int64_t descendants = (int64_t)end[i] - (int64_t)i - 1;
            double desc = (double)(descendants > 1 ? descendants : 1);
            link[i] = links[i] >= 2 ? ((double)links[i] + desc) / (2.0 * desc) : 0.0;
            if (total > 0) {
                double t = 1.0 - (double)chars[i] / root;
                text[i] = t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t;
            } else {
                text[i] = 1.0;
            }
            ul[i] = tag[i] == ul_tag ? 1.0 : 0.0;
            rep[i] = (flags[i] & rep_flag) != 0 ? 1.0 : 0.0;
            position[i] = 1.0 - (double)i / count;
            double a = w[0] * amplitude[i], b = w[1] * link[i], c = w[2] * text[i], d = w[3] * ul[i],
                   e = w[4] * rep[i], f = w[5] * position[i];
            weight[i] = ((((a + b) + c) + d) + e) + f;
        }
    }
    for (int k = 0; k < got; k++) PyBuffer_Release(&views[k]);
    if (got < 9) return NULL;
    Py_RETURN_NONE;
}

/* children(parent int32[n], ptr int64[n+1], idx int32[n-1]): tree.children's CSR arrays,
 * a counting sort of the nodes by parent; nodes go in in index order, so each parent's
 * children are in document order, as the reference's stable argsort puts them. */
static PyObject *children_csr(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *parent_o, *ptr_o, *idx_o;
    if (!PyArg_ParseTuple(args, "OOO", &parent_o, &ptr_o, &idx_o)) return NULL;
    Py_buffer pv, rv, iv;
    if (get_array(parent_o, &pv, 4, -1, 0, "parent") < 0) return NULL;
    Py_ssize_t n = pv.len / 4;
    if (get_array(ptr_o, &rv, 8, n + 1, 1, "ptr") < 0) { PyBuffer_Release(&pv); return NULL; }
    if (get_array(idx_o, &iv, 4, n > 0 ? n - 1 : 0, 1, "idx") < 0) {
        PyBuffer_Release(&pv); PyBuffer_Release(&rv); return NULL;
    }
    const int32_t *parent = pv.buf;
    int64_t *ptr = rv.buf;
    int32_t *idx = iv.buf;
    int ok = 1;
    memset(ptr, 0, (size_t)(n + 1) * sizeof(int64_t));
    for (Py_ssize_t i = 1; i < n; i++) {
        int32_t p = parent[i];
        if (p < 0 || p >= i) {
            PyErr_Format(PyExc_ValueError, "parent[%zd] = %d: not a preorder tree with one root", i, (int)p);
            ok = 0;
            break;
        }
        ptr[p + 1]++;
    }
    if (ok) {
        for (Py_ssize_t i = 0; i < n; i++) ptr[i + 1] += ptr[i];
        int64_t *next = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
        if (!next) { PyErr_NoMemory(); ok = 0; }
        else {
            memcpy(next, ptr, (size_t)n * sizeof(int64_t));
            for (Py_ssize_t i = 1; i < n; i++) idx[next[parent[i]]++] = (int32_t)i;
            PyMem_Free(next);
        }
    }
    PyBuffer_Release(&pv);
    PyBuffer_Release(&rv);
    PyBuffer_Release(&iv);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

/* template_votes(occ int32[n], votes, parent int32[n], tag int32[n], line int32[n], words int32[n],
 *                a_tag, by_line, template bool[n], nontemplate bool[n]) -> (page words, kept words):
 * template.detect_template's votes around the mappings in two passes. A node is template
 * with `votes` mappings; text is non-template unless it is template or inside a template
 * <a> (tree.subtree_mask of those, here each node's own flag or its parent's); with
 * `by_line`, every text node of a text line (a run of text nodes of one `line` value,
 * template.line_nontemplate) that holds a non-template one is non-template. */
static PyObject *template_votes(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *occ_o, *parent_o, *tag_o, *line_o, *words_o, *tpl_o, *non_o;
    int votes, a_tag, by_line;
    if (!PyArg_ParseTuple(args, "OiOOOOipOO", &occ_o, &votes, &parent_o, &tag_o, &line_o, &words_o,
                          &a_tag, &by_line, &tpl_o, &non_o)) return NULL;
    Py_buffer views[7];
    PyObject *objs[7] = {occ_o, parent_o, tag_o, line_o, words_o, tpl_o, non_o};
    static const Py_ssize_t sizes[7] = {4, 4, 4, 4, 4, 1, 1};
    static const char *names[7] = {"occ", "parent", "tag", "line", "words", "template", "nontemplate"};
    Py_ssize_t n = -1;
    int got = 0;
    for (; got < 7; got++) {
        if (get_array(objs[got], &views[got], sizes[got], got == 0 ? -1 : n, got >= 5, names[got]) < 0) break;
        if (got == 0) n = views[0].len / 4;
    }
    PyObject *result = NULL;
    uint8_t *in_link = NULL;
    int32_t *unit = NULL;
    if (got == 7) {
        const int32_t *occ = views[0].buf, *parent = views[1].buf, *tag = views[2].buf, *line = views[3].buf,
                      *words = views[4].buf;
        uint8_t *tpl = views[5].buf, *non = views[6].buf;
        in_link = PyMem_Malloc((size_t)(n > 0 ? n : 1));
        unit = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t));
        if (!in_link || !unit) { PyErr_NoMemory(); goto done; }
        long long total = 0, kept = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            int32_t p = parent[i];
            if (p >= i) {
                PyErr_Format(PyExc_ValueError, "parent[%zd] = %d is not before the node (not preorder)", i, (int)p);
                goto done;
            }
            int t = occ[i] >= votes;
            tpl[i] = (uint8_t)t;
            in_link[i] = (uint8_t)((t && tag[i] == a_tag) || (p >= 0 && in_link[p]));
            non[i] = (uint8_t)(tag[i] == 0 && !t && !in_link[i]);
        }
        if (by_line) {
            Py_ssize_t members = 0;
            int any = 0;
            int32_t current = 0;
            for (Py_ssize_t i = 0; i <= n; i++) {
                if (i < n && tag[i] != 0) continue;
                if (members && (i == n || line[i] != current)) {
                    if (any) for (Py_ssize_t k = 0; k < members; k++) non[unit[k]] = 1;
                    members = 0;
                    any = 0;
                }
                if (i == n) break;
                current = line[i];
                unit[members++] = (int32_t)i;
                any |= non[i];
            }
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            if (tag[i] != 0) continue;
            total += words[i];
            if (non[i]) kept += words[i];
        }
        result = Py_BuildValue("LL", total, kept);
    }
done:
    PyMem_Free(in_link);
    PyMem_Free(unit);
    for (int k = 0; k < got; k++) PyBuffer_Release(&views[k]);
    return result;
}

/* One group of siblings in sibling_shapes's open-addressing tables: (parent, tag) and, for
 * the shape table, the class sum, with how many nodes it holds. used == 0: an empty slot. */
typedef struct {
    int32_t parent, tag;
    double class_sum;
    int64_t count;
    int used;
} Group;

static inline uint64_t mix64(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

/* The slot of the group (parent, tag[, class_sum]) in `table` (a power of two `mask + 1` of
 * slots, never full), claimed if the group is new. */
static Py_ssize_t group_slot(Group *table, Py_ssize_t mask, int32_t parent, int32_t tag, double class_sum,
                             int with_sum) {
    uint64_t bits = 0;
    if (with_sum) memcpy(&bits, &class_sum, sizeof bits);
    uint64_t h = mix64(((uint64_t)(uint32_t)parent << 32 | (uint32_t)tag) ^ mix64(bits));
    Py_ssize_t at = (Py_ssize_t)(h & (uint64_t)mask);
    for (;;) {
        Group *g = &table[at];
        if (!g->used) {
            g->used = 1;
            g->parent = parent;
            g->tag = tag;
            g->class_sum = class_sum;
            g->count = 0;
            return at;
        }
        if (g->parent == parent && g->tag == tag && (!with_sum || g->class_sum == class_sum)) return at;
        at = (at + 1) & mask;
    }
}

/* sibling_shapes(parent int32[n], tag int32[n], class_ptr int32[n+1], class_hash uint32[],
 *                text_tag, same_shape float64[n], same_tag float64[n]): features._sibling_shapes.
 * Every element but the root is counted into its group of same-shaped siblings (parent, tag,
 * class sum) and of same-tagged ones (parent, tag) in two hash tables, then gets its groups'
 * sizes less itself. The root and text nodes get 0, as in the reference; leaving them out of
 * the tables changes no element's group (a text node's tag is no element's, the root is the
 * one node without a parent). Class sums are sums of 32-bit hashes in a double, exact, and
 * never -0.0 or NaN, so equal sums have equal bits. */
static PyObject *sibling_shapes(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *parent_o, *tag_o, *ptr_o, *hash_o, *shape_o, *same_tag_o;
    int text_tag;
    if (!PyArg_ParseTuple(args, "OOOOiOO", &parent_o, &tag_o, &ptr_o, &hash_o, &text_tag, &shape_o, &same_tag_o))
        return NULL;
    Py_buffer v[6];
    int held = 0;
    PyObject *result = NULL;
    Group *shapes = NULL, *tags = NULL;
    Py_ssize_t *slot = NULL;
    Py_ssize_t n = 0, n_hash = 0;
    if (get_array(parent_o, &v[held], 4, -1, 0, "parent") < 0) goto done;
    n = v[held++].len / 4;
    if (get_array(tag_o, &v[held], 4, n, 0, "tag") < 0) goto done;
    held++;
    if (get_array(ptr_o, &v[held], 4, n + 1, 0, "class_ptr") < 0) goto done;
    held++;
    if (get_array(hash_o, &v[held], 4, -1, 0, "class_hash") < 0) goto done;
    n_hash = v[held++].len / 4;
    if (get_array(shape_o, &v[held], 8, n, 1, "same_shape") < 0) goto done;
    held++;
    if (get_array(same_tag_o, &v[held], 8, n, 1, "same_tag") < 0) goto done;
    held++;
    const int32_t *parent = v[0].buf, *tag = v[1].buf, *ptr = v[2].buf;
    const uint32_t *hash = v[3].buf;
    double *same_shape = v[4].buf, *same_tag = v[5].buf;
    Py_ssize_t size = 16;
    while (size < 2 * n) size *= 2;
    shapes = PyMem_Calloc((size_t)size, sizeof(Group));
    tags = PyMem_Calloc((size_t)size, sizeof(Group));
    slot = PyMem_Malloc((size_t)(2 * (n > 0 ? n : 1)) * sizeof(Py_ssize_t));
    if (shapes == NULL || tags == NULL || slot == NULL) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (ptr[i] < 0 || ptr[i] > ptr[i + 1] || ptr[i + 1] > n_hash) {
            PyErr_Format(PyExc_ValueError, "class_ptr[%zd:%zd] is not a range of class_hash", i, i + 2);
            goto done;
        }
        if (i == 0 || tag[i] == text_tag) continue;
        double sum = 0.0;
        for (int32_t k = ptr[i]; k < ptr[i + 1]; k++) sum += (double)hash[k];
        slot[2 * i] = group_slot(shapes, size - 1, parent[i], tag[i], sum, 1);
        slot[2 * i + 1] = group_slot(tags, size - 1, parent[i], tag[i], 0.0, 0);
        shapes[slot[2 * i]].count++;
        tags[slot[2 * i + 1]].count++;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int counted = i != 0 && tag[i] != text_tag;
        same_shape[i] = counted ? (double)(shapes[slot[2 * i]].count - 1) : 0.0;
        same_tag[i] = counted ? (double)(tags[slot[2 * i + 1]].count - 1) : 0.0;
    }
    result = Py_None;
done:
    PyMem_Free(shapes);
    PyMem_Free(tags);
    PyMem_Free(slot);
    for (int k = 0; k < held; k++) PyBuffer_Release(&v[k]);
    Py_XINCREF(result);
    return result;
}

/* owner_hints(parent int32[n], hints uint32[n], owner int64[b], near_levels, far_levels,
 *             near uint32[b], far uint32[b]): features.block_features's class/id hints, the
 * bits of each owner and its ancestors up to near_levels (far_levels) above it, BODY (node
 * 0) never counting; the walk stays at BODY once there, as the reference's does. */
static PyObject *owner_hints(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *parent_o, *hints_o, *owner_o, *near_o, *far_o;
    int near_levels, far_levels;
    if (!PyArg_ParseTuple(args, "OOOiiOO", &parent_o, &hints_o, &owner_o, &near_levels, &far_levels,
                          &near_o, &far_o))
        return NULL;
    Py_buffer v[5];
    int held = 0;
    PyObject *result = NULL;
    Py_ssize_t n = 0, nb = 0;
    if (get_array(parent_o, &v[held], 4, -1, 0, "parent") < 0) goto done;
    n = v[held++].len / 4;
    if (get_array(hints_o, &v[held], 4, n, 0, "hints") < 0) goto done;
    held++;
    if (get_array(owner_o, &v[held], 8, -1, 0, "owner") < 0) goto done;
    nb = v[held++].len / 8;
    if (get_array(near_o, &v[held], 4, nb, 1, "near") < 0) goto done;
    held++;
    if (get_array(far_o, &v[held], 4, nb, 1, "far") < 0) goto done;
    held++;
    const int32_t *parent = v[0].buf;
    const uint32_t *hints = v[1].buf;
    const int64_t *owner = v[2].buf;
    uint32_t *near = v[3].buf, *far = v[4].buf;
    for (Py_ssize_t b = 0; b < nb; b++) {
        int64_t a = owner[b];
        if (a < 0 || a >= n) {
            PyErr_Format(PyExc_ValueError, "owner[%zd] = %lld is not a node of the page", b, (long long)a);
            goto done;
        }
        uint32_t near_bits = 0, far_bits = 0;
        for (int level = 0; level <= far_levels; level++) {
            uint32_t bits = a > 0 ? hints[a] : 0;
            far_bits |= bits;
            if (level <= near_levels) near_bits |= bits;
            a = parent[a] > 0 ? parent[a] : 0;
        }
        near[b] = near_bits;
        far[b] = far_bits;
    }
    result = Py_None;
done:
    for (int k = 0; k < held; k++) PyBuffer_Release(&v[k]);
    Py_XINCREF(result);
    return result;
}

/* structure_columns(parent, tag, flags, hints, depth, child_count, words, chars, end [int32 /
 *     uint16 / uint32 per node], links_below, elements_below, words_below [int64 per node],
 *     same_shape, same_tag [float64 per node], owner, text_nodes, ptr, block_words [int64],
 *     group [int8], is_instance [bool] of the blocks, heading float64[K], sibling_tables
 *     bool[S, K], consts (f_in_link, hint_hidden, a_tag, text_tag), region_levels int64[R],
 *     shape_levels, out float64[blocks, S_FIXED + S + R], up int64[L + 1, blocks]):
 * block_features's columns of the block's owner and its place in the page and among its
 * neighbours (features._structure_python is the reference), as raw values: the columns
 * named *_log hold the value features.py then takes log1p of, all at once with numpy, so
 * those are numpy's own logarithms. Everything else is an integer, a comparison, or one
 * IEEE division of two doubles the reference divides too; sums over a block's text nodes
 * are integer-valued doubles, exact in any order. `up` gets the owner's ancestors level by
 * level (the root stays the root), which the site columns read as well. */
/* A tag id as page.has_tag looks it up in a table of `size` entries (np.take, mode "clip"). */
static inline Py_ssize_t clip_tag(int32_t tag, Py_ssize_t size) {
    return tag < 0 ? 0 : tag >= size ? size - 1 : tag;
}

enum {
    S_WORDS_LOG, S_CHARS_LOG, S_MEAN_WORD_LEN, S_HEADING_LEVEL, S_IS_INSTANCE, S_LINK_CHAR_SHARE,
    S_LINKS_IN_OWNER_LOG, S_IS_DESC_A, S_IS_LINK, S_HAS_CHILDREN, S_CHILD_ELEMENTS_LOG, S_SIBLINGS_LOG,
    S_DISTANCE_TO_ROOT, S_DOC_DOM_DEPTH, S_DEPTH_RATIO, S_TEXT_DENSITY_LOG, S_OWNER_WORDS_SHARE,
    S_NORMALIZED_TOP, S_NORMALIZED_BOTTOM, S_IS_UPPERMOST, S_IS_BOTTOMMOST, S_BLOCK_POSITION, S_INVISIBLE,
    S_PREV_WORDS_LOG, S_NEXT_WORDS_LOG, S_PREV_LINK_SHARE, S_NEXT_LINK_SHARE, S_PREV_SAME_GROUP,
    S_NEXT_SAME_GROUP, S_SAME_SHAPE_SIBLINGS_LOG, S_SAME_SHAPE_MAX_LOG, S_SAME_TAG_SIBLINGS_LOG,
    S_FIXED   /* then one column per sibling table, then one per region level */
};

static PyObject *structure_columns(PyObject *self, PyObject *args) {
    (void)self;
    enum { N_ARRAYS = 25 };
    PyObject *o[N_ARRAYS];
    int f_in_link, a_tag, text_tag, shape_levels;
    unsigned long hint_hidden;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOOOOOOOOO(ikii)OiOO", &o[0], &o[1], &o[2], &o[3], &o[4],
                          &o[5], &o[6], &o[7], &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &o[14],
                          &o[15], &o[16], &o[17], &o[18], &o[19], &o[20], &o[21], &f_in_link,
                          &hint_hidden, &a_tag, &text_tag, &o[22], &shape_levels, &o[23], &o[24]))
        return NULL;
    /* Item sizes, and -1: any length, 0: the page's length, -2: the blocks' count. */
    static const Py_ssize_t item[N_ARRAYS] = {4, 4, 2, 4, 4, 4, 4, 4, 4, 8, 8, 8, 8, 8,
                                              8, 8, 8, 8, 1, 1, 8, 1, 8, 8, 8};
    static const Py_ssize_t length[N_ARRAYS] = {-1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                                -1, -1, -1, -2, -2, -2, -1, -1, -1, -1, -1};
    static const char *names[N_ARRAYS] = {
        "parent", "tag", "flags", "hints", "depth", "child_count", "words", "chars", "end",
        "links_below", "elements_below", "words_below", "same_shape", "same_tag", "owner",
        "text_nodes", "ptr", "block_words", "group", "is_instance", "heading", "sibling_tables",
        "region_levels", "out", "up"};
    Py_buffer v[N_ARRAYS];
    int held = 0;
    PyObject *result = NULL;
    int64_t *child_el = NULL, *prose_prefix = NULL, *per_parent = NULL;
    uint8_t *hidden = NULL;
    Py_ssize_t n = 0, nb = 0;
    for (; held < N_ARRAYS; held++) {
        Py_ssize_t want = length[held] == 0 ? n : length[held] == -2 ? nb : -1;
        if (get_array(o[held], &v[held], item[held], want, held == 23 || held == 24, names[held]) < 0) goto done;
        if (held == 0) n = v[0].len / 4;
        if (held == 14) nb = v[14].len / 8;
    }
    const int32_t *parent = v[0].buf, *tag = v[1].buf, *depth = v[4].buf, *child_count = v[5].buf,
                  *words = v[6].buf, *chars = v[7].buf, *end = v[8].buf;
    const uint16_t *flags = v[2].buf;
    const uint32_t *hints = v[3].buf;
    const int64_t *links_below = v[9].buf, *elements_below = v[10].buf, *words_below = v[11].buf;
    const double *same_shape = v[12].buf, *same_tag = v[13].buf;
    const int64_t *owner = v[14].buf, *text_nodes = v[15].buf, *ptr = v[16].buf, *block_words = v[17].buf;
    const int8_t *group = v[18].buf;
    const uint8_t *is_instance = v[19].buf;
    const double *heading = v[20].buf;
    const uint8_t *sib = v[21].buf;
    const int64_t *region_levels = v[22].buf;
    double *out = v[23].buf;
    int64_t *up = v[24].buf;
    Py_ssize_t n_text = v[15].len / 8, n_heading = v[20].len / 8, n_regions = v[22].len / 8;
    Py_ssize_t n_sib = n_heading > 0 ? v[21].len / n_heading : 0;
    Py_ssize_t width = S_FIXED + n_sib + n_regions;
    Py_ssize_t levels = shape_levels;
    for (Py_ssize_t k = 0; k < n_regions; k++) if (region_levels[k] > levels) levels = region_levels[k];
    if (n_heading == 0 || v[21].len != n_sib * n_heading || v[16].len != (nb + 1) * 8
        || v[23].len != nb * width * 8 || v[24].len != (levels + 1) * nb * 8 || shape_levels < 0) {
        PyErr_SetString(PyExc_ValueError, "structure_columns: tables, ptr, out or up do not fit the blocks");
        goto done;
    }
    for (Py_ssize_t k = 0; k < n_regions; k++)
        if (region_levels[k] < 0) { PyErr_SetString(PyExc_ValueError, "structure_columns: negative level"); goto done; }
    if (nb == 0) { result = Py_None; goto done; }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (parent[i] >= i || (i > 0 && parent[i] < 0) || end[i] <= i || end[i] > n) {
            PyErr_Format(PyExc_ValueError, "structure_columns: node %zd is not in preorder", i);
            goto done;
        }
    }
    for (Py_ssize_t b = 0; b < nb; b++)
        if (owner[b] < 0 || owner[b] >= n || ptr[b] < 0 || ptr[b] >= n_text || ptr[b + 1] < ptr[b]
            || ptr[b + 1] > n_text) {
            PyErr_Format(PyExc_ValueError, "structure_columns: block %zd does not fit the page", b);
            goto done;
        }
    for (Py_ssize_t t = 0; t < n_text; t++)
        if (text_nodes[t] < 0 || text_nodes[t] >= n) {
            PyErr_SetString(PyExc_ValueError, "structure_columns: a text node outside the page");
            goto done;
        }

    /* Per node: element children (np.bincount of the elements' parents), same-table children
     * per sibling table, whether the node or an ancestor below BODY is hidden, and the prefix
     * sums of prose words (text outside links) in preorder. */
    child_el = calloc((size_t)n, sizeof(int64_t));
    per_parent = calloc((size_t)(n * (n_sib ? n_sib : 1)), sizeof(int64_t));
    prose_prefix = malloc((size_t)(n + 1) * sizeof(int64_t));
    hidden = malloc((size_t)n);
    if (!child_el || !per_parent || !prose_prefix || !hidden) { PyErr_NoMemory(); goto done; }
    prose_prefix[0] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int is_text = tag[i] == text_tag;
        Py_ssize_t t = clip_tag(tag[i], n_heading);
        if (i > 0) {
            if (!is_text) child_el[parent[i]]++;
            for (Py_ssize_t s = 0; s < n_sib; s++) per_parent[s * n + parent[i]] += sib[s * n_heading + t];
        }
        hidden[i] = i > 0 && ((hints[i] & hint_hidden) || hidden[parent[i]]);
        prose_prefix[i + 1] = prose_prefix[i] + (is_text && !(flags[i] & f_in_link) ? words[i] : 0);
    }
    int64_t max_depth = 0, page_words_i = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (depth[i] > max_depth || i == 0) max_depth = depth[i];
        page_words_i += words[i];
    }
    double doc_depth = (double)max_depth != 0.0 ? (double)max_depth : 1.0;
    double page_words = (double)page_words_i != 0.0 ? (double)page_words_i : 1.0;
    double prose_total = (double)(prose_prefix[end[0]] - prose_prefix[0]);
    if (prose_total == 0.0) prose_total = 1.0;

    double before = 0.0, prev_words = 0.0, prev_share = 0.0;
    for (Py_ssize_t b = 0; b < nb; b++) {
        double *row = out + b * width;
        int64_t a = owner[b];
        /* The block's characters and its characters inside links, as np.add.reduceat sums
         * them: its text nodes, or where a block has none, the one at its start. */
        double ch = 0.0, link_ch = 0.0;
        Py_ssize_t t0 = ptr[b], t1 = b + 1 < nb ? ptr[b + 1] : n_text;
        if (t1 <= t0) t1 = t0 + 1;
        for (Py_ssize_t t = t0; t < t1; t++) {
            int64_t node = text_nodes[t];
            ch += (double)chars[node];
            if (flags[node] & f_in_link) link_ch += (double)chars[node];
        }
        double w = (double)block_words[b];
        double share = link_ch / (ch > 1.0 ? ch : 1.0);
        Py_ssize_t at = clip_tag(tag[a], n_heading);
        int64_t nxt = a + 1 < n - 1 ? a + 1 : n - 1;
        int64_t pa = parent[a] > 0 ? parent[a] : 0;
        int64_t siblings = child_count[pa] - 1 > 0 ? child_count[pa] - 1 : 0;
        row[S_WORDS_LOG] = w;
        row[S_CHARS_LOG] = ch;
        row[S_MEAN_WORD_LEN] = ch / (w > 1.0 ? w : 1.0);
        row[S_HEADING_LEVEL] = heading[at];
        row[S_IS_INSTANCE] = is_instance[b] ? 1.0 : 0.0;
        row[S_LINK_CHAR_SHARE] = share;
        row[S_LINKS_IN_OWNER_LOG] = (double)links_below[a];
        row[S_IS_DESC_A] = ((flags[a] & f_in_link) || tag[a] == a_tag) ? 1.0 : 0.0;
        row[S_IS_LINK] = (child_count[a] == 1 && tag[nxt] == a_tag && nxt > a) ? 1.0 : 0.0;
        row[S_HAS_CHILDREN] = child_el[a] > 0 ? 1.0 : 0.0;
        row[S_CHILD_ELEMENTS_LOG] = (double)child_el[a];
        row[S_SIBLINGS_LOG] = (double)siblings;
        row[S_DISTANCE_TO_ROOT] = (double)depth[a];
        row[S_DOC_DOM_DEPTH] = doc_depth;
        row[S_DEPTH_RATIO] = (double)depth[a] / doc_depth;
        int64_t el = elements_below[a] > 1 ? elements_below[a] : 1;
        row[S_TEXT_DENSITY_LOG] = (double)words_below[a] / (double)el;
        row[S_OWNER_WORDS_SHARE] = (double)words_below[a] / page_words;
        row[S_NORMALIZED_TOP] = before / page_words;
        row[S_NORMALIZED_BOTTOM] = (before + w) / page_words;
        row[S_IS_UPPERMOST] = row[S_NORMALIZED_TOP] < 0.03 ? 1.0 : 0.0;
        row[S_IS_BOTTOMMOST] = row[S_NORMALIZED_BOTTOM] > 0.97 ? 1.0 : 0.0;
        row[S_BLOCK_POSITION] = (double)b / (double)(nb - 1 > 1 ? nb - 1 : 1);
        row[S_INVISIBLE] = hidden[a] ? 1.0 : 0.0;
        row[S_PREV_WORDS_LOG] = b > 0 ? prev_words : 0.0;
        row[S_NEXT_WORDS_LOG] = 0.0;
        row[S_PREV_LINK_SHARE] = b > 0 ? prev_share : 0.0;
        row[S_NEXT_LINK_SHARE] = 0.0;
        row[S_PREV_SAME_GROUP] = b > 0 && group[b] == group[b - 1] ? 1.0 : 0.0;
        row[S_NEXT_SAME_GROUP] = b + 1 < nb && group[b] == group[b + 1] ? 1.0 : 0.0;
        if (b > 0) {
            out[(b - 1) * width + S_NEXT_WORDS_LOG] = w;
            out[(b - 1) * width + S_NEXT_LINK_SHARE] = share;
        }
        for (Py_ssize_t s = 0; s < n_sib; s++)
            row[S_FIXED + s] = per_parent[s * n + pa] - sib[s * n_heading + at] > 0 ? 1.0 : 0.0;
        /* The owner's ancestors, one level at a time; the root stays the root. */
        up[b] = a;
        for (Py_ssize_t k = 1; k <= levels; k++) {
            int64_t below = up[(k - 1) * nb + b];
            up[k * nb + b] = parent[below] >= 0 ? parent[below] : below;
        }
        for (Py_ssize_t r = 0; r < n_regions; r++) {
            int64_t u = up[region_levels[r] * nb + b];
            row[S_FIXED + n_sib + r] = (double)(prose_prefix[end[u]] - prose_prefix[u]) / prose_total;
        }
        double best = same_shape[a];
        for (Py_ssize_t k = 1; k <= shape_levels; k++) {
            double other = same_shape[up[k * nb + b]];
            if (other > best) best = other;
        }
        row[S_SAME_SHAPE_SIBLINGS_LOG] = same_shape[a];
        row[S_SAME_SHAPE_MAX_LOG] = best;
        row[S_SAME_TAG_SIBLINGS_LOG] = same_tag[a];
        before += w;
        prev_words = w;
        prev_share = share;
    }
    result = Py_None;
done:
    free(child_el);
    free(per_parent);
    free(prose_prefix);
    free(hidden);
    for (int k = 0; k < held; k++) PyBuffer_Release(&v[k]);
    Py_XINCREF(result);
    return result;
}

/* role_nodes(parent int32[n], tag int32[n], end int32[n], context int64[K], contains int64[K],
 *            first int64[nb], owner int64[nb], context_out int64[nb], contains_out int64[nb, 2]):
 * features._role_columns's element columns. context_out[b]: the OR of context[tag] (one bit
 * per _CONTEXT_TAGS entry) over the block's first text node and its ancestors, the elements
 * whose preorder range [s, end[s]) holds it; contains_out[b, j]: the nodes of the owner's
 * range [owner, end[owner]) whose tag has bit j in `contains` (bit 0 <time>, bit 1 an image).
 * Tags are looked up as page.has_tag does (clipped to the table). */
static PyObject *role_nodes(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[9];
    if (!PyArg_ParseTuple(args, "OOOOOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8]))
        return NULL;
    Py_buffer v[9];
    int held = 0;
    PyObject *result = NULL;
    int64_t *acc = NULL, *below = NULL;
    Py_ssize_t n = 0, k = 0, nb = 0;
    if (get_array(o[0], &v[held], 4, -1, 0, "parent") < 0) goto done;
    n = v[held++].len / 4;
    if (get_array(o[1], &v[held], 4, n, 0, "tag") < 0) goto done;
    held++;
    if (get_array(o[2], &v[held], 4, n, 0, "end") < 0) goto done;
    held++;
    if (get_array(o[3], &v[held], 8, -1, 0, "context") < 0) goto done;
    k = v[held++].len / 8;
    if (get_array(o[4], &v[held], 8, k, 0, "contains") < 0) goto done;
    held++;
    if (get_array(o[5], &v[held], 8, -1, 0, "first") < 0) goto done;
    nb = v[held++].len / 8;
    if (get_array(o[6], &v[held], 8, nb, 0, "owner") < 0) goto done;
    held++;
    if (get_array(o[7], &v[held], 8, nb, 1, "context_out") < 0) goto done;
    held++;
    if (get_array(o[8], &v[held], 8, 2 * nb, 1, "contains_out") < 0) goto done;
    held++;
    if (k == 0) {
        PyErr_SetString(PyExc_ValueError, "role_nodes: empty tag tables");
        goto done;
    }
    const int32_t *parent = v[0].buf, *tag = v[1].buf, *end = v[2].buf;
    const int64_t *context = v[3].buf, *contains = v[4].buf, *first = v[5].buf, *owner = v[6].buf;
    int64_t *context_out = v[7].buf, *contains_out = v[8].buf;
    acc = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    /* per contains bit, the marked nodes before each preorder position (n + 1 entries) */
    below = PyMem_Malloc((size_t)(2 * (n + 1)) * sizeof(int64_t));
    if (acc == NULL || below == NULL) { PyErr_NoMemory(); goto done; }
    below[0] = below[n + 1] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t p = parent[i];
        if (p >= i || (p < 0 && i > 0) || end[i] <= i || end[i] > n) {
            PyErr_SetString(PyExc_ValueError, "role_nodes: parent/end are not a preorder tree");
            goto done;
        }
        int64_t t = contains[clip_tag(tag[i], k)];
        acc[i] = context[clip_tag(tag[i], k)] | (p >= 0 ? acc[p] : 0);
        below[i + 1] = below[i] + (t & 1);
        below[n + 1 + i + 1] = below[n + 1 + i] + ((t >> 1) & 1);
    }
    for (Py_ssize_t b = 0; b < nb; b++) {
        int64_t f = first[b], w = owner[b];
        if (f < 0 || f >= n || w < 0 || w >= n) {
            PyErr_SetString(PyExc_ValueError, "role_nodes: a block's node is outside the page");
            goto done;
        }
        context_out[b] = acc[f];
        contains_out[2 * b] = below[end[w]] - below[w];
        contains_out[2 * b + 1] = below[n + 1 + end[w]] - below[n + 1 + w];
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_Free(acc);
    PyMem_Free(below);
    for (int i = 0; i < held; i++) PyBuffer_Release(&v[i]);
    return result;
}

static int in_sorted(const int64_t *keys, Py_ssize_t n, int64_t key) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < key) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && keys[lo] == key;
}

/* Whether the first three code points of `t` (A-Z lowered, '\n' past its end) could begin one
 * of features._ROLE_START_CUES: see role_text. */
static int role_head(const Text *t, const int64_t *k3, Py_ssize_t n3, const int64_t *k2, Py_ssize_t n2) {
    int64_t c3[3];
    for (int j = 0; j < 3; j++) {
        Py_UCS4 c = j < t->n ? at(t, j) : '\n';
        c3[j] = (int64_t)(c >= 'A' && c <= 'Z' ? c + 32 : c);
    }
    int64_t head = (c3[0] << 42) | (c3[1] << 21) | c3[2];
    int64_t c0 = c3[0];
    return in_sorted(k3, n3, head) || in_sorted(k2, n2, head >> 21) || (c0 >= '0' && c0 <= '9')
           || c0 == 0xA9 || c0 == ' ' || c0 == '\t';
}

/* role_text's three values of one text `t`, read as it is (not lowered), into row[0..2]. */
static void role_counts(const Text *t, const int64_t *k3, Py_ssize_t n3, const int64_t *k2, Py_ssize_t n2,
                        int64_t *row) {
    int64_t upper = 0, letters = 0;
    for (Py_ssize_t i = 0; i < t->n; i++) {
        Py_UCS4 c = at(t, i);
        int up = c >= 'A' && c <= 'Z';
        upper += up;
        letters += up || (c >= 'a' && c <= 'z');
    }
    row[0] = upper;
    row[1] = letters;
    row[2] = role_head(t, k3, n3, k2, n2);
}

/* role_text(texts, heads3 int64 sorted, heads2 int64 sorted, out int64[nb, 3]): per block text,
 * its ASCII upper-case letters, its ASCII letters, and whether its start could begin one of
 * features._ROLE_START_CUES (its first three code points, A-Z lowered, form a key of heads3,
 * or the first two one of heads2, or it starts with an ASCII digit, ©, a space or a tab).
 * The reference reads the first three code points of the newline-joined page text, so past a
 * text's end it sees '\n' (or the padding 0 past the last text, then the next text's first
 * characters): no head holds '\n' or 0 (features.py checks), so reading '\n' there decides the
 * same. */
static PyObject *role_text(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *texts, *h3_o, *h2_o, *out_o;
    if (!PyArg_ParseTuple(args, "O!OOO", &PyList_Type, &texts, &h3_o, &h2_o, &out_o)) return NULL;
    Py_ssize_t nb = PyList_GET_SIZE(texts);
    Py_buffer h3, h2, view;
    if (get_array(h3_o, &h3, 8, -1, 0, "heads3") < 0) return NULL;
    if (get_array(h2_o, &h2, 8, -1, 0, "heads2") < 0) { PyBuffer_Release(&h3); return NULL; }
    if (writable_int64(out_o, &view, nb * 3, "out") < 0) {
        PyBuffer_Release(&h3);
        PyBuffer_Release(&h2);
        return NULL;
    }
    const int64_t *k3 = h3.buf, *k2 = h2.buf;
    Py_ssize_t n3 = h3.len / 8, n2 = h2.len / 8;
    int64_t *row = view.buf;
    Text t = {0};
    PyObject *result = NULL;
    for (Py_ssize_t b = 0; b < nb; b++, row += 3) {
        if (as_text(PyList_GET_ITEM(texts, b), &t) < 0) goto done;
        role_counts(&t, k3, n3, k2, n2, row);
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_Free(t.own);
    PyBuffer_Release(&h3);
    PyBuffer_Release(&h2);
    PyBuffer_Release(&view);
    return result;
}

static inline Py_ssize_t pair_key(Py_UCS4 a, Py_UCS4 b) { return (Py_ssize_t)(((a << 5) ^ b) & 255); }

/* The strings count_strings looks for, by their first two characters (one character: by that
 * one), each bucket a chain; each string's count is its own, so the order they are tried in
 * does not matter. */
typedef struct {
    Py_ssize_t m;
    int has_empty;      /* some string is empty (each text then adds to its count) */
    Text *pat;
    Py_ssize_t *next, *chain;
    Py_ssize_t bucket[256 + 64];
    /* start[c][d]: some string may start at a position holding the ASCII characters c, d
     * (d 0 past the text's end): one lookup turns most positions away. */
    uint8_t start[128][128];
} Needles;

static void needles_free(Needles *nd) {
    if (nd->pat != NULL)
        for (Py_ssize_t j = 0; j < nd->m; j++) PyMem_Free(nd->pat[j].own);
    PyMem_Free(nd->pat);
    PyMem_Free(nd->next);
    PyMem_Free(nd->chain);
}

static int needles_init(Needles *nd, PyObject *strings) {
    Py_ssize_t m = nd->m = PyTuple_GET_SIZE(strings);
    nd->pat = PyMem_Calloc((size_t)(m > 0 ? m : 1), sizeof(Text));
    nd->next = PyMem_Calloc((size_t)(m > 0 ? m : 1), sizeof(Py_ssize_t));
    nd->chain = PyMem_Malloc((size_t)(m > 0 ? m : 1) * sizeof(Py_ssize_t));
    if (nd->pat == NULL || nd->next == NULL || nd->chain == NULL) { PyErr_NoMemory(); return -1; }
    for (int j = 0; j < 256 + 64; j++) nd->bucket[j] = -1;
    for (Py_ssize_t j = 0; j < m; j++) {
        if (as_text(PyTuple_GET_ITEM(strings, j), &nd->pat[j]) < 0) return -1;
        if (nd->pat[j].n == 0) nd->has_empty = 1;
    }
    for (Py_ssize_t j = 0; j < m; j++) {
        const Text *q = &nd->pat[j];
        if (q->n == 1 && q->s[0] < 128) memset(nd->start[q->s[0]], 1, 128);
        if (q->n >= 2 && q->s[0] < 128 && q->s[1] < 128) nd->start[q->s[0]][q->s[1]] = 1;
    }
    for (Py_ssize_t j = 0; j < m; j++) {
        nd->chain[j] = -1;
        if (nd->pat[j].n == 0) continue;
        Py_ssize_t key = nd->pat[j].n == 1 ? 256 + (nd->pat[j].s[0] & 63) : pair_key(nd->pat[j].s[0], nd->pat[j].s[1]);
        nd->chain[j] = nd->bucket[key];
        nd->bucket[key] = j;
    }
    return 0;
}

/* Adds t.count(s) of every string s to out: occurrences found left to right, each search
 * resuming after the one found, so occurrences of one string never overlap (an empty string
 * counts len(t) + 1). One pass over t for all the strings: at each position, the strings
 * starting with its characters whose previous occurrence has ended are tried there. */
static void needles_count(Needles *nd, const Text *t, int64_t *out, Py_ssize_t base) {
    /* next[j]: where string j's last occurrence ended, counted from the start of the first
     * text of the call (`base`: this text's start there, past every earlier text's end), so
     * that a new text needs no reset. */
    const Text *pat = nd->pat;
    Py_ssize_t *next = nd->next, *chain = nd->chain;
    if (nd->has_empty)
        for (Py_ssize_t j = 0; j < nd->m; j++)
            if (pat[j].n == 0) out[j] += t->n + 1;
    for (Py_ssize_t i = 0; i < t->n; i++) {
        Py_UCS4 c = at(t, i), d = i + 1 < t->n ? at(t, i + 1) : 0;
        if (c < 128 && d < 128 && !nd->start[c][d]) continue;
        Py_ssize_t first = nd->bucket[256 + (c & 63)];
        Py_ssize_t second = i + 1 < t->n ? nd->bucket[pair_key(c, at(t, i + 1))] : -1;
        for (int pass = 0; pass < 2; pass++) {
            for (Py_ssize_t j = pass ? second : first; j >= 0; j = chain[j]) {
                const Text *q = &pat[j];
                if (base + i < next[j] || q->s[0] != c || i + q->n > t->n) continue;
                Py_ssize_t r = 1;
                while (r < q->n && q->s[r] == at(t, i + r)) r++;
                if (r == q->n) {
                    out[j]++;
                    next[j] = base + i + q->n;
                }
            }
        }
    }
}

/* count_strings(text, strings, out int64[len(strings)]): text.count(s) of every s, as
 * str.count counts (needles_count). */
static PyObject *count_strings(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text, *strings, *out_o;
    if (!PyArg_ParseTuple(args, "UO!O", &text, &PyTuple_Type, &strings, &out_o)) return NULL;
    Py_buffer view;
    if (writable_int64(out_o, &view, PyTuple_GET_SIZE(strings), "out") < 0) return NULL;
    int64_t *out = view.buf;
    PyObject *result = NULL;
    Text t = {0};
    Needles nd = {0};
    if (needles_init(&nd, strings) < 0) goto done;
    if (as_text(text, &t) < 0) goto done;
    for (Py_ssize_t j = 0; j < nd.m; j++) out[j] = 0;
    needles_count(&nd, &t, out, 0);
    result = Py_None;
    Py_INCREF(result);
done:
    needles_free(&nd);
    PyMem_Free(t.own);
    PyBuffer_Release(&view);
    return result;
}

/* The strings are the page type's cue strings, one tuple for every page: their table is made
 * for the first call and kept, with the tuple it was made from. */
static PyObject *kept_strings = NULL;
static Needles kept = {0};

/* The kept table of `strings` (made again for another tuple), its counts in out (one per
 * string) and its occurrence ends reset for a new page; NULL with an exception for strings
 * count_lowered cannot count text by text. */
static Needles *lowered_needles(PyObject *strings, int64_t *out, const char *who) {
    if (strings != kept_strings) {
        needles_free(&kept);
        memset(&kept, 0, sizeof kept);
        Py_CLEAR(kept_strings);
        if (needles_init(&kept, strings) < 0) {
            needles_free(&kept);
            memset(&kept, 0, sizeof kept);
            return NULL;
        }
        Py_INCREF(strings);
        kept_strings = strings;
    }
    Needles *nd = &kept;
    for (Py_ssize_t j = 0; j < nd->m; j++) {
        out[j] = 0;
        nd->next[j] = 0;
        const Text *q = &nd->pat[j];
        int bad = q->n == 0;
        for (Py_ssize_t r = 0; r < q->n && !bad; r++) bad = q->s[r] == '\n' || q->s[r] == 0x3A3 || q->s[r] == 0x3C3 || q->s[r] == 0x3C2;
        if (bad) {
            PyErr_Format(PyExc_ValueError, "%s: an empty string, or one holding a newline or a sigma", who);
            return NULL;
        }
    }
    return nd;
}

/* count_lowered(texts, blocks int64[k], strings, out int64[len(strings)]):
 * "\n".join(texts[b] for b in blocks).lower().count(s) of every s, for strings that hold no
 * '\n' and no empty one: then no occurrence spans two texts, so the counts are the sums of each
 * text's own, and a text lowered alone is lowered as in the joined text (the one rule of
 * str.lower that reads a neighbour, Greek final sigma, sees the '\n' as it sees the text's
 * end, and no string holds a sigma that it could decide). */
static PyObject *count_lowered(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *texts, *blocks_o, *strings, *out_o;
    if (!PyArg_ParseTuple(args, "O!OO!O", &PyList_Type, &texts, &blocks_o, &PyTuple_Type, &strings, &out_o))
        return NULL;
    Py_buffer bv, view;
    if (get_array(blocks_o, &bv, 8, -1, 0, "blocks") < 0) return NULL;
    if (writable_int64(out_o, &view, PyTuple_GET_SIZE(strings), "out") < 0) { PyBuffer_Release(&bv); return NULL; }
    const int64_t *blocks = bv.buf;
    int64_t *out = view.buf;
    Py_ssize_t k = bv.len / 8, nb = PyList_GET_SIZE(texts);
    PyObject *result = NULL;
    Text l = {0};
    Needles *nd = lowered_needles(strings, out, "count_lowered");
    if (nd == NULL) goto done;
    Py_ssize_t base = 0;
    for (Py_ssize_t i = 0; i < k; i++) {
        if (blocks[i] < 0 || blocks[i] >= nb) {
            PyErr_SetString(PyExc_ValueError, "count_lowered: a block outside the texts");
            goto done;
        }
        PyObject *low;
        if (lower_text(PyList_GET_ITEM(texts, blocks[i]), &l, &low) < 0) { Py_XDECREF(low); goto done; }
        needles_count(nd, &l, out, base);
        base += l.n + 1;
        Py_XDECREF(low);
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_Free(l.own);
    PyBuffer_Release(&bv);
    PyBuffer_Release(&view);
    return result;
}

/* features._ROLE_ANY_CUES, alternative by alternative in the order of the regular expression
 * features._role_any builds from them: the credit names, then the calls to subscribe or
 * share, then the reading times; "(?:a|b)" written out as two alternatives in that order,
 * `right` marking a trailing \b. */
typedef struct { const char *text; int group, right; } Cue;
static const Cue role_cues[] = {
    {"getty images", 0, 0}, {"reuters", 0, 0}, {"afp", 0, 1}, {"ap photo", 0, 0}, {"dpa", 0, 1},
    {"shutterstock", 0, 0}, {"istock", 0, 0}, {"imago", 0, 1},
    {"newsletter", 1, 0}, {"subscribe", 1, 0}, {"sign up", 1, 0}, {"abonnieren", 1, 0}, {"follow us", 1, 0},
    {"share this", 1, 0}, {"share on", 1, 0}, {"teilen", 1, 1}, {"download the app", 1, 0},
    {"download our app", 1, 0},
    {"min read", 2, 0}, {"mins read", 2, 0}, {"minute read", 2, 0}, {"minutes read", 2, 0}, {"min. read", 2, 0},
    {"minuten lesezeit", 2, 0}, {"lesezeit", 2, 0}, {"reading time", 2, 0},
};

#define N_ROLE_CUES ((int)(sizeof role_cues / sizeof role_cues[0]))
/* Per ASCII character, the cues starting with it in role_cues's order, -1 ending the list
 * (filled once, at import). */
static int8_t role_cues_by_start[128][N_ROLE_CUES + 1];
/* role_cue_slot[c][d], then role_slot_third[slot][e]: some cue begins with the ASCII characters
 * c, d, e. Every cue is ASCII and at least three characters long, so no cue can begin at a
 * position whose three characters are not marked (or that holds a wider character, or is one
 * of the text's last two): two lookups turn nearly every position away before any cue is
 * tried, with no branch the processor mispredicts on common letter pairs. */
static uint8_t role_cue_slot[128][128];
static uint8_t role_slot_third[N_ROLE_CUES + 1][128];

static void role_cues_init(void) {
    for (int c = 0; c < 128; c++) {
        int used = 0;
        for (int k = 0; k < N_ROLE_CUES; k++)
            if ((unsigned char)role_cues[k].text[0] == c) role_cues_by_start[c][used++] = (int8_t)k;
        role_cues_by_start[c][used] = -1;
    }
    int slots = 0;
    for (int k = 0; k < N_ROLE_CUES; k++) {
        const unsigned char *q = (const unsigned char *)role_cues[k].text;
        if (role_cue_slot[q[0]][q[1]] == 0) role_cue_slot[q[0]][q[1]] = (uint8_t)++slots;
        role_slot_third[role_cue_slot[q[0]][q[1]]][q[2]] = 1;
    }
}

/* role_any's bits of one lower-cased text `l`. */
static int64_t role_any_bits(const Text *l) {
    int64_t bits = 0;
    const Py_UCS4 *s = l->s;
    for (Py_ssize_t p = 0; p + 2 < l->n;) {
        Py_UCS4 c = s[p], d = s[p + 1], f = s[p + 2];
        if ((c | d | f) >= 128 || !role_slot_third[role_cue_slot[c][d]][f]) {
            p++;
            continue;
        }
        Py_ssize_t e = -1;
        int group = 0;
        for (const int8_t *k = role_cues_by_start[c]; *k >= 0 && e < 0; k++) {
            e = lit(l, p, role_cues[*k].text, 0, role_cues[*k].right);
            group = role_cues[*k].group;
        }
        if (e > p) {
            bits |= (int64_t)1 << group;
            p = e;
        } else {
            p++;
        }
    }
    return bits;
}

/* role_any(texts, blocks int64[m], out int64[m]): for each listed block, bit g set when the
 * scan of features._role_any over its lower-cased text (str.lower, called) finds a match of
 * group g (0 credit, 1 subscribe, 2 reading_time). The scan is re's: the leftmost match
 * first, the alternatives tried in order at a position, resuming after a match; no cue holds
 * a '\n', so each block scanned alone finds what the reference's scan of the newline-joined
 * short blocks finds in it, a trailing \b at a block's end included. */
static PyObject *role_any(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *texts, *blocks_o, *out_o;
    if (!PyArg_ParseTuple(args, "O!OO", &PyList_Type, &texts, &blocks_o, &out_o)) return NULL;
    Py_buffer bv, view;
    if (get_array(blocks_o, &bv, 8, -1, 0, "blocks") < 0) return NULL;
    Py_ssize_t m = bv.len / 8, nb = PyList_GET_SIZE(texts);
    if (writable_int64(out_o, &view, m, "out") < 0) { PyBuffer_Release(&bv); return NULL; }
    const int64_t *blocks = bv.buf;
    int64_t *out = view.buf;
    PyObject *result = NULL;
    Text l = {0};
    for (Py_ssize_t i = 0; i < m; i++) {
        if (blocks[i] < 0 || blocks[i] >= nb) {
            PyErr_SetString(PyExc_ValueError, "role_any: a block outside the texts");
            goto done;
        }
        PyObject *low;
        if (lower_text(PyList_GET_ITEM(texts, blocks[i]), &l, &low) < 0) { Py_XDECREF(low); goto done; }
        out[i] = role_any_bits(&l);
        Py_XDECREF(low);
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_Free(l.own);
    PyBuffer_Release(&bv);
    PyBuffer_Release(&view);
    return result;
}

/* text_columns's counts (C_WORDS .. C_UPPER) and role_text's ASCII upper case and letters of
 * one ASCII text of n bytes, in one loop that also writes its lowered copy into `l` (str.lower
 * maps A-Z and nothing else of ASCII). Counting the lowered or the original character is the
 * same but for the upper first character, read from `from`. */
static int ascii_counts(const Py_UCS1 *from, Py_ssize_t n, Text *l, int64_t *row, int64_t *role) {
    if (text_room(l, n) < 0) return -1;
    Py_UCS4 *own = l->own;
    int64_t words = 0, punct = 0, sentences = 0, commas = 0, digits = 0, upper = 0, letters = 0;
    int after_space = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = from[i];
        unsigned up = c - 'A' < 26u;
        own[i] = c + (up << 5);
        upper += up;
        letters += up | (c - 'a' < 26u);
        unsigned k = ascii_class[c];
        int space = (k & K_SPACE) != 0;
        words += !space && after_space;
        after_space = space;
        digits += (k & K_DIGIT) != 0;
        if (k & K_PUNCT) {
            punct++;
            commas += (k & K_COMMA) != 0;
            if (k & K_END) {
                Py_UCS4 next = i + 1 < n ? from[i + 1] : '\n';
                sentences += next == ' ' || next == '\n';
            }
        }
    }
    l->s = own;
    l->n = n;
    row[C_WORDS] = words;
    row[C_PUNCT] = punct;
    row[C_SENTENCES] = sentences;
    row[C_COMMAS] = commas;
    row[C_DIGITS] = digits;
    row[C_LENGTH] = n;
    row[C_CLOSING] = n > 0 && is_closing(from[n - 1]);
    row[C_UPPER] = n > 0 && from[0] - 'A' < 26u;
    role[0] = upper;
    role[1] = letters;
    return 0;
}

/* text_role_columns(texts, words int64[nb], short_words, heads3, heads2, counts int64[nb, C_COUNT],
 *                   roles int64[nb, 4], cue_strings, cue_words, cues int64[len(cue_strings)]):
 * per block text, text_columns's counts and pattern bits, role_text's three values
 * (roles[b, 0..2]) and, for a text of at most short_words words (words[b]), role_any's bits
 * (roles[b, 3]; 0 for a longer one); and count_lowered's counts of cue_strings over the texts
 * of at most cue_words words (the page type's cues): block_features's text passes and the
 * page type's with each text read and lowered once instead of once per pass. Each value is the
 * one those functions give: an ASCII text is lowered and counted in one loop (ascii_counts),
 * any other counted as it is and lowered by str.lower. */
static PyObject *text_role_columns(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *texts, *words_o, *h3_o, *h2_o, *counts_o, *roles_o, *strings, *cues_o;
    long long short_words, cue_words;
    if (!PyArg_ParseTuple(args, "O!OLOOOOO!LO", &PyList_Type, &texts, &words_o, &short_words, &h3_o, &h2_o,
                          &counts_o, &roles_o, &PyTuple_Type, &strings, &cue_words, &cues_o))
        return NULL;
    Py_ssize_t nb = PyList_GET_SIZE(texts), base = 0;
    Py_buffer v[6];
    int held = 0;
    PyObject *result = NULL;
    Text t = {0}, l = {0};
    if (get_array(words_o, &v[held], 8, nb, 0, "words") < 0) goto done;
    held++;
    if (get_array(h3_o, &v[held], 8, -1, 0, "heads3") < 0) goto done;
    held++;
    if (get_array(h2_o, &v[held], 8, -1, 0, "heads2") < 0) goto done;
    held++;
    if (writable_int64(counts_o, &v[held], nb * C_COUNT, "counts") < 0) goto done;
    held++;
    if (writable_int64(roles_o, &v[held], nb * 4, "roles") < 0) goto done;
    held++;
    if (writable_int64(cues_o, &v[held], PyTuple_GET_SIZE(strings), "cues") < 0) goto done;
    held++;
    Needles *nd = lowered_needles(strings, v[5].buf, "text_role_columns");
    if (nd == NULL) goto done;
    const int64_t *words = v[0].buf, *k3 = v[1].buf, *k2 = v[2].buf;
    Py_ssize_t n3 = v[1].len / 8, n2 = v[2].len / 8;
    int64_t *row = v[3].buf, *role = v[4].buf;
    for (Py_ssize_t b = 0; b < nb; b++, row += C_COUNT, role += 4) {
        PyObject *s = PyList_GET_ITEM(texts, b), *low = NULL;
        if (PyUnicode_Check(s) && PyUnicode_CheckExact(s) && PyUnicode_IS_ASCII(s)) {
            if (ascii_counts(PyUnicode_1BYTE_DATA(s), PyUnicode_GET_LENGTH(s), &l, row, role) < 0) goto done;
            role[2] = role_head(&l, k3, n3, k2, n2);     /* its A-Z lowered: the same head */
        } else {
            if (as_text(s, &t) < 0) goto done;
            text_counts(&t, row);
            role_counts(&t, k3, n3, k2, n2, role);
            if (lower_text(s, &l, &low) < 0) { Py_XDECREF(low); goto done; }
        }
        row[C_PATTERNS] = pattern_bits(&l);
        role[3] = words[b] <= short_words ? role_any_bits(&l) : 0;
        if (words[b] <= cue_words) {
            needles_count(nd, &l, v[5].buf, base);
            base += l.n + 1;
        }
        Py_XDECREF(low);
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_Free(t.own);
    PyMem_Free(l.own);
    for (int i = 0; i < held; i++) PyBuffer_Release(&v[i]);
    return result;
}

/* page_blocks(parent int32[n], tag int32[n], end int32[n], line int32[n], words int32[n],
 *             flags uint16[n], id_hash uint32[n], class_ptr int32[n+1], tag_bits int64[K],
 *             hidden_flag, text_nodes int64[n], ptr int64[n+1], owner int32[n], group int8[n],
 *             is_instance bool[n], block_words int64[n]) -> (text nodes, blocks):
 * blocks.page_blocks, the outputs written into the first entries of arrays of the page's
 * length. tag_bits per tag id (clipped as page.has_tag clips): bit 0 a content element, bit 1
 * an always-instance tag, bit 2 div/td/th, bit 3 block level, bits 8-15 the instance group.
 * - instances (blocks.instance_mask): the always-instance tags, and div/td/th with no content
 *   element inside their preorder range and no element three levels below them;
 * - each text node's owner: its parent's nearest instance, itself included (nearest_in_mask),
 *   else its nearest holder (a block-level element, or one with an id or a class; BODY);
 * - a block is a run of text nodes with one owner, one line and one hiddenness (inside the
 *   range [h, end[h]) of an element the markup hides, never BODY). */
static PyObject *page_blocks(PyObject *self, PyObject *args) {
    (void)self;
    enum { N = 15 };
    PyObject *o[N];
    int hidden_flag;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOiOOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7],
                          &o[8], &hidden_flag, &o[9], &o[10], &o[11], &o[12], &o[13], &o[14]))
        return NULL;
    Py_buffer v[N];
    int held = 0;
    PyObject *result = NULL;
    int64_t *work = NULL;
    Py_ssize_t n = 0, k = 0;
    if (get_array(o[0], &v[held], 4, -1, 0, "parent") < 0) goto done;
    n = v[held++].len / 4;
    static const struct { Py_ssize_t size; int plus; int writable; const char *name; } spec[N] = {
        {4, -2, 0, "parent"}, {4, 0, 0, "tag"}, {4, 0, 0, "end"}, {4, 0, 0, "line"}, {4, 0, 0, "words"},
        {2, 0, 0, "flags"}, {4, 0, 0, "id_hash"}, {4, 1, 0, "class_ptr"}, {8, -1, 0, "tag_bits"},
        {8, 0, 1, "text_nodes"}, {8, 1, 1, "ptr"}, {4, 0, 1, "owner"}, {1, 0, 1, "group"},
        {1, 0, 1, "is_instance"}, {8, 0, 1, "block_words"}};
    for (; held < N; held++) {
        Py_ssize_t items = spec[held].plus == -1 ? -1 : n + spec[held].plus;
        if (get_array(o[held], &v[held], spec[held].size, items, spec[held].writable, spec[held].name) < 0)
            goto done;
    }
    k = v[8].len / 8;
    if (k == 0) {
        PyErr_SetString(PyExc_ValueError, "page_blocks: empty tag table");
        goto done;
    }
    const int32_t *parent = v[0].buf, *tag = v[1].buf, *end = v[2].buf, *line = v[3].buf, *words = v[4].buf;
    const uint16_t *flags = v[5].buf;
    const uint32_t *id_hash = v[6].buf;
    const int32_t *class_ptr = v[7].buf;
    const int64_t *tag_bits = v[8].buf;
    int64_t *text_nodes = v[9].buf, *ptr = v[10].buf, *block_words = v[14].buf;
    int32_t *owner = v[11].buf;
    int8_t *group = v[12].buf;
    uint8_t *is_instance = v[13].buf;
    /* work: content prefix (n + 1), hidden running count (n + 1), nearest instance (n),
     * nearest holder (n), instance flags (n) */
    work = PyMem_Calloc((size_t)(5 * n + 2), sizeof(int64_t));
    if (work == NULL) { PyErr_NoMemory(); goto done; }
    int64_t *content = work, *hidden = work + n + 1, *near_inst = work + 2 * n + 2,
            *near_holder = work + 3 * n + 2, *inst = work + 4 * n + 2;
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t p = parent[i];
        if (p >= i || (p < 0 && i > 0) || end[i] <= i || end[i] > n) {
            PyErr_SetString(PyExc_ValueError, "page_blocks: parent/end are not a preorder tree");
            goto done;
        }
        content[i + 1] = content[i] + (tag_bits[clip_tag(tag[i], k)] & 1);
        if (i > 0 && (flags[i] & hidden_flag)) {   /* a hidden range starts here and ends at end[i] */
            hidden[i]++;
            hidden[end[i]]--;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) hidden[i + 1] += hidden[i];   /* running count, as cumsum */
    /* elements with an element three levels below: the third ancestor of every element */
    for (Py_ssize_t i = 0; i < n; i++) {
        if (tag[i] == 0) continue;
        int32_t a = parent[i];
        if (a >= 0) a = parent[a];
        if (a >= 0) a = parent[a];
        if (a >= 0) inst[a] = 2;                 /* too deep, decided below */
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t bits = tag_bits[clip_tag(tag[i], k)];
        int too_deep = inst[i] == 2;
        int leafish = (bits & 4) && content[end[i]] - content[i] - (bits & 1) == 0 && !too_deep;
        inst[i] = (bits & 2) || leafish;
        int32_t p = parent[i];
        near_inst[i] = inst[i] ? i : (p >= 0 ? near_inst[p] : -1);
        int element = tag[i] != 0;
        int named = id_hash[i] != 0 || class_ptr[i + 1] > class_ptr[i];
        int holder = i == 0 || (element && ((bits & 8) || named));
        near_holder[i] = holder ? i : (p >= 0 ? near_holder[p] : -1);
    }
    Py_ssize_t nt = 0, nb = 0;
    int32_t last_owner = 0, last_line = 0;
    int64_t last_hidden = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (tag[i] != 0) continue;
        int32_t p = parent[i];
        if (p < 0) {
            PyErr_SetString(PyExc_ValueError, "page_blocks: a text node without a parent");
            goto done;
        }
        int64_t w = near_inst[p] >= 0 ? near_inst[p] : near_holder[p];
        int64_t h = hidden[i] > 0;
        if (nt == 0 || w != last_owner || line[i] != last_line || h != last_hidden) {
            ptr[nb] = nt;
            owner[nb] = (int32_t)w;
            int64_t bits = tag_bits[clip_tag(tag[w], k)];
            is_instance[nb] = inst[w] != 0;
            group[nb] = (int8_t)(inst[w] ? (bits >> 8) & 0xFF : (tag_bits[k - 1] >> 8) & 0xFF);
            block_words[nb] = 0;
            nb++;
        }
        block_words[nb - 1] += words[i];
        last_owner = (int32_t)w;
        last_line = line[i];
        last_hidden = h;
        text_nodes[nt++] = i;
    }
    ptr[nb] = nt;
    result = Py_BuildValue("nn", nt, nb);
done:
    PyMem_Free(work);
    for (int i = 0; i < held; i++) PyBuffer_Release(&v[i]);
    return result;
}

/* numpy's sum of n float64 values (its pairwise_sum: eight running sums over blocks of at most
 * 128 values, halves above that, -0.0 as the start of a short run), the sum np.add.reduceat
 * adds to a segment's first value. */
static double numpy_pairwise_sum(const double *a, Py_ssize_t n) {
    if (n < 8) {
        double res = -0.0;
        for (Py_ssize_t i = 0; i < n; i++) res += a[i];
        return res;
    }
    if (n <= 128) {
        double r[8];
        Py_ssize_t i;
        for (int j = 0; j < 8; j++) r[j] = a[j];
        for (i = 8; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++) r[j] += a[i + j];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += a[i];
        return res;
    }
    Py_ssize_t n2 = n / 2;
    n2 -= n2 % 8;
    return numpy_pairwise_sum(a, n2) + numpy_pairwise_sum(a + n2, n - n2);
}

/* site_columns(occ float64[n], tag int32[n], words int32[n], end int32[n], words_below int64[n],
 * text_nodes int64[t], ptr int64[nb+1], owner int64[nb], block_words int64[nb], up int64[levels, nb],
 * n_cand, out float64[nb, 5 + levels]): features._site_columns's columns from the template's
 * occurrences, in the order occ_min, occ_mean, occ_max, occ_owner, template_word_share, then
 * region_template per row of `up` (the owners' ancestors at each region level). The same
 * divisions of the same values; occ_mean's sum is np.add.reduceat's (a segment's first value
 * plus numpy's pairwise sum of the rest), template words are whole numbers and add exactly. */
static PyObject *site_columns(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[11];
    double n_cand;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOdO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[10],
                          &o[8], &n_cand, &o[9])) return NULL;
    Py_buffer v[11];
    int held = 0;
    PyObject *result = NULL;
    int64_t *below = NULL;
    double *scratch = NULL;
    Py_ssize_t n = 0;
    if (get_array(o[0], &v[held], 8, -1, 0, "occ") < 0) goto done;
    n = v[held++].len / 8;
    if (get_array(o[1], &v[held++], 4, n, 0, "tag") < 0) { held--; goto done; }
    if (get_array(o[2], &v[held++], 4, n, 0, "words") < 0) { held--; goto done; }
    if (get_array(o[3], &v[held++], 4, n, 0, "end") < 0) { held--; goto done; }
    if (get_array(o[4], &v[held++], 8, n, 0, "words_below") < 0) { held--; goto done; }
    if (get_array(o[5], &v[held++], 8, -1, 0, "text_nodes") < 0) { held--; goto done; }
    if (get_array(o[6], &v[held++], 8, -1, 0, "ptr") < 0) { held--; goto done; }
    if (get_array(o[7], &v[held++], 8, -1, 0, "owner") < 0) { held--; goto done; }
    if (get_array(o[8], &v[held++], 8, -1, 0, "up") < 0) { held--; goto done; }
    if (get_array(o[9], &v[held++], 8, -1, 1, "out") < 0) { held--; goto done; }
    if (get_array(o[10], &v[held++], 8, v[7].len / 8, 0, "block_words") < 0) { held--; goto done; }
    {
        const int64_t *bw = v[10].buf;
        const double *occ = v[0].buf;
        const int32_t *tag = v[1].buf, *words = v[2].buf, *end = v[3].buf;
        const int64_t *wb = v[4].buf, *tn = v[5].buf, *ptr = v[6].buf, *owner = v[7].buf, *up = v[8].buf;
        double *out = v[9].buf;
        Py_ssize_t t = v[5].len / 8, nb = v[7].len / 8;
        Py_ssize_t levels = nb > 0 ? v[8].len / 8 / nb : 0, width = 5 + levels;
        int bad = nb == 0 || v[6].len / 8 != nb + 1 || v[8].len != levels * nb * 8 || v[9].len != nb * width * 8
                  || ptr[0] != 0 || ptr[nb] != t;
        for (Py_ssize_t b = 0; b < nb && !bad; b++) bad = ptr[b + 1] <= ptr[b] || owner[b] < 0 || owner[b] >= n;
        for (Py_ssize_t i = 0; i < t && !bad; i++) bad = tn[i] < 0 || tn[i] >= n;
        for (Py_ssize_t i = 0; i < levels * nb && !bad; i++) bad = up[i] < 0 || up[i] >= n;
        for (Py_ssize_t i = 0; i < n && !bad; i++) bad = end[i] <= i || end[i] > n;
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "site_columns: arrays that do not fit together");
            goto done;
        }
        /* Template words below each node: prefix sums over preorder, a subtree being [v, end[v]). */
        below = PyMem_Malloc((size_t)(n + 1) * sizeof(int64_t));
        scratch = PyMem_Malloc((size_t)(t > 0 ? t : 1) * sizeof(double));
        if (below == NULL || scratch == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        below[0] = 0;
        for (Py_ssize_t i = 0; i < n; i++)
            below[i + 1] = below[i] + (occ[i] > 0 && tag[i] == 0 ? words[i] : 0);
        for (Py_ssize_t b = 0; b < nb; b++) {
            double *row = out + b * width;
            Py_ssize_t lo = ptr[b], hi = ptr[b + 1];
            for (Py_ssize_t i = lo; i < hi; i++) scratch[i] = occ[tn[i]] / n_cand;
            double least = scratch[lo], most = scratch[lo];
            int64_t template_words = 0;
            for (Py_ssize_t i = lo; i < hi; i++) {
                double value = scratch[i];
                /* np.minimum / np.maximum: a NaN wins (occurrences hold none) */
                least = value < least || isnan(value) ? value : least;
                most = value > most || isnan(value) ? value : most;
                int64_t node = tn[i];
                template_words += occ[node] > 0 && tag[node] == 0 ? words[node] : 0;
            }
            double total = scratch[lo];
            total += numpy_pairwise_sum(scratch + lo + 1, hi - lo - 1);
            row[0] = least;
            row[1] = total / (double)(hi - lo);
            row[2] = most;
            row[3] = occ[owner[b]] / n_cand;
            row[4] = (double)template_words / (double)(bw[b] > 1 ? bw[b] : 1);
            for (Py_ssize_t k = 0; k < levels; k++) {
                int64_t a = up[k * nb + b];
                int64_t sw = wb[a];
                row[5 + k] = (double)(below[end[a]] - below[a]) / (double)(sw > 1 ? sw : 1);
            }
        }
        result = Py_None;
        Py_INCREF(result);
    }
done:
    PyMem_Free(below);
    PyMem_Free(scratch);
    for (int i = 0; i < held; i++) PyBuffer_Release(&v[i]);
    return result;
}

/* conex_columns(word, hyperlink, children, position float64[n], rated int64[m] sorted,
 * rated_owner int64[nb], out float64[nb, 4]): block_features's page ConEx columns, the four
 * ratios of the rated nodes standardized (conex_page.standardize) and read at each block's
 * nearest rated node (rated_owner, -1: none, 0). The same operations as standardize's numpy:
 * np.add.reduce over the rows of an [m, 4] matrix adds down each column in row order, then
 * the divisions, the square root and the deviations' quotient, each rounded once. */
static PyObject *conex_columns(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[7];
    if (!PyArg_ParseTuple(args, "OOOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6])) return NULL;
    Py_buffer v[7];
    int held = 0;
    PyObject *result = NULL;
    Py_ssize_t n = 0;
    if (get_array(o[0], &v[held], 8, -1, 0, "word") < 0) goto done;
    n = v[held++].len / 8;
    for (int i = 1; i < 4; i++) {
        if (get_array(o[i], &v[held], 8, n, 0, "ratio") < 0) goto done;
        held++;
    }
    if (get_array(o[4], &v[held], 8, -1, 0, "rated") < 0) goto done;
    held++;
    if (get_array(o[5], &v[held], 8, -1, 0, "rated_owner") < 0) goto done;
    held++;
    if (get_array(o[6], &v[held], 8, v[5].len / 8 * 4, 1, "out") < 0) goto done;
    held++;
    {
        const double *ratio[4] = {v[0].buf, v[1].buf, v[2].buf, v[3].buf};
        const int64_t *rated = v[4].buf, *rated_owner = v[5].buf;
        double *out = v[6].buf;
        Py_ssize_t m = v[4].len / 8, nb = v[5].len / 8;
        int bad = m == 0;
        for (Py_ssize_t i = 0; i < m && !bad; i++) bad = rated[i] < 0 || rated[i] >= n || (i && rated[i] <= rated[i - 1]);
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "conex_columns: rated nodes must be sorted, distinct nodes of the page");
            goto done;
        }
        double mean[4], std[4];
        for (int c = 0; c < 4; c++) {
            const double *r = ratio[c];
            double total = r[rated[0]];
            for (Py_ssize_t i = 1; i < m; i++) total += r[rated[i]];
            mean[c] = total / (double)m;
            double d0 = r[rated[0]] - mean[c];
            double squares = d0 * d0;
            for (Py_ssize_t i = 1; i < m; i++) {
                double d = r[rated[i]] - mean[c];
                squares += d * d;
            }
            std[c] = sqrt(squares / (double)m);
        }
        for (Py_ssize_t b = 0; b < nb; b++) {
            double *row = out + 4 * b;
            int64_t node = rated_owner[b];
            Py_ssize_t lo = 0, hi = m;       /* node's place among the rated nodes */
            while (lo < hi) {
                Py_ssize_t mid = lo + (hi - lo) / 2;
                if (rated[mid] < node) lo = mid + 1; else hi = mid;
            }
            if (node < 0 || lo >= m || rated[lo] != node) {
                if (node >= 0) {
                    PyErr_SetString(PyExc_ValueError, "conex_columns: a block's rated node is not rated");
                    goto done;
                }
                row[0] = row[1] = row[2] = row[3] = 0.0;
                continue;
            }
            for (int c = 0; c < 4; c++)
                row[c] = std[c] > 0 ? (ratio[c][node] - mean[c]) / std[c] : 0.0;
        }
        result = Py_None;
        Py_INCREF(result);
    }
done:
    for (int i = 0; i < held; i++) PyBuffer_Release(&v[i]);
    return result;
}

/* A wrapper of remove_link_lists: its group key (parent, tag) and its node. */
typedef struct {
    int64_t key;
    int64_t node;
} Wrapper;

static int wrapper_cmp(const void *a, const void *b) {
    const Wrapper *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->node < y->node ? -1 : x->node > y->node;
}

/* page_conex(parent, tag, child_count, depth, end int32[n], excluded uint8[K + 1], unknown int32[u]
 * sorted, word float64[n], links, words_below, elements_below, text_nodes_below int64[n], text_tag,
 * a_tag, c, max_words, mask bool[n], rated bool[n], hyperlink, children, position float64[n]) -> 0, 1
 * or 2: conex_page.main_content_and_features after its one-node test, one pass per step instead of
 * some sixty numpy calls on the page's arrays.
 *   0: no node is rated, `mask` all False; 1: a wide page, `mask` every node but BODY; 2: `mask`
 *   the main content, and `rated`, `hyperlink`, `children` and `position` content_features's.
 * A tag at or past K is looked up in `unknown` (_excluded_mask's has_tag clips it to the table's
 * False last entry). The c-SET's z-scores are standardize's (the sums down each column in row
 * order, as np.add.reduce over the rows of the [m, 4] matrix adds them; each division and the
 * square root rounded once) and a node's distance adds its four squares left to right as
 * np.sum over a row of four does, so the same nodes come out, ties by document order. */
static PyObject *page_conex(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[19];
    int text_tag, a_tag;
    Py_ssize_t c;
    long long max_words;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOiinLOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7],
                          &o[8], &o[9], &o[10], &o[11], &text_tag, &a_tag, &c, &max_words, &o[12], &o[13],
                          &o[14], &o[15], &o[16])) return NULL;
    static const Py_ssize_t size[17] = {4, 4, 4, 4, 4, 1, 4, 8, 8, 8, 8, 8, 1, 1, 8, 8, 8};
    static const char *what[17] = {"parent", "tag", "child_count", "depth", "end", "excluded", "unknown", "word",
                                   "links", "words_below", "elements_below", "text_nodes_below", "mask", "rated",
                                   "hyperlink", "children", "position"};
    Py_buffer v[17];
    int held = 0;
    PyObject *result = NULL;
    int64_t *scratch = NULL;
    double *z = NULL;
    Wrapper *wrappers = NULL;
    Py_ssize_t n = 0;
    for (int i = 0; i < 17; i++) {
        Py_ssize_t items = i == 0 || i == 5 || i == 6 ? -1 : n;
        if (get_array(o[i], &v[i], size[i], items, i >= 12, what[i]) < 0) goto done;
        held++;
        if (i == 0) n = v[0].len / 4;
    }
    {
        const int32_t *parent = v[0].buf, *tag = v[1].buf, *child_count = v[2].buf, *depth = v[3].buf,
                      *end = v[4].buf, *unknown = v[6].buf;
        const uint8_t *excluded = v[5].buf;
        const double *word = v[7].buf;
        const int64_t *links = v[8].buf, *wb = v[9].buf, *eb = v[10].buf, *tnb = v[11].buf;
        uint8_t *mask = v[12].buf, *rated = v[13].buf;
        double *hyperlink = v[14].buf, *kids = v[15].buf, *position = v[16].buf;
        Py_ssize_t k = v[5].len, u = v[6].len / 4;
        int bad = n < 2 || k < 1 || parent[0] >= 0 || c < 0;
        for (Py_ssize_t i = 1; i < n && !bad; i++) bad = parent[i] < 0 || parent[i] >= i;
        for (Py_ssize_t i = 0; i < n && !bad; i++) bad = end[i] <= i || end[i] > n || tag[i] < 0;
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "page_conex: arrays that are not a preorder page of two or more nodes");
            goto done;
        }
        /* Excluded (0/1) per node, then whether it is rated. */
        uint8_t *out = rated;
        int64_t body_kids = 0, counted_depth = 0, any_rated = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            int32_t t = tag[i];
            int ex;
            if (t < k - 1) ex = excluded[t] != 0;
            else {
                ex = excluded[k - 1] != 0;
                Py_ssize_t lo = 0, hi = u;
                while (lo < hi) {
                    Py_ssize_t mid = lo + (hi - lo) / 2;
                    if (unknown[mid] < t) lo = mid + 1; else hi = mid;
                }
                ex |= lo < u && unknown[lo] == t;
            }
            int counted = t != text_tag && !ex;
            if (counted && i > 0) {
                body_kids += parent[i] == 0;
                if (depth[i] > counted_depth) counted_depth = depth[i];
            }
            out[i] = counted && child_count[i] > 0;
            any_rated |= out[i];
        }
        if (body_kids > 0 && body_kids >= counted_depth) {      /* wide_page */
            mask[0] = 0;
            memset(mask + 1, 1, (size_t)(n - 1));
            result = PyLong_FromLong(1);
            goto done;
        }
        memset(mask, 0, (size_t)n);
        if (!any_rated) {
            result = PyLong_FromLong(0);
            goto done;
        }
        /* content_features */
        int32_t max_depth = depth[0];
        for (Py_ssize_t i = 1; i < n; i++) if (depth[i] > max_depth) max_depth = depth[i];
        double half = (double)max_depth / 2.0;
        for (Py_ssize_t i = 0; i < n; i++) {
            hyperlink[i] = links[i] == 0 ? 1.0 : 1.0 / (double)(links[i] > 1 ? links[i] : 1);
            kids[i] = child_count[i] > 2 ? 1.0 : 0.0;
            double d = (double)depth[i];
            position[i] = d <= half ? d : (double)max_depth - d;
        }
        /* c_set: standardize over the rated rows, then the c farthest from the origin. */
        const double *ratio[4] = {word, hyperlink, kids, position};
        double mean[4], std[4];
        Py_ssize_t m = 0, first = -1;
        for (Py_ssize_t i = 0; i < n; i++)
            if (rated[i]) {
                if (first < 0) first = i;
                m++;
            }
        for (int col = 0; col < 4; col++) {
            const double *r = ratio[col];
            double total = r[first];
            for (Py_ssize_t i = first + 1; i < n; i++) if (rated[i]) total += r[i];
            mean[col] = total / (double)m;
            double d0 = r[first] - mean[col];
            double squares = d0 * d0;
            for (Py_ssize_t i = first + 1; i < n; i++)
                if (rated[i]) {
                    double d = r[i] - mean[col];
                    squares += d * d;
                }
            std[col] = sqrt(squares / (double)m);
        }
        Py_ssize_t want = c < m ? c : m, taken = 0;
        scratch = PyMem_Malloc((size_t)(n + 1) * sizeof(int64_t) + (size_t)(want > 0 ? want : 1) * sizeof(int64_t));
        z = PyMem_Malloc((size_t)(want > 0 ? want : 1) * sizeof(double));
        if (scratch == NULL || z == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        int64_t *cset = scratch + n + 1;      /* the farthest so far, farthest first */
        double *dist = z;
        for (Py_ssize_t i = first; i < n && want > 0; i++) {
            if (!rated[i]) continue;
            double sum = 0.0;
            for (int col = 0; col < 4; col++) {
                double zc = std[col] > 0 ? (ratio[col][i] - mean[col]) / std[col] : 0.0;
                sum += zc * zc;
            }
            double di = sqrt(sum);
            /* A later node goes before an earlier one only when strictly farther (lexsort's
             * ties by document order). */
            Py_ssize_t at = taken;
            while (at > 0 && di > dist[at - 1]) at--;
            if (at >= want) continue;
            Py_ssize_t last = taken < want ? taken : want - 1;
            for (Py_ssize_t j = last; j > at; j--) {
                dist[j] = dist[j - 1];
                cset[j] = cset[j - 1];
            }
            dist[at] = di;
            cset[at] = i;
            if (taken < want) taken++;
        }
        /* Document order (np.sort), then reduce_c_set: a node goes when an earlier c-SET node
         * holds it with the same text nodes. */
        for (Py_ssize_t a = 1; a < taken; a++)
            for (Py_ssize_t b = a; b > 0 && cset[b] < cset[b - 1]; b--) {
                int64_t x = cset[b];
                cset[b] = cset[b - 1];
                cset[b - 1] = x;
            }
        Py_ssize_t kept = 0;
        for (Py_ssize_t b = 0; b < taken; b++) {
            int64_t d = cset[b];
            int same = 0;
            for (Py_ssize_t a = 0; a < taken && !same; a++)
                same = cset[a] < d && d < end[cset[a]] && tnb[cset[a]] == tnb[d];
            if (!same) cset[kept++] = d;
        }
        /* select_main: the highest textPond nodes and their c-SET siblings. */
        int64_t *diff = scratch;
        memset(diff, 0, (size_t)(n + 1) * sizeof(int64_t));
        if (kept > 0) {
            double best = -INFINITY;
            for (Py_ssize_t b = 0; b < kept; b++) {
                double pond = (double)wb[cset[b]] / (double)(eb[cset[b]] > 1 ? eb[cset[b]] : 1);
                if (pond > best) best = pond;
            }
            for (Py_ssize_t b = 0; b < kept; b++) {
                int64_t x = cset[b];
                int root = 0;
                for (Py_ssize_t a = 0; a < kept && !root; a++) {
                    int64_t y = cset[a];
                    double pond = (double)wb[y] / (double)(eb[y] > 1 ? eb[y] : 1);
                    root = pond == best && parent[y] == parent[x];
                }
                if (root) {
                    diff[x]++;
                    diff[end[x]]--;
                }
            }
        }
        int64_t open = 0;
        Py_ssize_t nw = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            open += diff[i];
            mask[i] = open > 0;
            nw += mask[i] && child_count[i] == 1 && tag[i] != text_tag && i + 1 < n && tag[i + 1] == a_tag;
        }
        /* remove_link_lists: same-tag wrappers of one single <a> under one parent, two or more
         * of them and one with a short link, go with their subtrees. */
        if (nw >= 2) {
            wrappers = PyMem_Malloc((size_t)nw * sizeof(Wrapper));
            if (wrappers == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            Py_ssize_t w = 0;
            for (Py_ssize_t i = 0; i < n; i++)
                if (mask[i] && child_count[i] == 1 && tag[i] != text_tag && i + 1 < n && tag[i + 1] == a_tag) {
                    wrappers[w].key = (int64_t)parent[i] * ((int64_t)1 << 32) + tag[i];
                    wrappers[w].node = i;
                    w++;
                }
            qsort(wrappers, (size_t)nw, sizeof(Wrapper), wrapper_cmp);
            memset(diff, 0, (size_t)(n + 1) * sizeof(int64_t));
            int removed = 0;
            for (Py_ssize_t lo = 0; lo < nw;) {
                Py_ssize_t hi = lo;
                int any_short = 0;
                while (hi < nw && wrappers[hi].key == wrappers[lo].key) {
                    any_short |= wb[wrappers[hi].node + 1] < max_words;
                    hi++;
                }
                if (hi - lo >= 2 && any_short)
                    for (Py_ssize_t j = lo; j < hi; j++) {
                        diff[wrappers[j].node]++;
                        diff[end[wrappers[j].node]]--;
                        removed = 1;
                    }
                lo = hi;
            }
            if (removed) {
                open = 0;
                for (Py_ssize_t i = 0; i < n; i++) {
                    open += diff[i];
                    if (open > 0) mask[i] = 0;
                }
            }
        }
        result = PyLong_FromLong(2);
    }
done:
    PyMem_Free(scratch);
    PyMem_Free(z);
    PyMem_Free(wrappers);
    for (int i = 0; i < held; i++) PyBuffer_Release(&v[i]);
    return result;
}

/* menu_pick(parent int32[n], ptr int64[n + 1], kids int32[n - 1], end int32[n], weights float64[n],
 * candidate_t, root_t, menu_t, roots int64[n], scores float64[n]) -> (k, node): MenEx Alg. 1 and 2 over
 * `weights` in one call, for menex.detect_menu and sitemenus.propose_menus. The candidates (weight
 * above candidate_t times the top weight) climb as menex.select_root climbs (Alg. 1: while more
 * than half of the parent's children weigh more than root_t times the candidate's weight, the
 * root moving up only past parents of more than one child); their roots, distinct and in document order, are roots[:k], and scores[:k] Alg. 2's measure of each:
 * the mean weight of the heavy nodes (above menu_t times the top weight) strictly inside it, as
 * the difference of the heavy weights' running sums (np.cumsum's order) over their count, or its
 * own weight when it holds none. `node`: menex.select_menu's choice, the first root of the best
 * mean, or without any heavy descendant the first root of the largest weight. k = 0 (node -1)
 * when no weight is above 0. */
static PyObject *menu_pick(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[7];
    double candidate_t, root_t, menu_t;
    if (!PyArg_ParseTuple(args, "OOOOOdddOO", &o[0], &o[1], &o[2], &o[3], &o[4], &candidate_t, &root_t, &menu_t,
                          &o[5], &o[6])) return NULL;
    static const Py_ssize_t size[7] = {4, 8, 4, 4, 8, 8, 8};
    static const char *what[7] = {"parent", "ptr", "kids", "end", "weights", "roots", "scores"};
    Py_buffer v[7];
    int held = 0;
    PyObject *result = NULL;
    uint8_t *is_root = NULL;
    int64_t *heavy_before = NULL;
    double *prefix = NULL;
    Py_ssize_t n = 0;
    for (int i = 0; i < 7; i++) {
        Py_ssize_t items = i == 0 ? -1 : i == 1 ? n + 1 : i == 2 ? (n > 0 ? n - 1 : 0) : n;
        if (get_array(o[i], &v[i], size[i], items, i >= 5, what[i]) < 0) goto done;
        held++;
        if (i == 0) n = v[0].len / 4;
    }
    {
        const int32_t *parent = v[0].buf, *kids = v[2].buf, *end = v[3].buf;
        const int64_t *ptr = v[1].buf;
        const double *w = v[4].buf;
        int64_t *roots = v[5].buf;
        double *scores = v[6].buf;
        int bad = n > 0 && (parent[0] >= 0 || ptr[0] != 0 || ptr[n] != n - 1);
        for (Py_ssize_t i = 1; i < n && !bad; i++) bad = parent[i] < 0 || parent[i] >= i;
        for (Py_ssize_t i = 0; i < n && !bad; i++) bad = end[i] <= i || end[i] > n || ptr[i] > ptr[i + 1];
        for (Py_ssize_t i = 0; i + 1 < n && !bad; i++) bad = kids[i] <= 0 || kids[i] >= n;
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "menu_pick: arrays that are not a preorder page and its children");
            goto done;
        }
        double top = -INFINITY;
        for (Py_ssize_t i = 0; i < n; i++) top = w[i] > top || isnan(w[i]) ? w[i] : top;
        if (n == 0 || !(top > 0)) {
            result = Py_BuildValue("nn", (Py_ssize_t)0, (Py_ssize_t)-1);
            goto done;
        }
        is_root = PyMem_Calloc((size_t)n, 1);
        heavy_before = PyMem_Malloc((size_t)(n + 1) * sizeof(int64_t));
        prefix = PyMem_Malloc((size_t)(n + 1) * sizeof(double));
        if (is_root == NULL || heavy_before == NULL || prefix == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        double candidate = candidate_t * top, heavy = menu_t * top;
        int64_t count = 0;
        heavy_before[0] = 0;
        prefix[0] = 0.0;
        for (Py_ssize_t c = 0; c < n; c++) {
            if (w[c] > heavy) {
                prefix[count + 1] = prefix[count] + w[c];
                count++;
            }
            heavy_before[c + 1] = count;
            if (!(w[c] > candidate)) continue;
            int64_t menu = c, current = c;
            double base = w[c] * root_t;
            while (parent[current] >= 0) {
                int32_t p = parent[current];
                int64_t lo = ptr[p], hi = ptr[p + 1], above = 0;
                for (int64_t k = lo; k < hi; k++) above += w[kids[k]] > base;
                if (2 * above <= hi - lo) break;
                current = p;
                if (hi - lo > 1) menu = p;
            }
            is_root[menu] = 1;
        }
        Py_ssize_t k = 0, best = -1, heaviest = -1;
        double best_mean = -INFINITY;
        for (Py_ssize_t r = 0; r < n; r++) {
            if (!is_root[r]) continue;
            int64_t lo = heavy_before[r + 1], hi = heavy_before[end[r]];
            roots[k] = r;
            if (hi > lo) {
                scores[k] = (prefix[hi] - prefix[lo]) / (double)(hi - lo);
                if (best < 0 || scores[k] > best_mean) {
                    best = r;
                    best_mean = scores[k];
                }
            } else
                scores[k] = w[r];
            if (heaviest < 0 || w[r] > w[heaviest]) heaviest = r;
            k++;
        }
        result = Py_BuildValue("nn", k, best >= 0 ? best : heaviest);
    }
done:
    PyMem_Free(is_root);
    PyMem_Free(heavy_before);
    PyMem_Free(prefix);
    for (int i = 0; i < held; i++) PyBuffer_Release(&v[i]);
    return result;
}

/* owner_ancestors(parent int32[n], owner int64[nb], out int64[nb, L]): region.owner_ancestors
 * for the levels 0 .. L - 1: row b holds owner b and its ancestors one level up after another,
 * the root standing for the levels above it. */
static PyObject *owner_ancestors(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *parent_o, *owner_o, *out_o;
    if (!PyArg_ParseTuple(args, "OOO", &parent_o, &owner_o, &out_o)) return NULL;
    Py_buffer v[3];
    int held = 0;
    PyObject *result = NULL;
    Py_ssize_t n = 0, nb = 0;
    if (get_array(parent_o, &v[held], 4, -1, 0, "parent") < 0) goto done;
    n = v[held++].len / 4;
    if (get_array(owner_o, &v[held], 8, -1, 0, "owner") < 0) goto done;
    nb = v[held++].len / 8;
    if (get_array(out_o, &v[held], 8, -1, 1, "out") < 0) goto done;
    held++;
    {
        const int32_t *parent = v[0].buf;
        const int64_t *owner = v[1].buf;
        int64_t *out = v[2].buf;
        Py_ssize_t levels = nb > 0 ? v[2].len / 8 / nb : 0;
        if (nb > 0 && (levels == 0 || v[2].len != nb * levels * 8)) {
            PyErr_SetString(PyExc_ValueError, "owner_ancestors: out must be [owners, levels]");
            goto done;
        }
        for (Py_ssize_t b = 0; b < nb; b++) {
            int64_t a = owner[b];
            for (Py_ssize_t k = 0; k < levels; k++) {
                if (a < 0 || a >= n) {
                    PyErr_Format(PyExc_ValueError, "owner_ancestors: node %lld is not a node of the page", (long long)a);
                    goto done;
                }
                out[b * levels + k] = a;
                if (parent[a] >= 0) a = parent[a];
            }
        }
        result = Py_None;
        Py_INCREF(result);
    }
done:
    for (int k = 0; k < held; k++) PyBuffer_Release(&v[k]);
    return result;
}

/* put_columns(src float64[nb, r], x float32 or float64 [nb, width], at int64[r]): x[:, at[k]] =
 * src[:, k] for every k, each value rounded to x's type as numpy's assignment rounds it (one
 * conversion), in one pass instead of an assignment per run of adjacent columns. */
static PyObject *put_columns(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *src_o, *x_o, *at_o;
    if (!PyArg_ParseTuple(args, "OOO", &src_o, &x_o, &at_o)) return NULL;
    Py_buffer sv, xv, av;
    if (PyObject_GetBuffer(src_o, &sv, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    if (PyObject_GetBuffer(x_o, &xv, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&sv);
        return NULL;
    }
    if (PyObject_GetBuffer(at_o, &av, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&sv);
        PyBuffer_Release(&xv);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t xs = xv.itemsize, r = av.itemsize == 8 ? av.len / 8 : 0;
    int is_float = xv.format != NULL && (strcmp(xv.format, xs == 4 ? "f" : "d") == 0 || strcmp(xv.format, xs == 4 ? "<f" : "<d") == 0);
    int src_double = sv.format != NULL && (strcmp(sv.format, "d") == 0 || strcmp(sv.format, "<d") == 0);
    int ok = av.itemsize == 8 && av.ndim == 1 && src_double && (xs == 4 || xs == 8) && is_float && r > 0
        && sv.ndim == 2 && sv.shape[1] == r && xv.ndim == 2 && xv.shape[0] == sv.shape[0];
    Py_ssize_t nb = ok ? sv.shape[0] : 0, width = ok ? xv.shape[1] : 0;
    const int64_t *at = av.buf;
    for (Py_ssize_t k = 0; ok && nb > 0 && k < r; k++) ok = at[k] >= 0 && at[k] < width;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "put_columns: float64 src of one column per entry of at, columns inside x");
        goto done;
    }
    for (Py_ssize_t b = 0; b < nb; b++) {
        const double *row = (const double *)sv.buf + b * r;
        if (xs == 4) {
            float *out = (float *)xv.buf + b * width;
            for (Py_ssize_t k = 0; k < r; k++) out[at[k]] = (float)row[k];
        } else {
            double *out = (double *)xv.buf + b * width;
            for (Py_ssize_t k = 0; k < r; k++) out[at[k]] = row[k];
        }
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&sv);
    PyBuffer_Release(&xv);
    PyBuffer_Release(&av);
    return result;
}

/* count_columns(counts int64[nb, COLUMNS], x float32 or float64 [nb, width], at int64[7], patterns):
 * features.py _count_columns's columns of text_columns's counts: x[:, at[0]] punctuation per word,
 * at[1] sentences, at[2] commas per word, at[3] digit share, at[4] ends with punctuation, at[5]
 * upper-case start, and bits 0 .. patterns - 1 of the pattern bits in columns at[6] onwards. The
 * same operations as numpy's there: int64 counts over float64 word counts (at least 1), int64 over
 * int64 as float64 (true division), each value rounded to x's type once. */
static PyObject *count_columns(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *counts_o, *x_o, *at_o;
    Py_ssize_t patterns;
    if (!PyArg_ParseTuple(args, "OOOn", &counts_o, &x_o, &at_o, &patterns)) return NULL;
    Py_buffer cv, xv, av;
    if (PyObject_GetBuffer(counts_o, &cv, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    if (PyObject_GetBuffer(x_o, &xv, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&cv);
        return NULL;
    }
    if (PyObject_GetBuffer(at_o, &av, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&cv);
        PyBuffer_Release(&xv);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t xs = xv.itemsize;
    int is_float = xv.format != NULL && (strcmp(xv.format, xs == 4 ? "f" : "d") == 0 || strcmp(xv.format, xs == 4 ? "<f" : "<d") == 0);
    int ok = cv.itemsize == 8 && cv.ndim == 2 && cv.shape[1] == C_COUNT && (xs == 4 || xs == 8) && is_float
        && xv.ndim == 2 && xv.shape[0] == cv.shape[0] && av.itemsize == 8 && av.len == 7 * 8
        && patterns >= 0 && patterns <= 64;
    Py_ssize_t nb = ok ? cv.shape[0] : 0, width = ok ? xv.shape[1] : 0;
    const int64_t *at = av.buf;
    for (int k = 0; ok && nb > 0 && k < 7; k++) ok = at[k] >= 0 && at[k] + (k == 6 ? patterns : 1) <= width;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "count_columns: int64 counts of COLUMNS per row, columns inside x");
        goto done;
    }
    for (Py_ssize_t b = 0; b < nb; b++) {
        const int64_t *row = (const int64_t *)cv.buf + b * C_COUNT;
        double words = (double)(row[C_WORDS] > 1 ? row[C_WORDS] : 1);
        double length = (double)(row[C_LENGTH] > 1 ? row[C_LENGTH] : 1);
        double v[6] = {(double)row[C_PUNCT] / words, 0.0, (double)row[C_COMMAS] / words,
                       (double)row[C_DIGITS] / length, 0.0, 0.0};
        uint64_t bits = (uint64_t)row[C_PATTERNS];
        if (xs == 4) {
            float *out = (float *)xv.buf + b * width;
            out[at[0]] = (float)v[0];
            out[at[1]] = (float)row[C_SENTENCES];
            out[at[2]] = (float)v[2];
            out[at[3]] = (float)v[3];
            out[at[4]] = (float)row[C_CLOSING];
            out[at[5]] = (float)row[C_UPPER];
            for (Py_ssize_t k = 0; k < patterns; k++) out[at[6] + k] = (float)((bits >> k) & 1);
        } else {
            double *out = (double *)xv.buf + b * width;
            out[at[0]] = v[0];
            out[at[1]] = (double)row[C_SENTENCES];
            out[at[2]] = v[2];
            out[at[3]] = v[3];
            out[at[4]] = (double)row[C_CLOSING];
            out[at[5]] = (double)row[C_UPPER];
            for (Py_ssize_t k = 0; k < patterns; k++) out[at[6] + k] = (double)((bits >> k) & 1);
        }
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&cv);
    PyBuffer_Release(&xv);
    PyBuffer_Release(&av);
    return result;
}

/* bit_columns(bits uint32 or int64 [nb], x float32 or float64 [nb, F], first, count): x[b, first + k] =
 * bit k of bits[b] (0.0 or 1.0) for k < count, what (bits[:, None] >> arange(count)) & 1
 * assigned to those columns writes, without the [nb, count] temporaries. */
static PyObject *bit_columns(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *bits_o, *x_o;
    Py_ssize_t first, count;
    if (!PyArg_ParseTuple(args, "OOnn", &bits_o, &x_o, &first, &count)) return NULL;
    Py_buffer bv, xv;
    if (PyObject_GetBuffer(bits_o, &bv, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    if (PyObject_GetBuffer(x_o, &xv, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&bv);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t nb = bv.itemsize > 0 ? bv.len / bv.itemsize : 0;
    Py_ssize_t xs = xv.itemsize;
    Py_ssize_t width = nb > 0 && xs > 0 ? xv.len / xs / nb : 0;
    /* x's items are float32 ('f') or float64 ('d') */
    int is_float = xv.format != NULL && (strcmp(xv.format, xs == 4 ? "f" : "d") == 0 || strcmp(xv.format, xs == 4 ? "<f" : "<d") == 0);
    if ((bv.itemsize != 4 && bv.itemsize != 8) || (xs != 4 && xs != 8) || !is_float
        || (nb > 0 && xv.len != nb * width * xs) || first < 0 || count < 0
        || count > 8 * bv.itemsize || (nb > 0 && first + count > width)) {
        PyErr_SetString(PyExc_ValueError, "bit_columns: bits of 4 or 8 bytes per row, and columns inside x");
        goto done;
    }
    {
        for (Py_ssize_t b = 0; b < nb; b++) {
            uint64_t v = bv.itemsize == 4 ? ((const uint32_t *)bv.buf)[b] : (uint64_t)((const int64_t *)bv.buf)[b];
            if (xs == 4) {
                float *row = (float *)xv.buf + b * width + first;
                for (Py_ssize_t k = 0; k < count; k++) row[k] = (float)((v >> k) & 1);
            } else {
                double *row = (double *)xv.buf + b * width + first;
                for (Py_ssize_t k = 0; k < count; k++) row[k] = (double)((v >> k) & 1);
            }
        }
        result = Py_None;
        Py_INCREF(result);
    }
done:
    PyBuffer_Release(&bv);
    PyBuffer_Release(&xv);
    return result;
}

/* region_columns(p float64[n], w float64[n], ancestors int64[n, L], total, out float64[n, R]):
 * region.region_features's columns 0..R-1 (everything but the own columns), raw where the
 * reference takes a logarithm: column 1 holds clip(p)/(1 - clip(p)) (region.py takes np.log),
 * the anc*_blocks_log and gap_*_log columns the counts and gaps (np.log1p), page_main_words_log
 * nothing (region.py writes np.log1p(total)). `total` is the reference's sum of p·w, numpy's
 * pairwise sum, passed in. Every other value is the reference's IEEE operations in its order:
 * running sums (np.cumsum's, and np.bincount's per container in block order) added one
 * block at a time, each product rounded on its own (-ffp-contract=off). */
static PyObject *region_columns(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *p_o, *w_o, *anc_o, *out_o;
    double total;
    if (!PyArg_ParseTuple(args, "OOOdO", &p_o, &w_o, &anc_o, &total, &out_o)) return NULL;
    Py_buffer v[4];
    int held = 0;
    PyObject *result = NULL;
    double *acc = NULL;
    Py_ssize_t n = 0, levels = 0, width = 0;
    if (get_array(p_o, &v[held], 8, -1, 0, "p") < 0) goto done;
    n = v[held++].len / 8;
    if (get_array(w_o, &v[held], 8, n, 0, "w") < 0) goto done;
    held++;
    if (get_array(anc_o, &v[held], 8, -1, 0, "ancestors") < 0) goto done;
    levels = n > 0 ? v[held].len / 8 / n : 0;
    held++;
    if (get_array(out_o, &v[held], 8, -1, 1, "out") < 0) goto done;
    width = n > 0 ? v[held].len / 8 / n : 0;
    held++;
    if (n == 0 || v[2].len != n * levels * 8 || v[3].len != n * width * 8 || width != 8 + 3 + 3 * levels + 9) {
        PyErr_SetString(PyExc_ValueError, "region_columns: arrays of different lengths or an output of another width");
        goto done;
    }
    const double *p = v[0].buf, *w = v[1].buf;
    const int64_t *anc = v[2].buf;
    double *out = v[3].buf;
    int64_t top = 0;
    for (Py_ssize_t i = 0; i < n * levels; i++) {
        if (anc[i] < 0) {
            PyErr_SetString(PyExc_ValueError, "region_columns: a negative container id");
            goto done;
        }
        if (anc[i] > top) top = anc[i];
    }
    /* prefix sums of p·w and w (n + 1 each), per container its expected words, words and
     * blocks, per block the next likely block */
    acc = PyMem_Malloc((size_t)(2 * (n + 1) + 3 * (top + 1) + n) * sizeof(double));
    if (acc == NULL) { PyErr_NoMemory(); goto done; }
    double *pw = acc, *cw = acc + n + 1, *g_exp = acc + 2 * (n + 1), *g_words = g_exp + top + 1,
           *g_count = g_words + top + 1, *next_likely = g_count + top + 1;
    pw[0] = cw[0] = 0.0;
    double pmax = p[0];
    Py_ssize_t likely = 0, first_likely = -1, last_likely = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        pw[i + 1] = pw[i] + p[i] * w[i];
        cw[i + 1] = cw[i] + w[i];
        if (p[i] > pmax) pmax = p[i];
        if (p[i] >= 0.5) {
            likely++;
            if (first_likely < 0) first_likely = i;
            last_likely = i;
        }
    }
    static const Py_ssize_t windows[3] = {2, 5, 15};
    for (Py_ssize_t i = 0; i < n; i++) {
        double *row = out + i * width;
        double c = p[i] < 1e-6 ? 1e-6 : p[i];
        c = c > 1 - 1e-6 ? 1 - 1e-6 : c;
        row[0] = p[i];
        row[1] = c / (1 - c);
        for (Py_ssize_t k = 1; k <= 3; k++) {
            row[1 + k] = i - k >= 0 ? p[i - k] : NAN;          /* p_prev{k} */
            row[4 + k] = i + k < n ? p[i + k] : NAN;           /* p_next{k} */
        }
        for (int j = 0; j < 3; j++) {
            Py_ssize_t lo = i - windows[j] > 0 ? i - windows[j] : 0;
            Py_ssize_t hi = i + windows[j] + 1 < n ? i + windows[j] + 1 : n;
            double cws = cw[hi] - cw[lo];
            row[8 + j] = (pw[hi] - pw[lo]) / (cws > 1.0 ? cws : 1.0);
        }
    }
    for (Py_ssize_t k = 0; k < levels; k++) {
        for (int64_t g = 0; g <= top; g++) g_exp[g] = g_words[g] = g_count[g] = 0.0;
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t g = anc[i * levels + k];
            g_exp[g] += p[i] * w[i];
            g_words[g] += w[i];
            g_count[g] += 1.0;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            double *row = out + i * width + 11 + 3 * k;
            int64_t g = anc[i * levels + k];
            row[0] = g_exp[g] / (g_words[g] > 1.0 ? g_words[g] : 1.0);
            row[1] = total > 0 ? g_exp[g] / total : 0.0;
            row[2] = g_count[g];
        }
    }
    /* the first likely block after each block (-1: none), from the end */
    for (Py_ssize_t i = n - 1, seen = -1; i >= 0; i--) {
        next_likely[i] = (double)seen;
        if (p[i] >= 0.5) seen = i;
    }
    Py_ssize_t prev_likely = -1;
    double before = 0.0;
    for (Py_ssize_t i = 0; i < n; i++) {
        double *row = out + i * width + 11 + 3 * levels;
        double expected = p[i] * w[i];
        double after = total - before - expected;
        row[0] = total > 0 ? before / total : 0.0;
        row[1] = total > 0 ? after / total : 0.0;
        if (likely) {
            /* the nearest likely block strictly before and strictly after, the ones region.py's
             * searchsorted finds */
            Py_ssize_t next = (Py_ssize_t)next_likely[i];
            row[2] = (double)(prev_likely >= 0 ? i - prev_likely : n);
            row[3] = (double)(next >= 0 ? next - i : n);
            row[4] = i > last_likely;
            row[5] = i < first_likely;
        } else {
            row[2] = row[3] = (double)n;
            row[4] = row[5] = 0.0;
        }
        row[6] = pmax;
        row[7] = 0.0;                                   /* page_main_words_log: region.py's */
        row[8] = (double)likely / (double)n;
        before += expected;
        if (p[i] >= 0.5) prev_likely = i;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_Free(acc);
    for (int i = 0; i < held; i++) PyBuffer_Release(&v[i]);
    return result;
}

/* The menu and cluster keys' hashes (_keys.h): wrapping uint64 arithmetic, so every value is
 * the reference's exactly, whatever the order of the additions. */

/* path_hashes(end int32[n], depth int32[n], labels uint64[n], out uint64[n]): clusters.path_hashes,
 * mix64(Σ labels[a]·B^(depth[a]+1) over the nodes a with a <= i < end[a], ^ depth[i]·B): the
 * running sum that adds each term at a and takes it back at end[a]. */
static PyObject *path_hashes(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *end_o, *depth_o, *labels_o, *out_o;
    if (!PyArg_ParseTuple(args, "OOOO", &end_o, &depth_o, &labels_o, &out_o)) return NULL;
    Py_buffer ev, dv, lv, ov;
    if (get_array(end_o, &ev, 4, -1, 0, "end") < 0) return NULL;
    Py_ssize_t n = ev.len / 4;
    if (get_array(depth_o, &dv, 4, n, 0, "depth") < 0) { PyBuffer_Release(&ev); return NULL; }
    if (get_array(labels_o, &lv, 8, n, 0, "labels") < 0) {
        PyBuffer_Release(&ev); PyBuffer_Release(&dv); return NULL;
    }
    if (get_array(out_o, &ov, 8, n, 1, "out") < 0) {
        PyBuffer_Release(&ev); PyBuffer_Release(&dv); PyBuffer_Release(&lv); return NULL;
    }
    const int32_t *end = ev.buf, *depth = dv.buf;
    const uint64_t *labels = lv.buf;
    uint64_t *out = ov.buf;
    PyObject *result = Py_None;
    int32_t max_depth = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (depth[i] < 0 || end[i] <= i || end[i] > n) {
            PyErr_Format(PyExc_ValueError, "node %zd: depth %d, end %d do not fit a preorder page of %zd nodes",
                         i, (int)depth[i], (int)end[i], n);
            result = NULL;
            break;
        }
        if (depth[i] > max_depth) max_depth = depth[i];
    }
    uint64_t *powers = NULL, *taken = NULL;
    if (result && n) {
        powers = PyMem_Malloc((size_t)(max_depth + 1) * sizeof(uint64_t));
        taken = PyMem_Calloc((size_t)n + 1, sizeof(uint64_t));
        if (!powers || !taken) { PyErr_NoMemory(); result = NULL; }
    }
    if (result && n) {
        key_powers(powers, max_depth);
        uint64_t acc = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            uint64_t term = labels[i] * powers[depth[i]];
            acc += term - taken[i];
            taken[end[i]] += term;
            out[i] = key_mix(acc ^ ((uint64_t)depth[i] * KEY_BASE));
        }
    }
    PyMem_Free(powers);
    PyMem_Free(taken);
    PyBuffer_Release(&ev); PyBuffer_Release(&dv); PyBuffer_Release(&lv); PyBuffer_Release(&ov);
    Py_XINCREF(result);
    return result;
}

/* menu_labels(tag int32[n], id_hash uint32[n], class_ptr int32[n+1], class_hash uint32[], out uint64[n]):
 * sitemenus.node_keys's label of every node: mix64(tag + 1) ^ mix64(id ^ salt) ^ the xor of
 * mix64(class + salt) over the node's class tokens. */
static PyObject *menu_labels(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *tag_o, *id_o, *ptr_o, *cls_o, *out_o;
    if (!PyArg_ParseTuple(args, "OOOOO", &tag_o, &id_o, &ptr_o, &cls_o, &out_o)) return NULL;
    Py_buffer v[5];
    int held = 0;
    PyObject *result = NULL;
    if (get_array(tag_o, &v[0], 4, -1, 0, "tag") < 0) return NULL;
    held = 1;
    Py_ssize_t n = v[0].len / 4;
    if (get_array(id_o, &v[1], 4, n, 0, "id_hash") < 0) goto done;
    held = 2;
    if (get_array(ptr_o, &v[2], 4, n + 1, 0, "class_ptr") < 0) goto done;
    held = 3;
    if (get_array(cls_o, &v[3], 4, -1, 0, "class_hash") < 0) goto done;
    held = 4;
    if (get_array(out_o, &v[4], 8, n, 1, "out") < 0) goto done;
    held = 5;
    const int32_t *tag = v[0].buf, *ptr = v[2].buf;
    const uint32_t *ids = v[1].buf, *cls = v[3].buf;
    uint64_t *out = v[4].buf;
    Py_ssize_t n_cls = v[3].len / 4;
    for (Py_ssize_t i = 0; i < n; i++)
        if (ptr[i] < 0 || ptr[i + 1] < ptr[i] || ptr[i + 1] > n_cls) {
            PyErr_SetString(PyExc_ValueError, "class_ptr does not fit class_hash");
            goto done;
        }
    for (Py_ssize_t i = 0; i < n; i++) out[i] = key_menu_label(tag[i], ids[i], cls, ptr[i], ptr[i + 1]);
    result = Py_None;
    Py_INCREF(result);
done:
    for (int i = 0; i < held; i++) PyBuffer_Release(&v[i]);
    return result;
}

/* cluster_labels(tag int32[n], id_hash uint32[n], flags uint16[n], volatile_flag, ids, out uint64[n]):
 * clusters.node_labels: mix64(tag + 1), xor mix64(id ^ salt) where the node has an id that
 * counts (`ids` 0 all, 1 stable: not a node flagged `volatile_flag`, 2 none). */
static PyObject *cluster_labels(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *tag_o, *id_o, *flags_o, *out_o;
    int volatile_flag, ids_mode;
    if (!PyArg_ParseTuple(args, "OOOiiO", &tag_o, &id_o, &flags_o, &volatile_flag, &ids_mode, &out_o)) return NULL;
    Py_buffer tv, iv, fv, ov;
    if (get_array(tag_o, &tv, 4, -1, 0, "tag") < 0) return NULL;
    Py_ssize_t n = tv.len / 4;
    if (get_array(id_o, &iv, 4, n, 0, "id_hash") < 0) { PyBuffer_Release(&tv); return NULL; }
    if (get_array(flags_o, &fv, 2, n, 0, "flags") < 0) { PyBuffer_Release(&tv); PyBuffer_Release(&iv); return NULL; }
    if (get_array(out_o, &ov, 8, n, 1, "out") < 0) {
        PyBuffer_Release(&tv); PyBuffer_Release(&iv); PyBuffer_Release(&fv); return NULL;
    }
    const int32_t *tag = tv.buf;
    const uint32_t *ids = iv.buf;
    const uint16_t *flags = fv.buf;
    uint64_t *out = ov.buf;
    for (Py_ssize_t i = 0; i < n; i++) out[i] = key_cluster_label(tag[i], ids[i], flags[i], volatile_flag, ids_mode);
    PyBuffer_Release(&tv); PyBuffer_Release(&iv); PyBuffer_Release(&fv); PyBuffer_Release(&ov);
    Py_RETURN_NONE;
}

/* The DOM distance of nodes a and b (edges between them): up from the deeper one until they meet. */
static inline int64_t dom_distance(const int32_t *parent, const int32_t *depth, int64_t a, int64_t b) {
    int64_t steps = 0;
    while (a != b) {
        if (depth[a] >= depth[b]) a = parent[a]; else b = parent[b];
        steps++;
        if (a < 0 || b < 0) return -1;
    }
    return steps;
}

/* dispersion(parent int32[n], depth int32[n], nodes int64[m], wanted bool[m], out int64[m]) -> k:
 * candidates._dispersion's positions, in its order, until every wanted one is out (k of them):
 * first position 0, then level by level the open positions at the largest distance v to the
 * nearest taken node, each kept in document order when it is at least v from those kept
 * before it in the level, the distances lowered once the level is taken. -1 where a distance
 * cannot be measured (nodes outside one tree). */
static PyObject *dispersion(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *parent_o, *depth_o, *nodes_o, *wanted_o, *out_o;
    if (!PyArg_ParseTuple(args, "OOOOO", &parent_o, &depth_o, &nodes_o, &wanted_o, &out_o)) return NULL;
    Py_buffer v[5];
    int held = 0;
    PyObject *result = NULL;
    int64_t *nearest = NULL, *level = NULL, *kept = NULL;
    unsigned char *taken = NULL;
    if (get_array(parent_o, &v[0], 4, -1, 0, "parent") < 0) return NULL;
    held = 1;
    Py_ssize_t n = v[0].len / 4;
    if (get_array(depth_o, &v[1], 4, n, 0, "depth") < 0) goto done;
    held = 2;
    if (get_array(nodes_o, &v[2], 8, -1, 0, "nodes") < 0) goto done;
    held = 3;
    Py_ssize_t m = v[2].len / 8;
    if (get_array(wanted_o, &v[3], 1, m, 0, "wanted") < 0) goto done;
    held = 4;
    if (get_array(out_o, &v[4], 8, m, 1, "out") < 0) goto done;
    held = 5;
    const int32_t *parent = v[0].buf, *depth = v[1].buf;
    const int64_t *nodes = v[2].buf;
    const unsigned char *wanted = v[3].buf;
    int64_t *out = v[4].buf;
    for (Py_ssize_t j = 0; j < m; j++)
        if (nodes[j] < 0 || nodes[j] >= n || (j && nodes[j] < nodes[j - 1])) {
            PyErr_SetString(PyExc_ValueError, "dispersion: nodes must be nodes of the page in document order");
            goto done;
        }
    for (Py_ssize_t i = 0; i < n; i++)
        if (parent[i] >= i || depth[i] < 0 || (parent[i] < 0 && depth[i] != 0)
            || (parent[i] >= 0 && depth[i] != depth[parent[i]] + 1)) {
            PyErr_SetString(PyExc_ValueError, "dispersion: parent and depth are not a preorder page's");
            goto done;
        }
    Py_ssize_t k = 0, pending = 0;
    for (Py_ssize_t j = 0; j < m; j++) pending += wanted[j] != 0;
    if (m == 0 || pending == 0) { result = PyLong_FromSsize_t(0); goto done; }
    nearest = PyMem_Malloc((size_t)m * sizeof(int64_t));
    level = PyMem_Malloc((size_t)m * sizeof(int64_t));
    kept = PyMem_Malloc((size_t)m * sizeof(int64_t));
    taken = PyMem_Calloc((size_t)m, 1);
    if (!nearest || !level || !kept || !taken) { PyErr_NoMemory(); goto done; }
    taken[0] = 1;
    out[k++] = 0;
    pending -= wanted[0] != 0;
    for (Py_ssize_t j = 0; j < m; j++) nearest[j] = dom_distance(parent, depth, nodes[0], nodes[j]);
    while (pending > 0) {
        int64_t top = -1;
        for (Py_ssize_t j = 0; j < m; j++)
            if (!taken[j] && nearest[j] > top) top = nearest[j];
        if (top < 0) break;
        Py_ssize_t levels = 0, kepts = 0;
        for (Py_ssize_t j = 0; j < m; j++)
            if (!taken[j] && nearest[j] == top) level[levels++] = j;
        for (Py_ssize_t a = 0; a < levels; a++) {
            int64_t x = nodes[level[a]];
            int keep = 1;
            for (Py_ssize_t b = 0; b < kepts && keep; b++)
                if (dom_distance(parent, depth, nodes[kept[b]], x) < top) keep = 0;
            if (keep) kept[kepts++] = level[a];
        }
        for (Py_ssize_t b = 0; b < kepts; b++) {
            out[k++] = kept[b];
            pending -= wanted[kept[b]] != 0;
            if (pending == 0) break;
        }
        if (pending == 0) break;
        for (Py_ssize_t b = 0; b < kepts; b++) {
            taken[kept[b]] = 1;
            int64_t s = nodes[kept[b]];
            for (Py_ssize_t j = 0; j < m; j++) {
                int64_t d = dom_distance(parent, depth, s, nodes[j]);
                if (d < nearest[j]) nearest[j] = d;
            }
        }
    }
    result = PyLong_FromSsize_t(k);
done:
    PyMem_Free(nearest); PyMem_Free(level); PyMem_Free(kept); PyMem_Free(taken);
    for (int i = 0; i < held; i++) PyBuffer_Release(&v[i]);
    return result;
}

static PyMethodDef methods[] = {
    {"dispersion", dispersion, METH_VARARGS,
     "dispersion(parent, depth, nodes, wanted, out) -> k: candidates._dispersion's first k positions."},
    {"cluster_labels", cluster_labels, METH_VARARGS,
     "cluster_labels(tag, id_hash, flags, volatile_flag, ids, out): clusters.node_labels of every node."},
    {"path_hashes", path_hashes, METH_VARARGS,
     "path_hashes(end, depth, labels, out): clusters.path_hashes of every node."},
    {"menu_labels", menu_labels, METH_VARARGS,
     "menu_labels(tag, id_hash, class_ptr, class_hash, out): sitemenus.node_keys's label of every node."},
    {"role_nodes", role_nodes, METH_VARARGS,
     "role_nodes(parent, tag, end, context, contains, first, owner, context_out, contains_out): "
     "features._role_columns's element columns."},
    {"role_text", role_text, METH_VARARGS,
     "role_text(texts, heads3, heads2, out): per block text, ASCII upper case and letters, and a possible role start."},
    {"page_blocks", page_blocks, METH_VARARGS,
     "page_blocks(...): blocks.page_blocks's arrays written into arrays of the page's length; (text nodes, blocks)."},
    {"region_columns", region_columns, METH_VARARGS,
     "region_columns(p, w, ancestors, total, out): region.region_features's columns but the own ones (raw; see above)."},
    {"role_any", role_any, METH_VARARGS,
     "role_any(texts, blocks, out): per listed block, the groups of features._role_any's scan that match it."},
    {"count_strings", count_strings, METH_VARARGS,
     "count_strings(text, strings, out): text.count(s) of every string."},
    {"text_columns", text_columns, METH_VARARGS,
     "text_columns(texts, counts): per block text, the counts and pattern bits of features.py's text columns."},
    {"text_role_columns", text_role_columns, METH_VARARGS,
     "text_role_columns(texts, words, short_words, heads3, heads2, counts, roles, cue_strings, cue_words, cues): "
     "text_columns, role_text, role_any and count_lowered of a page's block texts in one pass."},
    {"text_keys", text_keys, METH_VARARGS, "text_keys(texts, keys): features.text_key of every text."},
    {"subtree_totals", subtree_totals, METH_VARARGS,
     "subtree_totals(parent, tag, flags, words, chars, link_flag, in_link_flag, a_tag, totals, word_ratio): "
     "tree.py's subtree totals and conex_page.word_ratio."},
    {"menu_scores", menu_scores, METH_VARARGS,
     "menu_scores(tag, child_count, flags, end, hyperlinks, chars, ul_tag, representative_flag, w, rated, out): "
     "menex.menu_features and menu_weights."},
    {"children", children_csr, METH_VARARGS,
     "children(parent, ptr, idx): tree.children's CSR arrays of a preorder page."},
    {"template_votes", template_votes, METH_VARARGS,
     "template_votes(occ, votes, parent, tag, line, words, a_tag, by_line, template, nontemplate): "
     "template.detect_template's masks and word totals around the mappings."},
    {"nearest_in_mask", nearest_in_mask, METH_VARARGS,
     "nearest_in_mask(parent, mask, out): tree.nearest_in_mask (the node itself included) of a preorder page."},
    {"sibling_shapes", sibling_shapes, METH_VARARGS,
     "sibling_shapes(parent, tag, class_ptr, class_hash, text_tag, same_shape, same_tag): features._sibling_shapes."},
    {"structure_columns", structure_columns, METH_VARARGS,
     "structure_columns(...): block_features's owner, position and neighbour columns (raw; see above)."},
    {"owner_hints", owner_hints, METH_VARARGS,
     "owner_hints(parent, hints, owner, near_levels, far_levels, near, far): block_features's near/far hint bits."},
    {"site_columns", site_columns, METH_VARARGS,
     "site_columns(occ, tag, words, end, words_below, text_nodes, ptr, owner, block_words, up, n_cand, out)."},
    {"conex_columns", conex_columns, METH_VARARGS,
     "conex_columns(word, hyperlink, children, position, rated, rated_owner, out): the page ConEx columns."},
    {"count_lowered", count_lowered, METH_VARARGS,
     "count_lowered(texts, blocks, strings, out): counts of each string in the listed texts, lower-cased."},
    {"page_conex", page_conex, METH_VARARGS,
     "page_conex(parent, tag, child_count, depth, end, excluded, unknown, word, links, words_below, "
     "elements_below, text_nodes_below, text_tag, a_tag, c, max_words, mask, rated, hyperlink, children, "
     "position) -> 0 (nothing rated), 1 (wide page) or 2: conex_page.main_content_and_features."},
    {"menu_pick", menu_pick, METH_VARARGS,
     "menu_pick(parent, ptr, kids, end, weights, candidate_t, root_t, menu_t, roots, scores) -> (k, node): "
     "MenEx's roots, their Alg. 2 scores and select_menu's node."},
    {"owner_ancestors", owner_ancestors, METH_VARARGS,
     "owner_ancestors(parent, owner, out): each owner and its ancestors level by level."},
    {"bit_columns", bit_columns, METH_VARARGS, "bit_columns(bits, x, first, count): bits spread over columns of x."},
    {"put_columns", put_columns, METH_VARARGS,
     "put_columns(src, x, at): x[:, at[k]] = src[:, k], in x's type."},
    {"count_columns", count_columns, METH_VARARGS,
     "count_columns(counts, x, at, patterns): features.py _count_columns's columns of text_columns's counts."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_features",
                                    "Block texts' columns and identities, compiled (see features.py).",
                                    -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__features(void) {
    crc_init();
    role_cues_init();
    may_start_init();
    ascii_class_init();
    lower_name = PyUnicode_InternFromString("lower");
    if (lower_name == NULL) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "COLUMNS", C_COUNT) < 0) { Py_DECREF(m); return NULL; }
    return m;
}

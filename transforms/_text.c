/* Text spans of a page's text, compiled: the string building behind every text the product
 * writes (transforms/text.py: main_text, nontemplate_text, block and menu texts), the
 * collapsed texts ETDM compares (etdm.py compiled_side), and the word hashes, signatures and
 * near pairs of the duplicate search (duplicates.py).
 *
 * joined_spans and collapsed_spans only cut a str into spans and concatenate them, with
 * separators or with whitespace collapsed; what the spans and separators are stays decided in
 * Python (text.py, etdm.py). run_texts, for a page's block texts, also decides the separators
 * in its one pass. The Python expressions each function replaces stay the reference: text.py
 * `pieces` joined, `separators` and `joined`, page.py `collapsed_texts`
 * (tests/transforms/test_text.py, tests/transforms/test_etdm.py).
 *
 * Only the Python C API and the buffer protocol are used (no numpy headers). Spans are built
 * as UCS4, or in the text's own kind (run_texts), and handed to PyUnicode_FromKindAndData,
 * which picks the narrowest kind, so a result is the same str object value Python's slicing
 * and joining give (lone surrogates included).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_buffers.h"

static int get_int64(PyObject *obj, Py_buffer *view, int writable, const char *what) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) return -1;
    if (view->ndim != 1 || view->itemsize != 8) {
        PyErr_Format(PyExc_TypeError, "%s: expected a contiguous 1-d array of 8-byte items", what);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static int get_int8(PyObject *obj, Py_buffer *view, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    if (view->ndim != 1 || view->itemsize != 1) {
        PyErr_Format(PyExc_TypeError, "%s: expected a contiguous 1-d array of 1-byte items", what);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* Every span inside the text; the sum of their lengths in *total. */
static int check_spans(const int64_t *starts, const int64_t *ends, Py_ssize_t n, Py_ssize_t text_len,
                       Py_ssize_t *total) {
    *total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (starts[i] < 0 || starts[i] > ends[i] || ends[i] > text_len) {
            PyErr_Format(PyExc_ValueError, "span %zd [%lld, %lld) outside the text (%zd characters)",
                         i, (long long)starts[i], (long long)ends[i], text_len);
            return -1;
        }
        *total += (Py_ssize_t)(ends[i] - starts[i]);
    }
    return 0;
}

/* collapsed_spans(text, starts, ends, lengths): the spans text[starts[i]:ends[i]] each
 * whitespace-collapsed as Python's " ".join(span.split()) collapses it (runs of
 * Py_UNICODE_ISSPACE characters, the ones str.split() splits on, become one space; none at
 * either end), concatenated into one str; lengths[i] (int64, written) is span i's collapsed
 * length. etdm.py compiled_side puts verbatim <pre> texts this way after the page text;
 * page.py collapsed_texts is the reference (tests/test_etdm_compiled.py). */
static PyObject *collapsed_spans(PyObject *self, PyObject *args) {
    PyObject *text, *starts_obj, *ends_obj, *lengths_obj, *out = NULL;
    if (!PyArg_ParseTuple(args, "UOOO", &text, &starts_obj, &ends_obj, &lengths_obj)) return NULL;
    Py_buffer sv, ev, lv;
    int held = 0;
    Py_UCS4 *buf = NULL;
    if (get_int64(starts_obj, &sv, 0, "starts") < 0) goto done;
    held = 1;
    if (get_int64(ends_obj, &ev, 0, "ends") < 0) goto done;
    held = 2;
    if (get_int64(lengths_obj, &lv, 1, "lengths") < 0) goto done;
    held = 3;
    Py_ssize_t n = sv.len / 8;
    const int64_t *starts = sv.buf, *ends = ev.buf;
    int64_t *lengths = lv.buf;
    if (ev.len / 8 != n || lv.len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "starts, ends and lengths must be int64 arrays of one length");
        goto done;
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t total;
    if (check_spans(starts, ends, n, PyUnicode_GET_LENGTH(text), &total) < 0) goto done;
    /* A collapsed span is never longer than the span. */
    buf = PyMem_Malloc((size_t)(total + 1) * sizeof(Py_UCS4));
    if (buf == NULL) { PyErr_NoMemory(); goto done; }
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t first = at;
        int words = 0, gap = 0;
        for (Py_ssize_t j = (Py_ssize_t)starts[i]; j < (Py_ssize_t)ends[i]; j++) {
            Py_UCS4 ch = PyUnicode_READ(kind, data, j);
            if (Py_UNICODE_ISSPACE(ch)) {
                gap = words;
            } else {
                if (gap) { buf[at++] = ' '; gap = 0; }
                buf[at++] = ch;
                words = 1;
            }
        }
        lengths[i] = (int64_t)(at - first);
    }
    out = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buf, at);
done:
    PyMem_Free(buf);
    if (held >= 3) PyBuffer_Release(&lv);
    if (held >= 2) PyBuffer_Release(&ev);
    if (held >= 1) PyBuffer_Release(&sv);
    return out;
}

/* joined_spans(text, starts, ends, codes, bounds): for each run r, the str
 *   SEP[codes[k]] + text[starts[k]:ends[k]]  for k in bounds[r] .. bounds[r + 1] - 1,
 * concatenated, SEP = ("", " ", "\n") (text.py _SEPARATOR): a list with a str per run (len(bounds) - 1
 * of them). A run whose end is at or before its start is "", as Python's slice parts[a:b]. */
static PyObject *joined_spans(PyObject *self, PyObject *args) {
    PyObject *text, *starts_obj, *ends_obj, *codes_obj, *bounds_obj, *out = NULL;
    if (!PyArg_ParseTuple(args, "UOOOO", &text, &starts_obj, &ends_obj, &codes_obj, &bounds_obj)) return NULL;
    Py_buffer sv, ev, cv, bv;
    int held = 0;
    Py_UCS4 *buf = NULL;
    if (get_int64(starts_obj, &sv, 0, "starts") < 0) goto done;
    held = 1;
    if (get_int64(ends_obj, &ev, 0, "ends") < 0) goto done;
    held = 2;
    if (get_int8(codes_obj, &cv, "codes") < 0) goto done;
    held = 3;
    if (get_int64(bounds_obj, &bv, 0, "bounds") < 0) goto done;
    held = 4;
    Py_ssize_t n = sv.len / 8, runs = bv.len / 8 - 1;
    const int64_t *starts = sv.buf, *ends = ev.buf, *bounds = bv.buf;
    const int8_t *codes = cv.buf;
    if (ev.len / 8 != n || cv.len != n) {
        PyErr_SetString(PyExc_ValueError, "starts, ends and codes must have one length");
        goto done;
    }
    if (runs < 0) {
        PyErr_SetString(PyExc_ValueError, "bounds must hold at least one value");
        goto done;
    }
    for (Py_ssize_t r = 0; r <= runs; r++) {
        if (bounds[r] < 0 || bounds[r] > n) {
            PyErr_Format(PyExc_ValueError, "bound %lld outside [0, %zd]", (long long)bounds[r], n);
            goto done;
        }
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        if (codes[k] < 0 || codes[k] > 2) {
            PyErr_Format(PyExc_ValueError, "separator code %d is not 0, 1 or 2", (int)codes[k]);
            goto done;
        }
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t total;
    if (check_spans(starts, ends, n, PyUnicode_GET_LENGTH(text), &total) < 0) goto done;
    /* The longest run is at most every span and a separator before each. */
    buf = PyMem_Malloc((size_t)(total + n + 1) * sizeof(Py_UCS4));
    if (buf == NULL) { PyErr_NoMemory(); goto done; }
    out = PyList_New(runs);
    if (out == NULL) goto done;
    for (Py_ssize_t r = 0; r < runs; r++) {
        Py_ssize_t at = 0;
        for (Py_ssize_t k = (Py_ssize_t)bounds[r]; k < (Py_ssize_t)bounds[r + 1]; k++) {
            if (codes[k] == 1) buf[at++] = ' ';
            else if (codes[k] == 2) buf[at++] = '\n';
            for (Py_ssize_t j = (Py_ssize_t)starts[k]; j < (Py_ssize_t)ends[k]; j++)
                buf[at++] = PyUnicode_READ(kind, data, j);
        }
        PyObject *s = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buf, at);
        if (s == NULL) { Py_CLEAR(out); goto done; }
        PyList_SET_ITEM(out, r, s);
    }
done:
    PyMem_Free(buf);
    if (held >= 4) PyBuffer_Release(&bv);
    if (held >= 3) PyBuffer_Release(&cv);
    if (held >= 2) PyBuffer_Release(&ev);
    if (held >= 1) PyBuffer_Release(&sv);
    return out;
}

static int get_items(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, Py_ssize_t items, const char *what) {
    return get_array(obj, view, itemsize, items, 0, what);
}

/* subtree_texts(tag int32[n], flags uint16[n], line int32[n], end int32[n], text, text_ptr int32[n+1],
 *               nodes int32[m], text_tag, space_flags) -> list of m str:
 * per node, its subtree's text nodes (tag text_tag in [node, end[node])) joined as text.py
 * joins a run of consecutive text nodes: a newline before one whose `line` moved since the
 * previous one, else a space where its flags have one of `space_flags`, else nothing; nothing
 * before the first. outlinks.py `_anchor_texts` (numpy, text.separators and text.joined) is the
 * reference. Costs the subtrees' sizes, not the page's. */
static PyObject *subtree_texts(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[6], *text, *out = NULL;
    int text_tag, space_flags;
    if (!PyArg_ParseTuple(args, "OOOOUOOii", &objs[0], &objs[1], &objs[2], &objs[3], &text, &objs[4], &objs[5],
                          &text_tag, &space_flags))
        return NULL;
    static const Py_ssize_t sizes[6] = {4, 2, 4, 4, 4, 4};
    static const char *names[6] = {"tag", "flags", "line", "end", "text_ptr", "nodes"};
    Py_buffer v[6];
    Py_ssize_t n = -1;
    int got = 0;
    Py_UCS4 *buf = NULL;
    for (; got < 6; got++) {
        Py_ssize_t items = got == 0 || got == 5 ? -1 : got == 4 ? n + 1 : n;
        if (get_items(objs[got], &v[got], sizes[got], items, names[got]) < 0) goto done;
        if (got == 0) n = v[0].len / 4;
    }
    const int32_t *tag = v[0].buf, *line = v[2].buf, *end = v[3].buf, *ptr = v[4].buf, *nodes = v[5].buf;
    const uint16_t *flags = v[1].buf;
    Py_ssize_t m = v[5].len / 4, length = PyUnicode_GET_LENGTH(text), cap = 0;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    /* Checked first: every range inside the page, every text span inside the text. */
    for (Py_ssize_t r = 0; r < m; r++) {
        int32_t lo = nodes[r];
        if (lo < 0 || lo >= n || end[lo] < lo || end[lo] > n) {
            PyErr_Format(PyExc_ValueError, "node %d or its end outside the page (%zd nodes)", (int)lo, n);
            goto done;
        }
        Py_ssize_t size = 0;
        for (int32_t i = lo; i < end[lo]; i++) {
            if (tag[i] != text_tag) continue;
            if (ptr[i] < 0 || ptr[i + 1] < ptr[i] || ptr[i + 1] > length) {
                PyErr_Format(PyExc_ValueError, "text_ptr of node %d outside the page's text", (int)i);
                goto done;
            }
            size += ptr[i + 1] - ptr[i] + 1;
        }
        if (size > cap) cap = size;
    }
    buf = PyMem_Malloc((size_t)(cap + 1) * sizeof(Py_UCS4));
    if (buf == NULL) { PyErr_NoMemory(); goto done; }
    out = PyList_New(m);
    if (out == NULL) goto done;
    for (Py_ssize_t r = 0; r < m; r++) {
        int32_t lo = nodes[r], previous = -1;
        Py_ssize_t at = 0;
        for (int32_t i = lo; i < end[lo]; i++) {
            if (tag[i] != text_tag) continue;
            if (previous >= 0) {
                if (line[i] != line[previous]) buf[at++] = '\n';
                else if (flags[i] & space_flags) buf[at++] = ' ';
            }
            for (int32_t j = ptr[i]; j < ptr[i + 1]; j++) buf[at++] = PyUnicode_READ(kind, data, j);
            previous = i;
        }
        PyObject *s = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buf, at);
        if (s == NULL) { Py_CLEAR(out); goto done; }
        PyList_SET_ITEM(out, r, s);
    }
done:
    PyMem_Free(buf);
    for (int j = 0; j < got; j++) PyBuffer_Release(&v[j]);
    return out;
}

/* run_texts(flags uint16[n], line int32[n], text, text_ptr int32[n+1], idx int64[m], starts int64[r],
 *           space_flags) -> list of r str:
 * text.py run_texts in one pass: run k is idx[starts[k]:starts[k + 1]] (the last up to m, a
 * start past m taken as m), its text nodes joined with a newline before one whose `line` moved
 * since the previous node of idx, else a space where its flags have one of `space_flags`, and
 * nothing before a node at any run's start. Built in the text's own kind (its spans copied
 * whole, not read a character at a time), which PyUnicode_FromKindAndData narrows as it does
 * joined_spans' UCS4: the same str. text.py's separators and joined are the reference. */
static PyObject *run_texts(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[6], *text, *out = NULL;
    int space_flags;
    if (!PyArg_ParseTuple(args, "OOUOOOi", &objs[0], &objs[1], &text, &objs[2], &objs[3], &objs[4], &space_flags))
        return NULL;
    static const Py_ssize_t sizes[5] = {2, 4, 4, 8, 8};
    static const char *names[5] = {"flags", "line", "text_ptr", "idx", "starts"};
    Py_buffer v[5];
    Py_ssize_t n = -1;
    int got = 0;
    char *buf = NULL;
    uint8_t *fresh = NULL;
    for (; got < 5; got++) {
        Py_ssize_t items = got == 0 || got >= 3 ? -1 : got == 2 ? n + 1 : n;
        if (get_items(objs[got], &v[got], sizes[got], items, names[got]) < 0) goto done;
        if (got == 0) n = v[0].len / 2;
    }
    const uint16_t *flags = v[0].buf;
    const int32_t *line = v[1].buf, *ptr = v[2].buf;
    const int64_t *idx = v[3].buf, *starts = v[4].buf;
    Py_ssize_t m = v[3].len / 8, runs = v[4].len / 8, length = PyUnicode_GET_LENGTH(text), total = 0;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    for (Py_ssize_t k = 0; k < m; k++) {
        int64_t i = idx[k];
        if (i < 0 || i >= n) {
            PyErr_Format(PyExc_ValueError, "text node %lld outside the page (%zd nodes)", (long long)i, n);
            goto done;
        }
        if (ptr[i] < 0 || ptr[i + 1] < ptr[i] || ptr[i + 1] > length) {
            PyErr_Format(PyExc_ValueError, "text_ptr of node %lld outside the page's text", (long long)i);
            goto done;
        }
        total += ptr[i + 1] - ptr[i] + 1;
    }
    /* fresh[k]: a run starts at k, so nothing goes before it. */
    fresh = PyMem_Calloc((size_t)m + 1, 1);
    buf = PyMem_Malloc((size_t)(total + 1) * (size_t)kind);
    if (fresh == NULL || buf == NULL) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t r = 0; r < runs; r++) {
        if (starts[r] < 0) {
            PyErr_Format(PyExc_ValueError, "run start %lld is negative", (long long)starts[r]);
            goto done;
        }
        if (starts[r] < m) fresh[starts[r]] = 1;
    }
    fresh[0] = 1;
    out = PyList_New(runs);
    if (out == NULL) goto done;
    for (Py_ssize_t r = 0; r < runs; r++) {
        Py_ssize_t a = starts[r] < m ? (Py_ssize_t)starts[r] : m;
        Py_ssize_t b = r + 1 < runs ? (starts[r + 1] < m ? (Py_ssize_t)starts[r + 1] : m) : m;
        Py_ssize_t at = 0;
        for (Py_ssize_t k = a; k < b; k++) {
            int64_t i = idx[k];
            if (!fresh[k]) {
                if (line[i] != line[idx[k - 1]]) PyUnicode_WRITE(kind, buf, at++, '\n');
                else if (flags[i] & space_flags) PyUnicode_WRITE(kind, buf, at++, ' ');
            }
            memcpy(buf + (size_t)at * kind, (const char *)data + (size_t)ptr[i] * kind,
                   (size_t)(ptr[i + 1] - ptr[i]) * kind);
            at += ptr[i + 1] - ptr[i];
        }
        PyObject *s = PyUnicode_FromKindAndData(kind, buf, at);
        if (s == NULL) { Py_CLEAR(out); goto done; }
        PyList_SET_ITEM(out, r, s);
    }
done:
    PyMem_Free(buf);
    PyMem_Free(fresh);
    for (int j = 0; j < got; j++) PyBuffer_Release(&v[j]);
    return out;
}

/* Word hashes for duplicate detection (transforms/duplicates.py `word_hashes`, whose numpy
 * expression is the reference): words are runs of ASCII letters, digits and "_" (ASCII
 * lower-cased) and of non-ASCII characters other than the punctuation and spaces below; a
 * word's hash is the sum of (byte + 1) * P^i over its bytes modulo 2^64, finalized by
 * MurmurHash3's fmix64. One pass over the UTF-8, no Python object per word. */
#define WORD_P 0x100000001B3ULL

static uint64_t fmix64(uint64_t h) {
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDULL;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ULL;
    return h ^ (h >> 33);
}

/* Bytes of the separator character at s (0 if none): U+00A0-U+00BF, U+2000-U+206F, U+2122,
 * U+3000-U+303F, U+FF01-U+FF0F, U+FF1A-U+FF20 (duplicates.py _NOT_WORDS). */
static int separator_len(const unsigned char *s, Py_ssize_t left) {
    if (left >= 2 && s[0] == 0xC2 && s[1] >= 0xA0 && s[1] <= 0xBF) return 2;
    if (left < 3) return 0;
    if (s[0] == 0xE2) {
        if (s[1] == 0x80 && s[2] >= 0x80 && s[2] <= 0xBF) return 3;
        if (s[1] == 0x81 && s[2] >= 0x80 && s[2] <= 0xAF) return 3;
        if (s[1] == 0x84 && s[2] == 0xA2) return 3;
        return 0;
    }
    if (s[0] == 0xE3 && s[1] == 0x80 && s[2] >= 0x80 && s[2] <= 0xBF) return 3;
    if (s[0] == 0xEF && s[1] == 0xBC && ((s[2] >= 0x81 && s[2] <= 0x8F) || (s[2] >= 0x9A && s[2] <= 0xA0)))
        return 3;
    return 0;
}

/* A word's rolling hash as word_hashes and word_hashes_text share it: each UTF-8 byte b of
 * the word adds (b + 1) * WORD_P^k, and a word's end stores fmix64 of the sum. One definition,
 * so the bytes and the str readers hash alike. */
typedef struct {
    uint64_t h, power;
    int inside;
} WordHash;

static inline void word_byte(WordHash *w, unsigned char b) {
    w->h += ((uint64_t)b + 1) * w->power;
    w->power *= WORD_P;
    w->inside = 1;
}

/* Ends the word being hashed, if any, into words[*count]. */
static inline void word_end(WordHash *w, uint64_t *words, Py_ssize_t *count) {
    if (!w->inside) return;
    words[(*count)++] = fmix64(w->h);
    w->h = 0;
    w->power = 1;
    w->inside = 0;
}

/* Whether a lower-cased ASCII character belongs to a word. */
static inline int ascii_word(Py_UCS4 c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

static PyObject *word_hashes(PyObject *self, PyObject *args) {
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "y*", &buf)) return NULL;
    const unsigned char *s = buf.buf;
    Py_ssize_t n = buf.len, count = 0;
    PyObject *out = PyBytes_FromStringAndSize(NULL, ((n + 1) / 2 + 1) * 8);
    if (out == NULL) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    uint64_t *words = (uint64_t *)PyBytes_AS_STRING(out);
    WordHash w = {0, 1, 0};
    Py_ssize_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        int len = 1, word;
        if (c < 0x80) {
            if (c >= 'A' && c <= 'Z') c += 32;
            word = ascii_word(c);
        } else {
            len = separator_len(s + i, n - i);
            word = len == 0;
            if (word) len = 1;
        }
        if (word) word_byte(&w, c);
        else word_end(&w, words, &count);
        i += len;
    }
    word_end(&w, words, &count);
    PyBuffer_Release(&buf);
    if (_PyBytes_Resize(&out, count * 8) < 0) return NULL;
    return out;
}

/* Whether code point c is one of separator_len's characters. */
static int separator_cp(Py_UCS4 c) {
    return (c >= 0xA0 && c <= 0xBF) || (c >= 0x2000 && c <= 0x206F) || c == 0x2122 ||
           (c >= 0x3000 && c <= 0x303F) || (c >= 0xFF01 && c <= 0xFF0F) || (c >= 0xFF1A && c <= 0xFF20);
}

/* The loop of word_hashes_text for one kind of str, which each call site below fixes, so that
 * every character is read without a switch on the kind. */
static inline __attribute__((always_inline)) Py_ssize_t hash_words_of(int kind, const void *data, Py_ssize_t n,
                                                                    int lower, uint64_t *words) {
    Py_ssize_t count = 0;
    WordHash w = {0, 1, 0};
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        int word;
        if (c < 0x80) {
            if (c >= 'A' && c <= 'Z') c += 32;
            word = ascii_word(c);
        } else {
            if (lower) c = Py_UNICODE_TOLOWER(c);
            word = c < 0x80 ? ascii_word(c) : !separator_cp(c);
        }
        if (word) {
            unsigned char b[4];
            int len;
            if (c < 0x80) { b[0] = (unsigned char)c; len = 1; }
            else if (c < 0x800) { b[0] = 0xC0 | (c >> 6); b[1] = 0x80 | (c & 0x3F); len = 2; }
            else if (c < 0x10000) {
                b[0] = 0xE0 | (c >> 12); b[1] = 0x80 | ((c >> 6) & 0x3F); b[2] = 0x80 | (c & 0x3F); len = 3;
            } else {
                b[0] = 0xF0 | (c >> 18); b[1] = 0x80 | ((c >> 12) & 0x3F); b[2] = 0x80 | ((c >> 6) & 0x3F);
                b[3] = 0x80 | (c & 0x3F); len = 4;
            }
            for (int j = 0; j < len; j++) word_byte(&w, b[j]);
        } else {
            word_end(&w, words, &count);
        }
    }
    word_end(&w, words, &count);
    return count;
}

/* word_hashes_text(text, lower): word_hashes of text.lower() encoded as UTF-8 ("surrogatepass"),
 * read from the str itself: each code point lower-cased (Py_UNICODE_TOLOWER, the first
 * character of str.lower's mapping; only ASCII with `lower` 0, for a text lowered already) and
 * hashed as the bytes of its UTF-8. str.lower differs from that per-character mapping only
 * where it gives several characters (U+0130) or looks at the context (U+03A3, final sigma):
 * the caller lowers a text holding either first. No lowered copy, no UTF-8 copy. */
static PyObject *word_hashes_text(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text;
    int lower;
    if (!PyArg_ParseTuple(args, "Up", &text, &lower)) return NULL;
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), count;
    /* a word needs a character, and a separator after it unless it ends the text */
    PyObject *out = PyBytes_FromStringAndSize(NULL, ((n + 1) / 2 + 1) * 8);
    if (out == NULL) return NULL;
    uint64_t *words = (uint64_t *)PyBytes_AS_STRING(out);
    switch (PyUnicode_KIND(text)) {
    case PyUnicode_1BYTE_KIND: count = hash_words_of(PyUnicode_1BYTE_KIND, data, n, lower, words); break;
    case PyUnicode_2BYTE_KIND: count = hash_words_of(PyUnicode_2BYTE_KIND, data, n, lower, words); break;
    default: count = hash_words_of(PyUnicode_4BYTE_KIND, data, n, lower, words); break;
    }
    if (_PyBytes_Resize(&out, count * 8) < 0) return NULL;
    return out;
}

/* near_signature(words uint64[n], k, num_perm) -> bytes of uint32[num_perm]: duplicates.py
 * near_signature (shingle_hashes then minhash) for n >= 1. A shingle's hash is the k words
 * folded by h * P + word, finalized by fmix64; a bin keeps its least shingle hash (what the
 * reference's sort puts first), its value the low 32 bits; an empty bin takes the next filled
 * bin's (circularly) plus the distance times the rotation constant. All modulo 2^64 / 2^32,
 * so every value is the reference's. */
#define ROTATION 0x9E3779B1U

static PyObject *near_signature(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *words_o;
    Py_ssize_t k, num_perm;
    if (!PyArg_ParseTuple(args, "Onn", &words_o, &k, &num_perm)) return NULL;
    Py_buffer wv;
    if (get_int64(words_o, &wv, 0, "words") < 0) return NULL;
    const uint64_t *words = wv.buf;
    Py_ssize_t n = wv.len / 8;
    if (n < 1 || k < 1 || num_perm < 1 || num_perm > 4096) {
        PyBuffer_Release(&wv);
        PyErr_SetString(PyExc_ValueError, "near_signature: needs words, k >= 1 and 1 <= num_perm <= 4096");
        return NULL;
    }
    if (k > n) k = n;
    uint64_t least[4096];
    unsigned char filled[4096];
    memset(filled, 0, (size_t)num_perm);
    for (Py_ssize_t s = 0; s + k <= n; s++) {
        uint64_t h = 0;
        for (Py_ssize_t j = 0; j < k; j++) h = h * WORD_P + words[s + j];
        h = fmix64(h);
        uint64_t bin = ((h >> 32) * (uint64_t)num_perm) >> 32;
        if (!filled[bin] || h < least[bin]) { least[bin] = h; filled[bin] = 1; }
    }
    PyBuffer_Release(&wv);
    PyObject *out = PyBytes_FromStringAndSize(NULL, num_perm * 4);
    if (out == NULL) return NULL;
    uint32_t *values = (uint32_t *)PyBytes_AS_STRING(out);
    /* donor of each bin: the first filled bin at or after it, else the first filled bin */
    Py_ssize_t first_filled = 0;
    while (!filled[first_filled]) first_filled++;
    Py_ssize_t donor = first_filled;
    for (Py_ssize_t at = num_perm - 1; at >= 0; at--) {
        if (filled[at]) donor = at;
        Py_ssize_t distance = ((donor - at) % num_perm + num_perm) % num_perm;
        values[at] = (uint32_t)(least[donor] & 0xFFFFFFFFULL) + (uint32_t)distance * ROTATION;
    }
    return out;
}

/* near_pairs(matrix, n, num_perm, rows, need) -> bytes of int64 (p, q) pairs, p < q, sorted:
 * duplicates.py _near_pairs over the n signatures of `matrix` (uint32[n][num_perm], C order,
 * the reference's np.stack). A pair is a candidate when its two rows agree on a whole band
 * (rows values from a multiple of `rows`, whole bands only), and kept when they agree in at
 * least `need` values. Each band's rows are sorted by their bytes, so equal bands are
 * neighbours; a pair that already agreed on an earlier band was judged there, so no set of
 * candidates is held, only the kept pairs. The reference's np.unique per band cost 20 µs
 * each, 16 per shard of a few pages: most of news-dragnet-dev's duplicate search. */
static const uint32_t *band_base;
static Py_ssize_t band_stride, band_bytes;

static int band_order(const void *a, const void *b) {
    Py_ssize_t i = *(const Py_ssize_t *)a, j = *(const Py_ssize_t *)b;
    int c = memcmp(band_base + i * band_stride, band_base + j * band_stride, (size_t)band_bytes);
    return c ? c : (i < j ? -1 : i > j);
}

static int pair_order(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

static PyObject *near_pairs(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *matrix_o;
    Py_ssize_t n, num_perm, rows;
    double need;
    if (!PyArg_ParseTuple(args, "Onnnd", &matrix_o, &n, &num_perm, &rows, &need)) return NULL;
    if (n < 0 || num_perm < 1 || rows < 1 || rows > num_perm) {
        PyErr_SetString(PyExc_ValueError, "near_pairs: needs n >= 0 and 1 <= rows <= num_perm");
        return NULL;
    }
    Py_buffer mv;
    if (PyObject_GetBuffer(matrix_o, &mv, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (mv.len != n * num_perm * 4) {
        PyBuffer_Release(&mv);
        PyErr_Format(PyExc_ValueError, "near_pairs: matrix of %zd bytes, not %zd x %zd uint32", mv.len, n, num_perm);
        return NULL;
    }
    const uint32_t *m = mv.buf;
    Py_ssize_t *order = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(Py_ssize_t));
    int64_t *kept = NULL;
    Py_ssize_t count = 0, cap = 0;
    if (order == NULL) goto nomem;
    band_base = m;
    band_stride = num_perm;
    for (Py_ssize_t start = 0; start + rows <= num_perm && n > 1; start += rows) {
        for (Py_ssize_t i = 0; i < n; i++) order[i] = i;
        band_base = m + start;
        band_bytes = rows * 4;
        qsort(order, (size_t)n, sizeof(Py_ssize_t), band_order);
        for (Py_ssize_t a = 0; a < n;) {
            Py_ssize_t b = a + 1;
            while (b < n && memcmp(m + order[a] * num_perm + start, m + order[b] * num_perm + start,
                                   (size_t)(rows * 4)) == 0) b++;
            /* order[a..b) share this band, ascending by index (the sort's tie-break) */
            for (Py_ssize_t x = a; x < b; x++) {
                for (Py_ssize_t y = x + 1; y < b; y++) {
                    const uint32_t *p = m + order[x] * num_perm, *q = m + order[y] * num_perm;
                    int earlier = 0;
                    for (Py_ssize_t e = 0; e < start && !earlier; e += rows)
                        earlier = memcmp(p + e, q + e, (size_t)(rows * 4)) == 0;
                    if (earlier) continue;
                    Py_ssize_t same = 0;
                    for (Py_ssize_t v = 0; v < num_perm; v++) same += p[v] == q[v];
                    if ((double)same < need) continue;
                    if (count == cap) {
                        Py_ssize_t grown = cap ? 2 * cap : 64;
                        int64_t *more = PyMem_Realloc(kept, (size_t)grown * 2 * sizeof(int64_t));
                        if (more == NULL) goto nomem;
                        kept = more;
                        cap = grown;
                    }
                    kept[2 * count] = order[x];
                    kept[2 * count + 1] = order[y];
                    count++;
                }
            }
            a = b;
        }
    }
    PyBuffer_Release(&mv);
    PyMem_Free(order);
    if (count) qsort(kept, (size_t)count, 2 * sizeof(int64_t), pair_order);
    PyObject *out = PyBytes_FromStringAndSize((const char *)kept, count * 2 * (Py_ssize_t)sizeof(int64_t));
    PyMem_Free(kept);
    return out;
nomem:
    PyBuffer_Release(&mv);
    PyMem_Free(order);
    PyMem_Free(kept);
    return PyErr_NoMemory();
}

static PyMethodDef methods[] = {
    {"word_hashes", word_hashes, METH_VARARGS,
     "word_hashes(utf8): the uint64 hash of every word, as bytes (duplicates.py word_hashes)."},
    {"word_hashes_text", word_hashes_text, METH_VARARGS,
     "word_hashes_text(text, lower): word_hashes of the text's lower-cased UTF-8, read from the str."},
    {"near_signature", near_signature, METH_VARARGS,
     "near_signature(words, k, num_perm): duplicates.py near_signature's uint32 values, as bytes."},
    {"near_pairs", near_pairs, METH_VARARGS,
     "near_pairs(matrix, n, num_perm, rows, need): duplicates.py _near_pairs' (p, q) pairs as int64 bytes."},
    {"subtree_texts", subtree_texts, METH_VARARGS,
     "subtree_texts(tag, flags, line, end, text, text_ptr, nodes, text_tag, space_flags): per node, its subtree's text."},
    {"run_texts", run_texts, METH_VARARGS,
     "run_texts(flags, line, text, text_ptr, idx, starts, space_flags): per run of text nodes, its text."},
    {"collapsed_spans", collapsed_spans, METH_VARARGS,
     "collapsed_spans(text, starts, ends, lengths): the spans whitespace-collapsed, concatenated; lengths written."},
    {"joined_spans", joined_spans, METH_VARARGS,
     "joined_spans(text, starts, ends, codes, bounds): per run, its spans with their separators, joined."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_text",
                                    "Text spans of a page, cut and joined (see text.py).",
                                    -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__text(void) { return PyModule_Create(&module); }

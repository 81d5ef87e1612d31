/* main_markdown's inline rendering, compiled (transforms/markdown.py).
 *
 * markdown.py's `_Lines.markdown` / `_inline_markdown` (links, strong, emphasis and code
 * spans grouped level by level, CommonMark's flanking rules for `*`, code span fences and
 * padding, `escape_text` with and without brackets) and `_Lines.raw` are the reference:
 * `units` renders every unit of a page in one call, step for step the same, so that the
 * strings are equal. The layout around the units (lists, quotes, tables, code blocks) stays
 * in Python's `_Writer`.
 *
 * Text is read through PyUnicode_READ and built as UCS4, so non-BMP characters and lone
 * surrogates are characters as Python sees them. Whitespace is Py_UNICODE_ISSPACE (what
 * str.isspace and str.strip use); the escape rules' [A-Za-z0-9] is ASCII only, as in the
 * regexes. unicodedata.category has no C API: ASCII punctuation and symbols (categories P*
 * and S*) are the 32 printable non-alphanumerics, and every other character asks the
 * `category` function set by `set_category` (unicodedata.category itself).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* The empty string where the reference compares one character ("" before a line's start). */
#define NO_CHAR ((Py_UCS4)0xFFFFFFFFu)

static PyObject *category_fn = NULL;

typedef struct {
    Py_UCS4 *p;
    Py_ssize_t n, cap;
} Buf;

static int grow(Buf *b, Py_ssize_t extra) {
    if (b->n + extra <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 64;
    while (cap < b->n + extra) cap *= 2;
    Py_UCS4 *p = PyMem_Realloc(b->p, (size_t)cap * sizeof(Py_UCS4));
    if (!p) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

static inline int put(Buf *b, Py_UCS4 c) {
    if (b->n == b->cap && grow(b, 1) < 0) return -1;
    b->p[b->n++] = c;
    return 0;
}

static int put_n(Buf *b, const Py_UCS4 *s, Py_ssize_t n) {
    if (grow(b, n) < 0) return -1;
    memcpy(b->p + b->n, s, (size_t)n * sizeof(Py_UCS4));
    b->n += n;
    return 0;
}

static int put_str(Buf *b, PyObject *s, Py_ssize_t a, Py_ssize_t e) {
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    if (grow(b, e - a) < 0) return -1;
    Py_UCS4 *o = b->p + b->n;
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *d = data;
        for (Py_ssize_t i = a; i < e; i++) *o++ = d[i];
    } else if (kind == PyUnicode_2BYTE_KIND) {
        const Py_UCS2 *d = data;
        for (Py_ssize_t i = a; i < e; i++) *o++ = d[i];
    } else {
        memcpy(o, (const Py_UCS4 *)data + a, (size_t)(e - a) * sizeof(Py_UCS4));
    }
    b->n += e - a;
    return 0;
}

static int put_ascii(Buf *b, const char *s) {
    for (; *s; s++)
        if (put(b, (Py_UCS4)(unsigned char)*s) < 0) return -1;
    return 0;
}

static void buf_free(Buf *b) {
    PyMem_Free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

static inline int is_alnum_ascii(Py_UCS4 c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* markdown.py _is_space: "" or str.isspace. */
static inline int is_space(Py_UCS4 c) { return c == NO_CHAR || Py_UNICODE_ISSPACE(c); }

static int has_non_space(const Py_UCS4 *p, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (!Py_UNICODE_ISSPACE(p[i])) return 1;
    return 0;
}

/* markdown.py _is_punct: unicodedata.category(ch)[0] in "PS"; -1 on error. */
static int is_punct(Py_UCS4 c) {
    if (c == NO_CHAR) return 0;
    if (c < 128) return c > 32 && c < 127 && !is_alnum_ascii(c);
    if (category_fn == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_markdown: set_category was not called");
        return -1;
    }
    PyObject *ch = PyUnicode_FromOrdinal((int)c);
    if (!ch) return -1;
    PyObject *cat = PyObject_CallOneArg(category_fn, ch);
    Py_DECREF(ch);
    if (!cat) return -1;
    int got = -1;
    if (!PyUnicode_Check(cat) || PyUnicode_GET_LENGTH(cat) < 1) {
        PyErr_SetString(PyExc_TypeError, "_markdown: category must return a non-empty str");
    } else {
        Py_UCS4 first = PyUnicode_READ_CHAR(cat, 0);
        got = first == 'P' || first == 'S';
    }
    Py_DECREF(cat);
    return got;
}

/* markdown.py escape_text(text, brackets): a backslash before each character the escape
 * regex matches (every match is one character, decided on the original text). */
static int escape_into(Buf *out, const Py_UCS4 *p, Py_ssize_t n, int brackets) {
    if (grow(out, n) < 0) return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = p[i];
        int esc = 0;
        switch (c) {
        case '\\': case '`': case '*': case '<':
            esc = 1;
            break;
        case '[':
            esc = brackets;
            break;
        case ']':
            esc = brackets || (i + 1 < n && p[i + 1] == '(');
            break;
        case '_':
            esc = i == 0 || !is_alnum_ascii(p[i - 1]) || i + 1 == n || !is_alnum_ascii(p[i + 1]);
            break;
        case '&': {
            Py_ssize_t j = i + 1;
            if (j < n && p[j] == '#') j++;
            Py_ssize_t m = j;
            while (j < n && is_alnum_ascii(p[j])) j++;
            esc = j > m && j < n && p[j] == ';';
            break;
        }
        default:
            break;
        }
        if (esc && put(out, '\\') < 0) return -1;
        if (put(out, c) < 0) return -1;
    }
    return 0;
}

/* One page's written items (markdown.py _Lines), read in place. */
typedef struct {
    PyObject *text;
    const int64_t *start, *stop;    /* each item's text range in `text` */
    const int8_t *sep;              /* text.py codes: 0 none, 1 space, 2 newline */
    const uint8_t *image;
    const int64_t *inline_;         /* 4 rows × n: link, strong, em, code element or -1 */
    const int64_t *kinds;           /* each item's kind bits */
    PyObject **image_str;           /* per item: its image's Markdown, or NULL */
    const int64_t *link_node;
    Py_ssize_t n_links;
    PyObject *link_url;             /* tuple parallel to link_node */
    Py_ssize_t n;
} Items;

static int put_item(Buf *b, const Items *it, Py_ssize_t k) {
    if (it->image[k]) return put_str(b, it->image_str[k], 0, PyUnicode_GET_LENGTH(it->image_str[k]));
    return put_str(b, it->text, (Py_ssize_t)it->start[k], (Py_ssize_t)it->stop[k]);
}

/* The separator of item k in a call over items [s, ...): the first one's is none (the
 * reference sets group[0]'s and a unit's first item's to _NONE). */
static inline int sep_at(const Items *it, Py_ssize_t s, Py_ssize_t k) { return k == s ? 0 : it->sep[k]; }

/* markdown.py _code_span. */
static int code_span(Buf *out, const Py_UCS4 *p, Py_ssize_t n) {
    if (n == 0) return 0;
    Py_ssize_t longest = 0, run = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        run = p[i] == '`' ? run + 1 : 0;
        if (run > longest) longest = run;
    }
    Py_ssize_t fence = longest + 1 > 1 ? longest + 1 : 1;
    int pad = p[0] == '`' || p[n - 1] == '`' || (p[0] == ' ' && p[n - 1] == ' ' && has_non_space(p, n));
    if (grow(out, 2 * fence + 2 + n) < 0) return -1;
    for (Py_ssize_t i = 0; i < fence; i++) out->p[out->n++] = '`';
    if (pad) out->p[out->n++] = ' ';
    memcpy(out->p + out->n, p, (size_t)n * sizeof(Py_UCS4));
    out->n += n;
    if (pad) out->p[out->n++] = ' ';
    for (Py_ssize_t i = 0; i < fence; i++) out->p[out->n++] = '`';
    return 0;
}

/* markdown.py _Structure.url (searchsorted on link_node) and _destination. */
static int put_destination(Buf *out, const Items *it, int64_t link) {
    Py_ssize_t lo = 0, hi = it->n_links;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (it->link_node[mid] < link) lo = mid + 1; else hi = mid;
    }
    if (lo >= PyTuple_GET_SIZE(it->link_url)) {
        PyErr_SetString(PyExc_IndexError, "_markdown: a link element without its URL");
        return -1;
    }
    PyObject *url = PyTuple_GET_ITEM(it->link_url, lo);
    if (!PyUnicode_Check(url)) {
        PyErr_SetString(PyExc_TypeError, "_markdown: link URLs must be str");
        return -1;
    }
    Py_ssize_t len = PyUnicode_GET_LENGTH(url);
    int angle = 0;
    for (Py_ssize_t i = 0; i < len && !angle; i++) {
        Py_UCS4 c = PyUnicode_READ_CHAR(url, i);
        angle = c == ' ' || c == '(' || c == ')' || c == '<' || c == '>';
    }
    if (angle && put(out, '<') < 0) return -1;
    if (put_str(out, url, 0, len) < 0) return -1;
    if (angle && put(out, '>') < 0) return -1;
    return 0;
}

/* markdown.py _can_wrap; -1 on error. */
static int can_wrap(Py_UCS4 before, const Py_UCS4 *inner, Py_ssize_t n, Py_UCS4 after) {
    Py_UCS4 first = inner[0], last = inner[n - 1];
    int opens = 0, closes = 0, t;
    if (!is_space(first)) {
        if ((t = is_punct(first)) < 0) return -1;
        if (!t || is_space(before)) opens = 1;
        else if ((t = is_punct(before)) < 0) return -1;
        else opens = t;
    }
    if (!opens) return 0;
    if (!is_space(last)) {
        if ((t = is_punct(last)) < 0) return -1;
        if (!t || is_space(after)) closes = 1;
        else if ((t = is_punct(after)) < 0) return -1;
        else closes = t;
    }
    return closes;
}

typedef struct {
    int lead;
    Py_ssize_t body, end;   /* the body's range in the bodies buffer */
    int mark;               /* stars of the mark (0: none) */
} Group;

/* markdown.py _inline_markdown over items [s, e), appended to out. */
static int inline_markdown(const Items *it, Py_ssize_t s, Py_ssize_t e, int level, int in_link,
                           Py_UCS4 before, Py_UCS4 after, int64_t kinds, Buf *out) {
    while (level < 4 && !((kinds >> level) & 1)) level++;
    if (level == 4) {
        /* Runs of text escaped at once; images are Markdown already. */
        Buf run = {0};
        for (Py_ssize_t k = s; k < e; k++) {
            int space = sep_at(it, s, k) != 0;
            if (it->image[k]) {
                if (run.n && escape_into(out, run.p, run.n, in_link) < 0) goto leaf_fail;
                run.n = 0;
                if (space && put(out, ' ') < 0) goto leaf_fail;
                if (put_item(out, it, k) < 0) goto leaf_fail;
            } else {
                if (space && put(&run, ' ') < 0) goto leaf_fail;
                if (put_item(&run, it, k) < 0) goto leaf_fail;
            }
        }
        if (run.n && escape_into(out, run.p, run.n, in_link) < 0) goto leaf_fail;
        buf_free(&run);
        return 0;
    leaf_fail:
        buf_free(&run);
        return -1;
    }
    const int64_t *key_of = it->inline_ + (Py_ssize_t)level * it->n;
    Group *groups = PyMem_Malloc((size_t)(e - s) * sizeof(Group));
    if (!groups) {
        PyErr_NoMemory();
        return -1;
    }
    Buf bodies = {0}, part = {0};
    Py_ssize_t count = 0;
    for (Py_ssize_t start = s; start < e;) {
        int64_t key = key_of[start], group_kinds = it->kinds[start];
        Py_ssize_t stop = start + 1;
        while (stop < e && key_of[stop] == key) group_kinds |= it->kinds[stop++];
        Group *g = &groups[count++];
        g->lead = sep_at(it, s, start) != 0;
        g->mark = 0;
        g->body = bodies.n;
        int mark = 0;
        if (key < 0) {
            if (inline_markdown(it, start, stop, level + 1, in_link, '*', '*', group_kinds, &bodies) < 0) goto fail;
        } else if (level == 3) {
            part.n = 0;
            for (Py_ssize_t k = start; k < stop; k++) {
                if (sep_at(it, start, k) && put(&part, ' ') < 0) goto fail;
                if (put_item(&part, it, k) < 0) goto fail;
            }
            if (code_span(&bodies, part.p, part.n) < 0) goto fail;
        } else if (level == 0) {
            part.n = 0;
            if (inline_markdown(it, start, stop, 1, 1, '[', ']', group_kinds, &part) < 0) goto fail;
            if (has_non_space(part.p, part.n)) {
                if (put(&bodies, '[') < 0 || put_n(&bodies, part.p, part.n) < 0 || put_ascii(&bodies, "](") < 0
                    || put_destination(&bodies, it, key) < 0 || put(&bodies, ')') < 0) goto fail;
            } else if (put_n(&bodies, part.p, part.n) < 0) {
                goto fail;
            }
        } else {
            mark = level == 1 ? 2 : 1;
            if (inline_markdown(it, start, stop, level + 1, in_link, '*', '*', group_kinds, &bodies) < 0) goto fail;
        }
        g->end = bodies.n;
        if (mark && has_non_space(bodies.p + g->body, g->end - g->body)) g->mark = mark;
        start = stop;
    }
    Py_UCS4 prev = before;
    for (Py_ssize_t i = 0; i < count; i++) {
        Group *g = &groups[i];
        const Py_UCS4 *body = bodies.p + g->body;
        Py_ssize_t n = g->end - g->body;
        int wrap = 0;
        if (g->mark) {
            Py_UCS4 next;
            if (i + 1 < count) {
                Group *h = &groups[i + 1];
                next = h->lead ? ' ' : h->mark ? '*' : h->end > h->body ? bodies.p[h->body] : NO_CHAR;
            } else {
                next = after;
            }
            if ((wrap = can_wrap(g->lead ? ' ' : prev, body, n, next)) < 0) goto fail;
        }
        Py_ssize_t was = out->n;
        if (g->lead && put(out, ' ') < 0) goto fail;
        for (int m = 0; wrap && m < g->mark; m++)
            if (put(out, '*') < 0) goto fail;
        if (put_n(out, body, n) < 0) goto fail;
        for (int m = 0; wrap && m < g->mark; m++)
            if (put(out, '*') < 0) goto fail;
        if (out->n > was) prev = out->p[out->n - 1];
    }
    PyMem_Free(groups);
    buf_free(&bodies);
    buf_free(&part);
    return 0;
fail:
    PyMem_Free(groups);
    buf_free(&bodies);
    buf_free(&part);
    return -1;
}

/* markdown.py _Lines.raw over items [s, e). */
static int raw(const Items *it, Py_ssize_t s, Py_ssize_t e, Buf *out) {
    for (Py_ssize_t k = s; k < e; k++) {
        if (it->image[k]) continue;
        if (k > s && it->sep[k] == 1 && put(out, ' ') < 0) return -1;
        if (put_item(out, it, k) < 0) return -1;
    }
    return 0;
}

static int get(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    if (view->itemsize != itemsize) {
        PyErr_Format(PyExc_TypeError, "%s: expected contiguous items of %zd bytes", what, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* units(text, start, stop, sep, image, inline, image_strings, link_node, link_url, bounds,
 * modes) -> list: per unit (items bounds[u]:bounds[u+1]) its inline Markdown (mode 1,
 * _Lines.markdown), its raw text (mode 2, _Lines.raw) or None (mode 0).
 * start, stop: int64 text ranges of the items; sep: int8; image: bool; inline: int64 4 × n;
 * image_strings: the images' Markdown in item order; link_node: int64 sorted, link_url its
 * URLs; bounds: int64 units + 1; modes: uint8 per unit. */
static PyObject *units(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text, *start_o, *stop_o, *sep_o, *image_o, *inline_o, *image_strings, *link_node_o, *link_url,
        *bounds_o, *modes_o;
    if (!PyArg_ParseTuple(args, "UOOOOOO!OO!OO", &text, &start_o, &stop_o, &sep_o, &image_o, &inline_o,
                          &PyList_Type, &image_strings, &link_node_o, &PyTuple_Type, &link_url, &bounds_o, &modes_o))
        return NULL;
    enum { N_VIEWS = 8 };
    Py_buffer v[N_VIEWS];
    PyObject *objs[N_VIEWS] = {start_o, stop_o, sep_o, image_o, inline_o, link_node_o, bounds_o, modes_o};
    const Py_ssize_t sizes[N_VIEWS] = {8, 8, 1, 1, 8, 8, 8, 1};
    const char *names[N_VIEWS] = {"start", "stop", "sep", "image", "inline", "link_node", "bounds", "modes"};
    int held = 0;
    PyObject *result = NULL, **image_str = NULL;
    int64_t *kinds = NULL;
    Buf out = {0};
    for (; held < N_VIEWS; held++)
        if (get(objs[held], &v[held], sizes[held], names[held]) < 0) goto done;
    Items it;
    it.n = v[0].len / 8;
    Py_ssize_t n_units = v[7].len, text_len = PyUnicode_GET_LENGTH(text);
    it.text = text;
    it.start = v[0].buf;
    it.stop = v[1].buf;
    it.sep = v[2].buf;
    it.image = v[3].buf;
    it.inline_ = v[4].buf;
    it.link_node = v[5].buf;
    it.n_links = v[5].len / 8;
    it.link_url = link_url;
    const int64_t *bounds = v[6].buf;
    const uint8_t *modes = v[7].buf;
    if (v[1].len / 8 != it.n || v[2].len != it.n || v[3].len != it.n || v[4].len / 8 != 4 * it.n
        || v[6].len / 8 != n_units + 1 || it.n_links != PyTuple_GET_SIZE(link_url)) {
        PyErr_SetString(PyExc_ValueError, "units: arrays of different lengths");
        goto done;
    }
    for (Py_ssize_t u = 0; u <= n_units; u++)
        if (bounds[u] < 0 || bounds[u] > it.n || (u && bounds[u] < bounds[u - 1])) {
            PyErr_SetString(PyExc_ValueError, "units: unit bounds out of order");
            goto done;
        }
    kinds = PyMem_Malloc((size_t)(it.n ? it.n : 1) * sizeof(int64_t));
    image_str = PyMem_Calloc((size_t)(it.n ? it.n : 1), sizeof(PyObject *));
    if (!kinds || !image_str) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t next_image = 0;
    for (Py_ssize_t k = 0; k < it.n; k++) {
        if (it.start[k] < 0 || it.start[k] > it.stop[k] || it.stop[k] > text_len) {
            PyErr_SetString(PyExc_ValueError, "units: a text range outside the text");
            goto done;
        }
        int64_t bits = 0;
        for (int level = 0; level < 4; level++) bits |= (int64_t)(it.inline_[level * it.n + k] >= 0) << level;
        kinds[k] = bits;
        if (it.image[k]) {
            if (next_image >= PyList_GET_SIZE(image_strings)
                || !PyUnicode_Check(PyList_GET_ITEM(image_strings, next_image))) {
                PyErr_SetString(PyExc_ValueError, "units: one str per image item expected");
                goto done;
            }
            image_str[k] = PyList_GET_ITEM(image_strings, next_image++);
        }
    }
    it.kinds = kinds;
    it.image_str = image_str;
    result = PyList_New(n_units);
    if (!result) goto done;
    for (Py_ssize_t u = 0; u < n_units; u++) {
        Py_ssize_t s = (Py_ssize_t)bounds[u], e = (Py_ssize_t)bounds[u + 1];
        PyObject *item;
        out.n = 0;
        if (modes[u] == 0 || s == e) {
            item = modes[u] == 0 ? Py_NewRef(Py_None) : PyUnicode_New(0, 0);
        } else {
            int rc;
            if (modes[u] == 1) {
                int64_t unit_kinds = 0;
                for (Py_ssize_t k = s; k < e; k++) unit_kinds |= kinds[k];
                rc = inline_markdown(&it, s, e, 0, 0, NO_CHAR, NO_CHAR, unit_kinds, &out);
            } else {
                rc = raw(&it, s, e, &out);
            }
            if (rc < 0) {
                Py_CLEAR(result);
                goto done;
            }
            item = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out.p ? out.p : (Py_UCS4 *)"", out.n);
        }
        if (!item) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, u, item);
    }
done:
    buf_free(&out);
    PyMem_Free(kinds);
    PyMem_Free(image_str);
    for (int i = 0; i < held; i++) PyBuffer_Release(&v[i]);
    return result;
}

/* ---- the layout: markdown.py _Writer.write ---- */

/* What `units` rendered of a unit (markdown.py _MARKDOWN, _RAW). */
enum { MODE_MARKDOWN = 1, MODE_RAW = 2 };

/* Bits of the per-tag table of what counts inside a table (markdown.py _INSIDE_OF). */
enum { INSIDE_TR = 1, INSIDE_CELL = 2, INSIDE_LAYOUT = 4 };

static int put_range(Buf *out, const Py_UCS4 *p, Py_ssize_t n) { return put_n(out, p, n); }

static Py_ssize_t rstripped(const Py_UCS4 *p, Py_ssize_t n) {
    while (n > 0 && Py_UNICODE_ISSPACE(p[n - 1])) n--;
    return n;
}

/* `not s.strip(" >")`: s has no character but spaces and '>'. */
static int only_quote_marks(const Py_UCS4 *p, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '>') return 0;
    return 1;
}

/* markdown.py escape_line_start, appended to out: _LINE_START and _NUMBERED at position 0.
 * \s is Py_UNICODE_ISSPACE and \d Py_UNICODE_ISDECIMAL in re's str patterns; `$` (no
 * MULTILINE) also matches before a final "\n", which every alternative here reads as \s
 * already, so it is the end of the line. */
static int line_start_into(Buf *out, const Py_UCS4 *p, Py_ssize_t n) {
    int escape = 0;
    if (n > 0) {
        Py_UCS4 c = p[0];
        if (c == '#') {
            Py_ssize_t h = 0;
            while (h < n && p[h] == '#') h++;
            escape = h <= 6 && (h == n || Py_UNICODE_ISSPACE(p[h]));
        } else if (c == '>') {
            escape = 1;
        } else if (c == '-' || c == '+') {
            escape = n == 1 || Py_UNICODE_ISSPACE(p[1]);
        }
        if (!escape && (c == '=' || c == '-')) {
            Py_ssize_t i = 0;
            while (i < n && p[i] == c) i++;
            while (i < n && Py_UNICODE_ISSPACE(p[i])) i++;
            escape = i == n;
        }
        if (!escape && c == '~') escape = n >= 3 && p[1] == '~' && p[2] == '~';
    }
    if (escape) {
        if (put(out, '\\') < 0) return -1;
        return put_n(out, p, n);
    }
    Py_ssize_t d = 0;
    while (d < n && Py_UNICODE_ISDECIMAL(p[d])) d++;
    if (d >= 1 && d <= 9 && d < n && (p[d] == '.' || p[d] == ')') && (d + 1 == n || Py_UNICODE_ISSPACE(p[d + 1]))) {
        if (put_n(out, p, d) < 0 || put(out, '\\') < 0) return -1;
        return put_n(out, p + d, n - d);
    }
    return put_n(out, p, n);
}

static int to_buf(Buf *b, PyObject *s) {
    if (!PyUnicode_Check(s)) {
        PyErr_SetString(PyExc_TypeError, "_markdown: a str expected");
        return -1;
    }
    return put_str(b, s, 0, PyUnicode_GET_LENGTH(s));
}

/* line_start(text) -> str: escape_line_start, for the tests. */
static PyObject *line_start(PyObject *self, PyObject *text) {
    (void)self;
    Buf in = {0}, out = {0};
    PyObject *got = NULL;
    if (to_buf(&in, text) == 0 && line_start_into(&out, in.p, in.n) == 0)
        got = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out.p ? out.p : (Py_UCS4 *)"", out.n);
    buf_free(&in);
    buf_free(&out);
    return got;
}

/* A list item or block quote being written (markdown.py _Open): its marker is "- " or
 * "N. " (number >= 0). */
typedef struct {
    int64_t node;
    int quote;
    long long number;
} Open;

static Py_ssize_t marker_width(const Open *o) {
    if (o->number < 0) return 2;
    char digits[32];
    return (Py_ssize_t)snprintf(digits, sizeof digits, "%lld", o->number) + 2;
}

/* _Open.prefix(first). */
static int put_prefix(Buf *out, const Open *o, int first) {
    if (o->quote) return put_ascii(out, "> ");
    if (first) {
        if (o->number < 0) return put_ascii(out, "- ");
        char marker[40];
        snprintf(marker, sizeof marker, "%lld. ", o->number);
        return put_ascii(out, marker);
    }
    Py_ssize_t w = marker_width(o);
    for (Py_ssize_t i = 0; i < w; i++)
        if (put(out, ' ') < 0) return -1;
    return 0;
}

typedef struct {
    const int32_t *tag, *parent;
    Py_ssize_t size;
    int ol, quote;
    PyObject *number_fn;
} Tree;

/* tag[parent[e]] as numpy reads it (a root's parent -1 is the last node). */
static int tag_of(const Tree *t, int64_t e) {
    if (e < 0) e += t->size;
    return t->tag[e];
}

static int number_of(const Tree *t, int64_t li, long long *got) {
    PyObject *r = PyObject_CallFunction(t->number_fn, "L", (long long)li);
    if (!r) return -1;
    *got = PyLong_AsLongLong(r);
    Py_DECREF(r);
    return (*got == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int check_node(const Tree *t, int64_t e) {
    if (e < 0 || e >= t->size) {
        PyErr_SetString(PyExc_IndexError, "write: a node outside the page");
        return -1;
    }
    return 0;
}

/* markdown.py _Writer.code_block over units [k, stop), all rendered raw. */
static int code_block(Buf *blk, PyObject *rendered, Py_ssize_t k, Py_ssize_t stop, int64_t pre, PyObject *code_lang) {
    Buf content = {0};
    PyObject *key = NULL, *lang = NULL;
    int rc = -1;
    for (Py_ssize_t u = k; u < stop; u++)
        if ((u > k && put(&content, '\n') < 0) || to_buf(&content, PyList_GET_ITEM(rendered, u)) < 0) goto done;
    Py_ssize_t longest = 0, run = 0;
    for (Py_ssize_t i = 0; i < content.n; i++) {
        run = content.p[i] == '`' ? run + 1 : 0;
        if (run > longest) longest = run;
    }
    Py_ssize_t fence = longest + 1 > 3 ? longest + 1 : 3;
    if (!(key = PyLong_FromLongLong(pre))) goto done;
    PyObject *found = PyDict_GetItemWithError(code_lang, key);
    if (!found && PyErr_Occurred()) goto done;
    if (found && !(lang = PyObject_Format(found, NULL))) goto done;
    for (Py_ssize_t i = 0; i < fence; i++)
        if (put(blk, '`') < 0) goto done;
    if ((lang && to_buf(blk, lang) < 0) || put(blk, '\n') < 0 || put_n(blk, content.p, content.n) < 0
        || put(blk, '\n') < 0) goto done;
    for (Py_ssize_t i = 0; i < fence; i++)
        if (put(blk, '`') < 0) goto done;
    rc = 0;
done:
    Py_XDECREF(key);
    Py_XDECREF(lang);
    buf_free(&content);
    return rc;
}

/* markdown.py _Writer.table over units [k, stop) of the data table `table`: each cell's
 * units' Markdown (pipes escaped) joined by spaces, the rows (<tr> in the table) with any
 * text, the first as the header, every row padded to the widest; units outside any cell go
 * before it. */
static int table_block(Buf *blk, PyObject *rendered, const int64_t *ctx_of, const int64_t *cell_of, Py_ssize_t k,
                       Py_ssize_t stop, int64_t table, const Tree *t, const int32_t *end, const uint8_t *inside,
                       Py_ssize_t n_inside) {
    Py_ssize_t lo = (Py_ssize_t)table + 1, hi = end[table] < t->size ? end[table] : t->size;
    Py_ssize_t span = hi > lo ? hi - lo : 0;
    Buf *cells = PyMem_Calloc((size_t)(span ? span : 1), sizeof(Buf));
    Py_ssize_t *row_of = PyMem_Malloc((size_t)(span ? span : 1) * sizeof(Py_ssize_t));
    Py_ssize_t *count = NULL, *first = NULL, *members = NULL, *written = NULL;
    Buf loose = {0}, text = {0};
    int rc = -1;
    if (!cells || !row_of) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t u = k; u < stop; u++) {
        int64_t c = cell_of[ctx_of[u]];
        text.n = 0;
        PyObject *md = PyList_GET_ITEM(rendered, u);
        if (!PyUnicode_Check(md)) {
            PyErr_SetString(PyExc_TypeError, "_markdown: a str expected");
            goto done;
        }
        Py_ssize_t len = PyUnicode_GET_LENGTH(md);
        for (Py_ssize_t i = 0; i < len; i++) {
            Py_UCS4 ch = PyUnicode_READ_CHAR(md, i);
            if ((ch == '|' && put(&text, '\\') < 0) || put(&text, ch) < 0) goto done;
        }
        if (!text.n) continue;
        /* A cell outside the table's range is kept by the reference but never read. */
        Buf *into = c == -1 ? &loose : (c >= lo && c < hi) ? &cells[c - lo] : NULL;
        if (!into) continue;
        if ((into->n && put(into, ' ') < 0) || put_n(into, text.p, text.n) < 0) goto done;
    }
    Py_ssize_t rows = 0;
    for (Py_ssize_t i = 0; i < span; i++) {
        int32_t tg = t->tag[lo + i];
        row_of[i] = (inside[tg < 0 || tg >= n_inside ? n_inside - 1 : tg] & INSIDE_TR) ? rows++ : -1;
    }
    count = PyMem_Calloc((size_t)(rows + 1), sizeof(Py_ssize_t));
    first = PyMem_Calloc((size_t)(rows + 1), sizeof(Py_ssize_t));
    members = PyMem_Malloc((size_t)(span ? span : 1) * sizeof(Py_ssize_t));
    written = PyMem_Malloc((size_t)(rows + 1) * sizeof(Py_ssize_t));
    if (!count || !first || !members || !written) {
        PyErr_NoMemory();
        goto done;
    }
    /* Each row's cells in document order: the cells in the range whose parent is a row of it. */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            Py_ssize_t at = 0;
            for (Py_ssize_t r = 0; r < rows; r++) {
                first[r] = at;
                at += count[r];
                count[r] = 0;
            }
        }
        for (Py_ssize_t i = 0; i < span; i++) {
            int32_t tg = t->tag[lo + i];
            if (!(inside[tg < 0 || tg >= n_inside ? n_inside - 1 : tg] & INSIDE_CELL)) continue;
            int64_t p = t->parent[lo + i];
            if (p < lo || p >= hi || row_of[p - lo] < 0) continue;
            Py_ssize_t r = row_of[p - lo];
            if (pass == 1) members[first[r] + count[r]] = i;
            count[r]++;
        }
    }
    Py_ssize_t n_written = 0, width = 0;
    for (Py_ssize_t r = 0; r < rows; r++) {
        int any = 0;
        for (Py_ssize_t j = 0; j < count[r] && !any; j++) any = cells[members[first[r] + j]].n > 0;
        if (!any) continue;
        written[n_written++] = r;
        if (count[r] > width) width = count[r];
    }
    if (!n_written) {
        rc = put_n(blk, loose.p, loose.n);
        goto done;
    }
    if (loose.n && (put_n(blk, loose.p, loose.n) < 0 || put_ascii(blk, "\n\n") < 0)) goto done;
    for (Py_ssize_t w = 0; w < n_written; w++) {
        Py_ssize_t r = written[w];
        if (w == 1) {
            if (put_ascii(blk, "\n|") < 0) goto done;
            for (Py_ssize_t j = 0; j < width; j++)
                if (put_ascii(blk, "---|") < 0) goto done;
        }
        if ((w > 0 && put(blk, '\n') < 0) || put_ascii(blk, "| ") < 0) goto done;
        for (Py_ssize_t j = 0; j < width; j++) {
            if (j > 0 && put_ascii(blk, " | ") < 0) goto done;
            if (j < count[r]) {
                const Buf *cb = &cells[members[first[r] + j]];
                if (put_n(blk, cb->p, cb->n) < 0) goto done;
            }
        }
        if (put_ascii(blk, " |") < 0) goto done;
    }
    if (n_written == 1) {
        if (put_ascii(blk, "\n|") < 0) goto done;
        for (Py_ssize_t j = 0; j < width; j++)
            if (put_ascii(blk, "---|") < 0) goto done;
    }
    rc = 0;
done:
    if (cells)
        for (Py_ssize_t i = 0; i < span; i++) buf_free(&cells[i]);
    PyMem_Free(cells);
    PyMem_Free(row_of);
    PyMem_Free(count);
    PyMem_Free(first);
    PyMem_Free(members);
    PyMem_Free(written);
    buf_free(&loose);
    buf_free(&text);
    return rc;
}

/* write(rendered, modes, container, ctx_of, heading, pre, cell, table, li, nests, tag, parent,
 * end, inside, ol, quote, code_lang, block, number) -> str: markdown.py _Writer.write over
 * units rendered by `units` (modes: what each holds). Per unit: container and context index
 * (int64); per context: heading, pre, cell, table, li (int64) and nest (a tuple of
 * elements); tag, parent, end: the page's int32 arrays; inside: _INSIDE_OF; code_lang:
 * _Writer.code_lang; block(kind, element, first unit, stop unit) -> str writes a code block
 * (kind 1) whose units were not rendered raw; number(li) -> int is _Writer.number. */
static PyObject *write_page(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *rendered, *modes_o, *container_o, *ctx_o, *heading_o, *pre_o, *cell_o, *table_o, *li_o, *nests, *tag_o,
        *parent_o, *end_o, *inside_o, *code_lang, *block_fn, *number_fn;
    int ol, quote;
    if (!PyArg_ParseTuple(args, "O!OOOOOOOOO!OOOOiiO!OO", &PyList_Type, &rendered, &modes_o, &container_o, &ctx_o,
                          &heading_o, &pre_o, &cell_o, &table_o, &li_o, &PyList_Type, &nests, &tag_o, &parent_o,
                          &end_o, &inside_o, &ol, &quote, &PyDict_Type, &code_lang, &block_fn, &number_fn))
        return NULL;
    enum { N_VIEWS = 12 };
    Py_buffer v[N_VIEWS];
    PyObject *objs[N_VIEWS] = {container_o, ctx_o, heading_o, pre_o, table_o, li_o, tag_o, parent_o,
                               modes_o, cell_o, end_o, inside_o};
    const Py_ssize_t sizes[N_VIEWS] = {8, 8, 8, 8, 8, 8, 4, 4, 1, 8, 4, 1};
    const char *names[N_VIEWS] = {"container", "ctx_of", "heading", "pre", "table", "li", "tag", "parent",
                                  "modes", "cell", "end", "inside"};
    int held = 0;
    PyObject *result = NULL;
    int64_t *nest = NULL;
    Py_ssize_t *nest_at = NULL;
    Open *open = NULL;
    int64_t *chain = NULL;
    Buf out = {0}, blk = {0}, line = {0}, pre_buf = {0}, rest = {0}, first = {0};
    for (; held < N_VIEWS; held++)
        if (get(objs[held], &v[held], sizes[held], names[held]) < 0) goto done;
    Py_ssize_t n_units = PyList_GET_SIZE(rendered), n_ctx = PyList_GET_SIZE(nests);
    const int64_t *container = v[0].buf, *ctx_of = v[1].buf, *heading = v[2].buf, *pre = v[3].buf,
                  *table = v[4].buf, *li = v[5].buf;
    Tree t = {v[6].buf, v[7].buf, v[6].len / 4, ol, quote, number_fn};
    const uint8_t *modes = v[8].buf, *inside = v[11].buf;
    const int64_t *cell = v[9].buf;
    const int32_t *end = v[10].buf;
    Py_ssize_t n_inside = v[11].len;
    if (v[0].len / 8 != n_units || v[1].len / 8 != n_units || v[2].len / 8 != n_ctx || v[3].len / 8 != n_ctx
        || v[4].len / 8 != n_ctx || v[5].len / 8 != n_ctx || v[7].len / 4 != t.size || t.size == 0
        || v[8].len != n_units || v[9].len / 8 != n_ctx || v[10].len / 4 != t.size || n_inside == 0) {
        PyErr_SetString(PyExc_ValueError, "write: arrays of different lengths");
        goto done;
    }
    for (Py_ssize_t u = 0; u < n_units; u++)
        if (ctx_of[u] < 0 || ctx_of[u] >= n_ctx) {
            PyErr_SetString(PyExc_ValueError, "write: a unit without its context");
            goto done;
        }
    /* Every context's nest, flattened. */
    nest_at = PyMem_Malloc((size_t)(n_ctx + 1) * sizeof(Py_ssize_t));
    if (!nest_at) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t total = 0, deepest = 0;
    for (Py_ssize_t c = 0; c < n_ctx; c++) {
        PyObject *tup = PyList_GET_ITEM(nests, c);
        if (!PyTuple_Check(tup)) {
            PyErr_SetString(PyExc_TypeError, "write: nests must be tuples");
            goto done;
        }
        total += PyTuple_GET_SIZE(tup);
        if (PyTuple_GET_SIZE(tup) > deepest) deepest = PyTuple_GET_SIZE(tup);
    }
    nest = PyMem_Malloc((size_t)(total ? total : 1) * sizeof(int64_t));
    open = PyMem_Malloc((size_t)(deepest ? deepest : 1) * sizeof(Open));
    chain = PyMem_Malloc((size_t)(deepest ? deepest : 1) * sizeof(int64_t));
    if (!nest || !open || !chain) {
        PyErr_NoMemory();
        goto done;
    }
    total = 0;
    for (Py_ssize_t c = 0; c < n_ctx; c++) {
        PyObject *tup = PyList_GET_ITEM(nests, c);
        nest_at[c] = total;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tup); i++) {
            long long e = PyLong_AsLongLong(PyTuple_GET_ITEM(tup, i));
            if (e == -1 && PyErr_Occurred()) goto done;
            if (check_node(&t, e) < 0) goto done;
            nest[total++] = e;
        }
    }
    nest_at[n_ctx] = total;
    for (Py_ssize_t c = 0; c < n_ctx; c++)
        if (li[c] >= t.size || pre[c] >= t.size || table[c] >= t.size) {
            PyErr_SetString(PyExc_IndexError, "write: a context element outside the page");
            goto done;
        }

    Py_ssize_t n_open = 0;
    int has_prev = 0, prev_kind = 0, prev_began_item = 0;
    int64_t prev_heading = 0, prev_container = 0;
    enum { LINE = 0, TABLE = 1, CODE = 2 };
    for (Py_ssize_t k = 0; k < n_units;) {
        Py_ssize_t c = (Py_ssize_t)ctx_of[k], stop;
        int kind;
        blk.n = 0;
        if (table[c] >= 0 || pre[c] >= 0) {
            int is_table = table[c] >= 0;
            const int64_t *key = is_table ? table : pre;
            int64_t element = key[c];
            stop = k;
            while (stop < n_units && key[ctx_of[stop]] == element) stop++;
            int all_raw = 1;
            for (Py_ssize_t u = k; u < stop && all_raw; u++) all_raw = modes[u] == MODE_RAW;
            if (is_table) {
                if (table_block(&blk, rendered, ctx_of, cell, k, stop, element, &t, end, inside, n_inside) < 0)
                    goto done;
            } else if (all_raw) {
                if (code_block(&blk, rendered, k, stop, element, code_lang) < 0) goto done;
            } else {
                /* A code block holding a data table: its units were rendered as Markdown. */
                PyObject *b = PyObject_CallFunction(block_fn, "iLnn", 1, (long long)element, k, stop);
                if (!b) goto done;
                int rc = to_buf(&blk, b);
                Py_DECREF(b);
                if (rc < 0) goto done;
            }
            kind = is_table ? TABLE : CODE;
        } else {
            stop = k + 1;
            PyObject *md = PyList_GET_ITEM(rendered, k);
            line.n = 0;
            if (to_buf(&line, md) < 0) goto done;
            if (heading[c]) {
                for (int64_t h = 0; h < heading[c]; h++)
                    if (put(&blk, '#') < 0) goto done;
                if (put(&blk, ' ') < 0) goto done;
            }
            if (line_start_into(&blk, line.p, line.n) < 0) goto done;
            if (heading[c] && blk.p[blk.n - 1] == '#') {
                blk.p[blk.n - 1] = '\\';
                if (put(&blk, '#') < 0) goto done;
            }
            kind = LINE;
        }
        /* _Writer.enter */
        Py_ssize_t kept = 0, n_chain = 0;
        const int64_t *ns = nest + nest_at[c];
        Py_ssize_t n_nest = nest_at[c + 1] - nest_at[c];
        Py_ssize_t n_before = n_open;
        if (n_open || n_nest) {
            for (Py_ssize_t i = 0; i < n_nest; i++) {
                int64_t e = ns[i];
                int keep = e == li[c] || tag_of(&t, e) == t.quote;
                for (Py_ssize_t j = 0; j < n_open && !keep; j++) keep = open[j].node == e;
                if (keep) chain[n_chain++] = e;
            }
            while (kept < n_open && kept < n_chain && open[kept].node == chain[kept]) kept++;
        }
        /* Popped: open[kept:n_before] (copied aside, the pushed ones overwrite them). */
        Py_ssize_t n_popped = n_before - kept;
        Open *popped = NULL;
        if (n_popped) {
            popped = PyMem_Malloc((size_t)n_popped * sizeof(Open));
            if (!popped) {
                PyErr_NoMemory();
                goto done;
            }
            memcpy(popped, open + kept, (size_t)n_popped * sizeof(Open));
        }
        n_open = kept;
        Py_ssize_t n_pushed = 0, n_pushed_items = 0;
        for (Py_ssize_t i = kept; i < n_chain; i++) {
            int64_t e = chain[i];
            Open o = {e, tag_of(&t, e) == t.quote, -1};
            if (!o.quote) {
                if (tag_of(&t, t.parent[e]) == t.ol && number_of(&t, e, &o.number) < 0) {
                    PyMem_Free(popped);
                    goto done;
                }
                n_pushed_items++;
            }
            open[n_open++] = o;
            n_pushed++;
        }
        /* _Writer.separator */
        if (has_prev) {
            int blank = 1;
            if (kind == LINE && prev_kind == LINE) {
                if (!n_popped && !n_pushed) {
                    if (heading[c] || prev_heading) blank = kept == 0;
                    else blank = container[k] != prev_container ? 1 : 2;
                } else if (prev_began_item && n_pushed_items == 1 && n_pushed == 1) {
                    const Open *item = &open[n_open - 1];
                    int64_t parent = t.parent[item->node];
                    int sibling = 0;
                    for (Py_ssize_t j = 0; j < n_popped && !sibling; j++)
                        sibling = !popped[j].quote && t.parent[popped[j].node] == parent;
                    int nested = 0;
                    if (!n_popped) {
                        nested = tag_of(&t, parent) != t.ol;
                        if (!nested) {
                            long long number;
                            if (number_of(&t, item->node, &number) < 0) {
                                PyMem_Free(popped);
                                goto done;
                            }
                            nested = number == 1;
                        }
                    }
                    if (sibling || nested) blank = 0;
                }
            }
            int rc = 0;
            if (blank == 1) {
                rest.n = 0;
                for (Py_ssize_t j = 0; j < kept && rc == 0; j++) rc = put_prefix(&rest, &open[j], 0);
                rc = rc < 0 ? rc : put(&out, '\n');
                rc = rc < 0 ? rc : put_range(&out, rest.p, rstripped(rest.p, rest.n));
                rc = rc < 0 ? rc : put(&out, '\n');
            } else if (blank == 2) {
                rc = put_ascii(&out, "\\\n");
            } else {
                rc = put(&out, '\n');
            }
            if (rc < 0) {
                PyMem_Free(popped);
                goto done;
            }
        }
        PyMem_Free(popped);
        /* The block, each line led by the prefixes of the open items and quotes. */
        int has_newline = 0;
        for (Py_ssize_t i = 0; i < blk.n && !has_newline; i++) has_newline = blk.p[i] == '\n';
        if (!n_open && !has_newline) {
            Py_ssize_t n = only_quote_marks(blk.p, blk.n) ? rstripped(blk.p, blk.n) : blk.n;
            if (put_range(&out, blk.p, n) < 0) goto done;
        } else {
            first.n = rest.n = 0;
            for (Py_ssize_t j = 0; j < n_open; j++)
                if (put_prefix(&first, &open[j], j >= kept) < 0 || put_prefix(&rest, &open[j], 0) < 0) goto done;
            Py_ssize_t rest_stripped = rstripped(rest.p, rest.n);
            Py_ssize_t a = 0;
            for (Py_ssize_t i = 0;; i++) {
                Py_ssize_t e = a;
                while (e < blk.n && blk.p[e] != '\n') e++;
                pre_buf.n = 0;
                int rc;
                if (i == 0) rc = put_range(&pre_buf, first.p, first.n) < 0 || put_range(&pre_buf, blk.p + a, e - a) < 0;
                else if (e > a) rc = put_range(&pre_buf, rest.p, rest.n) < 0 || put_range(&pre_buf, blk.p + a, e - a) < 0;
                else rc = put_range(&pre_buf, rest.p, rest_stripped) < 0;
                if (rc) goto done;
                Py_ssize_t n = only_quote_marks(pre_buf.p, pre_buf.n) ? rstripped(pre_buf.p, pre_buf.n) : pre_buf.n;
                if ((i > 0 && put(&out, '\n') < 0) || put_range(&out, pre_buf.p, n) < 0) goto done;
                if (e >= blk.n) break;
                a = e + 1;
            }
        }
        has_prev = 1;
        prev_kind = kind;
        prev_heading = heading[c];
        prev_container = container[k];
        prev_began_item = kind == LINE && n_pushed_items > 0;
        k = stop;
    }
    {
        Py_ssize_t a = 0, e = out.n;
        while (a < e && out.p[a] == '\n') a++;
        while (e > a && out.p[e - 1] == '\n') e--;
        result = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out.p ? out.p + a : (Py_UCS4 *)"", e - a);
    }
done:
    buf_free(&out);
    buf_free(&blk);
    buf_free(&line);
    buf_free(&pre_buf);
    buf_free(&rest);
    buf_free(&first);
    PyMem_Free(nest);
    PyMem_Free(nest_at);
    PyMem_Free(open);
    PyMem_Free(chain);
    for (int i = 0; i < held; i++) PyBuffer_Release(&v[i]);
    return result;
}

/* ---- block contexts: markdown.py _Structure.context ---- */

/* Roles of tags in a context (the per-tag table markdown.py passes): a heading's level 1..6,
 * then these. */
enum { ROLE_PRE = 7, ROLE_LI = 8, ROLE_QUOTE = 9, ROLE_TABLE = 10, ROLE_CELL = 11 };

typedef struct {
    int64_t heading, pre, cell, table, li;
    Py_ssize_t nest, depth;    /* the last nest entry (-1: none) and the nest's length */
} Context;

typedef struct {
    int64_t element;
    Py_ssize_t up;
} NestEntry;

typedef struct {
    void *p;
    Py_ssize_t n, cap, item;
} Vec;

static void *vec_push(Vec *v) {
    if (v->n == v->cap) {
        Py_ssize_t cap = v->cap ? 2 * v->cap : 64;
        void *p = PyMem_Realloc(v->p, (size_t)cap * (size_t)v->item);
        if (!p) {
            PyErr_NoMemory();
            return NULL;
        }
        v->p = p;
        v->cap = cap;
    }
    return (char *)v->p + (v->n++) * v->item;
}

static PyObject *int64_list(const int64_t *values, Py_ssize_t n, Py_ssize_t stride_bytes) {
    PyObject *list = PyList_New(n);
    if (!list) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyLong_FromLongLong(*(const int64_t *)((const char *)values + i * stride_bytes));
        if (!x) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, x);
    }
    return list;
}


/* markdown.py _Structure.is_data_table: no layout element inside, a row at least, and two
 * rows or two cells. */
static int is_data_table(const int32_t *tag, const int32_t *end, Py_ssize_t size, const uint8_t *inside,
                         Py_ssize_t n_inside, int64_t table) {
    Py_ssize_t rows = 0, cells = 0, stop = end[table] < size ? end[table] : size;
    for (Py_ssize_t i = table + 1; i < stop; i++) {
        int32_t t = tag[i];
        uint8_t bits = inside[t < 0 || t >= n_inside ? n_inside - 1 : t];
        if (bits & INSIDE_LAYOUT) return 0;
        rows += (bits & INSIDE_TR) != 0;
        cells += (bits & INSIDE_CELL) != 0;
    }
    return rows >= 1 && (rows >= 2 || cells >= 2);
}

/* contexts(elements, parent, tag, end, roles, inside) -> (heading, pre, cell, table, li,
 * nests): each element's _Context (-1: the page's), as lists; a nest is a tuple of elements,
 * outermost first. parent, tag, end: the page's int32 arrays; roles and inside: uint8 per
 * known tag id (ids past the end are the last entry's), what a tag changes in a context and
 * what it counts for inside a table. Every element's context is its parent's with its own
 * tag applied, memoized per element. */
static PyObject *contexts(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *elements_o, *parent_o, *tag_o, *end_o, *roles_o, *inside_o;
    if (!PyArg_ParseTuple(args, "OOOOOO", &elements_o, &parent_o, &tag_o, &end_o, &roles_o, &inside_o)) return NULL;
    enum { N_VIEWS = 6 };
    Py_buffer v[N_VIEWS];
    PyObject *objs[N_VIEWS] = {elements_o, parent_o, tag_o, roles_o, end_o, inside_o};
    const Py_ssize_t sizes[N_VIEWS] = {8, 4, 4, 1, 4, 1};
    const char *names[N_VIEWS] = {"elements", "parent", "tag", "roles", "end", "inside"};
    int held = 0;
    PyObject *result = NULL, *lists[6] = {NULL};
    Py_ssize_t *memo = NULL;
    Vec ctxs = {NULL, 0, 0, sizeof(Context)}, nest = {NULL, 0, 0, sizeof(NestEntry)},
        chain = {NULL, 0, 0, sizeof(int64_t)}, picked = {NULL, 0, 0, sizeof(Context)};
    for (; held < N_VIEWS; held++)
        if (get(objs[held], &v[held], sizes[held], names[held]) < 0) goto done;
    const int64_t *elements = v[0].buf;
    const int32_t *parent = v[1].buf, *tag = v[2].buf;
    const uint8_t *roles = v[3].buf;
    const int32_t *end = v[4].buf;
    const uint8_t *inside = v[5].buf;
    Py_ssize_t n_elements = v[0].len / 8, size = v[1].len / 4, n_roles = v[3].len, n_inside = v[5].len;
    if (v[2].len / 4 != size || v[4].len / 4 != size || n_roles == 0 || n_inside == 0) {
        PyErr_SetString(PyExc_ValueError, "contexts: arrays of different lengths");
        goto done;
    }
    memo = PyMem_Malloc((size_t)(size ? size : 1) * sizeof(Py_ssize_t));
    if (!memo) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < size; i++) memo[i] = -1;
    Context *root = vec_push(&ctxs);
    if (!root) goto done;
    *root = (Context){0, -1, -1, -1, -1, -1, 0};
    for (Py_ssize_t a = 0; a < n_elements; a++) {
        int64_t e = elements[a];
        chain.n = 0;
        while (e != -1) {
            if (e < -1 || e >= size) {
                PyErr_SetString(PyExc_IndexError, "contexts: a node outside the page");
                goto done;
            }
            if (memo[e] >= 0) break;
            int64_t *slot = vec_push(&chain);
            if (!slot) goto done;
            *slot = e;
            e = parent[e];
        }
        Py_ssize_t at = e == -1 ? 0 : memo[e];
        for (Py_ssize_t i = chain.n - 1; i >= 0; i--) {
            int64_t el = ((int64_t *)chain.p)[i];
            Context next = ((Context *)ctxs.p)[at];
            int32_t t = tag[el];
            int role = roles[t < 0 || t >= n_roles ? n_roles - 1 : t];
            if (role >= 1 && role <= 6) {
                next.heading = role;
            } else if (role == ROLE_PRE) {
                next.pre = el;
            } else if (role == ROLE_LI || role == ROLE_QUOTE) {
                if (role == ROLE_LI) next.li = el;
                NestEntry *entry = vec_push(&nest);
                if (!entry) goto done;
                entry->element = el;
                entry->up = next.nest;
                next.nest = nest.n - 1;
                next.depth++;
            } else if (role == ROLE_TABLE) {
                if (is_data_table(tag, end, size, inside, n_inside, el)) {
                    next.table = el;
                    next.cell = -1;
                }
            } else if (role == ROLE_CELL && next.table >= 0 && next.cell < 0) {
                next.cell = el;
            }
            Context *slot = vec_push(&ctxs);
            if (!slot) goto done;
            *slot = next;
            at = ctxs.n - 1;
            memo[el] = at;
        }
        Context *got = vec_push(&picked);
        if (!got) goto done;
        *got = ((Context *)ctxs.p)[at];
    }
    const Context *p = picked.p;
    Py_ssize_t stride = sizeof(Context);
    if (!(lists[0] = int64_list(&p->heading, n_elements, stride)) || !(lists[1] = int64_list(&p->pre, n_elements, stride))
        || !(lists[2] = int64_list(&p->cell, n_elements, stride)) || !(lists[3] = int64_list(&p->table, n_elements, stride))
        || !(lists[4] = int64_list(&p->li, n_elements, stride)) || !(lists[5] = PyList_New(n_elements)))
        goto done;
    for (Py_ssize_t a = 0; a < n_elements; a++) {
        PyObject *tup = PyTuple_New(p[a].depth);
        if (!tup) goto done;
        PyList_SET_ITEM(lists[5], a, tup);
        Py_ssize_t k = p[a].depth, at = p[a].nest;
        while (at >= 0) {
            const NestEntry *entry = (const NestEntry *)nest.p + at;
            PyObject *x = PyLong_FromLongLong(entry->element);
            if (!x) goto done;
            PyTuple_SET_ITEM(tup, --k, x);
            at = entry->up;
        }
    }
    result = PyTuple_Pack(6, lists[0], lists[1], lists[2], lists[3], lists[4], lists[5]);
done:
    for (int i = 0; i < 6; i++) Py_XDECREF(lists[i]);
    PyMem_Free(memo);
    PyMem_Free(ctxs.p);
    PyMem_Free(nest.p);
    PyMem_Free(chain.p);
    PyMem_Free(picked.p);
    for (int i = 0; i < held; i++) PyBuffer_Release(&v[i]);
    return result;
}

/* ---- the walks up from nodes: markdown.py _Structure.around, structural_anchor ---- */

static int get_out(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) return -1;
    if (view->itemsize != itemsize) {
        PyErr_Format(PyExc_TypeError, "%s: expected contiguous items of %zd bytes", what, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* A per-known-tag table's entry for node e (numpy's reading of index -1: the last node; tag
 * ids past the table: its last entry). */
static inline uint8_t per_tag(const uint8_t *table, Py_ssize_t n_table, const int32_t *tag, Py_ssize_t size,
                              int64_t e) {
    int32_t t = tag[e < 0 ? e + size : e];
    return table[t < 0 || t >= n_table ? n_table - 1 : t];
}

/* around(nodes, parent, tag, blockish, kind, linked, container, inline): _Structure.around
 * into the int64 arrays container (n) and inline (4 × n, filled with -1 by the caller).
 * blockish, kind: uint8 per known tag (node 0 is always block-level); linked: uint8 per node. */
static PyObject *around(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[8];
    if (!PyArg_ParseTuple(args, "OOOOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7])) return NULL;
    Py_buffer v[8];
    const Py_ssize_t sizes[8] = {8, 4, 4, 1, 1, 1, 8, 8};
    const char *names[8] = {"nodes", "parent", "tag", "blockish", "kind", "linked", "container", "inline"};
    int held = 0;
    PyObject *result = NULL;
    for (; held < 8; held++)
        if ((held < 6 ? get(o[held], &v[held], sizes[held], names[held])
                      : get_out(o[held], &v[held], sizes[held], names[held])) < 0) goto done;
    const int64_t *nodes = v[0].buf;
    const int32_t *parent = v[1].buf, *tag = v[2].buf;
    const uint8_t *blockish = v[3].buf, *kind = v[4].buf, *linked = v[5].buf;
    int64_t *container = v[6].buf, *inl = v[7].buf;
    Py_ssize_t n = v[0].len / 8, size = v[1].len / 4, n_block = v[3].len, n_kind = v[4].len;
    if (v[2].len / 4 != size || v[5].len != size || v[6].len / 8 != n || v[7].len / 8 != 4 * n || !n_block
        || !n_kind || size == 0) {
        PyErr_SetString(PyExc_ValueError, "around: arrays of different lengths");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t e = nodes[i];
        if (e < -size || e >= size) {
            PyErr_SetString(PyExc_IndexError, "around: a node outside the page");
            goto done;
        }
        int64_t cur = parent[e < 0 ? e + size : e];
        /* The climb stops at a block-level element; node 0 is one, so it ends. */
        for (Py_ssize_t steps = 0;; steps++) {
            int64_t at = cur < 0 ? cur + size : cur;
            if (at == 0 || per_tag(blockish, n_block, tag, size, cur)) break;
            if (steps > size) {
                PyErr_SetString(PyExc_ValueError, "around: the parents form a cycle");
                goto done;
            }
            uint8_t k = per_tag(kind, n_kind, tag, size, cur);
            if (linked[at] && inl[i] < 0) inl[i] = cur;
            if (k >= 1 && k <= 3 && inl[(Py_ssize_t)k * n + i] < 0) inl[(Py_ssize_t)k * n + i] = cur;
            cur = parent[at];
        }
        container[i] = cur;
    }
    result = Py_NewRef(Py_None);
done:
    for (int i = 0; i < held; i++) PyBuffer_Release(&v[i]);
    return result;
}

/* anchors(elements, parent, tag, structural, out): _Structure.structural_anchor into the
 * int64 array out. */
static PyObject *anchors(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[5];
    if (!PyArg_ParseTuple(args, "OOOOO", &o[0], &o[1], &o[2], &o[3], &o[4])) return NULL;
    Py_buffer v[5];
    const Py_ssize_t sizes[5] = {8, 4, 4, 1, 8};
    const char *names[5] = {"elements", "parent", "tag", "structural", "out"};
    int held = 0;
    PyObject *result = NULL;
    for (; held < 5; held++)
        if ((held < 4 ? get(o[held], &v[held], sizes[held], names[held])
                      : get_out(o[held], &v[held], sizes[held], names[held])) < 0) goto done;
    const int64_t *elements = v[0].buf;
    const int32_t *parent = v[1].buf, *tag = v[2].buf;
    const uint8_t *structural = v[3].buf;
    int64_t *out = v[4].buf;
    Py_ssize_t n = v[0].len / 8, size = v[1].len / 4, n_struct = v[3].len;
    if (v[2].len / 4 != size || v[4].len / 8 != n || !n_struct) {
        PyErr_SetString(PyExc_ValueError, "anchors: arrays of different lengths");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t e = elements[i];
        for (Py_ssize_t steps = 0; e >= 0; steps++) {
            if (e >= size || steps > size) {
                PyErr_SetString(PyExc_ValueError, "anchors: a node outside the page or a cycle");
                goto done;
            }
            if (per_tag(structural, n_struct, tag, size, e)) break;
            e = parent[e];
        }
        out[i] = e;
    }
    result = Py_NewRef(Py_None);
done:
    for (int i = 0; i < held; i++) PyBuffer_Release(&v[i]);
    return result;
}

static PyObject *set_category(PyObject *self, PyObject *fn) {
    (void)self;
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "set_category: a callable expected");
        return NULL;
    }
    Py_XSETREF(category_fn, Py_NewRef(fn));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"units", units, METH_VARARGS,
     "units(text, start, stop, sep, image, inline, image_strings, link_node, link_url, bounds, modes): "
     "each unit's inline Markdown or raw text (see markdown.py)."},
    {"write", write_page, METH_VARARGS,
     "write(rendered, modes, container, ctx_of, heading, pre, cell, table, li, nests, tag, parent, end, inside, "
     "ol, quote, code_lang, block, number): "
     "the page's Markdown (markdown.py _Writer.write)."},
    {"contexts", contexts, METH_VARARGS,
     "contexts(elements, parent, tag, end, roles, inside): markdown.py _Structure.context of each element."},
    {"around", around, METH_VARARGS,
     "around(nodes, parent, tag, blockish, kind, linked, container, inline): markdown.py _Structure.around."},
    {"anchors", anchors, METH_VARARGS,
     "anchors(elements, parent, tag, structural, out): markdown.py _Structure.structural_anchor."},
    {"line_start", line_start, METH_O, "line_start(text): markdown.py escape_line_start."},
    {"set_category", set_category, METH_O, "set_category(fn): unicodedata.category, for non-ASCII characters."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_markdown",
                                    "main_markdown's inline rendering, compiled (see markdown.py).",
                                    -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__markdown(void) { return PyModule_Create(&module); }

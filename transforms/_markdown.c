/* main_markdown compiled (transforms/markdown.py): page_markdown in one call per page.
 *
 * markdown.py is the reference, step for step: the written items (_Lines: the selected text
 * nodes, the images whose block is mostly main content, a `^` before each superscript's
 * first text, their separators as text.py decides them, line starts), the climbs from each
 * item to its block-level container and its link, strong, emphasis and code elements
 * (_Structure.around), the block contexts (_Structure.context, from each line's structural
 * anchor), every line's inline Markdown (_inline_markdown: links, strong, emphasis and code
 * spans grouped level by level, CommonMark's flanking rules for `*`, code span fences and
 * padding, escape_text with and without brackets), the raw text of code (_Lines.raw) and the
 * layout (_Writer.write: line-start escapes, headings, list items and quotes with their
 * numbers, separators, pipe tables, fenced code blocks with their language). `render`
 * returns the same str as the reference (tests/transforms/test_markdown_compiled.py,
 * sitestrip-bench compare-markdown); `contexts`, `around`, `anchors` and `line_start` expose
 * pieces of it for the tests.
 *
 * Text is read through PyUnicode_READ and built as UCS4, so non-BMP characters and lone
 * surrogates are characters as Python sees them. Whitespace is Py_UNICODE_ISSPACE (what
 * str.isspace and str.strip use); the escape rules' [A-Za-z0-9] is ASCII only, as in the
 * regexes. unicodedata.category has no C API: ASCII punctuation and symbols (categories P*
 * and S*) are the 32 printable non-alphanumerics, and every other character asks the
 * `category` function set by `configure` (unicodedata.category itself).
 *
 * Node indexes follow numpy's reading where the reference indexes arrays with them (a
 * root's parent -1 is the last node); tag ids past the per-tag tables read their last entry,
 * as page.has_tag clips them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The empty string where the reference compares one character ("" before a line's start). */
#define NO_CHAR ((Py_UCS4)0xFFFFFFFFu)

/* What `configure` sets once (markdown.py, at import): the per-tag tables, tag ids, flags. */
static struct {
    PyObject *category;
    uint8_t *block, *kind, *structural, *role, *inside;    /* per known tag id, + 1 last entry */
    Py_ssize_t n_tags;
    int32_t text, ol, quote, li, sup;
    uint16_t f_space, f_raised, f_pre;
} cfg;
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
    if (cfg.category == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_markdown: configure was not called");
        return -1;
    }
    PyObject *ch = PyUnicode_FromOrdinal((int)c);
    if (!ch) return -1;
    PyObject *cat = PyObject_CallOneArg(cfg.category, ch);
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
    /* At most a backslash per character: room for all of them once, then no checks. */
    if (grow(out, 2 * n) < 0) return -1;
    Py_UCS4 *o = out->p + out->n;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = p[i];
        int esc = 0;
        /* Every character the rules escape is ASCII up to '`' (0x60). */
        if (c <= '`') {
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
        }
        if (esc) *o++ = '\\';
        *o++ = c;
    }
    out->n = o - out->p;
    return 0;
}

/* One page's written items (markdown.py _Lines), in document order. */
typedef struct {
    PyObject *text;                 /* the page's text */
    const int32_t *text_ptr;        /* the page's text_ptr: node i's text is [ptr[i], ptr[i + 1]) */
    const int64_t *node;            /* each item's node */
    const int8_t *sep;              /* text.py codes: 0 none, 1 space, 2 newline */
    const uint8_t *image;           /* an image or a caret: its Markdown is given (extra) */
    const int64_t *inline_;         /* 4 rows × n: link, strong, em, code element or -1 */
    const int64_t *kinds;           /* each item's kind bits */
    const Py_ssize_t *extra_at;     /* an image item's Markdown: extra[extra_at[k], extra_at[k + 1]) */
    const Py_UCS4 *extra;
    const int32_t *link_node;       /* the page's link elements, sorted */
    Py_ssize_t n_links;
    PyObject *const *target;        /* their URLs, each with its fragments (markdown.py _Structure.targets) */
    Py_ssize_t n;
} Items;

static int put_item(Buf *b, const Items *it, Py_ssize_t k) {
    if (it->image[k]) return put_n(b, it->extra + it->extra_at[k], it->extra_at[k + 1] - it->extra_at[k]);
    int64_t e = it->node[k];
    return put_str(b, it->text, it->text_ptr[e], it->text_ptr[e + 1]);
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

/* markdown.py _destination: the URL, in <> when it holds a space, a parenthesis or <>. */
static int put_url(Buf *out, PyObject *url) {
    Py_ssize_t len = PyUnicode_GET_LENGTH(url);
    int kind = PyUnicode_KIND(url), angle = 0;
    const void *data = PyUnicode_DATA(url);
    for (Py_ssize_t i = 0; i < len && !angle; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        angle = c == ' ' || c == '(' || c == ')' || c == '<' || c == '>';
    }
    if (angle && put(out, '<') < 0) return -1;
    if (put_str(out, url, 0, len) < 0) return -1;
    if (angle && put(out, '>') < 0) return -1;
    return 0;
}

/* markdown.py _Structure.url (searchsorted on link_node) and _destination. */
static int put_destination(Buf *out, const Items *it, int64_t link) {
    Py_ssize_t lo = 0, hi = it->n_links;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (it->link_node[mid] < link) lo = mid + 1; else hi = mid;
    }
    if (lo >= it->n_links) {
        PyErr_SetString(PyExc_IndexError, "_markdown: a link element without its URL");
        return -1;
    }
    return put_url(out, it->target[lo]);
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

/* markdown.py _Lines.markdown of items [s, e): the unit's inline Markdown. */
static int unit_markdown(const Items *it, Py_ssize_t s, Py_ssize_t e, Buf *out) {
    int64_t kinds = 0;
    for (Py_ssize_t k = s; k < e; k++) kinds |= it->kinds[k];
    return inline_markdown(it, s, e, 0, 0, NO_CHAR, NO_CHAR, kinds, out);
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

static int get_out(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) return -1;
    if (view->itemsize != itemsize) {
        PyErr_Format(PyExc_TypeError, "%s: expected contiguous items of %zd bytes", what, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}
/* ---- the layout: markdown.py _Writer.write ---- */


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

/* A per-known-tag table's entry for tag id t (ids past the table: its last entry). */
static inline uint8_t of_tag(const uint8_t *table, Py_ssize_t n_table, int32_t t) {
    return table[t < 0 || t >= n_table ? n_table - 1 : t];
}

/* markdown.py _Structure.is_data_table: no layout element inside, a row at least, and two
 * rows or two cells. */
static int is_data_table(const int32_t *tag, const int32_t *end, Py_ssize_t size, const uint8_t *inside,
                         Py_ssize_t n_inside, int64_t table) {
    Py_ssize_t rows = 0, cells = 0, stop = end[table] < size ? end[table] : size;
    for (Py_ssize_t i = table + 1; i < stop; i++) {
        uint8_t bits = of_tag(inside, n_inside, tag[i]);
        if (bits & INSIDE_LAYOUT) return 0;
        rows += (bits & INSIDE_TR) != 0;
        cells += (bits & INSIDE_CELL) != 0;
    }
    return rows >= 1 && (rows >= 2 || cells >= 2);
}

/* Every element's context is its parent's with its own tag applied, memoized per element. */
typedef struct {
    const int32_t *parent, *tag, *end;
    Py_ssize_t size;
    const uint8_t *roles, *inside;
    Py_ssize_t n_roles, n_inside;
    Py_ssize_t *memo;          /* per node: its context's index in ctxs, -1 not yet */
    Vec ctxs, nest, chain;     /* Context, NestEntry, int64_t */
} Contexts;

static int contexts_init(Contexts *c, const int32_t *parent, const int32_t *tag, const int32_t *end, Py_ssize_t size,
                         const uint8_t *roles, Py_ssize_t n_roles, const uint8_t *inside, Py_ssize_t n_inside) {
    *c = (Contexts){parent, tag, end, size, roles, inside, n_roles, n_inside, NULL,
                    {NULL, 0, 0, sizeof(Context)}, {NULL, 0, 0, sizeof(NestEntry)}, {NULL, 0, 0, sizeof(int64_t)}};
    c->memo = PyMem_Malloc((size_t)(size ? size : 1) * sizeof(Py_ssize_t));
    if (!c->memo) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < size; i++) c->memo[i] = -1;
    Context *root = vec_push(&c->ctxs);
    if (!root) return -1;
    *root = (Context){0, -1, -1, -1, -1, -1, 0};
    return 0;
}

static void contexts_free(Contexts *c) {
    PyMem_Free(c->memo);
    PyMem_Free(c->ctxs.p);
    PyMem_Free(c->nest.p);
    PyMem_Free(c->chain.p);
}

/* The index in ctxs of element e's context (-1: the page's), or -1 on error. */
static Py_ssize_t context_of(Contexts *c, int64_t e) {
    c->chain.n = 0;
    while (e != -1) {
        if (e < -1 || e >= c->size || c->chain.n > c->size) {
            PyErr_SetString(PyExc_IndexError, "contexts: a node outside the page");
            return -1;
        }
        if (c->memo[e] >= 0) break;
        int64_t *slot = vec_push(&c->chain);
        if (!slot) return -1;
        *slot = e;
        e = c->parent[e];
    }
    Py_ssize_t at = e == -1 ? 0 : c->memo[e];
    for (Py_ssize_t i = c->chain.n - 1; i >= 0; i--) {
        int64_t el = ((int64_t *)c->chain.p)[i];
        Context next = ((Context *)c->ctxs.p)[at];
        int role = of_tag(c->roles, c->n_roles, c->tag[el]);
        if (role >= 1 && role <= 6) {
            next.heading = role;
        } else if (role == ROLE_PRE) {
            next.pre = el;
        } else if (role == ROLE_LI || role == ROLE_QUOTE) {
            if (role == ROLE_LI) next.li = el;
            NestEntry *entry = vec_push(&c->nest);
            if (!entry) return -1;
            entry->element = el;
            entry->up = next.nest;
            next.nest = c->nest.n - 1;
            next.depth++;
        } else if (role == ROLE_TABLE) {
            if (is_data_table(c->tag, c->end, c->size, c->inside, c->n_inside, el)) {
                next.table = el;
                next.cell = -1;
            }
        } else if (role == ROLE_CELL && next.table >= 0 && next.cell < 0) {
            next.cell = el;
        }
        Context *slot = vec_push(&c->ctxs);
        if (!slot) return -1;
        *slot = next;
        at = c->ctxs.n - 1;
        c->memo[el] = at;
    }
    return at;
}

/* A context's nest, outermost first, into out (its depth entries). */
static void nest_of(const Contexts *c, const Context *ctx, int64_t *out) {
    Py_ssize_t k = ctx->depth, at = ctx->nest;
    while (at >= 0) {
        const NestEntry *entry = (const NestEntry *)c->nest.p + at;
        out[--k] = entry->element;
        at = entry->up;
    }
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

/* contexts(elements, parent, tag, end, roles, inside) -> (heading, pre, cell, table, li,
 * nests): each element's _Context (-1: the page's), as lists; a nest is a tuple of elements,
 * outermost first. parent, tag, end: the page's int32 arrays; roles and inside: uint8 per
 * known tag id (ids past the end are the last entry's), what a tag changes in a context and
 * what it counts for inside a table. */
static PyObject *contexts(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *elements_o, *parent_o, *tag_o, *end_o, *roles_o, *inside_o;
    if (!PyArg_ParseTuple(args, "OOOOOO", &elements_o, &parent_o, &tag_o, &end_o, &roles_o, &inside_o)) return NULL;
    enum { N_VIEWS = 6 };
    Py_buffer v[N_VIEWS];
    PyObject *objs[N_VIEWS] = {elements_o, parent_o, tag_o, roles_o, end_o, inside_o};
    const Py_ssize_t sizes[N_VIEWS] = {8, 4, 4, 1, 4, 1};
    const char *names[N_VIEWS] = {"elements", "parent", "tag", "roles", "end", "inside"};
    int held = 0, ready = 0;
    PyObject *result = NULL, *lists[6] = {NULL};
    Contexts c;
    Vec picked = {NULL, 0, 0, sizeof(Context)};
    for (; held < N_VIEWS; held++)
        if (get(objs[held], &v[held], sizes[held], names[held]) < 0) goto done;
    const int64_t *elements = v[0].buf;
    Py_ssize_t n_elements = v[0].len / 8, size = v[1].len / 4;
    if (v[2].len / 4 != size || v[4].len / 4 != size || v[3].len == 0 || v[5].len == 0) {
        PyErr_SetString(PyExc_ValueError, "contexts: arrays of different lengths");
        goto done;
    }
    if (contexts_init(&c, v[1].buf, v[2].buf, v[4].buf, size, v[3].buf, v[3].len, v[5].buf, v[5].len) < 0) {
        contexts_free(&c);
        goto done;
    }
    ready = 1;
    for (Py_ssize_t a = 0; a < n_elements; a++) {
        Py_ssize_t at = context_of(&c, elements[a]);
        if (at < 0) goto done;
        Context *got = vec_push(&picked);
        if (!got) goto done;
        *got = ((Context *)c.ctxs.p)[at];
    }
    const Context *p = picked.p;
    Py_ssize_t stride = sizeof(Context);
    if (!n_elements) p = (const Context *)c.ctxs.p;
    if (!(lists[0] = int64_list(&p->heading, n_elements, stride)) || !(lists[1] = int64_list(&p->pre, n_elements, stride))
        || !(lists[2] = int64_list(&p->cell, n_elements, stride)) || !(lists[3] = int64_list(&p->table, n_elements, stride))
        || !(lists[4] = int64_list(&p->li, n_elements, stride)) || !(lists[5] = PyList_New(n_elements)))
        goto done;
    for (Py_ssize_t a = 0; a < n_elements; a++) {
        PyObject *tup = PyTuple_New(p[a].depth);
        if (!tup) goto done;
        PyList_SET_ITEM(lists[5], a, tup);
        int64_t *nest = PyMem_Malloc((size_t)(p[a].depth ? p[a].depth : 1) * sizeof(int64_t));
        if (!nest) {
            PyErr_NoMemory();
            goto done;
        }
        nest_of(&c, &p[a], nest);
        for (Py_ssize_t k = 0; k < p[a].depth; k++) {
            PyObject *x = PyLong_FromLongLong(nest[k]);
            if (!x) {
                PyMem_Free(nest);
                goto done;
            }
            PyTuple_SET_ITEM(tup, k, x);
        }
        PyMem_Free(nest);
    }
    result = PyTuple_Pack(6, lists[0], lists[1], lists[2], lists[3], lists[4], lists[5]);
done:
    for (int i = 0; i < 6; i++) Py_XDECREF(lists[i]);
    if (ready) contexts_free(&c);
    PyMem_Free(picked.p);
    for (int i = 0; i < held; i++) PyBuffer_Release(&v[i]);
    return result;
}

/* ---- the walks up from nodes: markdown.py _Structure.around, structural_anchor ---- */

/* Node e's nearest block-level ancestor (container) and, per inline kind (link, strong, em,
 * code), its nearest such ancestor below the container (inl[k * stride], left as they are
 * when none: the caller fills them with -1). blockish, kind: per known tag; linked: per node
 * (NULL: none). Node 0 is always block-level. -1 on error. */
static int climb(int64_t e, const int32_t *parent, const int32_t *tag, Py_ssize_t size, const uint8_t *blockish,
                 Py_ssize_t n_block, const uint8_t *kind, Py_ssize_t n_kind, const uint8_t *linked,
                 int64_t *container, int64_t *inl, Py_ssize_t stride) {
    if (e < -size || e >= size) {
        PyErr_SetString(PyExc_IndexError, "around: a node outside the page");
        return -1;
    }
    int64_t cur = parent[e < 0 ? e + size : e];
    /* The climb stops at a block-level element; node 0 is one, so it ends. */
    for (Py_ssize_t steps = 0;; steps++) {
        int64_t at = cur < 0 ? cur + size : cur;
        if (at < 0 || at >= size) {
            PyErr_SetString(PyExc_IndexError, "around: a parent outside the page");
            return -1;
        }
        if (at == 0 || of_tag(blockish, n_block, tag[at])) break;
        if (steps > size) {
            PyErr_SetString(PyExc_ValueError, "around: the parents form a cycle");
            return -1;
        }
        uint8_t k = of_tag(kind, n_kind, tag[at]);
        if (linked && linked[at] && inl[0] < 0) inl[0] = cur;
        if (k >= 1 && k <= 3 && inl[k * stride] < 0) inl[k * stride] = cur;
        cur = parent[at];
    }
    *container = cur;
    return 0;
}

/* Element e's nearest ancestor-or-self whose tag can change a context, or -1. */
static int anchor_of(int64_t e, const int32_t *parent, const int32_t *tag, Py_ssize_t size, const uint8_t *structural,
                     Py_ssize_t n_struct, int64_t *out) {
    for (Py_ssize_t steps = 0; e >= 0; steps++) {
        if (e >= size || steps > size) {
            PyErr_SetString(PyExc_ValueError, "anchors: a node outside the page or a cycle");
            return -1;
        }
        if (of_tag(structural, n_struct, tag[e])) break;
        e = parent[e];
    }
    *out = e;
    return 0;
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
    int64_t *container = v[6].buf, *inl = v[7].buf;
    Py_ssize_t n = v[0].len / 8, size = v[1].len / 4;
    if (v[2].len / 4 != size || v[5].len != size || v[6].len / 8 != n || v[7].len / 8 != 4 * n || !v[3].len
        || !v[4].len || size == 0) {
        PyErr_SetString(PyExc_ValueError, "around: arrays of different lengths");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (climb(nodes[i], v[1].buf, v[2].buf, size, v[3].buf, v[3].len, v[4].buf, v[4].len, v[5].buf, &container[i],
                  inl + i, n) < 0) goto done;
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
    int64_t *out = v[4].buf;
    Py_ssize_t n = v[0].len / 8, size = v[1].len / 4;
    if (v[2].len / 4 != size || v[4].len / 8 != n || !v[3].len) {
        PyErr_SetString(PyExc_ValueError, "anchors: arrays of different lengths");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (anchor_of(elements[i], v[1].buf, v[2].buf, size, v[3].buf, v[3].len, &out[i]) < 0) goto done;
    result = Py_NewRef(Py_None);
done:
    for (int i = 0; i < held; i++) PyBuffer_Release(&v[i]);
    return result;
}

/* ---- the page: markdown.py page_markdown ---- */

typedef struct {
    PyObject *text;
    const int32_t *text_ptr, *parent, *tag, *end, *line, *words;
    const uint16_t *flags;
    Py_ssize_t size;
} Page;

/* numpy's reading of index e (-1: the last node). */
static inline Py_ssize_t np_at(const Page *pg, int64_t e) { return (Py_ssize_t)(e < 0 ? e + pg->size : e); }

/* _Writer.write's state: the items cut into units (lines of main_text), each unit's
 * container and context. */
typedef struct {
    const Items *it;
    const Page *pg;
    const Contexts *cx;
    const Py_ssize_t *bounds;       /* unit u: items [bounds[u], bounds[u + 1]) */
    const int64_t *container;       /* per unit */
    const Context *ctx;             /* per unit */
    Py_ssize_t n_units;
    const int32_t *code_node;
    Py_ssize_t n_code;
    PyObject *code_lang;            /* tuple parallel to code_node */
    int32_t *li_number;             /* per node, made at the first question */
} Layout;

/* _Writer.number: a list item's rank among the list items of its parent, from 1. */
static int number_of(Layout *l, int64_t li, long long *got) {
    const Page *pg = l->pg;
    if (!l->li_number) {
        int32_t *count = PyMem_Calloc((size_t)pg->size + 1, sizeof(int32_t));
        l->li_number = PyMem_Calloc((size_t)pg->size, sizeof(int32_t));
        if (!count || !l->li_number) {
            PyMem_Free(count);
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t i = 0; i < pg->size; i++)
            if (pg->tag[i] == cfg.li) l->li_number[i] = ++count[pg->parent[i] < 0 ? pg->size : pg->parent[i]];
        PyMem_Free(count);
    }
    Py_ssize_t at = np_at(pg, li);
    *got = at >= 0 && at < pg->size && pg->tag[at] == cfg.li ? l->li_number[at] : 1;
    return 0;
}

/* markdown.py _Writer.code_block over units [k, stop): their raw texts, one per line, fenced. */
static int code_block(Buf *blk, const Layout *l, Py_ssize_t k, Py_ssize_t stop, int64_t pre) {
    Buf content = {0};
    int rc = -1;
    for (Py_ssize_t u = k; u < stop; u++)
        if ((u > k && put(&content, '\n') < 0) || raw(l->it, l->bounds[u], l->bounds[u + 1], &content) < 0) goto done;
    Py_ssize_t longest = 0, run = 0;
    for (Py_ssize_t i = 0; i < content.n; i++) {
        run = content.p[i] == '`' ? run + 1 : 0;
        if (run > longest) longest = run;
    }
    Py_ssize_t fence = longest + 1 > 3 ? longest + 1 : 3;
    /* The language of the last code entry of this <pre> (a dict's reading of the pairs). */
    PyObject *lang = NULL;
    for (Py_ssize_t i = 0; i < l->n_code; i++)
        if (l->code_node[i] == pre) lang = PyTuple_GET_ITEM(l->code_lang, i);
    for (Py_ssize_t i = 0; i < fence; i++)
        if (put(blk, '`') < 0) goto done;
    if (lang) {
        if (!PyUnicode_Check(lang)) {
            PyErr_SetString(PyExc_TypeError, "_markdown: code languages must be str");
            goto done;
        }
        if (put_str(blk, lang, 0, PyUnicode_GET_LENGTH(lang)) < 0) goto done;
    }
    if (put(blk, '\n') < 0 || put_n(blk, content.p, content.n) < 0 || put(blk, '\n') < 0) goto done;
    for (Py_ssize_t i = 0; i < fence; i++)
        if (put(blk, '`') < 0) goto done;
    rc = 0;
done:
    buf_free(&content);
    return rc;
}

/* markdown.py _Writer.table over units [k, stop) of the data table `table`: each cell's
 * units' Markdown (pipes escaped) joined by spaces, the rows (<tr> in the table) with any
 * text, the first as the header, every row padded to the widest; units outside any cell go
 * before it. */
static int table_block(Buf *blk, const Layout *l, Py_ssize_t k, Py_ssize_t stop, int64_t table) {
    const Page *pg = l->pg;
    Py_ssize_t lo = (Py_ssize_t)table + 1, hi = pg->end[table] < pg->size ? pg->end[table] : pg->size;
    Py_ssize_t span = hi > lo ? hi - lo : 0;
    Buf *cells = PyMem_Calloc((size_t)(span ? span : 1), sizeof(Buf));
    Py_ssize_t *row_of = PyMem_Malloc((size_t)(span ? span : 1) * sizeof(Py_ssize_t));
    Py_ssize_t *count = NULL, *first = NULL, *members = NULL, *written = NULL;
    Buf loose = {0}, md = {0}, text = {0};
    int rc = -1;
    if (!cells || !row_of) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t u = k; u < stop; u++) {
        int64_t c = l->ctx[u].cell;
        md.n = text.n = 0;
        if (unit_markdown(l->it, l->bounds[u], l->bounds[u + 1], &md) < 0) goto done;
        for (Py_ssize_t i = 0; i < md.n; i++)
            if ((md.p[i] == '|' && put(&text, '\\') < 0) || put(&text, md.p[i]) < 0) goto done;
        if (!text.n) continue;
        /* A cell outside the table's range is kept by the reference but never read. */
        Buf *into = c == -1 ? &loose : (c >= lo && c < hi) ? &cells[c - lo] : NULL;
        if (!into) continue;
        if ((into->n && put(into, ' ') < 0) || put_n(into, text.p, text.n) < 0) goto done;
    }
    Py_ssize_t rows = 0;
    for (Py_ssize_t i = 0; i < span; i++)
        row_of[i] = (of_tag(cfg.inside, cfg.n_tags, pg->tag[lo + i]) & INSIDE_TR) ? rows++ : -1;
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
            if (!(of_tag(cfg.inside, cfg.n_tags, pg->tag[lo + i]) & INSIDE_CELL)) continue;
            int64_t p = pg->parent[lo + i];
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
    buf_free(&md);
    buf_free(&text);
    return rc;
}

/* tag[e] as numpy reads it (a root's parent -1 is the last node). */
static inline int32_t tag_at(const Page *pg, int64_t e) { return pg->tag[np_at(pg, e)]; }

/* markdown.py _Writer.write: the units laid out, into out (without the outer newlines the
 * reference strips). */
static int write_units(Layout *l, Buf *out) {
    const Page *pg = l->pg;
    Py_ssize_t deepest = 0;
    for (Py_ssize_t u = 0; u < l->n_units; u++)
        if (l->ctx[u].depth > deepest) deepest = l->ctx[u].depth;
    Open *open = PyMem_Malloc((size_t)(deepest ? deepest : 1) * sizeof(Open));
    Open *popped = PyMem_Malloc((size_t)(deepest ? deepest : 1) * sizeof(Open));
    int64_t *chain = PyMem_Malloc((size_t)(deepest ? deepest : 1) * sizeof(int64_t));
    int64_t *ns = PyMem_Malloc((size_t)(deepest ? deepest : 1) * sizeof(int64_t));
    Buf blk = {0}, line = {0}, pre_buf = {0}, rest = {0}, first = {0};
    int rc = -1;
    if (!open || !popped || !chain || !ns) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t n_open = 0;
    int has_prev = 0, prev_kind = 0, prev_began_item = 0;
    int64_t prev_heading = 0, prev_container = 0;
    enum { LINE = 0, TABLE = 1, CODE = 2 };
    for (Py_ssize_t k = 0; k < l->n_units;) {
        const Context *c = &l->ctx[k];
        Py_ssize_t stop;
        int kind;
        blk.n = 0;
        if (c->table >= 0) {
            stop = k;
            while (stop < l->n_units && l->ctx[stop].table == c->table) stop++;
            if (table_block(&blk, l, k, stop, c->table) < 0) goto done;
            kind = TABLE;
        } else if (c->pre >= 0) {
            stop = k;
            while (stop < l->n_units && l->ctx[stop].pre == c->pre) stop++;
            if (code_block(&blk, l, k, stop, c->pre) < 0) goto done;
            kind = CODE;
        } else {
            stop = k + 1;
            line.n = 0;
            if (unit_markdown(l->it, l->bounds[k], l->bounds[k + 1], &line) < 0) goto done;
            if (c->heading) {
                for (int64_t h = 0; h < c->heading; h++)
                    if (put(&blk, '#') < 0) goto done;
                if (put(&blk, ' ') < 0) goto done;
            }
            if (line_start_into(&blk, line.p, line.n) < 0) goto done;
            if (c->heading && blk.p[blk.n - 1] == '#') {
                blk.p[blk.n - 1] = '\\';
                if (put(&blk, '#') < 0) goto done;
            }
            kind = LINE;
        }
        /* _Writer.enter: quotes always open; of the list items around the line, the nearest
         * opens, and outer ones stay open only if an earlier line opened them. */
        Py_ssize_t kept = 0, n_chain = 0, n_nest = c->depth;
        Py_ssize_t n_before = n_open;
        if (n_open || n_nest) {
            nest_of(l->cx, c, ns);
            for (Py_ssize_t i = 0; i < n_nest; i++) {
                int64_t e = ns[i];
                int keep = e == c->li || tag_at(pg, e) == cfg.quote;
                for (Py_ssize_t j = 0; j < n_open && !keep; j++) keep = open[j].node == e;
                if (keep) chain[n_chain++] = e;
            }
            while (kept < n_open && kept < n_chain && open[kept].node == chain[kept]) kept++;
        }
        Py_ssize_t n_popped = n_before - kept;
        if (n_popped) memcpy(popped, open + kept, (size_t)n_popped * sizeof(Open));
        n_open = kept;
        Py_ssize_t n_pushed = 0, n_pushed_items = 0;
        for (Py_ssize_t i = kept; i < n_chain; i++) {
            int64_t e = chain[i];
            Open o = {e, tag_at(pg, e) == cfg.quote, -1};
            if (!o.quote) {
                if (tag_at(pg, pg->parent[np_at(pg, e)]) == cfg.ol && number_of(l, e, &o.number) < 0) goto done;
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
                    if (c->heading || prev_heading) blank = kept == 0;
                    else blank = l->container[k] != prev_container ? 1 : 2;
                } else if (prev_began_item && n_pushed_items == 1 && n_pushed == 1) {
                    const Open *item = &open[n_open - 1];
                    int64_t parent = pg->parent[np_at(pg, item->node)];
                    int sibling = 0;
                    for (Py_ssize_t j = 0; j < n_popped && !sibling; j++)
                        sibling = !popped[j].quote && pg->parent[np_at(pg, popped[j].node)] == parent;
                    int nested = 0;
                    if (!n_popped) {
                        nested = tag_at(pg, parent) != cfg.ol;
                        if (!nested) {
                            long long number;
                            if (number_of(l, item->node, &number) < 0) goto done;
                            nested = number == 1;
                        }
                    }
                    if (sibling || nested) blank = 0;
                }
            }
            int bad = 0;
            if (blank == 1) {
                rest.n = 0;
                for (Py_ssize_t j = 0; j < kept && !bad; j++) bad = put_prefix(&rest, &open[j], 0) < 0;
                bad = bad || put(out, '\n') < 0 || put_range(out, rest.p, rstripped(rest.p, rest.n)) < 0
                      || put(out, '\n') < 0;
            } else if (blank == 2) {
                bad = put_ascii(out, "\\\n") < 0;
            } else {
                bad = put(out, '\n') < 0;
            }
            if (bad) goto done;
        }
        /* The block, each line led by the prefixes of the open items and quotes. */
        int has_newline = 0;
        for (Py_ssize_t i = 0; i < blk.n && !has_newline; i++) has_newline = blk.p[i] == '\n';
        if (!n_open && !has_newline) {
            Py_ssize_t n = only_quote_marks(blk.p, blk.n) ? rstripped(blk.p, blk.n) : blk.n;
            if (put_range(out, blk.p, n) < 0) goto done;
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
                int bad;
                if (i == 0) bad = put_range(&pre_buf, first.p, first.n) < 0 || put_range(&pre_buf, blk.p + a, e - a) < 0;
                else if (e > a) bad = put_range(&pre_buf, rest.p, rest.n) < 0 || put_range(&pre_buf, blk.p + a, e - a) < 0;
                else bad = put_range(&pre_buf, rest.p, rest_stripped) < 0;
                if (bad) goto done;
                Py_ssize_t n = only_quote_marks(pre_buf.p, pre_buf.n) ? rstripped(pre_buf.p, pre_buf.n) : pre_buf.n;
                if ((i > 0 && put(out, '\n') < 0) || put_range(out, pre_buf.p, n) < 0) goto done;
                if (e >= blk.n) break;
                a = e + 1;
            }
        }
        has_prev = 1;
        prev_kind = kind;
        prev_heading = c->heading;
        prev_container = l->container[k];
        prev_began_item = kind == LINE && n_pushed_items > 0;
        k = stop;
    }
    rc = 0;
done:
    PyMem_Free(open);
    PyMem_Free(popped);
    PyMem_Free(chain);
    PyMem_Free(ns);
    buf_free(&blk);
    buf_free(&line);
    buf_free(&pre_buf);
    buf_free(&rest);
    buf_free(&first);
    return rc;
}

/* Stable sort of n (key, payload) pairs by key (merge sort; tmp holds n pairs). */
typedef struct {
    int64_t key;
    Py_ssize_t payload;
} Pair;

static void sort_pairs(Pair *a, Pair *tmp, Py_ssize_t n) {
    for (Py_ssize_t width = 1; width < n; width *= 2) {
        for (Py_ssize_t lo = 0; lo < n; lo += 2 * width) {
            Py_ssize_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            Py_ssize_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) tmp[k++] = a[j].key < a[i].key ? a[j++] : a[i++];
            while (i < mid) tmp[k++] = a[i++];
            while (j < hi) tmp[k++] = a[j++];
        }
        memcpy(a, tmp, (size_t)n * sizeof(Pair));
    }
}

static Py_ssize_t lower_bound64(const int64_t *a, Py_ssize_t n, int64_t x) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (a[mid] < x) lo = mid + 1; else hi = mid;
    }
    return lo;
}

static Py_ssize_t lower_bound32(const int32_t *a, Py_ssize_t n, int64_t x) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (a[mid] < x) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* text.py separators for idx[k] (k >= 1): newline where the page's line moves, else a space
 * where the HTML had whitespace (or the text is raised, with `raised`) or text of the page
 * lies between (unless the text is verbatim and begins with whitespace), else none. */
static int separator(const Page *pg, const int64_t *idx, const uint8_t *gap, Py_ssize_t k, int raised) {
    if (k == 0) return 0;
    int64_t nxt = idx[k];
    uint16_t f = pg->flags[nxt];
    int space = (f & (raised ? cfg.f_space | cfg.f_raised : cfg.f_space)) != 0;
    if (gap[k]) {
        if (f & cfg.f_pre) {
            int32_t a = pg->text_ptr[nxt], b = pg->text_ptr[nxt + 1];
            space = !(a < b && Py_UNICODE_ISSPACE(PyUnicode_READ_CHAR(pg->text, a)));
        } else {
            space = 1;
        }
    }
    if (pg->line[nxt] != pg->line[idx[k - 1]]) return 2;
    return space ? 1 : 0;
}

/* An element of a tuple of str, checked. */
static PyObject *str_item(PyObject *tuple, Py_ssize_t i, const char *what) {
    PyObject *s = PyTuple_GET_ITEM(tuple, i);
    if (!PyUnicode_Check(s)) {
        PyErr_Format(PyExc_TypeError, "render: %s must be str", what);
        return NULL;
    }
    return s;
}

enum { FROM_TEXT = 0, FROM_IMAGE = 1, FROM_CARET = 2 };

/* render(text, text_ptr, parent, tag, end, flags, line, words, mask, line_starts, links,
 * images, url, link_node, link_url, fragment_node, fragment, image_node, image_src,
 * image_alt, code_node, code_lang) -> str: markdown.py page_markdown(page, mask, options,
 * line_starts). The page's arrays as CompactPage holds them (int32; flags uint16; mask one
 * byte per node; line_starts int64 or None); link_url, fragment, image_src, image_alt and
 * code_lang: tuples of str parallel to their node arrays (NodeExtras). */
static PyObject *render(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text, *o_ptr, *o_parent, *o_tag, *o_end, *o_flags, *o_line, *o_words, *o_mask, *o_starts, *url,
        *o_link_node, *link_url, *o_frag_node, *frags, *o_img_node, *img_src, *img_alt, *o_code_node, *code_lang;
    int links, images;
    if (!PyArg_ParseTuple(args, "UOOOOOOOOOppUOO!OO!OO!O!OO!", &text, &o_ptr, &o_parent, &o_tag, &o_end, &o_flags,
                          &o_line, &o_words, &o_mask, &o_starts, &links, &images, &url, &o_link_node, &PyTuple_Type,
                          &link_url, &o_frag_node, &PyTuple_Type, &frags, &o_img_node, &PyTuple_Type, &img_src,
                          &PyTuple_Type, &img_alt, &o_code_node, &PyTuple_Type, &code_lang))
        return NULL;
    if (!cfg.block) {
        PyErr_SetString(PyExc_RuntimeError, "_markdown: configure was not called");
        return NULL;
    }
    enum { V_PTR, V_PARENT, V_TAG, V_END, V_FLAGS, V_LINE, V_WORDS, V_MASK, V_LINK, V_FRAG, V_IMG, V_CODE, V_STARTS,
           N_VIEWS };
    Py_buffer v[N_VIEWS];
    PyObject *objs[N_VIEWS] = {o_ptr, o_parent, o_tag, o_end, o_flags, o_line, o_words, o_mask, o_link_node,
                               o_frag_node, o_img_node, o_code_node, o_starts};
    const Py_ssize_t sizes[N_VIEWS] = {4, 4, 4, 4, 2, 4, 4, 1, 4, 4, 4, 4, 8};
    const char *names[N_VIEWS] = {"text_ptr", "parent", "tag", "end", "flags", "line", "words", "mask",
                                  "link_node", "fragment_node", "image_node", "code_node", "line_starts"};
    int held = 0, have_starts = o_starts != Py_None, ready = 0;
    PyObject *result = NULL, **targets = NULL;
    int64_t *idx = NULL, *sups = NULL, *caret_node = NULL, *item_node = NULL, *inl = NULL, *kinds = NULL,
            *container = NULL, *sums = NULL, *keep_img = NULL;
    uint8_t *gap = NULL, *image = NULL, *linked = NULL, *starts_mask = NULL, *from = NULL;
    int8_t *tsep = NULL, *caret_sep = NULL, *sep = NULL;
    Py_ssize_t *caret_at = NULL, *extra_at = NULL, *bounds = NULL, *source = NULL;
    Pair *pairs = NULL, *tmp = NULL;
    Context *ctx = NULL;
    Contexts cx;
    Buf extra = {0}, out = {0};
    Layout lay = {0};
    Py_ssize_t n_links = 0;

    for (; held < N_VIEWS; held++) {
        if (held == V_STARTS && !have_starts) break;
        if (get(objs[held], &v[held], sizes[held], names[held]) < 0) goto done;
    }
    Page pg = {text, v[V_PTR].buf, v[V_PARENT].buf, v[V_TAG].buf, v[V_END].buf, v[V_LINE].buf, v[V_WORDS].buf,
               v[V_FLAGS].buf, v[V_PARENT].len / 4};
    Py_ssize_t size = pg.size, text_len = PyUnicode_GET_LENGTH(text);
    const uint8_t *mask = v[V_MASK].buf;
    if (v[V_TAG].len / 4 != size || v[V_END].len / 4 != size || v[V_FLAGS].len / 2 != size
        || v[V_LINE].len / 4 != size || v[V_WORDS].len / 4 != size || v[V_MASK].len != size
        || v[V_PTR].len / 4 != size + 1) {
        PyErr_SetString(PyExc_ValueError, "render: page arrays of different lengths");
        goto done;
    }
    const int32_t *link_node = v[V_LINK].buf, *frag_node = v[V_FRAG].buf, *img_node = v[V_IMG].buf,
                  *code_node = v[V_CODE].buf;
    n_links = v[V_LINK].len / 4;
    Py_ssize_t n_frag = v[V_FRAG].len / 4, n_img = v[V_IMG].len / 4, n_code = v[V_CODE].len / 4;
    if (PyTuple_GET_SIZE(link_url) != n_links || PyTuple_GET_SIZE(frags) != n_frag
        || PyTuple_GET_SIZE(img_src) != n_img || PyTuple_GET_SIZE(img_alt) != n_img
        || PyTuple_GET_SIZE(code_lang) != n_code) {
        PyErr_SetString(PyExc_ValueError, "render: node extras of different lengths");
        goto done;
    }

    /* _Lines: the selected text nodes, whether other text lies before each, the <sup>s. */
    idx = PyMem_Malloc((size_t)(size ? size : 1) * sizeof(int64_t));
    gap = PyMem_Malloc((size_t)(size ? size : 1));
    sups = PyMem_Malloc((size_t)(size ? size : 1) * sizeof(int64_t));
    if (!idx || !gap || !sups) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t n_idx = 0, n_sups = 0;
    int pending = 0;
    for (Py_ssize_t i = 0; i < size; i++) {
        /* A page is in document order: a node's parent comes before it, its subtree right
         * after it. The climbs below rely on it. */
        if (pg.parent[i] < -1 || pg.parent[i] >= i || pg.end[i] <= i || pg.end[i] > size) {
            PyErr_SetString(PyExc_ValueError, "render: the page's parent or end array is not a tree in order");
            goto done;
        }
        int32_t t = pg.tag[i];
        if (t == cfg.text) {
            if (mask[i]) {
                int32_t a = pg.text_ptr[i], b = pg.text_ptr[i + 1];
                if (a < 0 || a > b || b > text_len) {
                    PyErr_SetString(PyExc_ValueError, "render: a text range outside the text");
                    goto done;
                }
                gap[n_idx] = n_idx > 0 && pending;
                idx[n_idx++] = i;
                pending = 0;
            } else {
                pending = 1;
            }
        } else if (t == cfg.sup) {
            sups[n_sups++] = i;
        }
    }
    if (!n_idx) {
        result = PyUnicode_New(0, 0);
        goto done;
    }
    tsep = PyMem_Malloc((size_t)n_idx);
    if (!tsep) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < n_idx; k++) tsep[k] = (int8_t)separator(&pg, idx, gap, k, 1);

    /* markdown.py _caret_nodes: a <sup> whose first written text is its own first (raised)
     * text on its own line gets a `^`, which takes the separator the HTML gives that text;
     * of nested ones the outermost. */
    caret_node = PyMem_Malloc((size_t)(n_sups ? n_sups : 1) * sizeof(int64_t));
    caret_at = PyMem_Malloc((size_t)(n_sups ? n_sups : 1) * sizeof(Py_ssize_t));
    caret_sep = PyMem_Malloc((size_t)(n_sups ? n_sups : 1));
    if (!caret_node || !caret_at || !caret_sep) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t n_carets = 0;
    for (Py_ssize_t j = 0; j < n_sups; j++) {
        int64_t s = sups[j];
        Py_ssize_t at = lower_bound64(idx, n_idx, s + 1);
        if (at >= n_idx) break;
        int64_t first = idx[at];
        if (!(first < pg.end[s] && (pg.flags[first] & cfg.f_raised) && pg.line[first] == pg.line[s])) continue;
        if (n_carets && caret_at[n_carets - 1] == at) continue;
        caret_node[n_carets] = s;
        caret_at[n_carets] = at;
        caret_sep[n_carets] = (int8_t)separator(&pg, idx, gap, at, 0);
        n_carets++;
    }
    for (Py_ssize_t j = 0; j < n_carets; j++) tsep[caret_at[j]] = 0;

    /* markdown.py _image_nodes: images whose nearest block-level holder is not the page's root
     * and has main text in at least half of its words. */
    Py_ssize_t n_kept = 0;
    if (images && n_img) {
        keep_img = PyMem_Malloc((size_t)n_img * sizeof(int64_t));
        sums = PyMem_Malloc((size_t)(size + 1) * 2 * sizeof(int64_t));
        if (!keep_img || !sums) {
            PyErr_NoMemory();
            goto done;
        }
        int64_t *words_all = sums, *words_main = sums + size + 1;
        words_all[0] = words_main[0] = 0;
        for (Py_ssize_t i = 0; i < size; i++) {
            words_all[i + 1] = words_all[i] + pg.words[i];
            words_main[i + 1] = words_main[i] + (mask[i] ? pg.words[i] : 0);
        }
        for (Py_ssize_t j = 0; j < n_img; j++) {
            int64_t holder, unused[4] = {-1, -1, -1, -1};
            if (climb(img_node[j], pg.parent, pg.tag, size, cfg.block, cfg.n_tags, cfg.kind, cfg.n_tags, NULL, &holder,
                      unused, 1) < 0) goto done;
            if (holder <= 0) continue;
            int64_t e = pg.end[holder];
            int64_t total = words_all[e] - words_all[holder], main = words_main[e] - words_main[holder];
            if (main > 0 && 2 * main >= total) keep_img[n_kept++] = j;
        }
    }

    /* The items: texts, kept images and carets in document order (a stable sort of the three). */
    Py_ssize_t n = n_idx + n_kept + n_carets;
    pairs = PyMem_Malloc((size_t)n * sizeof(Pair));
    tmp = PyMem_Malloc((size_t)n * sizeof(Pair));
    item_node = PyMem_Malloc((size_t)n * sizeof(int64_t));
    source = PyMem_Malloc((size_t)n * sizeof(Py_ssize_t));
    from = PyMem_Malloc((size_t)n);
    sep = PyMem_Malloc((size_t)n);
    image = PyMem_Malloc((size_t)n);
    if (!pairs || !tmp || !item_node || !source || !from || !sep || !image) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < n_idx; k++) pairs[k] = (Pair){idx[k], k};
    for (Py_ssize_t j = 0; j < n_kept; j++) {
        int32_t e = img_node[keep_img[j]];
        pairs[n_idx + j] = (Pair){e < 0 ? e + size : e, n_idx + j};
    }
    for (Py_ssize_t j = 0; j < n_carets; j++) pairs[n_idx + n_kept + j] = (Pair){caret_node[j], n_idx + n_kept + j};
    if (n_kept || n_carets) sort_pairs(pairs, tmp, n);
    for (Py_ssize_t k = 0; k < n; k++) {
        Py_ssize_t p = pairs[k].payload;
        item_node[k] = pairs[k].key;
        if (p < n_idx) {
            from[k] = FROM_TEXT;
            source[k] = p;
            sep[k] = tsep[p];
        } else if (p < n_idx + n_kept) {
            from[k] = FROM_IMAGE;
            source[k] = keep_img[p - n_idx];
            sep[k] = 0;
        } else {
            from[k] = FROM_CARET;
            source[k] = p - n_idx - n_kept;
            sep[k] = caret_sep[p - n_idx - n_kept];
        }
        image[k] = from[k] != FROM_TEXT;
    }
    if (n_kept)
        /* An image is apart from what is next to it on its line. */
        for (Py_ssize_t k = n - 1; k >= 1; k--)
            if (from[k] == FROM_IMAGE || from[k - 1] == FROM_IMAGE) sep[k] = 1;
    if (have_starts) {
        /* main_text starts a line here although the page does not (two blocks of one line):
         * a space at least, so that no word of main_text is glued to another. */
        starts_mask = PyMem_Calloc((size_t)size, 1);
        if (!starts_mask) {
            PyErr_NoMemory();
            goto done;
        }
        const int64_t *ls = v[V_STARTS].buf;
        for (Py_ssize_t j = 0; j < v[V_STARTS].len / 8; j++) {
            if (ls[j] < -size || ls[j] >= size) {
                PyErr_SetString(PyExc_IndexError, "render: a line start outside the page");
                goto done;
            }
            starts_mask[ls[j] < 0 ? ls[j] + size : ls[j]] = 1;
        }
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        int new_line = k > 0 && pg.line[item_node[k]] != pg.line[item_node[k - 1]];
        if (starts_mask && starts_mask[item_node[k]] && !new_line && sep[k] == 0) sep[k] = 1;
        if (new_line || k == 0) sep[k] = 2;
    }

    /* markdown.py _Structure: the link elements that are links (not to the page itself
     * without a place on it), each URL with its fragment. */
    targets = PyMem_Calloc((size_t)(n_links ? n_links : 1), sizeof(PyObject *));
    if (!targets) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < n_links; k++) {
        if (!(targets[k] = str_item(link_url, k, "link URLs"))) goto done;
        Py_INCREF(targets[k]);
    }
    if (links && n_links) {
        for (Py_ssize_t j = 0; j < n_frag; j++) {
            Py_ssize_t k = lower_bound32(link_node, n_links, frag_node[j]);
            PyObject *fragment = str_item(frags, j, "fragments");
            if (!fragment) goto done;
            if (k >= n_links) {
                PyErr_SetString(PyExc_IndexError, "render: a fragment after the last link");
                goto done;
            }
            PyObject *joined = PyUnicode_FromFormat("%U#%U", targets[k], fragment);
            if (!joined) goto done;
            Py_SETREF(targets[k], joined);
        }
        linked = PyMem_Calloc((size_t)size, 1);
        if (!linked) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t k = 0; k < n_links; k++) {
            int same = PyUnicode_Compare(targets[k], url);
            if (same == -1 && PyErr_Occurred()) goto done;
            if (same == 0) continue;
            if (link_node[k] < -size || link_node[k] >= size) {
                PyErr_SetString(PyExc_IndexError, "render: a link node outside the page");
                goto done;
            }
            linked[link_node[k] < 0 ? link_node[k] + size : link_node[k]] = 1;
        }
    }

    /* Each item's container and inline elements (_Structure.around), and its kind bits. */
    container = PyMem_Malloc((size_t)n * sizeof(int64_t));
    inl = PyMem_Malloc((size_t)n * 4 * sizeof(int64_t));
    kinds = PyMem_Malloc((size_t)n * sizeof(int64_t));
    extra_at = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    if (!container || !inl || !kinds || !extra_at) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < 4 * n; k++) inl[k] = -1;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (climb(item_node[k], pg.parent, pg.tag, size, cfg.block, cfg.n_tags, cfg.kind, cfg.n_tags, linked,
                  &container[k], inl + k, n) < 0) goto done;
        int64_t bits = 0;
        for (int level = 0; level < 4; level++) bits |= (int64_t)(inl[level * n + k] >= 0) << level;
        kinds[k] = bits;
        /* An image's Markdown: ![alt, escaped with brackets](URL); a caret's: ^. */
        extra_at[k] = extra.n;
        if (from[k] == FROM_CARET) {
            if (put(&extra, '^') < 0) goto done;
        } else if (from[k] == FROM_IMAGE) {
            PyObject *src = str_item(img_src, source[k], "image URLs"), *alt = str_item(img_alt, source[k], "alt texts");
            if (!src || !alt) goto done;
            Buf a = {0};
            int bad = put_str(&a, alt, 0, PyUnicode_GET_LENGTH(alt)) < 0 || put_ascii(&extra, "![") < 0
                      || escape_into(&extra, a.p, a.n, 1) < 0 || put_ascii(&extra, "](") < 0 || put_url(&extra, src) < 0
                      || put(&extra, ')') < 0;
            buf_free(&a);
            if (bad) goto done;
        }
    }
    extra_at[n] = extra.n;
    Items it = {text, pg.text_ptr, item_node, sep, image, inl, kinds, extra_at, extra.p, link_node, n_links,
                targets, n};

    /* The units (lines of main_text) and their contexts, from their structural anchors. */
    Py_ssize_t n_units = 0;
    for (Py_ssize_t k = 0; k < n; k++) n_units += sep[k] == 2;
    bounds = PyMem_Malloc((size_t)(n_units + 1) * sizeof(Py_ssize_t));
    ctx = PyMem_Malloc((size_t)n_units * sizeof(Context));
    int64_t *firsts = PyMem_Malloc((size_t)n_units * sizeof(int64_t));
    if (!bounds || !ctx || !firsts) {
        PyMem_Free(firsts);
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0, u = 0; k < n; k++)
        if (sep[k] == 2) {
            bounds[u] = k;
            firsts[u++] = container[k];
        }
    bounds[n_units] = n;
    if (contexts_init(&cx, pg.parent, pg.tag, pg.end, size, cfg.role, cfg.n_tags, cfg.inside, cfg.n_tags) < 0) {
        contexts_free(&cx);
        PyMem_Free(firsts);
        goto done;
    }
    ready = 1;
    for (Py_ssize_t u = 0; u < n_units; u++) {
        int64_t anchor;
        Py_ssize_t at;
        if (anchor_of(firsts[u], pg.parent, pg.tag, size, cfg.structural, cfg.n_tags, &anchor) < 0
            || (at = context_of(&cx, anchor)) < 0) {
            PyMem_Free(firsts);
            goto done;
        }
        ctx[u] = ((Context *)cx.ctxs.p)[at];
    }
    lay = (Layout){&it, &pg, &cx, bounds, firsts, ctx, n_units, code_node, n_code, code_lang, NULL};
    int bad = write_units(&lay, &out) < 0;
    PyMem_Free(firsts);
    if (bad) goto done;
    {
        Py_ssize_t a = 0, e = out.n;
        while (a < e && out.p[a] == '\n') a++;
        while (e > a && out.p[e - 1] == '\n') e--;
        result = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out.p ? out.p + a : (Py_UCS4 *)"", e - a);
    }
done:
    if (targets) {
        for (Py_ssize_t k = 0; k < n_links; k++) Py_XDECREF(targets[k]);
        PyMem_Free(targets);
    }
    if (ready) contexts_free(&cx);
    PyMem_Free(lay.li_number);
    PyMem_Free(idx);
    PyMem_Free(gap);
    PyMem_Free(sups);
    PyMem_Free(tsep);
    PyMem_Free(caret_node);
    PyMem_Free(caret_at);
    PyMem_Free(caret_sep);
    PyMem_Free(keep_img);
    PyMem_Free(sums);
    PyMem_Free(pairs);
    PyMem_Free(tmp);
    PyMem_Free(item_node);
    PyMem_Free(source);
    PyMem_Free(from);
    PyMem_Free(sep);
    PyMem_Free(image);
    PyMem_Free(starts_mask);
    PyMem_Free(linked);
    PyMem_Free(container);
    PyMem_Free(inl);
    PyMem_Free(kinds);
    PyMem_Free(extra_at);
    PyMem_Free(bounds);
    PyMem_Free(ctx);
    buf_free(&extra);
    buf_free(&out);
    for (int i = 0; i < held; i++) PyBuffer_Release(&v[i]);
    return result;
}

static int copy_table(PyObject *obj, uint8_t **into, Py_ssize_t *n, const char *what) {
    Py_buffer view;
    if (get(obj, &view, 1, what) < 0) return -1;
    if (*n >= 0 && view.len != *n) {
        PyBuffer_Release(&view);
        PyErr_Format(PyExc_ValueError, "configure: %s of another length than the other tables", what);
        return -1;
    }
    *n = view.len;
    uint8_t *p = PyMem_Malloc((size_t)(view.len ? view.len : 1));
    if (!p) {
        PyBuffer_Release(&view);
        PyErr_NoMemory();
        return -1;
    }
    memcpy(p, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    PyMem_Free(*into);
    *into = p;
    return 0;
}

/* configure(block_level, kind, structural, role, inside, text, ol, quote, li, sup, f_space,
 * f_raised, f_pre, category): markdown.py's per-tag tables (uint8 per known tag id plus the
 * last entry unknown ids read: BLOCK_LEVEL, _KIND_OF, _STRUCTURAL, _ROLE_OF, _INSIDE_OF), the
 * tag ids and flag bits render reads, and unicodedata.category. */
static PyObject *configure(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *tables[5], *category;
    int text, ol, quote, li, sup, f_space, f_raised, f_pre;
    if (!PyArg_ParseTuple(args, "OOOOOiiiiiiiiO", &tables[0], &tables[1], &tables[2], &tables[3], &tables[4], &text,
                          &ol, &quote, &li, &sup, &f_space, &f_raised, &f_pre, &category))
        return NULL;
    if (!PyCallable_Check(category)) {
        PyErr_SetString(PyExc_TypeError, "configure: category must be callable");
        return NULL;
    }
    uint8_t **into[5] = {&cfg.block, &cfg.kind, &cfg.structural, &cfg.role, &cfg.inside};
    const char *what[5] = {"block", "kind", "structural", "role", "inside"};
    Py_ssize_t n = -1;
    for (int i = 0; i < 5; i++)
        if (copy_table(tables[i], into[i], &n, what[i]) < 0) return NULL;
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "configure: empty tables");
        return NULL;
    }
    cfg.n_tags = n;
    cfg.text = text;
    cfg.ol = ol;
    cfg.quote = quote;
    cfg.li = li;
    cfg.sup = sup;
    cfg.f_space = (uint16_t)f_space;
    cfg.f_raised = (uint16_t)f_raised;
    cfg.f_pre = (uint16_t)f_pre;
    Py_XSETREF(cfg.category, Py_NewRef(category));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"render", render, METH_VARARGS,
     "render(text, text_ptr, parent, tag, end, flags, line, words, mask, line_starts, links, images, url, "
     "link_node, link_url, fragment_node, fragment, image_node, image_src, image_alt, code_node, code_lang): "
     "the page's main_markdown (markdown.py page_markdown)."},
    {"configure", configure, METH_VARARGS,
     "configure(block_level, kind, structural, role, inside, text, ol, quote, li, sup, f_space, f_raised, f_pre, "
     "category): markdown.py's tables, tag ids and flags, and unicodedata.category."},
    {"contexts", contexts, METH_VARARGS,
     "contexts(elements, parent, tag, end, roles, inside): markdown.py _Structure.context of each element."},
    {"around", around, METH_VARARGS,
     "around(nodes, parent, tag, blockish, kind, linked, container, inline): markdown.py _Structure.around."},
    {"anchors", anchors, METH_VARARGS,
     "anchors(elements, parent, tag, structural, out): markdown.py _Structure.structural_anchor."},
    {"line_start", line_start, METH_O, "line_start(text): markdown.py escape_line_start."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_markdown",
                                    "main_markdown compiled (see markdown.py).", -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__markdown(void) { return PyModule_Create(&module); }

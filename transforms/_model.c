/* The block model's tree walk, compiled (design §10; model.py BlockModel._evaluate).
 *
 * model.py compiles every tree into one node table (breadth-first: a node's right child is
 * its left child + 1; a leaf's left child is the leaf itself) and walks all trees for all
 * blocks one level at a time with numpy, which allocates nothing per level but still makes
 * six passes over [trees, blocks] per level. Here each (tree, block) walks down to its leaf
 * in one loop. The comparison is the same float32 `x > threshold`, with a missing value (NaN)
 * read as +inf in feature columns 0..F-1 and as -inf in columns F..2F-1 (model.py folds each
 * split's default direction into that column index), so the leaves reached are the same.
 * `leaves` returns the leaves, whose values numpy sums (a ceml model's, and a gbdt model's
 * for one block, where numpy's sum over the trees is pairwise); `leaf_sums` adds a gbdt
 * model's leaf values per block itself, in the order numpy's sum over the trees axis of
 * several blocks adds them, without the [trees, blocks] matrices. `forest` reaches the same
 * leaves a second way: the bitvector pass (bits_layout), a node's test answered for sixteen
 * blocks at once (in one AVX-512 compare, two AVX2 ones, or plain C), the walk its reference.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static int get(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, int writable, const char *what) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) return -1;
    if (view->itemsize != itemsize) {
        PyErr_Format(PyExc_TypeError, "%s: expected contiguous items of %zd bytes", what, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* Three buffers (two read, the last written) for a function of three arrays, each released if a
 * later one fails: 0, or -1 with the error set. */
static int get_three(PyObject *args, Py_buffer v[3], const Py_ssize_t sizes[3], const char *const names[3]) {
    PyObject *o[3];
    if (!PyArg_ParseTuple(args, "OOO", &o[0], &o[1], &o[2])) return -1;
    for (int i = 0; i < 3; i++) {
        if (get(o[i], &v[i], sizes[i], i == 2, names[i]) < 0) {
            while (i--) PyBuffer_Release(&v[i]);
            return -1;
        }
    }
    return 0;
}

/* leaves(node, X2, steps, feature, threshold, left): every entry of node (int64, rows ×
 * blocks, row-major: row r holds tree r's start node for each block, or for a ceml model
 * each block's own tree in its one row) is moved steps[r] levels down, which reaches the
 * leaf: a leaf's left child is itself and its threshold +inf, so extra steps stay there.
 * X2 is float32 blocks × 2F, a block's features with NaN as +inf, then with NaN as -inf,
 * which is what feature[k] (a column of 0..2F-1) indexes.
 * Sixteen blocks walk the same tree side by side: each walk is a chain of dependent loads,
 * and independent chains let the processor overlap them. The sixteen walk every tree before
 * the next sixteen start, so their feature rows stay in the first-level cache while the trees'
 * nodes, shared by every group, come from the second (one tree's walks for every block, then
 * the next tree's, read most features from the second level: the shipped model's first stage
 * took 0.56 ms a page of news-ctf2015-dev that way with 8 lanes, 0.41-0.42 this way). */
#define LANES 16
/* Walk `lanes` feature rows down one tree from k[j] (their start nodes) for at most `steps`
 * steps, leaving each lane's node in k. A node stays where it is only at a leaf (its own left
 * child, threshold +inf; an inner node's children come after it), so once no lane moved,
 * every lane is at its leaf and the remaining steps would change nothing: leaf-wise trees put
 * most leaves well above the tree's deepest one (the shipped model: 5.6 steps needed per walk,
 * 11.0 levels deep). */
static inline void walk_lanes(int64_t *k, const float *const *row, Py_ssize_t lanes, int64_t steps,
                              const int64_t *lf, const int64_t *f, const float *th) {
    for (int64_t s = 0; s < steps; s++) {
        int64_t moved = 0;
        for (Py_ssize_t j = 0; j < lanes; j++) {
            int64_t next = lf[k[j]] + (row[j][f[k[j]]] > th[k[j]]);
            moved |= next ^ k[j];
            k[j] = next;
        }
        if (!moved) break;
    }
}

/* walk_lanes over lane-interleaved rows: column c of lane j at cols[c * LANES + j], and fl[k]
 * the node's column times LANES, so a lane's value is one load at a constant offset from the
 * node's column (no per-lane row pointer to read). Unrolled over the lanes: a loop's counter,
 * test and branch would be a quarter of the instructions of a step. */
static inline void walk_columns(int64_t *k, const float *cols, Py_ssize_t lanes, int64_t steps,
                                const int64_t *lf, const int64_t *fl, const float *th) {
    for (int64_t s = 0; s < steps; s++) {
        int64_t moved = 0;
#pragma GCC unroll 16
        for (Py_ssize_t j = 0; j < lanes; j++) {
            int64_t next = lf[k[j]] + (cols[fl[k[j]] + j] > th[k[j]]);
            moved |= next ^ k[j];
            k[j] = next;
        }
        if (!moved) break;
    }
}

static PyObject *leaves(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *node_o, *x_o, *steps_o, *feat_o, *thr_o, *left_o;
    if (!PyArg_ParseTuple(args, "OOOOOO", &node_o, &x_o, &steps_o, &feat_o, &thr_o, &left_o)) return NULL;
    Py_buffer v[6];
    PyObject *objs[6] = {node_o, x_o, steps_o, feat_o, thr_o, left_o};
    const Py_ssize_t sizes[6] = {8, 4, 8, 8, 4, 8};
    const char *names[6] = {"node", "X2", "steps", "feature", "threshold", "left"};
    int held = 0;
    for (; held < 6; held++)
        if (get(objs[held], &v[held], sizes[held], held == 0, names[held]) < 0) goto fail;
    {
        int64_t *nd = v[0].buf;
        const float *x = v[1].buf, *th = v[4].buf;
        const int64_t *steps = v[2].buf, *f = v[3].buf, *lf = v[5].buf;
        Py_ssize_t cells = v[0].len / 8, rows = v[2].len / 8, table = v[5].len / 8;
        Py_ssize_t blocks = rows > 0 ? cells / rows : 0;
        Py_ssize_t width = blocks > 0 ? v[1].len / 4 / blocks : 0;
        int bad = rows == 0 || cells != rows * blocks || (blocks && v[1].len / 4 != blocks * width)
                  || v[3].len / 8 != table || v[4].len / 4 != table;
        for (Py_ssize_t c = 0; c < cells && !bad; c++) bad = nd[c] < 0 || nd[c] >= table;
        /* Every column a split reads, and every child, must lie inside X2's rows and the table. */
        for (Py_ssize_t k = 0; k < table && !bad; k++) bad = f[k] < 0 || f[k] >= width || lf[k] < 0 || lf[k] + 1 >= table + (lf[k] == k);
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "leaves: node table, start nodes and features do not fit together");
            goto fail;
        }
        for (Py_ssize_t b0 = 0; b0 < blocks; b0 += LANES) {
            Py_ssize_t lanes = blocks - b0 < LANES ? blocks - b0 : LANES;
            const float *row[LANES];
            for (Py_ssize_t j = 0; j < lanes; j++) row[j] = x + (b0 + j) * width;
            for (Py_ssize_t r = 0; r < rows; r++) {
                int64_t *at = nd + r * blocks;
                int64_t k[LANES];
                for (Py_ssize_t j = 0; j < lanes; j++) k[j] = at[b0 + j];
                walk_lanes(k, row, lanes, steps[r], lf, f, th);
                for (Py_ssize_t j = 0; j < lanes; j++) at[b0 + j] = k[j];
            }
        }
    }
    for (int i = 0; i < 6; i++) PyBuffer_Release(&v[i]);
    Py_RETURN_NONE;
fail:
    for (int i = 0; i < held; i++) PyBuffer_Release(&v[i]);
    return NULL;
}

/* leaf_sums(X2, steps, feature, threshold, left, value, roots, out): a gbdt ensemble's sum of
 * leaf values per block, out[b] = value[leaf of tree 0] + value[leaf of tree 1] + ... in the
 * table's tree order, the walk `leaves`'s from each tree's root. It is the sum model.py's
 * reference takes with numpy over the [trees, blocks] leaf values (sum over axis 0 of a
 * C-contiguous matrix adds row after row, from the first row's value), so model.py calls it
 * for two blocks or more only: a [trees, 1] matrix numpy sums pairwise. */
static PyObject *leaf_sums(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[8];
    if (!PyArg_ParseTuple(args, "OOOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5],
                          &objs[6], &objs[7])) return NULL;
    Py_buffer v[8];
    const Py_ssize_t sizes[8] = {4, 8, 8, 4, 8, 8, 8, 8};
    const char *names[8] = {"X2", "steps", "feature", "threshold", "left", "value", "roots", "out"};
    int held = 0;
    for (; held < 8; held++)
        if (get(objs[held], &v[held], sizes[held], held == 7, names[held]) < 0) goto fail;
    {
        const float *x = v[0].buf, *th = v[3].buf;
        const int64_t *steps = v[1].buf, *f = v[2].buf, *lf = v[4].buf, *roots = v[6].buf;
        const double *value = v[5].buf;
        double *out = v[7].buf;
        Py_ssize_t rows = v[1].len / 8, table = v[4].len / 8, blocks = v[7].len / 8;
        Py_ssize_t width = blocks > 0 ? v[0].len / 4 / blocks : 0;
        int bad = rows == 0 || v[6].len / 8 != rows || (blocks && v[0].len / 4 != blocks * width)
                  || v[2].len / 8 != table || v[3].len / 4 != table || v[5].len / 8 != table;
        for (Py_ssize_t r = 0; r < rows && !bad; r++) bad = roots[r] < 0 || roots[r] >= table;
        for (Py_ssize_t k = 0; k < table && !bad; k++)
            bad = f[k] < 0 || f[k] >= width || lf[k] < 0 || lf[k] + 1 >= table + (lf[k] == k);
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "leaf_sums: node table, roots and features do not fit together");
            goto fail;
        }
        for (Py_ssize_t b0 = 0; b0 < blocks; b0 += LANES) {
            Py_ssize_t lanes = blocks - b0 < LANES ? blocks - b0 : LANES;
            const float *row[LANES];
            double sum[LANES];
            for (Py_ssize_t j = 0; j < lanes; j++) row[j] = x + (b0 + j) * width;
            for (Py_ssize_t r = 0; r < rows; r++) {
                int64_t k[LANES];
                for (Py_ssize_t j = 0; j < lanes; j++) k[j] = roots[r];
                walk_lanes(k, row, lanes, steps[r], lf, f, th);
                for (Py_ssize_t j = 0; j < lanes; j++) sum[j] = r == 0 ? value[k[j]] : sum[j] + value[k[j]];
            }
            for (Py_ssize_t j = 0; j < lanes; j++) out[b0 + j] = sum[j];
        }
    }
    for (int i = 0; i < 8; i++) PyBuffer_Release(&v[i]);
    Py_RETURN_NONE;
fail:
    for (int i = 0; i < held; i++) PyBuffer_Release(&v[i]);
    return NULL;
}

/* A node table checked once and copied (forest_table), so that a page's walks (forest) do not
 * check the whole table again for a few hundred blocks, or one row. */
typedef struct {
    Py_ssize_t table, rows, width;
    int64_t *steps, *feature, *left, *roots;   /* feature: the column times LANES (walk_columns) */
    float *threshold;
    double *value;
    void *memory;
    /* The bitvector layout (bits_layout), NULL where a tree does not fit it: the inner nodes
     * sorted by column then threshold; bit_start[c] .. bit_start[c + 1] - 1 those of column c. */
    void *bits;
    Py_ssize_t *bit_start;
    float *bit_threshold;
    uint32_t *bit_keep, *bit_at;                /* bit_at: the node's tree times LANES */
    double *leaf_value;                         /* tree r's leaves, left to right, from r * BIT_LEAVES */
} Forest;

static const char forest_name[] = "sitestrip.forest";

static void forest_free(PyObject *capsule) {
    Forest *t = PyCapsule_GetPointer(capsule, forest_name);
    if (t != NULL) {
        PyMem_Free(t->bits);
        PyMem_Free(t->memory);
        PyMem_Free(t);
    }
}

/* The bitvector evaluation (QuickScorer: Lucchese et al., SIGIR 2015). A tree's leaves are
 * numbered left to right, and a block's exit leaf is the leftmost one that no inner node on a
 * false test excludes: a node whose test sends the block right (x > threshold) excludes the
 * leaves of its left subtree, and every leaf left of the exit leaf lies in the left subtree of
 * a node on the exit path whose test went right. So each tree keeps one word of leaf bits per
 * block, every node with x > threshold clears its left subtree's bits, and the lowest set bit
 * is the leaf the walk reaches. The nodes are visited per column in ascending threshold order,
 * so a column's scan stops at the first node whose test no lane fails: every later threshold is
 * at least as large. With sixteen lanes one compare answers a node for sixteen blocks, where the
 * walk spends a dependent load chain per block and level.
 * The layout needs every tree to be a binary tree the walk reaches the leaf of within its steps
 * (inner nodes' children after them, no node shared, a leaf its own left child with threshold
 * +inf, no NaN threshold) and at most 32 leaves a tree (one uint32 per lane); a table that does
 * not is walked. */
#define BIT_LEAVES 32

typedef struct {
    int64_t column;
    float threshold;
    uint32_t keep, at;
} BitNode;

static int bit_node_order(const void *a, const void *b) {
    const BitNode *x = a, *y = b;
    if (x->column != y->column) return x->column < y->column ? -1 : 1;
    if (x->threshold != y->threshold) return x->threshold < y->threshold ? -1 : 1;
    return 0;
}

/* Fills t's bitvector layout from the checked node table (feature the raw column); 0 with
 * t->bits NULL where a tree does not fit it, -1 with MemoryError. */
static int bits_layout(Forest *t, const int64_t *f) {
    Py_ssize_t table = t->table, rows = t->rows, columns = 2 * t->width;
    const int64_t *lf = t->left, *steps = t->steps, *roots = t->roots;
    const float *th = t->threshold;
    if (rows > (Py_ssize_t)(UINT32_MAX / LANES)) return 0;
    int64_t *owner = PyMem_Malloc((size_t)table * sizeof(int64_t));
    int64_t *first = PyMem_Malloc((size_t)table * sizeof(int64_t));
    int64_t *stack = PyMem_Malloc((size_t)(2 * table + 2) * sizeof(int64_t));
    int64_t *depth = PyMem_Malloc((size_t)(2 * table + 2) * sizeof(int64_t));
    BitNode *nodes = PyMem_Malloc((size_t)table * sizeof(BitNode));
    int fits = owner && first && stack && depth && nodes;
    int result = fits ? 0 : -1;
    Py_ssize_t leaves = rows * BIT_LEAVES, inner = 0;
    for (Py_ssize_t k = 0; k < table && fits; k++) owner[k] = -1;
    /* Depth first from each root, right child pushed under the left: leaves are met, and
     * numbered, left to right; first[k] is the number of the subtree's leftmost leaf. */
    for (Py_ssize_t r = 0; r < rows && fits; r++) {
        Py_ssize_t top = 0, count = 0;
        stack[top] = roots[r];
        depth[top++] = 0;
        while (top && fits) {
            top--;
            int64_t k = stack[top], d = depth[top];
            if (owner[k] != -1) {
                fits = 0;
                break;
            }
            owner[k] = r;
            first[k] = count;
            if (lf[k] == k) {
                fits = th[k] == INFINITY && d <= steps[r] && count < BIT_LEAVES;
                count++;
            } else {
                fits = lf[k] > k && !isnan(th[k]);
                stack[top] = lf[k] + 1;
                depth[top++] = d + 1;
                stack[top] = lf[k];
                depth[top++] = d + 1;
            }
        }
    }
    for (Py_ssize_t k = 0; k < table && fits; k++) {
        if (owner[k] == -1 || lf[k] == k) continue;
        /* The left subtree's leaves: from its leftmost to the right subtree's leftmost. */
        int64_t from = first[lf[k]], count = first[lf[k] + 1] - from;
        uint64_t clear = ((UINT64_C(1) << count) - 1) << from;
        nodes[inner].column = f[k];
        nodes[inner].threshold = th[k];
        nodes[inner].keep = (uint32_t)~clear;
        nodes[inner].at = (uint32_t)(owner[k] * LANES);
        inner++;
    }
    if (fits) {
        qsort(nodes, (size_t)inner, sizeof(BitNode), bit_node_order);
        size_t size = (size_t)(columns + 1) * sizeof(Py_ssize_t) + (size_t)leaves * sizeof(double)
                      + (size_t)inner * (sizeof(float) + 2 * sizeof(uint32_t));
        char *memory = PyMem_Malloc(size + 1);
        if (memory == NULL) {
            result = -1;
        } else {
            t->bits = memory;
            t->bit_start = (Py_ssize_t *)memory; memory += (columns + 1) * sizeof(Py_ssize_t);
            t->leaf_value = (double *)memory; memory += leaves * sizeof(double);
            memset(t->leaf_value, 0, (size_t)leaves * sizeof(double));
            t->bit_threshold = (float *)memory; memory += inner * sizeof(float);
            t->bit_keep = (uint32_t *)memory; memory += inner * sizeof(uint32_t);
            t->bit_at = (uint32_t *)memory;
            Py_ssize_t i = 0;
            for (Py_ssize_t c = 0; c <= columns; c++) {
                while (i < inner && nodes[i].column < c) i++;
                t->bit_start[c] = i;
            }
            for (i = 0; i < inner; i++) {
                t->bit_threshold[i] = nodes[i].threshold;
                t->bit_keep[i] = nodes[i].keep;
                t->bit_at[i] = nodes[i].at;
            }
            for (Py_ssize_t k = 0; k < table; k++)
                if (owner[k] != -1 && lf[k] == k) t->leaf_value[owner[k] * BIT_LEAVES + first[k]] = t->value[k];
        }
    }
    PyMem_Free(owner);
    PyMem_Free(first);
    PyMem_Free(stack);
    PyMem_Free(depth);
    PyMem_Free(nodes);
    if (result < 0) PyErr_NoMemory();
    return result;
}

/* The index of the lowest set bit of a nonzero word, the exit leaf: one instruction where the
 * compiler has it, a de Bruijn multiply elsewhere. A bit-by-bit loop made bits_group slower than the
 * walk (the dragnet replay's block model: 348 ms against 228). */
static inline int lowest_bit(uint32_t bits) {
#if defined(__GNUC__)
    return __builtin_ctz(bits);
#else
    static const int8_t position[32] = {0,  1,  28, 2,  29, 14, 24, 3, 30, 22, 20, 15, 25, 17, 4,  8,
                                        31, 27, 13, 23, 21, 19, 16, 7, 26, 12, 18, 6,  11, 5,  10, 9};
    return position[(uint32_t)((bits & (0u - bits)) * 0x077CB531u) >> 27];
#endif
}

/* The bitvector pass of one group of LANES blocks (both: their lane-interleaved NaN-folded rows,
 * lanes past the group's blocks -inf, which fails no test), leaf bits in v (rows x LANES): the
 * leaf values as forest writes them. The plain C reference of the vector passes, and forest's
 * choice where the processor has neither AVX-512F nor AVX2. */
static void bits_group(const Forest *t, const float *both, uint32_t *v, Py_ssize_t lanes, int per_tree,
                       double *out, Py_ssize_t blocks, Py_ssize_t b0) {
    Py_ssize_t rows = t->rows, columns = 2 * t->width;
    for (Py_ssize_t i = 0; i < rows * LANES; i++) v[i] = UINT32_MAX;
    for (Py_ssize_t c = 0; c < columns; c++) {
        const float *x = both + c * LANES;
        for (Py_ssize_t i = t->bit_start[c]; i < t->bit_start[c + 1]; i++) {
            float th = t->bit_threshold[i];
            uint32_t keep = t->bit_keep[i], *at = v + t->bit_at[i];
            int any = 0;
            for (Py_ssize_t j = 0; j < LANES; j++) {
                int fails = x[j] > th;
                any |= fails;
                at[j] &= fails ? keep : UINT32_MAX;
            }
            if (!any) break;
        }
    }
    double sum[LANES];
    for (Py_ssize_t r = 0; r < rows; r++) {
        for (Py_ssize_t j = 0; j < lanes; j++) {
            uint32_t bits = v[r * LANES + j];
            int leaf = lowest_bit(bits);
            double value = t->leaf_value[r * BIT_LEAVES + leaf];
            if (per_tree)
                out[r * blocks + b0 + j] = value;
            else
                sum[j] = r == 0 ? value : sum[j] + value;
        }
    }
    if (!per_tree)
        for (Py_ssize_t j = 0; j < lanes; j++) out[b0 + j] = sum[j];
}

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define BITS_AVX512 1

/* bits_group with one AVX-512 register for the sixteen lanes: a node is one compare, a test of
 * its mask and a masked AND of its tree's leaf bits. The exit leaf is the lowest set bit, whose
 * index the float32 exponent of that bit alone gives (AVX-512F has no trailing zero count); its
 * value is picked by permutes from the tree's 32 slots in four registers (two gathers of eight
 * were slower). The leaf values are added in tree order, lane by lane, as bits_group adds them. */
__attribute__((target("avx512f")))
static void bits_group_avx512(const Forest *t, const float *both, uint32_t *v, Py_ssize_t lanes, int per_tree,
                              double *out, Py_ssize_t blocks, Py_ssize_t b0) {
    Py_ssize_t rows = t->rows, columns = 2 * t->width;
    const Py_ssize_t *start = t->bit_start;
    const float *threshold = t->bit_threshold;
    const uint32_t *keep = t->bit_keep, *at = t->bit_at;
    const __m512i all = _mm512_set1_epi32(-1);
    for (Py_ssize_t r = 0; r < rows; r++) _mm512_store_si512((void *)(v + r * LANES), all);
    for (Py_ssize_t c = 0; c < columns; c++) {
        Py_ssize_t i = start[c], end = start[c + 1];
        if (i == end) continue;
        const __m512 x = _mm512_loadu_ps(both + c * LANES);
        for (; i < end; i++) {
            __mmask16 fails = _mm512_cmp_ps_mask(x, _mm512_set1_ps(threshold[i]), _CMP_GT_OQ);
            if (!fails) break;
            uint32_t *to = v + at[i];
            __m512i bits = _mm512_load_si512((const void *)to);
            _mm512_store_si512((void *)to, _mm512_mask_and_epi32(bits, fails, bits, _mm512_set1_epi32((int)keep[i])));
        }
    }
    const __mmask8 low = (__mmask8)(lanes >= 8 ? 0xff : (1u << lanes) - 1);
    const __mmask8 high = (__mmask8)(lanes >= 16 ? 0xff : lanes > 8 ? (1u << (lanes - 8)) - 1 : 0);
    const __m512i bias = _mm512_set1_epi32(127), sixteen = _mm512_set1_epi64(16);
    __m512d sum0 = _mm512_setzero_pd(), sum1 = _mm512_setzero_pd();
    for (Py_ssize_t r = 0; r < rows; r++) {
        __m512i bits = _mm512_load_si512((const void *)(v + r * LANES));
        __m512i lowest = _mm512_and_si512(bits, _mm512_sub_epi32(_mm512_setzero_si512(), bits));
        __m512i exponent = _mm512_srli_epi32(_mm512_castps_si512(_mm512_cvtepu32_ps(lowest)), 23);
        __m512i leaf = _mm512_sub_epi32(exponent, bias);
        __m512i leaf0 = _mm512_cvtepi32_epi64(_mm512_castsi512_si256(leaf));
        __m512i leaf1 = _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(leaf, 1));
        const double *tree = t->leaf_value + r * BIT_LEAVES;
        __m512d a = _mm512_loadu_pd(tree), b = _mm512_loadu_pd(tree + 8);
        __m512d c = _mm512_loadu_pd(tree + 16), d = _mm512_loadu_pd(tree + 24);
        __m512d value0 = _mm512_mask_blend_pd(_mm512_test_epi64_mask(leaf0, sixteen), _mm512_permutex2var_pd(a, leaf0, b),
                                              _mm512_permutex2var_pd(c, leaf0, d));
        __m512d value1 = _mm512_mask_blend_pd(_mm512_test_epi64_mask(leaf1, sixteen), _mm512_permutex2var_pd(a, leaf1, b),
                                              _mm512_permutex2var_pd(c, leaf1, d));
        if (per_tree) {
            _mm512_mask_storeu_pd(out + r * blocks + b0, low, value0);
            _mm512_mask_storeu_pd(out + r * blocks + b0 + 8, high, value1);
        } else if (r == 0) {
            sum0 = value0;
            sum1 = value1;
        } else {
            sum0 = _mm512_add_pd(sum0, value0);
            sum1 = _mm512_add_pd(sum1, value1);
        }
    }
    if (!per_tree) {
        _mm512_mask_storeu_pd(out + b0, low, sum0);
        _mm512_mask_storeu_pd(out + b0 + 8, high, sum1);
    }
}

/* A group's lane-interleaved NaN-folded rows as forest builds them, lanes past the group's
 * blocks -inf: sixteen columns of the sixteen rows loaded and transposed in registers, where the
 * scalar loop stores each cell twice, sixty-four bytes apart (a gather of a column was slower
 * still). Returns the number of infinite cells of the group's rows. */
__attribute__((target("avx512f")))
static Py_ssize_t bits_rows_avx512(const float *rows, Py_ssize_t width, Py_ssize_t lanes, float *both) {
    const __mmask16 present = (__mmask16)(lanes >= LANES ? 0xffff : (1u << lanes) - 1);
    const __m512 up = _mm512_set1_ps(INFINITY), down = _mm512_set1_ps(-INFINITY);
    Py_ssize_t infinite = 0;
    for (Py_ssize_t c0 = 0; c0 < width; c0 += 16) {
        Py_ssize_t count = width - c0 < 16 ? width - c0 : 16;
        const __mmask16 columns = (__mmask16)(count == 16 ? 0xffff : (1u << count) - 1);
        __m512 r[16], t[16];
        for (int j = 0; j < 16; j++)
            r[j] = j < lanes ? _mm512_maskz_loadu_ps(columns, rows + j * width + c0) : down;
        /* Within each 128-bit lane L: pairs of rows, then rows 4i..4i+3 of column 4L + k in r[4i + k]. */
        for (int i = 0; i < 8; i++) {
            t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
            t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
        }
        for (int i = 0; i < 4; i++) {
            __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
            __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
            r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
            r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
            r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
            r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
        }
        /* Column 4L + k: lane L of r[k], r[4 + k], r[8 + k], r[12 + k]. */
        for (int k = 0; k < 4; k++) {
            __m512 a = _mm512_shuffle_f32x4(r[k], r[4 + k], 0x44), b = _mm512_shuffle_f32x4(r[k], r[4 + k], 0xee);
            __m512 c = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0x44);
            __m512 d = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0xee);
            t[k] = _mm512_shuffle_f32x4(a, c, 0x88);
            t[4 + k] = _mm512_shuffle_f32x4(a, c, 0xdd);
            t[8 + k] = _mm512_shuffle_f32x4(b, d, 0x88);
            t[12 + k] = _mm512_shuffle_f32x4(b, d, 0xdd);
        }
        for (Py_ssize_t k = 0; k < count; k++) {
            __m512 x = t[k];
            __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
            infinite += __builtin_popcount(_mm512_mask_cmp_ps_mask(present, _mm512_abs_ps(x), up, _CMP_EQ_OQ));
            _mm512_storeu_ps(both + (c0 + k) * LANES, _mm512_mask_mov_ps(x, nan, up));
            _mm512_storeu_ps(both + (width + c0 + k) * LANES, _mm512_mask_mov_ps(x, nan, down));
        }
    }
    return infinite;
}

static int has_avx512(void) {
    static int known = -1;
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("avx512f") != 0;
    }
    return known;
}

#define BITS_AVX2 1

/* bits_group with two AVX2 registers of eight lanes each: a node is two compares, one test of
 * both masks and two AND-NOTs of its tree's leaf bits with the bits it clears. The exit leaf is
 * the lowest set bit, its index that bit's float32 exponent (as in bits_group_avx512; bit 31
 * converts to -2^31, whose sign the mask drops); its value a gather of four doubles, added in tree
 * order lane by lane as bits_group adds them. */
__attribute__((target("avx2")))
static void bits_group_avx2(const Forest *t, const float *both, uint32_t *v, Py_ssize_t lanes, int per_tree,
                            double *out, Py_ssize_t blocks, Py_ssize_t b0) {
    Py_ssize_t rows = t->rows, columns = 2 * t->width;
    const Py_ssize_t *start = t->bit_start;
    const float *threshold = t->bit_threshold;
    const uint32_t *keep = t->bit_keep, *at = t->bit_at;
    const __m256i all = _mm256_set1_epi32(-1);
    for (Py_ssize_t r = 0; r < rows; r++) {
        _mm256_store_si256((__m256i *)(v + r * LANES), all);
        _mm256_store_si256((__m256i *)(v + r * LANES + 8), all);
    }
    for (Py_ssize_t c = 0; c < columns; c++) {
        Py_ssize_t i = start[c], end = start[c + 1];
        if (i == end) continue;
        const __m256 x0 = _mm256_loadu_ps(both + c * LANES), x1 = _mm256_loadu_ps(both + c * LANES + 8);
        for (; i < end; i++) {
            const __m256 th = _mm256_set1_ps(threshold[i]);
            __m256 fails0 = _mm256_cmp_ps(x0, th, _CMP_GT_OQ), fails1 = _mm256_cmp_ps(x1, th, _CMP_GT_OQ);
            __m256 either = _mm256_or_ps(fails0, fails1);
            if (_mm256_testz_ps(either, either)) break;
            const __m256i clear = _mm256_set1_epi32((int)~keep[i]);
            __m256i *to = (__m256i *)(v + at[i]);
            _mm256_store_si256(to, _mm256_andnot_si256(_mm256_and_si256(_mm256_castps_si256(fails0), clear),
                                                       _mm256_load_si256(to)));
            _mm256_store_si256(to + 1, _mm256_andnot_si256(_mm256_and_si256(_mm256_castps_si256(fails1), clear),
                                                           _mm256_load_si256(to + 1)));
        }
    }
    const __m256i exponent_bits = _mm256_set1_epi32(0xff), bias = _mm256_set1_epi32(127);
    __m256d sum[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
    for (Py_ssize_t r = 0; r < rows; r++) {
        const double *tree = t->leaf_value + r * BIT_LEAVES;
        __m256d value[4];
        for (int h = 0; h < 2; h++) {
            __m256i bits = _mm256_load_si256((const __m256i *)(v + r * LANES + 8 * h));
            __m256i lowest = _mm256_and_si256(bits, _mm256_sub_epi32(_mm256_setzero_si256(), bits));
            __m256i exponent = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(lowest)), 23),
                                                exponent_bits);
            __m256i leaf = _mm256_sub_epi32(exponent, bias);
            value[2 * h] = _mm256_i32gather_pd(tree, _mm256_castsi256_si128(leaf), 8);
            value[2 * h + 1] = _mm256_i32gather_pd(tree, _mm256_extracti128_si256(leaf, 1), 8);
        }
        if (per_tree) {
            double *to = out + r * blocks + b0;
            if (lanes == LANES) {
                for (int q = 0; q < 4; q++) _mm256_storeu_pd(to + 4 * q, value[q]);
            } else {
                double all_lanes[LANES];
                for (int q = 0; q < 4; q++) _mm256_storeu_pd(all_lanes + 4 * q, value[q]);
                memcpy(to, all_lanes, (size_t)lanes * sizeof(double));
            }
        } else {
            for (int q = 0; q < 4; q++) sum[q] = r == 0 ? value[q] : _mm256_add_pd(sum[q], value[q]);
        }
    }
    if (!per_tree) {
        double all_lanes[LANES];
        for (int q = 0; q < 4; q++) _mm256_storeu_pd(all_lanes + 4 * q, sum[q]);
        memcpy(out + b0, all_lanes, (size_t)lanes * sizeof(double));
    }
}

/* bits_rows_avx512 with AVX2: each half of the group (eight lanes) in blocks of eight columns,
 * loaded and transposed in registers, where the scalar loop stores each cell twice, sixty-four
 * bytes apart (the dragnet replay's block model: 94 ms with the scalar loop, 81 this way). A
 * masked load reads the last, partial block of columns only: masked loads of every block took
 * 100 ms. Returns the number of infinite cells of the group's rows. */
__attribute__((target("avx2")))
static Py_ssize_t bits_rows_avx2(const float *rows, Py_ssize_t width, Py_ssize_t lanes, float *both) {
    const __m256 up = _mm256_set1_ps(INFINITY), down = _mm256_set1_ps(-INFINITY);
    const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    Py_ssize_t infinite = 0;
    for (Py_ssize_t h = 0; h < LANES; h += 8) {
        const int present = h >= lanes ? 0 : lanes - h >= 8 ? 0xff : (1 << (lanes - h)) - 1;
        for (Py_ssize_t c0 = 0; c0 < width; c0 += 8) {
            Py_ssize_t count = width - c0 < 8 ? width - c0 : 8;
            const __m256i columns = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)count), index);
            __m256 r[8], t[8];
#pragma GCC unroll 8
            for (int j = 0; j < 8; j++)
                r[j] = !(present >> j & 1) ? down
                       : count == 8 ? _mm256_loadu_ps(rows + (h + j) * width + c0)
                                    : _mm256_maskload_ps(rows + (h + j) * width + c0, columns);
#pragma GCC unroll 8
            for (int i = 0; i < 4; i++) {
                t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
                t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
            }
            /* Within each 128-bit half: rows 4i..4i+3 of column k in r[4i + k]. */
#pragma GCC unroll 8
            for (int i = 0; i < 2; i++) {
                r[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
                r[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xee);
                r[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
                r[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xee);
            }
            /* Column k's eight rows: the low halves of r[k] and r[4 + k], column 4 + k's the high. */
#pragma GCC unroll 8
            for (int k = 0; k < 4; k++) {
                t[k] = _mm256_permute2f128_ps(r[k], r[4 + k], 0x20);
                t[4 + k] = _mm256_permute2f128_ps(r[k], r[4 + k], 0x31);
            }
            for (Py_ssize_t k = 0; k < count; k++) {
                __m256 x = t[k];
                __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
                int inf = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(x, magnitude), up, _CMP_EQ_OQ));
                infinite += __builtin_popcount((unsigned)(inf & present));
                _mm256_storeu_ps(both + (c0 + k) * LANES + h, _mm256_blendv_ps(x, up, nan));
                _mm256_storeu_ps(both + (width + c0 + k) * LANES + h, _mm256_blendv_ps(x, down, nan));
            }
        }
    }
    return infinite;
}

static int has_avx2(void) {
    static int known = -1;
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("avx2") != 0;
    }
    return known;
}
#else
#define BITS_AVX512 0
#define BITS_AVX2 0
static int has_avx512(void) { return 0; }
static int has_avx2(void) { return 0; }
#endif

/* forest's ways through a table: the walk, the bitvector pass in plain C, the same with AVX-512,
 * the same with AVX2 (last, so that the others keep the numbers callers pass). */
enum { PATH_AUTO = 0, PATH_WALK = 1, PATH_BITS = 2, PATH_BITS_AVX512 = 3, PATH_BITS_AVX2 = 4, PATH_LAST = 4 };

/* forest_table(width, steps, feature, threshold, left, value, roots): the node table of
 * `leaves` and `leaf_sums` (feature a column of 0 .. 2 width - 1 of the NaN-folded rows),
 * checked as they check it and copied, as a capsule for `forest`. */
static PyObject *forest_table(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[6];
    Py_ssize_t width;
    if (!PyArg_ParseTuple(args, "nOOOOOO", &width, &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5]))
        return NULL;
    Py_buffer v[6];
    const Py_ssize_t sizes[6] = {8, 8, 4, 8, 8, 8};
    const char *names[6] = {"steps", "feature", "threshold", "left", "value", "roots"};
    int held = 0;
    PyObject *capsule = NULL;
    for (; held < 6; held++)
        if (get(objs[held], &v[held], sizes[held], 0, names[held]) < 0) goto done;
    {
        const int64_t *steps = v[0].buf, *f = v[1].buf, *lf = v[3].buf, *roots = v[5].buf;
        Py_ssize_t rows = v[0].len / 8, table = v[3].len / 8;
        int bad = width <= 0 || rows == 0 || v[5].len / 8 != rows || v[1].len / 8 != table
                  || v[2].len / 4 != table || v[4].len / 8 != table;
        for (Py_ssize_t r = 0; r < rows && !bad; r++) bad = roots[r] < 0 || roots[r] >= table || steps[r] < 0;
        for (Py_ssize_t k = 0; k < table && !bad; k++)
            bad = f[k] < 0 || f[k] >= 2 * width || lf[k] < 0 || lf[k] + 1 >= table + (lf[k] == k);
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "forest_table: node table, roots and features do not fit together");
            goto done;
        }
        Forest *t = PyMem_Calloc(1, sizeof(Forest));
        char *memory = PyMem_Malloc((size_t)(v[0].len + v[1].len + v[2].len + v[3].len + v[4].len + v[5].len) + 1);
        if (t == NULL || memory == NULL) {
            PyMem_Free(t);
            PyMem_Free(memory);
            PyErr_NoMemory();
            goto done;
        }
        t->memory = memory;
        t->table = table;
        t->rows = rows;
        t->width = width;
        /* The 8-byte arrays first, then the 4-byte thresholds, so every array stays aligned. */
        t->steps = (int64_t *)memory; memcpy(memory, v[0].buf, (size_t)v[0].len); memory += v[0].len;
        t->feature = (int64_t *)memory;
        for (Py_ssize_t k = 0; k < table; k++) t->feature[k] = f[k] * LANES;
        memory += v[1].len;
        t->left = (int64_t *)memory; memcpy(memory, v[3].buf, (size_t)v[3].len); memory += v[3].len;
        t->value = (double *)memory; memcpy(memory, v[4].buf, (size_t)v[4].len); memory += v[4].len;
        t->roots = (int64_t *)memory; memcpy(memory, v[5].buf, (size_t)v[5].len); memory += v[5].len;
        t->threshold = (float *)memory; memcpy(memory, v[2].buf, (size_t)v[2].len);
        if (bits_layout(t, f) < 0) {
            PyMem_Free(t->memory);
            PyMem_Free(t);
            goto done;
        }
        capsule = PyCapsule_New(t, forest_name, forest_free);
        if (capsule == NULL) {
            PyMem_Free(t->bits);
            PyMem_Free(t->memory);
            PyMem_Free(t);
        }
    }
done:
    for (int i = 0; i < held; i++) PyBuffer_Release(&v[i]);
    return capsule;
}

/* The paths forest can take through a table, as a bit set of 1 << PATH_*. */
static int forest_path_set(const Forest *t) {
    int paths = 1 << PATH_WALK;
    if (t->bits != NULL)
        paths |= 1 << PATH_BITS | (BITS_AVX512 && has_avx512() ? 1 << PATH_BITS_AVX512 : 0)
                 | (BITS_AVX2 && has_avx2() ? 1 << PATH_BITS_AVX2 : 0);
    return paths;
}

/* The path forest's PATH_AUTO takes: the fastest the table and the processor allow (the dragnet
 * replay's block model: walk 228 ms, plain C bitvector pass 160, AVX2 81, AVX-512 70). */
static int forest_auto_path(int paths) {
    return paths & 1 << PATH_BITS_AVX512 ? PATH_BITS_AVX512
           : paths & 1 << PATH_BITS_AVX2 ? PATH_BITS_AVX2
           : paths & 1 << PATH_BITS      ? PATH_BITS
                                         : PATH_WALK;
}

/* forest(table, X, out, per_tree, path=0): the walk of `leaves` and `leaf_sums` from each tree's
 * root of a forest_table over X as it is (float32 blocks x width, NaN allowed), each group of
 * blocks' NaN-folded rows (X2 of `leaves`: NaN as +inf, then as -inf) built here, lane-interleaved
 * for walk_columns, in a buffer that stays in the first level cache, instead of in a
 * [blocks, 2 width] matrix numpy fills first.
 * per_tree 0: out float64[blocks], the leaf values' sums in tree order (leaf_sums's);
 * per_tree 1: out float64[trees, blocks], the leaf value each tree reaches (`leaves` followed by
 * value[node]). Returns the number of infinite cells of X, whose rows are still walked (the
 * caller refuses such features, model.py).
 * path: PATH_AUTO the bitvector pass where the table allows it, with AVX-512, else AVX2, else in
 * plain C, and the walk elsewhere (forest_auto_path); PATH_WALK, PATH_BITS,
 * PATH_BITS_AVX512, PATH_BITS_AVX2 that one (ValueError where forest_paths does not list it), the
 * same leaves and sums bit for bit. */
static PyObject *forest(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *capsule, *x_o, *out_o;
    int per_tree, path = PATH_AUTO;
    if (!PyArg_ParseTuple(args, "OOOp|i", &capsule, &x_o, &out_o, &per_tree, &path)) return NULL;
    const Forest *t = PyCapsule_GetPointer(capsule, forest_name);
    if (t == NULL) return NULL;
    int paths = forest_path_set(t);
    if (path == PATH_AUTO) path = forest_auto_path(paths);
    if (path < PATH_WALK || path > PATH_LAST || !(paths & 1 << path)) {
        PyErr_Format(PyExc_ValueError, "forest: path %d is not available for this table", path);
        return NULL;
    }
    Py_buffer xv, ov;
    if (get(x_o, &xv, 4, 0, "X") < 0) return NULL;
    if (get(out_o, &ov, 8, 1, "out") < 0) {
        PyBuffer_Release(&xv);
        return NULL;
    }
    PyObject *result = NULL;
    float *both = NULL;
    void *bits_memory = NULL;
    Py_ssize_t infinite = 0;
    {
        const float *x = xv.buf, *th = t->threshold;
        const int64_t *steps = t->steps, *f = t->feature, *lf = t->left, *roots = t->roots;
        const double *value = t->value;
        double *out = ov.buf;
        Py_ssize_t rows = t->rows, width = t->width;
        Py_ssize_t blocks = xv.len / 4 / width;
        if (xv.len != blocks * width * 4 || ov.len / 8 != (per_tree ? rows * blocks : blocks)) {
            PyErr_SetString(PyExc_ValueError, "forest: features or output do not fit the node table");
            goto done;
        }
        both = PyMem_Malloc((size_t)(LANES * 2 * width) * sizeof(float));
        uint32_t *v = NULL;
        if (both != NULL && path != PATH_WALK) {
            /* the leaf bits, a tree's sixteen lanes on one 64-byte line */
            bits_memory = PyMem_Malloc((size_t)(rows * LANES) * sizeof(uint32_t) + 64);
            if (bits_memory != NULL) v = (uint32_t *)(((uintptr_t)bits_memory + 63) & ~(uintptr_t)63);
        }
        if (both == NULL || (path != PATH_WALK && v == NULL)) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t b0 = 0; b0 < blocks; b0 += LANES) {
            Py_ssize_t lanes = blocks - b0 < LANES ? blocks - b0 : LANES;
            double sum[LANES];
#if BITS_AVX512
            if (path == PATH_BITS_AVX512) {
                infinite += bits_rows_avx512(x + b0 * width, width, lanes, both);
                bits_group_avx512(t, both, v, lanes, per_tree, out, blocks, b0);
                continue;
            }
#endif
#if BITS_AVX2
            if (path == PATH_BITS_AVX2) {
                infinite += bits_rows_avx2(x + b0 * width, width, lanes, both);
                bits_group_avx2(t, both, v, lanes, per_tree, out, blocks, b0);
                continue;
            }
#endif
            for (Py_ssize_t j = 0; j < lanes; j++) {
                const float *from = x + (b0 + j) * width;
                for (Py_ssize_t c = 0; c < width; c++) {
                    float value_c = from[c];
                    infinite += isinf(value_c) != 0;
                    both[c * LANES + j] = isnan(value_c) ? INFINITY : value_c;
                    both[(width + c) * LANES + j] = isnan(value_c) ? -INFINITY : value_c;
                }
            }
            if (path != PATH_WALK) {
                /* Lanes past the last block fail no test, so they never keep a column's scan going. */
                for (Py_ssize_t j = lanes; j < LANES; j++)
                    for (Py_ssize_t c = 0; c < 2 * width; c++) both[c * LANES + j] = -INFINITY;
                bits_group(t, both, v, lanes, per_tree, out, blocks, b0);
                continue;
            }
            for (Py_ssize_t r = 0; r < rows; r++) {
                int64_t k[LANES];
                for (Py_ssize_t j = 0; j < lanes; j++) k[j] = roots[r];
                /* A constant lane count lets the compiler unroll the full groups. */
                if (lanes == LANES)
                    walk_columns(k, both, LANES, steps[r], lf, f, th);
                else
                    walk_columns(k, both, lanes, steps[r], lf, f, th);
                if (per_tree)
                    for (Py_ssize_t j = 0; j < lanes; j++) out[r * blocks + b0 + j] = value[k[j]];
                else
                    for (Py_ssize_t j = 0; j < lanes; j++) sum[j] = r == 0 ? value[k[j]] : sum[j] + value[k[j]];
            }
            if (!per_tree)
                for (Py_ssize_t j = 0; j < lanes; j++) out[b0 + j] = sum[j];
        }
        result = PyLong_FromSsize_t(infinite);
    }
done:
    PyMem_Free(bits_memory);
    PyMem_Free(both);
    PyBuffer_Release(&xv);
    PyBuffer_Release(&ov);
    return result;
}

/* forest_auto(table): the path forest takes through it when asked for PATH_AUTO, so that a test
 * can hold the choice to the processor's features. */
static PyObject *forest_auto(PyObject *self, PyObject *capsule) {
    (void)self;
    const Forest *t = PyCapsule_GetPointer(capsule, forest_name);
    if (t == NULL) return NULL;
    return PyLong_FromLong(forest_auto_path(forest_path_set(t)));
}

/* forest_paths(table): the paths forest can take through it (PATH_* numbers), so that a caller
 * or a test knows which of them a table and the processor allow. */
static PyObject *forest_paths(PyObject *self, PyObject *capsule) {
    (void)self;
    const Forest *t = PyCapsule_GetPointer(capsule, forest_name);
    if (t == NULL) return NULL;
    int paths = forest_path_set(t);
    PyObject *result = PyTuple_New(0);
    for (int p = PATH_WALK; p <= PATH_LAST && result != NULL; p++) {
        if (!(paths & 1 << p)) continue;
        PyObject *number = PyLong_FromLong(p);
        if (number == NULL || _PyTuple_Resize(&result, PyTuple_GET_SIZE(result) + 1) < 0) {
            Py_XDECREF(number);
            Py_XDECREF(result);
            return NULL;
        }
        PyTuple_SET_ITEM(result, PyTuple_GET_SIZE(result) - 1, number);
    }
    return result;
}

/* forest_row(table, x, out): forest(table, x, out, 1) of one row (float32[width]), out float64[trees]
 * the leaf value each tree reaches. One row in forest's lanes is one chain of dependent loads per
 * tree, one tree after the other; here the row is copied into every lane and lane j walks tree
 * r + j, so that LANES trees' chains overlap (the page type's 840 trees of one page). A tree
 * shallower than its group's deepest stays at its leaf for the extra steps (a leaf is its own left
 * child, threshold +inf). Returns the number of infinite values of x, as forest does. */
static PyObject *forest_row(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *capsule, *x_o, *out_o;
    if (!PyArg_ParseTuple(args, "OOO", &capsule, &x_o, &out_o)) return NULL;
    const Forest *t = PyCapsule_GetPointer(capsule, forest_name);
    if (t == NULL) return NULL;
    Py_buffer xv, ov;
    if (get(x_o, &xv, 4, 0, "x") < 0) return NULL;
    if (get(out_o, &ov, 8, 1, "out") < 0) {
        PyBuffer_Release(&xv);
        return NULL;
    }
    PyObject *result = NULL;
    float *both = NULL;
    Py_ssize_t infinite = 0;
    {
        const float *x = xv.buf, *th = t->threshold;
        const int64_t *steps = t->steps, *f = t->feature, *lf = t->left, *roots = t->roots;
        const double *value = t->value;
        double *out = ov.buf;
        Py_ssize_t rows = t->rows, width = t->width;
        if (xv.len != width * 4 || ov.len != rows * 8) {
            PyErr_SetString(PyExc_ValueError, "forest_row: the row or the output does not fit the node table");
            goto done;
        }
        both = PyMem_Malloc((size_t)(LANES * 2 * width) * sizeof(float));
        if (both == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t c = 0; c < width; c++) {
            float value_c = x[c];
            infinite += isinf(value_c) != 0;
            for (Py_ssize_t j = 0; j < LANES; j++) {
                both[c * LANES + j] = isnan(value_c) ? INFINITY : value_c;
                both[(width + c) * LANES + j] = isnan(value_c) ? -INFINITY : value_c;
            }
        }
        for (Py_ssize_t r = 0; r < rows; r += LANES) {
            Py_ssize_t lanes = rows - r < LANES ? rows - r : LANES;
            int64_t k[LANES], deepest = 0;
            for (Py_ssize_t j = 0; j < lanes; j++) {
                k[j] = roots[r + j];
                deepest = steps[r + j] > deepest ? steps[r + j] : deepest;
            }
            if (lanes == LANES)
                walk_columns(k, both, LANES, deepest, lf, f, th);
            else
                walk_columns(k, both, lanes, deepest, lf, f, th);
            for (Py_ssize_t j = 0; j < lanes; j++) out[r + j] = value[k[j]];
        }
        result = PyLong_FromSsize_t(infinite);
    }
done:
    PyMem_Free(both);
    PyBuffer_Release(&xv);
    PyBuffer_Release(&ov);
    return result;
}

/* finite_columns(X, columns, out): out[i, j] = X[i, columns[j]] of a float32 matrix X (blocks x
 * width), as float64 with NaN as 0 and an infinity as the largest finite float64 of its sign: the
 * values of np.nan_to_num(X.take(columns, axis=1).astype(np.float64)), the page type's block
 * columns (page_type.py) in one pass instead of a gather, a cast and the NaN and infinity passes. */
static PyObject *finite_columns(PyObject *self, PyObject *args) {
    (void)self;
    static const Py_ssize_t sizes[3] = {4, 8, 8};
    static const char *const names[3] = {"X", "columns", "out"};
    Py_buffer v[3];
    if (get_three(args, v, sizes, names) < 0) return NULL;
    Py_buffer xv = v[0], cv = v[1], ov = v[2];
    PyObject *result = NULL;
    {
        const float *x = xv.buf;
        const int64_t *columns = cv.buf;
        double *out = ov.buf;
        Py_ssize_t k = cv.len / 8, cells = ov.len / 8;
        Py_ssize_t blocks = k > 0 ? cells / k : 0;
        Py_ssize_t width = xv.ndim == 2 ? xv.shape[1] : -1;
        int bad = width <= 0 || k == 0 || cells != blocks * k || xv.shape[0] != blocks;
        for (Py_ssize_t j = 0; j < k && !bad; j++) bad = columns[j] < 0 || columns[j] >= width;
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "finite_columns: columns or output do not fit X");
            goto done;
        }
        for (Py_ssize_t i = 0; i < blocks; i++) {
            const float *row = x + i * width;
            double *to = out + i * k;
            for (Py_ssize_t j = 0; j < k; j++) {
                double v = row[columns[j]];
                to[j] = isnan(v) ? 0.0 : isinf(v) ? (v > 0 ? DBL_MAX : -DBL_MAX) : v;
            }
        }
        result = Py_None;
        Py_INCREF(result);
    }
done:
    for (int i = 0; i < 3; i++) PyBuffer_Release(&v[i]);
    return result;
}

/* tag_counts(tag, slot, out): out[slot[t]] += 1 for every node's tag id t (int32) that has a slot
 * (slot int64 per tag id, -1 for none; ids past the table have none), the counted tags' entries
 * of np.bincount(page.tag) without the [nodes] minimum and the bins of every other tag. */
static PyObject *tag_counts(PyObject *self, PyObject *args) {
    (void)self;
    static const Py_ssize_t sizes[3] = {4, 8, 8};
    static const char *const names[3] = {"tag", "slot", "out"};
    Py_buffer v[3];
    if (get_three(args, v, sizes, names) < 0) return NULL;
    Py_buffer tv = v[0], sv = v[1], ov = v[2];
    PyObject *result = NULL;
    {
        const int32_t *tag = tv.buf;
        const int64_t *slot = sv.buf;
        int64_t *out = ov.buf;
        Py_ssize_t nodes = tv.len / 4, ids = sv.len / 8, bins = ov.len / 8;
        int bad = 0;
        for (Py_ssize_t i = 0; i < ids && !bad; i++) bad = slot[i] < -1 || slot[i] >= bins;
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "tag_counts: a slot outside out");
            goto done;
        }
        memset(out, 0, (size_t)ov.len);
        for (Py_ssize_t i = 0; i < nodes; i++) {
            int32_t t = tag[i];
            if (t >= 0 && t < ids && slot[t] >= 0) out[slot[t]]++;
        }
        result = Py_None;
        Py_INCREF(result);
    }
done:
    for (int i = 0; i < 3; i++) PyBuffer_Release(&v[i]);
    return result;
}

static PyMethodDef methods[] = {
    {"leaves", leaves, METH_VARARGS, "leaves(node, X2, steps, feature, threshold, left): walk to the leaves in place."},
    {"leaf_sums", leaf_sums, METH_VARARGS,
     "leaf_sums(X2, steps, feature, threshold, left, value, roots, out): a gbdt ensemble's leaf sums per block."},
    {"forest_table", forest_table, METH_VARARGS,
     "forest_table(width, steps, feature, threshold, left, value, roots): a checked node table for forest."},
    {"forest", forest, METH_VARARGS,
     "forest(table, X, out, per_tree, path=0): leaf sums or leaf values per block."},
    {"forest_paths", forest_paths, METH_O, "forest_paths(table): the paths forest can take through a table."},
    {"forest_auto", forest_auto, METH_O, "forest_auto(table): the path forest takes through a table by default."},
    {"forest_row", forest_row, METH_VARARGS,
     "forest_row(table, x, out): the leaf value each tree reaches for one row."},
    {"finite_columns", finite_columns, METH_VARARGS,
     "finite_columns(X, columns, out): float64 columns of X, NaN as 0, infinities as the largest finite values."},
    {"tag_counts", tag_counts, METH_VARARGS, "tag_counts(tag, slot, out): nodes per counted tag id."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_model", "The block model's tree walk, compiled (see model.py).",
                                    -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__model(void) { return PyModule_Create(&module); }

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
 * several blocks adds them, without the [trees, blocks] matrices.
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
} Forest;

static const char forest_name[] = "sitestrip.forest";

static void forest_free(PyObject *capsule) {
    Forest *t = PyCapsule_GetPointer(capsule, forest_name);
    if (t != NULL) {
        PyMem_Free(t->memory);
        PyMem_Free(t);
    }
}

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
        capsule = PyCapsule_New(t, forest_name, forest_free);
        if (capsule == NULL) {
            PyMem_Free(t->memory);
            PyMem_Free(t);
        }
    }
done:
    for (int i = 0; i < held; i++) PyBuffer_Release(&v[i]);
    return capsule;
}

/* forest(table, X, out, per_tree): the walk of `leaves` and `leaf_sums` from each tree's root of
 * a forest_table over X as it is (float32 blocks x width, NaN allowed), each group of blocks'
 * NaN-folded rows (X2 of `leaves`: NaN as +inf, then as -inf) built here, lane-interleaved for
 * walk_columns, in a buffer that stays in the first level cache, instead of in a [blocks, 2 width]
 * matrix numpy fills first.
 * per_tree 0: out float64[blocks], the leaf values' sums in tree order (leaf_sums's);
 * per_tree 1: out float64[trees, blocks], the leaf value each tree reaches (`leaves` followed by
 * value[node]). Returns the number of infinite cells of X, whose rows are still walked (the
 * caller refuses such features, model.py). */
static PyObject *forest(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *capsule, *x_o, *out_o;
    int per_tree;
    if (!PyArg_ParseTuple(args, "OOOp", &capsule, &x_o, &out_o, &per_tree)) return NULL;
    const Forest *t = PyCapsule_GetPointer(capsule, forest_name);
    if (t == NULL) return NULL;
    Py_buffer xv, ov;
    if (get(x_o, &xv, 4, 0, "X") < 0) return NULL;
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
        Py_ssize_t blocks = xv.len / 4 / width;
        if (xv.len != blocks * width * 4 || ov.len / 8 != (per_tree ? rows * blocks : blocks)) {
            PyErr_SetString(PyExc_ValueError, "forest: features or output do not fit the node table");
            goto done;
        }
        both = PyMem_Malloc((size_t)(LANES * 2 * width) * sizeof(float));
        if (both == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t b0 = 0; b0 < blocks; b0 += LANES) {
            Py_ssize_t lanes = blocks - b0 < LANES ? blocks - b0 : LANES;
            double sum[LANES];
            for (Py_ssize_t j = 0; j < lanes; j++) {
                const float *from = x + (b0 + j) * width;
                for (Py_ssize_t c = 0; c < width; c++) {
                    float value_c = from[c];
                    infinite += isinf(value_c) != 0;
                    both[c * LANES + j] = isnan(value_c) ? INFINITY : value_c;
                    both[(width + c) * LANES + j] = isnan(value_c) ? -INFINITY : value_c;
                }
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
    PyMem_Free(both);
    PyBuffer_Release(&xv);
    PyBuffer_Release(&ov);
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
    {"forest", forest, METH_VARARGS, "forest(table, X, out, per_tree): leaf sums or leaf values per block."},
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

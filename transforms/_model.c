/* The block model's tree walk, compiled (SPEC §10; model.py BlockModel._evaluate).
 *
 * model.py compiles every tree into one node table (breadth-first: a node's right child is
 * its left child + 1; a leaf's left child is the leaf itself) and walks all trees for all
 * blocks one level at a time with numpy, which allocates nothing per level but still makes
 * six passes over [trees, blocks] per level. Here each (tree, block) walks down to its leaf
 * in one loop. The comparison is the same float32 `x > threshold`, with a missing value (NaN)
 * read as +inf in feature columns 0..F-1 and as -inf in columns F..2F-1 (model.py folds each
 * split's default direction into that column index), so the leaves reached are the same;
 * summing the leaf values stays in numpy, in the same order as before.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>

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

/* leaves(node, X, n_features, feature, threshold, left): every entry of node (int64, rows ×
 * blocks, row-major, each a tree's start node for that block) is moved down to its leaf. */
static PyObject *leaves(PyObject *self, PyObject *args) {
    PyObject *node_o, *x_o, *feat_o, *thr_o, *left_o;
    Py_ssize_t n_features;
    if (!PyArg_ParseTuple(args, "OOnOOO", &node_o, &x_o, &n_features, &feat_o, &thr_o, &left_o)) return NULL;
    Py_buffer node, X, feat, thr, left;
    if (get(node_o, &node, 8, 1, "node") < 0) return NULL;
    if (get(x_o, &X, 4, 0, "X") < 0) { PyBuffer_Release(&node); return NULL; }
    if (get(feat_o, &feat, 8, 0, "feature") < 0) goto fail2;
    if (get(thr_o, &thr, 4, 0, "threshold") < 0) goto fail3;
    if (get(left_o, &left, 8, 0, "left") < 0) goto fail4;
    {
        int64_t *nd = node.buf;
        const float *x = X.buf, *th = thr.buf;
        const int64_t *f = feat.buf, *lf = left.buf;
        Py_ssize_t cells = node.len / 8, table = left.len / 8;
        Py_ssize_t blocks = n_features > 0 ? X.len / 4 / n_features : 0;
        int bad = n_features <= 0 || blocks == 0 || cells % blocks != 0 || feat.len / 8 != table || thr.len / 4 != table;
        for (Py_ssize_t c = 0; c < cells && !bad; c++) {
            const float *row = x + (c % blocks) * n_features;
            int64_t k = nd[c];
            Py_ssize_t steps = 0;
            if (k < 0 || k >= table) { bad = 1; break; }
            while (lf[k] != k) {
                int64_t col = f[k];
                float v;
                if (col < n_features) { v = row[col]; if (isnan(v)) v = INFINITY; }
                else { v = row[col - n_features]; if (isnan(v)) v = -INFINITY; }
                k = lf[k] + (v > th[k]);
                /* A table from model.py always ends at a leaf; a bound keeps a damaged one finite. */
                if (k < 0 || k >= table || ++steps > table) { bad = 1; break; }
            }
            nd[c] = k;
        }
        PyBuffer_Release(&left);
        PyBuffer_Release(&thr);
        PyBuffer_Release(&feat);
        PyBuffer_Release(&X);
        PyBuffer_Release(&node);
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "leaves: node table, start nodes and features do not fit together");
            return NULL;
        }
        Py_RETURN_NONE;
    }
fail4:
    PyBuffer_Release(&thr);
fail3:
    PyBuffer_Release(&feat);
fail2:
    PyBuffer_Release(&X);
    PyBuffer_Release(&node);
    return NULL;
}

static PyMethodDef methods[] = {
    {"leaves", leaves, METH_VARARGS, "leaves(node, X, n_features, feature, threshold, left): walk to the leaves in place."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_model", "The block model's tree walk, compiled (see model.py).",
                                    -1, methods};

PyMODINIT_FUNC PyInit__model(void) { return PyModule_Create(&module); }

/* Reading a numpy array (or any buffer) as a C array, for the extensions that take their
 * arrays through the buffer protocol: one definition, so each reports a wrong array alike.
 * Included by _features.c, _site.c and _text.c (setup.py lists it in their `depends`). */
#ifndef SITESTRIP_BUFFERS_H
#define SITESTRIP_BUFFERS_H

#include <Python.h>

/* `obj`'s buffer in `view`: C-contiguous, of `itemsize`-byte items, `items` of them unless
 * `items` is negative, writable when `writable`. -1 with a ValueError naming `what` (and
 * nothing held) otherwise. */
static int get_array(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, Py_ssize_t items,
                     int writable, const char *what) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) return -1;
    if (view->itemsize != itemsize || (items >= 0 && view->len != items * itemsize)) {
        PyErr_Format(PyExc_ValueError, "%s: expected a contiguous array of %zd-byte items%s", what, itemsize,
                     items >= 0 ? " of the expected length" : "");
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

#endif

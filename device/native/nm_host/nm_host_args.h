/*
 * nm_host_args.h - nm_host.c's arguments from Python: buffers through the buffer
 * protocol, checked (type, shape, writability, no overlap where one is written)
 * before any memory is touched, and the network layouts of a family.
 */
#ifndef NM_HOST_ARGS_H
#define NM_HOST_ARGS_H

#include <Python.h>
#include <string.h>

#include "nm_train.h"

/* ---------------------------------------------------------------------------
 * Buffers.
 */
#define NMH_MAX_BUFS 40

typedef struct {
    Py_buffer view[NMH_MAX_BUFS];
    const char *name[NMH_MAX_BUFS];
    int writable[NMH_MAX_BUFS];
    int n;
} nmh_bufs;

static void nmh_release(nmh_bufs *bs) {
    for (int i = 0; i < bs->n; i++) {
        PyBuffer_Release(&bs->view[i]);
    }
    bs->n = 0;
}

// What each buffer type letter stands for: its name and item size.
static const char *nmh_type_name(char type) {
    return type == 'f' ? "float32" : type == 'd' ? "float64" : type == 'q' ? "int64" : type == '?' ? "bool"
                                                                                     : "uint32";
}

static int nmh_type_ok(char type, const char *fmt, Py_ssize_t itemsize) {
    switch (type) {
        case 'f':
            return strcmp(fmt, "f") == 0 && itemsize == 4;
        case 'd':
            return strcmp(fmt, "d") == 0 && itemsize == 8;
        case 'q':
            return (strcmp(fmt, "q") == 0 || strcmp(fmt, "l") == 0) && itemsize == 8;
        case '?':
            return strcmp(fmt, "?") == 0 && itemsize == 1;
        default:
            return (strcmp(fmt, "I") == 0 || strcmp(fmt, "L") == 0) && itemsize == 4;
    }
}

// The buffer of obj as a C-contiguous array of `type` ('f' float32, 'd' float64, 'q' int64,
// 'I' uint32, '?' bool) with `ndim` axes; shape[i] >= 0 must match, shape[i] < 0 is filled in. NULL
// (ValueError) if not.
static void *nmh_get(nmh_bufs *bs, PyObject *obj, const char *name, char type, int writable,
    int ndim, Py_ssize_t *shape) {
    if (bs->n == NMH_MAX_BUFS) {
        PyErr_SetString(PyExc_ValueError, "too many arrays in one call");
        return NULL;
    }
    Py_buffer *v = &bs->view[bs->n];
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, v, flags) != 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s must be a C-contiguous%s %s array", name, writable ? ", writable" : "",
            nmh_type_name(type));
        return NULL;
    }
    bs->name[bs->n] = name;
    bs->writable[bs->n] = writable;
    bs->n++;
    const char *fmt = v->format ? v->format : "B";
    if (*fmt == '@' || *fmt == '=' || *fmt == '<') {
        fmt++;
    }
    if (!nmh_type_ok(type, fmt, v->itemsize)) {
        PyErr_Format(PyExc_ValueError, "%s must be %s, got format '%s'", name, nmh_type_name(type), fmt);
        return NULL;
    }
    if (v->ndim != ndim) {
        PyErr_Format(PyExc_ValueError, "%s must have %d axes, got %d", name, ndim, v->ndim);
        return NULL;
    }
    for (int i = 0; i < ndim; i++) {
        if (shape[i] >= 0 && v->shape[i] != shape[i]) {
            PyErr_Format(PyExc_ValueError, "%s: axis %d must be %zd long, got %zd", name, i, shape[i], v->shape[i]);
            return NULL;
        }
        shape[i] = v->shape[i];
    }
    return v->buf;
}

// Every written buffer must share no byte with any other buffer.
static int nmh_check_disjoint(const nmh_bufs *bs) {
    for (int i = 0; i < bs->n; i++) {
        for (int j = i + 1; j < bs->n; j++) {
            if (!bs->writable[i] && !bs->writable[j]) {
                continue;
            }
            const char *a = bs->view[i].buf, *b = bs->view[j].buf;
            if (bs->view[i].len && bs->view[j].len && a < b + bs->view[j].len && b < a + bs->view[i].len) {
                PyErr_Format(PyExc_ValueError, "%s and %s overlap", bs->name[i], bs->name[j]);
                return 0;
            }
        }
    }
    return 1;
}

// The caller's workspace: float32, at least `need` floats; then no two written arrays overlap.
static float *nmh_parse_work(nmh_bufs *bs, PyObject *work, size_t need) {
    Py_ssize_t wshape[1] = {-1};
    float *mem = nmh_get(bs, work, "workspace", 'f', 1, 1, wshape);
    if (!mem) {
        return NULL;
    }
    if ((size_t)wshape[0] < need) {
        PyErr_Format(PyExc_ValueError, "workspace must hold at least %zu floats, got %zd", need, wshape[0]);
        return NULL;
    }
    return nmh_check_disjoint(bs) ? mem : NULL;
}

/* ---------------------------------------------------------------------------
 * Networks: sizes and activations of a family in the training layout.
 */
typedef struct {
    uint16_t sizes[NM_MAX_LAYERS + 1], acts[NM_MAX_LAYERS];
    size_t n_layers, members;
    size_t net_len, len, tape_per_sample; // one member's floats, the family's, tape rows per sample
} nmh_net;

// Sizes <= 4096, at most 32 layers and members <= 2^21: no overflow.
static void nmh_set_members(nmh_net *net, size_t members) {
    net->members = members;
    net->tape_per_sample = 0;
    for (size_t l = 0; l < net->n_layers; l++) {
        net->tape_per_sample += net->sizes[l + 1];
    }
    nm_train_net_size(net->sizes, net->n_layers, &net->net_len);
    net->len = members * net->net_len;
}

// layout = (sizes, activations) as tuples of ints; members: networks in the family.
static int nmh_parse_net(PyObject *layout, const char *name, size_t members, nmh_net *net) {
    PyObject *sizes, *acts;
    if (!PyTuple_Check(layout)) {
        PyErr_Format(PyExc_ValueError, "%s must be a tuple (sizes, activations)", name);
        return 0;
    }
    if (!PyArg_ParseTuple(layout, "OO;layout must be (sizes, activations)", &sizes, &acts)) {
        return 0;
    }
    PyObject *s = PySequence_Fast(sizes, "sizes must be a sequence"), *a = NULL;
    if (!s) {
        return 0;
    }
    a = PySequence_Fast(acts, "activations must be a sequence");
    if (!a) {
        Py_DECREF(s);
        return 0;
    }
    int ok = 0;
    const Py_ssize_t L = PySequence_Fast_GET_SIZE(a);
    if (L < 1 || L > NM_MAX_LAYERS || PySequence_Fast_GET_SIZE(s) != L + 1) {
        PyErr_Format(PyExc_ValueError, "%s: 1 to %d layers, one size more than activations", name, NM_MAX_LAYERS);
        goto done;
    }
    net->n_layers = (size_t)L;
    for (Py_ssize_t i = 0; i <= L; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(s, i));
        if (v < 1 || v > 4096) {
            if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_OverflowError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_ValueError, "%s: layer sizes must be integers from 1 to 4096", name);
            }
            goto done;
        }
        net->sizes[i] = (uint16_t)v;
    }
    for (Py_ssize_t i = 0; i < L; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(a, i));
        if (v < 0 || v >= NM_ACT_COUNT) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "%s: activations must be 0 (identity), 1 (relu) or 2 (tanh)", name);
            goto done;
        }
        net->acts[i] = (uint16_t)v;
    }
    nmh_set_members(net, members);
    ok = 1;
done:
    Py_DECREF(s);
    Py_DECREF(a);
    return ok;
}

// One family's arrays: (params, target, grad, adam_m, adam_v, adam_state).
typedef struct {
    float *p, *t, *g, *m, *v, *st;
} nmh_fam;

static int nmh_get_family(nmh_bufs *bs, PyObject *tuple, const char *name, const nmh_net *net, nmh_fam *f) {
    static const char *const names[2][6] = {
        {"actor params", "actor target", "actor grad", "actor adam_m", "actor adam_v", "actor adam_state"},
        {"critic params", "critic target", "critic grad", "critic adam_m", "critic adam_v", "critic adam_state"},
    };
    const char *const *parts = names[name[0] == 'c'];
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != 6) {
        PyErr_Format(PyExc_ValueError, "%s must be a tuple (params, target, grad, adam_m, adam_v, adam_state)", name);
        return 0;
    }
    float **dst[6] = {&f->p, &f->t, &f->g, &f->m, &f->v, &f->st};
    for (int i = 0; i < 6; i++) {
        Py_ssize_t shape[1] = {i == 5 ? NM_ADAM_STATE : (Py_ssize_t)net->len};
        *dst[i] = nmh_get(bs, PyTuple_GET_ITEM(tuple, i), parts[i], 'f', 1, 1, shape);
        if (!*dst[i]) {
            return 0;
        }
    }
    return 1;
}

#endif // NM_HOST_ARGS_H

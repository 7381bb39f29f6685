/*
 * nm_args.h - argument checking for the MicroPython bindings of the native
 * modules (nm_kernels, nm_train), in both homes.
 *
 * Include after "py/runtime.h" (user C module) or "py/dynruntime.h" (natmod).
 * Every entry point checks all of its arguments before touching memory:
 * buffers must have the right typecode (TypeError otherwise), lengths must
 * match the declared shapes (ValueError naming expected and given), size
 * arithmetic is overflow-checked, outputs may not overlap inputs. Messages
 * are built here, so both homes raise identical errors (dynruntime has no
 * printf-style raise).
 */
#ifndef NM_ARGS_H
#define NM_ARGS_H

#include "nm_kernels.h"
#include "nm_int8_xtensa.h"

#if !defined(MICROPY_ENABLE_DYNRUNTIME) && MICROPY_PY_ARRAY
#include "py/objarray.h"
#endif

/* ---------------------------------------------------------------------------
 * Errors with numbers in them (dynruntime has no printf-style raise).
 */
typedef struct {
    char buf[120];
    size_t n;
} nm_msg_t;

static inline void nm_msg_str(nm_msg_t *m, const char *s) {
    while (*s && m->n < sizeof(m->buf)) {
        m->buf[m->n++] = *s++;
    }
}

static inline void nm_msg_uint(nm_msg_t *m, size_t v) {
    char tmp[24];
    size_t k = 0;
    do {
        tmp[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (k && m->n < sizeof(m->buf)) {
        m->buf[m->n++] = tmp[--k];
    }
}

// Start a message with s.
static inline void nm_msg_start(nm_msg_t *m, const char *s) {
    m->n = 0;
    nm_msg_str(m, s);
}

static inline NORETURN void nm_raise_msg(const mp_obj_type_t *type, nm_msg_t *m) {
    nlr_raise(mp_obj_new_exception_arg1(type, mp_obj_new_str(m->buf, m->n)));
}

// "<what>: expected <expected><unit>, got <given>"
static inline NORETURN void nm_raise_expected(const char *what, const char *rel, size_t expected,
    const char *unit, size_t given) {
    nm_msg_t m;
    nm_msg_start(&m, what);
    nm_msg_str(&m, ": expected ");
    nm_msg_str(&m, rel);
    nm_msg_uint(&m, expected);
    nm_msg_str(&m, unit);
    nm_msg_str(&m, ", got ");
    nm_msg_uint(&m, given);
    nm_raise_msg(&mp_type_ValueError, &m);
}

static inline NORETURN void nm_raise_text(const char *what, const char *text) {
    nm_msg_t m;
    nm_msg_start(&m, what);
    nm_msg_str(&m, text);
    nm_raise_msg(&mp_type_ValueError, &m);
}

static inline NORETURN void nm_raise_overflow(const char *what) {
    nm_raise_text(what, ": shape too large (size overflows)");
}

/* ---------------------------------------------------------------------------
 * Argument helpers.
 */
typedef struct {
    void *buf;
    size_t len; // elements
} nm_arr_t;

// An array('f') or array('b') read off the object itself: a policy call fetches
// five buffers, and the buffer protocol (type slot lookup, typecode size table)
// costs ~60 instructions each on a Cortex-M. 0 for anything else, and always in
// a natmod (no access to the array type there): the caller asks the protocol.
static inline int nm_array_buffer(mp_obj_t obj, mp_buffer_info_t *info) {
    #if !defined(MICROPY_ENABLE_DYNRUNTIME) && MICROPY_PY_ARRAY
    if (mp_obj_is_type(obj, &mp_type_array)) {
        const mp_obj_array_t *a = MP_OBJ_TO_PTR(obj);
        if (a->typecode == 'f' || a->typecode == 'b') {
            info->buf = a->items;
            info->len = a->typecode == 'f' ? a->len * sizeof(float) : a->len;
            info->typecode = a->typecode;
            return 1;
        }
    }
    #endif
    (void)obj;
    (void)info;
    return 0;
}

// Any buffer with the given typecode ('f', 'H', 'I'); otherwise TypeError
// "<what>: expected array('<typecode>'), got typecode '<c>'".
static inline nm_arr_t nm_get_array(mp_obj_t obj, const char *what, char typecode, size_t itemsize, int flags) {
    mp_buffer_info_t info;
    if (!nm_array_buffer(obj, &info)) {
        mp_get_buffer_raise(obj, &info, flags);
    }
    if (info.typecode != typecode) {
        nm_msg_t m;
        nm_msg_start(&m, what);
        nm_msg_str(&m, ": expected array('");
        if (m.n < sizeof(m.buf)) {
            m.buf[m.n++] = typecode;
        }
        nm_msg_str(&m, "'), got typecode '");
        if (m.n < sizeof(m.buf) - 1) {
            m.buf[m.n++] = (char)info.typecode;
            m.buf[m.n++] = '\'';
        }
        nm_raise_msg(&mp_type_TypeError, &m);
    }
    nm_arr_t a = { info.buf, info.len / itemsize };
    return a;
}

// How nm_floats takes a buffer: read-only or written, and whether None is
// allowed (it gives an empty array whose buf is NULL, i.e. "skip").
#define NM_READ 0
#define NM_WRITE 1
#define NM_OR_NONE 2

// The one getter of float buffers: array('f') (TypeError otherwise).
static inline nm_arr_t nm_floats(mp_obj_t obj, const char *what, int flags) {
    if ((flags & NM_OR_NONE) && obj == mp_const_none) {
        nm_arr_t none = { NULL, 0 };
        return none;
    }
    return nm_get_array(obj, what, 'f', sizeof(float), flags & NM_WRITE ? MP_BUFFER_RW : MP_BUFFER_READ);
}

// The one getter of float scalars (a Python int or float), the same in both
// homes: dynruntime maps mp_obj_get_float to the natmod's float width.
#if defined(MICROPY_ENABLE_DYNRUNTIME) || MICROPY_PY_BUILTINS_FLOAT
#define NM_HAS_FLOAT 1
#define nm_get_float(o) ((float)mp_obj_get_float(o))
#else
#define NM_HAS_FLOAT 0
#endif

static inline void nm_check_len(const char *what, size_t expected, size_t given) {
    if (expected != given) {
        nm_raise_expected(what, "", expected, " floats", given);
    }
}

// At least `need` floats (scratch buffers).
static inline void nm_check_min_len(const char *what, size_t need, size_t given) {
    if (given < need) {
        nm_raise_expected(what, ">= ", need, " floats", given);
    }
}

// len / unit, where len (floats) must be a non-zero multiple of unit >= 1.
static inline size_t nm_multiple_of(const char *what, size_t unit, size_t len) {
    if (len == 0 || len % unit) {
        nm_raise_expected(what, "a non-zero multiple of ", unit, " floats", len);
    }
    return len / unit;
}

// Integer argument in [lo, hi].
static inline size_t nm_get_dim(mp_obj_t obj, const char *what, size_t lo, size_t hi) {
    mp_int_t v = mp_obj_get_int(obj);
    if (v < 0) {
        nm_raise_text(what, ": must not be negative");
    }
    if ((size_t)v < lo) {
        nm_raise_expected(what, ">= ", lo, "", (size_t)v);
    }
    if ((size_t)v > hi) {
        nm_raise_expected(what, "<= ", hi, "", (size_t)v);
    }
    return (size_t)v;
}

// Byte ranges [a, a + a_bytes) and [b, b + b_bytes) must not share a byte.
static inline void nm_check_disjoint_bytes(const char *a_name, const void *a, size_t a_bytes,
    const char *b_name, const void *b, size_t b_bytes) {
    uintptr_t a0 = (uintptr_t)a, a1 = a0 + a_bytes;
    uintptr_t b0 = (uintptr_t)b, b1 = b0 + b_bytes;
    if (a_bytes && b_bytes && a0 < b1 && b0 < a1) {
        nm_msg_t m;
        nm_msg_start(&m, a_name);
        nm_msg_str(&m, " must not overlap ");
        nm_msg_str(&m, b_name);
        nm_raise_msg(&mp_type_ValueError, &m);
    }
}

// Float arrays (and 32-bit ones: their elements are as wide).
static inline void nm_check_disjoint(const char *a_name, nm_arr_t a, const char *b_name, nm_arr_t b) {
    nm_check_disjoint_bytes(a_name, a.buf, a.len * sizeof(float), b_name, b.buf, b.len * sizeof(float));
}

static inline NORETURN void nm_raise_nonfinite(const char *what, size_t i) {
    nm_msg_t m;
    nm_msg_start(&m, what);
    nm_msg_str(&m, "[");
    nm_msg_uint(&m, i);
    nm_msg_str(&m, "] is not finite");
    nm_raise_msg(&mp_type_ValueError, &m);
}

// "<what>[<i>] is not finite" for the first inf or NaN in x[0..n).
static inline void nm_check_finite(const char *what, const float *x, size_t n) {
    // One pass without a branch per value: adding one exponent step to the
    // exponent bits carries into bit 31 only for an all-ones exponent (inf, NaN).
    const nm_u32a *u = (const nm_u32a *)x;
    uint32_t carry = 0;
    for (size_t i = 0; i < n; i++) {
        carry |= (u[i] & 0x7F800000u) + 0x00800000u;
    }
    if (carry >> 31) {
        nm_raise_nonfinite(what, nm_first_nonfinite(x, n));
    }
}

// Validated layout: L, s0..sL, code0..code(L-1) as array('H') (nm_layout.h).
// buf/n_bytes: the caller's array, for overlap checks (NULL once copied away).
typedef struct {
    const uint16_t *sizes;
    const uint16_t *acts;  // layer codes: kind << 4 | activation
    size_t n_layers;
    size_t net_len;
    size_t scratch_len;
    size_t state_len;      // floats of state (an int8 net's: nm_q8_state_len); 0: no GRU layer
    size_t q8_net_bytes;   // an int8 net (nm_int8.h): bytes of qnet
    size_t q8_scratch_len; // floats of scratch nm_q8_mlp needs (and the widened weights' on MAC16)
    const void *buf;
    size_t n_bytes;
} nm_layout_t;

// Which layer codes nm_get_layout takes: every valid one (inference), or dense identity,
// relu and tanh only (training).
#define NM_LAYOUT_ANY 0
#define NM_LAYOUT_DENSE 1

static inline nm_layout_t nm_get_layout(mp_obj_t obj, int which) {
    nm_arr_t a = nm_get_array(obj, "layout", 'H', sizeof(uint16_t), MP_BUFFER_READ);
    const uint16_t *p = a.buf;
    if (a.len < 1) {
        nm_raise_expected("layout", ">= ", 4, " entries", a.len);
    }
    size_t n = p[0];
    if (n < 1 || n > NM_MAX_LAYERS) {
        nm_raise_expected("layout[0] (layer count)", "1..", NM_MAX_LAYERS, "", n);
    }
    if (a.len != 2 * n + 2) {
        nm_raise_expected("layout", "", 2 * n + 2, " entries for that layer count", a.len);
    }
    nm_layout_t l = { p + 1, p + 2 + n, n, 0, 0, 0, 0, 0, p, a.len * sizeof(uint16_t) };
    for (size_t i = 0; i <= n; i++) {
        if (l.sizes[i] == 0) {
            nm_raise_text("layout", ": layer sizes must be >= 1");
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (which == NM_LAYOUT_DENSE && l.acts[i] >= NM_ACT_COUNT) {
            nm_raise_expected("layout activation code", "< ", NM_ACT_COUNT, "", l.acts[i]);
        }
        if (!nm_code_valid(l.acts[i])) {
            nm_msg_t m;
            nm_msg_start(&m, "layout: layer ");
            nm_msg_uint(&m, i);
            nm_msg_str(&m, " code ");
            nm_msg_uint(&m, l.acts[i]);
            nm_msg_str(&m, " is neither a dense activation 0..4 nor a GRU (16, activation 0)");
            nm_raise_msg(&mp_type_ValueError, &m);
        }
    }
    if (!nm_net_size(l.sizes, l.acts, n, &l.net_len) || !nm_state_size(l.sizes, l.acts, n, &l.state_len)
        || !nm_mlp_scratch_size(l.sizes, l.acts, n, &l.scratch_len)) {
        nm_raise_overflow("layout");
    }
    if (!nm_q8_net_bytes(l.sizes, l.acts, n, &l.q8_net_bytes)) {
        nm_raise_overflow("layout");
    }
    l.q8_scratch_len = (nm_q8_scratch_bytes(l.sizes, l.acts, n) + 3) / 4;
    #if NM_Q8_MAC16
    // then the int8 weights widened to int16 (nm_int8_xtensa.h), which Forward writes
    // for a net of dense layers
    size_t wide;
    if (!l.state_len && (!nm_q8_wide_bytes(l.sizes, n, &wide)
        || !nm_add_size(l.q8_scratch_len, wide / 4, &l.q8_scratch_len))) {
        nm_raise_overflow("layout");
    }
    #endif
    return l;
}

#endif // NM_ARGS_H

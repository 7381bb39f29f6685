/*
 * nm_kernels.c - the inference kernels (nm_kernels.h) for MicroPython, in
 * both homes from this one file:
 *   - user C module `nm_kernels` (firmware): this folder's micropython.mk
 *     (make ports) or micropython.cmake (esp32, rp2);
 *   - dynamic native module `nm_kernels_natmod` (.mpy per architecture):
 *     this folder's Makefile, where MICROPY_ENABLE_DYNRUNTIME is defined.
 * Same functions, arithmetic and error messages in both (HOME says which).
 */
#if defined(MICROPY_ENABLE_DYNRUNTIME)
#include "py/dynruntime.h"
#else
#include "py/runtime.h"
#endif

#include "nm_args.h"
#include "nm_int8.h"
#include "nm_kernels.h"

/* ---------------------------------------------------------------------------
 * Entry points.
 */

static int nm_get_act(mp_obj_t obj) {
    return (int)nm_get_dim(obj, "act", 0, NM_ACT_INFER_COUNT - 1);
}

// dense(out, x, w, act): out[n_out] = act(W x + b), n_in = len(x), n_out = len(out).
static mp_obj_t nm_py_dense(size_t n_args, const mp_obj_t *args) {
    (void)n_args;
    nm_arr_t out = nm_floats(args[0], "out", NM_WRITE);
    nm_arr_t x = nm_floats(args[1], "x", NM_READ);
    nm_arr_t w = nm_floats(args[2], "w", NM_READ);
    int act = nm_get_act(args[3]);
    if (out.len == 0 || x.len == 0) {
        nm_raise_text(out.len ? "x" : "out", ": must not be empty");
    }
    size_t need;
    if (!nm_layer_size(x.len, out.len, &need)) {
        nm_raise_overflow("w");
    }
    nm_check_len("w (packed layer for len(x) inputs, len(out) outputs)", need, w.len);
    nm_check_disjoint("out", out, "x", x);
    nm_check_disjoint("out", out, "w", w);
    nm_dense(out.buf, x.buf, w.buf, x.len, out.len, act);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(nm_py_dense_obj, 4, 4, nm_py_dense);

// dense_batch(out, x, w, n_in, n_out, act): rows of x (batch x n_in) into out (batch x n_out).
static mp_obj_t nm_py_dense_batch(size_t n_args, const mp_obj_t *args) {
    (void)n_args;
    nm_arr_t out = nm_floats(args[0], "out", NM_WRITE);
    nm_arr_t x = nm_floats(args[1], "x", NM_READ);
    nm_arr_t w = nm_floats(args[2], "w", NM_READ);
    size_t n_in = nm_get_dim(args[3], "n_in", 1, NM_MAX_WIDTH);
    size_t n_out = nm_get_dim(args[4], "n_out", 1, NM_MAX_WIDTH);
    int act = nm_get_act(args[5]);
    size_t batch = nm_multiple_of("x (batch x n_in)", n_in, x.len), need;
    if (!nm_mul_size(batch, n_out, &need)) {
        nm_raise_overflow("out");
    }
    nm_check_len("out (batch x n_out)", need, out.len);
    if (!nm_layer_size(n_in, n_out, &need)) {
        nm_raise_overflow("w");
    }
    nm_check_len("w (packed layer n_in x n_out)", need, w.len);
    nm_check_disjoint("out", out, "x", x);
    nm_check_disjoint("out", out, "w", w);
    nm_dense_batch(out.buf, x.buf, w.buf, batch, n_in, n_out, act);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(nm_py_dense_batch_obj, 6, 6, nm_py_dense_batch);

/* ---------------------------------------------------------------------------
 * Whole-policy forward: the buffers of one call and their checks, shared by
 * mlp() and Forward.
 */
typedef struct {
    nm_arr_t out, x, net, scratch, clamp; // an int8 net's len counts whole 32-bit words
    nm_arr_t state; // the GRU layers' hidden states (int16 for an int8 net); buf NULL when none was given
    size_t net_bytes;
    int q8;        // net is an int8 qnet (array('b'), nm_int8.h), not floats
    int clamped;   // a clamp was given (an empty one is refused, not ignored)
    int x_written; // x is the copy-in buffer xbuf, not the caller's obs
    #if NM_Q8_MAC16
    int q8_wide;   // scratch holds the int8 weights widened (Forward): the MAC16 layers
    #endif
} nm_mlp_bufs_t;

// The net: array('f') (float32 policy) or array('b') (int8 policy, nm_int8.h),
// from one buffer lookup: every Forward call makes this one.
NM_INLINE void nm_get_net(nm_mlp_bufs_t *b, mp_obj_t obj) {
    mp_buffer_info_t info;
    if (!nm_array_buffer(obj, &info)) {
        mp_get_buffer_raise(obj, &info, MP_BUFFER_READ);
    }
    b->net.buf = info.buf;
    b->net_bytes = info.len;
    b->q8 = info.typecode == 'b';
    if (b->q8) {
        b->net.len = (info.len + 3) / 4;
    } else if (info.typecode == 'f') {
        b->net.len = info.len / sizeof(float);
    } else {
        nm_floats(obj, "net", NM_READ); // raises its TypeError naming the typecode
    }
}

// A fault of nm_q8_check (code != NM_Q8_OK), as one line naming the value.
static NORETURN void nm_raise_q8_fault(int code, const nm_q8_fault_t *f) {
    static const char *const what[] = {
        "", ": an int8 hidden layer must be identity or relu", ": value is not finite",
        ": in_mul (input multiplier) must be positive", ": deq (output scale) must be positive",
        ": requantisation multiplier outside 1..2^31-1", ": requantisation shift outside 0..31",
        ": bias outside -2^24..2^24", ": more than 512 inputs (int32 accumulators could overflow)",
        ": an int8 layer is dense identity, relu or tanh, or a GRU", ": the last layer must be dense, not a GRU",
        ": GRU input bias (bi) outside -2^24..2^24", ": GRU hidden bias (bh) outside -2^24..2^24",
        ": GRU input scale (deqi) must be finite and positive", ": GRU hidden scale (deqh) must be finite and positive",
    };
    nm_msg_t m;
    nm_msg_start(&m, "net (int8): ");
    if (f->layer >= 0) {
        nm_msg_str(&m, "layer ");
        nm_msg_uint(&m, (size_t)f->layer);
        nm_msg_str(&m, " ");
    }
    nm_msg_str(&m, "index ");
    nm_msg_uint(&m, f->index);
    nm_msg_str(&m, what[code]);
    nm_raise_msg(&mp_type_ValueError, &m);
}

// What nm_q8_check refuses.
static void nm_check_q8_values(const nm_layout_t *l, const void *qnet) {
    nm_q8_fault_t f;
    int code = nm_q8_check(qnet, l->sizes, l->acts, l->n_layers, &f);
    if (code != NM_Q8_OK) {
        nm_raise_q8_fault(code, &f);
    }
}

// The net against the layout: an int8 one's layer codes and widths (before its sizes,
// which count any code), bytes and alignment, or a float one's length.
static void nm_check_net(const nm_layout_t *l, const nm_mlp_bufs_t *b) {
    if (b->q8) {
        nm_q8_fault_t f;
        int code = nm_q8_check_layout(l->sizes, l->acts, l->n_layers, &f);
        if (code != NM_Q8_OK) {
            nm_raise_q8_fault(code, &f);
        }
        if (b->net_bytes != l->q8_net_bytes) {
            nm_raise_expected("net (int8)", "", l->q8_net_bytes, " bytes", b->net_bytes);
        }
        if ((uintptr_t)b->net.buf & 3) {
            nm_raise_text("net (int8)", ": must be 4-byte aligned");
        }
    } else {
        nm_check_len("net", l->net_len, b->net.len);
    }
}

// The optional clamp argument (absent or None: no clamp); its length and
// values are checked in nm_check_mlp.
static void nm_get_clamp(nm_mlp_bufs_t *b, mp_obj_t obj) {
    b->clamped = obj != MP_OBJ_NULL && obj != mp_const_none;
    if (b->clamped) {
        b->clamp = nm_floats(obj, "clamp", NM_READ);
    } else {
        b->clamp.buf = NULL;
        b->clamp.len = 0;
    }
}

// The clamp limits: finite, lo <= hi (they are read at every call: checked then).
static void nm_check_clamp_values(const nm_layout_t *l, const nm_mlp_bufs_t *b) {
    const size_t s_out = l->sizes[l->n_layers];
    if (b->clamped) {
        const float *lo = b->clamp.buf, *hi = lo + s_out;
        size_t ok = 0; // one pass when all is well; the message comes from the two below
        while (ok < s_out && nm_finite(lo[ok]) && nm_finite(hi[ok]) && lo[ok] <= hi[ok]) {
            ok++;
        }
        if (ok == s_out) {
            return;
        }
        nm_check_finite("clamp", lo, 2 * s_out);
        for (size_t i = 0; i < s_out; i++) {
            if (!(lo[i] <= hi[i])) {
                nm_msg_t m;
                nm_msg_start(&m, "clamp[");
                nm_msg_uint(&m, i);
                nm_msg_str(&m, "] (lower limit) is above clamp[");
                nm_msg_uint(&m, s_out + i);
                nm_msg_str(&m, "] (upper limit)");
                nm_raise_msg(&mp_type_ValueError, &m);
            }
        }
    }
}

// The optional state argument (absent or None: none): array('f'), or array('h') with an
// int8 net (b->q8 known); checked in nm_check_mlp.
static void nm_get_state(nm_mlp_bufs_t *b, mp_obj_t obj) {
    if (obj == MP_OBJ_NULL || obj == mp_const_none) {
        b->state.buf = NULL;
        b->state.len = 0;
    } else if (b->q8) {
        b->state = nm_get_array(obj, "state", 'h', sizeof(int16_t), MP_BUFFER_RW);
    } else {
        b->state = nm_floats(obj, "state", NM_WRITE);
    }
}

// A recurrent layout needs its state, of exactly state_size values; an int8 one 4-byte
// aligned, as the accumulation reads it in words. Returns its bytes.
static size_t nm_check_state_len(const nm_layout_t *l, const nm_mlp_bufs_t *b) {
    const size_t len = b->q8 && l->state_len ? nm_q8_state_len(l->sizes, l->acts, l->n_layers) : l->state_len;
    const char *unit = b->q8 ? " int16 values" : " floats";
    if (len && !b->state.buf) {
        nm_msg_t m;
        nm_msg_start(&m, b->q8 ? "state: the layout has GRU layers, expected array('h') of "
            : "state: the layout has GRU layers, expected array('f') of ");
        nm_msg_uint(&m, len);
        nm_msg_str(&m, unit);
        nm_msg_str(&m, ", got None");
        nm_raise_msg(&mp_type_ValueError, &m);
    }
    if (b->state.len != len) {
        nm_raise_expected("state", "", len, unit, b->state.len);
    }
    if (b->q8 && ((uintptr_t)b->state.buf & 3)) {
        nm_raise_text("state", ": must be 4-byte aligned");
    }
    return len * (b->q8 ? sizeof(int16_t) : sizeof(float));
}

// The state (of its bytes) apart from a float buffer.
static void nm_check_state_apart(const nm_mlp_bufs_t *b, size_t bytes, const char *name, nm_arr_t a) {
    nm_check_disjoint_bytes("state", b->state.buf, bytes, name, a.buf, a.len * sizeof(float));
}

// The state's length, and apart from every other buffer.
static void nm_check_state(const nm_layout_t *l, const nm_mlp_bufs_t *b, const char *x_name) {
    const size_t bytes = nm_check_state_len(l, b);
    nm_check_state_apart(b, bytes, "out", b->out);
    nm_check_state_apart(b, bytes, x_name, b->x);
    nm_check_state_apart(b, bytes, "net", b->net);
    nm_check_state_apart(b, bytes, "scratch", b->scratch);
    nm_check_state_apart(b, bytes, "clamp", b->clamp);
    if (l->buf) {
        nm_check_disjoint_bytes("state", b->state.buf, bytes, "layout", l->buf, l->n_bytes);
    }
}

/* Lengths against the layout; no buffer that is written (out, scratch, state,
 * and x when it is xbuf) overlapping another buffer or the layout, nor clamp
 * overlapping any buffer; clamp limits finite with lo <= hi. x_name names x in
 * messages; x's values are not looked at (a list is copied in after this). */
static void nm_check_mlp(const nm_layout_t *l, const nm_mlp_bufs_t *b, const char *x_name) {
    const size_t s_out = l->sizes[l->n_layers];
    nm_check_len(x_name, l->sizes[0], b->x.len);
    nm_check_len("out", s_out, b->out.len);
    nm_check_net(l, b);
    nm_check_min_len("scratch", b->q8 ? l->q8_scratch_len : l->scratch_len, b->scratch.len);
    if (b->clamped) {
        nm_check_len("clamp", 2 * s_out, b->clamp.len);
    }
    nm_check_disjoint("out", b->out, x_name, b->x);
    nm_check_disjoint("out", b->out, "net", b->net);
    nm_check_disjoint("scratch", b->scratch, "out", b->out);
    nm_check_disjoint("scratch", b->scratch, x_name, b->x);
    nm_check_disjoint("scratch", b->scratch, "net", b->net);
    if (b->x_written) {
        nm_check_disjoint(x_name, b->x, "net", b->net);
    }
    nm_check_disjoint("clamp", b->clamp, "out", b->out);
    nm_check_disjoint("clamp", b->clamp, "scratch", b->scratch);
    nm_check_disjoint("clamp", b->clamp, x_name, b->x);
    nm_check_disjoint("clamp", b->clamp, "net", b->net);
    if (l->buf) {
        nm_check_disjoint_bytes("out", b->out.buf, b->out.len * sizeof(float), "layout", l->buf, l->n_bytes);
        nm_check_disjoint_bytes("scratch", b->scratch.buf, b->scratch.len * sizeof(float), "layout", l->buf, l->n_bytes);
        if (b->x_written) {
            nm_check_disjoint_bytes(x_name, b->x.buf, b->x.len * sizeof(float), "layout", l->buf, l->n_bytes);
        }
    }
    nm_check_state(l, b, x_name);
    nm_check_clamp_values(l, b);
}

// Out of line, so the integer kernel's registers and stack do not weigh on
// the float path it would otherwise be inlined beside.
static __attribute__((noinline)) void nm_run_q8(const nm_layout_t *l, const nm_mlp_bufs_t *b) {
    #if NM_Q8_MAC16
    if (b->q8_wide) {
        const int16_t *wide = (const int16_t *)((const uint8_t *)b->scratch.buf
            + nm_q8_scratch_bytes(l->sizes, l->acts, l->n_layers));
        nm_q8_mlp_wide(b->out.buf, b->x.buf, b->net.buf, wide, l->sizes, l->acts, l->n_layers, b->scratch.buf);
        return;
    }
    #endif
    nm_q8_mlp(b->out.buf, b->x.buf, b->net.buf, l->sizes, l->acts, l->n_layers, b->scratch.buf, b->state.buf);
}

// Checked buffers in, action out (clamped when limits were given).
static void nm_run_mlp(const nm_layout_t *l, const nm_mlp_bufs_t *b) {
    if (b->q8) {
        nm_run_q8(l, b);
    } else {
        nm_mlp(b->out.buf, b->x.buf, b->net.buf, l->sizes, l->acts, l->n_layers, b->scratch.buf, b->state.buf);
    }
    if (b->clamped) {
        nm_clamp(b->out.buf, b->clamp.buf, l->sizes[l->n_layers]);
    }
}

// mlp(out, x, net, layout, scratch[, clamp[, state]]): whole policy forward, see nm_kernels.h
// (net array('f')) or nm_int8.h (net array('b'), its values checked at each call);
// clamp holds len(out) lower limits then len(out) upper limits (None: no clamp); state,
// required when the layout has GRU layers, their hidden states (array('f'); array('h') in
// Q15 with an int8 net), advanced one step.
static mp_obj_t nm_py_mlp(size_t n_args, const mp_obj_t *args) {
    nm_mlp_bufs_t b;
    b.out = nm_floats(args[0], "out", NM_WRITE);
    b.x = nm_floats(args[1], "x", NM_READ);
    nm_get_net(&b, args[2]);
    nm_layout_t l = nm_get_layout(args[3], NM_LAYOUT_ANY);
    b.scratch = nm_floats(args[4], "scratch", NM_WRITE);
    nm_get_clamp(&b, n_args > 5 ? args[5] : MP_OBJ_NULL);
    nm_get_state(&b, n_args > 6 ? args[6] : MP_OBJ_NULL);
    b.x_written = 0;
    #if NM_Q8_MAC16
    b.q8_wide = 0; // no widened weights: the C layers
    #endif
    nm_check_mlp(&l, &b, "x");
    if (b.q8) {
        nm_check_q8_values(&l, b.net.buf);
    }
    nm_check_finite("obs", b.x.buf, b.x.len);
    nm_run_mlp(&l, &b);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(nm_py_mlp_obj, 5, 7, nm_py_mlp);

/* ---------------------------------------------------------------------------
 * Forward(out, net, layout, scratch, xbuf[, clamp[, state]]): a callable holding
 * one policy's buffers; f(obs) runs mlp(out, obs, net, layout, scratch, clamp,
 * state) and returns out. obs as array('f') goes straight through; a list or tuple
 * of numbers is copied into xbuf, only once every buffer has passed its
 * checks (xbuf inside net would otherwise overwrite the weights). Python
 * classes may subclass it (the runtime's native Policy does): calling an
 * instance then reaches this C function without a bytecode frame.
 *
 * The layout is validated once and copied in, so mutating the caller's
 * layout array later cannot desynchronise the sizes. Buffers can still be
 * resized, reallocated or rewritten between calls, so each call re-fetches
 * them and repeats every check (the clamp limits are a few floats). An int8
 * net's values are checked when it is built: nm_q8_mlp's arithmetic is
 * defined for any bytes, so a net rewritten later gives wrong numbers (then
 * clamped), never undefined behaviour. On the ESP32's core (NM_Q8_MAC16) the int8
 * weights are also widened then, into scratch after the activations (scratch_size
 * counts them), for the MAC16 layers: a net rewritten later keeps computing with
 * the weights it had, until a new Forward is built.
 */
typedef struct {
    mp_obj_base_t base;
    mp_obj_t out, net, scratch, xbuf, clamp, state; // clamp, state: None for none
    nm_layout_t layout; // sizes and acts point into this object; no buf
    uint16_t sizes[NM_MAX_LAYERS + 1];
    uint16_t acts[NM_MAX_LAYERS];
} nm_forward_obj_t;

static mp_obj_t nm_forward_run(nm_forward_obj_t *self, mp_obj_t obs) {
    const nm_layout_t *l = &self->layout;
    nm_mlp_bufs_t b;
    b.out = nm_floats(self->out, "out", NM_WRITE);
    nm_get_net(&b, self->net);
    b.scratch = nm_floats(self->scratch, "scratch", NM_WRITE);
    nm_get_clamp(&b, self->clamp);
    nm_get_state(&b, self->state);
    mp_buffer_info_t info;
    const int direct = (nm_array_buffer(obs, &info) || mp_get_buffer(obs, &info, MP_BUFFER_READ))
        && info.typecode == 'f';
    b.x_written = !direct;
    #if NM_Q8_MAC16
    b.q8_wide = !l->state_len; // widened when the Forward was built, unless a layer is a GRU
    #endif
    if (direct) {
        b.x.buf = info.buf;
        b.x.len = info.len / sizeof(float);
    } else {
        #if NM_HAS_FLOAT
        b.x = nm_floats(self->xbuf, "xbuf", NM_WRITE);
        #else
        b.x = nm_floats(obs, "obs", NM_READ); // raises TypeError
        #endif
    }
    nm_check_mlp(l, &b, direct ? "x" : "xbuf");
    if (direct) {
        nm_check_finite("obs", b.x.buf, b.x.len);
    } else {
        size_t len;
        mp_obj_t *items;
        mp_obj_get_array(obs, &len, &items); // TypeError unless tuple or list
        nm_check_len("obs", b.x.len, len);
        float *xb = b.x.buf;
        for (size_t i = 0; i < len; i++) {
            float v = nm_get_float(items[i]);
            if (!nm_finite(v)) {
                nm_raise_nonfinite("obs", i);
            }
            xb[i] = v;
        }
    }
    nm_run_mlp(l, &b);
    return self->out;
}

static mp_obj_t nm_forward_make_new(const mp_obj_type_t *type, size_t n_args, size_t n_kw, const mp_obj_t *args) {
    mp_arg_check_num(n_args, n_kw, 5, 7, false);
    // Every check a call makes, once now, so a bad set fails where it was built.
    nm_layout_t l = nm_get_layout(args[2], NM_LAYOUT_ANY);
    nm_mlp_bufs_t b;
    b.out = nm_floats(args[0], "out", NM_WRITE);
    nm_get_net(&b, args[1]);
    b.scratch = nm_floats(args[3], "scratch", NM_WRITE);
    b.x = nm_floats(args[4], "xbuf", NM_WRITE);
    b.x_written = 1;
    nm_get_clamp(&b, n_args > 5 ? args[5] : MP_OBJ_NULL);
    nm_get_state(&b, n_args > 6 ? args[6] : MP_OBJ_NULL);
    nm_check_mlp(&l, &b, "xbuf");
    if (b.q8) {
        nm_check_q8_values(&l, b.net.buf);
    }
    #if NM_Q8_MAC16
    if (b.q8 && !l.state_len) { // the weights widened once, after the activations in scratch (nm_args.h)
        nm_q8_widen((int16_t *)((uint8_t *)b.scratch.buf + nm_q8_scratch_bytes(l.sizes, l.acts, l.n_layers)),
            b.net.buf, l.sizes, l.n_layers);
    }
    #endif
    nm_forward_obj_t *o = m_malloc(sizeof(nm_forward_obj_t));
    o->base.type = type;
    o->out = args[0];
    o->net = args[1];
    o->scratch = args[3];
    o->xbuf = args[4];
    o->clamp = n_args > 5 ? args[5] : mp_const_none;
    o->state = n_args > 6 ? args[6] : mp_const_none;
    o->layout = l;
    o->layout.sizes = o->sizes;
    o->layout.acts = o->acts;
    o->layout.buf = NULL;
    o->layout.n_bytes = 0;
    for (size_t i = 0; i <= l.n_layers; i++) {
        o->sizes[i] = l.sizes[i];
    }
    for (size_t i = 0; i < l.n_layers; i++) {
        o->acts[i] = l.acts[i];
    }
    return MP_OBJ_FROM_PTR(o);
}

static mp_obj_t nm_forward_call(mp_obj_t self_in, size_t n_args, size_t n_kw, const mp_obj_t *args) {
    if (n_args != 1 || n_kw) {
        mp_arg_check_num(n_args, n_kw, 1, 1, false); // raises its TypeError
    }
    return nm_forward_run(MP_OBJ_TO_PTR(self_in), args[0]);
}

// pack(dst, w, b, n_in, n_out): row-major W (n_out x n_in) and b into block-4 layout.
static mp_obj_t nm_py_pack(size_t n_args, const mp_obj_t *args) {
    (void)n_args;
    nm_arr_t dst = nm_floats(args[0], "dst", NM_WRITE);
    nm_arr_t w = nm_floats(args[1], "w", NM_READ);
    nm_arr_t b = nm_floats(args[2], "b", NM_READ);
    size_t n_in = nm_get_dim(args[3], "n_in", 1, NM_MAX_WIDTH);
    size_t n_out = nm_get_dim(args[4], "n_out", 1, NM_MAX_WIDTH);
    size_t need;
    if (!nm_mul_size(n_in, n_out, &need)) {
        nm_raise_overflow("w");
    }
    nm_check_len("w (n_out x n_in)", need, w.len);
    nm_check_len("b", n_out, b.len);
    if (!nm_layer_size(n_in, n_out, &need)) {
        nm_raise_overflow("dst");
    }
    nm_check_len("dst (packed layer)", need, dst.len);
    nm_check_disjoint("dst", dst, "w", w);
    nm_check_disjoint("dst", dst, "b", b);
    nm_pack_layer(dst.buf, w.buf, b.buf, n_in, n_out);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(nm_py_pack_obj, 5, 5, nm_py_pack);

// layer_size(n_in, n_out) -> floats in one packed layer.
static mp_obj_t nm_py_layer_size(mp_obj_t n_in_obj, mp_obj_t n_out_obj) {
    size_t n_in = nm_get_dim(n_in_obj, "n_in", 1, NM_MAX_WIDTH);
    size_t n_out = nm_get_dim(n_out_obj, "n_out", 1, NM_MAX_WIDTH);
    size_t need;
    if (!nm_layer_size(n_in, n_out, &need)) {
        nm_raise_overflow("layer");
    }
    return mp_obj_new_int_from_uint(need);
}
static MP_DEFINE_CONST_FUN_OBJ_2(nm_py_layer_size_obj, nm_py_layer_size);

// net_size(layout[, int8]) -> floats in the net vector (int8: bytes of the qnet);
// scratch_size(layout[, int8]) -> floats of scratch mlp needs;
// state_size(layout[, int8]) -> floats of state, the GRU layers' hidden sizes (int8: int16
// values, each hidden size rounded up to a multiple of 4); 0 for an MLP.
static mp_obj_t nm_py_net_size(size_t n_args, const mp_obj_t *args) {
    nm_layout_t l = nm_get_layout(args[0], NM_LAYOUT_ANY);
    return mp_obj_new_int_from_uint(n_args > 1 && mp_obj_is_true(args[1]) ? l.q8_net_bytes : l.net_len);
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(nm_py_net_size_obj, 1, 2, nm_py_net_size);

static mp_obj_t nm_py_scratch_size(size_t n_args, const mp_obj_t *args) {
    nm_layout_t l = nm_get_layout(args[0], NM_LAYOUT_ANY);
    return mp_obj_new_int_from_uint(n_args > 1 && mp_obj_is_true(args[1]) ? l.q8_scratch_len : l.scratch_len);
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(nm_py_scratch_size_obj, 1, 2, nm_py_scratch_size);

static mp_obj_t nm_py_state_size(size_t n_args, const mp_obj_t *args) {
    nm_layout_t l = nm_get_layout(args[0], NM_LAYOUT_ANY);
    return mp_obj_new_int_from_uint(n_args > 1 && mp_obj_is_true(args[1])
        ? nm_q8_state_len(l.sizes, l.acts, l.n_layers) : l.state_len);
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(nm_py_state_size_obj, 1, 2, nm_py_state_size);

// state_reset(state, net, layout): state <- every GRU layer's h0 from net (a new episode);
// net array('f') with state array('f'), or net array('b') (int8) with state array('h').
static mp_obj_t nm_py_state_reset(mp_obj_t state_obj, mp_obj_t net_obj, mp_obj_t layout_obj) {
    nm_mlp_bufs_t b;
    nm_get_net(&b, net_obj);
    nm_get_state(&b, state_obj);
    nm_layout_t l = nm_get_layout(layout_obj, NM_LAYOUT_ANY);
    nm_check_net(&l, &b);
    const size_t bytes = nm_check_state_len(&l, &b);
    nm_check_state_apart(&b, bytes, "net", b.net);
    nm_check_disjoint_bytes("state", b.state.buf, bytes, "layout", l.buf, l.n_bytes);
    if (b.q8) {
        nm_q8_state_reset(b.state.buf, b.net.buf, l.sizes, l.acts, l.n_layers);
    } else {
        nm_state_reset(b.state.buf, b.net.buf, l.sizes, l.acts, l.n_layers);
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_3(nm_py_state_reset_obj, nm_py_state_reset);

// crc32(data[, crc]) -> zlib-compatible CRC-32 of any buffer.
static mp_obj_t nm_py_crc32(size_t n_args, const mp_obj_t *args) {
    mp_buffer_info_t info;
    mp_get_buffer_raise(args[0], &info, MP_BUFFER_READ);
    uint32_t crc = n_args > 1 ? (uint32_t)mp_obj_get_int_truncated(args[1]) : 0;
    return mp_obj_new_int_from_uint(nm_crc32(crc, info.buf, info.len));
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(nm_py_crc32_obj, 1, 2, nm_py_crc32);

// isa([name]) -> name of the instruction-set path in use ("scalar", "sse2",
// "avx2"); with a name, force that path ("auto" = best); ValueError if this
// CPU or build does not have it.
#ifndef NM_SIMD4_NAME
#define NM_SIMD4_NAME "sse2" // the 4-lane path's name (nm_kernels_wasm.h: "simd128")
#endif
static const char *const nm_isa_names[] = { "auto", "scalar", NM_SIMD4_NAME, "avx2" };

static mp_obj_t nm_py_isa(size_t n_args, const mp_obj_t *args) {
    if (n_args > 0) {
        size_t len;
        const char *want = mp_obj_str_get_data(args[0], &len);
        int found = -1;
        for (int i = 0; i < 4; i++) {
            const char *n = nm_isa_names[i];
            size_t k = 0;
            while (k < len && n[k] && n[k] == want[k]) {
                k++;
            }
            if (k == len && n[k] == 0) {
                found = i;
            }
        }
        if (found < 0 || !nm_isa_set(found)) {
            nm_raise_text("isa", ": not available here (expected auto, scalar, " NM_SIMD4_NAME " or avx2, as this CPU allows)");
        }
    }
    const char *name = nm_isa_names[nm_isa()];
    size_t n = 0;
    while (name[n]) {
        n++;
    }
    return mp_obj_new_str(name, n);
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(nm_py_isa_obj, 0, 1, nm_py_isa);

/* ---------------------------------------------------------------------------
 * The module.
 */
#if defined(MICROPY_ENABLE_DYNRUNTIME)

// Types in a natmod live in RAM and get their slots at import.
mp_obj_full_type_t nm_forward_type;

mp_obj_t mpy_init(mp_obj_fun_bc_t *self, size_t n_args, size_t n_kw, mp_obj_t *args) {
    MP_DYNRUNTIME_INIT_ENTRY

    nm_forward_type.base.type = (void *)&mp_type_type;
    nm_forward_type.flags = MP_TYPE_FLAG_NONE;
    nm_forward_type.name = MP_QSTR_Forward;
    MP_OBJ_TYPE_SET_SLOT(&nm_forward_type, make_new, nm_forward_make_new, 0);
    MP_OBJ_TYPE_SET_SLOT(&nm_forward_type, call, nm_forward_call, 1);
    mp_store_global(MP_QSTR_Forward, MP_OBJ_FROM_PTR(&nm_forward_type));

    mp_store_global(MP_QSTR_dense, MP_OBJ_FROM_PTR(&nm_py_dense_obj));
    mp_store_global(MP_QSTR_dense_batch, MP_OBJ_FROM_PTR(&nm_py_dense_batch_obj));
    mp_store_global(MP_QSTR_mlp, MP_OBJ_FROM_PTR(&nm_py_mlp_obj));
    mp_store_global(MP_QSTR_pack, MP_OBJ_FROM_PTR(&nm_py_pack_obj));
    mp_store_global(MP_QSTR_layer_size, MP_OBJ_FROM_PTR(&nm_py_layer_size_obj));
    mp_store_global(MP_QSTR_net_size, MP_OBJ_FROM_PTR(&nm_py_net_size_obj));
    mp_store_global(MP_QSTR_scratch_size, MP_OBJ_FROM_PTR(&nm_py_scratch_size_obj));
    mp_store_global(MP_QSTR_state_size, MP_OBJ_FROM_PTR(&nm_py_state_size_obj));
    mp_store_global(MP_QSTR_state_reset, MP_OBJ_FROM_PTR(&nm_py_state_reset_obj));
    mp_store_global(MP_QSTR_crc32, MP_OBJ_FROM_PTR(&nm_py_crc32_obj));
    mp_store_global(MP_QSTR_isa, MP_OBJ_FROM_PTR(&nm_py_isa_obj));
    mp_store_global(MP_QSTR_IDENTITY, MP_OBJ_NEW_SMALL_INT(NM_ACT_IDENTITY));
    mp_store_global(MP_QSTR_RELU, MP_OBJ_NEW_SMALL_INT(NM_ACT_RELU));
    mp_store_global(MP_QSTR_TANH, MP_OBJ_NEW_SMALL_INT(NM_ACT_TANH));
    mp_store_global(MP_QSTR_SIGMOID, MP_OBJ_NEW_SMALL_INT(NM_ACT_SIGMOID));
    mp_store_global(MP_QSTR_FAST_TANH, MP_OBJ_NEW_SMALL_INT(NM_ACT_FAST_TANH));
    mp_store_global(MP_QSTR_GRU, MP_OBJ_NEW_SMALL_INT(NM_GRU_CODE));
    mp_store_global(MP_QSTR_BLOCK, MP_OBJ_NEW_SMALL_INT(NM_BLOCK));
    mp_store_global(MP_QSTR_VERSION, MP_OBJ_NEW_SMALL_INT(NM_KERNELS_VERSION));
    mp_store_global(MP_QSTR_INT8, MP_OBJ_NEW_SMALL_INT(1));
    mp_store_global(MP_QSTR_HOME, MP_OBJ_NEW_QSTR(MP_QSTR_natmod));

    MP_DYNRUNTIME_INIT_EXIT
}

#else

static MP_DEFINE_CONST_OBJ_TYPE(
    nm_forward_type,
    MP_QSTR_Forward,
    MP_TYPE_FLAG_NONE,
    make_new, nm_forward_make_new,
    call, nm_forward_call
    );

static const mp_rom_map_elem_t nm_module_globals_table[] = {
    { MP_ROM_QSTR(MP_QSTR___name__), MP_ROM_QSTR(MP_QSTR_nm_kernels) },
    { MP_ROM_QSTR(MP_QSTR_dense), MP_ROM_PTR(&nm_py_dense_obj) },
    { MP_ROM_QSTR(MP_QSTR_dense_batch), MP_ROM_PTR(&nm_py_dense_batch_obj) },
    { MP_ROM_QSTR(MP_QSTR_mlp), MP_ROM_PTR(&nm_py_mlp_obj) },
    { MP_ROM_QSTR(MP_QSTR_Forward), MP_ROM_PTR(&nm_forward_type) },
    { MP_ROM_QSTR(MP_QSTR_pack), MP_ROM_PTR(&nm_py_pack_obj) },
    { MP_ROM_QSTR(MP_QSTR_layer_size), MP_ROM_PTR(&nm_py_layer_size_obj) },
    { MP_ROM_QSTR(MP_QSTR_net_size), MP_ROM_PTR(&nm_py_net_size_obj) },
    { MP_ROM_QSTR(MP_QSTR_scratch_size), MP_ROM_PTR(&nm_py_scratch_size_obj) },
    { MP_ROM_QSTR(MP_QSTR_state_size), MP_ROM_PTR(&nm_py_state_size_obj) },
    { MP_ROM_QSTR(MP_QSTR_state_reset), MP_ROM_PTR(&nm_py_state_reset_obj) },
    { MP_ROM_QSTR(MP_QSTR_crc32), MP_ROM_PTR(&nm_py_crc32_obj) },
    { MP_ROM_QSTR(MP_QSTR_isa), MP_ROM_PTR(&nm_py_isa_obj) },
    { MP_ROM_QSTR(MP_QSTR_IDENTITY), MP_ROM_INT(NM_ACT_IDENTITY) },
    { MP_ROM_QSTR(MP_QSTR_RELU), MP_ROM_INT(NM_ACT_RELU) },
    { MP_ROM_QSTR(MP_QSTR_TANH), MP_ROM_INT(NM_ACT_TANH) },
    { MP_ROM_QSTR(MP_QSTR_SIGMOID), MP_ROM_INT(NM_ACT_SIGMOID) },
    { MP_ROM_QSTR(MP_QSTR_FAST_TANH), MP_ROM_INT(NM_ACT_FAST_TANH) },
    { MP_ROM_QSTR(MP_QSTR_GRU), MP_ROM_INT(NM_GRU_CODE) },
    { MP_ROM_QSTR(MP_QSTR_BLOCK), MP_ROM_INT(NM_BLOCK) },
    { MP_ROM_QSTR(MP_QSTR_VERSION), MP_ROM_INT(NM_KERNELS_VERSION) },
    { MP_ROM_QSTR(MP_QSTR_INT8), MP_ROM_INT(1) },
    { MP_ROM_QSTR(MP_QSTR_HOME), MP_ROM_QSTR(MP_QSTR_usermod) },
};
static MP_DEFINE_CONST_DICT(nm_module_globals, nm_module_globals_table);

const mp_obj_module_t nm_kernels_module = {
    .base = { &mp_type_module },
    .globals = (mp_obj_dict_t *)&nm_module_globals,
};

MP_REGISTER_MODULE(MP_QSTR_nm_kernels, nm_kernels_module);

#endif

/*
 * nm_train.c - the training kernels (nm_train.h) for MicroPython, in both
 * homes from this one file:
 *   - user C module `nm_train` (firmware): this folder's micropython.mk
 *     (make ports) or micropython.cmake (esp32, rp2);
 *   - dynamic native module `nm_train_natmod` (.mpy per architecture):
 *     this folder's Makefile, where MICROPY_ENABLE_DYNRUNTIME is defined.
 * Float buffers must be array('f') and integer buffers array('I'); every
 * argument is checked (nm_args.h) before any memory is touched.
 */
#if defined(MICROPY_ENABLE_DYNRUNTIME)
#include "py/dynruntime.h"
#else
#include "py/runtime.h"
#endif

#include "nm_args.h"
#include "nm_train.h"

/* ---------------------------------------------------------------------------
 * Helpers.
 */
static nm_arr_t nmt_u32(mp_obj_t obj, const char *what, int writable) {
    return nm_get_array(obj, what, 'I', sizeof(uint32_t), writable ? MP_BUFFER_RW : MP_BUFFER_READ);
}

// Each of the n arrays *arrs[i] (named names[i]) as long as the first argument: len floats.
static void nmt_check_lens(size_t len, size_t n, const char *const *names, const nm_arr_t *const *arrs) {
    for (size_t i = 0; i < n; i++) {
        nm_check_len(names[i], len, arrs[i]->len);
    }
}

// a against each of the n arrays *bs[i] (named b_names[i]), in that order.
// (Pointers: arrays of nm_arr_t copies cost a memcpy natmods do not have.)
static void nmt_check_disjoint_n(const char *a_name, nm_arr_t a, size_t n, const char *const *b_names,
    const nm_arr_t *const *bs) {
    for (size_t i = 0; i < n; i++) {
        nm_check_disjoint(a_name, a, b_names[i], *bs[i]);
    }
}

// The replay: an array('f'), or an array('H') of binary16 halves (*half = 1).
static nm_arr_t nmt_replay(mp_obj_t obj, int writable, int *half) {
    mp_buffer_info_t info;
    mp_get_buffer_raise(obj, &info, writable ? MP_BUFFER_RW : MP_BUFFER_READ);
    if (info.typecode == 'H') {
        *half = 1;
        nm_arr_t a = { info.buf, info.len / sizeof(uint16_t) };
        return a;
    }
    *half = 0;
    return nm_get_array(obj, "replay", 'f', sizeof(float), writable ? MP_BUFFER_RW : MP_BUFFER_READ);
}

// The replay's memory in floats (rounded up), for the overlap checks.
static nm_arr_t nmt_replay_span(nm_arr_t rep, int half) {
    nm_arr_t span = { rep.buf, half ? (rep.len + 1) / 2 : rep.len };
    return span;
}

// Replay rows of `row` values: the capacity (replay must hold a non-zero whole number).
static size_t nmt_replay_capacity(nm_arr_t rep, size_t row) {
    return nm_multiple_of("replay (capacity x row)", row, rep.len);
}

// A training net: validated layout, its parameter count, and the batch of x.
typedef struct {
    nm_layout_t l;
    size_t net_len;
    size_t tape_per_sample;
} nmt_net_t;

static nmt_net_t nmt_get_net(mp_obj_t layout) {
    nmt_net_t n;
    n.l = nm_get_layout(layout, NM_LAYOUT_DENSE);
    if (!nm_train_net_size(n.l.sizes, n.l.n_layers, &n.net_len)) {
        nm_raise_overflow("layout");
    }
    n.tape_per_sample = 0;
    for (size_t i = 1; i <= n.l.n_layers; i++) {
        n.tape_per_sample += n.l.sizes[i];
    }
    return n;
}

// batch = len(x) / s0, which must be a non-zero whole number.
static size_t nmt_batch(nm_arr_t x, size_t s0) {
    return nm_multiple_of("x (s0 x batch, feature-major)", s0, x.len);
}

static void nmt_check_tape(const nmt_net_t *n, nm_arr_t tape, size_t batch) {
    size_t need;
    if (!nm_train_tape_size(n->l.sizes, n->l.n_layers, batch, &need)) {
        nm_raise_overflow("tape");
    }
    nm_check_len("tape ((s1 + ... + sL) x batch)", need, tape.len);
}

/* ---------------------------------------------------------------------------
 * Networks.
 */

// sizes(layout, batch) -> (net floats, tape floats, scratch floats)
static mp_obj_t nmt_py_sizes(mp_obj_t layout, mp_obj_t batch_obj) {
    nmt_net_t n = nmt_get_net(layout);
    size_t batch = nm_get_dim(batch_obj, "batch", 1, 1u << 24);
    size_t tape, scratch;
    if (!nm_train_tape_size(n.l.sizes, n.l.n_layers, batch, &tape)
        || !nm_train_scratch_size(n.l.sizes, n.l.n_layers, batch, &scratch)) {
        nm_raise_overflow("batch");
    }
    mp_obj_t items[3] = {
        mp_obj_new_int_from_uint(n.net_len), mp_obj_new_int_from_uint(tape), mp_obj_new_int_from_uint(scratch)
    };
    return mp_obj_new_tuple(3, items);
}
static MP_DEFINE_CONST_FUN_OBJ_2(nmt_py_sizes_obj, nmt_py_sizes);

// forward(net, layout, x, tape): batch = len(x) / s0; the output is the tape's last sL x batch floats.
static mp_obj_t nmt_py_forward(size_t n_args, const mp_obj_t *args) {
    (void)n_args;
    nm_arr_t net = nm_floats(args[0], "net", NM_READ);
    nmt_net_t n = nmt_get_net(args[1]);
    nm_arr_t x = nm_floats(args[2], "x", NM_READ);
    nm_arr_t tape = nm_floats(args[3], "tape", NM_WRITE);
    nm_check_len("net (training layout)", n.net_len, net.len);
    size_t batch = nmt_batch(x, n.l.sizes[0]);
    nmt_check_tape(&n, tape, batch);
    nm_check_disjoint("tape", tape, "x", x);
    nm_check_disjoint("tape", tape, "net", net);
    nm_train_forward(net.buf, n.l.sizes, n.l.acts, n.l.n_layers, x.buf, tape.buf, batch);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(nmt_py_forward_obj, 4, 4, nmt_py_forward);

// backward(net, layout, x, tape, dy, grad, dx, scratch): grad and dx may be None.
static mp_obj_t nmt_py_backward(size_t n_args, const mp_obj_t *args) {
    (void)n_args;
    nm_arr_t net = nm_floats(args[0], "net", NM_READ);
    nmt_net_t n = nmt_get_net(args[1]);
    nm_arr_t x = nm_floats(args[2], "x", NM_READ);
    nm_arr_t tape = nm_floats(args[3], "tape", NM_READ);
    nm_arr_t dy = nm_floats(args[4], "dy", NM_WRITE);
    nm_arr_t grad = nm_floats(args[5], "grad", NM_WRITE | NM_OR_NONE);
    nm_arr_t dx = nm_floats(args[6], "dx", NM_WRITE | NM_OR_NONE);
    nm_arr_t scratch = nm_floats(args[7], "scratch", NM_WRITE);
    nm_check_len("net (training layout)", n.net_len, net.len);
    size_t batch = nmt_batch(x, n.l.sizes[0]), need;
    nmt_check_tape(&n, tape, batch);
    nm_check_len("dy (sL x batch)", (size_t)n.l.sizes[n.l.n_layers] * batch, dy.len);
    if (grad.buf) {
        nm_check_len("grad (training layout)", n.net_len, grad.len);
    }
    if (dx.buf) {
        nm_check_len("dx (s0 x batch)", x.len, dx.len);
    }
    if (!nm_train_scratch_size(n.l.sizes, n.l.n_layers, batch, &need)) {
        nm_raise_overflow("scratch");
    }
    nm_check_min_len("scratch", need, scratch.len);
    static const char *const in_names[4] = { "net", "x", "tape", "dy" };
    nm_arr_t ins[4] = { net, x, tape, dy };
    for (int i = 0; i < 4; i++) {
        nm_check_disjoint("scratch", scratch, in_names[i], ins[i]);
        nm_check_disjoint("grad", grad, in_names[i], ins[i]);
        nm_check_disjoint("dx", dx, in_names[i], ins[i]);
        if (i < 3) {
            nm_check_disjoint("dy", dy, in_names[i], ins[i]);
        }
    }
    nm_check_disjoint("grad", grad, "dx", dx);
    nm_check_disjoint("grad", grad, "scratch", scratch);
    nm_check_disjoint("dx", dx, "scratch", scratch);
    nm_train_backward(net.buf, n.l.sizes, n.l.acts, n.l.n_layers, x.buf, tape.buf, dy.buf,
        grad.buf, dx.buf, n.l.sizes[0], scratch.buf, batch);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(nmt_py_backward_obj, 8, 8, nmt_py_backward);

// pack(dst, net, layout): the layers in nm_kernels' block-4 layout (sum of layer_size floats).
static mp_obj_t nmt_py_pack(mp_obj_t dst_obj, mp_obj_t net_obj, mp_obj_t layout) {
    nm_arr_t dst = nm_floats(dst_obj, "dst", NM_WRITE);
    nm_arr_t net = nm_floats(net_obj, "net", NM_READ);
    nmt_net_t n = nmt_get_net(layout);
    nm_check_len("net (training layout)", n.net_len, net.len);
    size_t need = 0, s;
    for (size_t i = 0; i < n.l.n_layers; i++) {
        if (!nm_layer_size(n.l.sizes[i], n.l.sizes[i + 1], &s) || !nm_add_size(need, s, &need)) {
            nm_raise_overflow("dst");
        }
    }
    nm_check_len("dst (packed layers)", need, dst.len);
    nm_check_disjoint("dst", dst, "net", net);
    nm_train_pack(dst.buf, net.buf, n.l.sizes, n.l.n_layers);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_3(nmt_py_pack_obj, nmt_py_pack);

/* ---------------------------------------------------------------------------
 * Optimiser, targets, TD3.
 */

// adam(p, g, m, v, state): state = array('f', [lr, beta1, beta2, eps, beta1^t, beta2^t]).
static mp_obj_t nmt_py_adam(size_t n_args, const mp_obj_t *args) {
    (void)n_args;
    nm_arr_t p = nm_floats(args[0], "p", NM_WRITE);
    nm_arr_t g = nm_floats(args[1], "g", NM_READ);
    nm_arr_t m = nm_floats(args[2], "m", NM_WRITE);
    nm_arr_t v = nm_floats(args[3], "v", NM_WRITE);
    nm_arr_t st = nm_floats(args[4], "state", NM_WRITE);
    static const char *const gmv_names[3] = { "g", "m", "v" }, *const pmv_names[3] = { "p", "m", "v" };
    const nm_arr_t *gmv[3] = { &g, &m, &v }, *pmv[3] = { &p, &m, &v };
    nmt_check_lens(p.len, 3, gmv_names, gmv);
    nm_check_len("state [lr, beta1, beta2, eps, beta1^t, beta2^t]", NM_ADAM_STATE, st.len);
    nmt_check_disjoint_n("p", p, 3, gmv_names, gmv);
    nm_check_disjoint("m", m, "v", v);
    nm_check_disjoint("m", m, "g", g);
    nm_check_disjoint("v", v, "g", g);
    nmt_check_disjoint_n("state", st, 3, pmv_names, pmv);
    nm_adam(p.buf, g.buf, m.buf, v.buf, p.len, st.buf);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(nmt_py_adam_obj, 5, 5, nmt_py_adam);

// polyak(target, online, tau): target += tau * (online - target).
static mp_obj_t nmt_py_polyak(mp_obj_t t_obj, mp_obj_t o_obj, mp_obj_t tau) {
    nm_arr_t t = nm_floats(t_obj, "target", NM_WRITE);
    nm_arr_t o = nm_floats(o_obj, "online", NM_READ);
    nm_check_len("online", t.len, o.len);
    nm_check_disjoint("target", t, "online", o);
    nm_polyak(t.buf, o.buf, t.len, nm_get_float(tau));
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_3(nmt_py_polyak_obj, nmt_py_polyak);

// smooth(a, noise, scale, clip): a = clip(a + clip(noise * scale, -clip, clip), -1, 1).
static mp_obj_t nmt_py_smooth(size_t n_args, const mp_obj_t *args) {
    (void)n_args;
    nm_arr_t a = nm_floats(args[0], "a", NM_WRITE);
    nm_arr_t noise = nm_floats(args[1], "noise", NM_READ);
    nm_check_len("noise", a.len, noise.len);
    nm_check_disjoint("a", a, "noise", noise);
    nm_td3_smooth(a.buf, noise.buf, a.len, nm_get_float(args[2]), nm_get_float(args[3]));
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(nmt_py_smooth_obj, 4, 4, nmt_py_smooth);

// bellman(y, q1, q2, r, not_done, gamma): y = r + gamma * not_done * min(q1, q2).
static mp_obj_t nmt_py_bellman(size_t n_args, const mp_obj_t *args) {
    (void)n_args;
    nm_arr_t y = nm_floats(args[0], "y", NM_WRITE);
    static const char *const names[4] = { "q1", "q2", "r", "not_done" };
    nm_arr_t in[4];
    for (int i = 0; i < 4; i++) {
        in[i] = nm_floats(args[1 + i], names[i], NM_READ);
    }
    for (int i = 0; i < 4; i++) {
        nm_check_len(names[i], y.len, in[i].len);
        nm_check_disjoint("y", y, names[i], in[i]);
    }
    nm_td3_bellman(y.buf, in[0].buf, in[1].buf, in[2].buf, in[3].buf, y.len, nm_get_float(args[5]));
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(nmt_py_bellman_obj, 6, 6, nmt_py_bellman);

// critic_grad(dq, q, y, scale, loss): dq = (q - y) * scale; loss[0] = mean (q - y)^2 (loss may be None).
static mp_obj_t nmt_py_critic_grad(size_t n_args, const mp_obj_t *args) {
    (void)n_args;
    nm_arr_t dq = nm_floats(args[0], "dq", NM_WRITE);
    nm_arr_t q = nm_floats(args[1], "q", NM_READ);
    nm_arr_t y = nm_floats(args[2], "y", NM_READ);
    float scale = nm_get_float(args[3]);
    nm_arr_t loss = nm_floats(args[4], "loss", NM_WRITE | NM_OR_NONE);
    static const char *const names[2] = { "q", "y" };
    const nm_arr_t *qy[2] = { &q, &y };
    nmt_check_lens(dq.len, 2, names, qy);
    if (loss.buf) {
        nm_check_len("loss", 1, loss.len);
    }
    nmt_check_disjoint_n("dq", dq, 2, names, qy);
    nm_check_disjoint("loss", loss, "dq", dq);
    float l = nm_td3_critic_grad(dq.buf, q.buf, y.buf, dq.len, scale);
    if (loss.buf) {
        ((float *)loss.buf)[0] = l;
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(nmt_py_critic_grad_obj, 5, 5, nmt_py_critic_grad);

// fill(dst, value)
static mp_obj_t nmt_py_fill(mp_obj_t dst_obj, mp_obj_t value) {
    nm_arr_t dst = nm_floats(dst_obj, "dst", NM_WRITE);
    float v = nm_get_float(value);
    float *d = dst.buf;
    for (size_t i = 0; i < dst.len; i++) {
        d[i] = v;
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_2(nmt_py_fill_obj, nmt_py_fill);

// copy(dst, dst_offset, src, src_offset, n): n floats; the ranges may not overlap.
static mp_obj_t nmt_py_copy(size_t n_args, const mp_obj_t *args) {
    (void)n_args;
    nm_arr_t dst = nm_floats(args[0], "dst", NM_WRITE);
    size_t d_off = nm_get_dim(args[1], "dst_offset", 0, dst.len);
    nm_arr_t src = nm_floats(args[2], "src", NM_READ);
    size_t s_off = nm_get_dim(args[3], "src_offset", 0, src.len);
    size_t n = nm_get_dim(args[4], "n", 0, SIZE_MAX / 8);
    if (n > dst.len - d_off) {
        nm_raise_expected("n (room in dst after dst_offset)", "<= ", dst.len - d_off, "", n);
    }
    if (n > src.len - s_off) {
        nm_raise_expected("n (floats in src after src_offset)", "<= ", src.len - s_off, "", n);
    }
    nm_arr_t dr = { (float *)dst.buf + d_off, n }, sr = { (float *)src.buf + s_off, n };
    nm_check_disjoint("dst range", dr, "src range", sr);
    float *d = dr.buf;
    const float *s = sr.buf;
    for (size_t i = 0; i < n; i++) {
        d[i] = s[i];
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(nmt_py_copy_obj, 5, 5, nmt_py_copy);

/* ---------------------------------------------------------------------------
 * Random numbers: state is array('I') of 4 words.
 */
static uint32_t *nmt_rng(mp_obj_t obj) {
    nm_arr_t s = nmt_u32(obj, "rng state", 1);
    if (s.len != 4) {
        nm_raise_expected("rng state", "", 4, " words (array('I'))", s.len);
    }
    return s.buf;
}

// seed(state, seed): seed is an int (any size; its low 32 bits are used).
static mp_obj_t nmt_py_seed(mp_obj_t st, mp_obj_t seed) {
    uint32_t *s = nmt_rng(st);
    nm_rng_seed(s, (uint32_t)mp_obj_get_int_truncated(seed));
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_2(nmt_py_seed_obj, nmt_py_seed);

// uniform(state, out, lo, hi)
static mp_obj_t nmt_py_uniform(size_t n_args, const mp_obj_t *args) {
    (void)n_args;
    uint32_t *s = nmt_rng(args[0]);
    nm_arr_t out = nm_floats(args[1], "out", NM_WRITE);
    nm_rng_uniform(s, out.buf, out.len, nm_get_float(args[2]), nm_get_float(args[3]));
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(nmt_py_uniform_obj, 4, 4, nmt_py_uniform);

// normal(state, out): standard normal samples.
static mp_obj_t nmt_py_normal(mp_obj_t st, mp_obj_t out_obj) {
    uint32_t *s = nmt_rng(st);
    nm_arr_t out = nm_floats(out_obj, "out", NM_WRITE);
    nm_rng_normal(s, out.buf, out.len);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_2(nmt_py_normal_obj, nmt_py_normal);

// randint(state, out, n): out (array('I')) filled with integers in [0, n), n <= 2^24.
static mp_obj_t nmt_py_randint(mp_obj_t st, mp_obj_t out_obj, mp_obj_t n_obj) {
    uint32_t *s = nmt_rng(st);
    nm_arr_t out = nmt_u32(out_obj, "out", 1);
    size_t n = nm_get_dim(n_obj, "n", 1, (size_t)1 << 24);
    nm_rng_int(s, out.buf, out.len, (uint32_t)n);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_3(nmt_py_randint_obj, nmt_py_randint);

/* ---------------------------------------------------------------------------
 * Replay buffer: rows [s (o), a (na), r, not_done, s' (o)] in an array('f'),
 * or in an array('H') of binary16 halves (twice the rows in the same RAM).
 */

// push(replay, pos, s, a, r, not_done, s2): write row pos.
static mp_obj_t nmt_py_push(size_t n_args, const mp_obj_t *args) {
    (void)n_args;
    int half;
    nm_arr_t rep = nmt_replay(args[0], 1, &half);
    nm_arr_t s = nm_floats(args[2], "s", NM_READ);
    nm_arr_t a = nm_floats(args[3], "a", NM_READ);
    float r = nm_get_float(args[4]), nd = nm_get_float(args[5]);
    nm_arr_t s2 = nm_floats(args[6], "s2", NM_READ);
    if (s.len == 0 || a.len == 0) {
        nm_raise_text(s.len ? "a" : "s", ": must not be empty");
    }
    nm_check_len("s2 (as s)", s.len, s2.len);
    size_t row = 2 * s.len + a.len + 2; // buffers fit in memory: no overflow
    size_t pos = nm_get_dim(args[1], "pos", 0, nmt_replay_capacity(rep, row) - 1);
    static const char *const in_names[3] = { "s", "a", "s2" };
    const nm_arr_t *ins[3] = { &s, &a, &s2 };
    nmt_check_disjoint_n("replay", nmt_replay_span(rep, half), 3, in_names, ins);
    nm_replay_push(rep.buf, half, pos, s.buf, a.buf, r, nd, s2.buf, s.len, a.len);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(nmt_py_push_obj, 7, 7, nmt_py_push);

// gather(replay, idx, n_stored, sa, r, not_done, s2): batch = len(idx); feature-major
// sa ((o + na) x batch) and s2 (o x batch); every idx must be < n_stored.
static mp_obj_t nmt_py_gather(size_t n_args, const mp_obj_t *args) {
    (void)n_args;
    int half;
    nm_arr_t rep = nmt_replay(args[0], 0, &half);
    nm_arr_t idx = nmt_u32(args[1], "idx", 0);
    nm_arr_t sa = nm_floats(args[3], "sa", NM_WRITE);
    nm_arr_t r = nm_floats(args[4], "r", NM_WRITE);
    nm_arr_t nd = nm_floats(args[5], "not_done", NM_WRITE);
    nm_arr_t s2 = nm_floats(args[6], "s2", NM_WRITE);
    size_t B = idx.len;
    if (B == 0) {
        nm_raise_text("idx", ": must not be empty");
    }
    nm_check_len("r (batch)", B, r.len);
    nm_check_len("not_done (batch)", B, nd.len);
    size_t o = nm_multiple_of("s2 (o x batch)", B, s2.len);
    if (sa.len % B || sa.len / B <= o) {
        nm_raise_expected("sa ((o + na) x batch)", "a multiple of batch above ", s2.len, " floats", sa.len);
    }
    size_t na = sa.len / B - o, row = 2 * o + na + 2;
    size_t n_stored = nm_get_dim(args[2], "n_stored", 1, nmt_replay_capacity(rep, row));
    const uint32_t *ix = idx.buf;
    for (size_t k = 0; k < B; k++) {
        if (ix[k] >= n_stored) {
            nm_raise_expected("idx entry", "< ", n_stored, " (rows stored)", ix[k]);
        }
    }
    const nm_arr_t span = nmt_replay_span(rep, half);
    static const char *const out_names[4] = { "sa", "r", "not_done", "s2" };
    nm_arr_t outs[4] = { sa, r, nd, s2 };
    for (int i = 0; i < 4; i++) {
        nm_check_disjoint(out_names[i], outs[i], "replay", span);
        for (int j = i + 1; j < 4; j++) {
            nm_check_disjoint(out_names[i], outs[i], out_names[j], outs[j]);
        }
    }
    nm_replay_gather(rep.buf, half, ix, B, o, na, sa.buf, r.buf, nd.buf, s2.buf);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(nmt_py_gather_obj, 7, 7, nmt_py_gather);

/* ---------------------------------------------------------------------------
 * The module.
 */
#if defined(MICROPY_ENABLE_DYNRUNTIME)

mp_obj_t mpy_init(mp_obj_fun_bc_t *self, size_t n_args, size_t n_kw, mp_obj_t *args) {
    MP_DYNRUNTIME_INIT_ENTRY

    mp_store_global(MP_QSTR_sizes, MP_OBJ_FROM_PTR(&nmt_py_sizes_obj));
    mp_store_global(MP_QSTR_forward, MP_OBJ_FROM_PTR(&nmt_py_forward_obj));
    mp_store_global(MP_QSTR_backward, MP_OBJ_FROM_PTR(&nmt_py_backward_obj));
    mp_store_global(MP_QSTR_pack, MP_OBJ_FROM_PTR(&nmt_py_pack_obj));
    mp_store_global(MP_QSTR_adam, MP_OBJ_FROM_PTR(&nmt_py_adam_obj));
    mp_store_global(MP_QSTR_polyak, MP_OBJ_FROM_PTR(&nmt_py_polyak_obj));
    mp_store_global(MP_QSTR_smooth, MP_OBJ_FROM_PTR(&nmt_py_smooth_obj));
    mp_store_global(MP_QSTR_bellman, MP_OBJ_FROM_PTR(&nmt_py_bellman_obj));
    mp_store_global(MP_QSTR_critic_grad, MP_OBJ_FROM_PTR(&nmt_py_critic_grad_obj));
    mp_store_global(MP_QSTR_fill, MP_OBJ_FROM_PTR(&nmt_py_fill_obj));
    mp_store_global(MP_QSTR_copy, MP_OBJ_FROM_PTR(&nmt_py_copy_obj));
    mp_store_global(MP_QSTR_seed, MP_OBJ_FROM_PTR(&nmt_py_seed_obj));
    mp_store_global(MP_QSTR_uniform, MP_OBJ_FROM_PTR(&nmt_py_uniform_obj));
    mp_store_global(MP_QSTR_normal, MP_OBJ_FROM_PTR(&nmt_py_normal_obj));
    mp_store_global(MP_QSTR_randint, MP_OBJ_FROM_PTR(&nmt_py_randint_obj));
    mp_store_global(MP_QSTR_push, MP_OBJ_FROM_PTR(&nmt_py_push_obj));
    mp_store_global(MP_QSTR_gather, MP_OBJ_FROM_PTR(&nmt_py_gather_obj));
    mp_store_global(MP_QSTR_ADAM_STATE, MP_OBJ_NEW_SMALL_INT(NM_ADAM_STATE));
    mp_store_global(MP_QSTR_VERSION, MP_OBJ_NEW_SMALL_INT(NM_TRAIN_VERSION));
    mp_store_global(MP_QSTR_HOME, MP_OBJ_NEW_QSTR(MP_QSTR_natmod));

    MP_DYNRUNTIME_INIT_EXIT
}

#else

static const mp_rom_map_elem_t nmt_module_globals_table[] = {
    { MP_ROM_QSTR(MP_QSTR___name__), MP_ROM_QSTR(MP_QSTR_nm_train) },
    { MP_ROM_QSTR(MP_QSTR_sizes), MP_ROM_PTR(&nmt_py_sizes_obj) },
    { MP_ROM_QSTR(MP_QSTR_forward), MP_ROM_PTR(&nmt_py_forward_obj) },
    { MP_ROM_QSTR(MP_QSTR_backward), MP_ROM_PTR(&nmt_py_backward_obj) },
    { MP_ROM_QSTR(MP_QSTR_pack), MP_ROM_PTR(&nmt_py_pack_obj) },
    { MP_ROM_QSTR(MP_QSTR_adam), MP_ROM_PTR(&nmt_py_adam_obj) },
    { MP_ROM_QSTR(MP_QSTR_polyak), MP_ROM_PTR(&nmt_py_polyak_obj) },
    { MP_ROM_QSTR(MP_QSTR_smooth), MP_ROM_PTR(&nmt_py_smooth_obj) },
    { MP_ROM_QSTR(MP_QSTR_bellman), MP_ROM_PTR(&nmt_py_bellman_obj) },
    { MP_ROM_QSTR(MP_QSTR_critic_grad), MP_ROM_PTR(&nmt_py_critic_grad_obj) },
    { MP_ROM_QSTR(MP_QSTR_fill), MP_ROM_PTR(&nmt_py_fill_obj) },
    { MP_ROM_QSTR(MP_QSTR_copy), MP_ROM_PTR(&nmt_py_copy_obj) },
    { MP_ROM_QSTR(MP_QSTR_seed), MP_ROM_PTR(&nmt_py_seed_obj) },
    { MP_ROM_QSTR(MP_QSTR_uniform), MP_ROM_PTR(&nmt_py_uniform_obj) },
    { MP_ROM_QSTR(MP_QSTR_normal), MP_ROM_PTR(&nmt_py_normal_obj) },
    { MP_ROM_QSTR(MP_QSTR_randint), MP_ROM_PTR(&nmt_py_randint_obj) },
    { MP_ROM_QSTR(MP_QSTR_push), MP_ROM_PTR(&nmt_py_push_obj) },
    { MP_ROM_QSTR(MP_QSTR_gather), MP_ROM_PTR(&nmt_py_gather_obj) },
    { MP_ROM_QSTR(MP_QSTR_ADAM_STATE), MP_ROM_INT(NM_ADAM_STATE) },
    { MP_ROM_QSTR(MP_QSTR_VERSION), MP_ROM_INT(NM_TRAIN_VERSION) },
    { MP_ROM_QSTR(MP_QSTR_HOME), MP_ROM_QSTR(MP_QSTR_usermod) },
};
static MP_DEFINE_CONST_DICT(nmt_module_globals, nmt_module_globals_table);

const mp_obj_module_t nm_train_module = {
    .base = { &mp_type_module },
    .globals = (mp_obj_dict_t *)&nmt_module_globals,
};

MP_REGISTER_MODULE(MP_QSTR_nm_train, nm_train_module);

#endif

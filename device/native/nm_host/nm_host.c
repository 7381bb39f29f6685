/*
 * nm_host.c - the training kernels (nm_train.h) as a CPython extension,
 * neuromotor._nm_host: the host's TD3 update for a whole population in one call,
 * through the same forward, backward, Adam, Polyak, smoothing and Bellman code
 * the boards run.
 *
 * Arrays come in through the buffer protocol (NumPy or anything else that
 * exports one): float32 ('f') or uint32 ('I'), C-contiguous, of the exact
 * shape, writable where written, no two overlapping where one is written.
 * Anything else is a ValueError before any memory is touched. The arithmetic
 * runs with the GIL released.
 *
 * Parameters stay in the host's layout (neuromotor.nn.mlp: one flat vector per
 * network family, layer after layer, each layer an augmented (in + 1) x
 * (out (+ 1)) matrix per member). Each agent's networks are copied into the
 * training layout of nm_mlp_train.h for the passes, and their gradients copied
 * back (zero on the constant column, which Adam and Polyak then leave as it is).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

#include "nm_train.h"

/* ---------------------------------------------------------------------------
 * Buffers.
 */
#define NMH_MAX_BUFS 16

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

// The buffer of obj as a C-contiguous array of `type` ('f' float32, 'I' uint32) with
// `ndim` axes; shape[i] >= 0 must match, shape[i] < 0 is filled in. NULL (ValueError) if not.
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
            type == 'f' ? "float32" : "uint32");
        return NULL;
    }
    bs->name[bs->n] = name;
    bs->writable[bs->n] = writable;
    bs->n++;
    const char *fmt = v->format ? v->format : "B";
    if (*fmt == '@' || *fmt == '=' || *fmt == '<') {
        fmt++;
    }
    const int ok_type = type == 'f' ? strcmp(fmt, "f") == 0 : (strcmp(fmt, "I") == 0 || strcmp(fmt, "L") == 0);
    if (!ok_type || v->itemsize != 4) {
        PyErr_Format(PyExc_ValueError, "%s must be %s, got format '%s'", name, type == 'f' ? "float32" : "uint32", fmt);
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

/* ---------------------------------------------------------------------------
 * Networks: sizes and activations, and the host layout's offsets.
 */
typedef struct {
    uint16_t sizes[NM_MAX_LAYERS + 1], acts[NM_MAX_LAYERS];
    size_t n_layers, members;
    size_t off[NM_MAX_LAYERS + 1];   // host layout: start of each layer's block of members
    size_t host_len, train_len, tape_per_sample;
} nmh_net;

// The host layout's offsets for a family of `members` networks. Sizes <= 4096, at most
// 32 layers and members <= 2^21: no overflow.
static void nmh_set_members(nmh_net *net, size_t members) {
    net->members = members;
    net->off[0] = 0;
    net->tape_per_sample = 0;
    for (size_t l = 0; l < net->n_layers; l++) {
        const size_t ow = net->sizes[l + 1] + (l + 1 < net->n_layers);
        net->off[l + 1] = net->off[l] + members * ((size_t)net->sizes[l] + 1) * ow;
        net->tape_per_sample += net->sizes[l + 1];
    }
    net->host_len = net->off[net->n_layers];
    nm_train_net_size(net->sizes, net->n_layers, &net->train_len);
}

// layout = (sizes, activations) as tuples of ints; members: networks in the family.
static int nmh_parse_net(PyObject *layout, const char *name, size_t members, nmh_net *net) {
    PyObject *sizes, *acts;
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

// Member j of a host-layout family into the training layout (W rows, then b).
static void nmh_to_train(float *dst, const float *flat, const nmh_net *net, size_t j) {
    for (size_t l = 0; l < net->n_layers; l++) {
        const size_t n_in = net->sizes[l], n_out = net->sizes[l + 1], ow = n_out + (l + 1 < net->n_layers);
        const float *A = flat + net->off[l] + j * (n_in + 1) * ow;
        for (size_t i = 0; i <= n_in; i++, dst += n_out) {
            memcpy(dst, A + i * ow, n_out * sizeof(float));
        }
    }
}

// A training-layout gradient into member j of a host-layout family (0 on the constant column).
static void nmh_to_host(float *flat, const float *g, const nmh_net *net, size_t j) {
    for (size_t l = 0; l < net->n_layers; l++) {
        const size_t n_in = net->sizes[l], n_out = net->sizes[l + 1], ow = n_out + (l + 1 < net->n_layers);
        float *A = flat + net->off[l] + j * (n_in + 1) * ow;
        for (size_t i = 0; i <= n_in; i++, g += n_out) {
            memcpy(A + i * ow, g, n_out * sizeof(float));
            if (ow > n_out) {
                A[i * ow + n_out] = 0.0f;
            }
        }
    }
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
        Py_ssize_t shape[1] = {i == 5 ? NM_ADAM_STATE : (Py_ssize_t)net->host_len};
        *dst[i] = nmh_get(bs, PyTuple_GET_ITEM(tuple, i), parts[i], 'f', 1, 1, shape);
        if (!*dst[i]) {
            return 0;
        }
    }
    return 1;
}

/* ---------------------------------------------------------------------------
 * td3_update: one TD3 update of every agent.
 */
typedef struct {
    const nmh_net *actor, *critic;
    nmh_fam a, c;
    const float *replay, *noise;
    const uint32_t *idx;
    size_t P, cap, width, B, o, na, size;
    int update_actor;
    float gamma, tau, policy_noise, noise_clip;
} nmh_td3;

// Workspace of one agent's passes (floats): see nmh_td3_run for the uses.
typedef struct {
    float *aw, *atw, *cw[2], *ctw[2], *grad, *scratch;
    float *x_next, *noise_t, *tape_ta, *tape_tc, *q_next[2];
    float *xc, *r, *nd, *y, *dq, *tape_c;
    float *xa, *tape_a, *tape_q, *dx;
} nmh_ws;

static size_t nmh_max(size_t a, size_t b) {
    return a > b ? a : b;
}

static float *nmh_ws_alloc(nmh_ws *w, const nmh_td3 *t) {
    const nmh_net *an = t->actor, *cn = t->critic;
    const size_t B = t->B, B2 = 2 * B, in = t->o + t->na;
    size_t sa = 0, sc = 0;
    nm_train_scratch_size(an->sizes, an->n_layers, B, &sa);
    nm_train_scratch_size(cn->sizes, cn->n_layers, B, &sc);
    const size_t lens[] = {
        an->train_len, an->train_len, cn->train_len, cn->train_len, cn->train_len, cn->train_len,
        nmh_max(an->train_len, cn->train_len), nmh_max(sa, sc),
        in * B2, t->na * B2, an->tape_per_sample * B2, cn->tape_per_sample * B2, B2, B2,
        in * B, B, B, B, B, cn->tape_per_sample * B,
        in * B, an->tape_per_sample * B, cn->tape_per_sample * B, in * B,
    };
    float **ptrs[] = {
        &w->aw, &w->atw, &w->cw[0], &w->cw[1], &w->ctw[0], &w->ctw[1], &w->grad, &w->scratch,
        &w->x_next, &w->noise_t, &w->tape_ta, &w->tape_tc, &w->q_next[0], &w->q_next[1],
        &w->xc, &w->r, &w->nd, &w->y, &w->dq, &w->tape_c,
        &w->xa, &w->tape_a, &w->tape_q, &w->dx,
    };
    size_t total = 0;
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        total += (lens[i] + 15) & ~(size_t)15; // 64-byte steps keep every buffer aligned as the first
    }
    float *mem = PyMem_RawMalloc(total * sizeof(float));
    if (mem) {
        float *p = mem;
        for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
            *ptrs[i] = p;
            p += (lens[i] + 15) & ~(size_t)15;
        }
    }
    return mem;
}

// Row `which` (0, 1: the critics' minibatches, 2: the actor's) sample b of agent k.
static const float *nmh_row(const nmh_td3 *t, size_t k, size_t which, size_t b) {
    const uint32_t raw = t->idx[(k * 3 + which) * t->B + b];
    return t->replay + (k * t->cap + raw % t->size) * t->width;
}

// Replay rows are [act (na), obs (o), 1, reward, not_done, next_obs (o), 1].
static void nmh_critics(const nmh_td3 *t, nmh_ws *w, size_t k) {
    const nmh_net *an = t->actor, *cn = t->critic;
    const size_t B = t->B, B2 = 2 * B, o = t->o, na = t->na, in = o + na;
    nmh_to_train(w->atw, t->a.t, an, k);
    for (size_t c = 0; c < 2; c++) {
        nmh_to_train(w->cw[c], t->c.p, cn, 2 * k + c);
        nmh_to_train(w->ctw[c], t->c.t, cn, 2 * k + c);
    }
    // the target networks see both minibatches at once: samples [minibatch 0 | minibatch 1]
    for (size_t c = 0; c < 2; c++) {
        for (size_t b = 0; b < B; b++) {
            const float *row = nmh_row(t, k, c, b);
            for (size_t i = 0; i < o; i++) {
                w->x_next[(na + i) * B2 + c * B + b] = row[in + 3 + i];
            }
            for (size_t j = 0; j < na; j++) {
                w->noise_t[j * B2 + c * B + b] = t->noise[((k * 2 + c) * B + b) * na + j];
            }
        }
    }
    // target policy smoothing: a' = clip(pi'(s') + clip(noise * sigma, -c, c), -1, 1)
    nm_train_forward(w->atw, an->sizes, an->acts, an->n_layers, w->x_next + na * B2, w->tape_ta, B2);
    memcpy(w->x_next, w->tape_ta + (an->tape_per_sample - na) * B2, na * B2 * sizeof(float));
    nm_td3_smooth(w->x_next, w->noise_t, na * B2, t->policy_noise, t->noise_clip);
    for (size_t c = 0; c < 2; c++) {
        nm_train_forward(w->ctw[c], cn->sizes, cn->acts, cn->n_layers, w->x_next, w->tape_tc, B2);
        memcpy(w->q_next[c], w->tape_tc + (cn->tape_per_sample - 1) * B2, B2 * sizeof(float));
    }
    // critic c regresses on y = r + gamma * not_done * min(Q1', Q2') of its own minibatch
    for (size_t c = 0; c < 2; c++) {
        for (size_t b = 0; b < B; b++) {
            const float *row = nmh_row(t, k, c, b);
            for (size_t i = 0; i < in; i++) {
                w->xc[i * B + b] = row[i];
            }
            w->r[b] = row[in + 1];
            w->nd[b] = row[in + 2];
        }
        nm_td3_bellman(w->y, w->q_next[0] + c * B, w->q_next[1] + c * B, w->r, w->nd, B, t->gamma);
        nm_train_forward(w->cw[c], cn->sizes, cn->acts, cn->n_layers, w->xc, w->tape_c, B);
        nm_td3_critic_grad(w->dq, w->tape_c + (cn->tape_per_sample - 1) * B, w->y, B, (float)(2.0 / (double)B));
        nm_train_backward(w->cw[c], cn->sizes, cn->acts, cn->n_layers, w->xc, w->tape_c, w->dq, w->grad, NULL,
            w->scratch, B);
        nmh_to_host(t->c.g, w->grad, cn, 2 * k + c);
    }
}

// Deterministic policy gradient through critic 1: minimise -mean Q1(s, pi(s)).
static void nmh_actor(const nmh_td3 *t, nmh_ws *w, size_t k) {
    const nmh_net *an = t->actor, *cn = t->critic;
    const size_t B = t->B, o = t->o, na = t->na;
    nmh_to_train(w->aw, t->a.p, an, k);
    nmh_to_train(w->cw[0], t->c.p, cn, 2 * k);
    for (size_t b = 0; b < B; b++) {
        const float *row = nmh_row(t, k, 2, b);
        for (size_t i = 0; i < o; i++) {
            w->xa[(na + i) * B + b] = row[na + i];
        }
    }
    nm_train_forward(w->aw, an->sizes, an->acts, an->n_layers, w->xa + na * B, w->tape_a, B);
    memcpy(w->xa, w->tape_a + (an->tape_per_sample - na) * B, na * B * sizeof(float));
    nm_train_forward(w->cw[0], cn->sizes, cn->acts, cn->n_layers, w->xa, w->tape_q, B);
    const float d = (float)(-1.0 / (double)B);
    for (size_t b = 0; b < B; b++) {
        w->dq[b] = d;
    }
    nm_train_backward(w->cw[0], cn->sizes, cn->acts, cn->n_layers, w->xa, w->tape_q, w->dq, NULL, w->dx,
        w->scratch, B);
    nm_train_backward(w->aw, an->sizes, an->acts, an->n_layers, w->xa + na * B, w->tape_a, w->dx, w->grad, NULL,
        w->scratch, B);
    nmh_to_host(t->a.g, w->grad, an, k);
}

static void nmh_td3_run(const nmh_td3 *t, nmh_ws *w) {
    for (size_t k = 0; k < t->P; k++) {
        nmh_critics(t, w, k);
    }
    nm_adam(t->c.p, t->c.g, t->c.m, t->c.v, t->critic->host_len, t->c.st);
    if (t->update_actor) {
        for (size_t k = 0; k < t->P; k++) {
            nmh_actor(t, w, k);
        }
        nm_adam(t->a.p, t->a.g, t->a.m, t->a.v, t->actor->host_len, t->a.st);
        nm_polyak(t->a.t, t->a.p, t->actor->host_len, t->tau);
        nm_polyak(t->c.t, t->c.p, t->critic->host_len, t->tau);
    }
}

static const char td3_update_doc[] =
    "td3_update(actor, critic, actor_layout, critic_layout, replay, replay_size, idx, noise, update_actor,\n"
    "           gamma, tau, policy_noise, noise_clip)\n\n"
    "One TD3 update of P agents, in place. actor and critic: (params, target, grad, adam_m, adam_v,\n"
    "adam_state) of the family (P actors, P x 2 critics) in neuromotor.nn.mlp's flat layout; adam_state is\n"
    "[lr, beta1, beta2, eps, beta1^t, beta2^t] (t advanced here). layouts: (sizes, activations) with\n"
    "activations 0 identity, 1 relu, 2 tanh. replay (P, capacity, row) float32, rows\n"
    "[a, s, 1, r, not_done, s', 1]; idx (P, 3, B) uint32 raw draws, taken modulo replay_size: minibatch\n"
    "0 and 1 for the critics, 2 for the actor; noise (P, 2, B, a): the critics' target policy noise.\n"
    "The critics always learn; the actor, then both targets, when update_actor is true.";

static PyObject *nmh_td3_update(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *actor, *critic, *alayout, *clayout, *replay, *idx, *noise;
    Py_ssize_t size;
    int update_actor;
    double gamma, tau, pn, nc;
    if (!PyArg_ParseTuple(args, "OOOOOnOOpdddd:td3_update", &actor, &critic, &alayout, &clayout, &replay, &size,
            &idx, &noise, &update_actor, &gamma, &tau, &pn, &nc)) {
        return NULL;
    }
    nmh_net an, cn;
    nmh_bufs bs = {.n = 0};
    nmh_td3 t;
    PyObject *result = NULL;
    if (!nmh_parse_net(alayout, "actor_layout", 1, &an) || !nmh_parse_net(clayout, "critic_layout", 2, &cn)) {
        return NULL;
    }
    t.o = an.sizes[0];
    t.na = an.sizes[an.n_layers];
    if (cn.sizes[0] != t.o + t.na || cn.sizes[cn.n_layers] != 1) {
        PyErr_SetString(PyExc_ValueError, "critic_layout must take obs + act inputs to one output");
        return NULL;
    }
    Py_ssize_t rshape[3] = {-1, -1, (Py_ssize_t)(2 * t.o + t.na + 4)};
    t.replay = nmh_get(&bs, replay, "replay", 'f', 0, 3, rshape);
    if (!t.replay) {
        goto out;
    }
    t.P = (size_t)rshape[0];
    t.cap = (size_t)rshape[1];
    t.width = (size_t)rshape[2];
    if (t.P < 1 || t.P > (1 << 20) || t.cap < 1) {
        PyErr_SetString(PyExc_ValueError, "replay must hold at least one agent (at most 2^20) and one row");
        goto out;
    }
    if (size < 1 || (size_t)size > t.cap) {
        PyErr_Format(PyExc_ValueError, "replay_size must be from 1 to the capacity %zu, got %zd", t.cap, size);
        goto out;
    }
    t.size = (size_t)size;
    Py_ssize_t ishape[3] = {(Py_ssize_t)t.P, 3, -1};
    t.idx = nmh_get(&bs, idx, "idx", 'I', 0, 3, ishape);
    if (!t.idx) {
        goto out;
    }
    t.B = (size_t)ishape[2];
    if (t.B < 1 || t.B > (1 << 20)) {
        PyErr_SetString(PyExc_ValueError, "idx: the batch must be from 1 to 2^20 samples");
        goto out;
    }
    Py_ssize_t nshape[4] = {(Py_ssize_t)t.P, 2, (Py_ssize_t)t.B, (Py_ssize_t)t.na};
    t.noise = nmh_get(&bs, noise, "noise", 'f', 0, 4, nshape);
    if (!t.noise) {
        goto out;
    }
    nmh_set_members(&an, t.P);
    nmh_set_members(&cn, 2 * t.P);
    if (!nmh_get_family(&bs, actor, "actor", &an, &t.a) || !nmh_get_family(&bs, critic, "critic", &cn, &t.c)
        || !nmh_check_disjoint(&bs)) {
        goto out;
    }
    t.actor = &an;
    t.critic = &cn;
    t.update_actor = update_actor;
    t.gamma = (float)gamma;
    t.tau = (float)tau;
    t.policy_noise = (float)pn;
    t.noise_clip = (float)nc;
    nmh_ws w;
    float *mem = nmh_ws_alloc(&w, &t);
    if (!mem) {
        PyErr_NoMemory();
        goto out;
    }
    Py_BEGIN_ALLOW_THREADS
    nmh_td3_run(&t, &w);
    Py_END_ALLOW_THREADS
    PyMem_RawFree(mem);
    result = Py_NewRef(Py_None);
out:
    nmh_release(&bs);
    return result;
}

/* ---------------------------------------------------------------------------
 * act: the actors' exploring actions for one observation each.
 */
static const char act_doc[] =
    "act(params, actor_layout, obs, noise, scale, out)\n\n"
    "out[k] = clip(pi_k(obs[k]) + noise[k] * scale, -1, 1) for the P actors of a family in\n"
    "neuromotor.nn.mlp's flat layout: obs (P, obs_dim), noise and out (P, act_dim), float32.";

static PyObject *nmh_act(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *params, *layout, *obs, *noise, *out;
    double scale;
    if (!PyArg_ParseTuple(args, "OOOOdO:act", &params, &layout, &obs, &noise, &scale, &out)) {
        return NULL;
    }
    nmh_net an;
    if (!nmh_parse_net(layout, "actor_layout", 1, &an)) {
        return NULL;
    }
    nmh_bufs bs = {.n = 0};
    PyObject *result = NULL;
    const size_t o = an.sizes[0], na = an.sizes[an.n_layers];
    Py_ssize_t oshape[2] = {-1, (Py_ssize_t)o};
    const float *x = nmh_get(&bs, obs, "obs", 'f', 0, 2, oshape);
    if (!x) {
        goto out;
    }
    const size_t P = (size_t)oshape[0];
    if (P < 1 || P > (1 << 20)) {
        PyErr_SetString(PyExc_ValueError, "obs must hold from 1 to 2^20 agents");
        goto out;
    }
    nmh_set_members(&an, P);
    Py_ssize_t pshape[1] = {(Py_ssize_t)an.host_len}, nshape[2] = {(Py_ssize_t)P, (Py_ssize_t)na};
    Py_ssize_t ashape[2] = {(Py_ssize_t)P, (Py_ssize_t)na};
    const float *p = nmh_get(&bs, params, "params", 'f', 0, 1, pshape);
    const float *eps = p ? nmh_get(&bs, noise, "noise", 'f', 0, 2, nshape) : NULL;
    float *a = eps ? nmh_get(&bs, out, "out", 'f', 1, 2, ashape) : NULL;
    if (!a || !nmh_check_disjoint(&bs)) {
        goto out;
    }
    float *mem = PyMem_RawMalloc((an.train_len + an.tape_per_sample) * sizeof(float));
    if (!mem) {
        PyErr_NoMemory();
        goto out;
    }
    const float s = (float)scale;
    Py_BEGIN_ALLOW_THREADS
    float *net = mem, *tape = mem + an.train_len;
    for (size_t k = 0; k < P; k++) {
        nmh_to_train(net, p, &an, k);
        nm_train_forward(net, an.sizes, an.acts, an.n_layers, x + k * o, tape, 1);
        memcpy(a + k * na, tape + an.tape_per_sample - na, na * sizeof(float));
        // exploration: the smoothing step with no clip on the noise
        nm_td3_smooth(a + k * na, eps + k * na, na, s, INFINITY);
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(mem);
    result = Py_NewRef(Py_None);
out:
    nmh_release(&bs);
    return result;
}

/* ---------------------------------------------------------------------------
 * Instruction-set path.
 */
static PyObject *nmh_isa(PyObject *self, PyObject *args) {
    (void)self;
    int want = -1;
    if (!PyArg_ParseTuple(args, "|i:isa", &want)) {
        return NULL;
    }
    if (want >= 0 && !nm_isa_set(want)) {
        PyErr_Format(PyExc_ValueError, "instruction-set path %d is not available on this CPU", want);
        return NULL;
    }
    return PyLong_FromLong(nm_isa());
}

static PyMethodDef nmh_methods[] = {
    {"td3_update", nmh_td3_update, METH_VARARGS, td3_update_doc},
    {"act", nmh_act, METH_VARARGS, act_doc},
    {"isa", nmh_isa, METH_VARARGS,
     "isa([path]) -> the matrix kernels' path: 1 scalar, 2 SSE2, 3 AVX2+FMA; with path, force it (0: the best)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef nmh_module = {
    PyModuleDef_HEAD_INIT, "neuromotor._nm_host",
    "neuromotor's training kernels (device/native/include) for the host.", -1, nmh_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__nm_host(void) {
    PyObject *m = PyModule_Create(&nmh_module);
    if (m && PyModule_AddIntConstant(m, "VERSION", NM_TRAIN_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

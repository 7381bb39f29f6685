/*
 * nm_host.c - the training kernels (nm_train.h) as a CPython extension,
 * neuromotor._nm_host: the host's TD3 and SAC updates (nm_host_sac.h) for a whole population in one call,
 * through the same forward, backward, Adam, Polyak, smoothing and Bellman code
 * the boards run.
 *
 * Arrays come in through the buffer protocol (NumPy or anything else that
 * exports one): float32 ('f') or uint32 ('I'), C-contiguous, of the exact
 * shape, writable where written, no two overlapping where one is written.
 * Anything else is a ValueError before any memory is touched. The arithmetic
 * runs with the GIL released.
 *
 * Networks are in the training layout of nm_mlp_train.h between updates: a
 * family of `members` networks is one flat float32 vector, member after member,
 * each nm_train_net_size floats (per layer W rows, then b). neuromotor.algos.td3_native
 * converts to and from the host's layout (neuromotor.nn.mlp) when a checkpoint,
 * an evaluation or the NumPy reference needs it, never per step.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

#include "nm_train.h"
#include "nm_host_args.h"
#include "nm_host_env.h"
#include "nm_host_replay.h"
#include "nm_host_sac.h"
#include "nm_host_quadrotor.h"

/* ---------------------------------------------------------------------------
 * The TD3 update of every agent.
 */
typedef struct {
    nmh_net actor, critic;
    nmh_fam a, c;
    const float *replay, *noise;
    const uint32_t *idx;
    float *losses;    // (P, 2): critic loss (both critics' mean squared errors), actor loss
    size_t P, cap, width, B, o, na, size;
    int update_actor;
    int shared;       // one minibatch (the first of idx) for both critics and the actor
    float gamma, tau, policy_noise, noise_clip;
} nmh_td3;

// Workspace of one agent's passes (floats): see nmh_critics and nmh_actor for the uses. The
// tapes are used one after the other and share one buffer (less to keep in cache): the target
// actor's, the target critics', each critic's, then the actor's beside critic 1's.
typedef struct {
    float *scratch, *x_next, *noise_t, *tape_ta, *tape_tc, *q_next[2];
    float *xc, *r, *nd, *y, *dq, *tape_c;
    float *xa, *tape_a, *tape_q, *dx;
} nmh_ws;

static size_t nmh_max(size_t a, size_t b) {
    return a > b ? a : b;
}

#define NMH_WS_PARTS 13

// The update's intermediates (floats, each part padded to 64 bytes); returns their total.
static size_t nmh_ws_lens(const nmh_td3 *t, size_t lens[NMH_WS_PARTS]) {
    const nmh_net *an = &t->actor, *cn = &t->critic;
    const size_t B = t->B, B2 = 2 * B, in = t->o + t->na;
    size_t sa = 0, sc = 0;
    nm_train_scratch_size(an->sizes, an->n_layers, B, &sa);
    nm_train_scratch_size(cn->sizes, cn->n_layers, B, &sc);
    const size_t tape = nmh_max(nmh_max(an->tape_per_sample, cn->tape_per_sample) * B2,
        (an->tape_per_sample + cn->tape_per_sample) * B);
    const size_t l[NMH_WS_PARTS] = {
        nmh_max(sa, sc), in * B2, t->na * B2, tape, B2, B2, in * B, B, B, B, B, in * B, in * B,
    };
    size_t total = 0;
    for (size_t i = 0; i < NMH_WS_PARTS; i++) {
        lens[i] = (l[i] + 15) & ~(size_t)15; // 64-byte steps keep every buffer aligned as the first
        total += lens[i];
    }
    return total;
}

static void nmh_ws_split(nmh_ws *w, float *mem, const nmh_td3 *t) {
    size_t lens[NMH_WS_PARTS];
    nmh_ws_lens(t, lens);
    float **ptrs[NMH_WS_PARTS] = {
        &w->scratch, &w->x_next, &w->noise_t, &w->tape_ta, &w->q_next[0], &w->q_next[1],
        &w->xc, &w->r, &w->nd, &w->y, &w->dq, &w->xa, &w->dx,
    };
    for (size_t i = 0; i < NMH_WS_PARTS; i++) {
        *ptrs[i] = mem;
        mem += lens[i];
    }
    w->tape_tc = w->tape_c = w->tape_a = w->tape_ta;
    w->tape_q = w->tape_ta + t->actor.tape_per_sample * t->B;
}

// Workspace floats of a call: the update's, or a step's actions (P x na) and acting tape, which
// are done with before the update starts.
static size_t nmh_td3_need(const nmh_td3 *t) {
    size_t lens[NMH_WS_PARTS];
    return nmh_max(nmh_ws_lens(t, lens), t->P * t->na + t->actor.tape_per_sample);
}

// The draws of minibatch `which` (0, 1: the critics', 2: the actor's; all 0 when shared) of agent k.
static const uint32_t *nmh_draws(const nmh_td3 *t, size_t k, size_t which) {
    return t->idx + (k * 3 + (t->shared ? 0 : which)) * t->B;
}

static const float *nmh_row(const nmh_td3 *t, size_t k, size_t which, size_t b) {
    return nmh_replay_row(t->replay + k * t->cap * t->width, nmh_draws(t, k, which), t->size, t->width, b);
}

// Entries from..from+count-1 of minibatch `which`'s rows into dst, feature-major (row stride ld).
static void nmh_gather(const nmh_td3 *t, size_t k, size_t which, size_t from, size_t count, float *dst, size_t ld) {
    nmh_replay_gather(t->replay + k * t->cap * t->width, nmh_draws(t, k, which), t->size, t->width, t->B, from,
        count, dst, ld);
}

// Replay rows are [act (na), obs (o), 1, reward, not_done, next_obs (o), 1].
static void nmh_critics(const nmh_td3 *t, nmh_ws *w, size_t k) {
    const nmh_net *an = &t->actor, *cn = &t->critic;
    const size_t M = t->shared ? 1 : 2, B = t->B, B2 = M * B, o = t->o, na = t->na, in = o + na;
    const float *atw = t->a.t + k * an->net_len;
    // the rows are random: ask for all of them before the gathers wait on each in turn
    for (size_t which = 0; which < (t->shared ? 1 : 3); which++) {
        for (size_t b = 0; b < B; b++) {
            __builtin_prefetch(nmh_row(t, k, which, b));
        }
    }
    // the target networks see all minibatches at once: samples [minibatch 0 | minibatch 1]
    for (size_t c = 0; c < M; c++) {
        nmh_gather(t, k, c, in + 3, o, w->x_next + na * B2 + c * B, B2);
        for (size_t b = 0; b < B; b++) {
            for (size_t j = 0; j < na; j++) {
                w->noise_t[j * B2 + c * B + b] = t->noise[((k * 2 + c) * B + b) * na + j];
            }
        }
    }
    // target policy smoothing: a' = clip(pi'(s') + clip(noise * sigma, -c, c), -1, 1)
    nm_train_forward(atw, an->sizes, an->acts, an->n_layers, w->x_next + na * B2, w->tape_ta, B2);
    memcpy(w->x_next, w->tape_ta + (an->tape_per_sample - na) * B2, na * B2 * sizeof(float));
    nm_td3_smooth(w->x_next, w->noise_t, na * B2, t->policy_noise, t->noise_clip);
    for (size_t c = 0; c < 2; c++) {
        const float *ctw = t->c.t + (2 * k + c) * cn->net_len;
        nm_train_forward(ctw, cn->sizes, cn->acts, cn->n_layers, w->x_next, w->tape_tc, B2);
        memcpy(w->q_next[c], w->tape_tc + (cn->tape_per_sample - 1) * B2, B2 * sizeof(float));
    }
    // critic c regresses on y = r + gamma * not_done * min(Q1', Q2') of its own minibatch
    // (shared: both on minibatch 0 and its one y)
    float loss = 0.0f;
    for (size_t c = 0; c < 2; c++) {
        const size_t member = 2 * k + c;
        const float *cw = t->c.p + member * cn->net_len;
        if (c < M) {
            nmh_gather(t, k, c, 0, in, w->xc, B);
            for (size_t b = 0; b < B; b++) {
                const float *row = nmh_row(t, k, c, b);
                w->r[b] = row[in + 1];
                w->nd[b] = row[in + 2];
            }
            nm_td3_bellman(w->y, w->q_next[0] + c * B, w->q_next[1] + c * B, w->r, w->nd, B, t->gamma);
        }
        nm_train_forward(cw, cn->sizes, cn->acts, cn->n_layers, w->xc, w->tape_c, B);
        loss += nm_td3_critic_grad(w->dq, w->tape_c + (cn->tape_per_sample - 1) * B, w->y, B, (float)(2.0 / (double)B));
        nm_train_backward(cw, cn->sizes, cn->acts, cn->n_layers, w->xc, w->tape_c, w->dq,
            t->c.g + member * cn->net_len, NULL, 0, w->scratch, B);
    }
    t->losses[2 * k] = loss;
}

// Deterministic policy gradient through critic 1: minimise -mean Q1(s, pi(s)).
static void nmh_actor(const nmh_td3 *t, nmh_ws *w, size_t k) {
    const nmh_net *an = &t->actor, *cn = &t->critic;
    const size_t B = t->B, o = t->o, na = t->na;
    const float *aw = t->a.p + k * an->net_len, *cw = t->c.p + 2 * k * cn->net_len;
    nmh_gather(t, k, 2, na, o, w->xa + na * B, B);
    nm_train_forward(aw, an->sizes, an->acts, an->n_layers, w->xa + na * B, w->tape_a, B);
    memcpy(w->xa, w->tape_a + (an->tape_per_sample - na) * B, na * B * sizeof(float));
    nm_train_forward(cw, cn->sizes, cn->acts, cn->n_layers, w->xa, w->tape_q, B);
    const float *q = w->tape_q + (cn->tape_per_sample - 1) * B;
    float q_sum = 0.0f;
    for (size_t b = 0; b < B; b++) {
        q_sum += q[b];
    }
    t->losses[2 * k + 1] = -nm_divf(q_sum, (float)B);
    const float d = (float)(-1.0 / (double)B);
    for (size_t b = 0; b < B; b++) {
        w->dq[b] = d;
    }
    // to the action columns of [a, s] only: the actor's dy
    nm_train_backward(cw, cn->sizes, cn->acts, cn->n_layers, w->xa, w->tape_q, w->dq, NULL, w->dx, na,
        w->scratch, B);
    nm_train_backward(aw, an->sizes, an->acts, an->n_layers, w->xa + na * B, w->tape_a, w->dx,
        t->a.g + k * an->net_len, NULL, 0, w->scratch, B);
}

static void nmh_td3_run(const nmh_td3 *t, nmh_ws *w) {
    for (size_t k = 0; k < t->P; k++) {
        nmh_critics(t, w, k);
    }
    nm_adam(t->c.p, t->c.g, t->c.m, t->c.v, t->critic.len, t->c.st);
    if (t->update_actor) {
        for (size_t k = 0; k < t->P; k++) {
            nmh_actor(t, w, k);
        }
        nm_adam(t->a.p, t->a.g, t->a.m, t->a.v, t->actor.len, t->a.st);
        nm_polyak(t->a.t, t->a.p, t->actor.len, t->tau);
        nm_polyak(t->c.t, t->c.p, t->critic.len, t->tau);
    }
}

// nets = (actor, critic, actor_layout, critic_layout, losses): the layouts, then the families of
// P agents (P from the replay) and the losses (P, 2). With `store`, the replay is written (one
// more row) and size counts the rows before it.
static int nmh_parse_nets(nmh_bufs *bs, PyObject *nets, PyObject *replay, Py_ssize_t size, int store, nmh_td3 *t) {
    PyObject *actor, *critic, *alayout, *clayout, *losses;
    if (!PyTuple_Check(nets) || PyTuple_GET_SIZE(nets) != 5) {
        PyErr_SetString(PyExc_ValueError, "nets must be a tuple (actor, critic, actor_layout, critic_layout, losses)");
        return 0;
    }
    actor = PyTuple_GET_ITEM(nets, 0);
    critic = PyTuple_GET_ITEM(nets, 1);
    alayout = PyTuple_GET_ITEM(nets, 2);
    clayout = PyTuple_GET_ITEM(nets, 3);
    losses = PyTuple_GET_ITEM(nets, 4);
    if (!nmh_parse_net(alayout, "actor_layout", 1, &t->actor) || !nmh_parse_net(clayout, "critic_layout", 2, &t->critic)) {
        return 0;
    }
    t->o = t->actor.sizes[0];
    t->na = t->actor.sizes[t->actor.n_layers];
    if (t->critic.sizes[0] != t->o + t->na || t->critic.sizes[t->critic.n_layers] != 1) {
        PyErr_SetString(PyExc_ValueError, "critic_layout must take obs + act inputs to one output");
        return 0;
    }
    Py_ssize_t rshape[3] = {-1, -1, (Py_ssize_t)(2 * t->o + t->na + 4)};
    t->replay = nmh_get(bs, replay, "replay", 'f', store, 3, rshape);
    if (!t->replay) {
        return 0;
    }
    t->P = (size_t)rshape[0];
    t->cap = (size_t)rshape[1];
    t->width = (size_t)rshape[2];
    if (t->P < 1 || t->P > (1 << 20) || t->cap < 1) {
        PyErr_SetString(PyExc_ValueError, "replay must hold at least one agent (at most 2^20) and one row");
        return 0;
    }
    if (size < !store || (size_t)size > t->cap) {
        PyErr_Format(PyExc_ValueError, "replay_size must be from %d to the capacity %zu, got %zd", !store, t->cap, size);
        return 0;
    }
    // an update after a store samples from the rows stored so far, the new one included
    t->size = store && (size_t)size < t->cap ? (size_t)size + 1 : (size_t)size;
    nmh_set_members(&t->actor, t->P);
    nmh_set_members(&t->critic, 2 * t->P);
    Py_ssize_t lshape[2] = {(Py_ssize_t)t->P, 2};
    if (!nmh_get_family(bs, actor, "actor", &t->actor, &t->a) || !nmh_get_family(bs, critic, "critic", &t->critic, &t->c)
        || !(t->losses = nmh_get(bs, losses, "losses", 'f', 1, 2, lshape))) {
        return 0;
    }
    return 1;
}

// idx (P, 3, B) and noise (P, 2, B, na) at `at` (from axis `skip` on: one update of a block).
static int nmh_parse_draws(nmh_bufs *bs, PyObject *idx, PyObject *noise, int skip, Py_ssize_t *at, nmh_td3 *t) {
    Py_ssize_t ishape[4] = {-1, (Py_ssize_t)t->P, 3, -1}, nshape[5] = {-1, (Py_ssize_t)t->P, 2, -1, (Py_ssize_t)t->na};
    const uint32_t *ip = nmh_get(bs, idx, "idx", 'I', 0, 3 + skip, ishape + 1 - skip);
    if (!ip) {
        return 0;
    }
    t->B = (size_t)ishape[3];
    if (t->B < 1 || t->B > (1 << 20)) {
        PyErr_SetString(PyExc_ValueError, "idx: the batch must be from 1 to 2^20 samples");
        return 0;
    }
    nshape[3] = (Py_ssize_t)t->B;
    if (skip) {
        nshape[0] = ishape[0];
    }
    const float *np_ = nmh_get(bs, noise, "noise", 'f', 0, 4 + skip, nshape + 1 - skip);
    if (!np_) {
        return 0;
    }
    if (skip && (*at < 0 || *at >= ishape[0])) {
        PyErr_Format(PyExc_ValueError, "update %zd of a block of %zd", *at, ishape[0]);
        return 0;
    }
    const size_t i = skip ? (size_t)*at : 0;
    t->idx = ip + i * t->P * 3 * t->B;
    t->noise = np_ + i * t->P * 2 * t->B * t->na;
    return 1;
}

static int nmh_parse_hyper(PyObject *hyper, nmh_td3 *t, float *explore, float *scale, float *offset) {
    double g, tau, pn, nc, ex = 0.0, sc = 1.0, of = 0.0;
    if (!PyTuple_Check(hyper) || !PyArg_ParseTuple(hyper, "dddd|ddd;hyper must be (gamma, tau, policy_noise, "
            "noise_clip[, exploration_noise, action_scale, action_offset])", &g, &tau, &pn, &nc, &ex, &sc, &of)) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "hyper must be a tuple of floats");
        }
        return 0;
    }
    t->gamma = (float)g;
    t->tau = (float)tau;
    t->policy_noise = (float)pn;
    t->noise_clip = (float)nc;
    if (explore) {
        *explore = (float)ex, *scale = (float)sc, *offset = (float)of;
    }
    return 1;
}

static const char td3_update_doc[] =
    "td3_update(nets, replay, replay_size, idx, noise, update_actor, shared_minibatch, hyper, workspace)\n\n"
    "One TD3 update of P agents, in place. nets = (actor, critic, actor_layout, critic_layout, losses):\n"
    "actor and critic are (params, target, grad, adam_m, adam_v, adam_state) of the family (P actors,\n"
    "P x 2 critics) in the training layout (member after member, nm_mlp_train.h); adam_state is\n"
    "[lr, beta1, beta2, eps, beta1^t, beta2^t] (t advanced here); layouts are (sizes, activations) with\n"
    "activations 0 identity, 1 relu, 2 tanh; losses (P, 2) float32 receives each agent's critic loss\n"
    "(the sum of both critics' mean squared errors) and, with the actor, its loss -mean Q1(s, pi(s)).\n"
    "replay (P, capacity, row) float32, rows [a, s, 1, r, not_done, s', 1]; idx (P, 3, B) uint32 raw\n"
    "draws, taken modulo replay_size: minibatch 0 and 1 for the critics, 2 for the actor; noise\n"
    "(P, 2, B, a): the critics' target policy noise; hyper = (gamma, tau, policy_noise, noise_clip).\n"
    "With shared_minibatch true, both critics and the actor learn from minibatch 0 (idx[:, 0]) and\n"
    "the critics from noise[:, 0] only (the other draws go unused). workspace: float32, at least\n"
    "td3_workspace(...) floats, for the intermediates (no call allocates).\n"
    "The critics always learn; the actor, then both targets, when update_actor is true.";

static PyObject *nmh_td3_update(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *nets, *replay, *idx, *noise, *hyper, *work;
    Py_ssize_t size, zero = 0;
    int update_actor, shared;
    if (!PyArg_ParseTuple(args, "OOnOOppOO:td3_update", &nets, &replay, &size, &idx, &noise, &update_actor, &shared,
            &hyper, &work)) {
        return NULL;
    }
    nmh_bufs bs = {.n = 0};
    nmh_td3 t;
    float *mem;
    PyObject *result = NULL;
    if (!nmh_parse_hyper(hyper, &t, NULL, NULL, NULL) || !nmh_parse_nets(&bs, nets, replay, size, 0, &t)
        || !nmh_parse_draws(&bs, idx, noise, 0, &zero, &t) || !(mem = nmh_parse_work(&bs, work, nmh_td3_need(&t)))) {
        goto out;
    }
    t.update_actor = update_actor;
    t.shared = shared;
    nmh_ws w;
    nmh_ws_split(&w, mem, &t);
    Py_BEGIN_ALLOW_THREADS
    nmh_td3_run(&t, &w);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
out:
    nmh_release(&bs);
    return result;
}

/* ---------------------------------------------------------------------------
 * Acting: out[k] = clip(pi_k(obs[k]) + noise[k] * scale, -1, 1).
 */
static void nmh_act_all(const float *p, const nmh_net *an, const float *x, const float *eps, float scale, float *a,
    float *tape) {
    const size_t o = an->sizes[0], na = an->sizes[an->n_layers];
    for (size_t k = 0; k < an->members; k++) {
        nm_train_forward(p + k * an->net_len, an->sizes, an->acts, an->n_layers, x + k * o, tape, 1);
        memcpy(a + k * na, tape + an->tape_per_sample - na, na * sizeof(float));
        // exploration: the smoothing step with no clip on the noise
        nm_td3_smooth(a + k * na, eps + k * na, na, scale, INFINITY);
    }
}

static const char act_doc[] =
    "act(params, actor_layout, obs, noise, scale, out, workspace)\n\n"
    "out[k] = clip(pi_k(obs[k]) + noise[k] * scale, -1, 1) for the P actors of a family in the\n"
    "training layout: obs (P, obs_dim), noise and out (P, act_dim), float32; workspace float32, at\n"
    "least the actor's activations of one sample (td3_workspace(...) is enough).";

static PyObject *nmh_act(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *params, *layout, *obs, *noise, *out, *work;
    double scale;
    if (!PyArg_ParseTuple(args, "OOOOdOO:act", &params, &layout, &obs, &noise, &scale, &out, &work)) {
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
    Py_ssize_t pshape[1] = {(Py_ssize_t)an.len}, nshape[2] = {(Py_ssize_t)P, (Py_ssize_t)na};
    Py_ssize_t ashape[2] = {(Py_ssize_t)P, (Py_ssize_t)na};
    const float *p = nmh_get(&bs, params, "params", 'f', 0, 1, pshape);
    const float *eps = p ? nmh_get(&bs, noise, "noise", 'f', 0, 2, nshape) : NULL;
    float *a = eps ? nmh_get(&bs, out, "out", 'f', 1, 2, ashape) : NULL;
    float *tape = a ? nmh_parse_work(&bs, work, an.tape_per_sample) : NULL;
    if (!tape) {
        goto out;
    }
    Py_BEGIN_ALLOW_THREADS
    nmh_act_all(p, &an, x, eps, (float)scale, a, tape);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
out:
    nmh_release(&bs);
    return result;
}

/* ---------------------------------------------------------------------------
 * td3_step: one training step of every agent on the built-in pendulum: act, step the
 * env, count the episode, store the transition, then (from learning_starts on) update.
 */
// The actors' actions (uniform: the block's), then the env step and the store.
static size_t nmh_env_step(const nmh_td3 *t, const nmh_env *e, size_t pos, int uniform, float explore,
    float scale, float offset, float *tape, float *action) {
    if (uniform) {
        memcpy(action, e->uniform, t->P * t->na * sizeof(float));
    } else {
        nmh_act_all(t->a.p, &t->actor, e->obs, e->explore, explore, action, tape);
    }
    return nmh_env_store(e, (float *)t->replay, t->P, t->cap, t->width, pos, action, scale, offset);
}

static const char td3_step_doc[] =
    "td3_step(nets, replay, env, block, i, u, pos, size, uniform, learn, update_actor, shared_minibatch,\n"
    "         hyper, workspace) -> ended\n\n"
    "One training step of P agents on a built-in env, in place. nets, replay, shared_minibatch,\n"
    "workspace and hyper (gamma, tau, policy_noise, noise_clip, exploration_noise, action_scale, action_offset) as\n"
    "td3_update; env = (state, obs (P, o) float32, ep_return (P,) float64, ep_len (P,) int64, max_steps)\n"
    "with state (P, 2) float64 for the pendulum, or (state (P, 17) float64, ..., max_steps, model\n"
    "(len,) float64, params (P, 2) float64, history (P, k, 4) float64, terminated (P,) bool) for the\n"
    "quadrotor (terminated is written); block = (explore (N, P, a), uniform (N, P, a), idx (U, P, 3, B),\n"
    "noise (U, P, 2, B, a)), the draws of N steps and their U updates, of which step i and update u\n"
    "are used. Actions are uniform[i]\n"
    "(uniform true) or the actors' clip(pi(obs) + explore[i] * exploration_noise, -1, 1); the\n"
    "transition goes into row pos of each ring, obs becomes the step's final observation, and with\n"
    "learn the update runs on the ring's size rows. Returns how many envs ended their episode,\n"
    "terminated or at max_steps (their reset is the caller's).";

static PyObject *nmh_td3_step(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *nets, *replay, *env, *block, *hyper, *work;
    Py_ssize_t i, u, pos, size;
    int uniform, learn, update_actor, shared;
    if (!PyArg_ParseTuple(args, "OOOOnnnnppppOO:td3_step", &nets, &replay, &env, &block, &i, &u, &pos, &size,
            &uniform, &learn, &update_actor, &shared, &hyper, &work)) {
        return NULL;
    }
    nmh_bufs bs = {.n = 0};
    nmh_td3 t;
    nmh_env e;
    float explore, scale, offset;
    PyObject *result = NULL, *explore_a, *uniform_a, *idx, *noise;
    if (!nmh_parse_hyper(hyper, &t, &explore, &scale, &offset) || !nmh_parse_nets(&bs, nets, replay, size, 1, &t)) {
        goto out;
    }
    if (pos < 0 || (size_t)pos >= t.cap) {
        PyErr_Format(PyExc_ValueError, "pos must be from 0 to %zu, got %zd", t.cap - 1, pos);
        goto out;
    }
    if (!PyTuple_Check(block) || !PyArg_ParseTuple(block, "OOOO;block must be (explore, uniform, idx, noise)",
            &explore_a, &uniform_a, &idx, &noise)) {
        goto out;
    }
    float *mem;
    if (!nmh_parse_draws(&bs, idx, noise, 1, &u, &t)
        || !nmh_parse_env(&bs, env, explore_a, uniform_a, t.P, t.o, t.na, i, &e)
        || !(mem = nmh_parse_work(&bs, work, nmh_td3_need(&t)))) {
        goto out;
    }
    t.update_actor = update_actor;
    t.shared = shared;
    nmh_ws w;
    nmh_ws_split(&w, mem, &t);
    size_t ended;
    Py_BEGIN_ALLOW_THREADS
    // the actions and their tape are stored before the update reuses the workspace
    ended = nmh_env_step(&t, &e, (size_t)pos, uniform, explore, scale, offset, mem + t.P * t.na, mem);
    if (learn) {
        nmh_td3_run(&t, &w);
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromSize_t(ended);
out:
    nmh_release(&bs);
    return result;
}

static const char td3_workspace_doc[] =
    "td3_workspace(actor_layout, critic_layout, batch, agents) -> floats of the workspace of td3_update,\n"
    "td3_step and act";

static PyObject *nmh_td3_workspace(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *alayout, *clayout;
    Py_ssize_t B, P;
    if (!PyArg_ParseTuple(args, "OOnn:td3_workspace", &alayout, &clayout, &B, &P)) {
        return NULL;
    }
    nmh_td3 t;
    if (!nmh_parse_net(alayout, "actor_layout", 1, &t.actor) || !nmh_parse_net(clayout, "critic_layout", 2, &t.critic)) {
        return NULL;
    }
    if (B < 1 || B > (1 << 20) || P < 1 || P > (1 << 20)) {
        PyErr_SetString(PyExc_ValueError, "the batch and the agents must be from 1 to 2^20");
        return NULL;
    }
    t.o = t.actor.sizes[0], t.na = t.actor.sizes[t.actor.n_layers];
    t.B = (size_t)B, t.P = (size_t)P;
    return PyLong_FromSize_t(nmh_td3_need(&t));
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
    {"td3_step", nmh_td3_step, METH_VARARGS, td3_step_doc},
    {"td3_workspace", nmh_td3_workspace, METH_VARARGS, td3_workspace_doc},
    {"sac_update", nmh_sac_update, METH_VARARGS, sac_update_doc},
    {"sac_step", nmh_sac_step, METH_VARARGS, sac_step_doc},
    {"sac_workspace", nmh_sac_workspace, METH_VARARGS, sac_workspace_doc},
    {"sac_act", nmh_sac_act, METH_VARARGS, sac_act_doc},
    {"act", nmh_act, METH_VARARGS, act_doc},
    {"quadrotor_step", nmh_quadrotor_step, METH_VARARGS, quadrotor_step_doc},
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

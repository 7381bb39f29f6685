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
#include "nm_host_agents.h"
#include "nm_host_env.h"
#include "nm_host_sac.h"
#include "nm_host_quadrotor.h"

/* ---------------------------------------------------------------------------
 * The TD3 update of every agent.
 */
typedef struct {
    nmh_agents ag;    // losses (P, 2): critic loss (both critics' mean squared errors), actor loss
    const float *noise;
    int update_actor;
    float gamma, tau, policy_noise, noise_clip, explore;
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
static size_t nmh_ws_lens(const nmh_agents *ag, size_t lens[NMH_WS_PARTS]) {
    const nmh_net *an = &ag->actor, *cn = &ag->critic;
    const size_t B = ag->B, B2 = 2 * B, in = ag->o + ag->na;
    size_t sa = 0, sc = 0;
    nm_train_scratch_size(an->sizes, an->n_layers, B, &sa);
    nm_train_scratch_size(cn->sizes, cn->n_layers, B, &sc);
    const size_t tape = nmh_max(nmh_max(an->tape_per_sample, cn->tape_per_sample) * B2,
        (an->tape_per_sample + cn->tape_per_sample) * B);
    const size_t l[NMH_WS_PARTS] = {
        nmh_max(sa, sc), in * B2, ag->na * B2, tape, B2, B2, in * B, B, B, B, B, in * B, in * B,
    };
    return nmh_pad_parts(l, NMH_WS_PARTS, lens);
}

static void nmh_ws_split(nmh_ws *w, float *mem, const nmh_agents *ag) {
    size_t lens[NMH_WS_PARTS];
    nmh_ws_lens(ag, lens);
    float **const ptrs[NMH_WS_PARTS] = {
        &w->scratch, &w->x_next, &w->noise_t, &w->tape_ta, &w->q_next[0], &w->q_next[1],
        &w->xc, &w->r, &w->nd, &w->y, &w->dq, &w->xa, &w->dx,
    };
    nmh_split_parts(mem, lens, ptrs, NMH_WS_PARTS);
    w->tape_tc = w->tape_c = w->tape_a = w->tape_ta;
    w->tape_q = w->tape_ta + ag->actor.tape_per_sample * ag->B;
}

// Workspace floats of a call: the update's, or a step's actions (P x na) and acting tape, which
// are done with before the update starts.
static size_t nmh_td3_need(const nmh_agents *ag) {
    size_t lens[NMH_WS_PARTS];
    return nmh_max(nmh_ws_lens(ag, lens), ag->P * ag->na + ag->actor.tape_per_sample);
}

static void nmh_critics(const nmh_td3 *t, nmh_ws *w, size_t k) {
    const nmh_agents *ag = &t->ag;
    const nmh_net *an = &ag->actor, *cn = &ag->critic;
    const size_t M = ag->shared ? 1 : 2, B = ag->B, B2 = M * B, o = ag->o, na = ag->na, in = o + na;
    const float *atw = ag->a.t + k * an->net_len;
    // the rows are random: ask for all of them before the gathers wait on each in turn
    for (size_t which = 0; which < (ag->shared ? 1 : 3); which++) {
        for (size_t b = 0; b < B; b++) {
            __builtin_prefetch(nmh_row(ag, k, which, b));
        }
    }
    // the target networks see all minibatches at once: samples [minibatch 0 | minibatch 1]
    for (size_t c = 0; c < M; c++) {
        nmh_gather(ag, k, c, in + 3, o, w->x_next + na * B2 + c * B, B2);
        nmh_gather_noise(ag, t->noise, k, c, w->noise_t, B2);
    }
    // target policy smoothing: a' = clip(pi'(s') + clip(noise * sigma, -c, c), -1, 1)
    nm_train_forward(atw, an->sizes, an->acts, an->n_layers, w->x_next + na * B2, w->tape_ta, B2);
    memcpy(w->x_next, w->tape_ta + (an->tape_per_sample - na) * B2, na * B2 * sizeof(float));
    nm_td3_smooth(w->x_next, w->noise_t, na * B2, t->policy_noise, t->noise_clip);
    nmh_target_q(ag, k, w->x_next, w->tape_tc, w->q_next, B2);
    // critic c regresses on y = r + gamma * not_done * min(Q1', Q2') of its own minibatch
    // (shared: both on minibatch 0 and its one y)
    float loss = 0.0f;
    for (size_t c = 0; c < 2; c++) {
        const size_t member = 2 * k + c;
        const float *cw = ag->c.p + member * cn->net_len;
        if (c < M) {
            nmh_gather(ag, k, c, 0, in, w->xc, B);
            for (size_t b = 0; b < B; b++) {
                const float *row = nmh_row(ag, k, c, b);
                w->r[b] = row[in + 1];
                w->nd[b] = row[in + 2];
            }
            nm_td3_bellman(w->y, w->q_next[0] + c * B, w->q_next[1] + c * B, w->r, w->nd, B, t->gamma);
        }
        nm_train_forward(cw, cn->sizes, cn->acts, cn->n_layers, w->xc, w->tape_c, B);
        loss += nm_td3_critic_grad(w->dq, w->tape_c + (cn->tape_per_sample - 1) * B, w->y, B, (float)(2.0 / (double)B));
        nm_train_backward(cw, cn->sizes, cn->acts, cn->n_layers, w->xc, w->tape_c, w->dq,
            ag->c.g + member * cn->net_len, NULL, 0, w->scratch, B);
    }
    ag->losses[2 * k] = loss;
}

// Deterministic policy gradient through critic 1: minimise -mean Q1(s, pi(s)).
static void nmh_actor(const nmh_td3 *t, nmh_ws *w, size_t k) {
    const nmh_agents *ag = &t->ag;
    const nmh_net *an = &ag->actor, *cn = &ag->critic;
    const size_t B = ag->B, o = ag->o, na = ag->na;
    const float *aw = ag->a.p + k * an->net_len, *cw = ag->c.p + 2 * k * cn->net_len;
    nmh_gather(ag, k, 2, na, o, w->xa + na * B, B);
    nm_train_forward(aw, an->sizes, an->acts, an->n_layers, w->xa + na * B, w->tape_a, B);
    memcpy(w->xa, w->tape_a + (an->tape_per_sample - na) * B, na * B * sizeof(float));
    nm_train_forward(cw, cn->sizes, cn->acts, cn->n_layers, w->xa, w->tape_q, B);
    const float *q = w->tape_q + (cn->tape_per_sample - 1) * B;
    float q_sum = 0.0f;
    for (size_t b = 0; b < B; b++) {
        q_sum += q[b];
    }
    ag->losses[2 * k + 1] = -nm_divf(q_sum, (float)B);
    const float d = (float)(-1.0 / (double)B);
    for (size_t b = 0; b < B; b++) {
        w->dq[b] = d;
    }
    // to the action columns of [a, s] only: the actor's dy
    nm_train_backward(cw, cn->sizes, cn->acts, cn->n_layers, w->xa, w->tape_q, w->dq, NULL, w->dx, na,
        w->scratch, B);
    nm_train_backward(aw, an->sizes, an->acts, an->n_layers, w->xa + na * B, w->tape_a, w->dx,
        ag->a.g + k * an->net_len, NULL, 0, w->scratch, B);
}

static void nmh_td3_run(const nmh_agents *ag, float *mem) {
    const nmh_td3 *t = (const nmh_td3 *)ag;
    nmh_ws ws, *w = &ws;
    nmh_ws_split(w, mem, ag);
    for (size_t k = 0; k < ag->P; k++) {
        nmh_critics(t, w, k);
    }
    nm_adam(ag->c.p, ag->c.g, ag->c.m, ag->c.v, ag->critic.len, ag->c.st);
    if (t->update_actor) {
        for (size_t k = 0; k < ag->P; k++) {
            nmh_actor(t, w, k);
        }
        nm_adam(ag->a.p, ag->a.g, ag->a.m, ag->a.v, ag->actor.len, ag->a.st);
        nm_polyak(ag->a.t, ag->a.p, ag->actor.len, t->tau);
        nm_polyak(ag->c.t, ag->c.p, ag->critic.len, t->tau);
    }
}

// The actors' actions: out[k] = clip(pi_k(obs[k]) + noise[k] * scale, -1, 1).
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

// A step's actions: the smoothing step with exploration_noise and no clip on the noise.
static void nmh_td3_step_act(const nmh_agents *ag, const nmh_env *e, float *action, float *tape) {
    nmh_act_all(ag->a.p, &ag->actor, e->obs, e->explore, ((const nmh_td3 *)ag)->explore, action, tape);
}

static const nmh_algo nmh_td3_algo = {nmh_td3_need, nmh_td3_run, nmh_td3_step_act};

// noise (P, 2, B, na); with `block`, (U, P, 2, B, na) of which update `at` is used.
static int nmh_parse_noise(nmh_bufs *bs, PyObject *noise, int block, Py_ssize_t at, Py_ssize_t updates, nmh_td3 *t) {
    const nmh_agents *ag = &t->ag;
    Py_ssize_t nshape[5] = {updates, (Py_ssize_t)ag->P, 2, (Py_ssize_t)ag->B, (Py_ssize_t)ag->na};
    return (t->noise = nmh_get_draws(bs, noise, "noise", block, at, 5, nshape)) != NULL;
}

// hyper = (gamma, tau, policy_noise, noise_clip), and a step's (exploration_noise, action_scale,
// action_offset) after them.
static int nmh_parse_hyper(PyObject *hyper, nmh_td3 *t, float *scale, float *offset) {
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
    t->explore = (float)ex, *scale = (float)sc, *offset = (float)of;
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
    Py_ssize_t size, updates;
    int update_actor, shared;
    if (!PyArg_ParseTuple(args, "OOnOOppOO:td3_update", &nets, &replay, &size, &idx, &noise, &update_actor, &shared,
            &hyper, &work)) {
        return NULL;
    }
    nmh_bufs bs = {.n = 0};
    nmh_td3 t = {.ag.shared = shared, .update_actor = update_actor};
    float scale, offset;
    const int ok = nmh_parse_hyper(hyper, &t, &scale, &offset)
        && nmh_parse_agents(&bs, nets, replay, size, 0, 1, 2, &t.ag) && nmh_parse_idx(&bs, idx, 0, 0, &t.ag, &updates)
        && nmh_parse_noise(&bs, noise, 0, 0, updates, &t);
    return nmh_finish_update(&bs, ok, &t.ag, &nmh_td3_algo, work);
}

/* ---------------------------------------------------------------------------
 * Acting: out[k] = clip(pi_k(obs[k]) + noise[k] * scale, -1, 1).
 */
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
    nmh_bufs bs = {.n = 0};
    nmh_acting ac;
    PyObject *result = NULL;
    if (nmh_parse_acting(&bs, params, layout, obs, noise, out, work, 1, &ac)) {
        Py_BEGIN_ALLOW_THREADS
        nmh_act_all(ac.params, &ac.an, ac.obs, ac.noise, (float)scale, ac.out, ac.tape);
        Py_END_ALLOW_THREADS
        result = Py_NewRef(Py_None);
    }
    nmh_release(&bs);
    return result;
}

/* ---------------------------------------------------------------------------
 * td3_step: one training step of every agent on the built-in pendulum: act, step the
 * env, count the episode, store the transition, then (from learning_starts on) update.
 */
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
    PyObject *nets, *replay, *block, *hyper, *idx, *noise;
    nmh_step_args st;
    int update_actor, shared;
    if (!PyArg_ParseTuple(args, "OOOOnnnnppppOO:td3_step", &nets, &replay, &st.env, &block, &st.i, &st.u, &st.pos,
            &st.size, &st.uniform, &st.learn, &update_actor, &shared, &hyper, &st.work)) {
        return NULL;
    }
    nmh_bufs bs = {.n = 0};
    nmh_td3 t = {.ag.shared = shared, .update_actor = update_actor};
    Py_ssize_t updates;
    const int ok = nmh_parse_hyper(hyper, &t, &st.scale, &st.offset)
        && nmh_parse_agents(&bs, nets, replay, st.size, 1, 1, 2, &t.ag)
        && PyTuple_Check(block) && PyArg_ParseTuple(block, "OOOO;block must be (explore, uniform, idx, noise)",
            &st.explore, &st.uniform_draws, &idx, &noise)
        && nmh_parse_idx(&bs, idx, 1, st.u, &t.ag, &updates) && nmh_parse_noise(&bs, noise, 1, st.u, updates, &t);
    return nmh_finish_step(&bs, ok, &t.ag, &nmh_td3_algo, &st);
}

static const char td3_workspace_doc[] =
    "td3_workspace(actor_layout, critic_layout, batch, agents) -> floats of the workspace of td3_update,\n"
    "td3_step and act";

static PyObject *nmh_td3_workspace(PyObject *self, PyObject *args) {
    (void)self;
    nmh_agents ag;
    return nmh_parse_workspace_args(args, "OOnn:td3_workspace", 1, &ag) ? PyLong_FromSize_t(nmh_td3_need(&ag)) : NULL;
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

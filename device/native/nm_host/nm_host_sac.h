/*
 * nm_host_sac.h - nm_host's SAC calls: the update of a whole population, its
 * sampled actions, and on the built-in pendulum the whole training step, each in
 * one call: the arithmetic of neuromotor.algos.sac's NumPy update through
 * nm_mlp_train.h and nm_sac_steps.h. The caller's workspace array holds every
 * intermediate, so no call allocates.
 */
#ifndef NM_HOST_SAC_H
#define NM_HOST_SAC_H

#include <Python.h>
#include <string.h>

#include "nm_train.h"
#include "nm_sac_steps.h"
#include "nm_host_args.h"
#include "nm_host_agents.h"
#include "nm_host_env.h"

typedef struct {
    nmh_agents ag;    // losses (P, 4): critic loss, actor loss, alpha loss, entropy estimate -mean log pi
    float *log_alpha, *alpha_g, *alpha_m, *alpha_v, *alpha_st;
    const float *next_noise, *actor_noise;
    float gamma, tau, log_std_min, log_std_max, target_entropy;
} nmh_sac;

// One agent's intermediates (floats); B2 = 2 B holds both critics' minibatches.
typedef struct {
    float *scratch, *x_next, *eps_n, *logp_n, *tape, *q_next[2], *r, *nd, *y, *xc, *dq;
    float *xa, *logp_a, *dx, *d_act, *d_out;
} nmh_sac_ws;

#define NMH_SAC_WS_PARTS 16

static size_t nmh_sac_lens(const nmh_net *an, const nmh_net *cn, size_t B, size_t lens[NMH_SAC_WS_PARTS]) {
    const size_t B2 = 2 * B, na = an->sizes[an->n_layers] / 2, in = cn->sizes[0];
    size_t sa = 0, sc = 0;
    nm_train_scratch_size(an->sizes, an->n_layers, B, &sa);
    nm_train_scratch_size(cn->sizes, cn->n_layers, B, &sc);
    size_t tape = an->tape_per_sample > cn->tape_per_sample ? an->tape_per_sample : cn->tape_per_sample;
    tape *= B2;
    const size_t actor_pass = (an->tape_per_sample + 2 * cn->tape_per_sample) * B;
    const size_t l[NMH_SAC_WS_PARTS] = {
        sa > sc ? sa : sc, in * B2, na * B2, B2, tape > actor_pass ? tape : actor_pass, B2, B2, B2, B2, B2,
        in * B, B, in * B, B, in * B, na * B,
    };
    return nmh_pad_parts(l, NMH_SAC_WS_PARTS, lens) + an->sizes[an->n_layers] * B; // d_out (2 na x B) last, unpadded
}

static void nmh_sac_ws_split(nmh_sac_ws *w, float *mem, const nmh_agents *ag) {
    size_t lens[NMH_SAC_WS_PARTS];
    nmh_sac_lens(&ag->actor, &ag->critic, ag->B, lens);
    float **const ptrs[NMH_SAC_WS_PARTS] = {
        &w->scratch, &w->x_next, &w->eps_n, &w->logp_n, &w->tape, &w->q_next[0], &w->q_next[1], &w->r, &w->nd,
        &w->y, &w->xc, &w->dq, &w->xa, &w->logp_a, &w->dx, &w->d_act,
    };
    w->d_out = nmh_split_parts(mem, lens, ptrs, NMH_SAC_WS_PARTS);
}

// Replay rows are [act (na), obs (o), 1, reward, not_done, next_obs (o), 1].
static void nmh_sac_critics(const nmh_sac *t, nmh_sac_ws *w, size_t k, float alpha) {
    const nmh_agents *ag = &t->ag;
    const nmh_net *an = &ag->actor, *cn = &ag->critic;
    const size_t M = ag->shared ? 1 : 2, B = ag->B, B2 = M * B, o = ag->o, na = ag->na, in = o + na;
    const float *aw = ag->a.p + k * an->net_len;
    for (size_t c = 0; c < M; c++) {
        nmh_gather(ag, k, c, in + 3, o, w->x_next + na * B2 + c * B, B2);
        nmh_gather_noise(ag, t->next_noise, k, c, w->eps_n, B2);
        for (size_t b = 0; b < B; b++) {
            const float *row = nmh_row(ag, k, c, b);
            w->r[c * B + b] = row[in + 1];
            w->nd[c * B + b] = row[in + 2];
        }
    }
    // a' ~ pi(s') from the online actor, straight into the target critics' input
    nm_train_forward(aw, an->sizes, an->acts, an->n_layers, w->x_next + na * B2, w->tape, B2);
    nm_sac_sample(w->tape + (an->tape_per_sample - 2 * na) * B2, w->eps_n, na, B2, t->log_std_min, t->log_std_max,
        w->x_next, w->logp_n);
    nmh_target_q(ag, k, w->x_next, w->tape, w->q_next, B2);
    nm_sac_bellman(w->y, w->q_next[0], w->q_next[1], w->logp_n, alpha, w->r, w->nd, B2, t->gamma);
    // critic c regresses on the y of its own minibatch (shared: both on minibatch 0)
    float loss = 0.0f;
    for (size_t c = 0; c < 2; c++) {
        const size_t member = 2 * k + c;
        const float *cw = ag->c.p + member * cn->net_len;
        if (c < M) {
            nmh_gather(ag, k, c, 0, in, w->xc, B);
        }
        nm_train_forward(cw, cn->sizes, cn->acts, cn->n_layers, w->xc, w->tape, B);
        // dq = (q - y) / B: the gradient of 1/2 mean (q - y)^2
        loss += 0.5f * nm_td3_critic_grad(w->dq, w->tape + (cn->tape_per_sample - 1) * B, w->y + (c < M ? c : 0) * B,
            B, (float)(1.0 / (double)B));
        nm_train_backward(cw, cn->sizes, cn->acts, cn->n_layers, w->xc, w->tape, w->dq,
            ag->c.g + member * cn->net_len, NULL, 0, w->scratch, B);
    }
    ag->losses[4 * k] = loss;
}

// L = mean (alpha log pi(a~|s) - min(Q1, Q2)(s, a~)) through the reparameterised sample a~,
// and the entropy coefficient's gradient from the same log-probabilities.
static void nmh_sac_actor(const nmh_sac *t, nmh_sac_ws *w, size_t k, float alpha) {
    const nmh_agents *ag = &t->ag;
    const nmh_net *an = &ag->actor, *cn = &ag->critic;
    const size_t B = ag->B, o = ag->o, na = ag->na;
    const float *aw = ag->a.p + k * an->net_len;
    float *tape_q[2] = {w->tape + an->tape_per_sample * B, w->tape + (an->tape_per_sample + cn->tape_per_sample) * B};
    nmh_gather(ag, k, 2, na, o, w->xa + na * B, B);
    const float *eps = t->actor_noise + k * B * na;
    // the noise is (B, na) sample-major: the sample and its backward read it feature-major
    float *eps_a = w->eps_n;
    for (size_t b = 0; b < B; b++) {
        for (size_t j = 0; j < na; j++) {
            eps_a[j * B + b] = eps[b * na + j];
        }
    }
    nm_train_forward(aw, an->sizes, an->acts, an->n_layers, w->xa + na * B, w->tape, B);
    const float *out = w->tape + (an->tape_per_sample - 2 * na) * B;
    nm_sac_sample(out, eps_a, na, B, t->log_std_min, t->log_std_max, w->xa, w->logp_a);
    for (size_t c = 0; c < 2; c++) {
        const float *cw = ag->c.p + (2 * k + c) * cn->net_len;
        nm_train_forward(cw, cn->sizes, cn->acts, cn->n_layers, w->xa, tape_q[c], B);
    }
    const float *q1 = tape_q[0] + (cn->tape_per_sample - 1) * B, *q2 = tape_q[1] + (cn->tape_per_sample - 1) * B;
    const float scale = (float)(-1.0 / (double)B);
    float actor_loss = 0.0f, logp_sum = 0.0f, alpha_loss = 0.0f;
    const float old_log_alpha = t->log_alpha[k];
    for (size_t b = 0; b < B; b++) {
        const float lp = w->logp_a[b], q = q1[b] <= q2[b] ? q1[b] : q2[b];
        actor_loss += alpha * lp - q;
        logp_sum += lp;
        alpha_loss += old_log_alpha * (lp + t->target_entropy);
    }
    ag->losses[4 * k + 1] = nm_divf(actor_loss, (float)B);
    ag->losses[4 * k + 2] = -nm_divf(alpha_loss, (float)B);
    ag->losses[4 * k + 3] = -nm_divf(logp_sum, (float)B);
    float ent = 0.0f;
    for (size_t b = 0; b < B; b++) {
        ent += w->logp_a[b] + t->target_entropy;
    }
    t->alpha_g[k] = -nm_divf(ent, (float)B);
    // the min passes the gradient to the smaller critic only
    for (size_t c = 0; c < 2; c++) {
        const float *cw = ag->c.p + (2 * k + c) * cn->net_len;
        for (size_t b = 0; b < B; b++) {
            w->dq[b] = (c == 0) == (q1[b] <= q2[b]) ? scale : 0.0f;
        }
        // to the action columns of [a, s] only: the actor's gradient reads nothing else
        nm_train_backward(cw, cn->sizes, cn->acts, cn->n_layers, w->xa, tape_q[c], w->dq, NULL, w->dx, na, w->scratch,
            B);
        for (size_t i = 0; i < na * B; i++) {
            w->d_act[i] = c ? w->d_act[i] + w->dx[i] : w->dx[i];
        }
    }
    nm_sac_sample_backward(out, eps_a, w->xa, w->d_act, nm_divf(alpha, (float)B), na, B, t->log_std_min,
        t->log_std_max, w->d_out);
    nm_train_backward(aw, an->sizes, an->acts, an->n_layers, w->xa + na * B, w->tape, w->d_out,
        ag->a.g + k * an->net_len, NULL, 0, w->scratch, B);
}

static void nmh_sac_run(const nmh_agents *ag, float *mem) {
    const nmh_sac *t = (const nmh_sac *)ag;
    nmh_sac_ws ws, *w = &ws;
    nmh_sac_ws_split(w, mem, ag);
    for (size_t k = 0; k < ag->P; k++) {
        nmh_sac_critics(t, w, k, nm_expf(t->log_alpha[k]));
    }
    nm_adam(ag->c.p, ag->c.g, ag->c.m, ag->c.v, ag->critic.len, ag->c.st);
    for (size_t k = 0; k < ag->P; k++) {
        nmh_sac_actor(t, w, k, nm_expf(t->log_alpha[k]));
    }
    nm_adam(ag->a.p, ag->a.g, ag->a.m, ag->a.v, ag->actor.len, ag->a.st);
    nm_adam(t->log_alpha, t->alpha_g, t->alpha_m, t->alpha_v, ag->P, t->alpha_st);
    nm_polyak(ag->c.t, ag->c.p, ag->critic.len, t->tau);
}

// out[k] = tanh(mean_k + std_k * eps[k]) of the P actors (net: members set), the actor's tape and a
// log-probability in `tape` (tape_per_sample + 1 floats).
static void nmh_sac_act_all(const float *p, const nmh_net *an, const float *x, const float *eps, float lo, float hi,
    float *out, float *tape) {
    const size_t o = an->sizes[0], na = an->sizes[an->n_layers] / 2;
    for (size_t k = 0; k < an->members; k++) {
        nm_train_forward(p + k * an->net_len, an->sizes, an->acts, an->n_layers, x + k * o, tape, 1);
        // a sample of one: feature-major and sample-major are the same
        nm_sac_sample(tape + an->tape_per_sample - 2 * na, eps + k * na, na, 1, lo, hi, out + k * na,
            tape + an->tape_per_sample);
    }
}

// Workspace floats of a call: the update's, and a step's actions (P x na) and acting tape beside.
static size_t nmh_sac_need(const nmh_agents *ag) {
    size_t lens[NMH_SAC_WS_PARTS];
    const size_t update = nmh_sac_lens(&ag->actor, &ag->critic, ag->B, lens);
    const size_t act = ag->P * ag->na + ag->actor.tape_per_sample + 1;
    return update > act ? update : act;
}

static void nmh_sac_step_act(const nmh_agents *ag, const nmh_env *e, float *action, float *tape) {
    const nmh_sac *t = (const nmh_sac *)ag;
    nmh_sac_act_all(ag->a.p, &ag->actor, e->obs, e->explore, t->log_std_min, t->log_std_max, action, tape);
}

static const nmh_algo nmh_sac_algo = {nmh_sac_need, nmh_sac_run, nmh_sac_step_act};

static const char sac_workspace_doc[] =
    "sac_workspace(actor_layout, critic_layout, batch, agents) -> floats of the workspace of sac_update,\n"
    "sac_step and sac_act";

static PyObject *nmh_sac_workspace(PyObject *self, PyObject *args) {
    (void)self;
    nmh_agents ag;
    return nmh_parse_workspace_args(args, "OOnn:sac_workspace", 2, &ag) ? PyLong_FromSize_t(nmh_sac_need(&ag)) : NULL;
}

static int nmh_sac_parse_hyper(PyObject *hyper, nmh_sac *t, float *scale, float *offset) {
    double g, tau, lo, hi, te, sc = 1.0, of = 0.0;
    if (!PyTuple_Check(hyper) || !PyArg_ParseTuple(hyper, "ddddd|dd;hyper must be (gamma, tau, log_std_min, "
            "log_std_max, target_entropy[, action_scale, action_offset])", &g, &tau, &lo, &hi, &te, &sc, &of)) {
        return 0;
    }
    t->gamma = (float)g, t->tau = (float)tau, t->log_std_min = (float)lo, t->log_std_max = (float)hi;
    t->target_entropy = (float)te, *scale = (float)sc, *offset = (float)of;
    return 1;
}

// alpha = (log_alpha, grad, adam_m, adam_v) (P,) and adam_state, float32.
static int nmh_sac_parse_alpha(nmh_bufs *bs, PyObject *alpha, nmh_sac *t) {
    if (!PyTuple_Check(alpha) || PyTuple_GET_SIZE(alpha) != 5) {
        PyErr_SetString(PyExc_ValueError, "alpha must be a tuple (log_alpha, grad, adam_m, adam_v, adam_state)");
        return 0;
    }
    static const char *const names[5] = {"log_alpha", "alpha grad", "alpha adam_m", "alpha adam_v", "alpha adam_state"};
    float **dst[5] = {&t->log_alpha, &t->alpha_g, &t->alpha_m, &t->alpha_v, &t->alpha_st};
    for (int i = 0; i < 5; i++) {
        Py_ssize_t shape[1] = {i == 4 ? NM_ADAM_STATE : (Py_ssize_t)t->ag.P};
        if (!(*dst[i] = nmh_get(bs, PyTuple_GET_ITEM(alpha, i), names[i], 'f', 1, 1, shape))) {
            return 0;
        }
    }
    return 1;
}

// hyper, nets, the replay (written with `store`: one more row, size counting the rows before it)
// and alpha's arrays.
static int nmh_sac_parse(nmh_bufs *bs, PyObject *nets, PyObject *alpha, PyObject *replay, Py_ssize_t size, int store,
    PyObject *hyper, nmh_sac *t, float *scale, float *offset) {
    return nmh_sac_parse_hyper(hyper, t, scale, offset) && nmh_parse_agents(bs, nets, replay, size, store, 2, 4, &t->ag)
        && nmh_sac_parse_alpha(bs, alpha, t);
}

// idx (P, 3, B), next_noise (P, 2, B, na), actor_noise (P, B, na); with `block`, each with a leading
// axis of a block's updates, of which update `at` is used.
static int nmh_sac_parse_draws(nmh_bufs *bs, PyObject *idx, PyObject *next_noise, PyObject *actor_noise, int block,
    Py_ssize_t at, nmh_sac *t) {
    const nmh_agents *ag = &t->ag;
    Py_ssize_t updates;
    if (!nmh_parse_idx(bs, idx, block, at, &t->ag, &updates)) {
        return 0;
    }
    Py_ssize_t nshape[5] = {updates, (Py_ssize_t)ag->P, 2, (Py_ssize_t)ag->B, (Py_ssize_t)ag->na};
    Py_ssize_t ashape[4] = {updates, (Py_ssize_t)ag->P, (Py_ssize_t)ag->B, (Py_ssize_t)ag->na};
    return (t->next_noise = nmh_get_draws(bs, next_noise, "next_noise", block, at, 5, nshape))
        && (t->actor_noise = nmh_get_draws(bs, actor_noise, "actor_noise", block, at, 4, ashape));
}

static const char sac_update_doc[] =
    "sac_update(nets, alpha, replay, replay_size, idx, next_noise, actor_noise, shared_minibatch, hyper,\n"
    "           workspace)\n\n"
    "One SAC update of P agents, in place. nets = (actor, critic, actor_layout, critic_layout, losses)\n"
    "as td3_update's (the actor's outputs [mean, log_std], its target unused); losses (P, 4) receives\n"
    "each agent's critic loss, actor loss, alpha loss and entropy estimate -mean log pi.\n"
    "alpha = (log_alpha, grad, adam_m, adam_v) of shape (P,) and adam_state (6,), float32.\n"
    "replay and idx as td3_update's; next_noise (P, 2, B, a): the critics' next-action noise;\n"
    "actor_noise (P, B, a): the actor's; hyper = (gamma, tau, log_std_min, log_std_max,\n"
    "target_entropy); workspace: float32, at least sac_workspace(...) floats. With shared_minibatch\n"
    "true, both critics and the actor learn from minibatch 0 and the critics from next_noise[:, 0].\n"
    "Order as the NumPy update: critics, their Adam step, actor (on the new critics), its Adam step,\n"
    "log_alpha's Adam step, then the critics' targets; alpha = exp(log_alpha) before its step throughout.";

static PyObject *nmh_sac_update(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *nets, *alpha, *replay, *idx, *next_noise, *actor_noise, *hyper, *work;
    Py_ssize_t size;
    int shared;
    if (!PyArg_ParseTuple(args, "OOOnOOOpOO:sac_update", &nets, &alpha, &replay, &size, &idx, &next_noise,
            &actor_noise, &shared, &hyper, &work)) {
        return NULL;
    }
    nmh_bufs bs = {.n = 0};
    nmh_sac t = {.ag.shared = shared};
    float scale, offset;
    const int ok = nmh_sac_parse(&bs, nets, alpha, replay, size, 0, hyper, &t, &scale, &offset)
        && nmh_sac_parse_draws(&bs, idx, next_noise, actor_noise, 0, 0, &t);
    return nmh_finish_update(&bs, ok, &t.ag, &nmh_sac_algo, work);
}

static const char sac_step_doc[] =
    "sac_step(nets, alpha, replay, env, block, i, u, pos, size, uniform, learn, shared_minibatch, hyper,\n"
    "         workspace) -> ended\n\n"
    "One training step of P agents on a built-in env (the pendulum or the quadrotor), in place: nets,\n"
    "alpha, replay, shared_minibatch and workspace as sac_update's, hyper with (action_scale,\n"
    "action_offset) after sac_update's, env as td3_step's; block = (explore (N, P, a), uniform (N, P, a),\n"
    "idx (U, P, 3, B), next_noise (U, P, 2, B, a), actor_noise (U, P, B, a)), the draws of N steps and\n"
    "their U updates, of which step i and update u are used. Actions are uniform[i] (uniform true) or\n"
    "the actors' samples with noise\n"
    "explore[i]; the transition goes into row pos of each ring, obs becomes the step's final\n"
    "observation, and with learn the update runs on the ring's size rows. Returns how many envs ended\n"
    "their episode, terminated or at max_steps (their reset is the caller's).";

static PyObject *nmh_sac_step(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *nets, *alpha, *replay, *block, *hyper, *idx, *nn, *an;
    nmh_step_args st;
    int shared;
    if (!PyArg_ParseTuple(args, "OOOOOnnnnpppOO:sac_step", &nets, &alpha, &replay, &st.env, &block, &st.i, &st.u,
            &st.pos, &st.size, &st.uniform, &st.learn, &shared, &hyper, &st.work)) {
        return NULL;
    }
    nmh_bufs bs = {.n = 0};
    nmh_sac t = {.ag.shared = shared};
    const int ok = nmh_sac_parse(&bs, nets, alpha, replay, st.size, 1, hyper, &t, &st.scale, &st.offset)
        && PyTuple_Check(block) && PyArg_ParseTuple(block, "OOOOO;block must be (explore, uniform, idx, next_noise, "
            "actor_noise)", &st.explore, &st.uniform_draws, &idx, &nn, &an)
        && nmh_sac_parse_draws(&bs, idx, nn, an, 1, st.u, &t);
    return nmh_finish_step(&bs, ok, &t.ag, &nmh_sac_algo, &st);
}

static const char sac_act_doc[] =
    "sac_act(params, actor_layout, obs, noise, log_std_min, log_std_max, out, workspace)\n\n"
    "out[k] = tanh(mean_k + exp(clip(log_std_k, log_std_min, log_std_max)) * noise[k]), [mean_k, log_std_k] =\n"
    "pi_k(obs[k]), for the P actors of a family in the training layout: obs (P, obs_dim), noise and out\n"
    "(P, act_dim), float32; workspace float32 of at least the actor's widths summed, plus one.";

static PyObject *nmh_sac_act(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *params, *layout, *obs, *noise, *out, *work;
    double lo, hi;
    if (!PyArg_ParseTuple(args, "OOOOddOO:sac_act", &params, &layout, &obs, &noise, &lo, &hi, &out, &work)) {
        return NULL;
    }
    nmh_bufs bs = {.n = 0};
    nmh_acting ac;
    PyObject *result = NULL;
    if (nmh_parse_acting(&bs, params, layout, obs, noise, out, work, 2, &ac)) {
        Py_BEGIN_ALLOW_THREADS
        nmh_sac_act_all(ac.params, &ac.an, ac.obs, ac.noise, (float)lo, (float)hi, ac.out, ac.tape);
        Py_END_ALLOW_THREADS
        result = Py_NewRef(Py_None);
    }
    nmh_release(&bs);
    return result;
}

#endif // NM_HOST_SAC_H

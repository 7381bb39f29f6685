/*
 * nm_host_agents.h - what TD3's and SAC's calls share: P agents, each an actor
 * and two critics in families of the training layout, a replay ring, and the
 * draws of this update's minibatches. Their arguments from Python are checked
 * here, once for both algorithms, before any memory is touched.
 */
#ifndef NM_HOST_AGENTS_H
#define NM_HOST_AGENTS_H

#include <Python.h>
#include <string.h>

#include "nm_train.h"
#include "nm_host_args.h"
#include "nm_host_env.h"
#include "nm_host_replay.h"

#define NMH_MAX_AGENTS ((size_t)1 << 20)
#define NMH_MAX_BATCH ((size_t)1 << 20)

typedef struct {
    nmh_net actor, critic;
    nmh_fam a, c;
    const float *replay;
    const uint32_t *idx;
    float *losses;
    size_t P, cap, width, B, o, na, size;
    int shared; // one minibatch (the first of idx) for both critics and the actor
} nmh_agents;

// The layouts: critics of o + na inputs and one output; an actor of na outputs, or with two heads
// (SAC's [mean, log_std]) of 2 na.
static int nmh_parse_layouts(PyObject *alayout, PyObject *clayout, size_t heads, nmh_agents *ag) {
    if (!nmh_parse_net(alayout, "actor_layout", 1, &ag->actor) || !nmh_parse_net(clayout, "critic_layout", 2, &ag->critic)) {
        return 0;
    }
    const size_t out = ag->actor.sizes[ag->actor.n_layers];
    ag->o = ag->actor.sizes[0];
    ag->na = out / heads;
    if (out % heads || ag->critic.sizes[0] != ag->o + ag->na || ag->critic.sizes[ag->critic.n_layers] != 1) {
        PyErr_SetString(PyExc_ValueError, heads == 1 ? "critic_layout must take obs + act inputs to one output"
            : "actor_layout must give [mean, log_std] (2 act outputs) and critic_layout take obs + act inputs to "
              "one output");
        return 0;
    }
    return 1;
}

// nets = (actor, critic, actor_layout, critic_layout, losses): the layouts, then the families of P
// agents (P from the replay) and the losses (P, n_losses). With `store`, the replay is written (one
// more row) and size counts the rows before it.
static int nmh_parse_agents(nmh_bufs *bs, PyObject *nets, PyObject *replay, Py_ssize_t size, int store, size_t heads,
    size_t n_losses, nmh_agents *ag) {
    if (!PyTuple_Check(nets) || PyTuple_GET_SIZE(nets) != 5) {
        PyErr_SetString(PyExc_ValueError, "nets must be a tuple (actor, critic, actor_layout, critic_layout, losses)");
        return 0;
    }
    if (!nmh_parse_layouts(PyTuple_GET_ITEM(nets, 2), PyTuple_GET_ITEM(nets, 3), heads, ag)) {
        return 0;
    }
    Py_ssize_t rshape[3] = {-1, -1, (Py_ssize_t)(2 * ag->o + ag->na + 4)};
    if (!(ag->replay = nmh_get(bs, replay, "replay", 'f', store, 3, rshape))) {
        return 0;
    }
    ag->P = (size_t)rshape[0], ag->cap = (size_t)rshape[1], ag->width = (size_t)rshape[2];
    if (ag->P < 1 || ag->P > NMH_MAX_AGENTS || ag->cap < 1) {
        PyErr_SetString(PyExc_ValueError, "replay must hold at least one agent (at most 2^20) and one row");
        return 0;
    }
    if (size < !store || (size_t)size > ag->cap) {
        PyErr_Format(PyExc_ValueError, "replay_size must be from %d to the capacity %zu, got %zd", !store, ag->cap, size);
        return 0;
    }
    // an update after a store samples from the rows stored so far, the new one included
    ag->size = store && (size_t)size < ag->cap ? (size_t)size + 1 : (size_t)size;
    nmh_set_members(&ag->actor, ag->P);
    nmh_set_members(&ag->critic, 2 * ag->P);
    Py_ssize_t lshape[2] = {(Py_ssize_t)ag->P, (Py_ssize_t)n_losses};
    return nmh_get_family(bs, PyTuple_GET_ITEM(nets, 0), "actor", &ag->actor, &ag->a)
        && nmh_get_family(bs, PyTuple_GET_ITEM(nets, 1), "critic", &ag->critic, &ag->c)
        && (ag->losses = nmh_get(bs, PyTuple_GET_ITEM(nets, 4), "losses", 'f', 1, 2, lshape));
}

// idx (P, 3, B) uint32; with `block`, (U, P, 3, B) of which update `at` is used. Sets B and *updates (U).
static int nmh_parse_idx(nmh_bufs *bs, PyObject *idx, int block, Py_ssize_t at, nmh_agents *ag, Py_ssize_t *updates) {
    Py_ssize_t ishape[4] = {-1, (Py_ssize_t)ag->P, 3, -1};
    const uint32_t *ip = nmh_get(bs, idx, "idx", 'I', 0, 3 + block, ishape + !block);
    if (!ip) {
        return 0;
    }
    ag->B = (size_t)ishape[3];
    if (ag->B < 1 || ag->B > NMH_MAX_BATCH) {
        PyErr_SetString(PyExc_ValueError, "idx: the batch must be from 1 to 2^20 samples");
        return 0;
    }
    if (block && (at < 0 || at >= ishape[0])) {
        PyErr_Format(PyExc_ValueError, "update %zd of a block of %zd", at, ishape[0]);
        return 0;
    }
    *updates = ishape[0];
    ag->idx = ip + (block ? (size_t)at : 0) * ag->P * 3 * ag->B;
    return 1;
}

// A float32 draw array of one update, shape[1..ndim-1]; with `block`, of the block's, shape[0..ndim-1],
// of which update `at` (checked by nmh_parse_idx) is returned.
static const float *nmh_get_draws(nmh_bufs *bs, PyObject *obj, const char *name, int block, Py_ssize_t at, int ndim,
    Py_ssize_t *shape) {
    const float *p = nmh_get(bs, obj, name, 'f', 0, ndim - !block, shape + !block);
    if (!p || !block) {
        return p;
    }
    size_t per_update = 1;
    for (int i = 1; i < ndim; i++) {
        per_update *= (size_t)shape[i];
    }
    return p + (size_t)at * per_update;
}

static int nmh_check_pos(Py_ssize_t pos, const nmh_agents *ag) {
    if (pos < 0 || (size_t)pos >= ag->cap) {
        PyErr_Format(PyExc_ValueError, "pos must be from 0 to %zu, got %zd", ag->cap - 1, pos);
        return 0;
    }
    return 1;
}

// (actor_layout, critic_layout, batch, agents) of a *_workspace call: sets the layouts, B and P.
static int nmh_parse_workspace_args(PyObject *args, const char *format, size_t heads, nmh_agents *ag) {
    PyObject *alayout, *clayout;
    Py_ssize_t B, P;
    if (!PyArg_ParseTuple(args, format, &alayout, &clayout, &B, &P) || !nmh_parse_layouts(alayout, clayout, heads, ag)) {
        return 0;
    }
    if (B < 1 || (size_t)B > NMH_MAX_BATCH || P < 1 || (size_t)P > NMH_MAX_AGENTS) {
        PyErr_SetString(PyExc_ValueError, "the batch and the agents must be from 1 to 2^20");
        return 0;
    }
    ag->B = (size_t)B, ag->P = (size_t)P;
    nmh_set_members(&ag->actor, ag->P);
    return 1;
}

/* ---------------------------------------------------------------------------
 * The workspace: an update's intermediates, one part after another.
 */
// lens[i] = l[i] padded to 16 floats: 64-byte steps keep every part aligned as the first. Returns their sum.
static size_t nmh_pad_parts(const size_t *l, size_t n, size_t *lens) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        lens[i] = (l[i] + 15) & ~(size_t)15;
        total += lens[i];
    }
    return total;
}

// *ptrs[i] = the part i of mem; returns the end of the last.
static float *nmh_split_parts(float *mem, const size_t *lens, float **const *ptrs, size_t n) {
    for (size_t i = 0; i < n; i++) {
        *ptrs[i] = mem;
        mem += lens[i];
    }
    return mem;
}

/* ---------------------------------------------------------------------------
 * Minibatches: replay rows are [act (na), obs (o), 1, reward, not_done, next_obs (o), 1].
 */
// The draws of minibatch `which` (0, 1: the critics', 2: the actor's; all 0 when shared) of agent k.
static const uint32_t *nmh_draws(const nmh_agents *ag, size_t k, size_t which) {
    return ag->idx + (k * 3 + (ag->shared ? 0 : which)) * ag->B;
}

static const float *nmh_row(const nmh_agents *ag, size_t k, size_t which, size_t b) {
    return nmh_replay_row(ag->replay + k * ag->cap * ag->width, nmh_draws(ag, k, which), ag->size, ag->width, b);
}

// Entries from..from+count-1 of minibatch `which`'s rows into dst, feature-major (row stride ld).
static void nmh_gather(const nmh_agents *ag, size_t k, size_t which, size_t from, size_t count, float *dst, size_t ld) {
    nmh_replay_gather(ag->replay + k * ag->cap * ag->width, nmh_draws(ag, k, which), ag->size, ag->width, ag->B, from,
        count, dst, ld);
}

// Minibatch c's next-action noise of agent k, (P, 2, B, na) sample-major, into columns c B.. of dst
// (na x B2), feature-major as the target networks read it.
static void nmh_gather_noise(const nmh_agents *ag, const float *noise, size_t k, size_t c, float *dst, size_t B2) {
    const size_t B = ag->B, na = ag->na;
    for (size_t b = 0; b < B; b++) {
        for (size_t j = 0; j < na; j++) {
            dst[j * B2 + c * B + b] = noise[((k * 2 + c) * B + b) * na + j];
        }
    }
}

// Both target critics of agent k on x_next (B2 samples): q_next[c], through `tape`.
static void nmh_target_q(const nmh_agents *ag, size_t k, const float *x_next, float *tape, float *const q_next[2],
    size_t B2) {
    const nmh_net *cn = &ag->critic;
    for (size_t c = 0; c < 2; c++) {
        const float *ctw = ag->c.t + (2 * k + c) * cn->net_len;
        nm_train_forward(ctw, cn->sizes, cn->acts, cn->n_layers, x_next, tape, B2);
        memcpy(q_next[c], tape + (cn->tape_per_sample - 1) * B2, B2 * sizeof(float));
    }
}

/* ---------------------------------------------------------------------------
 * Acting: P actors of a family on one observation each.
 */
typedef struct {
    nmh_net an;
    const float *params, *obs, *noise;
    float *out, *tape;
} nmh_acting;

// params, actor_layout, obs (P, o), noise and out (P, na) of an act call, with one sample's tape in
// the workspace; with two heads the actor gives [mean, log_std] and the sample's log-probability
// follows the tape.
static int nmh_parse_acting(nmh_bufs *bs, PyObject *params, PyObject *layout, PyObject *obs, PyObject *noise,
    PyObject *out, PyObject *work, size_t heads, nmh_acting *ac) {
    nmh_net *an = &ac->an;
    if (!nmh_parse_net(layout, "actor_layout", 1, an)) {
        return 0;
    }
    if (an->sizes[an->n_layers] % heads) {
        PyErr_SetString(PyExc_ValueError, "actor_layout must give [mean, log_std] (2 act outputs)");
        return 0;
    }
    const size_t o = an->sizes[0], na = an->sizes[an->n_layers] / heads;
    Py_ssize_t oshape[2] = {-1, (Py_ssize_t)o};
    if (!(ac->obs = nmh_get(bs, obs, "obs", 'f', 0, 2, oshape))) {
        return 0;
    }
    const size_t P = (size_t)oshape[0];
    if (P < 1 || P > NMH_MAX_AGENTS) {
        PyErr_SetString(PyExc_ValueError, "obs must hold from 1 to 2^20 agents");
        return 0;
    }
    nmh_set_members(an, P);
    Py_ssize_t pshape[1] = {(Py_ssize_t)an->len}, nshape[2] = {(Py_ssize_t)P, (Py_ssize_t)na};
    Py_ssize_t ashape[2] = {(Py_ssize_t)P, (Py_ssize_t)na};
    return (ac->params = nmh_get(bs, params, "params", 'f', 0, 1, pshape))
        && (ac->noise = nmh_get(bs, noise, "noise", 'f', 0, 2, nshape))
        && (ac->out = nmh_get(bs, out, "out", 'f', 1, 2, ashape))
        && (ac->tape = nmh_parse_work(bs, work, an->tape_per_sample + (heads - 1)));
}

/* ---------------------------------------------------------------------------
 * The end of every update and step call, once the algorithm has checked its own arguments.
 */
// An algorithm's part: its workspace's floats, its update over the workspace, and its actors'
// actions on a step's observations (tape: the acting workspace). Each is given the nmh_agents
// that is the first member of the algorithm's own struct, so may take it for that struct.
typedef struct {
    size_t (*need)(const nmh_agents *ag);
    void (*update)(const nmh_agents *ag, float *mem);
    void (*act)(const nmh_agents *ag, const nmh_env *e, float *action, float *tape);
} nmh_algo;

// A whole step's own arguments: env, the block's explore and uniform draws (step i used), the
// workspace, update u of the block, row pos of the rings and size rows before it, the action's
// scale and offset into the env.
typedef struct {
    PyObject *env, *explore, *uniform_draws, *work;
    Py_ssize_t i, u, pos, size;
    int uniform, learn;
    float scale, offset;
} nmh_step_args;

// ok: the algorithm's arguments are good. Then the workspace, and the update with the GIL released.
static PyObject *nmh_finish_update(nmh_bufs *bs, int ok, const nmh_agents *ag, const nmh_algo *algo, PyObject *work) {
    float *mem = ok ? nmh_parse_work(bs, work, algo->need(ag)) : NULL;
    PyObject *result = NULL;
    if (mem) {
        Py_BEGIN_ALLOW_THREADS
        algo->update(ag, mem);
        Py_END_ALLOW_THREADS
        result = Py_NewRef(Py_None);
    }
    nmh_release(bs);
    return result;
}

// ok: as nmh_finish_update's. Then the env and the workspace, and with the GIL released the
// actions (the uniform draws or the actors'), each env's step with its transition stored, and with
// learn the update. Returns how many envs ended their episode.
static PyObject *nmh_finish_step(nmh_bufs *bs, int ok, const nmh_agents *ag, const nmh_algo *algo,
    const nmh_step_args *s) {
    nmh_env e;
    float *mem = NULL;
    PyObject *result = NULL;
    if (ok && nmh_check_pos(s->pos, ag)
        && nmh_parse_env(bs, s->env, s->explore, s->uniform_draws, ag->P, ag->o, ag->na, s->i, &e)) {
        mem = nmh_parse_work(bs, s->work, algo->need(ag));
    }
    if (mem) {
        size_t ended;
        Py_BEGIN_ALLOW_THREADS
        // the actions and their tape in the workspace: the store reads them before the update writes it
        float *action = mem, *tape = mem + ag->P * ag->na;
        if (s->uniform) {
            memcpy(action, e.uniform, ag->P * ag->na * sizeof(float));
        } else {
            algo->act(ag, &e, action, tape);
        }
        ended = nmh_env_store(&e, (float *)ag->replay, ag->P, ag->cap, ag->width, (size_t)s->pos, action, s->scale,
            s->offset);
        if (s->learn) {
            algo->update(ag, mem);
        }
        Py_END_ALLOW_THREADS
        result = PyLong_FromSize_t(ended);
    }
    nmh_release(bs);
    return result;
}

#endif // NM_HOST_AGENTS_H

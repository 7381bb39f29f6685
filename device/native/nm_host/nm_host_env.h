/*
 * nm_host_env.h - the built-in envs inside nm_host's whole-step calls (td3_step,
 * sac_step): the pendulum or the quadrotor, their arrays from Python, checked, and
 * one step of every agent's env with its transition stored in the replay ring.
 */
#ifndef NM_HOST_ENV_H
#define NM_HOST_ENV_H

#include <Python.h>
#include <stdbool.h>
#include <string.h>

#include "nm_pendulum.h"
#include "nm_quadrotor.h"
#include "nm_host_args.h"

typedef struct {
    double *state, *ep_return;
    int64_t *ep_len;
    float *obs;
    const float *explore, *uniform; // this step's draws, (P, na) each
    int64_t max_steps;
    size_t o, na;
    // the quadrotor's (quad true): its model, per-drone mass and thrust, action history, terminations
    bool quad;
    nm_quad_model model;
    const double *params;
    double *history;
    size_t history_len;
    bool *terminated;
} nmh_env;

// The quadrotor's arrays after the common five: model (len,) float64, params (P, 2) float64,
// history (P, k, 4) float64, terminated (P,) bool; obs (P, o) must be its observation.
static int nmh_parse_quadrotor(nmh_bufs *bs, PyObject *env, size_t P, nmh_env *e) {
    Py_ssize_t mshape[1] = {(Py_ssize_t)NM_QUAD_MODEL_LEN}, pshape[2] = {(Py_ssize_t)P, 2};
    Py_ssize_t hshape[3] = {(Py_ssize_t)P, -1, NM_QUAD_ACT}, tshape[1] = {(Py_ssize_t)P};
    const double *model = nmh_get(bs, PyTuple_GET_ITEM(env, 5), "model", 'd', 0, 1, mshape);
    if (!model || !(e->params = nmh_get(bs, PyTuple_GET_ITEM(env, 6), "params", 'd', 0, 2, pshape))
        || !(e->history = nmh_get(bs, PyTuple_GET_ITEM(env, 7), "history", 'd', 1, 3, hshape))
        || !(e->terminated = nmh_get(bs, PyTuple_GET_ITEM(env, 8), "terminated", '?', 1, 1, tshape))) {
        return 0;
    }
    memcpy(&e->model, model, sizeof e->model);
    e->history_len = (size_t)hshape[1];
    if (e->history_len > 1024 || e->o != nm_quad_history_offset(&e->model) + NM_QUAD_ACT * e->history_len
        || e->na != NM_QUAD_ACT) {
        PyErr_Format(PyExc_ValueError, "the quadrotor with %zu actions of history observes %zu numbers and takes "
            "4 actions: the networks take %zu and give %zu", e->history_len,
            nm_quad_history_offset(&e->model) + NM_QUAD_ACT * e->history_len, e->o, e->na);
        return 0;
    }
    return 1;
}

// env = (state, obs (P, o) float32, ep_return (P,) float64, ep_len (P,) int64, max_steps): the
// pendulum, state (P, 2) float64; with (model, params, history, terminated) after them the
// quadrotor, state (P, 17) float64. explore and uniform (N, P, na) float32, of which step i is used.
static int nmh_parse_env(nmh_bufs *bs, PyObject *env, PyObject *explore_a, PyObject *uniform_a, size_t P, size_t o,
    size_t na, Py_ssize_t i, nmh_env *e) {
    PyObject *state, *obs, *ep_return, *ep_len;
    if (!PyTuple_Check(env) || (PyTuple_GET_SIZE(env) != 5 && PyTuple_GET_SIZE(env) != 9)) {
        PyErr_SetString(PyExc_ValueError, "env must be (state, obs, ep_return, ep_len, max_steps), and for the "
            "quadrotor (model, params, history, terminated) after them");
        return 0;
    }
    state = PyTuple_GET_ITEM(env, 0), obs = PyTuple_GET_ITEM(env, 1);
    ep_return = PyTuple_GET_ITEM(env, 2), ep_len = PyTuple_GET_ITEM(env, 3);
    e->max_steps = PyLong_AsLongLong(PyTuple_GET_ITEM(env, 4));
    if (e->max_steps == -1 && PyErr_Occurred()) {
        return 0;
    }
    e->quad = PyTuple_GET_SIZE(env) == 9;
    e->o = o, e->na = na;
    if (!e->quad && (o != NM_PENDULUM_OBS || na != NM_PENDULUM_ACT)) {
        PyErr_Format(PyExc_ValueError, "the pendulum observes 3 numbers and takes 1 action: the networks take %zu "
            "and give %zu", o, na);
        return 0;
    }
    if (e->quad && !nmh_parse_quadrotor(bs, env, P, e)) {
        return 0;
    }
    Py_ssize_t sshape[2] = {(Py_ssize_t)P, e->quad ? NM_QUAD_STATE : 2}, oshape[2] = {(Py_ssize_t)P, (Py_ssize_t)o};
    Py_ssize_t pshape[1] = {(Py_ssize_t)P}, lshape[1] = {(Py_ssize_t)P};
    Py_ssize_t eshape[3] = {-1, (Py_ssize_t)P, (Py_ssize_t)na}, ushape[3] = {-1, (Py_ssize_t)P, (Py_ssize_t)na};
    const float *ex, *un;
    if (!(e->state = nmh_get(bs, state, "state", 'd', 1, 2, sshape))
        || !(e->obs = nmh_get(bs, obs, "obs", 'f', 1, 2, oshape))
        || !(e->ep_return = nmh_get(bs, ep_return, "ep_return", 'd', 1, 1, pshape))
        || !(e->ep_len = nmh_get(bs, ep_len, "ep_len", 'q', 1, 1, lshape))
        || !(ex = nmh_get(bs, explore_a, "explore", 'f', 0, 3, eshape))) {
        return 0;
    }
    ushape[0] = eshape[0];
    if (!(un = nmh_get(bs, uniform_a, "uniform", 'f', 0, 3, ushape))) {
        return 0;
    }
    if (i < 0 || i >= eshape[0]) {
        PyErr_Format(PyExc_ValueError, "step %zd of a block of %zd", i, eshape[0]);
        return 0;
    }
    e->explore = ex + (size_t)i * P * na;
    e->uniform = un + (size_t)i * P * na;
    return 1;
}

// One env step of agent k under `action` (na floats in [-1, 1]) times scale plus offset: obs
// (o floats) becomes the step's observation; returns the reward, *terminated whether it ended
// the episode (the quadrotor leaving its box; the pendulum never does).
static float nmh_env_step_one(const nmh_env *e, size_t k, const float *action, float scale, float offset,
    bool *terminated) {
    float *obs = e->obs + k * e->o;
    if (!e->quad) {
        *terminated = false;
        return nm_pendulum_step(e->state + 2 * k, action[0] * scale + offset, obs);
    }
    double a[NM_QUAD_ACT];
    for (size_t j = 0; j < NM_QUAD_ACT; j++) {
        a[j] = (double)(action[j] * scale + offset);
    }
    float r;
    *terminated = nm_quad_step(&e->model, e->state + NM_QUAD_STATE * k, e->params[2 * k], e->params[2 * k + 1], a,
        e->history + k * e->history_len * NM_QUAD_ACT, e->history_len, obs, &r);
    e->terminated[k] = *terminated;
    return r;
}

// Step every agent's env with action[k] * scale + offset and store the transition in row pos of
// its ring (replay (P, cap, width), rows [a, s, 1, r, not_done, s', 1]); obs becomes the step's
// final observation. Returns how many envs ended their episode: terminated (the quadrotor's
// `terminated` says which) or at max_steps. Their reset is the caller's.
static size_t nmh_env_store(const nmh_env *e, float *replay, size_t P, size_t cap, size_t width, size_t pos,
    const float *action, float scale, float offset) {
    const size_t o = e->o, na = e->na;
    size_t done = 0;
    for (size_t k = 0; k < P; k++) {
        float *row = replay + (k * cap + pos) * width;
        memcpy(row, action + k * na, na * sizeof(float));
        memcpy(row + na, e->obs + k * o, o * sizeof(float));
        bool terminated;
        const float r = nmh_env_step_one(e, k, action + k * na, scale, offset, &terminated);
        e->ep_return[k] += (double)r;
        ++e->ep_len[k];
        done += terminated || e->ep_len[k] >= e->max_steps;
        row[na + o + 1] = r;
        row[na + o + 2] = terminated ? 0.0f : 1.0f;
        memcpy(row + na + o + 3, e->obs + k * o, o * sizeof(float));
    }
    return done;
}

#endif // NM_HOST_ENV_H

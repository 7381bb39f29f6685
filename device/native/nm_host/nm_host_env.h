/*
 * nm_host_env.h - the built-in pendulum inside nm_host's whole-step calls
 * (td3_step, sac_step): the envs' arrays from Python, checked, and one step of
 * every agent's env with its transition stored in the replay ring.
 */
#ifndef NM_HOST_ENV_H
#define NM_HOST_ENV_H

#include <Python.h>
#include <string.h>

#include "nm_pendulum.h"
#include "nm_host_args.h"

typedef struct {
    double *state, *ep_return;
    int64_t *ep_len;
    float *obs;
    const float *explore, *uniform; // this step's draws, (P, 1) each
    int64_t max_steps;
} nmh_env;

// env = (state (P, 2) float64, obs (P, 3) float32, ep_return (P,) float64, ep_len (P,) int64, max_steps);
// explore and uniform (n, P, 1) float32, of which step i is used.
static int nmh_parse_env(nmh_bufs *bs, PyObject *env, PyObject *explore_a, PyObject *uniform_a, size_t P, size_t n,
    size_t i, nmh_env *e) {
    PyObject *state, *obs, *ep_return, *ep_len;
    if (!PyTuple_Check(env) || !PyArg_ParseTuple(env, "OOOOL;env must be (state, obs, ep_return, ep_len, max_steps)",
            &state, &obs, &ep_return, &ep_len, &e->max_steps)) {
        return 0;
    }
    Py_ssize_t sshape[2] = {(Py_ssize_t)P, 2}, oshape[2] = {(Py_ssize_t)P, NM_PENDULUM_OBS};
    Py_ssize_t pshape[1] = {(Py_ssize_t)P}, lshape[1] = {(Py_ssize_t)P};
    Py_ssize_t eshape[3] = {(Py_ssize_t)n, (Py_ssize_t)P, 1}, ushape[3] = {(Py_ssize_t)n, (Py_ssize_t)P, 1};
    const float *ex, *un;
    if (!(e->state = nmh_get(bs, state, "state", 'd', 1, 2, sshape))
        || !(e->obs = nmh_get(bs, obs, "obs", 'f', 1, 2, oshape))
        || !(e->ep_return = nmh_get(bs, ep_return, "ep_return", 'd', 1, 1, pshape))
        || !(e->ep_len = nmh_get(bs, ep_len, "ep_len", 'q', 1, 1, lshape))
        || !(ex = nmh_get(bs, explore_a, "explore", 'f', 0, 3, eshape))
        || !(un = nmh_get(bs, uniform_a, "uniform", 'f', 0, 3, ushape))) {
        return 0;
    }
    e->explore = ex + i * P;
    e->uniform = un + i * P;
    return 1;
}

// Step every agent's pendulum with action[k] * scale + offset and store the transition in row pos
// of its ring (replay (P, cap, width), rows [a, s, 1, r, not_done, s', 1]); obs becomes the step's
// final observation. Returns how many envs reached max_steps (their reset is the caller's).
static size_t nmh_pendulum_store(const nmh_env *e, float *replay, size_t P, size_t cap, size_t width, size_t pos,
    const float *action, float scale, float offset) {
    const size_t o = NM_PENDULUM_OBS;
    size_t done = 0;
    for (size_t k = 0; k < P; k++) {
        float *row = replay + (k * cap + pos) * width;
        row[0] = action[k];
        memcpy(row + 1, e->obs + k * o, o * sizeof(float));
        const float r = nm_pendulum_step(e->state + 2 * k, action[k] * scale + offset, e->obs + k * o);
        e->ep_return[k] += (double)r;
        done += ++e->ep_len[k] >= e->max_steps;
        row[1 + o + 1] = r;
        row[1 + o + 2] = 1.0f; // Pendulum-v1 never terminates: every transition bootstraps
        memcpy(row + 1 + o + 3, e->obs + k * o, o * sizeof(float));
    }
    return done;
}

#endif // NM_HOST_ENV_H

/*
 * nm_host_quadrotor.h - quadrotor_step: neuromotor.envs.QuadrotorVec's step for
 * a whole population in one call, every array checked before any is touched.
 */
#ifndef NM_HOST_QUADROTOR_H
#define NM_HOST_QUADROTOR_H

#include <Python.h>

#include "nm_quadrotor.h"
#include "nm_host_args.h"

static const char quadrotor_step_doc[] =
    "quadrotor_step(model, state, params, actions, history, obs, reward, terminated)\n"
    "Step n drones: model (len,) float64 (envs.quadrotor.MODEL), state (n, 17) float64, params (n, 2)\n"
    "float64 (mass, thrust coefficient), actions (n, 4) float64, history (n, k, 4) float64, obs\n"
    "(n, 18 + 4 k) float32 (22 + 4 k when the model observes the rotor speeds), reward (n,) float32,\n"
    "terminated (n,) bool; state, history, obs, reward and terminated are written.";

static PyObject *nmh_quadrotor_step(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *model_a, *state_a, *params_a, *actions_a, *history_a, *obs_a, *reward_a, *term_a;
    if (!PyArg_ParseTuple(args, "OOOOOOOO:quadrotor_step", &model_a, &state_a, &params_a, &actions_a, &history_a,
            &obs_a, &reward_a, &term_a)) {
        return NULL;
    }
    nmh_bufs bs = {.n = 0};
    PyObject *result = NULL;
    Py_ssize_t mshape[1] = {(Py_ssize_t)NM_QUAD_MODEL_LEN}, sshape[2] = {-1, NM_QUAD_STATE};
    const double *model = nmh_get(&bs, model_a, "model", 'd', 0, 1, mshape);
    double *state = model ? nmh_get(&bs, state_a, "state", 'd', 1, 2, sshape) : NULL;
    if (!state) {
        goto out;
    }
    const Py_ssize_t n = sshape[0];
    if (n > (1 << 20)) {
        PyErr_SetString(PyExc_ValueError, "state must hold at most 2^20 drones");
        goto out;
    }
    Py_ssize_t pshape[2] = {n, 2}, ashape[2] = {n, NM_QUAD_ACT}, hshape[3] = {n, -1, NM_QUAD_ACT};
    const double *params = nmh_get(&bs, params_a, "params", 'd', 0, 2, pshape);
    const double *actions = params ? nmh_get(&bs, actions_a, "actions", 'd', 0, 2, ashape) : NULL;
    double *history = actions ? nmh_get(&bs, history_a, "history", 'd', 1, 3, hshape) : NULL;
    if (!history) {
        goto out;
    }
    const size_t k = (size_t)hshape[1];
    if (k > 1024) {
        PyErr_SetString(PyExc_ValueError, "history must hold at most 1024 actions");
        goto out;
    }
    nm_quad_model m;
    memcpy(&m, model, sizeof m);
    Py_ssize_t oshape[2] = {n, (Py_ssize_t)(nm_quad_history_offset(&m) + 4 * k)}, rshape[1] = {n}, tshape[1] = {n};
    float *obs = nmh_get(&bs, obs_a, "obs", 'f', 1, 2, oshape);
    float *reward = obs ? nmh_get(&bs, reward_a, "reward", 'f', 1, 1, rshape) : NULL;
    bool *terminated = reward ? nmh_get(&bs, term_a, "terminated", '?', 1, 1, tshape) : NULL;
    if (!terminated || !nmh_check_disjoint(&bs)) {
        goto out;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        terminated[i] = nm_quad_step(&m, state + i * NM_QUAD_STATE, params[2 * i], params[2 * i + 1],
            actions + i * NM_QUAD_ACT, history + (size_t)i * k * NM_QUAD_ACT, k, obs + (size_t)i * oshape[1],
            reward + i);
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
out:
    nmh_release(&bs);
    return result;
}

#endif // NM_HOST_QUADROTOR_H

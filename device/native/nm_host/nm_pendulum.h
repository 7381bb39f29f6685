/*
 * nm_pendulum.h - gymnasium's Pendulum-v1 step for the host's native trainer:
 * neuromotor.envs.PendulumVec bit for bit. The state is doubles; every
 * operation is NumPy's, in its order (the file is compiled without contraction,
 * so no multiply-add is fused): the float32 torque clipped in float32, then the
 * cost, the dynamics and the clip in double; the reward and the observation
 * rounded to float32 at the end.
 */
#ifndef NM_PENDULUM_H
#define NM_PENDULUM_H

#include <math.h>

#define NM_PENDULUM_OBS 3
#define NM_PENDULUM_ACT 1

// np.maximum / np.minimum: a NaN operand gives NaN.
static inline double nm_pend_max(double a, double b) {
    return (a != a || a > b) ? a : b;
}

static inline double nm_pend_min(double a, double b) {
    return (a != a || a < b) ? a : b;
}

static inline float nm_pend_maxf(float a, float b) {
    return (a != a || a > b) ? a : b;
}

static inline float nm_pend_minf(float a, float b) {
    return (a != a || a < b) ? a : b;
}

// NumPy's float64 remainder (Python's %): the sign of the divisor.
static inline double nm_pend_remainder(double a, double b) {
    double mod = fmod(a, b);
    if (mod != 0.0) {
        if ((b < 0.0) != (mod < 0.0)) {
            mod += b;
        }
    } else {
        mod = copysign(0.0, b);
    }
    return mod;
}

static inline void nm_pendulum_observe(const double *state, float *obs) {
    obs[0] = (float)cos(state[0]);
    obs[1] = (float)sin(state[0]);
    obs[2] = (float)state[1];
}

// One step of one env: state (theta, theta_dot) in place, obs the new observation;
// returns the reward.
static inline float nm_pendulum_step(double *state, float torque, float *obs) {
    const double pi = 3.141592653589793, two_pi = 6.283185307179586;
    const double th = state[0], thdot = state[1];
    const double u = (double)nm_pend_minf(nm_pend_maxf(torque, -2.0f), 2.0f);
    const double norm_th = nm_pend_remainder(th + pi, two_pi) - pi;
    const double costs = (norm_th * norm_th + 0.1 * (thdot * thdot)) + 0.001 * (u * u);
    double newthdot = thdot + (15.0 * sin(th) + 3.0 * u) * 0.05;
    newthdot = nm_pend_min(nm_pend_max(newthdot, -8.0), 8.0);
    state[0] = th + newthdot * 0.05;
    state[1] = newthdot;
    nm_pendulum_observe(state, obs);
    return (float)(-costs);
}

#endif // NM_PENDULUM_H

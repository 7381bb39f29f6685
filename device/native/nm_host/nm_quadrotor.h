/*
 * nm_quadrotor.h - the Crazyflie 2.x hover task of neuromotor.envs.quadrotor,
 * one drone at a time: the rigid body and its first-order rotors integrated
 * by RK4, the action history, the reward and the termination. The state is
 * doubles and the operations follow the NumPy reference's order (the file is
 * compiled without contraction), so the two agree to rounding; the
 * observation and the reward are rounded to float32 at the end, as there.
 * The parameters are the module's (see its docstring for their source).
 */
#ifndef NM_QUADROTOR_H
#define NM_QUADROTOR_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define NM_QUAD_STATE 17 // p[3], q[4] (w, x, y, z), v[3] (world), w[3] (body), rpm[4]
#define NM_QUAD_ACT 4
#define NM_QUAD_OBS_BASE 18 // p[3] (scaled), R[9] row-major, v[3], w[3]; then the rotor speeds, the action history

// The model's numbers in this order, all doubles: neuromotor.envs.quadrotor.model().
typedef struct {
    double gravity, inertia[3], rotor_x[4], rotor_y[4], torque_per_thrust, yaw_sign[4];
    double motor_time_constant, rpm_max, dt;
    double position_weight, orientation_weight, velocity_weight, action_weight, distance_weight;
    double non_negative; // 1: a reward below 0 counts as 0
    double reward_scale, reward_constant, hover_action, position_limit;
    double observe_rotor_speeds; // 1: four rotor speeds follow w[3] in the observation
    double position_scale; // the observation's position error is p times this
} nm_quad_model;

#define NM_QUAD_MODEL_LEN (sizeof(nm_quad_model) / sizeof(double))

// Where the action history starts in the observation.
static inline size_t nm_quad_history_offset(const nm_quad_model *m) {
    return NM_QUAD_OBS_BASE + (m->observe_rotor_speeds != 0 ? 4 : 0);
}

// The body-to-world rotation of unit quaternion q (w, x, y, z), row-major.
static inline void nm_quad_rotation(const double *q, double *r) {
    const double w = q[0], x = q[1], y = q[2], z = q[3];
    r[0] = 1 - 2 * (y * y + z * z);
    r[1] = 2 * (x * y - w * z);
    r[2] = 2 * (x * z + w * y);
    r[3] = 2 * (x * y + w * z);
    r[4] = 1 - 2 * (x * x + z * z);
    r[5] = 2 * (y * z - w * x);
    r[6] = 2 * (x * z - w * y);
    r[7] = 2 * (y * z + w * x);
    r[8] = 1 - 2 * (x * x + y * y);
}

static inline double nm_quad_dot4(const double *a, const double *b) {
    return ((a[0] * b[0] + a[1] * b[1]) + a[2] * b[2]) + a[3] * b[3];
}

// d state / dt with the rotors commanded to cmd (rpm).
static void nm_quad_derivative(const nm_quad_model *m, const double *s, const double *cmd, double mass,
    double thrust_per_rpm2, double *d) {
    const double *q = s + 3, *v = s + 7, *w = s + 10, *rpm = s + 13;
    double thrust[4], r[9];
    for (int i = 0; i < 4; i++) {
        thrust[i] = thrust_per_rpm2 * rpm[i] * rpm[i];
    }
    const double total = ((thrust[0] + thrust[1]) + thrust[2]) + thrust[3];
    nm_quad_rotation(q, r);
    d[0] = v[0];
    d[1] = v[1];
    d[2] = v[2];
    // r x (0, 0, T) = (r_y T, -r_x T, 0), and the rotors' drag about z
    const double torque[3] = {nm_quad_dot4(thrust, m->rotor_y), -nm_quad_dot4(thrust, m->rotor_x),
                              m->torque_per_thrust * nm_quad_dot4(thrust, m->yaw_sign)};
    const double *J = m->inertia;
    const double jw[3] = {w[0] * J[0], w[1] * J[1], w[2] * J[2]};
    const double gyro[3] = {w[1] * jw[2] - w[2] * jw[1], w[2] * jw[0] - w[0] * jw[2], w[0] * jw[1] - w[1] * jw[0]};
    d[3] = 0.5 * (-q[1] * w[0] - q[2] * w[1] - q[3] * w[2]);
    d[4] = 0.5 * (q[0] * w[0] + q[2] * w[2] - q[3] * w[1]);
    d[5] = 0.5 * (q[0] * w[1] - q[1] * w[2] + q[3] * w[0]);
    d[6] = 0.5 * (q[0] * w[2] + q[1] * w[1] - q[2] * w[0]);
    d[7] = r[2] * total / mass;
    d[8] = r[5] * total / mass;
    d[9] = r[8] * total / mass - m->gravity;
    for (int i = 0; i < 3; i++) {
        d[10 + i] = (torque[i] - gyro[i]) / J[i];
    }
    for (int i = 0; i < 4; i++) {
        d[13 + i] = (cmd[i] - rpm[i]) / m->motor_time_constant;
    }
}

// np.clip's order: a NaN stays NaN.
static inline double nm_quad_clip(double x, double lo, double hi) {
    return x < lo ? lo : (x > hi ? hi : x);
}

// One step of one drone: state advanced by RK4 under actions a (clipped to [-1, 1]), the
// history shifted by one with the clipped action last, obs and reward written. Returns
// whether the drone left the box around the target or its state is no longer finite.
static bool nm_quad_step(const nm_quad_model *m, double *s, double mass, double thrust_per_rpm2, const double *a,
    double *history, size_t history_len, float *obs, float *reward) {
    double act[4], cmd[4], k1[NM_QUAD_STATE], k2[NM_QUAD_STATE], k3[NM_QUAD_STATE], k4[NM_QUAD_STATE];
    double tmp[NM_QUAD_STATE];
    for (int i = 0; i < 4; i++) {
        act[i] = nm_quad_clip(a[i], -1.0, 1.0);
        cmd[i] = (act[i] + 1) / 2 * m->rpm_max;
    }
    const double dt = m->dt, half = dt / 2, sixth = dt / 6;
    nm_quad_derivative(m, s, cmd, mass, thrust_per_rpm2, k1);
    for (int i = 0; i < NM_QUAD_STATE; i++) {
        tmp[i] = s[i] + half * k1[i];
    }
    nm_quad_derivative(m, tmp, cmd, mass, thrust_per_rpm2, k2);
    for (int i = 0; i < NM_QUAD_STATE; i++) {
        tmp[i] = s[i] + half * k2[i];
    }
    nm_quad_derivative(m, tmp, cmd, mass, thrust_per_rpm2, k3);
    for (int i = 0; i < NM_QUAD_STATE; i++) {
        tmp[i] = s[i] + dt * k3[i];
    }
    nm_quad_derivative(m, tmp, cmd, mass, thrust_per_rpm2, k4);
    for (int i = 0; i < NM_QUAD_STATE; i++) {
        s[i] = s[i] + sixth * (((k1[i] + 2 * k2[i]) + 2 * k3[i]) + k4[i]);
    }
    for (int i = 13; i < 17; i++) {
        s[i] = nm_quad_clip(s[i], 0.0, m->rpm_max);
    }
    const double norm = sqrt(((s[3] * s[3] + s[4] * s[4]) + s[5] * s[5]) + s[6] * s[6]);
    for (int i = 3; i < 7; i++) {
        s[i] /= norm;
    }
    if (history_len) {
        memmove(history, history + 4, (history_len - 1) * 4 * sizeof(double));
        memcpy(history + (history_len - 1) * 4, act, sizeof act);
    }

    double r[9];
    nm_quad_rotation(s + 3, r);
    for (int i = 0; i < 3; i++) {
        obs[i] = (float)(s[i] * m->position_scale);
        obs[12 + i] = (float)s[7 + i];
        obs[15 + i] = (float)s[10 + i];
    }
    for (int i = 0; i < 9; i++) {
        obs[3 + i] = (float)r[i];
    }
    if (m->observe_rotor_speeds != 0) {
        for (int i = 0; i < 4; i++) { // as a command: -1 stopped, 1 full speed
            obs[NM_QUAD_OBS_BASE + i] = (float)(2 * s[13 + i] / m->rpm_max - 1);
        }
    }
    const size_t offset = nm_quad_history_offset(m);
    for (size_t i = 0; i < history_len * 4; i++) {
        obs[offset + i] = (float)history[i];
    }

    double p2 = 0, v2 = 0, a2 = 0;
    for (int i = 0; i < 3; i++) {
        p2 += s[i] * s[i];
        v2 += s[7 + i] * s[7 + i];
    }
    for (int i = 0; i < 4; i++) {
        a2 += (act[i] - m->hover_action) * (act[i] - m->hover_action);
    }
    const double cost = (((m->position_weight * p2 + m->orientation_weight * (1 - s[3] * s[3]))
                             + m->velocity_weight * v2) + m->action_weight * a2) + m->distance_weight * sqrt(p2);
    const double value = m->reward_constant - m->reward_scale * cost;
    *reward = (float)(m->non_negative != 0 && value < 0 ? 0 : value);
    bool out = false;
    for (int i = 0; i < 3; i++) {
        out |= fabs(s[i]) > m->position_limit;
    }
    for (int i = 0; i < NM_QUAD_STATE; i++) {
        out |= !isfinite(s[i]);
    }
    return out;
}

#endif // NM_QUADROTOR_H

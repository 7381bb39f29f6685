/*
 * nm_sac_steps.h - the SAC-specific steps: the tanh-squashed Gaussian sample of
 * an actor's [mean, log_std] outputs with its log-probability and its backward,
 * and the soft Bellman target of the twin critics.
 *
 * Batches are feature-major as in nm_mlp_train.h: out is 2a x n (rows 0..a-1 the
 * means, a..2a-1 the log-stds), noise, actions and their gradients a x n. The
 * operations run in the order of the host's NumPy update (neuromotor.algos.sac),
 * each rounded to float32.
 */
#ifndef NM_SAC_STEPS_H
#define NM_SAC_STEPS_H

#include "nm_math.h"
#include "nm_sac_steps_avx2.h"

#define NM_SAC_HALF_LOG_2PI 0.918938533204672742f
// keeps log(1 - a^2) finite at |a| = 1 (RLtools' and SB3's constant)
#define NM_SAC_LOG_PROB_EPS 1e-6f

static inline float nm_sac_log_std(float x, float lo, float hi) {
    return x < lo ? lo : (x > hi ? hi : x);
}

// action = tanh(mean + exp(clip(log_std)) * eps);
// logp[k] = sum_j -eps^2 / 2 - log_std - log(2 pi) / 2 - log(1 - a^2 + 1e-6).
static inline void nm_sac_sample(const float *out, const float *eps, size_t a, size_t n, float lo, float hi,
    float *action, float *logp) {
    size_t k0 = 0;
    #if NM_AVX2
    if (nm_isa() == NM_ISA_AVX2) {
        k0 = nm_sac_sample_avx2(out, eps, a, n, lo, hi, NM_SAC_HALF_LOG_2PI, NM_SAC_LOG_PROB_EPS, action, logp);
    }
    #endif
    for (size_t k = k0; k < n; k++) {
        logp[k] = 0.0f;
    }
    for (size_t j = 0; j < a; j++) {
        const float *mean = out + j * n, *ls = out + (a + j) * n, *e = eps + j * n;
        float *act = action + j * n;
        for (size_t k = k0; k < n; k++) {
            const float log_std = nm_sac_log_std(ls[k], lo, hi);
            const float u = mean[k] + nm_expf(log_std) * e[k];
            act[k] = nm_tanhf(u);
            const float oma = 1.0f - act[k] * act[k];
            float t = (-0.5f * e[k]) * e[k];
            t = t - log_std;
            t = t - NM_SAC_HALF_LOG_2PI;
            t = t - nm_logf(oma + NM_SAC_LOG_PROB_EPS);
            logp[k] = j ? logp[k] + t : t;
        }
    }
}

// dL/d[mean, log_std] (d_out, 2a x n) from dL/daction (d_action, a x n) and a dL/dlogp
// the same for every sample; the clip passes the log-std's gradient only inside its range.
static inline void nm_sac_sample_backward(const float *out, const float *eps, const float *action,
    const float *d_action, float d_logp, size_t a, size_t n, float lo, float hi, float *d_out) {
    size_t k0 = 0;
    #if NM_AVX2
    if (nm_isa() == NM_ISA_AVX2) {
        k0 = nm_sac_sample_backward_avx2(out, eps, action, d_action, d_logp, a, n, lo, hi, NM_SAC_LOG_PROB_EPS,
            d_out);
    }
    #endif
    for (size_t j = 0; j < a; j++) {
        const float *ls = out + (a + j) * n, *e = eps + j * n, *act = action + j * n, *da = d_action + j * n;
        float *d_mean = d_out + j * n, *d_ls = d_out + (a + j) * n;
        for (size_t k = k0; k < n; k++) {
            const float oma = 1.0f - act[k] * act[k];
            // d logp / du = 2 a (1 - a^2) / (1 - a^2 + 1e-6);  da / du = 1 - a^2
            float du = da[k] * oma;
            du = du + d_logp * nm_divf((2.0f * act[k]) * oma, oma + NM_SAC_LOG_PROB_EPS);
            d_mean[k] = du;
            const float in_range = ls[k] > lo && ls[k] < hi ? 1.0f : 0.0f;
            const float std = nm_expf(nm_sac_log_std(ls[k], lo, hi));
            d_ls[k] = ((du * std) * e[k] - d_logp) * in_range;
        }
    }
}

// y = (min(q1, q2) - alpha logp) * not_done * gamma + r  (the host's order of operations)
static inline void nm_sac_bellman(float *y, const float *q1, const float *q2, const float *logp, float alpha,
    const float *r, const float *not_done, size_t n, float gamma) {
    for (size_t i = 0; i < n; i++) {
        float v = q1[i] < q2[i] ? q1[i] : q2[i];
        v = v - alpha * logp[i];
        v = v * not_done[i];
        v = v * gamma;
        y[i] = v + r[i];
    }
}

#endif // NM_SAC_STEPS_H

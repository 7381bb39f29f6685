/*
 * nm_td3_steps.h - the TD3-specific steps: target policy smoothing, the
 * Bellman target of the twin critics, the critic loss gradient, and the
 * replay buffer.
 */
#ifndef NM_TD3_STEPS_H
#define NM_TD3_STEPS_H

#include "nm_half.h"
#include "nm_kernels.h"

// Actions live in [-1, 1].
static inline float nm_clampf(float x, float lo, float hi) {
    return x < lo ? lo : (x > hi ? hi : x);
}

// a = clip(a + clip(noise * scale, -clip, clip), -1, 1): target policy
// smoothing, and (with a huge clip) exploration noise.
static inline void nm_td3_smooth(float *a, const float *noise, size_t n, float scale, float clip) {
    for (size_t i = 0; i < n; i++) {
        a[i] = nm_clampf(a[i] + nm_clampf(noise[i] * scale, -clip, clip), -1.0f, 1.0f);
    }
}

// y = r + gamma * not_done * min(q1, q2)  (the host's order of operations)
static inline void nm_td3_bellman(float *y, const float *q1, const float *q2, const float *r,
    const float *not_done, size_t n, float gamma) {
    for (size_t i = 0; i < n; i++) {
        float q = q1[i] < q2[i] ? q1[i] : q2[i];
        q = q * not_done[i];
        q = q * gamma;
        y[i] = q + r[i];
    }
}

// dq = (q - y) * scale (scale = 2 / B: gradient of mean (q - y)^2); returns the loss mean.
static inline float nm_td3_critic_grad(float *dq, const float *q, const float *y, size_t n, float scale) {
    float loss = 0.0f;
    for (size_t i = 0; i < n; i++) {
        const float e = q[i] - y[i];
        loss += e * e;
        dq[i] = e * scale;
    }
    return n ? nm_divf(loss, (float)n) : 0.0f;
}

/* ---------------------------------------------------------------------------
 * Replay buffer: rows of [s (o), a (na), r, not_done, s' (o)] in one array of
 * floats, or of binary16 halves (`half`: twice the rows in the same RAM).
 */
static inline void nm_replay_set(void *replay, int half, size_t i, float v) {
    if (half) {
        ((uint16_t *)replay)[i] = nm_half_of(v);
    } else {
        ((float *)replay)[i] = v;
    }
}

static inline float nm_replay_get(const void *replay, int half, size_t i) {
    return half ? nm_float_of_half(((const uint16_t *)replay)[i]) : ((const float *)replay)[i];
}

static inline void nm_replay_push(void *replay, int half, size_t pos, const float *s, const float *a,
    float r, float not_done, const float *s2, size_t o, size_t na) {
    const size_t row = pos * (2 * o + na + 2);
    for (size_t i = 0; i < o; i++) {
        nm_replay_set(replay, half, row + i, s[i]);
        nm_replay_set(replay, half, row + o + na + 2 + i, s2[i]);
    }
    for (size_t i = 0; i < na; i++) {
        nm_replay_set(replay, half, row + o + i, a[i]);
    }
    nm_replay_set(replay, half, row + o + na, r);
    nm_replay_set(replay, half, row + o + na + 1, not_done);
}

// Gather the rows idx[0..B) into feature-major batches: sa ((o + na) x B),
// r (B), not_done (B), s2 (o x B).
static inline void nm_replay_gather(const void *replay, int half, const uint32_t *idx, size_t B, size_t o,
    size_t na, float *sa, float *r, float *not_done, float *s2) {
    const size_t row_len = 2 * o + na + 2;
    for (size_t k = 0; k < B; k++) {
        const size_t row = (size_t)idx[k] * row_len;
        for (size_t i = 0; i < o + na; i++) {
            sa[i * B + k] = nm_replay_get(replay, half, row + i);
        }
        r[k] = nm_replay_get(replay, half, row + o + na);
        not_done[k] = nm_replay_get(replay, half, row + o + na + 1);
        for (size_t i = 0; i < o; i++) {
            s2[i * B + k] = nm_replay_get(replay, half, row + o + na + 2 + i);
        }
    }
}

#endif // NM_TD3_STEPS_H

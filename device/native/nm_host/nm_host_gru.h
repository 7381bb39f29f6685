/*
 * nm_host_gru.h - the hidden recurrence of neuromotor.nn.gru for training: forward
 * over whole sequences, keeping the tape, and the backward through time, for a
 * population of M networks.
 *
 * The formulas and the tape are gru.py's, element-wise operations in the same order
 * (only the products' sums and the exponentials round differently), so the NumPy
 * backward reads this forward's tape and this backward reads NumPy's. The input
 * projection (W_i x + b_i of every step) and the gradients of W_i and b_i are single
 * matrix products the caller makes around these loops. Members are computed one
 * after the other, each in the same order whatever M is: a network's numbers do not
 * depend on the population around it. The gates are training's nm_expf and nm_tanhf,
 * 8 lanes at a time where the CPU has AVX2 (the same bits either way): a libm call
 * per gate would cost more than the matrix products.
 *
 * Layouts, all float32 and row-major: per step t, member m and row b the row
 * (t M + m) B + b of a (T, M, B, k) array; wh (M, 3H, H) and bh (M, 3H) in gate
 * order r, z, n; resets (T, M, B) bool (NULL: none), row b starting again from h0
 * before step t where set.
 */
#ifndef NM_HOST_GRU_H
#define NM_HOST_GRU_H

#include <stdbool.h>
#include <string.h>

#include "nm_act_avx2.h"
#include "nm_gemm.h"
#include "nm_math_avx2.h"

typedef struct {
    size_t T, M, B, H;                // steps, members, rows, hidden size
    const float *wh;                  // (M, 3H, H)
    const bool *resets;               // (T, M, B), or NULL
    float *h_prev, *r, *z, *n, *ghn;  // the tape, (T, M, B, H) each: h_prev the state a step started from
} nmh_gru;

static inline float nmh_sigmoid(float x) {
    return 1.0f / (1.0f + nm_expf(-x));
}

#if NM_AVX2
// nmh_sigmoid on 8 lanes, rounding as the scalar does (nm_avx_exp is nm_expf lane by lane).
NM_AVX2_FN void nmh_sigmoid_avx2(float *y, size_t n) {
    const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 e = nm_avx_exp(_mm256_xor_ps(_mm256_loadu_ps(y + i), sign));
        _mm256_storeu_ps(y + i, _mm256_div_ps(one, _mm256_add_ps(one, e)));
    }
    for (; i < n; i++) {
        y[i] = nmh_sigmoid(y[i]);
    }
}
#endif

// y = sigmoid(y) = 1 / (1 + e^-y), as neuromotor.nn.gru.sigmoid.
static inline void nmh_sigmoid_all(float *y, size_t n) {
#if NM_AVX2
    if (nm_isa() == NM_ISA_AVX2) {
        nmh_sigmoid_avx2(y, n);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++) {
        y[i] = nmh_sigmoid(y[i]);
    }
}

/* out (T, M, B, H) and the tape of gi (T, M, B, 3H) from h (M, B, H), h0 (M, H), bh (M, 3H):
 *   gh = W_h h + b_h, r = sigmoid(gi_r + gh_r), z = sigmoid(gi_z + gh_z),
 *   n = tanh(gi_n + r gh_n), h' = n + z (h - n)
 */
static void nmh_gru_forward(const nmh_gru *g, const float *gi, const float *h, const float *h0, const float *bh,
    float *out) {
    const size_t T = g->T, M = g->M, B = g->B, H = g->H, H3 = 3 * H;
    for (size_t m = 0; m < M; m++) {
        const float *wh = g->wh + m * H3 * H, *b = bh + m * H3;
        for (size_t t = 0; t < T; t++) {
            const size_t at = (t * M + m) * B; // the member's first row at step t
            const float *prev = t ? out + (at - M * B) * H : h + m * B * H, *x = gi + at * H3;
            float *hp = g->h_prev + at * H, *r = g->r + at * H, *z = g->z + at * H;
            float *n = g->n + at * H, *ghn = g->ghn + at * H, *y = out + at * H;
            for (size_t row = 0; row < B; row++) {
                const float *from = g->resets && g->resets[at + row] ? h0 + m * H : prev + row * H;
                memcpy(hp + row * H, from, H * sizeof(float));
            }
            // W_h h of each gate straight into the tape, where every gate is then finished in
            // place, a whole step's block of each activation in one call
            nm_gemm_nt(r, H, hp, H, wh, H, B, H, H);
            nm_gemm_nt(z, H, hp, H, wh + H * H, H, B, H, H);
            nm_gemm_nt(ghn, H, hp, H, wh + 2 * H * H, H, B, H, H);
            for (size_t row = 0; row < B; row++) {
                for (size_t i = 0; i < H; i++) {
                    const size_t k = row * H + i;
                    r[k] = x[row * H3 + i] + (r[k] + b[i]);
                    z[k] = x[row * H3 + H + i] + (z[k] + b[H + i]);
                    ghn[k] += b[2 * H + i];
                }
            }
            nmh_sigmoid_all(r, B * H);
            nmh_sigmoid_all(z, B * H);
            for (size_t row = 0; row < B; row++) {
                for (size_t i = 0; i < H; i++) {
                    n[row * H + i] = x[row * H3 + 2 * H + i] + r[row * H + i] * ghn[row * H + i];
                }
            }
            nm_tanh_all(n, B * H);
            for (size_t k = 0; k < B * H; k++) {
                y[k] = n[k] + z[k] * (hp[k] - n[k]);
            }
        }
    }
}

// Floats of nmh_gru_backward's workspace: W_h transposed, a step's gradient of gh, and of h through W_h.
static size_t nmh_gru_backward_work(size_t B, size_t H) {
    return 3 * H * H + B * 3 * H + B * H;
}

/* Given dL/d out (T, M, B, H) and dL/d final state d_final (M, B, H) (NULL: none): d_gi
 * (T, M, B, 3H) and, in dh (M, B, H), dL/d the starting state h (rows reset at step 0 have
 * none: they started from h0). d_wh (M, 3H, H), d_bh (M, 3H) and d_h0 (M, H), all given or
 * all NULL (not wanted), get the parameters' gradients, d_h0 through the rows reset along
 * the way. work: nmh_gru_backward_work(B, H) floats. */
static void nmh_gru_backward(const nmh_gru *g, const float *d_out, const float *d_final, float *d_gi, float *dh,
    float *d_wh, float *d_bh, float *d_h0, float *work) {
    const size_t T = g->T, M = g->M, B = g->B, H = g->H, H3 = 3 * H;
    float *wt = work, *dgh = wt + H3 * H, *dhw = dgh + B * H3;
    for (size_t m = 0; m < M; m++, dh += B * H) {
        const float *wh = g->wh + m * H3 * H;
        float *gw = d_wh ? d_wh + m * H3 * H : NULL, *gb = d_wh ? d_bh + m * H3 : NULL;
        float *g0 = d_wh ? d_h0 + m * H : NULL;
        nm_transpose(wt, wh, H3, H);
        if (d_final) {
            memcpy(dh, d_final + m * B * H, B * H * sizeof(float));
        } else {
            memset(dh, 0, B * H * sizeof(float));
        }
        if (gw) {
            memset(gw, 0, H3 * H * sizeof(float));
            memset(gb, 0, H3 * sizeof(float));
            memset(g0, 0, H * sizeof(float));
        }
        for (size_t t = T; t-- > 0;) {
            const size_t at = (t * M + m) * B;
            const float *hp = g->h_prev + at * H, *r = g->r + at * H, *z = g->z + at * H;
            const float *n = g->n + at * H, *ghn = g->ghn + at * H, *dy = d_out + at * H;
            float *dx = d_gi + at * H3;
            for (size_t row = 0; row < B; row++, dx += H3) {
                float *dg = dgh + row * H3;
                for (size_t i = 0; i < H; i++) {
                    const size_t k = row * H + i;
                    const float d = dh[k] + dy[k];
                    const float d_an = d * (1.0f - z[k]) * (1.0f - n[k] * n[k]); // through n = tanh(a_n)
                    const float d_az = d * (hp[k] - n[k]) * z[k] * (1.0f - z[k]);
                    const float d_ar = d_an * ghn[k] * r[k] * (1.0f - r[k]);   // a_n = gi_n + r ghn
                    dx[i] = dg[i] = d_ar;
                    dx[H + i] = dg[H + i] = d_az;
                    dx[2 * H + i] = d_an;
                    dg[2 * H + i] = d_an * r[k];
                    dh[k] = d * z[k]; // the part through h' = n + z (h - n); W_h's is added below
                }
            }
            if (gw) {
                nm_gemm_tn(gw, H, dgh, H3, hp, H, H3, H, B, 1, NULL, 0);
                for (size_t j = 0; j < H3; j++) {
                    float s = 0.0f;
                    for (size_t row = 0; row < B; row++) {
                        s += dgh[row * H3 + j];
                    }
                    gb[j] += s;
                }
            }
            nm_gemm_nt(dhw, H, dgh, H3, wt, H3, B, H, H3);
            for (size_t k = 0; k < B * H; k++) {
                dh[k] += dhw[k];
            }
            // a row reset here started from h0: its gradient goes there, none further back
            for (size_t row = 0; g->resets && row < B; row++) {
                if (g->resets[at + row]) {
                    for (size_t i = 0; g0 && i < H; i++) {
                        g0[i] += dh[row * H + i];
                    }
                    memset(dh + row * H, 0, H * sizeof(float));
                }
            }
        }
    }
}

#endif // NM_HOST_GRU_H

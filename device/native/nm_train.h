/*
 * nm_train.h - the training arithmetic of neuromotor (TD3 on the board).
 *
 * Plain C99 on top of nm_kernels.h (its NM_MADD, nm_tanhf, nm_divf, size
 * arithmetic and conventions): no MicroPython, no libm, no allocation. The
 * caller (device/native/trainmod glue) validates every size first.
 *
 * Training layout (differs from the block-4 inference layout):
 *   network parameters, per layer l (n_in -> n_out):
 *       W[n_in][n_out] row-major (y = x W + b, as the host's MLP), then b[n_out]
 *   activations are FEATURE-MAJOR: a batch of B samples of width n is n x B
 *   floats, row i holding feature i of every sample. Every matrix product of
 *   the forward and backward pass is then the same kernel, C = A^T B with
 *   both operands read along contiguous rows (nm_gemm_tn).
 *   tape: the outputs of every layer after activation, layer after layer,
 *   (s1 + ... + sL) x B floats; forward writes it, backward reads it.
 *   layout: uint16 L, s0..sL, act0..act(L-1), as nm_kernels.h.
 *
 * Export: nm_train_pack writes the block-4 layers nm_kernels' mlp() reads.
 */
#ifndef NM_TRAIN_H
#define NM_TRAIN_H

#include "nm_kernels.h"

#if defined(__SSE2__) && defined(__GNUC__)
#include <xmmintrin.h>
#endif

#define NM_TRAIN_VERSION 1

/* ---------------------------------------------------------------------------
 * Sizes (0 on overflow, as nm_kernels.h).
 */

// Floats of one network's parameters in the training layout.
static inline int nm_train_net_size(const uint16_t *sizes, size_t n_layers, size_t *out) {
    size_t total = 0, s;
    for (size_t l = 0; l < n_layers; l++) {
        if (!nm_mul_size((size_t)sizes[l] + 1, sizes[l + 1], &s) || !nm_add_size(total, s, &total)) {
            return 0;
        }
    }
    *out = total;
    return 1;
}

// Floats of the tape for a batch: (s1 + ... + sL) x batch.
static inline int nm_train_tape_size(const uint16_t *sizes, size_t n_layers, size_t batch, size_t *out) {
    size_t widths = 0;
    for (size_t l = 1; l <= n_layers; l++) {
        widths += sizes[l]; // <= 32 * 65535: no overflow
    }
    return nm_mul_size(widths, batch, out);
}

// Scratch floats backward needs: two delta buffers (widest x B), the
// transposed input and delta of a layer (B x (n_in + n_out)), and W^T.
static inline int nm_train_scratch_size(const uint16_t *sizes, size_t n_layers, size_t batch, size_t *out) {
    size_t widest = 0, io = 0, wt = 0;
    for (size_t l = 0; l <= n_layers; l++) {
        widest = sizes[l] > widest ? sizes[l] : widest;
    }
    for (size_t l = 0; l < n_layers; l++) {
        size_t a = (size_t)sizes[l] + sizes[l + 1], w = (size_t)sizes[l] * sizes[l + 1];
        io = a > io ? a : io;
        wt = w > wt ? w : wt;
    }
    size_t d, t, total;
    if (!nm_mul_size(2 * widest + io, batch, &d) || !nm_add_size(d, wt, &total)) {
        return 0;
    }
    (void)t;
    *out = total;
    return 1;
}

/* ---------------------------------------------------------------------------
 * Scalar maths without libm.
 */
static inline float nm_sqrtf(float x) {
    #if defined(__ARM_FP) && (__ARM_FP & 4) && defined(__GNUC__)
    float r;
    __asm__ ("vsqrt.f32 %0, %1" : "=t" (r) : "t" (x));
    return r;
    #elif defined(__SSE2__) && defined(__GNUC__)
    return _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(x)));
    #else
    if (x != x) {
        return x;
    }
    if (!(x > 0.0f)) {
        return 0.0f; // callers only take roots of non-negative numbers
    }
    union { float f; uint32_t u; } v;
    v.f = x;
    v.u = 0x5f3759dfu - (v.u >> 1); // 1/sqrt(x), rough
    float y = v.f;
    for (int i = 0; i < 4; i++) {
        y = y * (1.5f - 0.5f * x * y * y);
    }
    float r = x * y;
    return r + 0.5f * y * (x - r * r);
    #endif
}

// Natural log of a positive normal float: exponent split and atanh series.
static inline float nm_logf(float x) {
    union { float f; uint32_t u; } v;
    v.f = x;
    int e = (int)((v.u >> 23) & 0xffu) - 127;
    v.u = (v.u & 0x007fffffu) | 0x3f800000u;
    float m = v.f;
    if (m > 1.41421356f) {
        m *= 0.5f;
        e += 1;
    }
    float z = nm_divf(m - 1.0f, m + 1.0f), z2 = z * z;
    float p = 2.0f / 9.0f;
    p = p * z2 + 2.0f / 7.0f;
    p = p * z2 + 2.0f / 5.0f;
    p = p * z2 + 2.0f / 3.0f;
    p = p * z2 + 2.0f;
    return p * z + (float)e * 0.693147180559945f;
}

/* ---------------------------------------------------------------------------
 * Random numbers: xoshiro128+ (4 x uint32 state), uniform, normal (Marsaglia's
 * polar method), integers in [0, n) (multiply-shift).
 */
static inline uint32_t nm_rotl(uint32_t x, int k) {
    return (x << k) | (x >> (32 - k));
}

static inline uint32_t nm_rng_next(uint32_t *s) {
    const uint32_t result = s[0] + s[3];
    const uint32_t t = s[1] << 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = nm_rotl(s[3], 11);
    return result;
}

// Seed through splitmix32 so that nearby seeds give unrelated streams.
static inline void nm_rng_seed(uint32_t *s, uint32_t seed) {
    uint32_t z = seed;
    for (int i = 0; i < 4; i++) {
        z += 0x9e3779b9u;
        uint32_t x = z;
        x = (x ^ (x >> 16)) * 0x85ebca6bu;
        x = (x ^ (x >> 13)) * 0xc2b2ae35u;
        s[i] = x ^ (x >> 16);
    }
    if (!(s[0] | s[1] | s[2] | s[3])) {
        s[0] = 1;
    }
}

// [0, 1) with 24 random bits.
static inline float nm_rng_float(uint32_t *s) {
    return (float)(nm_rng_next(s) >> 8) * (1.0f / 16777216.0f);
}

static inline void nm_rng_uniform(uint32_t *s, float *out, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) {
        out[i] = lo + (hi - lo) * nm_rng_float(s);
    }
}

static inline void nm_rng_normal(uint32_t *s, float *out, size_t n) {
    size_t i = 0;
    while (i < n) {
        float u = 2.0f * nm_rng_float(s) - 1.0f, v = 2.0f * nm_rng_float(s) - 1.0f;
        float q = u * u + v * v;
        if (q >= 1.0f || q == 0.0f) {
            continue;
        }
        float f = nm_sqrtf(nm_divf(-2.0f * nm_logf(q), q));
        out[i++] = u * f;
        if (i < n) {
            out[i++] = v * f;
        }
    }
}

// n <= 2^24 (the caller checks); float arithmetic only, so no 64-bit or
// integer-division helpers are needed on cores without them.
static inline void nm_rng_int(uint32_t *s, uint32_t *out, size_t count, uint32_t n) {
    const float fn = (float)n;
    for (size_t i = 0; i < count; i++) {
        uint32_t k = (uint32_t)(nm_rng_float(s) * fn);
        out[i] = k < n ? k : n - 1;
    }
}

/* ---------------------------------------------------------------------------
 * The one matrix kernel: C[m][n] (=|+=) sum_k A[k][m] * B[k][n]
 * for m < M, n < N, k < K; rows of A, B, C are lda, ldb, ldc floats apart.
 * Tiles of 4 x 4 outputs (4 x 8 with SSE) in registers; each k step loads 4
 * values of A and 4 of B for 16 multiply-adds.
 */
#if defined(__GNUC__) && !defined(__clang__)
#define NM_HOT __attribute__((optimize("O2")))
#else
#define NM_HOT
#endif

NM_HOT static void nm_gemm_tn(float *C, size_t ldc, const float *A, size_t lda,
    const float *B, size_t ldb, size_t M, size_t N, size_t K, int acc) {
    size_t m = 0;
    for (; m + 4 <= M; m += 4) {
        size_t n = 0;
        #if NM_SIMD4
        for (; n + 8 <= N; n += 8) {
            float *c = C + m * ldc + n;
            nm_v4 c00, c01, c10, c11, c20, c21, c30, c31;
            if (acc) {
                c00 = NM_LOAD4(c), c01 = NM_LOAD4(c + 4);
                c10 = NM_LOAD4(c + ldc), c11 = NM_LOAD4(c + ldc + 4);
                c20 = NM_LOAD4(c + 2 * ldc), c21 = NM_LOAD4(c + 2 * ldc + 4);
                c30 = NM_LOAD4(c + 3 * ldc), c31 = NM_LOAD4(c + 3 * ldc + 4);
            } else {
                c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = (nm_v4) {0.0f, 0.0f, 0.0f, 0.0f};
            }
            const float *a = A + m, *b = B + n;
            for (size_t k = 0; k < K; k++, a += lda, b += ldb) {
                const nm_v4 b0 = NM_LOAD4(b), b1 = NM_LOAD4(b + 4);
                const float a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
                c00 += b0 * a0;
                c01 += b1 * a0;
                c10 += b0 * a1;
                c11 += b1 * a1;
                c20 += b0 * a2;
                c21 += b1 * a2;
                c30 += b0 * a3;
                c31 += b1 * a3;
            }
            NM_STORE4(c, c00);
            NM_STORE4(c + 4, c01);
            NM_STORE4(c + ldc, c10);
            NM_STORE4(c + ldc + 4, c11);
            NM_STORE4(c + 2 * ldc, c20);
            NM_STORE4(c + 2 * ldc + 4, c21);
            NM_STORE4(c + 3 * ldc, c30);
            NM_STORE4(c + 3 * ldc + 4, c31);
        }
        #endif
        for (; n + 4 <= N; n += 4) {
            float *c = C + m * ldc + n;
            float c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33;
            if (acc) {
                c00 = c[0], c01 = c[1], c02 = c[2], c03 = c[3];
                c10 = c[ldc], c11 = c[ldc + 1], c12 = c[ldc + 2], c13 = c[ldc + 3];
                c20 = c[2 * ldc], c21 = c[2 * ldc + 1], c22 = c[2 * ldc + 2], c23 = c[2 * ldc + 3];
                c30 = c[3 * ldc], c31 = c[3 * ldc + 1], c32 = c[3 * ldc + 2], c33 = c[3 * ldc + 3];
            } else {
                c00 = c01 = c02 = c03 = c10 = c11 = c12 = c13 = 0.0f;
                c20 = c21 = c22 = c23 = c30 = c31 = c32 = c33 = 0.0f;
            }
            const float *a = A + m, *b = B + n;
            for (size_t k = 0; k < K; k++, a += lda, b += ldb) {
                const float a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
                const float b0 = b[0], b1 = b[1], b2 = b[2], b3 = b[3];
                c00 = NM_MADD(a0, b0, c00);
                c01 = NM_MADD(a0, b1, c01);
                c02 = NM_MADD(a0, b2, c02);
                c03 = NM_MADD(a0, b3, c03);
                c10 = NM_MADD(a1, b0, c10);
                c11 = NM_MADD(a1, b1, c11);
                c12 = NM_MADD(a1, b2, c12);
                c13 = NM_MADD(a1, b3, c13);
                c20 = NM_MADD(a2, b0, c20);
                c21 = NM_MADD(a2, b1, c21);
                c22 = NM_MADD(a2, b2, c22);
                c23 = NM_MADD(a2, b3, c23);
                c30 = NM_MADD(a3, b0, c30);
                c31 = NM_MADD(a3, b1, c31);
                c32 = NM_MADD(a3, b2, c32);
                c33 = NM_MADD(a3, b3, c33);
            }
            c[0] = c00, c[1] = c01, c[2] = c02, c[3] = c03;
            c[ldc] = c10, c[ldc + 1] = c11, c[ldc + 2] = c12, c[ldc + 3] = c13;
            c[2 * ldc] = c20, c[2 * ldc + 1] = c21, c[2 * ldc + 2] = c22, c[2 * ldc + 3] = c23;
            c[3 * ldc] = c30, c[3 * ldc + 1] = c31, c[3 * ldc + 2] = c32, c[3 * ldc + 3] = c33;
        }
        for (; n < N; n++) { // column tail: 4 rows, one column
            float *c = C + m * ldc + n;
            float c0 = acc ? c[0] : 0.0f, c1 = acc ? c[ldc] : 0.0f;
            float c2 = acc ? c[2 * ldc] : 0.0f, c3 = acc ? c[3 * ldc] : 0.0f;
            const float *a = A + m, *b = B + n;
            for (size_t k = 0; k < K; k++, a += lda, b += ldb) {
                const float bk = b[0];
                c0 = NM_MADD(a[0], bk, c0);
                c1 = NM_MADD(a[1], bk, c1);
                c2 = NM_MADD(a[2], bk, c2);
                c3 = NM_MADD(a[3], bk, c3);
            }
            c[0] = c0, c[ldc] = c1, c[2 * ldc] = c2, c[3 * ldc] = c3;
        }
    }
    for (; m < M; m++) { // row tail: one row, 4 columns at a time
        size_t n = 0;
        for (; n + 4 <= N; n += 4) {
            float *c = C + m * ldc + n;
            float c0 = acc ? c[0] : 0.0f, c1 = acc ? c[1] : 0.0f;
            float c2 = acc ? c[2] : 0.0f, c3 = acc ? c[3] : 0.0f;
            const float *a = A + m, *b = B + n;
            for (size_t k = 0; k < K; k++, a += lda, b += ldb) {
                const float ak = a[0];
                c0 = NM_MADD(ak, b[0], c0);
                c1 = NM_MADD(ak, b[1], c1);
                c2 = NM_MADD(ak, b[2], c2);
                c3 = NM_MADD(ak, b[3], c3);
            }
            c[0] = c0, c[1] = c1, c[2] = c2, c[3] = c3;
        }
        for (; n < N; n++) {
            float *c = C + m * ldc + n;
            float c0 = acc ? c[0] : 0.0f;
            const float *a = A + m, *b = B + n;
            for (size_t k = 0; k < K; k++, a += lda, b += ldb) {
                c0 = NM_MADD(a[0], b[0], c0);
            }
            c[0] = c0;
        }
    }
}

// dst[c][r] = src[r][c] for an R x Cn matrix.
static inline void nm_transpose(float *dst, const float *src, size_t R, size_t Cn) {
    for (size_t r = 0; r < R; r++) {
        const float *s = src + r * Cn;
        float *d = dst + r;
        for (size_t c = 0; c < Cn; c++, d += R) {
            *d = s[c];
        }
    }
}

/* ---------------------------------------------------------------------------
 * MLP forward over a batch, keeping the activations (tape).
 *   x: s0 x B (feature-major); tape as described at the top.
 */
static inline void nm_train_forward(const float *net, const uint16_t *sizes, const uint16_t *acts,
    size_t n_layers, const float *x, float *tape, size_t B) {
    const float *in = x, *w = net;
    float *out = tape;
    for (size_t l = 0; l < n_layers; l++) {
        const size_t n_in = sizes[l], n_out = sizes[l + 1];
        const float *b = w + n_in * n_out;
        for (size_t o = 0; o < n_out; o++) {
            float *row = out + o * B;
            for (size_t s = 0; s < B; s++) {
                row[s] = b[o];
            }
        }
        nm_gemm_tn(out, B, w, n_out, in, B, n_out, B, n_in, 1);
        nm_activate(out, n_out * B, acts[l]);
        w = b + n_out;
        in = out;
        out += n_out * B;
    }
}

/* ---------------------------------------------------------------------------
 * Backward through the last forward pass (same net, x, tape):
 *   dy: dL/d(output), sL x B; overwritten.
 *   grad: dL/dparams in the net's layout (NULL: skip).
 *   dx: dL/dx, s0 x B (NULL: skip).
 *   scratch: nm_train_scratch_size floats.
 */
static inline void nm_train_backward(const float *net, const uint16_t *sizes, const uint16_t *acts,
    size_t n_layers, const float *x, const float *tape, float *dy, float *grad, float *dx,
    float *scratch, size_t B) {
    size_t widest = 0, io = 0, offs[NM_MAX_LAYERS + 1], toffs[NM_MAX_LAYERS + 1];
    offs[0] = 0;
    toffs[0] = 0;
    for (size_t l = 0; l <= n_layers; l++) {
        widest = sizes[l] > widest ? sizes[l] : widest;
        if (l < n_layers) {
            size_t a = (size_t)sizes[l] + sizes[l + 1];
            io = a > io ? a : io;
            offs[l + 1] = offs[l] + ((size_t)sizes[l] + 1) * sizes[l + 1];
            toffs[l + 1] = toffs[l] + (size_t)sizes[l + 1] * B;
        }
    }
    float *dbuf[2] = { scratch, scratch + widest * B };
    float *xt = scratch + 2 * widest * B;   // B x n_in
    float *wt = xt + io * B;                // n_out x n_in
    float *d = dy;
    for (size_t l = n_layers; l-- > 0;) {
        const size_t n_in = sizes[l], n_out = sizes[l + 1];
        const float *y = tape + toffs[l];
        const float *in = l ? tape + toffs[l - 1] : x;
        const float *w = net + offs[l];
        const size_t nd = n_out * B;
        // through the activation, from its output: relu' = [y > 0], tanh' = 1 - y^2
        if (acts[l] == NM_ACT_RELU) {
            for (size_t i = 0; i < nd; i++) {
                d[i] = y[i] > 0.0f ? d[i] : 0.0f;
            }
        } else if (acts[l] == NM_ACT_TANH) {
            for (size_t i = 0; i < nd; i++) {
                d[i] = d[i] * (1.0f - y[i] * y[i]);
            }
        }
        if (grad) {
            float *gw = grad + offs[l], *gb = gw + n_in * n_out;
            float *dt = xt + n_in * B;      // B x n_out
            nm_transpose(xt, in, n_in, B);
            nm_transpose(dt, d, n_out, B);
            nm_gemm_tn(gw, n_out, xt, n_in, dt, n_out, n_in, n_out, B, 0);
            for (size_t o = 0; o < n_out; o++) {
                const float *row = d + o * B;
                float s = 0.0f;
                for (size_t k = 0; k < B; k++) {
                    s += row[k];
                }
                gb[o] = s;
            }
        }
        if (l == 0 && !dx) {
            break;
        }
        float *next = l ? dbuf[(n_layers - l) & 1] : dx;
        nm_transpose(wt, w, n_in, n_out);
        nm_gemm_tn(next, B, wt, n_in, d, B, n_in, B, n_out, 0);
        d = next;
    }
}

/* ---------------------------------------------------------------------------
 * Optimiser and target networks, elementwise over flat vectors.
 * Adam (PyTorch's update order, as the host's neuromotor.nn.Adam):
 *   state = [lr, beta1, beta2, eps, beta1^t, beta2^t] (t advanced here).
 */
#define NM_ADAM_STATE 6

static inline void nm_adam(float *p, const float *g, float *m, float *v, size_t n, float *st) {
    const float lr = st[0], b1 = st[1], b2 = st[2], eps = st[3];
    st[4] *= b1;
    st[5] *= b2;
    const float c1 = 1.0f - b1, c2 = 1.0f - b2;
    const float lr_t = nm_divf(lr, 1.0f - st[4]);
    const float s2 = nm_sqrtf(1.0f - st[5]);
    for (size_t i = 0; i < n; i++) {
        const float gi = g[i];
        float mi = m[i] * b1;
        mi = mi + gi * c1;
        float vi = v[i] * b2;
        vi = vi + (gi * gi) * c2;
        m[i] = mi;
        v[i] = vi;
        const float den = nm_divf(nm_sqrtf(vi), s2) + eps;
        p[i] = p[i] - nm_divf(mi, den) * lr_t;
    }
}

// target <- target + tau * (online - target)
static inline void nm_polyak(float *target, const float *online, size_t n, float tau) {
    for (size_t i = 0; i < n; i++) {
        target[i] = target[i] + (online[i] - target[i]) * tau;
    }
}

/* ---------------------------------------------------------------------------
 * TD3 pieces. Actions live in [-1, 1].
 */
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
 * Replay buffer: rows of [s (o), a (na), r, not_done, s' (o)] in one float array.
 */
static inline void nm_replay_push(float *replay, size_t pos, const float *s, const float *a,
    float r, float not_done, const float *s2, size_t o, size_t na) {
    float *row = replay + pos * (2 * o + na + 2);
    for (size_t i = 0; i < o; i++) {
        row[i] = s[i];
        row[o + na + 2 + i] = s2[i];
    }
    for (size_t i = 0; i < na; i++) {
        row[o + i] = a[i];
    }
    row[o + na] = r;
    row[o + na + 1] = not_done;
}

// Gather the rows idx[0..B) into feature-major batches: sa ((o + na) x B),
// r (B), not_done (B), s2 (o x B).
static inline void nm_replay_gather(const float *replay, const uint32_t *idx, size_t B, size_t o,
    size_t na, float *sa, float *r, float *not_done, float *s2) {
    const size_t row_len = 2 * o + na + 2;
    for (size_t k = 0; k < B; k++) {
        const float *row = replay + (size_t)idx[k] * row_len;
        for (size_t i = 0; i < o + na; i++) {
            sa[i * B + k] = row[i];
        }
        r[k] = row[o + na];
        not_done[k] = row[o + na + 1];
        for (size_t i = 0; i < o; i++) {
            s2[i * B + k] = row[o + na + 2 + i];
        }
    }
}

/* ---------------------------------------------------------------------------
 * Export: the layers of a training-layout net in nm_kernels' block-4 layout
 * (sum of nm_layer_size floats), i.e. the middle of an mlp() net vector.
 */
static inline void nm_train_pack(float *dst, const float *net, const uint16_t *sizes, size_t n_layers) {
    for (size_t l = 0; l < n_layers; l++) {
        const size_t n_in = sizes[l], n_out = sizes[l + 1];
        const float *w = net, *b = net + n_in * n_out;
        for (size_t k = 0; k < nm_blocks(n_out); k++) {
            float *blk = dst + k * NM_BLOCK * (n_in + 1);
            for (size_t r = 0; r < NM_BLOCK; r++) {
                const size_t row = k * NM_BLOCK + r;
                blk[r] = row < n_out ? b[row] : 0.0f;
                for (size_t j = 0; j < n_in; j++) {
                    blk[NM_BLOCK * (j + 1) + r] = row < n_out ? w[j * n_out + row] : 0.0f;
                }
            }
        }
        dst += nm_blocks(n_out) * NM_BLOCK * (n_in + 1);
        net = b + n_out;
    }
}

#endif // NM_TRAIN_H

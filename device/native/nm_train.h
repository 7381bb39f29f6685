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
 *   the forward and backward pass then reads both operands along contiguous
 *   rows (nm_gemm_tn for outputs and input gradients, nm_gemm_nt for weight
 *   gradients), with no transposed copies of the activations.
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

// With a compile-time batch size GCC may report impossible iterations of the
// tail loops (-Waggressive-loop-optimizations); keep that out of -Werror builds.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Waggressive-loop-optimizations"
#endif

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

// Scratch floats backward needs: two delta buffers (widest x B) and W^T of
// the largest layer.
static inline int nm_train_scratch_size(const uint16_t *sizes, size_t n_layers, size_t batch, size_t *out) {
    size_t widest = 0, wt = 0;
    for (size_t l = 0; l <= n_layers; l++) {
        widest = sizes[l] > widest ? sizes[l] : widest;
    }
    for (size_t l = 0; l < n_layers; l++) {
        size_t w = (size_t)sizes[l] * sizes[l + 1];
        wt = w > wt ? w : wt;
    }
    size_t d;
    if (!nm_mul_size(2 * widest, batch, &d) || !nm_add_size(d, wt, out)) {
        return 0;
    }
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
 * Matrix kernels. Both keep a tile of 4 x 4 outputs (4 x 8 with SSE) in
 * registers; a k step loads 4 values of each operand for 16 multiply-adds.
 *
 * nm_gemm_tn: C[m][n] = init(m, n) + sum_k A[k][m] * B[k][n]  (rows of A, B, C
 *   are lda, ldb, ldc floats apart); init is bias[m] (bias != NULL), else C
 *   itself (acc), else 0; ReLU applied on the way out when relu != 0.
 *   Forward (A = W, B = X) and input gradients (A = W^T, B = dY).
 * nm_gemm_nt: C[m][n] = sum_k A[m][k] * B[n][k]: dot products of rows;
 *   weight gradients (A = X, B = dY, both feature-major).
 */
#if defined(__GNUC__) && !defined(__clang__)
#define NM_HOT __attribute__((optimize("O2")))
#else
#define NM_HOT
#endif

#if defined(__GNUC__)
typedef int32_t nm_i32a __attribute__((may_alias));
#else
typedef int32_t nm_i32a;
#endif

#define NM_RELU(v) ((v) > 0.0f ? (v) : 0.0f)

// Tiles of scalar accumulators c<row><col> in the caller's scope (the kernels below).
// c<i>0..c<i>3 += x<i> * (y0..y3), row after row: a 4 x 4 tile, one k step.
#define NM_MADD_4X4(x0, x1, x2, x3, y0, y1, y2, y3) do { \
        c00 = NM_MADD(x0, y0, c00); c01 = NM_MADD(x0, y1, c01); \
        c02 = NM_MADD(x0, y2, c02); c03 = NM_MADD(x0, y3, c03); \
        c10 = NM_MADD(x1, y0, c10); c11 = NM_MADD(x1, y1, c11); \
        c12 = NM_MADD(x1, y2, c12); c13 = NM_MADD(x1, y3, c13); \
        c20 = NM_MADD(x2, y0, c20); c21 = NM_MADD(x2, y1, c21); \
        c22 = NM_MADD(x2, y2, c22); c23 = NM_MADD(x2, y3, c23); \
        c30 = NM_MADD(x3, y0, c30); c31 = NM_MADD(x3, y1, c31); \
        c32 = NM_MADD(x3, y2, c32); c33 = NM_MADD(x3, y3, c33); \
} while (0)

// Column j of a 4 x 6 tile: c0j..c3j += (x0..x3) * y.
#define NM_MADD_COL4(j, x0, x1, x2, x3, y) \
    c0##j = NM_MADD(x0, y, c0##j); c1##j = NM_MADD(x1, y, c1##j); \
    c2##j = NM_MADD(x2, y, c2##j); c3##j = NM_MADD(x3, y, c3##j)

// A 4 x 6 tile, one k step, column after column; each y is loaded just before
// its column (24 accumulators + 4 + 1 operands fit 32 FPU registers).
#define NM_MADD_4X6(x0, x1, x2, x3, y0, y1, y2, y3, y4, y5) do { \
        float nm_y = (y0); \
        NM_MADD_COL4(0, x0, x1, x2, x3, nm_y); \
        nm_y = (y1); \
        NM_MADD_COL4(1, x0, x1, x2, x3, nm_y); \
        nm_y = (y2); \
        NM_MADD_COL4(2, x0, x1, x2, x3, nm_y); \
        nm_y = (y3); \
        NM_MADD_COL4(3, x0, x1, x2, x3, nm_y); \
        nm_y = (y4); \
        NM_MADD_COL4(4, x0, x1, x2, x3, nm_y); \
        nm_y = (y5); \
        NM_MADD_COL4(5, x0, x1, x2, x3, nm_y); \
} while (0)

// Store a 4 x 4 tile at c (rows ldc apart).
#define NM_STORE_4X4(c) do { \
        (c)[0] = c00, (c)[1] = c01, (c)[2] = c02, (c)[3] = c03; \
        (c)[ldc] = c10, (c)[ldc + 1] = c11, (c)[ldc + 2] = c12, (c)[ldc + 3] = c13; \
        (c)[2 * ldc] = c20, (c)[2 * ldc + 1] = c21, (c)[2 * ldc + 2] = c22, (c)[2 * ldc + 3] = c23; \
        (c)[3 * ldc] = c30, (c)[3 * ldc + 1] = c31, (c)[3 * ldc + 2] = c32, (c)[3 * ldc + 3] = c33; \
} while (0)

// Store a 4 x 6 tile at c (rows ldc apart); advances the pointer c.
#define NM_STORE_4X6(c) do { \
        c[0] = c00, c[1] = c01, c[2] = c02, c[3] = c03, c[4] = c04, c[5] = c05; \
        c += ldc; \
        c[0] = c10, c[1] = c11, c[2] = c12, c[3] = c13, c[4] = c14, c[5] = c15; \
        c += ldc; \
        c[0] = c20, c[1] = c21, c[2] = c22, c[3] = c23, c[4] = c24, c[5] = c25; \
        c += ldc; \
        c[0] = c30, c[1] = c31, c[2] = c32, c[3] = c33, c[4] = c34, c[5] = c35; \
} while (0)

#define NM_TN_STEP(a, b) do { \
        const float a0 = (a)[0], a1 = (a)[1], a2 = (a)[2], a3 = (a)[3]; \
        const float b0 = (b)[0], b1 = (b)[1], b2 = (b)[2], b3 = (b)[3]; \
        NM_MADD_4X4(a0, a1, a2, a3, b0, b1, b2, b3); \
} while (0)

NM_HOT static inline void nm_gemm_tn(float *C, size_t ldc, const float *A, size_t lda,
    const float *B, size_t ldb, size_t M, size_t N, size_t K, int acc, const float *bias, int relu) {
    size_t m = 0;
    if (K <= 2 && !acc) {
        // outer-product-like shapes (gradients through a 1-2 output layer, 1-2
        // inputs): one pass over C with the A values in registers
        for (; m < M; m++) {
            const float a0 = A[m], a1 = K > 1 ? A[lda + m] : 0.0f, init = bias ? bias[m] : 0.0f;
            const float *b0 = B, *b1 = K > 1 ? B + ldb : B;
            float *c = C + m * ldc;
            if (K > 1) {
                for (size_t n = 0; n < N; n++) {
                    const float v = NM_MADD(a1, b1[n], NM_MADD(a0, b0[n], init));
                    c[n] = relu ? NM_RELU(v) : v;
                }
            } else {
                for (size_t n = 0; n < N; n++) {
                    const float v = NM_MADD(a0, b0[n], init);
                    c[n] = relu ? NM_RELU(v) : v;
                }
            }
        }
        return;
    }
    if (K <= 4 && !acc) {
        // short sums (input layers of 3-4 features): 4 rows of A in registers,
        // one column of outputs per step, no tile set-up
        for (; m + 4 <= M; m += 4) {
            float a[4][4];
            for (size_t k = 0; k < 4; k++) {
                for (size_t i = 0; i < 4; i++) {
                    a[k][i] = k < K ? A[k * lda + m + i] : 0.0f;
                }
            }
            const float i0 = bias ? bias[m] : 0.0f, i1 = bias ? bias[m + 1] : 0.0f;
            const float i2 = bias ? bias[m + 2] : 0.0f, i3 = bias ? bias[m + 3] : 0.0f;
            const float *b0 = B, *b1 = B + ldb, *b2 = B + 2 * ldb, *b3 = K > 3 ? B + 3 * ldb : B;
            const float k3 = K > 3 ? 1.0f : 0.0f; // b3 aliases b0 when K == 3 (and a[3] is 0)
            float *c = C + m * ldc;
            for (size_t n = 0; n < N; n++) {
                const float x0 = b0[n], x1 = b1[n], x2 = b2[n], x3 = b3[n] * k3;
                float v0 = NM_MADD(a[0][0], x0, i0), v1 = NM_MADD(a[0][1], x0, i1);
                float v2 = NM_MADD(a[0][2], x0, i2), v3 = NM_MADD(a[0][3], x0, i3);
                v0 = NM_MADD(a[1][0], x1, v0), v1 = NM_MADD(a[1][1], x1, v1);
                v2 = NM_MADD(a[1][2], x1, v2), v3 = NM_MADD(a[1][3], x1, v3);
                v0 = NM_MADD(a[2][0], x2, v0), v1 = NM_MADD(a[2][1], x2, v1);
                v2 = NM_MADD(a[2][2], x2, v2), v3 = NM_MADD(a[2][3], x2, v3);
                v0 = NM_MADD(a[3][0], x3, v0), v1 = NM_MADD(a[3][1], x3, v1);
                v2 = NM_MADD(a[3][2], x3, v2), v3 = NM_MADD(a[3][3], x3, v3);
                if (relu) {
                    v0 = NM_RELU(v0), v1 = NM_RELU(v1), v2 = NM_RELU(v2), v3 = NM_RELU(v3);
                }
                c[n] = v0, c[ldc + n] = v1, c[2 * ldc + n] = v2, c[3 * ldc + n] = v3;
            }
        }
    }
    for (; m + 4 <= M; m += 4) {
        size_t n = 0;
        #if NM_SIMD4
        for (; n + 8 <= N; n += 8) {
            float *c = C + m * ldc + n;
            nm_v4 c00, c01, c10, c11, c20, c21, c30, c31;
            if (bias) {
                c00 = c01 = (nm_v4) {bias[m], bias[m], bias[m], bias[m]};
                c10 = c11 = (nm_v4) {bias[m + 1], bias[m + 1], bias[m + 1], bias[m + 1]};
                c20 = c21 = (nm_v4) {bias[m + 2], bias[m + 2], bias[m + 2], bias[m + 2]};
                c30 = c31 = (nm_v4) {bias[m + 3], bias[m + 3], bias[m + 3], bias[m + 3]};
            } else if (acc) {
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
            NM_STORE4(c, nm_relu4(c00, relu));
            NM_STORE4(c + 4, nm_relu4(c01, relu));
            NM_STORE4(c + ldc, nm_relu4(c10, relu));
            NM_STORE4(c + ldc + 4, nm_relu4(c11, relu));
            NM_STORE4(c + 2 * ldc, nm_relu4(c20, relu));
            NM_STORE4(c + 2 * ldc + 4, nm_relu4(c21, relu));
            NM_STORE4(c + 3 * ldc, nm_relu4(c30, relu));
            NM_STORE4(c + 3 * ldc + 4, nm_relu4(c31, relu));
        }
        #endif
        #if !NM_SIMD4
        // 4 x 6 outputs: 24 accumulators + 4 + 2 operands fit the 32 FPU registers
        for (; n + 6 <= N; n += 6) {
            float *c = C + m * ldc + n;
            float c00, c01, c02, c03, c04, c05, c10, c11, c12, c13, c14, c15;
            float c20, c21, c22, c23, c24, c25, c30, c31, c32, c33, c34, c35;
            if (bias) {
                c00 = c01 = c02 = c03 = c04 = c05 = bias[m];
                c10 = c11 = c12 = c13 = c14 = c15 = bias[m + 1];
                c20 = c21 = c22 = c23 = c24 = c25 = bias[m + 2];
                c30 = c31 = c32 = c33 = c34 = c35 = bias[m + 3];
            } else if (acc) {
                const float *r = c;
                c00 = r[0], c01 = r[1], c02 = r[2], c03 = r[3], c04 = r[4], c05 = r[5];
                r += ldc;
                c10 = r[0], c11 = r[1], c12 = r[2], c13 = r[3], c14 = r[4], c15 = r[5];
                r += ldc;
                c20 = r[0], c21 = r[1], c22 = r[2], c23 = r[3], c24 = r[4], c25 = r[5];
                r += ldc;
                c30 = r[0], c31 = r[1], c32 = r[2], c33 = r[3], c34 = r[4], c35 = r[5];
            } else {
                c00 = c01 = c02 = c03 = c04 = c05 = c10 = c11 = c12 = c13 = c14 = c15 = 0.0f;
                c20 = c21 = c22 = c23 = c24 = c25 = c30 = c31 = c32 = c33 = c34 = c35 = 0.0f;
            }
            const float *a = A + m, *b = B + n;
            for (const float *b_end = b + K * ldb; b != b_end; a += lda, b += ldb) {
                const float a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
                NM_MADD_4X6(a0, a1, a2, a3, b[0], b[1], b[2], b[3], b[4], b[5]);
            }
            if (relu) {
                c00 = NM_RELU(c00), c01 = NM_RELU(c01), c02 = NM_RELU(c02), c03 = NM_RELU(c03), c04 = NM_RELU(c04), c05 = NM_RELU(c05);
                c10 = NM_RELU(c10), c11 = NM_RELU(c11), c12 = NM_RELU(c12), c13 = NM_RELU(c13), c14 = NM_RELU(c14), c15 = NM_RELU(c15);
                c20 = NM_RELU(c20), c21 = NM_RELU(c21), c22 = NM_RELU(c22), c23 = NM_RELU(c23), c24 = NM_RELU(c24), c25 = NM_RELU(c25);
                c30 = NM_RELU(c30), c31 = NM_RELU(c31), c32 = NM_RELU(c32), c33 = NM_RELU(c33), c34 = NM_RELU(c34), c35 = NM_RELU(c35);
            }
            NM_STORE_4X6(c);
        }
        #endif
        for (; n + 4 <= N; n += 4) {
            float *c = C + m * ldc + n;
            float c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33;
            if (bias) {
                c00 = c01 = c02 = c03 = bias[m];
                c10 = c11 = c12 = c13 = bias[m + 1];
                c20 = c21 = c22 = c23 = bias[m + 2];
                c30 = c31 = c32 = c33 = bias[m + 3];
            } else if (acc) {
                c00 = c[0], c01 = c[1], c02 = c[2], c03 = c[3];
                c10 = c[ldc], c11 = c[ldc + 1], c12 = c[ldc + 2], c13 = c[ldc + 3];
                c20 = c[2 * ldc], c21 = c[2 * ldc + 1], c22 = c[2 * ldc + 2], c23 = c[2 * ldc + 3];
                c30 = c[3 * ldc], c31 = c[3 * ldc + 1], c32 = c[3 * ldc + 2], c33 = c[3 * ldc + 3];
            } else {
                c00 = c01 = c02 = c03 = c10 = c11 = c12 = c13 = 0.0f;
                c20 = c21 = c22 = c23 = c30 = c31 = c32 = c33 = 0.0f;
            }
            const float *a = A + m, *b = B + n;
            for (const float *b_end = b + K * ldb; b != b_end; a += lda, b += ldb) {
                NM_TN_STEP(a, b);
            }
            if (relu) {
                c00 = NM_RELU(c00), c01 = NM_RELU(c01), c02 = NM_RELU(c02), c03 = NM_RELU(c03);
                c10 = NM_RELU(c10), c11 = NM_RELU(c11), c12 = NM_RELU(c12), c13 = NM_RELU(c13);
                c20 = NM_RELU(c20), c21 = NM_RELU(c21), c22 = NM_RELU(c22), c23 = NM_RELU(c23);
                c30 = NM_RELU(c30), c31 = NM_RELU(c31), c32 = NM_RELU(c32), c33 = NM_RELU(c33);
            }
            NM_STORE_4X4(c);
        }
        for (; n < N; n++) { // column tail: 4 rows, one column
            float *c = C + m * ldc + n;
            float c0, c1, c2, c3;
            if (bias) {
                c0 = bias[m], c1 = bias[m + 1], c2 = bias[m + 2], c3 = bias[m + 3];
            } else {
                c0 = acc ? c[0] : 0.0f, c1 = acc ? c[ldc] : 0.0f;
                c2 = acc ? c[2 * ldc] : 0.0f, c3 = acc ? c[3 * ldc] : 0.0f;
            }
            const float *a = A + m, *b = B + n;
            for (size_t k = 0; k < K; k++, a += lda, b += ldb) {
                const float bk = b[0];
                c0 = NM_MADD(a[0], bk, c0);
                c1 = NM_MADD(a[1], bk, c1);
                c2 = NM_MADD(a[2], bk, c2);
                c3 = NM_MADD(a[3], bk, c3);
            }
            if (relu) {
                c0 = NM_RELU(c0), c1 = NM_RELU(c1), c2 = NM_RELU(c2), c3 = NM_RELU(c3);
            }
            c[0] = c0, c[ldc] = c1, c[2 * ldc] = c2, c[3 * ldc] = c3;
        }
    }
    for (; m < M; m++) { // row tail: one row, 4 columns at a time
        const float init = bias ? bias[m] : 0.0f;
        const int load = !bias && acc;
        size_t n = 0;
        for (; n + 4 <= N; n += 4) {
            float *c = C + m * ldc + n;
            float c0 = load ? c[0] : init, c1 = load ? c[1] : init;
            float c2 = load ? c[2] : init, c3 = load ? c[3] : init;
            const float *a = A + m, *b = B + n;
            for (size_t k = 0; k < K; k++, a += lda, b += ldb) {
                const float ak = a[0];
                c0 = NM_MADD(ak, b[0], c0);
                c1 = NM_MADD(ak, b[1], c1);
                c2 = NM_MADD(ak, b[2], c2);
                c3 = NM_MADD(ak, b[3], c3);
            }
            if (relu) {
                c0 = NM_RELU(c0), c1 = NM_RELU(c1), c2 = NM_RELU(c2), c3 = NM_RELU(c3);
            }
            c[0] = c0, c[1] = c1, c[2] = c2, c[3] = c3;
        }
        for (; n < N; n++) {
            float *c = C + m * ldc + n;
            float c0 = load ? c[0] : init;
            const float *a = A + m, *b = B + n;
            for (size_t k = 0; k < K; k++, a += lda, b += ldb) {
                c0 = NM_MADD(a[0], b[0], c0);
            }
            c[0] = relu ? NM_RELU(c0) : c0;
        }
    }
}

// One dot product of two contiguous rows.
static inline float nm_dot(const float *a, const float *b, size_t K) {
    float s = 0.0f;
    for (size_t k = 0; k < K; k++) {
        s = NM_MADD(a[k], b[k], s);
    }
    return s;
}

#if NM_SIMD4
NM_INLINE float nm_hsum4(nm_v4 v) {
    return (v[0] + v[1]) + (v[2] + v[3]);
}
#endif

NM_HOT static inline void nm_gemm_nt(float *C, size_t ldc, const float *A, size_t lda,
    const float *B, size_t ldb, size_t M, size_t N, size_t K) {
    size_t m = 0;
    #if NM_SIMD4
    // 2 x 4 outputs, k vectorised by 4; the k tail in scalar
    const size_t K4 = K & ~(size_t)3;
    for (; m + 2 <= M; m += 2) {
        const float *a0 = A + m * lda, *a1 = a0 + lda;
        size_t n = 0;
        for (; n + 4 <= N; n += 4) {
            const float *b0 = B + n * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
            nm_v4 z = {0.0f, 0.0f, 0.0f, 0.0f};
            nm_v4 s00 = z, s01 = z, s02 = z, s03 = z, s10 = z, s11 = z, s12 = z, s13 = z;
            for (size_t k = 0; k < K4; k += 4) {
                const nm_v4 x0 = NM_LOAD4(a0 + k), x1 = NM_LOAD4(a1 + k);
                const nm_v4 y0 = NM_LOAD4(b0 + k), y1 = NM_LOAD4(b1 + k);
                const nm_v4 y2 = NM_LOAD4(b2 + k), y3 = NM_LOAD4(b3 + k);
                s00 += x0 * y0, s01 += x0 * y1, s02 += x0 * y2, s03 += x0 * y3;
                s10 += x1 * y0, s11 += x1 * y1, s12 += x1 * y2, s13 += x1 * y3;
            }
            float *c = C + m * ldc + n;
            c[0] = nm_hsum4(s00) + nm_dot(a0 + K4, b0 + K4, K - K4);
            c[1] = nm_hsum4(s01) + nm_dot(a0 + K4, b1 + K4, K - K4);
            c[2] = nm_hsum4(s02) + nm_dot(a0 + K4, b2 + K4, K - K4);
            c[3] = nm_hsum4(s03) + nm_dot(a0 + K4, b3 + K4, K - K4);
            c[ldc] = nm_hsum4(s10) + nm_dot(a1 + K4, b0 + K4, K - K4);
            c[ldc + 1] = nm_hsum4(s11) + nm_dot(a1 + K4, b1 + K4, K - K4);
            c[ldc + 2] = nm_hsum4(s12) + nm_dot(a1 + K4, b2 + K4, K - K4);
            c[ldc + 3] = nm_hsum4(s13) + nm_dot(a1 + K4, b3 + K4, K - K4);
        }
        for (; n < N; n++) {
            C[m * ldc + n] = nm_dot(a0, B + n * ldb, K);
            C[(m + 1) * ldc + n] = nm_dot(a1, B + n * ldb, K);
        }
    }
    #else
    // 4 x 6 and 4 x 4 outputs in scalar registers
    for (; m + 4 <= M; m += 4) {
        size_t n = 0;
        // 4 x 6 first: 24 accumulators, operands loaded just before use
        for (; n + 6 <= N; n += 6) {
            const float *a0 = A + m * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
            const float *b0 = B + n * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
            const float *b4 = b3 + ldb, *b5 = b4 + ldb;
            float c00 = 0.0f, c01 = 0.0f, c02 = 0.0f, c03 = 0.0f, c04 = 0.0f, c05 = 0.0f;
            float c10 = 0.0f, c11 = 0.0f, c12 = 0.0f, c13 = 0.0f, c14 = 0.0f, c15 = 0.0f;
            float c20 = 0.0f, c21 = 0.0f, c22 = 0.0f, c23 = 0.0f, c24 = 0.0f, c25 = 0.0f;
            float c30 = 0.0f, c31 = 0.0f, c32 = 0.0f, c33 = 0.0f, c34 = 0.0f, c35 = 0.0f;
            #define NM_NT6_STEP(i) do { \
                    const float x0 = a0[i], x1 = a1[i], x2 = a2[i], x3 = a3[i]; \
                    NM_MADD_4X6(x0, x1, x2, x3, b0[i], b1[i], b2[i], b3[i], b4[i], b5[i]); \
            } while (0)
            // one k per step: each load post-increments its row pointer (vldmia rN!)
            for (size_t k = 0; k < K; k++) {
                NM_NT6_STEP(0);
                a0++, a1++, a2++, a3++, b0++, b1++, b2++, b3++, b4++, b5++;
            }
            #undef NM_NT6_STEP
            float *c = C + m * ldc + n;
            NM_STORE_4X6(c);
        }
        for (; n + 4 <= N; n += 4) {
            const float *a0 = A + m * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
            const float *b0 = B + n * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
            float c00 = 0.0f, c01 = 0.0f, c02 = 0.0f, c03 = 0.0f, c10 = 0.0f, c11 = 0.0f, c12 = 0.0f, c13 = 0.0f;
            float c20 = 0.0f, c21 = 0.0f, c22 = 0.0f, c23 = 0.0f, c30 = 0.0f, c31 = 0.0f, c32 = 0.0f, c33 = 0.0f;
            #define NM_NT_STEP(i) do { \
                    const float x0 = a0[i], x1 = a1[i], x2 = a2[i], x3 = a3[i]; \
                    const float y0 = b0[i], y1 = b1[i], y2 = b2[i], y3 = b3[i]; \
                    NM_MADD_4X4(x0, x1, x2, x3, y0, y1, y2, y3); \
            } while (0)
            for (size_t k = 0; k < K; k++) {
                NM_NT_STEP(0);
                a0++, a1++, a2++, a3++, b0++, b1++, b2++, b3++;
            }
            #undef NM_NT_STEP
            float *c = C + m * ldc + n;
            NM_STORE_4X4(c);
        }
        for (; n < N; n++) { // column tail: 4 rows against one row of B
            const float *a0 = A + m * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda, *b = B + n * ldb;
            float c0 = 0.0f, c1 = 0.0f, c2 = 0.0f, c3 = 0.0f;
            for (size_t k = 0; k < K; k++) {
                const float y = b[k];
                c0 = NM_MADD(a0[k], y, c0);
                c1 = NM_MADD(a1[k], y, c1);
                c2 = NM_MADD(a2[k], y, c2);
                c3 = NM_MADD(a3[k], y, c3);
            }
            float *c = C + m * ldc + n;
            c[0] = c0, c[ldc] = c1, c[2 * ldc] = c2, c[3 * ldc] = c3;
        }
    }
    #endif
    for (; m < M; m++) { // row tail: one row of A against 4 rows of B, then single dots
        const float *a = A + m * lda;
        size_t n = 0;
        for (; n + 4 <= N; n += 4) {
            const float *b0 = B + n * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
            float c0 = 0.0f, c1 = 0.0f, c2 = 0.0f, c3 = 0.0f;
            for (size_t k = 0; k < K; k++) {
                const float x = a[k];
                c0 = NM_MADD(x, b0[k], c0);
                c1 = NM_MADD(x, b1[k], c1);
                c2 = NM_MADD(x, b2[k], c2);
                c3 = NM_MADD(x, b3[k], c3);
            }
            float *c = C + m * ldc + n;
            c[0] = c0, c[1] = c1, c[2] = c2, c[3] = c3;
        }
        for (; n < N; n++) {
            C[m * ldc + n] = nm_dot(a, B + n * ldb, K);
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
NM_HOT static inline void nm_train_forward(const float *net, const uint16_t *sizes, const uint16_t *acts,
    size_t n_layers, const float *x, float *tape, size_t B) {
    const float *in = x, *w = net;
    float *out = tape;
    for (size_t l = 0; l < n_layers; l++) {
        const size_t n_in = sizes[l], n_out = sizes[l + 1];
        const float *b = w + n_in * n_out;
        nm_gemm_tn(out, B, w, n_out, in, B, n_out, B, n_in, 0, b, acts[l] == NM_ACT_RELU);
        if (acts[l] == NM_ACT_TANH) {
            nm_activate(out, n_out * B, NM_ACT_TANH);
        }
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
NM_HOT static inline void nm_train_backward(const float *net, const uint16_t *sizes, const uint16_t *acts,
    size_t n_layers, const float *x, const float *tape, float *dy, float *grad, float *dx,
    float *scratch, size_t B) {
    size_t widest = 0, offs[NM_MAX_LAYERS + 1], toffs[NM_MAX_LAYERS + 1];
    offs[0] = 0;
    toffs[0] = 0;
    for (size_t l = 0; l <= n_layers; l++) {
        widest = sizes[l] > widest ? sizes[l] : widest;
        if (l < n_layers) {
            offs[l + 1] = offs[l] + ((size_t)sizes[l] + 1) * sizes[l + 1];
            toffs[l + 1] = toffs[l] + (size_t)sizes[l + 1] * B;
        }
    }
    float *dbuf[2] = { scratch, scratch + widest * B };
    float *wt = scratch + 2 * widest * B;   // n_out x n_in
    float *d = dy;
    for (size_t l = n_layers; l-- > 0;) {
        const size_t n_in = sizes[l], n_out = sizes[l + 1];
        const float *y = tape + toffs[l];
        const float *in = l ? tape + toffs[l - 1] : x;
        const float *w = net + offs[l];
        const size_t nd = n_out * B;
        // through the activation, from its output: relu' = [y > 0], tanh' = 1 - y^2
        if (acts[l] == NM_ACT_RELU) {
            // y > 0 as integers (a positive float's bits are a positive int; -0 is not)
            const nm_i32a *yb = (const nm_i32a *)y;
            nm_i32a *db = (nm_i32a *)d;
            size_t i = 0;
            for (; i + 4 <= nd; i += 4) {
                const int32_t m0 = yb[i] > 0, m1 = yb[i + 1] > 0, m2 = yb[i + 2] > 0, m3 = yb[i + 3] > 0;
                db[i] = m0 ? db[i] : 0;
                db[i + 1] = m1 ? db[i + 1] : 0;
                db[i + 2] = m2 ? db[i + 2] : 0;
                db[i + 3] = m3 ? db[i + 3] : 0;
            }
            for (; i < nd; i++) {
                db[i] = yb[i] > 0 ? db[i] : 0;
            }
        } else if (acts[l] == NM_ACT_TANH) {
            for (size_t i = 0; i < nd; i++) {
                d[i] = d[i] * (1.0f - y[i] * y[i]);
            }
        }
        if (grad) {
            float *gw = grad + offs[l], *gb = gw + n_in * n_out;
            nm_gemm_nt(gw, n_out, in, B, d, B, n_in, n_out, B);
            for (size_t o = 0; o < n_out; o++) {
                const float *row = d + o * B;
                float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
                size_t k = 0;
                for (; k + 4 <= B; k += 4) {
                    s0 += row[k], s1 += row[k + 1], s2 += row[k + 2], s3 += row[k + 3];
                }
                for (; k < B; k++) {
                    s0 += row[k];
                }
                gb[o] = (s0 + s1) + (s2 + s3);
            }
        }
        if (l == 0 && !dx) {
            break;
        }
        float *next = l ? dbuf[(n_layers - l) & 1] : dx;
        nm_transpose(wt, w, n_in, n_out);
        nm_gemm_tn(next, B, wt, n_in, d, B, n_in, B, n_out, 0, NULL, 0);
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

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif // NM_TRAIN_H

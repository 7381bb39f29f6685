/*
 * nm_gemm.h - the matrix products of training, in register tiles.
 */
#ifndef NM_GEMM_H
#define NM_GEMM_H

#include "nm_act.h"
#include "nm_dense_simd.h"
#include "nm_gemm_avx2.h"
#include "nm_gemm_tiles.h"
#include "nm_isa.h"

// With a compile-time batch size GCC may report impossible iterations of the
// tail loops (-Waggressive-loop-optimizations); keep that out of -Werror builds.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Waggressive-loop-optimizations"
#endif

#define NM_TN_STEP(a, b) do { \
        const float a0 = (a)[0], a1 = (a)[1], a2 = (a)[2], a3 = (a)[3]; \
        const float b0 = (b)[0], b1 = (b)[1], b2 = (b)[2], b3 = (b)[3]; \
        NM_MADD_4X4(a0, a1, a2, a3, b0, b1, b2, b3); \
} while (0)

// The ReLU gate of one output on its way out.
NM_HOT static inline float nm_tn_gate(float v, int relu) {
    return relu ? NM_RELU(v) : v;
}

// K <= 2 without acc (gradients through a 1-2 output layer, 1-2 inputs): one pass over C with
// the A values in registers.
NM_HOT static inline void nm_tn_k2(float *C, size_t ldc, const float *A, size_t lda, const float *B, size_t ldb,
    size_t M, size_t N, size_t K, const float *bias, int relu) {
    for (size_t m = 0; m < M; m++) {
        const float a0 = A[m], a1 = K > 1 ? A[lda + m] : 0.0f, init = bias ? bias[m] : 0.0f;
        const float *b0 = B, *b1 = K > 1 ? B + ldb : B;
        float *c = C + m * ldc;
        if (K > 1) {
            for (size_t n = 0; n < N; n++) {
                c[n] = nm_tn_gate(NM_MADD(a1, b1[n], NM_MADD(a0, b0[n], init)), relu);
            }
        } else {
            for (size_t n = 0; n < N; n++) {
                c[n] = nm_tn_gate(NM_MADD(a0, b0[n], init), relu);
            }
        }
    }
}

// K of 3 or 4 without acc (input layers of 3-4 features): 4 rows of A in registers, one column
// of outputs per step, no tile set-up. Returns the rows done (M rounded down to 4).
NM_HOT static inline size_t nm_tn_k4(float *C, size_t ldc, const float *A, size_t lda, const float *B, size_t ldb,
    size_t M, size_t N, size_t K, const float *bias, int relu) {
    size_t m = 0;
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
        // b3 aliases b0 when K == 3 (and a[3] is 0). K is 3 or 4 here: K - 3, not
        // K > 3 ? 1.0f : 0.0f, which clang 22 turns into a constant-pool load of the two
        // floats that its Xtensa back end cannot emit.
        const float k3 = (float)(K - 3);
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
            c[n] = nm_tn_gate(v0, relu), c[ldc + n] = nm_tn_gate(v1, relu);
            c[2 * ldc + n] = nm_tn_gate(v2, relu), c[3 * ldc + n] = nm_tn_gate(v3, relu);
        }
    }
    return m;
}

// The tiles below compute 4 rows of C from column a of A (a[k * lda + i], i < 4) and the
// columns b.. of B; bias is the 4 rows' (or NULL: the sums start from c with acc, else from 0).
#if NM_SIMD4
// 4 x 8 outputs in SIMD registers.
NM_HOT static inline void nm_tn_tile_4x8(float *c, size_t ldc, const float *a, size_t lda, const float *b, size_t ldb,
    size_t K, int acc, const float *bias, int relu) {
    nm_v4 c00, c01, c10, c11, c20, c21, c30, c31;
    if (bias) {
        c00 = c01 = (nm_v4) {bias[0], bias[0], bias[0], bias[0]};
        c10 = c11 = (nm_v4) {bias[1], bias[1], bias[1], bias[1]};
        c20 = c21 = (nm_v4) {bias[2], bias[2], bias[2], bias[2]};
        c30 = c31 = (nm_v4) {bias[3], bias[3], bias[3], bias[3]};
    } else if (acc) {
        c00 = NM_LOAD4(c), c01 = NM_LOAD4(c + 4);
        c10 = NM_LOAD4(c + ldc), c11 = NM_LOAD4(c + ldc + 4);
        c20 = NM_LOAD4(c + 2 * ldc), c21 = NM_LOAD4(c + 2 * ldc + 4);
        c30 = NM_LOAD4(c + 3 * ldc), c31 = NM_LOAD4(c + 3 * ldc + 4);
    } else {
        c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = (nm_v4) {0.0f, 0.0f, 0.0f, 0.0f};
    }
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
#else
// 4 x 6 outputs: 24 accumulators + 4 + 2 operands fit the 32 FPU registers.
NM_HOT static inline void nm_tn_tile_4x6(float *c, size_t ldc, const float *a, size_t lda, const float *b, size_t ldb,
    size_t K, int acc, const float *bias, int relu) {
    float c00, c01, c02, c03, c04, c05, c10, c11, c12, c13, c14, c15;
    float c20, c21, c22, c23, c24, c25, c30, c31, c32, c33, c34, c35;
    if (bias) {
        c00 = c01 = c02 = c03 = c04 = c05 = bias[0];
        c10 = c11 = c12 = c13 = c14 = c15 = bias[1];
        c20 = c21 = c22 = c23 = c24 = c25 = bias[2];
        c30 = c31 = c32 = c33 = c34 = c35 = bias[3];
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

// 4 x 4 outputs.
NM_HOT static inline void nm_tn_tile_4x4(float *c, size_t ldc, const float *a, size_t lda, const float *b, size_t ldb,
    size_t K, int acc, const float *bias, int relu) {
    float c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33;
    if (bias) {
        c00 = c01 = c02 = c03 = bias[0];
        c10 = c11 = c12 = c13 = bias[1];
        c20 = c21 = c22 = c23 = bias[2];
        c30 = c31 = c32 = c33 = bias[3];
    } else if (acc) {
        c00 = c[0], c01 = c[1], c02 = c[2], c03 = c[3];
        c10 = c[ldc], c11 = c[ldc + 1], c12 = c[ldc + 2], c13 = c[ldc + 3];
        c20 = c[2 * ldc], c21 = c[2 * ldc + 1], c22 = c[2 * ldc + 2], c23 = c[2 * ldc + 3];
        c30 = c[3 * ldc], c31 = c[3 * ldc + 1], c32 = c[3 * ldc + 2], c33 = c[3 * ldc + 3];
    } else {
        c00 = c01 = c02 = c03 = c10 = c11 = c12 = c13 = 0.0f;
        c20 = c21 = c22 = c23 = c30 = c31 = c32 = c33 = 0.0f;
    }
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

// The column tail: 4 rows, one column.
NM_HOT static inline void nm_tn_tile_4x1(float *c, size_t ldc, const float *a, size_t lda, const float *b, size_t ldb,
    size_t K, int acc, const float *bias, int relu) {
    float c0, c1, c2, c3;
    if (bias) {
        c0 = bias[0], c1 = bias[1], c2 = bias[2], c3 = bias[3];
    } else {
        c0 = acc ? c[0] : 0.0f, c1 = acc ? c[ldc] : 0.0f;
        c2 = acc ? c[2 * ldc] : 0.0f, c3 = acc ? c[3 * ldc] : 0.0f;
    }
    for (size_t k = 0; k < K; k++, a += lda, b += ldb) {
        const float bk = b[0];
        c0 = NM_MADD(a[0], bk, c0);
        c1 = NM_MADD(a[1], bk, c1);
        c2 = NM_MADD(a[2], bk, c2);
        c3 = NM_MADD(a[3], bk, c3);
    }
    c[0] = nm_tn_gate(c0, relu), c[ldc] = nm_tn_gate(c1, relu);
    c[2 * ldc] = nm_tn_gate(c2, relu), c[3 * ldc] = nm_tn_gate(c3, relu);
}

// 4 rows of C, all N columns: the widest tiles first, then the narrower ones for what is left.
NM_HOT static inline void nm_tn_rows4(float *c, size_t ldc, const float *a, size_t lda, const float *B, size_t ldb,
    size_t N, size_t K, int acc, const float *bias, int relu) {
    size_t n = 0;
    #if NM_SIMD4
    for (; n + 8 <= N; n += 8) {
        nm_tn_tile_4x8(c + n, ldc, a, lda, B + n, ldb, K, acc, bias, relu);
    }
    #else
    for (; n + 6 <= N; n += 6) {
        nm_tn_tile_4x6(c + n, ldc, a, lda, B + n, ldb, K, acc, bias, relu);
    }
    #endif
    for (; n + 4 <= N; n += 4) {
        nm_tn_tile_4x4(c + n, ldc, a, lda, B + n, ldb, K, acc, bias, relu);
    }
    for (; n < N; n++) {
        nm_tn_tile_4x1(c + n, ldc, a, lda, B + n, ldb, K, acc, bias, relu);
    }
}

// The row tail: one row of C, 4 columns at a time, then one; init is the row's bias or 0, and
// with load the sums start from c instead.
NM_HOT static inline void nm_tn_row(float *c, const float *a, size_t lda, const float *B, size_t ldb, size_t N, size_t K,
    float init, int load, int relu) {
    size_t n = 0;
    for (; n + 4 <= N; n += 4) {
        float c0 = load ? c[n] : init, c1 = load ? c[n + 1] : init;
        float c2 = load ? c[n + 2] : init, c3 = load ? c[n + 3] : init;
        const float *ak = a, *b = B + n;
        for (size_t k = 0; k < K; k++, ak += lda, b += ldb) {
            const float x = ak[0];
            c0 = NM_MADD(x, b[0], c0);
            c1 = NM_MADD(x, b[1], c1);
            c2 = NM_MADD(x, b[2], c2);
            c3 = NM_MADD(x, b[3], c3);
        }
        c[n] = nm_tn_gate(c0, relu), c[n + 1] = nm_tn_gate(c1, relu);
        c[n + 2] = nm_tn_gate(c2, relu), c[n + 3] = nm_tn_gate(c3, relu);
    }
    for (; n < N; n++) {
        float c0 = load ? c[n] : init;
        const float *ak = a, *b = B + n;
        for (size_t k = 0; k < K; k++, ak += lda, b += ldb) {
            c0 = NM_MADD(ak[0], b[0], c0);
        }
        c[n] = nm_tn_gate(c0, relu);
    }
}

NM_HOT static inline void nm_gemm_tn(float *C, size_t ldc, const float *A, size_t lda,
    const float *B, size_t ldb, size_t M, size_t N, size_t K, int acc, const float *bias, int relu) {
    #if NM_AVX2
    if (nm_isa() == NM_ISA_AVX2) {
        nm_gemm_tn_avx2(C, ldc, A, lda, 1, B, ldb, M, N, K, acc, bias, relu, NULL);
        return;
    }
    #endif
    if (K <= 2 && !acc) {
        nm_tn_k2(C, ldc, A, lda, B, ldb, M, N, K, bias, relu);
        return;
    }
    size_t m = K <= 4 && !acc ? nm_tn_k4(C, ldc, A, lda, B, ldb, M, N, K, bias, relu) : 0;
    for (; m + 4 <= M; m += 4) {
        nm_tn_rows4(C + m * ldc, ldc, A + m, lda, B, ldb, N, K, acc, bias ? bias + m : NULL, relu);
    }
    for (; m < M; m++) {
        nm_tn_row(C + m * ldc, A + m, lda, B, ldb, N, K, bias ? bias[m] : 0.0f, !bias && acc, relu);
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
    #if NM_AVX2
    if (nm_isa() == NM_ISA_AVX2) {
        nm_gemm_nt_avx2(C, ldc, A, lda, B, ldb, M, N, K);
        return;
    }
    #endif
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

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif // NM_GEMM_H

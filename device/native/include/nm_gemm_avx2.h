/*
 * nm_gemm_avx2.h - nm_gemm.h's matrix products on x86-64 with AVX2+FMA.
 */
#ifndef NM_GEMM_AVX2_H
#define NM_GEMM_AVX2_H

#include "nm_isa.h"

/* ---------------------------------------------------------------------------
 * x86-64 tiles for the training shapes (batch 100-200 on the columns, 64-wide
 * layers, 1-4 wide inputs and outputs), AVX2+FMA, chosen at run time by
 * nm_isa() like nm_kernels.h's inference paths.
 * Every output is one chain of fused multiply-adds over k in order (nm_gemm_tn),
 * or one 8-lane chain folded by nm_avx_hsum (nm_gemm_nt), whichever tile or tail
 * computes it: the bits do not depend on the matrix sizes around an output.
 */
#if NM_AVX2
NM_AVX2_INLINE __m256i nm_avx_lanes(size_t n) { // lanes 0 .. n-1 on (n <= 8)
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// A tn tile's output on its way out: ReLU (relu != 0: NaN and -0 become +0, as NM_RELU), or
// gated by a ReLU's output g (g != NULL: +0 where g <= 0, as nm_train_backward's mask), so a
// backward pass zeroes an input gradient as it stores it rather than in a pass of its own.
NM_AVX2_INLINE __m256 nm_avx_out(__m256 v, int relu, const float *g, __m256i mask) {
    if (relu) {
        v = _mm256_max_ps(v, _mm256_setzero_ps());
    }
    if (g) {
        const __m256i on = _mm256_cmpgt_epi32(_mm256_castps_si256(_mm256_maskload_ps(g, mask)), _mm256_setzero_si256());
        v = _mm256_and_ps(v, _mm256_castsi256_ps(on));
    }
    return v;
}

// The initial value of row m of a tn tile: bias[m], the output itself (acc), or 0.
NM_AVX2_INLINE __m256 nm_avx_tn_init(const float *c, __m256i mask, const float *bias, size_t m, int acc) {
    if (bias) {
        return _mm256_set1_ps(bias[m]);
    }
    return acc ? _mm256_maskload_ps(c, mask) : _mm256_setzero_ps();
}

// Rows m..m+3, columns n..n+23: 12 accumulators, 3 loads and 4 broadcasts per 12
// multiply-adds (enough chains to keep two FMA pipes busy through their latency).
NM_AVX2_INLINE void nm_tn_4x24_avx2(float *c, size_t ldc, const float *a, size_t lda, size_t sa,
    const float *b, size_t ldb,
    size_t K, int acc, const float *bias, size_t m, int relu, const float *g) {
    const __m256i all = _mm256_set1_epi32(-1);
    #define NM_INIT3(i) \
        __m256 c##i##0 = nm_avx_tn_init(c + i * ldc, all, bias, m + i, acc); \
        __m256 c##i##1 = nm_avx_tn_init(c + i * ldc + 8, all, bias, m + i, acc); \
        __m256 c##i##2 = nm_avx_tn_init(c + i * ldc + 16, all, bias, m + i, acc)
    NM_INIT3(0);
    NM_INIT3(1);
    NM_INIT3(2);
    NM_INIT3(3);
    #undef NM_INIT3
    for (size_t k = 0; k < K; k++, a += lda, b += ldb) {
        const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8), b2 = _mm256_loadu_ps(b + 16);
        #define NM_ROW3(i) do { \
                const __m256 x = _mm256_broadcast_ss(a + i * sa); \
                c##i##0 = _mm256_fmadd_ps(x, b0, c##i##0); \
                c##i##1 = _mm256_fmadd_ps(x, b1, c##i##1); \
                c##i##2 = _mm256_fmadd_ps(x, b2, c##i##2); \
        } while (0)
        NM_ROW3(0);
        NM_ROW3(1);
        NM_ROW3(2);
        NM_ROW3(3);
        #undef NM_ROW3
    }
    #define NM_STORE3(i) do { \
            _mm256_storeu_ps(c + i * ldc, nm_avx_out(c##i##0, relu, g ? g + i * ldc : NULL, all)); \
            _mm256_storeu_ps(c + i * ldc + 8, nm_avx_out(c##i##1, relu, g ? g + i * ldc + 8 : NULL, all)); \
            _mm256_storeu_ps(c + i * ldc + 16, nm_avx_out(c##i##2, relu, g ? g + i * ldc + 16 : NULL, all)); \
    } while (0)
    NM_STORE3(0);
    NM_STORE3(1);
    NM_STORE3(2);
    NM_STORE3(3);
    #undef NM_STORE3
}

// Rows m..m+3, the (masked) columns n..n+7.
NM_AVX2_INLINE void nm_tn_4x8_avx2(float *c, size_t ldc, const float *a, size_t lda, size_t sa,
    const float *b, size_t ldb,
    size_t K, int acc, const float *bias, size_t m, int relu, const float *g, __m256i mask) {
    __m256 c0 = nm_avx_tn_init(c, mask, bias, m, acc), c1 = nm_avx_tn_init(c + ldc, mask, bias, m + 1, acc);
    __m256 c2 = nm_avx_tn_init(c + 2 * ldc, mask, bias, m + 2, acc);
    __m256 c3 = nm_avx_tn_init(c + 3 * ldc, mask, bias, m + 3, acc);
    for (size_t k = 0; k < K; k++, a += lda, b += ldb) {
        const __m256 y = _mm256_maskload_ps(b, mask);
        c0 = _mm256_fmadd_ps(_mm256_broadcast_ss(a), y, c0);
        c1 = _mm256_fmadd_ps(_mm256_broadcast_ss(a + sa), y, c1);
        c2 = _mm256_fmadd_ps(_mm256_broadcast_ss(a + 2 * sa), y, c2);
        c3 = _mm256_fmadd_ps(_mm256_broadcast_ss(a + 3 * sa), y, c3);
    }
    _mm256_maskstore_ps(c, mask, nm_avx_out(c0, relu, g, mask));
    _mm256_maskstore_ps(c + ldc, mask, nm_avx_out(c1, relu, g ? g + ldc : NULL, mask));
    _mm256_maskstore_ps(c + 2 * ldc, mask, nm_avx_out(c2, relu, g ? g + 2 * ldc : NULL, mask));
    _mm256_maskstore_ps(c + 3 * ldc, mask, nm_avx_out(c3, relu, g ? g + 3 * ldc : NULL, mask));
}

// Rows m..m+7, the (masked) columns n..n+7: eight chains, enough to keep both FMA pipes
// busy through their latency where the 4-row tile's four chains leave them waiting (the
// column tail of a batch that is not a multiple of 24, e.g. 4 columns of 100).
NM_AVX2_INLINE void nm_tn_8x8_avx2(float *c, size_t ldc, const float *a, size_t lda, size_t sa,
    const float *b, size_t ldb,
    size_t K, int acc, const float *bias, size_t m, int relu, const float *g, __m256i mask) {
    __m256 c0 = nm_avx_tn_init(c, mask, bias, m, acc), c1 = nm_avx_tn_init(c + ldc, mask, bias, m + 1, acc);
    __m256 c2 = nm_avx_tn_init(c + 2 * ldc, mask, bias, m + 2, acc);
    __m256 c3 = nm_avx_tn_init(c + 3 * ldc, mask, bias, m + 3, acc);
    __m256 c4 = nm_avx_tn_init(c + 4 * ldc, mask, bias, m + 4, acc);
    __m256 c5 = nm_avx_tn_init(c + 5 * ldc, mask, bias, m + 5, acc);
    __m256 c6 = nm_avx_tn_init(c + 6 * ldc, mask, bias, m + 6, acc);
    __m256 c7 = nm_avx_tn_init(c + 7 * ldc, mask, bias, m + 7, acc);
    for (size_t k = 0; k < K; k++, a += lda, b += ldb) {
        const __m256 y = _mm256_maskload_ps(b, mask);
        c0 = _mm256_fmadd_ps(_mm256_broadcast_ss(a), y, c0);
        c1 = _mm256_fmadd_ps(_mm256_broadcast_ss(a + sa), y, c1);
        c2 = _mm256_fmadd_ps(_mm256_broadcast_ss(a + 2 * sa), y, c2);
        c3 = _mm256_fmadd_ps(_mm256_broadcast_ss(a + 3 * sa), y, c3);
        c4 = _mm256_fmadd_ps(_mm256_broadcast_ss(a + 4 * sa), y, c4);
        c5 = _mm256_fmadd_ps(_mm256_broadcast_ss(a + 5 * sa), y, c5);
        c6 = _mm256_fmadd_ps(_mm256_broadcast_ss(a + 6 * sa), y, c6);
        c7 = _mm256_fmadd_ps(_mm256_broadcast_ss(a + 7 * sa), y, c7);
    }
    _mm256_maskstore_ps(c, mask, nm_avx_out(c0, relu, g, mask));
    _mm256_maskstore_ps(c + ldc, mask, nm_avx_out(c1, relu, g ? g + ldc : NULL, mask));
    _mm256_maskstore_ps(c + 2 * ldc, mask, nm_avx_out(c2, relu, g ? g + 2 * ldc : NULL, mask));
    _mm256_maskstore_ps(c + 3 * ldc, mask, nm_avx_out(c3, relu, g ? g + 3 * ldc : NULL, mask));
    _mm256_maskstore_ps(c + 4 * ldc, mask, nm_avx_out(c4, relu, g ? g + 4 * ldc : NULL, mask));
    _mm256_maskstore_ps(c + 5 * ldc, mask, nm_avx_out(c5, relu, g ? g + 5 * ldc : NULL, mask));
    _mm256_maskstore_ps(c + 6 * ldc, mask, nm_avx_out(c6, relu, g ? g + 6 * ldc : NULL, mask));
    _mm256_maskstore_ps(c + 7 * ldc, mask, nm_avx_out(c7, relu, g ? g + 7 * ldc : NULL, mask));
}

// Row m, columns n..n+31: four independent chains hide the FMA latency of a lone row
// (a one-output layer).
NM_AVX2_INLINE void nm_tn_1x32_avx2(float *c, const float *a, size_t lda, const float *b, size_t ldb,
    size_t K, int acc, const float *bias, size_t m, int relu, const float *g) {
    const __m256i all = _mm256_set1_epi32(-1);
    __m256 c0 = nm_avx_tn_init(c, all, bias, m, acc), c1 = nm_avx_tn_init(c + 8, all, bias, m, acc);
    __m256 c2 = nm_avx_tn_init(c + 16, all, bias, m, acc), c3 = nm_avx_tn_init(c + 24, all, bias, m, acc);
    for (size_t k = 0; k < K; k++, a += lda, b += ldb) {
        const __m256 x = _mm256_broadcast_ss(a);
        c0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(b), c0);
        c1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(b + 8), c1);
        c2 = _mm256_fmadd_ps(x, _mm256_loadu_ps(b + 16), c2);
        c3 = _mm256_fmadd_ps(x, _mm256_loadu_ps(b + 24), c3);
    }
    _mm256_storeu_ps(c, nm_avx_out(c0, relu, g, all));
    _mm256_storeu_ps(c + 8, nm_avx_out(c1, relu, g ? g + 8 : NULL, all));
    _mm256_storeu_ps(c + 16, nm_avx_out(c2, relu, g ? g + 16 : NULL, all));
    _mm256_storeu_ps(c + 24, nm_avx_out(c3, relu, g ? g + 24 : NULL, all));
}

// Row m, the (masked) columns n..n+7.
NM_AVX2_INLINE void nm_tn_1x8_avx2(float *c, const float *a, size_t lda, const float *b, size_t ldb,
    size_t K, int acc, const float *bias, size_t m, int relu, const float *g, __m256i mask) {
    __m256 c0 = nm_avx_tn_init(c, mask, bias, m, acc);
    for (size_t k = 0; k < K; k++, a += lda, b += ldb) {
        c0 = _mm256_fmadd_ps(_mm256_broadcast_ss(a), _mm256_maskload_ps(b, mask), c0);
    }
    _mm256_maskstore_ps(c, mask, nm_avx_out(c0, relu, g, mask));
}

// A's element (k, m) is A[k * lda + m * sa]: sa = 1 is nm_gemm_tn's A; lda = 1, sa = K reads
// a row-major M x K matrix as its transpose, in place. gate: NULL, or an M x N matrix (rows ldc
// apart) that zeroes C where it is not positive (nm_avx_out).
NM_AVX2_FN void nm_gemm_tn_avx2(float *C, size_t ldc, const float *A, size_t lda, size_t sa,
    const float *B, size_t ldb, size_t M, size_t N, size_t K, int acc, const float *bias, int relu,
    const float *gate) {
    #define NM_GATE(m, n) (gate ? gate + (m) * ldc + (n) : NULL)
    const __m256i all = _mm256_set1_epi32(-1);
    const size_t M4 = M & ~(size_t)3, N24 = N - N % 24;
    for (size_t m = 0; m < M4; m += 4) {
        for (size_t n = 0; n < N24; n += 24) {
            nm_tn_4x24_avx2(C + m * ldc + n, ldc, A + m * sa, lda, sa, B + n, ldb, K, acc, bias, m, relu, NM_GATE(m, n));
        }
    }
    for (size_t n = N24; n < N; n += 8) {
        const __m256i mask = N - n >= 8 ? all : nm_avx_lanes(N - n);
        size_t m = 0;
        for (; m + 8 <= M4; m += 8) {
            nm_tn_8x8_avx2(C + m * ldc + n, ldc, A + m * sa, lda, sa, B + n, ldb, K, acc, bias, m, relu, NM_GATE(m, n),
                mask);
        }
        if (m < M4) {
            nm_tn_4x8_avx2(C + m * ldc + n, ldc, A + m * sa, lda, sa, B + n, ldb, K, acc, bias, m, relu, NM_GATE(m, n),
                mask);
        }
    }
    for (size_t m = M4; m < M; m++) {
        size_t n = 0;
        for (; n + 32 <= N; n += 32) {
            nm_tn_1x32_avx2(C + m * ldc + n, A + m * sa, lda, B + n, ldb, K, acc, bias, m, relu, NM_GATE(m, n));
        }
        for (; n < N; n += 8) {
            nm_tn_1x8_avx2(C + m * ldc + n, A + m * sa, lda, B + n, ldb, K, acc, bias, m, relu, NM_GATE(m, n),
                N - n >= 8 ? all : nm_avx_lanes(N - n));
        }
    }
    #undef NM_GATE
}

// The 8 lanes of v summed as ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7)): the tree that
// nm_avx_hsum4 builds for four vectors at once with horizontal adds.
NM_AVX2_INLINE float nm_avx_hsum(__m256 v) {
    __m256 t = _mm256_hadd_ps(v, v);
    t = _mm256_hadd_ps(t, t);
    return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1)));
}

// nm_avx_hsum of a, b, c, d into the 4 lanes of one register.
NM_AVX2_INLINE __m128 nm_avx_hsum4(__m256 a, __m256 b, __m256 c, __m256 d) {
    const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

// One output of nm_gemm_nt: lane j sums k = j, j + 8, ...; the k tail is loaded masked (zeros).
NM_AVX2_INLINE float nm_nt_dot_avx2(const float *a, const float *b, size_t K) {
    __m256 s = _mm256_setzero_ps();
    size_t k = 0;
    for (; k + 8 <= K; k += 8) {
        s = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k), s);
    }
    if (k < K) {
        const __m256i mask = nm_avx_lanes(K - k);
        s = _mm256_fmadd_ps(_mm256_maskload_ps(a + k, mask), _mm256_maskload_ps(b + k, mask), s);
    }
    return nm_avx_hsum(s);
}

// Four outputs of nm_gemm_nt at once, out[i] = dot(a[i], b[i]), each exactly as nm_nt_dot_avx2
// computes it: four independent chains instead of one (the tails of one-column or one-row
// products, e.g. the weight gradient of a one-output layer).
NM_AVX2_INLINE void nm_nt_dot4_avx2(float *const out[4], const float *const a[4], const float *const b[4], size_t K) {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    size_t k = 0;
    for (; k + 8 <= K; k += 8) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a[0] + k), _mm256_loadu_ps(b[0] + k), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a[1] + k), _mm256_loadu_ps(b[1] + k), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a[2] + k), _mm256_loadu_ps(b[2] + k), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a[3] + k), _mm256_loadu_ps(b[3] + k), s3);
    }
    if (k < K) {
        const __m256i mask = nm_avx_lanes(K - k);
        s0 = _mm256_fmadd_ps(_mm256_maskload_ps(a[0] + k, mask), _mm256_maskload_ps(b[0] + k, mask), s0);
        s1 = _mm256_fmadd_ps(_mm256_maskload_ps(a[1] + k, mask), _mm256_maskload_ps(b[1] + k, mask), s1);
        s2 = _mm256_fmadd_ps(_mm256_maskload_ps(a[2] + k, mask), _mm256_maskload_ps(b[2] + k, mask), s2);
        s3 = _mm256_fmadd_ps(_mm256_maskload_ps(a[3] + k, mask), _mm256_maskload_ps(b[3] + k, mask), s3);
    }
    *out[0] = nm_avx_hsum(s0), *out[1] = nm_avx_hsum(s1), *out[2] = nm_avx_hsum(s2), *out[3] = nm_avx_hsum(s3);
}

NM_AVX2_FN void nm_gemm_nt_avx2(float *C, size_t ldc, const float *A, size_t lda,
    const float *B, size_t ldb, size_t M, size_t N, size_t K) {
    const size_t K8 = K & ~(size_t)7;
    const __m256i mask = nm_avx_lanes(K - K8);
    size_t m = 0;
    // 4 x 3 outputs: 12 chains (two FMA pipes through their latency), 7 loads per 12 multiply-adds
    for (; m + 4 <= M; m += 4) {
        const float *a0 = A + m * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
        size_t n = 0;
        for (; n + 3 <= N; n += 3) {
            const float *b0 = B + n * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb;
            const __m256 z = _mm256_setzero_ps();
            __m256 s00 = z, s01 = z, s02 = z, s10 = z, s11 = z, s12 = z;
            __m256 s20 = z, s21 = z, s22 = z, s30 = z, s31 = z, s32 = z;
            #define NM_NT12_STEP(load) do { \
                    const __m256 y0 = load(b0), y1 = load(b1), y2 = load(b2); \
                    __m256 x = load(a0); \
                    s00 = _mm256_fmadd_ps(x, y0, s00), s01 = _mm256_fmadd_ps(x, y1, s01), s02 = _mm256_fmadd_ps(x, y2, s02); \
                    x = load(a1); \
                    s10 = _mm256_fmadd_ps(x, y0, s10), s11 = _mm256_fmadd_ps(x, y1, s11), s12 = _mm256_fmadd_ps(x, y2, s12); \
                    x = load(a2); \
                    s20 = _mm256_fmadd_ps(x, y0, s20), s21 = _mm256_fmadd_ps(x, y1, s21), s22 = _mm256_fmadd_ps(x, y2, s22); \
                    x = load(a3); \
                    s30 = _mm256_fmadd_ps(x, y0, s30), s31 = _mm256_fmadd_ps(x, y1, s31), s32 = _mm256_fmadd_ps(x, y2, s32); \
            } while (0)
            #define NM_LOADU(p) _mm256_loadu_ps((p) + k)
            #define NM_LOADM(p) _mm256_maskload_ps((p) + K8, mask)
            size_t k = 0;
            for (; k < K8; k += 8) {
                NM_NT12_STEP(NM_LOADU);
            }
            if (K8 < K) {
                NM_NT12_STEP(NM_LOADM);
            }
            #undef NM_NT12_STEP
            #undef NM_LOADU
            #undef NM_LOADM
            float *c = C + m * ldc + n;
            // 12 sums, four per register, then to their rows
            const __m128 r0 = nm_avx_hsum4(s00, s01, s02, s10), r1 = nm_avx_hsum4(s11, s12, s20, s21);
            const __m128 r2 = nm_avx_hsum4(s22, s30, s31, s32);
            float t[12];
            _mm_storeu_ps(t, r0), _mm_storeu_ps(t + 4, r1), _mm_storeu_ps(t + 8, r2);
            c[0] = t[0], c[1] = t[1], c[2] = t[2];
            c[ldc] = t[3], c[ldc + 1] = t[4], c[ldc + 2] = t[5];
            c[2 * ldc] = t[6], c[2 * ldc + 1] = t[7], c[2 * ldc + 2] = t[8];
            c[3 * ldc] = t[9], c[3 * ldc + 1] = t[10], c[3 * ldc + 2] = t[11];
        }
        for (; n < N; n++) {
            const float *b = B + n * ldb;
            float *const out[4] = {C + m * ldc + n, C + (m + 1) * ldc + n, C + (m + 2) * ldc + n, C + (m + 3) * ldc + n};
            const float *const a[4] = {a0, a1, a2, a3}, *const bs[4] = {b, b, b, b};
            nm_nt_dot4_avx2(out, a, bs, K);
        }
    }
    for (; m + 2 <= M; m += 2) {
        const float *a0 = A + m * lda, *a1 = a0 + lda;
        size_t n = 0;
        // 2 x 4 outputs: 8 chains, 6 loads per 8 multiply-adds
        for (; n + 4 <= N; n += 4) {
            const float *b0 = B + n * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
            __m256 s00 = _mm256_setzero_ps(), s01 = s00, s02 = s00, s03 = s00, s10 = s00, s11 = s00, s12 = s00, s13 = s00;
            #define NM_NT8_STEP(x0, x1, load) do { \
                    const __m256 y0 = load(b0), y1 = load(b1), y2 = load(b2), y3 = load(b3); \
                    s00 = _mm256_fmadd_ps(x0, y0, s00), s01 = _mm256_fmadd_ps(x0, y1, s01); \
                    s02 = _mm256_fmadd_ps(x0, y2, s02), s03 = _mm256_fmadd_ps(x0, y3, s03); \
                    s10 = _mm256_fmadd_ps(x1, y0, s10), s11 = _mm256_fmadd_ps(x1, y1, s11); \
                    s12 = _mm256_fmadd_ps(x1, y2, s12), s13 = _mm256_fmadd_ps(x1, y3, s13); \
            } while (0)
            #define NM_LOADU(p) _mm256_loadu_ps((p) + k)
            #define NM_LOADM(p) _mm256_maskload_ps((p) + K8, mask)
            size_t k = 0;
            for (; k < K8; k += 8) {
                const __m256 x0 = NM_LOADU(a0), x1 = NM_LOADU(a1);
                NM_NT8_STEP(x0, x1, NM_LOADU);
            }
            if (K8 < K) {
                const __m256 x0 = NM_LOADM(a0), x1 = NM_LOADM(a1);
                NM_NT8_STEP(x0, x1, NM_LOADM);
            }
            #undef NM_NT8_STEP
            #undef NM_LOADU
            #undef NM_LOADM
            float *c = C + m * ldc + n;
            _mm_storeu_ps(c, nm_avx_hsum4(s00, s01, s02, s03));
            _mm_storeu_ps(c + ldc, nm_avx_hsum4(s10, s11, s12, s13));
        }
        for (; n < N; n++) {
            C[m * ldc + n] = nm_nt_dot_avx2(a0, B + n * ldb, K);
            C[(m + 1) * ldc + n] = nm_nt_dot_avx2(a1, B + n * ldb, K);
        }
    }
    for (; m < M; m++) {
        const float *a = A + m * lda;
        float *c = C + m * ldc;
        size_t n = 0;
        for (; n + 4 <= N; n += 4) {
            float *const out[4] = {c + n, c + n + 1, c + n + 2, c + n + 3};
            const float *const as[4] = {a, a, a, a};
            const float *const bs[4] = {B + n * ldb, B + (n + 1) * ldb, B + (n + 2) * ldb, B + (n + 3) * ldb};
            nm_nt_dot4_avx2(out, as, bs, K);
        }
        for (; n < N; n++) {
            c[n] = nm_nt_dot_avx2(a, B + n * ldb, K);
        }
    }
}
#endif

#endif // NM_GEMM_AVX2_H

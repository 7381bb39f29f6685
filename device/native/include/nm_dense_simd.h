/*
 * nm_dense_simd.h - the dense blocks of nm_dense.h on 4 lanes (NM_SIMD4: SSE2 or
 * WebAssembly SIMD) and on 8 (AVX2+FMA, chosen at run time).
 */
#ifndef NM_DENSE_SIMD_H
#define NM_DENSE_SIMD_H

#include "nm_isa.h"
#include "nm_layout.h"

#if NM_SIMD4
NM_INLINE nm_v4 nm_relu4(nm_v4 v, int relu) {
    #if defined(NM_SIMD4_RELU)
    return relu ? NM_SIMD4_RELU(v) : v;
    #else
    return relu ? __builtin_ia32_maxps(v, (nm_v4) {0.0f, 0.0f, 0.0f, 0.0f}) : v;
    #endif
}

NM_INLINE void nm_block1_sse(float *y, const float *x, const float *w, size_t n_in, int relu) {
    nm_v4 acc = NM_LOAD4(w);
    w += NM_BLOCK;
    for (size_t j = 0; j < n_in; j++, w += NM_BLOCK) {
        acc += NM_LOAD4(w) * x[j];
    }
    NM_STORE4(y, nm_relu4(acc, relu));
}

NM_INLINE void nm_block4_sse(float *y, const float *x, const float *w, size_t n_in, int relu) {
    const size_t stride = NM_BLOCK * (n_in + 1);
    const float *w0 = w, *w1 = w + stride, *w2 = w + 2 * stride, *w3 = w + 3 * stride;
    nm_v4 c0 = NM_LOAD4(w0), c1 = NM_LOAD4(w1), c2 = NM_LOAD4(w2), c3 = NM_LOAD4(w3);
    for (size_t o = NM_BLOCK, end = NM_BLOCK * (n_in + 1); o < end; o += NM_BLOCK) {
        const float xj = *x++;
        c0 += NM_LOAD4(w0 + o) * xj;
        c1 += NM_LOAD4(w1 + o) * xj;
        c2 += NM_LOAD4(w2 + o) * xj;
        c3 += NM_LOAD4(w3 + o) * xj;
    }
    NM_STORE4(y, nm_relu4(c0, relu));
    NM_STORE4(y + 4, nm_relu4(c1, relu));
    NM_STORE4(y + 8, nm_relu4(c2, relu));
    NM_STORE4(y + 12, nm_relu4(c3, relu));
}
#endif

#if NM_AVX2
/* 256-bit: one ymm covers two consecutive inputs of a block (8 weights), so
 * lanes 0-3 accumulate even inputs and lanes 4-7 odd ones; the halves are
 * added at the end. The bias rides in the low half of the initial value. */
// [x0 x0 x0 x0 x1 x1 x1 x1] from two consecutive floats. x is only 4-byte
// aligned: _mm_loadl_epi64 is an unaligned 8-byte load (a double load is not).
NM_AVX2_INLINE __m256 nm_avx_pair(const float *x, __m256i idx) {
    return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)x))), idx);
}

NM_AVX2_INLINE __m128 nm_avx_finish(__m256 acc, const float *w_tail, const float *x_tail, int odd, int relu) {
    __m128 v = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    if (odd) {
        v = _mm_fmadd_ps(_mm_loadu_ps(w_tail), _mm_broadcast_ss(x_tail), v);
    }
    return relu ? _mm_max_ps(v, _mm_setzero_ps()) : v;
}

NM_AVX2_INLINE __m256 nm_avx_bias(const float *w) {
    return _mm256_insertf128_ps(_mm256_setzero_ps(), _mm_loadu_ps(w), 0);
}

NM_AVX2_INLINE void nm_block1_avx2(float *y, const float *x, const float *w, size_t n_in, int relu) {
    const __m256i idx = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
    __m256 acc = nm_avx_bias(w), acc2 = _mm256_setzero_ps();
    const float *p = w + NM_BLOCK, *xp = x;
    const float *x_end4 = x + (n_in & ~(size_t)3), *x_end2 = x + (n_in & ~(size_t)1);
    for (; xp != x_end4; xp += 4, p += 4 * NM_BLOCK) {
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(p), nm_avx_pair(xp, idx), acc);
        acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 2 * NM_BLOCK), nm_avx_pair(xp + 2, idx), acc2);
    }
    if (xp != x_end2) {
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(p), nm_avx_pair(xp, idx), acc);
        xp += 2;
        p += 2 * NM_BLOCK;
    }
    acc = _mm256_add_ps(acc, acc2);
    _mm_storeu_ps(y, nm_avx_finish(acc, p, xp, n_in & 1, relu));
}

NM_AVX2_INLINE void nm_block4_avx2(float *y, const float *x, const float *w, size_t n_in, int relu) {
    const __m256i idx = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
    const size_t stride = NM_BLOCK * (n_in + 1);
    __m256 c0 = nm_avx_bias(w), c1 = nm_avx_bias(w + stride);
    __m256 c2 = nm_avx_bias(w + 2 * stride), c3 = nm_avx_bias(w + 3 * stride);
    const float *p = w + NM_BLOCK, *xp = x;
    const float *x_end4 = x + (n_in & ~(size_t)3), *x_end2 = x + (n_in & ~(size_t)1);
    for (; xp != x_end4; xp += 4, p += 4 * NM_BLOCK) { // two pairs per pass
        const __m256 xa = nm_avx_pair(xp, idx), xb = nm_avx_pair(xp + 2, idx);
        c0 = _mm256_fmadd_ps(_mm256_loadu_ps(p), xa, c0);
        c1 = _mm256_fmadd_ps(_mm256_loadu_ps(p + stride), xa, c1);
        c2 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 2 * stride), xa, c2);
        c3 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 3 * stride), xa, c3);
        c0 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 8), xb, c0);
        c1 = _mm256_fmadd_ps(_mm256_loadu_ps(p + stride + 8), xb, c1);
        c2 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 2 * stride + 8), xb, c2);
        c3 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 3 * stride + 8), xb, c3);
    }
    if (xp != x_end2) {
        const __m256 xv = nm_avx_pair(xp, idx);
        c0 = _mm256_fmadd_ps(_mm256_loadu_ps(p), xv, c0);
        c1 = _mm256_fmadd_ps(_mm256_loadu_ps(p + stride), xv, c1);
        c2 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 2 * stride), xv, c2);
        c3 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 3 * stride), xv, c3);
        xp += 2;
        p += 2 * NM_BLOCK;
    }
    const int odd = n_in & 1;
    _mm_storeu_ps(y, nm_avx_finish(c0, p, xp, odd, relu));
    _mm_storeu_ps(y + 4, nm_avx_finish(c1, p + stride, xp, odd, relu));
    _mm_storeu_ps(y + 8, nm_avx_finish(c2, p + 2 * stride, xp, odd, relu));
    _mm_storeu_ps(y + 12, nm_avx_finish(c3, p + 3 * stride, xp, odd, relu));
}
#endif

#endif // NM_DENSE_SIMD_H

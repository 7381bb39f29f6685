/*
 * nm_act_avx2.h - nm_tanhf on 8 lanes at once (x86-64 hosts with AVX2, chosen at
 * run time): the same operations in the same order, multiplies and adds kept apart
 * as the scalar build keeps them (no contraction), so every lane rounds as nm_tanhf
 * does and the results are the same bits on every instruction-set path.
 */
#ifndef NM_ACT_AVX2_H
#define NM_ACT_AVX2_H

#include "nm_act.h"
#include "nm_isa.h"

#if NM_AVX2
NM_AVX2_INLINE __m256 nm_avx_tanh(__m256 x) {
    const __m256 zero = _mm256_setzero_ps(), sign = _mm256_set1_ps(-0.0f);
    const __m256 negative = _mm256_cmp_ps(x, zero, _CMP_LT_OQ);
    const __m256 a = _mm256_blendv_ps(x, _mm256_xor_ps(x, sign), negative);
    const __m256 y = _mm256_add_ps(a, a);
    const __m256i k = _mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(y, _mm256_set1_ps(1.44269504088896341f)),
        _mm256_set1_ps(0.5f)));
    const __m256 kf = _mm256_cvtepi32_ps(k);
    __m256 r = _mm256_sub_ps(y, _mm256_mul_ps(kf, _mm256_set1_ps(0.693145751953125f)));
    r = _mm256_sub_ps(r, _mm256_mul_ps(kf, _mm256_set1_ps(1.42860682030941723e-06f)));
    __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.0f / 720.0f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(0.5f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.0f));
    p = _mm256_mul_ps(p, r); // expm1(r)
    const __m256 two_k = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23));
    const __m256 e = _mm256_add_ps(_mm256_mul_ps(two_k, p), _mm256_sub_ps(two_k, _mm256_set1_ps(1.0f)));
    __m256 t = _mm256_div_ps(e, _mm256_add_ps(e, _mm256_set1_ps(2.0f)));
    t = _mm256_blendv_ps(t, _mm256_set1_ps(1.0f), _mm256_cmp_ps(a, _mm256_set1_ps(9.0f), _CMP_GE_OQ));
    t = _mm256_blendv_ps(t, _mm256_xor_ps(t, sign), negative);
    return _mm256_blendv_ps(t, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q)); // NaN passes through
}

NM_AVX2_FN void nm_tanh_avx2(float *y, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(y + i, nm_avx_tanh(_mm256_loadu_ps(y + i)));
    }
    for (; i < n; i++) {
        y[i] = nm_tanhf(y[i]);
    }
}
#endif

// y = tanh(y), 8 lanes at a time where the CPU has AVX2 (the same bits as nm_tanhf).
static inline void nm_tanh_all(float *y, size_t n) {
#if NM_AVX2
    if (nm_isa() == NM_ISA_AVX2) {
        nm_tanh_avx2(y, n);
        return;
    }
#endif
    nm_activate(y, n, NM_ACT_TANH);
}

#endif // NM_ACT_AVX2_H

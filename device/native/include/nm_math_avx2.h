/*
 * nm_math_avx2.h - nm_expf and nm_logf on 8 lanes at once (x86-64 hosts with AVX2,
 * chosen at run time): the same operations in the same order, multiplies and adds
 * kept apart as the scalar build keeps them, so every lane rounds as the scalar
 * function does and the results are the same bits on every instruction-set path.
 */
#ifndef NM_MATH_AVX2_H
#define NM_MATH_AVX2_H

#include "nm_isa.h"
#include "nm_math.h"

#if NM_AVX2
// p * r + c, rounded after the multiply and after the add (no contraction)
NM_AVX2_INLINE __m256 nm_avx_mul_add(__m256 p, __m256 r, float c) {
    return _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(c));
}

// Lanes outside [-87, 88] and NaN lanes compute garbage that the blends at the end replace,
// as the scalar function returns early for them.
NM_AVX2_INLINE __m256 nm_avx_exp(__m256 x) {
    const __m256 t = _mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f));
    const __m256 half = _mm256_blendv_ps(_mm256_set1_ps(0.5f), _mm256_set1_ps(-0.5f),
        _mm256_cmp_ps(t, _mm256_setzero_ps(), _CMP_LT_OQ));
    const __m256i k = _mm256_cvttps_epi32(_mm256_add_ps(t, half));
    const __m256 kf = _mm256_cvtepi32_ps(k);
    __m256 r = _mm256_sub_ps(x, _mm256_mul_ps(kf, _mm256_set1_ps(0.693145751953125f)));
    r = _mm256_sub_ps(r, _mm256_mul_ps(kf, _mm256_set1_ps(1.42860682030941723e-06f)));
    __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
    p = nm_avx_mul_add(p, r, 1.0f / 720.0f);
    p = nm_avx_mul_add(p, r, 1.0f / 120.0f);
    p = nm_avx_mul_add(p, r, 1.0f / 24.0f);
    p = nm_avx_mul_add(p, r, 1.0f / 6.0f);
    p = nm_avx_mul_add(p, r, 0.5f);
    p = nm_avx_mul_add(p, r, 1.0f);
    p = nm_avx_mul_add(p, r, 1.0f);
    const __m256 two_k = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23));
    __m256 e = _mm256_mul_ps(p, two_k);
    e = _mm256_blendv_ps(e, _mm256_set1_ps(3.4028235e38f), _mm256_cmp_ps(x, _mm256_set1_ps(88.0f), _CMP_GT_OQ));
    e = _mm256_blendv_ps(e, _mm256_setzero_ps(), _mm256_cmp_ps(x, _mm256_set1_ps(-87.0f), _CMP_LT_OQ));
    return _mm256_blendv_ps(e, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q)); // NaN passes through
}

// Of positive normal floats (nm_logf's domain).
NM_AVX2_INLINE __m256 nm_avx_log(__m256 x) {
    const __m256i u = _mm256_castps_si256(x);
    __m256i e = _mm256_sub_epi32(_mm256_and_si256(_mm256_srli_epi32(u, 23), _mm256_set1_epi32(0xff)),
        _mm256_set1_epi32(127));
    __m256 m = _mm256_castsi256_ps(_mm256_or_si256(_mm256_and_si256(u, _mm256_set1_epi32(0x007fffff)),
        _mm256_set1_epi32(0x3f800000)));
    const __m256 high = _mm256_cmp_ps(m, _mm256_set1_ps(1.41421356f), _CMP_GT_OQ);
    m = _mm256_blendv_ps(m, _mm256_mul_ps(m, _mm256_set1_ps(0.5f)), high);
    e = _mm256_sub_epi32(e, _mm256_castps_si256(high)); // a true lane is -1
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 z = _mm256_div_ps(_mm256_sub_ps(m, one), _mm256_add_ps(m, one)), z2 = _mm256_mul_ps(z, z);
    __m256 p = _mm256_set1_ps(2.0f / 9.0f);
    p = nm_avx_mul_add(p, z2, 2.0f / 7.0f);
    p = nm_avx_mul_add(p, z2, 2.0f / 5.0f);
    p = nm_avx_mul_add(p, z2, 2.0f / 3.0f);
    p = nm_avx_mul_add(p, z2, 2.0f);
    return _mm256_add_ps(_mm256_mul_ps(p, z), _mm256_mul_ps(_mm256_cvtepi32_ps(e), _mm256_set1_ps(0.693147180559945f)));
}
#endif

#endif // NM_MATH_AVX2_H

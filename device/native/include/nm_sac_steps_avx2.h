/*
 * nm_sac_steps_avx2.h - nm_sac_steps.h's squashed Gaussian sample and its backward on
 * 8 samples at once (x86-64 hosts with AVX2, chosen at run time): the scalar loops'
 * operations in their order, each rounded as there, so the same bits on every path.
 * Each returns how many samples it did (a multiple of 8); the caller does the rest. The
 * constants come from the caller (log(2 pi) / 2 and the log-probability's epsilon).
 */
#ifndef NM_SAC_STEPS_AVX2_H
#define NM_SAC_STEPS_AVX2_H

#include "nm_act_avx2.h"
#include "nm_math_avx2.h"

#if NM_AVX2
// clip(x, lo, hi) as nm_sac_log_std: x < lo ? lo : (x > hi ? hi : x), NaN passes
NM_AVX2_INLINE __m256 nm_avx_sac_log_std(__m256 x, __m256 lo, __m256 hi) {
    const __m256 upper = _mm256_blendv_ps(x, hi, _mm256_cmp_ps(x, hi, _CMP_GT_OQ));
    return _mm256_blendv_ps(upper, lo, _mm256_cmp_ps(x, lo, _CMP_LT_OQ));
}

NM_AVX2_FN size_t nm_sac_sample_avx2(const float *out, const float *eps, size_t a, size_t n, float lo, float hi,
    float half_log_2pi, float log_prob_eps, float *action, float *logp) {
    const __m256 LO = _mm256_set1_ps(lo), HI = _mm256_set1_ps(hi), one = _mm256_set1_ps(1.0f);
    size_t k = 0;
    for (; k + 8 <= n; k += 8) {
        __m256 sum = _mm256_setzero_ps();
        for (size_t j = 0; j < a; j++) {
            const float *mean = out + j * n, *ls = out + (a + j) * n, *e = eps + j * n;
            const __m256 log_std = nm_avx_sac_log_std(_mm256_loadu_ps(ls + k), LO, HI);
            const __m256 ek = _mm256_loadu_ps(e + k);
            const __m256 u = _mm256_add_ps(_mm256_loadu_ps(mean + k), _mm256_mul_ps(nm_avx_exp(log_std), ek));
            const __m256 act = nm_avx_tanh(u);
            _mm256_storeu_ps(action + j * n + k, act);
            const __m256 oma = _mm256_sub_ps(one, _mm256_mul_ps(act, act));
            __m256 t = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(-0.5f), ek), ek);
            t = _mm256_sub_ps(t, log_std);
            t = _mm256_sub_ps(t, _mm256_set1_ps(half_log_2pi));
            t = _mm256_sub_ps(t, nm_avx_log(_mm256_add_ps(oma, _mm256_set1_ps(log_prob_eps))));
            sum = j ? _mm256_add_ps(sum, t) : t;
        }
        _mm256_storeu_ps(logp + k, sum);
    }
    return k;
}

NM_AVX2_FN size_t nm_sac_sample_backward_avx2(const float *out, const float *eps, const float *action,
    const float *d_action, float d_logp, size_t a, size_t n, float lo, float hi, float log_prob_eps, float *d_out) {
    const __m256 LO = _mm256_set1_ps(lo), HI = _mm256_set1_ps(hi), one = _mm256_set1_ps(1.0f);
    const __m256 DL = _mm256_set1_ps(d_logp);
    size_t k = 0;
    for (; k + 8 <= n; k += 8) {
        for (size_t j = 0; j < a; j++) {
            const float *ls = out + (a + j) * n, *e = eps + j * n, *act = action + j * n, *da = d_action + j * n;
            const __m256 ak = _mm256_loadu_ps(act + k), lsk = _mm256_loadu_ps(ls + k);
            const __m256 oma = _mm256_sub_ps(one, _mm256_mul_ps(ak, ak));
            __m256 du = _mm256_mul_ps(_mm256_loadu_ps(da + k), oma);
            const __m256 q = _mm256_div_ps(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(2.0f), ak), oma),
                _mm256_add_ps(oma, _mm256_set1_ps(log_prob_eps)));
            du = _mm256_add_ps(du, _mm256_mul_ps(DL, q));
            _mm256_storeu_ps(d_out + j * n + k, du);
            const __m256 in_range = _mm256_and_ps(one, _mm256_and_ps(_mm256_cmp_ps(lsk, LO, _CMP_GT_OQ),
                _mm256_cmp_ps(lsk, HI, _CMP_LT_OQ)));
            const __m256 std = nm_avx_exp(nm_avx_sac_log_std(lsk, LO, HI));
            const __m256 g = _mm256_sub_ps(_mm256_mul_ps(_mm256_mul_ps(du, std), _mm256_loadu_ps(e + k)), DL);
            _mm256_storeu_ps(d_out + (a + j) * n + k, _mm256_mul_ps(g, in_range));
        }
    }
    return k;
}
#endif

#endif // NM_SAC_STEPS_AVX2_H

/*
 * nm_math.h - the scalar maths training needs, without libm: square root
 * (the FPU's instruction where there is one), natural log and exp.
 */
#ifndef NM_MATH_H
#define NM_MATH_H

#include "nm_kernels.h"

#if defined(__SSE2__) && defined(__GNUC__)
#include <xmmintrin.h>
#endif

static inline float nm_sqrtf(float x) {
    #if defined(__ARM_FP) && (__ARM_FP & 4) && defined(__GNUC__)
    float r;
    __asm__ ("vsqrt.f32 %0, %1" : "=t" (r) : "t" (x));
    return r;
    #elif defined(__SSE2__) && defined(__GNUC__)
    return _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(x)));
    #elif defined(__wasm__)
    return __builtin_sqrtf(x); // f32.sqrt, correctly rounded like sqrtss
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

// e^x: x = k ln2 + r (|r| <= ln2 / 2, ln2 split in two so r is exact), a degree-7
// polynomial for e^r, then the exponent bits; relative error a few float32 ulps.
static inline float nm_expf(float x) {
    if (x != x) {
        return x;
    }
    if (x > 88.0f) {
        return 3.4028235e38f;
    }
    if (x < -87.0f) {
        return 0.0f;
    }
    const float t = x * 1.44269504088896341f;
    const int k = (int)(t + (t < 0.0f ? -0.5f : 0.5f));
    float r = x - (float)k * 0.693145751953125f;
    r = r - (float)k * 1.42860682030941723e-06f;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    union { uint32_t u; float f; } two_k;
    two_k.u = (uint32_t)(127 + k) << 23;
    return p * two_k.f;
}

#endif // NM_MATH_H

/*
 * nm_act.h - scalar float arithmetic the layers share: division (NM_NO_FDIV) and the
 * activations (our own tanh, sigmoid and fast tanh, and the GRU gates' exponential; no libm).
 */
#ifndef NM_ACT_H
#define NM_ACT_H

#include "nm_layout.h"

/* ---------------------------------------------------------------------------
 * Division. NM_NO_FDIV (armv6m natmods: libgcc's soft-float divide has
 * absolute relocations that mpy_ld cannot link) replaces a / b by a Newton
 * reciprocal with one residual correction (within ~1 ulp for normal b).
 */
#if defined(NM_NO_FDIV)
NM_INLINE float nm_divf(float a, float b) {
    union { float f; uint32_t u; } v;
    v.f = b;
    v.u = 0x7EF311C7u - v.u; // ~1/b to 4 bits (sign carries over)
    float r = v.f;
    r = r * (2.0f - b * r);
    r = r * (2.0f - b * r);
    r = r * (2.0f - b * r);
    r = r * (2.0f - b * r);
    float q = a * r;
    return q + r * (a - b * q);
}
#else
#define nm_divf(a, b) ((a) / (b))
#endif

/* ---------------------------------------------------------------------------
 * Activations. tanh is our own (no libm): expm1 by range reduction and a
 * degree-7 polynomial, then tanh(a) = e / (e + 2) with e = expm1(2a);
 * relative error a few float32 ulps, identical on every target.
 */
static inline float nm_tanhf(float x) {
    if (x != x) {
        return x;
    }
    float a = x < 0.0f ? -x : x;
    float t;
    if (a >= 9.0f) {
        t = 1.0f;
    } else {
        float y = a + a;
        int k = (int)(y * 1.44269504088896341f + 0.5f);
        float r = y - (float)k * 0.693145751953125f;
        r = r - (float)k * 1.42860682030941723e-06f;
        float p = 1.0f / 5040.0f;
        p = p * r + 1.0f / 720.0f;
        p = p * r + 1.0f / 120.0f;
        p = p * r + 1.0f / 24.0f;
        p = p * r + 1.0f / 6.0f;
        p = p * r + 0.5f;
        p = p * r + 1.0f;
        p = p * r;                       // expm1(r)
        union { uint32_t u; float f; } two_k;
        two_k.u = (uint32_t)(127 + k) << 23;
        float e = two_k.f * p + (two_k.f - 1.0f); // expm1(y)
        t = nm_divf(e, e + 2.0f);
    }
    return x < 0.0f ? -t : t;
}

/* a / b for b in [1, 2] (the gates' denominators 1 + e^-a). With NM_NO_FDIV a first
 * guess linear in b (within 1/17 of 1/b) and three Newton steps (then float32 rounding),
 * half of nm_divf's general reciprocal; elsewhere the division itself. */
#if defined(NM_NO_FDIV)
NM_INLINE float nm_div_1_2(float a, float b) {
    float r = 1.41176471f - 0.470588235f * b;
    r = r * (2.0f - b * r);
    r = r * (2.0f - b * r);
    r = r * (2.0f - b * r);
    return a * r;
}
#else
#define nm_div_1_2(a, b) ((a) / (b))
#endif

/* e^-a and e^-b for a, b >= 0 given by their bits (sign clear), the exponentials sigmoid
 * and the GRU's tanh need: 2^-t with t = a log2(e) = k - f, k the nearest integer, f in
 * [-1/2, 1/2], and 2^f a degree-5 polynomial fitted for relative error (2.3e-7 evaluated
 * in float32). t's own rounding adds a relative error of about a * 6e-8, which the gates'
 * saturation damps: it is multiplied by s (1 - s). 0 past 87, NaN stays NaN. Two in step
 * share each coefficient (xtensawin has 16 float registers and reloads every constant
 * it cannot keep); the range tests compare bits as integers (without an FPU each float
 * comparison is a library call), clamping first keeps the conversion to int defined.
 * A third fewer instructions than nm_math.h's nm_expf (training's, for any sign). */
NM_INLINE void nm_exp_neg2(uint32_t ua, uint32_t ub, float *ea, float *eb) {
    union { uint32_t u; float f; } va, vb;
    va.u = ua < 0x42AE0000u ? ua : 0x42AE0000u; // 87
    vb.u = ub < 0x42AE0000u ? ub : 0x42AE0000u;
    const float ta = va.f * 1.44269504088896341f, tb = vb.f * 1.44269504088896341f;
    const int ka = (int)(ta + 0.5f), kb = (int)(tb + 0.5f);
    const float fa = (float)ka - ta, fb = (float)kb - tb;
    float pa = 0.00132764713f, pb = 0.00132764713f;
    pa = pa * fa + 0.00967554189f;
    pb = pb * fb + 0.00967554189f;
    pa = pa * fa + 0.0555071309f;
    pb = pb * fb + 0.0555071309f;
    pa = pa * fa + 0.240221202f;
    pb = pb * fb + 0.240221202f;
    pa = pa * fa + 0.693146944f;
    pb = pb * fb + 0.693146944f;
    pa = pa * fa + 1.00000012f;
    pb = pb * fb + 1.00000012f;
    // p 2^-k by the exponent field: e >= e^-87 > 2^-126 stays normal, so this is exact
    va.f = pa;
    vb.f = pb;
    va.u -= (uint32_t)ka << 23;
    vb.u -= (uint32_t)kb << 23;
    *ea = va.f;
    *eb = vb.f;
    if (ua > 0x42AE0000u) {
        va.u = ua > 0x7F800000u ? ua : 0u;
        *ea = va.f;
    }
    if (ub > 0x42AE0000u) {
        vb.u = ub > 0x7F800000u ? ub : 0u;
        *eb = vb.f;
    }
}

NM_INLINE uint32_t nm_f32_bits(float x) {
    union { float f; uint32_t u; } v;
    v.f = x;
    return v.u;
}

/* 1 / (1 + e^-x), from e^-|x| so nothing overflows: e / (1 + e) when x's sign bit is set.
 * Two at once for the GRU's r and z, whose exponentials then share their constants. */
NM_INLINE void nm_sigmoid2(float x, float y, float *sx, float *sy) {
    const uint32_t ux = nm_f32_bits(x), uy = nm_f32_bits(y);
    float ex, ey;
    nm_exp_neg2(ux & 0x7FFFFFFFu, uy & 0x7FFFFFFFu, &ex, &ey);
    *sx = nm_div_1_2(ux >> 31 ? ex : 1.0f, 1.0f + ex);
    *sy = nm_div_1_2(uy >> 31 ? ey : 1.0f, 1.0f + ey);
}

NM_INLINE float nm_sigmoidf(float x) {
    float s, unused;
    nm_sigmoid2(x, 0.0f, &s, &unused);
    return s;
}

/* tanh for the GRU's candidate gate: (1 - e) / (1 + e), e = e^-2|x|, sign restored. Its
 * absolute error stays near 1e-7 (1 - e cancels for tiny x, where tanh is tiny too);
 * dense layers keep nm_tanhf, whose relative error is a few ulps everywhere. */
NM_INLINE float nm_tanh_gate(float x) {
    const uint32_t u = nm_f32_bits(x);
    union { uint32_t u; float f; } a;
    a.u = u & 0x7FFFFFFFu;
    float e, unused;
    nm_exp_neg2(nm_f32_bits(a.f + a.f), 0u, &e, &unused);
    const float t = nm_div_1_2(1.0f - e, 1.0f + e);
    return u >> 31 ? -t : t;
}

// RLtools' FAST_TANH: a rational function on [-3, 3], exactly +-1 at the ends.
static inline float nm_fast_tanhf(float x) {
    x = x < -3.0f ? -3.0f : x > 3.0f ? 3.0f : x;
    const float x2 = x * x;
    return nm_divf(x * (27.0f + x2), 27.0f + 9.0f * x2);
}

static inline void nm_activate(float *y, size_t n, int act) {
    if (act == NM_ACT_RELU) {
        for (size_t i = 0; i < n; i++) {
            y[i] = y[i] > 0.0f ? y[i] : 0.0f;
        }
    } else if (act == NM_ACT_TANH) {
        for (size_t i = 0; i < n; i++) {
            y[i] = nm_tanhf(y[i]);
        }
    } else if (act == NM_ACT_SIGMOID) {
        for (size_t i = 0; i < n; i++) {
            y[i] = nm_sigmoidf(y[i]);
        }
    } else if (act == NM_ACT_FAST_TANH) {
        for (size_t i = 0; i < n; i++) {
            y[i] = nm_fast_tanhf(y[i]);
        }
    }
}

#endif // NM_ACT_H

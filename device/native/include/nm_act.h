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

/* e^-a for a >= 0, the one exponential sigmoid and the GRU's tanh need: 2^-t with
 * t = a log2(e) = k - f, k the nearest integer, f in [-1/2, 1/2], and 2^f a degree-5
 * polynomial fitted for relative error (2.3e-7 evaluated in float32). t's own rounding
 * adds a relative error of about a * 6e-8, which the gates' saturation damps: it is
 * multiplied by s (1 - s). 0 past a = 87, NaN stays NaN. A third fewer instructions
 * than nm_math.h's nm_expf (training's, for any sign). */
NM_INLINE float nm_exp_neg(float a) {
    if (!(a <= 87.0f)) {
        return a > 87.0f ? 0.0f : a;
    }
    const float t = a * 1.44269504088896341f;
    const int k = (int)(t + 0.5f);
    const float f = (float)k - t;
    float p = 0.00132764713f;
    p = p * f + 0.00967554189f;
    p = p * f + 0.0555071309f;
    p = p * f + 0.240221202f;
    p = p * f + 0.693146944f;
    p = p * f + 1.00000012f;
    union { uint32_t u; float f; } two;
    two.u = (uint32_t)(127 - k) << 23; // 2^-k, k <= 126
    return p * two.f;
}

// 1 / (1 + e^-x), from e^-|x| so nothing overflows: e / (1 + e) below 0.
NM_INLINE float nm_sigmoidf(float x) {
    const float e = nm_exp_neg(x < 0.0f ? -x : x);
    return nm_div_1_2(x < 0.0f ? e : 1.0f, 1.0f + e);
}

/* tanh for the GRU's candidate gate: (1 - e) / (1 + e), e = e^-2|x|, sign restored. Its
 * absolute error stays near 1e-7 (1 - e cancels for tiny x, where tanh is tiny too);
 * dense layers keep nm_tanhf, whose relative error is a few ulps everywhere. */
NM_INLINE float nm_tanh_gate(float x) {
    const float a = x < 0.0f ? -x : x;
    const float e = nm_exp_neg(a + a);
    const float t = nm_div_1_2(1.0f - e, 1.0f + e);
    return x < 0.0f ? -t : t;
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

/*
 * nm_act.h - scalar float arithmetic the layers share: division (NM_NO_FDIV) and the
 * activations (our own tanh, no libm).
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

static inline void nm_activate(float *y, size_t n, int act) {
    if (act == NM_ACT_RELU) {
        for (size_t i = 0; i < n; i++) {
            y[i] = y[i] > 0.0f ? y[i] : 0.0f;
        }
    } else if (act == NM_ACT_TANH) {
        for (size_t i = 0; i < n; i++) {
            y[i] = nm_tanhf(y[i]);
        }
    }
}

#endif // NM_ACT_H

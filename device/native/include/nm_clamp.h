/*
 * nm_clamp.h - output safety: finiteness tests and the clamp into the action limits.
 */
#ifndef NM_CLAMP_H
#define NM_CLAMP_H

#include "nm_isa.h"

/* ---------------------------------------------------------------------------
 * Output safety. A command that reaches a motor must be a number inside the
 * actuator's limits, whatever the network computed: finite weights and inputs
 * can still overflow to inf - inf = NaN inside a layer.
 */

// 0 for inf and NaN (exponent bits all set), 1 otherwise; a bit test, no libm.
NM_INLINE int nm_finite(float v) {
    union { float f; uint32_t u; } b;
    b.f = v;
    return (b.u & 0x7F800000u) != 0x7F800000u;
}

// Index of the first non-finite x[i], or n when all are finite.
static inline size_t nm_first_nonfinite(const float *x, size_t n) {
    size_t i = 0;
    while (i < n && nm_finite(x[i])) {
        i++;
    }
    return i;
}

/* Clamp y[i] into [lo[i], hi[i]], where lo_hi holds the n lower bounds and
 * then the n upper bounds (finite, lo <= hi: the caller checked them). A NaN
 * y[i] compares false against both bounds and would pass through, so it
 * becomes the midpoint instead: the neutral command of that actuator, never
 * NaN. The midpoint is computed as lo/2 + hi/2: halving is exact (above the
 * subnormal range), so this is (lo + hi) / 2 rounded once, and it cannot
 * overflow where lo + hi would.
 */
static inline void nm_clamp(float *y, const float *lo_hi, size_t n) {
    const float *lo = lo_hi, *hi = lo_hi + n;
    for (size_t i = 0; i < n; i++) {
        float v = y[i];
        if (v != v) {
            v = 0.5f * lo[i] + 0.5f * hi[i];
        } else if (v < lo[i]) {
            v = lo[i];
        } else if (v > hi[i]) {
            v = hi[i];
        }
        y[i] = v;
    }
}

#endif // NM_CLAMP_H

/*
 * __divsf3, IEEE single-precision division rounded to nearest even, which clang calls
 * for a / b on Xtensa (its back end does not use the FPU's division sequence). Integer
 * arithmetic only: a restoring division of the significands to 26 bits plus a sticky
 * bit; subnormals, infinities and NaNs as IEEE 754 has them.
 */
#include <stdint.h>

#include "float_bits.h"

float __divsf3(float a, float b);

#define SIGN (0x80000000u)
#define QNAN (0x7fc00000u)
#define INF (0x7f800000u)

// Significand with the hidden bit (bit 23) and unbiased-plus-127 exponent of a finite,
// non-zero value; subnormals are normalised (exponent below 1).
static uint32_t unpack(uint32_t u, int *exp) {
    uint32_t m = u & 0x7fffffu;
    int e = (int)((u >> 23) & 0xff);
    if (e == 0) {
        e = 1;
        while (!(m & 0x800000u)) {
            m <<= 1;
            e--;
        }
    } else {
        m |= 0x800000u;
    }
    *exp = e;
    return m;
}

float __divsf3(float a, float b) {
    const uint32_t ua = bits_of(a), ub = bits_of(b);
    const uint32_t sign = (ua ^ ub) & SIGN;
    const uint32_t aa = ua & ~SIGN, ab = ub & ~SIGN;
    if (aa > INF || ab > INF) {
        return float_of((aa > INF ? ua : ub) | 0x400000u);
    }
    if (aa == INF) {
        return float_of(ab == INF ? QNAN : (sign | INF));
    }
    if (ab == INF) {
        return float_of(sign);
    }
    if (ab == 0) {
        return float_of(aa == 0 ? QNAN : (sign | INF));
    }
    if (aa == 0) {
        return float_of(sign);
    }
    int ea, eb;
    uint32_t ma = unpack(aa, &ea);
    const uint32_t mb = unpack(ab, &eb);
    int exp = ea - eb + 127;
    if (ma < mb) {
        ma <<= 1;
        exp--;
    }
    // ma / mb in [1, 2): 24 significand bits, guard and round bit, then the sticky bit.
    uint32_t q = 0, r = ma;
    for (int i = 0; i < 26; i++) {
        q <<= 1;
        if (r >= mb) {
            r -= mb;
            q |= 1;
        }
        r <<= 1;
    }
    uint32_t sticky = r != 0;
    if (exp <= 0) {
        // Subnormal result: shift right, keeping what falls out in the sticky bit.
        const int shift = 1 - exp;
        if (shift > 26) {
            sticky |= q != 0;
            q = 0;
        } else {
            sticky |= (q & ((1u << shift) - 1)) != 0;
            q >>= shift;
        }
        exp = 0;
    }
    uint32_t mant = q >> 2;
    const uint32_t rest = q & 3;
    if (rest > 2 || (rest == 2 && (sticky || (mant & 1)))) {
        mant++;
    }
    // A normal significand carries its hidden bit into the exponent field (exp - 1 +
    // 1); a subnormal one rounding up to 2^23 becomes the smallest normal.
    const uint32_t out = exp == 0 ? mant : ((uint32_t)(exp - 1) << 23) + mant;
    return float_of(sign | (out >= INF ? INF : out));
}

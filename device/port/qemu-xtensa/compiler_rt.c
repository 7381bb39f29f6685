/*
 * The run-time helpers clang calls on Xtensa that a compiler's support library would
 * provide (no libgcc for the windowed ABI is packaged): 64-bit unsigned division and
 * the float <-> double conversions that variadic calls (mp_printf's %f) need.
 * The firmware computes in single precision; doubles only pass through.
 */
#include <stdint.h>
#include <string.h>

uint64_t __udivdi3(uint64_t n, uint64_t d);
uint64_t __umoddi3(uint64_t n, uint64_t d);
double __extendsfdf2(float f);
float __truncdfsf2(double d);
double __floatsidf(int32_t i);

// Shift-subtract division; the quotient and remainder of n / d (d != 0).
static uint64_t udivmod64(uint64_t n, uint64_t d, uint64_t *rem) {
    if (d == 0) {
        *rem = 0;
        return ~(uint64_t)0;
    }
    if ((n >> 32) == 0 && (d >> 32) == 0) {
        *rem = (uint32_t)n % (uint32_t)d;
        return (uint32_t)n / (uint32_t)d;
    }
    uint64_t q = 0, r = 0;
    for (int i = 63; i >= 0; i--) {
        r = (r << 1) | ((n >> i) & 1);
        if (r >= d) {
            r -= d;
            q |= (uint64_t)1 << i;
        }
    }
    *rem = r;
    return q;
}

uint64_t __udivdi3(uint64_t n, uint64_t d) {
    uint64_t r;
    return udivmod64(n, d, &r);
}

uint64_t __umoddi3(uint64_t n, uint64_t d) {
    uint64_t r;
    udivmod64(n, d, &r);
    return r;
}

static uint64_t dbits_of(double d) {
    uint64_t u;
    memcpy(&u, &d, sizeof(u));
    return u;
}

static double double_of(uint64_t u) {
    double d;
    memcpy(&d, &u, sizeof(d));
    return d;
}

// Exact: every float is a double.
double __extendsfdf2(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    const uint64_t sign = (uint64_t)(u >> 31) << 63;
    int e = (int)((u >> 23) & 0xff);
    uint32_t m = u & 0x7fffffu;
    if (e == 0xff) {
        return double_of(sign | ((uint64_t)0x7ff << 52) | ((uint64_t)m << 29));
    }
    if (e == 0) {
        if (m == 0) {
            return double_of(sign);
        }
        e = 1;
        while (!(m & 0x800000u)) {
            m <<= 1;
            e--;
        }
        m &= 0x7fffffu;
    }
    return double_of(sign | ((uint64_t)(e - 127 + 1023) << 52) | ((uint64_t)m << 29));
}

// Rounded to nearest, ties to even; overflow to infinity, underflow through subnormals.
float __truncdfsf2(double d) {
    const uint64_t u = dbits_of(d);
    const uint32_t sign = (uint32_t)(u >> 63) << 31;
    const int e = (int)((u >> 52) & 0x7ff);
    const uint64_t m = u & (((uint64_t)1 << 52) - 1);
    uint32_t out;
    if (e == 0x7ff) {
        out = 0x7f800000u | (m ? 0x400000u | (uint32_t)(m >> 29) : 0);
    } else {
        int exp = e - 1023 + 127;
        uint64_t sig = e ? (m | ((uint64_t)1 << 52)) : m; // 53 bits with the hidden one
        int shift = 29;                                    // 53 -> 24 significand bits
        if (exp <= 0) {
            shift += 1 - exp;
            exp = 0;
        }
        uint32_t mant;
        if (shift > 60) {
            mant = 0;
            sig = sig != 0; // sticky only
            shift = 0;
        } else {
            mant = (uint32_t)(sig >> shift);
        }
        if (shift > 0) {
            const uint64_t rest = sig & (((uint64_t)1 << shift) - 1), half = (uint64_t)1 << (shift - 1);
            if (rest > half || (rest == half && (mant & 1))) {
                mant++;
            }
        }
        // As in __divsf3: the hidden bit carries into the exponent field.
        out = exp == 0 ? mant : ((uint32_t)(exp - 1) << 23) + mant;
        if (exp >= 0xff || out >= 0x7f800000u) {
            out = 0x7f800000u;
        }
    }
    out |= sign;
    float f;
    memcpy(&f, &out, sizeof(f));
    return f;
}

double __floatsidf(int32_t i) {
    if (i == 0) {
        return 0.0;
    }
    const uint64_t sign = i < 0 ? (uint64_t)1 << 63 : 0;
    uint32_t a = i < 0 ? 0u - (uint32_t)i : (uint32_t)i;
    int e = 31;
    while (!(a & 0x80000000u)) {
        a <<= 1;
        e--;
    }
    return double_of(sign | ((uint64_t)(e + 1023) << 52) | ((uint64_t)(a & 0x7fffffffu) << 21));
}

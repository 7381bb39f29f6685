/*
 * nm_half.h - IEEE 754 binary16 storage for float32 values, in integer
 * arithmetic: the boards that train on device (ESP32, Cortex-M4F) have no
 * half-precision instructions, and a replay row stored in halves holds twice
 * the transitions in the same RAM.
 *
 * Rounding is to nearest, ties to even (NumPy's float32 -> float16); values
 * beyond the largest half (65504) saturate to it rather than becoming
 * infinite, so no infinity is made that the input did not have; NaN stays NaN.
 */
#ifndef NM_HALF_H
#define NM_HALF_H

#include <stdint.h>

#define NM_HALF_MAX_BITS 0x7bffu   // 65504
#define NM_HALF_INF_BITS 0x7c00u

static inline uint32_t nm_bits_of(float f) {
    union { float f; uint32_t u; } b = { f };
    return b.u;
}

static inline float nm_float_of(uint32_t u) {
    union { uint32_t u; float f; } b = { u };
    return b.f;
}

// Shift m right by `shift` (1..24) bits, rounding to nearest, ties to even.
static inline uint32_t nm_shift_round_even(uint32_t m, unsigned shift) {
    const uint32_t kept = m >> shift, rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    return kept + (rest > half || (rest == half && (kept & 1u)));
}

static inline uint16_t nm_half_of(float f) {
    const uint32_t u = nm_bits_of(f), a = u & 0x7fffffffu;
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    if (a >= 0x7f800000u) {                         // infinity, NaN (kept quiet)
        return (uint16_t)(sign | NM_HALF_INF_BITS | (a > 0x7f800000u ? 0x200u : 0u));
    }
    if (a >= 0x477ff000u) {                         // rounds beyond 65504: saturate
        return (uint16_t)(sign | NM_HALF_MAX_BITS);
    }
    if (a >= 0x38800000u) {                         // a normal half: rebias 127 -> 15
        return (uint16_t)(sign | nm_shift_round_even(a - 0x38000000u, 13));
    }
    if (a < 0x33000000u) {                          // below half the smallest subnormal
        return sign;
    }
    // a subnormal half, in units of 2^-24: the float's significand m * 2^(e - 126)
    const uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
    return (uint16_t)(sign | nm_shift_round_even(m, 126u - e));
}

static inline float nm_float_of_half(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1fu) {
        return nm_float_of(sign | 0x7f800000u | (m << 13));
    }
    if (e == 0) {
        if (m == 0) {
            return nm_float_of(sign);
        }
        e = 1;                                      // subnormal: normalise
        while (!(m & 0x400u)) {
            m <<= 1;
            e--;
        }
        m &= 0x3ffu;
    }
    return nm_float_of(sign | ((e + 112u) << 23) | (m << 13));
}

#endif // NM_HALF_H

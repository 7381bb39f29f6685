/*
 * nm_rng.h - random numbers for training on the board, identical on every
 * target (the pure-Python trainer implements the same streams).
 */
#ifndef NM_RNG_H
#define NM_RNG_H

#include "nm_math.h"

/* ---------------------------------------------------------------------------
 * Random numbers: xoshiro128+ (4 x uint32 state), uniform, normal (Marsaglia's
 * polar method), integers in [0, n) (multiply-shift).
 */
static inline uint32_t nm_rotl(uint32_t x, int k) {
    return (x << k) | (x >> (32 - k));
}

static inline uint32_t nm_rng_next(uint32_t *s) {
    const uint32_t result = s[0] + s[3];
    const uint32_t t = s[1] << 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = nm_rotl(s[3], 11);
    return result;
}

// Seed through splitmix32 so that nearby seeds give unrelated streams.
static inline void nm_rng_seed(uint32_t *s, uint32_t seed) {
    uint32_t z = seed;
    for (int i = 0; i < 4; i++) {
        z += 0x9e3779b9u;
        uint32_t x = z;
        x = (x ^ (x >> 16)) * 0x85ebca6bu;
        x = (x ^ (x >> 13)) * 0xc2b2ae35u;
        s[i] = x ^ (x >> 16);
    }
    if (!(s[0] | s[1] | s[2] | s[3])) {
        s[0] = 1;
    }
}

// [0, 1) with 24 random bits.
static inline float nm_rng_float(uint32_t *s) {
    return (float)(nm_rng_next(s) >> 8) * (1.0f / 16777216.0f);
}

static inline void nm_rng_uniform(uint32_t *s, float *out, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) {
        out[i] = lo + (hi - lo) * nm_rng_float(s);
    }
}

static inline void nm_rng_normal(uint32_t *s, float *out, size_t n) {
    size_t i = 0;
    while (i < n) {
        float u = 2.0f * nm_rng_float(s) - 1.0f, v = 2.0f * nm_rng_float(s) - 1.0f;
        float q = u * u + v * v;
        if (q >= 1.0f || q == 0.0f) {
            continue;
        }
        float f = nm_sqrtf(nm_divf(-2.0f * nm_logf(q), q));
        out[i++] = u * f;
        if (i < n) {
            out[i++] = v * f;
        }
    }
}

// n <= 2^24 (the caller checks); float arithmetic only, so no 64-bit or
// integer-division helpers are needed on cores without them.
static inline void nm_rng_int(uint32_t *s, uint32_t *out, size_t count, uint32_t n) {
    const float fn = (float)n;
    for (size_t i = 0; i < count; i++) {
        uint32_t k = (uint32_t)(nm_rng_float(s) * fn);
        out[i] = k < n ? k : n - 1;
    }
}

#endif // NM_RNG_H

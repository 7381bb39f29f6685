/*
 * nm_kernels.h - the one place neuromotor's arithmetic lives.
 *
 * Plain C99, no MicroPython, no libm, no allocation. Compiled into:
 *   - the MicroPython user C module (device/native/nm_kernels/),
 *   - dynamic native modules (.mpy) per architecture (device/native/natmod/),
 *   - bare-metal programs (include it and call the functions directly).
 *
 * Weight layout ("block-4"): a dense layer with n_in inputs and n_out outputs
 * is stored as ceil(n_out / 4) blocks; block k holds output rows 4k..4k+3:
 *     bias[4k+0..4k+3], then for each input j: W[4k+0][j] .. W[4k+3][j]
 * i.e. NM_BLOCK * (n_in + 1) floats per block. Rows past n_out in the last
 * block are zero. Each loaded input feeds 4 (or 16) multiply-adds; weights
 * stream through memory strictly sequentially.
 *
 * Whole-MLP parameter vector ("net"), as stored in the policy file payload:
 *     obs_mean[s0], obs_std[s0], layer 0, ..., layer L-1,
 *     action_scale[sL], action_offset[sL]
 * Shape descriptor ("layout", uint16): L, s0, s1, ..., sL, act0, ..., act(L-1).
 *
 * Determinism: every multiply-add goes through NM_MADD, which is a fused
 * multiply-add exactly where the target has one in hardware and a plain
 * multiply then add elsewhere; compile with -ffp-contract=off so the
 * compiler never fuses anything on its own. The user C module and the natmod
 * built for one architecture then give bit-identical results.
 */
#ifndef NM_KERNELS_H
#define NM_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#define NM_KERNELS_VERSION 1
#define NM_BLOCK 4
#define NM_MAX_LAYERS 32
#define NM_MAX_WIDTH 65535

enum {
    NM_ACT_IDENTITY = 0,
    NM_ACT_RELU = 1,
    NM_ACT_TANH = 2,
    NM_ACT_COUNT = 3,
};

#if defined(__ARM_FEATURE_FMA) && defined(__ARM_FP) && (__ARM_FP & 4)
#define NM_MADD(a, b, c) __builtin_fmaf((a), (b), (c))   // vfma.f32
#else
#define NM_MADD(a, b, c) ((a) * (b) + (c))
#endif

#if defined(__SSE2__) && defined(__GNUC__)
#define NM_SIMD4 1
typedef float nm_v4 __attribute__((vector_size(16)));
typedef float nm_v4u __attribute__((vector_size(16), aligned(4), may_alias));
#define NM_LOAD4(p) (*(const nm_v4u *)(p))
#define NM_STORE4(p, v) (*(nm_v4u *)(p) = (v))
#else
#define NM_SIMD4 0
#endif

/* ---------------------------------------------------------------------------
 * Size arithmetic. Every function returns 0 when the result does not fit in
 * size_t (and then *out is untouched), 1 otherwise.
 */
static inline int nm_mul_size(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) {
        return 0;
    }
    *out = a * b;
    return 1;
}

static inline int nm_add_size(size_t a, size_t b, size_t *out) {
    if (b > SIZE_MAX - a) {
        return 0;
    }
    *out = a + b;
    return 1;
}

static inline size_t nm_blocks(size_t n_out) {
    return n_out / NM_BLOCK + (n_out % NM_BLOCK != 0);
}

// Floats in one packed layer (biases included).
static inline int nm_layer_size(size_t n_in, size_t n_out, size_t *out) {
    size_t per_block;
    if (n_in == SIZE_MAX || !nm_mul_size(n_in + 1, NM_BLOCK, &per_block)) {
        return 0;
    }
    return nm_mul_size(nm_blocks(n_out), per_block, out);
}

// Floats in a whole net (see layout above); sizes has n_layers + 1 entries.
static inline int nm_net_size(const uint16_t *sizes, size_t n_layers, size_t *out) {
    size_t total = 2 * (size_t)sizes[0] + 2 * (size_t)sizes[n_layers];
    size_t s;
    for (size_t i = 0; i < n_layers; i++) {
        if (!nm_layer_size(sizes[i], sizes[i + 1], &s) || !nm_add_size(total, s, &total)) {
            return 0;
        }
    }
    *out = total;
    return 1;
}

// Scratch floats nm_mlp needs: two buffers as wide as the widest input.
static inline size_t nm_mlp_scratch_size(const uint16_t *sizes, size_t n_layers) {
    size_t widest = 0;
    for (size_t i = 0; i < n_layers; i++) {
        if (sizes[i] > widest) {
            widest = sizes[i];
        }
    }
    return 2 * widest;
}

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
        t = e / (e + 2.0f);
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

/* ---------------------------------------------------------------------------
 * Dense blocks: w points at one block (bias[4], then n_in x 4 weights).
 */

// One block: 4 outputs into y[0..3].
static inline void nm_block1(float *y, const float *x, const float *w, size_t n_in) {
    #if NM_SIMD4
    nm_v4 acc = NM_LOAD4(w);
    w += NM_BLOCK;
    for (size_t j = 0; j < n_in; j++, w += NM_BLOCK) {
        acc += NM_LOAD4(w) * x[j];
    }
    NM_STORE4(y, acc);
    #else
    float a0 = w[0], a1 = w[1], a2 = w[2], a3 = w[3];
    w += NM_BLOCK;
    for (size_t j = 0; j < n_in; j++, w += NM_BLOCK) {
        float xj = x[j];
        a0 = NM_MADD(w[0], xj, a0);
        a1 = NM_MADD(w[1], xj, a1);
        a2 = NM_MADD(w[2], xj, a2);
        a3 = NM_MADD(w[3], xj, a3);
    }
    y[0] = a0;
    y[1] = a1;
    y[2] = a2;
    y[3] = a3;
    #endif
}

// Four consecutive blocks (16 outputs) sharing every input load.
static inline void nm_block4(float *y, const float *x, const float *w, size_t n_in) {
    const size_t stride = NM_BLOCK * (n_in + 1);
    const float *w0 = w, *w1 = w + stride, *w2 = w + 2 * stride, *w3 = w + 3 * stride;
    #if NM_SIMD4
    nm_v4 c0 = NM_LOAD4(w0), c1 = NM_LOAD4(w1), c2 = NM_LOAD4(w2), c3 = NM_LOAD4(w3);
    for (size_t j = 1; j <= n_in; j++) {
        const size_t o = NM_BLOCK * j;
        const float xj = x[j - 1];
        c0 += NM_LOAD4(w0 + o) * xj;
        c1 += NM_LOAD4(w1 + o) * xj;
        c2 += NM_LOAD4(w2 + o) * xj;
        c3 += NM_LOAD4(w3 + o) * xj;
    }
    NM_STORE4(y, c0);
    NM_STORE4(y + 4, c1);
    NM_STORE4(y + 8, c2);
    NM_STORE4(y + 12, c3);
    #else
    // Scalar FPUs (Cortex-M4F/M7): 16 accumulators stay in s-registers.
    float a[16];
    for (int i = 0; i < 4; i++) {
        a[i] = w0[i];
        a[4 + i] = w1[i];
        a[8 + i] = w2[i];
        a[12 + i] = w3[i];
    }
    for (size_t j = 1; j <= n_in; j++) {
        const size_t o = NM_BLOCK * j;
        const float xj = x[j - 1];
        for (int i = 0; i < 4; i++) {
            a[i] = NM_MADD(w0[o + i], xj, a[i]);
            a[4 + i] = NM_MADD(w1[o + i], xj, a[4 + i]);
            a[8 + i] = NM_MADD(w2[o + i], xj, a[8 + i]);
            a[12 + i] = NM_MADD(w3[o + i], xj, a[12 + i]);
        }
    }
    for (int i = 0; i < 16; i++) {
        y[i] = a[i];
    }
    #endif
}

/* ---------------------------------------------------------------------------
 * Fused dense layer, one sample: y[n_out] = act(W x + b).
 * w is a packed layer of nm_layer_size(n_in, n_out) floats. y must not
 * overlap x or w. No allocation; the caller validated the sizes.
 */
static inline void nm_dense(float *y, const float *x, const float *w,
    size_t n_in, size_t n_out, int act) {
    const size_t stride = NM_BLOCK * (n_in + 1);
    const size_t full = n_out / NM_BLOCK;
    size_t b = 0;
    for (; b + 4 <= full; b += 4) {
        nm_block4(y + NM_BLOCK * b, x, w + b * stride, n_in);
    }
    for (; b < full; b++) {
        nm_block1(y + NM_BLOCK * b, x, w + b * stride, n_in);
    }
    size_t rest = n_out - NM_BLOCK * full;
    if (rest) {
        float tail[NM_BLOCK];
        nm_block1(tail, x, w + full * stride, n_in);
        for (size_t i = 0; i < rest; i++) {
            y[NM_BLOCK * full + i] = tail[i];
        }
    }
    nm_activate(y, n_out, act);
}

// Fused dense layer over a batch of row-major samples: y[batch][n_out].
static inline void nm_dense_batch(float *y, const float *x, const float *w,
    size_t batch, size_t n_in, size_t n_out, int act) {
    for (size_t s = 0; s < batch; s++) {
        nm_dense(y + s * n_out, x + s * n_in, w, n_in, n_out, act);
    }
}

/* ---------------------------------------------------------------------------
 * Whole policy forward in one call:
 *   out = mlp((x - obs_mean) / obs_std) * action_scale + action_offset
 * net and layout as described at the top; scratch holds at least
 * nm_mlp_scratch_size(sizes, L) floats. out, x, net, scratch are disjoint.
 */
static inline void nm_mlp(float *out, const float *x, const float *net,
    const uint16_t *sizes, const uint16_t *acts, size_t n_layers, float *scratch) {
    const size_t s0 = sizes[0], sl = sizes[n_layers];
    size_t half = nm_mlp_scratch_size(sizes, n_layers) / 2;
    float *cur = scratch, *nxt = scratch + half;
    const float *mean = net, *std = net + s0;
    for (size_t i = 0; i < s0; i++) {
        cur[i] = (x[i] - mean[i]) / std[i];
    }
    const float *w = net + 2 * s0;
    for (size_t l = 0; l < n_layers; l++) {
        size_t n_in = sizes[l], n_out = sizes[l + 1], len;
        nm_layer_size(n_in, n_out, &len);
        float *dst = l + 1 == n_layers ? out : nxt;
        nm_dense(dst, cur, w, n_in, n_out, acts[l]);
        w += len;
        nxt = cur;
        cur = dst;
    }
    const float *scale = w, *offset = w + sl;
    for (size_t i = 0; i < sl; i++) {
        out[i] = NM_MADD(out[i], scale[i], offset[i]);
    }
}

/* ---------------------------------------------------------------------------
 * Packing: row-major W[n_out][n_in] and b[n_out] into the block-4 layout.
 * dst holds nm_layer_size(n_in, n_out) floats.
 */
static inline void nm_pack_layer(float *dst, const float *w, const float *b,
    size_t n_in, size_t n_out) {
    const size_t nb = nm_blocks(n_out);
    for (size_t k = 0; k < nb; k++) {
        float *blk = dst + k * NM_BLOCK * (n_in + 1);
        for (size_t r = 0; r < NM_BLOCK; r++) {
            size_t row = k * NM_BLOCK + r;
            blk[r] = row < n_out ? b[row] : 0.0f;
            for (size_t j = 0; j < n_in; j++) {
                blk[NM_BLOCK * (j + 1) + r] = row < n_out ? w[row * n_in + j] : 0.0f;
            }
        }
    }
}

/* ---------------------------------------------------------------------------
 * CRC-32 (IEEE 802.3, reflected, as zlib.crc32), bitwise: no table in RAM.
 */
static inline uint32_t nm_crc32(uint32_t crc, const uint8_t *p, size_t n) {
    crc = ~crc;
    while (n--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++) {
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
        }
    }
    return ~crc;
}

#endif // NM_KERNELS_H

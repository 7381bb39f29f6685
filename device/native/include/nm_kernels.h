/*
 * nm_kernels.h - the one place neuromotor's arithmetic lives.
 *
 * Plain C99, no MicroPython, no libm, no allocation. Compiled into:
 *   - the MicroPython user C module and the dynamic native modules (.mpy)
 *     per architecture, both from device/native/nm_kernels/nm_kernels.c,
 *   - bare-metal programs (include it and call the functions directly, as
 *     device/baremetal/ and exported C policy headers do).
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
 * multiply then add elsewhere (the ARMv7E-M inference kernel's exception is
 * NM_SPLIT_MAC below); compile with -ffp-contract=off so the
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

#if defined(__GNUC__)
#define NM_INLINE static inline __attribute__((always_inline))
#else
#define NM_INLINE static inline
#endif

// Views of float buffers as 32-bit words (bit tests, int8 payloads inside float-aligned
// buffers) that the compiler must not assume are distinct from the floats.
#if defined(__GNUC__)
typedef int32_t nm_i32a __attribute__((may_alias));
typedef uint32_t nm_u32a __attribute__((may_alias));
typedef float nm_f32a __attribute__((may_alias));
#else
typedef int32_t nm_i32a;
typedef uint32_t nm_u32a;
typedef float nm_f32a;
#endif

enum {
    NM_ACT_IDENTITY = 0,
    NM_ACT_RELU = 1,
    NM_ACT_TANH = 2,
    NM_ACT_COUNT = 3,
};

#if defined(__ARM_FEATURE_FMA) && defined(__ARM_FP) && (__ARM_FP & 4)
#define NM_FMA 1
#define NM_MADD(a, b, c) __builtin_fmaf((a), (b), (c))   // vfma.f32
#else
#define NM_FMA 0
#define NM_MADD(a, b, c) ((a) * (b) + (c))
#endif

#if defined(__SSE2__) && defined(__GNUC__)
#define NM_SIMD4 1
typedef float nm_v4 __attribute__((vector_size(16)));
typedef float nm_v4u __attribute__((vector_size(16), aligned(4), may_alias));
#define NM_LOAD4(p) (*(const nm_v4u *)(p))
#define NM_STORE4(p, v) (*(nm_v4u *)(p) = (v))
#elif defined(__wasm_simd128__)
#include "nm_kernels_wasm.h"
#else
#define NM_SIMD4 0
#endif

// x86-64 with AVX2+FMA at run time (cpuid): 8-wide fused multiply-adds.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(NM_NO_AVX2)
#define NM_AVX2 1
#include <immintrin.h>
#else
#define NM_AVX2 0
#endif

/* Instruction-set paths. Auto picks the best the CPU has; a caller may force
 * a lower one (tests check every path against NumPy). */
enum {
    NM_ISA_AUTO = 0,
    NM_ISA_SCALAR = 1,
    NM_ISA_SSE2 = 2,
    NM_ISA_AVX2 = 3,
};

// 0 until first use. Natmods cannot relocate to static BSS, so there it is global.
#if defined(MICROPY_ENABLE_DYNRUNTIME)
int nm_isa_current;
#else
static int nm_isa_current;
#endif

static inline int nm_isa_best(void) {
    #if NM_AVX2
    uint32_t a, b, c, d;
    __asm__ ("cpuid" : "=a" (a), "=b" (b), "=c" (c), "=d" (d) : "a" (1), "c" (0));
    const uint32_t need = (1u << 12) | (1u << 27) | (1u << 28); // FMA, OSXSAVE, AVX
    if ((c & need) == need) {
        uint32_t lo, hi;
        __asm__ ("xgetbv" : "=a" (lo), "=d" (hi) : "c" (0));
        __asm__ ("cpuid" : "=a" (a), "=b" (b), "=c" (c), "=d" (d) : "a" (7), "c" (0));
        if ((lo & 6) == 6 && (b & (1u << 5))) { // OS saves ymm; AVX2
            return NM_ISA_AVX2;
        }
    }
    #endif
    return NM_SIMD4 ? NM_ISA_SSE2 : NM_ISA_SCALAR;
}

static inline int nm_isa(void) {
    if (nm_isa_current == NM_ISA_AUTO) {
        nm_isa_current = nm_isa_best();
    }
    return nm_isa_current;
}

// Force a path (NM_ISA_AUTO: best available). Returns 0 if unavailable here.
static inline int nm_isa_set(int isa) {
    int best = nm_isa_best();
    if (isa == NM_ISA_AUTO) {
        isa = best;
    }
    if (isa < NM_ISA_SCALAR || isa > best || (isa == NM_ISA_SSE2 && !NM_SIMD4)) {
        return 0;
    }
    nm_isa_current = isa;
    return 1;
}

/* ---------------------------------------------------------------------------
 * Size arithmetic. Every function returns 0 when the result does not fit in
 * size_t (and then *out is untouched), 1 otherwise.
 */
NM_INLINE int nm_mul_size(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) {
        return 0;
    }
    *out = a * b;
    return 1;
}

NM_INLINE int nm_add_size(size_t a, size_t b, size_t *out) {
    if (b > SIZE_MAX - a) {
        return 0;
    }
    *out = a + b;
    return 1;
}

NM_INLINE size_t nm_blocks(size_t n_out) {
    return n_out / NM_BLOCK + (n_out % NM_BLOCK != 0);
}

// Floats in one packed layer (biases included).
NM_INLINE int nm_layer_size(size_t n_in, size_t n_out, size_t *out) {
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

/* ---------------------------------------------------------------------------
 * Dense blocks: w points at one block (bias[4], then n_in x 4 weights);
 * each function writes 4 (or 16) outputs, ReLU applied when relu != 0.
 */

// Portable: 4 scalar accumulators (Cortex-M FPUs, soft float, RISC-V).
NM_INLINE void nm_block1_scalar(float *y, const float *x, const float *w, size_t n_in, int relu) {
    float a0 = w[0], a1 = w[1], a2 = w[2], a3 = w[3];
    w += NM_BLOCK;
    for (size_t j = 0; j < n_in; j++, w += NM_BLOCK) {
        float xj = x[j];
        a0 = NM_MADD(w[0], xj, a0);
        a1 = NM_MADD(w[1], xj, a1);
        a2 = NM_MADD(w[2], xj, a2);
        a3 = NM_MADD(w[3], xj, a3);
    }
    if (relu) {
        a0 = a0 > 0.0f ? a0 : 0.0f;
        a1 = a1 > 0.0f ? a1 : 0.0f;
        a2 = a2 > 0.0f ? a2 : 0.0f;
        a3 = a3 > 0.0f ? a3 : 0.0f;
    }
    y[0] = a0;
    y[1] = a1;
    y[2] = a2;
    y[3] = a3;
}

// Portable, four blocks (16 outputs) sharing every input load: on a scalar
// FPU (Cortex-M4F/M7) the 16 accumulators stay in s-registers.
NM_INLINE void nm_block4_scalar(float *y, const float *x, const float *w, size_t n_in, int relu) {
    const size_t stride = NM_BLOCK * (n_in + 1);
    float a[16];
    for (int g = 0; g < 4; g++) {
        for (int i = 0; i < 4; i++) {
            a[4 * g + i] = w[g * stride + i];
        }
    }
    const float *wj = w + NM_BLOCK;
    for (size_t j = 0; j < n_in; j++, wj += NM_BLOCK) {
        const float xj = x[j];
        for (int g = 0; g < 4; g++) {
            const float *p = wj + g * stride;
            a[4 * g + 0] = NM_MADD(p[0], xj, a[4 * g + 0]);
            a[4 * g + 1] = NM_MADD(p[1], xj, a[4 * g + 1]);
            a[4 * g + 2] = NM_MADD(p[2], xj, a[4 * g + 2]);
            a[4 * g + 3] = NM_MADD(p[3], xj, a[4 * g + 3]);
        }
    }
    for (int i = 0; i < 16; i++) {
        y[i] = relu && !(a[i] > 0.0f) ? 0.0f : a[i];
    }
}

/* Cortex-M4F/M7 (ARMv7E-M with a single-precision FMA FPU, 32 s-registers).
 * From C, GCC loads every weight with its own vldr and bumps each block
 * pointer: ~2.6 instructions per multiply-add. A block stores the weights of
 * consecutive inputs next to each other, so one vldmia with writeback loads
 * a block's 8 weights for two inputs: two inputs of four blocks then cost
 * 1 + 4 loads, 32 vfma and the loop test (~1.2 per multiply-add). Same fused
 * multiply-adds in the same order as the C loops: results are bit-identical.
 *
 * NM_SPLIT_MAC: on the Cortex-M4F a VFMA takes 3 cycles and a VMUL or a VADD
 * one each (Cortex-M4 TRM), so a multiply then an add is faster than the
 * fused instruction: the inference kernels then round each product before
 * adding it (the result of a*b+c in plain C99, as on a core without FMA),
 * one instruction more per multiply-add but ~20% fewer cycles. On a
 * Cortex-M7 the opposite holds (VFMA pipelines), so the split is on by
 * default only for FPv4-SP builds (no double-precision FPU: the M4F firmware
 * and the armv7emsp natmod); that natmod loaded on an M7 is then slower than
 * the fused one, which is why M7 boards ship armv7emdp. -DNM_SPLIT_MAC=0 or 1
 * overrides it. Training (nm_gemm.h) keeps NM_MADD.
 */
#if defined(__GNUC__) && defined(__ARM_ARCH_7EM__) && NM_FMA
#define NM_VLDM 1
#ifndef NM_SPLIT_MAC
#define NM_SPLIT_MAC (!(__ARM_FP & 8))
#endif
#if NM_SPLIT_MAC
#define NM_VLDM_MADD(a, b, c) ((a) * (b) + (c))   // -ffp-contract=off: vmul.f32 then vadd.f32
#else
#define NM_VLDM_MADD(a, b, c) NM_MADD(a, b, c)
#endif

typedef struct { float v[2]; } nm_f2;
typedef struct { float v[8]; } nm_f8;

// x[0], x[1] into s16, s17 (one vldmia needs consecutive registers); x += 2.
#define NM_VLDM_X2(x, x0, x1) \
    __asm__ ("vldmia %[xp]!, {%[x0], %[x1]}" \
        : [xp] "+r" (x), [x0] "=t" (x0), [x1] "=t" (x1) : "m" (*(const nm_f2 *)(x)))

// One block, inputs j and j+1: a[0..3] += w[j][0..3] * x0 + w[j+1][0..3] * x1
// (in that order, each through NM_VLDM_MADD); p advances past the 8 weights.
NM_INLINE void nm_vldm_block(float *a, const float **p, float x0, float x1) {
    #if NM_SPLIT_MAC
    // All eight products first: each vadd then reads a vmul result issued at
    // least three instructions earlier, so none waits for the multiplier.
    __asm__ (
        "vldmia %[p]!, {s24-s31}\n\t"
        "vmul.f32 s24, s24, %[x0]\n\t"
        "vmul.f32 s25, s25, %[x0]\n\t"
        "vmul.f32 s26, s26, %[x0]\n\t"
        "vmul.f32 s27, s27, %[x0]\n\t"
        "vmul.f32 s28, s28, %[x1]\n\t"
        "vmul.f32 s29, s29, %[x1]\n\t"
        "vmul.f32 s30, s30, %[x1]\n\t"
        "vmul.f32 s31, s31, %[x1]\n\t"
        "vadd.f32 %[a0], %[a0], s24\n\t"
        "vadd.f32 %[a1], %[a1], s25\n\t"
        "vadd.f32 %[a2], %[a2], s26\n\t"
        "vadd.f32 %[a3], %[a3], s27\n\t"
        "vadd.f32 %[a0], %[a0], s28\n\t"
        "vadd.f32 %[a1], %[a1], s29\n\t"
        "vadd.f32 %[a2], %[a2], s30\n\t"
        "vadd.f32 %[a3], %[a3], s31"
        : [p] "+r" (*p), [a0] "+t" (a[0]), [a1] "+t" (a[1]), [a2] "+t" (a[2]), [a3] "+t" (a[3])
        : [x0] "t" (x0), [x1] "t" (x1), "m" (*(const nm_f8 *)*p)
        : "s24", "s25", "s26", "s27", "s28", "s29", "s30", "s31");
    #else
    __asm__ (
        "vldmia %[p]!, {s24-s31}\n\t"
        "vfma.f32 %[a0], s24, %[x0]\n\t"
        "vfma.f32 %[a1], s25, %[x0]\n\t"
        "vfma.f32 %[a2], s26, %[x0]\n\t"
        "vfma.f32 %[a3], s27, %[x0]\n\t"
        "vfma.f32 %[a0], s28, %[x1]\n\t"
        "vfma.f32 %[a1], s29, %[x1]\n\t"
        "vfma.f32 %[a2], s30, %[x1]\n\t"
        "vfma.f32 %[a3], s31, %[x1]"
        : [p] "+r" (*p), [a0] "+t" (a[0]), [a1] "+t" (a[1]), [a2] "+t" (a[2]), [a3] "+t" (a[3])
        : [x0] "t" (x0), [x1] "t" (x1), "m" (*(const nm_f8 *)*p)
        : "s24", "s25", "s26", "s27", "s28", "s29", "s30", "s31");
    #endif
}

NM_INLINE void nm_store_relu(float *y, const float *a, int n, int relu) {
    for (int i = 0; i < n; i++) {
        y[i] = relu && !(a[i] > 0.0f) ? 0.0f : a[i];
    }
}

// nb blocks (1 or 4) at stride floats apart share each loaded pair of inputs.
NM_INLINE void nm_blocks_vldm(float *y, const float *x, const float *w, size_t n_in,
    size_t stride, int nb, int relu) {
    float a[16];
    const float *p[4];
    for (int g = 0; g < nb; g++) {
        for (int i = 0; i < 4; i++) {
            a[4 * g + i] = w[g * stride + i];
        }
        p[g] = w + g * stride + NM_BLOCK;
    }
    for (const float *end = x + (n_in & ~(size_t)1); x != end;) {
        register float x0 __asm__ ("s16"), x1 __asm__ ("s17");
        NM_VLDM_X2(x, x0, x1);
        for (int g = 0; g < nb; g++) {
            nm_vldm_block(a + 4 * g, &p[g], x0, x1);
        }
    }
    if (n_in & 1) { // the last input of an odd count
        for (int k = 0; k < 4 * nb; k++) {
            a[k] = NM_VLDM_MADD(p[k / 4][k % 4], x[0], a[k]);
        }
    }
    nm_store_relu(y, a, 4 * nb, relu);
}

NM_INLINE void nm_block1_vldm(float *y, const float *x, const float *w, size_t n_in, int relu) {
    nm_blocks_vldm(y, x, w, n_in, 0, 1, relu);
}

NM_INLINE void nm_block4_vldm(float *y, const float *x, const float *w, size_t n_in, int relu) {
    nm_blocks_vldm(y, x, w, n_in, NM_BLOCK * (n_in + 1), 4, relu);
}
#else
#define NM_VLDM 0
#endif

#if NM_SIMD4
NM_INLINE nm_v4 nm_relu4(nm_v4 v, int relu) {
    #if defined(NM_SIMD4_RELU)
    return relu ? NM_SIMD4_RELU(v) : v;
    #else
    return relu ? __builtin_ia32_maxps(v, (nm_v4) {0.0f, 0.0f, 0.0f, 0.0f}) : v;
    #endif
}

NM_INLINE void nm_block1_sse(float *y, const float *x, const float *w, size_t n_in, int relu) {
    nm_v4 acc = NM_LOAD4(w);
    w += NM_BLOCK;
    for (size_t j = 0; j < n_in; j++, w += NM_BLOCK) {
        acc += NM_LOAD4(w) * x[j];
    }
    NM_STORE4(y, nm_relu4(acc, relu));
}

NM_INLINE void nm_block4_sse(float *y, const float *x, const float *w, size_t n_in, int relu) {
    const size_t stride = NM_BLOCK * (n_in + 1);
    const float *w0 = w, *w1 = w + stride, *w2 = w + 2 * stride, *w3 = w + 3 * stride;
    nm_v4 c0 = NM_LOAD4(w0), c1 = NM_LOAD4(w1), c2 = NM_LOAD4(w2), c3 = NM_LOAD4(w3);
    for (size_t o = NM_BLOCK, end = NM_BLOCK * (n_in + 1); o < end; o += NM_BLOCK) {
        const float xj = *x++;
        c0 += NM_LOAD4(w0 + o) * xj;
        c1 += NM_LOAD4(w1 + o) * xj;
        c2 += NM_LOAD4(w2 + o) * xj;
        c3 += NM_LOAD4(w3 + o) * xj;
    }
    NM_STORE4(y, nm_relu4(c0, relu));
    NM_STORE4(y + 4, nm_relu4(c1, relu));
    NM_STORE4(y + 8, nm_relu4(c2, relu));
    NM_STORE4(y + 12, nm_relu4(c3, relu));
}
#endif

#if NM_AVX2
/* 256-bit: one ymm covers two consecutive inputs of a block (8 weights), so
 * lanes 0-3 accumulate even inputs and lanes 4-7 odd ones; the halves are
 * added at the end. The bias rides in the low half of the initial value. */
#define NM_AVX2_FN static inline __attribute__((target("avx2,fma")))
#define NM_AVX2_INLINE static inline __attribute__((target("avx2,fma"), always_inline))

// [x0 x0 x0 x0 x1 x1 x1 x1] from two consecutive floats. x is only 4-byte
// aligned: _mm_loadl_epi64 is an unaligned 8-byte load (a double load is not).
NM_AVX2_INLINE __m256 nm_avx_pair(const float *x, __m256i idx) {
    return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)x))), idx);
}

NM_AVX2_INLINE __m128 nm_avx_finish(__m256 acc, const float *w_tail, const float *x_tail, int odd, int relu) {
    __m128 v = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    if (odd) {
        v = _mm_fmadd_ps(_mm_loadu_ps(w_tail), _mm_broadcast_ss(x_tail), v);
    }
    return relu ? _mm_max_ps(v, _mm_setzero_ps()) : v;
}

NM_AVX2_INLINE __m256 nm_avx_bias(const float *w) {
    return _mm256_insertf128_ps(_mm256_setzero_ps(), _mm_loadu_ps(w), 0);
}

NM_AVX2_INLINE void nm_block1_avx2(float *y, const float *x, const float *w, size_t n_in, int relu) {
    const __m256i idx = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
    __m256 acc = nm_avx_bias(w), acc2 = _mm256_setzero_ps();
    const float *p = w + NM_BLOCK, *xp = x;
    const float *x_end4 = x + (n_in & ~(size_t)3), *x_end2 = x + (n_in & ~(size_t)1);
    for (; xp != x_end4; xp += 4, p += 4 * NM_BLOCK) {
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(p), nm_avx_pair(xp, idx), acc);
        acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 2 * NM_BLOCK), nm_avx_pair(xp + 2, idx), acc2);
    }
    if (xp != x_end2) {
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(p), nm_avx_pair(xp, idx), acc);
        xp += 2;
        p += 2 * NM_BLOCK;
    }
    acc = _mm256_add_ps(acc, acc2);
    _mm_storeu_ps(y, nm_avx_finish(acc, p, xp, n_in & 1, relu));
}

NM_AVX2_INLINE void nm_block4_avx2(float *y, const float *x, const float *w, size_t n_in, int relu) {
    const __m256i idx = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
    const size_t stride = NM_BLOCK * (n_in + 1);
    __m256 c0 = nm_avx_bias(w), c1 = nm_avx_bias(w + stride);
    __m256 c2 = nm_avx_bias(w + 2 * stride), c3 = nm_avx_bias(w + 3 * stride);
    const float *p = w + NM_BLOCK, *xp = x;
    const float *x_end4 = x + (n_in & ~(size_t)3), *x_end2 = x + (n_in & ~(size_t)1);
    for (; xp != x_end4; xp += 4, p += 4 * NM_BLOCK) { // two pairs per pass
        const __m256 xa = nm_avx_pair(xp, idx), xb = nm_avx_pair(xp + 2, idx);
        c0 = _mm256_fmadd_ps(_mm256_loadu_ps(p), xa, c0);
        c1 = _mm256_fmadd_ps(_mm256_loadu_ps(p + stride), xa, c1);
        c2 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 2 * stride), xa, c2);
        c3 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 3 * stride), xa, c3);
        c0 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 8), xb, c0);
        c1 = _mm256_fmadd_ps(_mm256_loadu_ps(p + stride + 8), xb, c1);
        c2 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 2 * stride + 8), xb, c2);
        c3 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 3 * stride + 8), xb, c3);
    }
    if (xp != x_end2) {
        const __m256 xv = nm_avx_pair(xp, idx);
        c0 = _mm256_fmadd_ps(_mm256_loadu_ps(p), xv, c0);
        c1 = _mm256_fmadd_ps(_mm256_loadu_ps(p + stride), xv, c1);
        c2 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 2 * stride), xv, c2);
        c3 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 3 * stride), xv, c3);
        xp += 2;
        p += 2 * NM_BLOCK;
    }
    const int odd = n_in & 1;
    _mm_storeu_ps(y, nm_avx_finish(c0, p, xp, odd, relu));
    _mm_storeu_ps(y + 4, nm_avx_finish(c1, p + stride, xp, odd, relu));
    _mm_storeu_ps(y + 8, nm_avx_finish(c2, p + 2 * stride, xp, odd, relu));
    _mm_storeu_ps(y + 12, nm_avx_finish(c3, p + 3 * stride, xp, odd, relu));
}
#endif

/* One layer, ReLU fused: 4 blocks at a time, then single blocks, then the
 * partial last block through a small buffer. */
#define NM_DENSE_BODY(block4, block1) \
    const size_t stride = NM_BLOCK * (n_in + 1); \
    const size_t full = n_out / NM_BLOCK; \
    size_t b = 0; \
    for (; b + 4 <= full; b += 4) { \
        block4(y + NM_BLOCK * b, x, w + b * stride, n_in, relu); \
    } \
    for (; b < full; b++) { \
        block1(y + NM_BLOCK * b, x, w + b * stride, n_in, relu); \
    } \
    if (n_out > NM_BLOCK * full) { \
        float tail[NM_BLOCK]; \
        block1(tail, x, w + full * stride, n_in, relu); \
        for (size_t i = NM_BLOCK * full; i < n_out; i++) { \
            y[i] = tail[i - NM_BLOCK * full]; \
        } \
    }

static inline void nm_dense_scalar(float *y, const float *x, const float *w, size_t n_in, size_t n_out, int relu) {
    #if NM_VLDM
    NM_DENSE_BODY(nm_block4_vldm, nm_block1_vldm)
    #else
    NM_DENSE_BODY(nm_block4_scalar, nm_block1_scalar)
    #endif
}

#if NM_SIMD4
static inline void nm_dense_sse(float *y, const float *x, const float *w, size_t n_in, size_t n_out, int relu) {
    NM_DENSE_BODY(nm_block4_sse, nm_block1_sse)
}
#endif

#if NM_AVX2
NM_AVX2_FN void nm_dense_avx2(float *y, const float *x, const float *w, size_t n_in, size_t n_out, int relu) {
    NM_DENSE_BODY(nm_block4_avx2, nm_block1_avx2)
}
#endif

/* ---------------------------------------------------------------------------
 * Fused dense layer, one sample: y[n_out] = act(W x + b).
 * w is a packed layer of nm_layer_size(n_in, n_out) floats. y must not
 * overlap x or w. No allocation; the caller validated the sizes.
 */
static inline void nm_dense(float *y, const float *x, const float *w,
    size_t n_in, size_t n_out, int act) {
    const int isa = nm_isa(), relu = act == NM_ACT_RELU;
    #if NM_AVX2
    if (isa == NM_ISA_AVX2) {
        nm_dense_avx2(y, x, w, n_in, n_out, relu);
    } else
    #endif
    #if NM_SIMD4
    if (isa == NM_ISA_SSE2) {
        nm_dense_sse(y, x, w, n_in, n_out, relu);
    } else
    #endif
    {
        (void)isa;
        nm_dense_scalar(y, x, w, n_in, n_out, relu);
    }
    if (act == NM_ACT_TANH) {
        for (size_t i = 0; i < n_out; i++) {
            y[i] = nm_tanhf(y[i]);
        }
    }
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
        cur[i] = nm_divf(x[i] - mean[i], std[i]);
    }
    const float *w = net + 2 * s0;
    for (size_t l = 0; l < n_layers; l++) {
        const size_t n_in = sizes[l], n_out = sizes[l + 1];
        const size_t len = nm_blocks(n_out) * NM_BLOCK * (n_in + 1); // checked by the caller
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

/*
 * nm_dense_vldm.h - the dense blocks of nm_dense.h on ARMv7E-M with an FMA FPU
 * (Cortex-M4F/M7): weights loaded with vldmia (NM_VLDM 1 there, else 0).
 */
#ifndef NM_DENSE_VLDM_H
#define NM_DENSE_VLDM_H

#include "nm_isa.h"
#include "nm_layout.h"

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

#endif // NM_DENSE_VLDM_H

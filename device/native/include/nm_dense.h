/*
 * nm_dense.h - fused dense layers (matmul + bias + activation) on block-4 weights:
 * the portable blocks, the layer loop and the run-time choice among the paths of
 * nm_dense_vldm.h, nm_dense_xtensa.h and nm_dense_simd.h.
 */
#ifndef NM_DENSE_H
#define NM_DENSE_H

#include "nm_act.h"
#include "nm_dense_simd.h"
#include "nm_dense_vldm.h"
#include "nm_dense_xtensa.h"
#include "nm_isa.h"
#include "nm_layout.h"

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
    #elif NM_XT_DENSE
    const size_t full = n_out / NM_BLOCK;
    nm_xt_dense_f32(y, x, w, (uint32_t)n_in, (uint32_t)full, (uint32_t)relu);
    if (n_out > NM_BLOCK * full) { // the partial last block through a small buffer
        float tail[NM_BLOCK];
        nm_xt_dense_f32(tail, x, w + full * NM_BLOCK * (n_in + 1), (uint32_t)n_in, 1, (uint32_t)relu);
        for (size_t i = NM_BLOCK * full; i < n_out; i++) {
            y[i] = tail[i - NM_BLOCK * full];
        }
    }
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
    if (act > NM_ACT_RELU) { // ReLU is fused into the blocks; the others follow
        nm_activate(y, n_out, act);
    }
}

// Fused dense layer over a batch of row-major samples: y[batch][n_out].
static inline void nm_dense_batch(float *y, const float *x, const float *w,
    size_t batch, size_t n_in, size_t n_out, int act) {
    for (size_t s = 0; s < batch; s++) {
        nm_dense(y + s * n_out, x + s * n_in, w, n_in, n_out, act);
    }
}

#endif // NM_DENSE_H

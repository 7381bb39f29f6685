/*
 * The forward pass the way RLtools' generic implementation computes it (the RLtools
 * paper's "generic" column, Table 2), written in C:
 * - the sizes and activations are compile-time constants (template parameters there;
 *   NM_SIZES/NM_ACTS here, the layer loop unrolled so every layer is inlined with
 *   constant sizes, leaving the compiler free to unroll and schedule as it likes);
 * - each output element starts as its bias in the output buffer, every product is
 *   added to that element in memory, and the activation is applied to it once its
 *   sum is complete (set, increment, activation: no separate passes, no blocking);
 * - the output buffer is a float pointer like the weights, so the compiler must assume
 *   they may alias and stores the running sum after every multiply-add - which is what
 *   that library's matrix-access code compiles to.
 * Built with -O3 and the compiler's default floating-point contraction (GCC emits
 * VFMA), as a library is. ReLU hidden layers and an identity output need no libm.
 * It is the reference point for the cycle model's validation (docs/timing-model.md).
 */
#include <stddef.h>
#include <stdint.h>

#include "nm_generic.h"

#ifndef NM_SIZES
#define NM_SIZES 13, 64, 64, 4
#endif
#ifndef NM_ACTS
#define NM_ACTS 1, 1, 0
#endif

static const uint16_t sizes[] = { NM_SIZES };
static const uint16_t acts[] = { NM_ACTS };
#define N_LAYERS (sizeof(sizes) / sizeof(sizes[0]) - 1)

static inline __attribute__((always_inline)) void dense(float *y, const float *w, const float *b,
                                                        const float *x, size_t n_in, size_t n_out, int relu) {
    for (size_t o = 0; o < n_out; o++) {
        y[o] = b[o];
        for (size_t i = 0; i < n_in; i++) {
            y[o] += w[o * n_in + i] * x[i];
        }
        if (relu) {
            y[o] = y[o] > 0.0f ? y[o] : 0.0f;
        }
    }
}

int nm_generic_supported(void) {
    for (size_t l = 0; l < N_LAYERS; l++) {
        if (acts[l] > 1) { // identity and ReLU only
            return 0;
        }
    }
    return 1;
}

void nm_generic_forward(float *out, const float *x, const float *const *w, const float *const *b,
                        float *buf_a, float *buf_b) {
    const float *in = x;
    #pragma GCC unroll 16
    for (size_t l = 0; l < N_LAYERS; l++) {
        float *dst = l + 1 == N_LAYERS ? out : (l & 1) ? buf_b : buf_a;
        dense(dst, w[l], b[l], in, sizes[l], sizes[l + 1], acts[l] == 1);
        in = dst;
    }
}

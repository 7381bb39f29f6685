/*
 * The forward pass the way a generic C/C++ library writes it: one dense layer at a
 * time with runtime sizes, a plain row-major matrix-vector product (nested loops,
 * one accumulator), then a separate pass that adds the bias and another that applies
 * the activation. Built with -O3 and the compiler's default floating-point
 * contraction, as a library would be; no blocking, no packing, no intrinsics.
 * It is the reference point for the cycle model's validation (docs/timing-model.md).
 */
#include <stddef.h>
#include <stdint.h>

#include "nm_generic.h"

static void matvec(float *y, const float *w, const float *x, size_t n_in, size_t n_out) {
    for (size_t r = 0; r < n_out; r++) {
        float acc = 0.0f;
        for (size_t c = 0; c < n_in; c++) {
            acc += w[r * n_in + c] * x[c];
        }
        y[r] = acc;
    }
}

static void add_bias(float *y, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        y[i] += b[i];
    }
}

static void relu(float *y, size_t n) {
    for (size_t i = 0; i < n; i++) {
        y[i] = y[i] > 0.0f ? y[i] : 0.0f;
    }
}

void nm_generic_forward(float *out, const float *x, const float *const *w, const float *const *b,
                        const uint16_t *sizes, const uint16_t *relu_after, size_t n_layers,
                        float *buf_a, float *buf_b) {
    const float *in = x;
    float *y = buf_a;
    for (size_t l = 0; l < n_layers; l++) {
        float *dst = l + 1 == n_layers ? out : y;
        matvec(dst, w[l], in, sizes[l], sizes[l + 1]);
        add_bias(dst, b[l], sizes[l + 1]);
        if (relu_after[l]) {
            relu(dst, sizes[l + 1]);
        }
        in = dst;
        y = y == buf_a ? buf_b : buf_a;
    }
}

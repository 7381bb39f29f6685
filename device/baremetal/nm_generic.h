/* The generic-library forward pass (nm_generic.c). */
#ifndef NM_GENERIC_H
#define NM_GENERIC_H
#include <stddef.h>
#include <stdint.h>

// w[l]: row-major n_out x n_in weights of layer l; b[l]: its bias; relu_after[l]: 1 for
// ReLU, 0 for identity. buf_a/buf_b: room for the widest layer each.
void nm_generic_forward(float *out, const float *x, const float *const *w, const float *const *b,
                        const uint16_t *sizes, const uint16_t *relu_after, size_t n_layers,
                        float *buf_a, float *buf_b);
#endif

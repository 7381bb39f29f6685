/* The generic-library forward pass (nm_generic.c), for the network NM_SIZES/NM_ACTS. */
#ifndef NM_GENERIC_H
#define NM_GENERIC_H
#include <stddef.h>
#include <stdint.h>

// 1 when every layer's activation is one the generic pass has (identity, ReLU).
int nm_generic_supported(void);

// w[l]: row-major n_out x n_in weights of layer l; b[l]: its bias. buf_a/buf_b: room
// for the widest hidden layer each.
void nm_generic_forward(float *out, const float *x, const float *const *w, const float *const *b,
                        float *buf_a, float *buf_b);
#endif

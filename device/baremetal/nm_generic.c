/*
 * The forward pass the way RLtools' generic implementation computes it (the RLtools
 * paper's "generic" column, Table 2), written in C:
 * - the sizes and activations are compile-time constants (template parameters there;
 *   NM_SIZES/NM_ACTS here, the layer loop unrolled so every layer is inlined with
 *   constant sizes, leaving the compiler free to unroll and schedule as it likes);
 * - each output element starts as its bias in the output buffer, every product is
 *   added to that element in memory, and the activation is applied to it once its
 *   sum is complete (set, increment, activation: no separate passes, no blocking);
 * - the network is a global object whose layers hold matrices, each a pointer to its
 *   data, and every element access reads that pointer (the library's exported
 *   checkpoint and its get/set/increment); built with -fno-strict-aliasing, as the
 *   flight-controller firmwares are, the compiler must reload it after every store
 *   that may alias it.
 * Whether the running sum lives in memory or in a register depends on what the
 * compiler can prove about the buffers, which the benchmark program around the
 * library decides, so it is chosen at compile time (docs/timing-model.md):
 *   NM_GENERIC_BUFFERS 0: the hidden layers write to buffers the caller passes in;
 *                      1: to arrays of the forward pass's own (a stack or a fresh
 *                         allocation: the compiler sees them cannot alias the weights);
 *                      2: to buffers whose pointers are fields of a long-lived object.
 *   NM_GENERIC_OUTPUT  0: the last layer writes to the caller's array;
 *                      1: to an array of its own, copied out after.
 * Any buffer the compiler cannot tell apart from the weights gets a store per
 * multiply-add. Built with the compiler's default floating-point contraction (GCC
 * emits VFMA), as a library is, and with the flags of the firmware being modelled
 * ([timing.generic] in board.toml). ReLU hidden layers and an identity output need
 * no libm. It is the reference point for the cycle model's validation.
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
#ifndef NM_GENERIC_BUFFERS
#define NM_GENERIC_BUFFERS 0
#endif
#ifndef NM_GENERIC_OUTPUT
#define NM_GENERIC_OUTPUT 0
#endif
#if NM_GENERIC_BUFFERS < 0 || NM_GENERIC_BUFFERS > 2 || NM_GENERIC_OUTPUT < 0 || NM_GENERIC_OUTPUT > 1
#error "NM_GENERIC_BUFFERS is 0, 1 or 2 and NM_GENERIC_OUTPUT 0 or 1"
#endif

static const uint16_t sizes[] = { NM_SIZES };
static const uint16_t acts[] = { NM_ACTS };
#define N_LAYERS (sizeof(sizes) / sizeof(sizes[0]) - 1)
// Widest layer output (constant, so the forward pass's own buffers are plain arrays):
// the sizes after the input's, up to seven layers.
#define NM_GMAX2(a, b) ((a) > (b) ? (a) : (b))
#define NM_GMAXW_(in, a, b, c, d, e, f, g, ...) NM_GMAX2(NM_GMAX2(NM_GMAX2(a, b), NM_GMAX2(c, d)), NM_GMAX2(NM_GMAX2(e, f), g))
#define NM_GMAXW(...) NM_GMAXW_(__VA_ARGS__, 0, 0, 0, 0, 0, 0, 0)
_Static_assert(N_LAYERS <= 7, "the generic forward pass takes up to seven layers");

struct nm_gmat {
    float *data;
};
struct nm_glayer {
    struct nm_gmat w, b;
};

// The network object: non-static and written on each call, so nothing about where its
// pointers point is known where they are read.
struct nm_glayer nm_generic_net[N_LAYERS];
#if NM_GENERIC_BUFFERS == 2
struct nm_gmat nm_generic_buffers[2];
#endif

static inline __attribute__((always_inline)) void dense(float *y, const struct nm_glayer *L, const float *x,
                                                        size_t n_in, size_t n_out, int relu) {
    for (size_t o = 0; o < n_out; o++) {
        y[o] = L->b.data[o];
        for (size_t i = 0; i < n_in; i++) {
            y[o] += L->w.data[o * n_in + i] * x[i];
        }
        if (relu) {
            y[o] = y[o] > 0.0f ? y[o] : 0.0f;
        }
    }
}

#if NM_GENERIC_BUFFERS == 2
// The same layer with its output buffer reached through the object at every access.
static inline __attribute__((always_inline)) void dense_obj(const struct nm_gmat *y, const struct nm_glayer *L,
                                                            const struct nm_gmat *x, size_t n_in, size_t n_out,
                                                            int relu) {
    for (size_t o = 0; o < n_out; o++) {
        y->data[o] = L->b.data[o];
        for (size_t i = 0; i < n_in; i++) {
            y->data[o] += L->w.data[o * n_in + i] * x->data[i];
        }
        if (relu) {
            y->data[o] = y->data[o] > 0.0f ? y->data[o] : 0.0f;
        }
    }
}
#endif

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
    for (size_t l = 0; l < N_LAYERS; l++) {
        nm_generic_net[l].w.data = (float *)w[l];
        nm_generic_net[l].b.data = (float *)b[l];
    }
#if NM_GENERIC_BUFFERS == 1
    float own_a[NM_GMAXW(NM_SIZES)], own_b[NM_GMAXW(NM_SIZES)];
    buf_a = own_a;
    buf_b = own_b;
#endif
#if NM_GENERIC_OUTPUT == 1
    float own_out[NM_GMAXW(NM_SIZES)];
    float *last = own_out;
#else
    float *last = out;
#endif
#if NM_GENERIC_BUFFERS == 2
    nm_generic_buffers[0].data = buf_a;
    nm_generic_buffers[1].data = buf_b;
    struct nm_gmat io_in = { (float *)x }, io_out = { last };
    const struct nm_gmat *in = &io_in;
    #pragma GCC unroll 16
    for (size_t l = 0; l < N_LAYERS; l++) {
        const struct nm_gmat *dst = l + 1 == N_LAYERS ? &io_out : &nm_generic_buffers[l & 1];
        dense_obj(dst, &nm_generic_net[l], in, sizes[l], sizes[l + 1], acts[l] == 1);
        in = dst;
    }
#else
    const float *in = x;
    #pragma GCC unroll 16
    for (size_t l = 0; l < N_LAYERS; l++) {
        float *dst = l + 1 == N_LAYERS ? last : (l & 1) ? buf_b : buf_a;
        dense(dst, &nm_generic_net[l], in, sizes[l], sizes[l + 1], acts[l] == 1);
        in = dst;
    }
#endif
#if NM_GENERIC_OUTPUT == 1
    for (size_t o = 0; o < sizes[N_LAYERS]; o++) {
        out[o] = own_out[o];
    }
#endif
}

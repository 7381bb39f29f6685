/*
 * nm_layout.h - how a policy's numbers are laid out, and the size arithmetic over it.
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
 */
#ifndef NM_LAYOUT_H
#define NM_LAYOUT_H

#include "nm_isa.h"

#define NM_BLOCK 4
#define NM_MAX_LAYERS 32
#define NM_MAX_WIDTH 65535

enum {
    NM_ACT_IDENTITY = 0,
    NM_ACT_RELU = 1,
    NM_ACT_TANH = 2,
    NM_ACT_COUNT = 3,
};

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

#endif // NM_LAYOUT_H

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
 * A GRU layer (n_in inputs, hidden size hd) is two block-4 layers and its
 * initial state: W_i (3hd x n_in) with b_i, W_h (3hd x hd) with b_h, h0[hd];
 * rows in gate order r, z, n (nm_gru.h).
 *
 * Whole-policy parameter vector ("net"), as stored in the policy file payload:
 *     obs_mean[s0], obs_std[s0], layer 0, ..., layer L-1,
 *     action_scale[sL], action_offset[sL]
 * Shape descriptor ("layout", uint16): L, s0, s1, ..., sL, code0, ..., code(L-1),
 * where a layer code is kind << 4 | activation (a dense layer's code is its
 * activation, so MLP layouts read as before). A GRU layer's activation is 0.
 * The state of a recurrent policy is the hidden states of its GRU layers,
 * concatenated in layer order.
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
    NM_ACT_SIGMOID = 3,   // 1 / (1 + exp(-x))
    NM_ACT_FAST_TANH = 4, // x clipped to [-3, 3], then x (27 + x^2) / (27 + 9 x^2)
};
// Training and int8 policies have the first three; float32 inference has all five.
#define NM_ACT_COUNT 3
#define NM_ACT_INFER_COUNT 5

enum {
    NM_KIND_DENSE = 0,
    NM_KIND_GRU = 1,
};
#define NM_CODE_ACT(code) ((code) & 15u)
#define NM_CODE_KIND(code) ((code) >> 4)
#define NM_GRU_CODE (NM_KIND_GRU << 4)

// A layer code a float32 policy may hold: a dense layer with one of the five
// activations, or a GRU layer (activation 0).
NM_INLINE int nm_code_valid(unsigned code) {
    return code < NM_ACT_INFER_COUNT || code == NM_GRU_CODE;
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

// Floats in one GRU layer: the input and hidden blocks, then h0.
NM_INLINE int nm_gru_size(size_t n_in, size_t hd, size_t *out) {
    size_t rows, a, b;
    return nm_mul_size(hd, 3, &rows) && nm_layer_size(n_in, rows, &a) && nm_layer_size(hd, rows, &b)
        && nm_add_size(a, b, &a) && nm_add_size(a, hd, out);
}

// Floats of layer i (sizes[i] inputs, sizes[i + 1] outputs) of its kind.
NM_INLINE int nm_any_layer_size(const uint16_t *sizes, const uint16_t *codes, size_t i, size_t *out) {
    return NM_CODE_KIND(codes[i]) == NM_KIND_GRU ? nm_gru_size(sizes[i], sizes[i + 1], out)
        : nm_layer_size(sizes[i], sizes[i + 1], out);
}

/* The same sizes unchecked, for the forward pass of a layout nm_net_size accepted
 * (nothing overflows then). */
NM_INLINE size_t nm_dense_len(size_t n_in, size_t n_out) {
    return nm_blocks(n_out) * NM_BLOCK * (n_in + 1);
}

NM_INLINE size_t nm_layer_len(const uint16_t *sizes, const uint16_t *codes, size_t i) {
    const size_t n_in = sizes[i], n_out = sizes[i + 1];
    return NM_CODE_KIND(codes[i]) == NM_KIND_GRU
        ? nm_dense_len(n_in, 3 * n_out) + nm_dense_len(n_out, 3 * n_out) + n_out
        : nm_dense_len(n_in, n_out);
}

/* Sizes over a whole layout: sizes has n_layers + 1 entries, codes n_layers
 * valid layer codes (nm_code_valid). */

// Floats in a whole net (see above).
static inline int nm_net_size(const uint16_t *sizes, const uint16_t *codes, size_t n_layers, size_t *out) {
    size_t total = 2 * (size_t)sizes[0] + 2 * (size_t)sizes[n_layers];
    size_t s;
    for (size_t i = 0; i < n_layers; i++) {
        if (!nm_any_layer_size(sizes, codes, i, &s) || !nm_add_size(total, s, &total)) {
            return 0;
        }
    }
    *out = total;
    return 1;
}

// Floats of state: the hidden sizes of the GRU layers (0 for an MLP).
static inline int nm_state_size(const uint16_t *sizes, const uint16_t *codes, size_t n_layers, size_t *out) {
    size_t total = 0;
    for (size_t i = 0; i < n_layers; i++) {
        if (NM_CODE_KIND(codes[i]) == NM_KIND_GRU && !nm_add_size(total, sizes[i + 1], &total)) {
            return 0;
        }
    }
    *out = total;
    return 1;
}

// The widest layer input: each of nm_mlp's two activation buffers holds one.
static inline size_t nm_mlp_width(const uint16_t *sizes, size_t n_layers) {
    size_t widest = 0;
    for (size_t i = 0; i < n_layers; i++) {
        if (sizes[i] > widest) {
            widest = sizes[i];
        }
    }
    return widest;
}

// Scratch floats nm_mlp needs: the two activation buffers, then the widest
// GRU layer's gate pre-activations (6 hd: W_i x + b_i and W_h h + b_h).
static inline int nm_mlp_scratch_size(const uint16_t *sizes, const uint16_t *codes, size_t n_layers, size_t *out) {
    size_t gates = 0, total;
    for (size_t i = 0; i < n_layers; i++) {
        if (NM_CODE_KIND(codes[i]) == NM_KIND_GRU && 6 * (size_t)sizes[i + 1] > gates) {
            gates = 6 * (size_t)sizes[i + 1];
        }
    }
    if (!nm_mul_size(nm_mlp_width(sizes, n_layers), 2, &total) || !nm_add_size(total, gates, &total)) {
        return 0;
    }
    *out = total;
    return 1;
}

#endif // NM_LAYOUT_H

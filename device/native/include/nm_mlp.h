/*
 * nm_mlp.h - a whole policy's forward pass in one call, and packing a layer into the
 * block-4 layout.
 */
#ifndef NM_MLP_H
#define NM_MLP_H

#include "nm_act.h"
#include "nm_dense.h"
#include "nm_layout.h"

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

#endif // NM_MLP_H

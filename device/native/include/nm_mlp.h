/*
 * nm_mlp.h - a whole policy's forward pass in one call (dense and GRU layers), its
 * recurrent state's reset, and packing a layer into the block-4 layout.
 */
#ifndef NM_MLP_H
#define NM_MLP_H

#include "nm_act.h"
#include "nm_dense.h"
#include "nm_gru.h"
#include "nm_layout.h"

/* ---------------------------------------------------------------------------
 * Whole policy forward in one call:
 *   out = layers((x - obs_mean) / obs_std) * action_scale + action_offset
 * net, layout codes and state as described in nm_layout.h; scratch holds at least
 * nm_mlp_scratch_size floats, state nm_state_size floats (NULL when the layout
 * has no GRU layer): each GRU layer advances its part of state one step and
 * passes it on as its output. out, x, net, scratch and state are disjoint.
 */
static inline void nm_mlp(float *out, const float *x, const float *net,
    const uint16_t *sizes, const uint16_t *codes, size_t n_layers, float *scratch, float *state) {
    const size_t s0 = sizes[0], sl = sizes[n_layers], width = nm_mlp_width(sizes, n_layers);
    float *const a = scratch, *const b = scratch + width, *const gates = scratch + 2 * width;
    float *cur = a;
    const float *mean = net, *std = net + s0;
    for (size_t i = 0; i < s0; i++) {
        cur[i] = nm_divf(x[i] - mean[i], std[i]);
    }
    const float *w = net + 2 * s0;
    for (size_t l = 0; l < n_layers; l++) {
        const size_t n_in = sizes[l], n_out = sizes[l + 1];
        // state is NULL only for layouts without GRU layers (callers check): testing it
        // first lets the compiler drop the GRU path from callers that pass NULL
        if (state != NULL && NM_CODE_KIND(codes[l]) == NM_KIND_GRU) {
            nm_gru_step(state, cur, w, n_in, n_out, gates);
            cur = state;
            state += n_out;
            if (l + 1 == n_layers) {
                for (size_t i = 0; i < n_out; i++) {
                    out[i] = cur[i];
                }
            }
        } else {
            float *dst = l + 1 == n_layers ? out : cur == a ? b : a;
            nm_dense(dst, cur, w, n_in, n_out, NM_CODE_ACT(codes[l]));
            cur = dst;
        }
        w += nm_layer_len(sizes, codes, l);
    }
    const float *scale = w, *offset = w + sl;
    for (size_t i = 0; i < sl; i++) {
        out[i] = NM_MADD(out[i], scale[i], offset[i]);
    }
}

// state <- the initial state of every GRU layer (their h0 in net, in layer order).
static inline void nm_state_reset(float *state, const float *net, const uint16_t *sizes,
    const uint16_t *codes, size_t n_layers) {
    const float *w = net + 2 * (size_t)sizes[0];
    for (size_t l = 0; l < n_layers; l++) {
        const size_t n_in = sizes[l], n_out = sizes[l + 1];
        if (NM_CODE_KIND(codes[l]) == NM_KIND_GRU) {
            const float *h0 = nm_gru_h0(w, n_in, n_out);
            for (size_t i = 0; i < n_out; i++) {
                *state++ = h0[i];
            }
        }
        w += nm_layer_len(sizes, codes, l);
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

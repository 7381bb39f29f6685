/*
 * nm_gru.h - one step of a GRU layer: both matrix products through the fused dense
 * kernels into scratch, then every gate in one pass.
 */
#ifndef NM_GRU_H
#define NM_GRU_H

#include "nm_act.h"
#include "nm_dense.h"
#include "nm_layout.h"

/* ---------------------------------------------------------------------------
 * h <- GRU(x, h), hidden size hd, w the layer's nm_gru_size(n_in, hd) floats
 * (nm_layout.h), gates 6 hd floats of scratch:
 *   gi = W_i x + b_i, gh = W_h h + b_h   (rows r, z, n)
 *   r = sigmoid(gi_r + gh_r), z = sigmoid(gi_z + gh_z), n = tanh(gi_n + r gh_n)
 *   h' = (1 - z) n + z h, computed as n + z (h - n): one multiplication fewer
 * h is updated in place: unit i reads only its own h[i] after the products.
 * x, h, w and gates are disjoint; the caller validated the sizes.
 */
static inline void nm_gru_step(float *h, const float *x, const float *w, size_t n_in, size_t hd,
    float *gates) {
    float *gi = gates, *gh = gates + 3 * hd;
    nm_dense(gi, x, w, n_in, 3 * hd, NM_ACT_IDENTITY);
    nm_dense(gh, h, w + nm_dense_len(n_in, 3 * hd), hd, 3 * hd, NM_ACT_IDENTITY);
    for (size_t i = 0; i < hd; i++) {
        float r, z;
        nm_sigmoid2(gi[i] + gh[i], gi[hd + i] + gh[hd + i], &r, &z);
        const float n = nm_tanh_gate(gi[2 * hd + i] + r * gh[2 * hd + i]);
        h[i] = n + z * (h[i] - n);
    }
}

// The initial state h0 inside a GRU layer's w.
NM_INLINE const float *nm_gru_h0(const float *w, size_t n_in, size_t hd) {
    return w + nm_dense_len(n_in, 3 * hd) + nm_dense_len(hd, 3 * hd);
}

#endif // NM_GRU_H

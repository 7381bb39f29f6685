/*
 * nm_int8_gru.h - an int8 GRU layer (docs/policy-format.md, "int8 GRU layers"): its
 * section of the qnet and one step in integers.
 *
 * Section (G = nm_q8_pad(3 H), P = nm_q8_pad(n_in), Q = nm_q8_pad(H); rows in gate order
 * r, z, n; each block in nm_int8.h's block-4 int8 layout, 4-byte aligned):
 *     i8 wi[G*P], i32 bi[G], f32 deqi[G]      input block
 *     i8 wh[G*Q], i32 bh[G], f32 deqh[G]      hidden block
 *     i16 h0[Q]                               initial state in Q15, natural order, padding 0
 * The state is int16 in Q15 (h = h_q / 32768), Q entries in pair order whose padding stays
 * 0, and is the layer's output too: the next layer reads it at scale 2^-15.
 *
 * One step, in integers only (deq is read through its float32 bits):
 *     ai = bi + W_i x, ah = bh + W_h h          int32 accumulators (nm_q8_dense_acc)
 *     q(a, deq) = a * deq in Q16, clamped to +-2^24 (nm_q8_gate_q16)
 *     r  = sig(q(ai_r) + q(ah_r)), z = sig(q(ai_z) + q(ah_z))
 *     n  = tanh_q15(q(ai_n) + mulhr(2 q(ah_n), r 2^16))     r gh_n in Q16, rounded half up
 *     h' = clamp(n + ((z (h - n) + 2^14) >> 15), -32768, 32767)
 * where sig(v) = min((2^15 + tanh_q15(v >> 1)) >> 1, 32767) is (1 + tanh(v / 2)) / 2
 * from nm_int8_edge.h's table. Everything fits in int32: a gate's sum is below 2^25,
 * |z (h - n)| below 2^31 - 2^16.
 */
#ifndef NM_INT8_GRU_H
#define NM_INT8_GRU_H

#include "nm_int8_dense.h"
#include "nm_int8_edge.h"
#include "nm_int8_layout.h"

#define NM_Q8_GATE_LIM (1L << 24)

// A gate's half in Q16: saturated at +-256 rather than at the table's +-6, since two are
// added, and r scales one, before the sigmoid or tanh saturates.
NM_INLINE int32_t nm_q8_gate_q16(int32_t acc, float deq) {
    return nm_q8_mul_q16(acc, deq, NM_Q8_GATE_LIM);
}

// sigmoid(z / 2^16) * 2^15, 0..32767 (the state's Q15 has no 1).
NM_INLINE int32_t nm_q8_sigmoid_q15(int32_t z) {
    const int32_t s = (32768 + nm_q8_tanh_q15(z >> 1)) >> 1;
    return s > NM_Q8_AMAX ? NM_Q8_AMAX : s;
}

typedef struct {
    const int8_t *wi, *wh;
    const int32_t *bi, *bh;
    const float *deqi, *deqh;
    const nm_i16a *h0;
} nm_q8_gru_t;

// The parts of the section at p (n_in inputs, hidden size hd); returns the next layer's section.
NM_INLINE const uint8_t *nm_q8_gru_parts(nm_q8_gru_t *g, const uint8_t *p, size_t n_in, size_t hd) {
    const size_t rows = nm_q8_pad(3 * hd);
    g->wi = (const int8_t *)p;
    g->bi = (const int32_t *)(const nm_i32a *)(p + rows * nm_q8_pad(n_in));
    g->deqi = (const float *)(const nm_f32a *)(g->bi + rows);
    g->wh = (const int8_t *)(g->deqi + rows);
    g->bh = (const int32_t *)(const nm_i32a *)(g->wh + rows * nm_q8_pad(hd));
    g->deqh = (const float *)(const nm_f32a *)(g->bh + rows);
    g->h0 = (const nm_i16a *)(g->deqh + rows);
    return (const uint8_t *)(g->h0 + nm_q8_pad(hd));
}

/* h <- GRU(x, h) for the layer whose qnet section starts at section: h its state
 * (nm_q8_pad(hd) int16), x its input (nm_q8_pad(n_in) int16, pair order), acc
 * 2 nm_q8_pad(3 hd) int32 of scratch. h, x, the section and acc are disjoint and 4-byte
 * aligned; n_in and hd are at most NM_Q8_MAX_IN (the caller checked). Returns the next
 * layer's section. */
static inline const uint8_t *nm_q8_gru_step(int16_t *h, const int16_t *x, const void *section, size_t n_in,
    size_t hd, int32_t *acc) {
    nm_q8_gru_t g;
    const uint8_t *next = nm_q8_gru_parts(&g, section, n_in, hd);
    int32_t *ai = acc, *ah = acc + nm_q8_pad(3 * hd);
    nm_q8_dense_acc(ai, x, g.wi, g.bi, n_in, 3 * hd);
    nm_q8_dense_acc(ah, h, g.wh, g.bh, hd, 3 * hd); // every product of h before unit 0 changes it
    for (size_t i = 0; i < hd; i++) {
        const size_t zi = hd + i, ni = 2 * hd + i;
        const int32_t r = nm_q8_sigmoid_q15(nm_q8_gate_q16(ai[i], g.deqi[i]) + nm_q8_gate_q16(ah[i], g.deqh[i]));
        const int32_t z = nm_q8_sigmoid_q15(nm_q8_gate_q16(ai[zi], g.deqi[zi]) + nm_q8_gate_q16(ah[zi], g.deqh[zi]));
        const int32_t n = nm_q8_tanh_q15(nm_q8_gate_q16(ai[ni], g.deqi[ni])
            + nm_q8_mulhr(2 * nm_q8_gate_q16(ah[ni], g.deqh[ni]), r * 65536));
        int16_t *hi = h + nm_q8_slot(i);
        const int32_t v = n + ((z * (*hi - n) + 16384) >> 15);
        *hi = (int16_t)(v < -NM_Q8_AMAX - 1 ? -NM_Q8_AMAX - 1 : v > NM_Q8_AMAX ? NM_Q8_AMAX : v);
    }
    return next;
}

// h (the layer's state) <- h0 in pair order, padding 0.
static inline void nm_q8_gru_reset(int16_t *h, const nm_q8_gru_t *g, size_t hd) {
    for (size_t i = 0; i < nm_q8_pad(hd); i++) {
        h[nm_q8_slot(i)] = i < hd ? g->h0[i] : 0;
    }
}

#endif // NM_INT8_GRU_H

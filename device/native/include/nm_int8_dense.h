/*
 * nm_int8_dense.h - one int8 dense layer (nm_int8.h has the format, the pair order and
 * the requantisation): int32 accumulation of int8 weights times int16 activations on the
 * core's path (SMLAD layers on ARMv7E-M, Thumb-1 blocks on ARMv6-M, portable blocks
 * here), then requantised to the next layer's int16 (nm_q8_dense) or kept as they are
 * (nm_q8_dense_acc: the last layer's and a GRU's accumulators).
 */
#ifndef NM_INT8_DENSE_H
#define NM_INT8_DENSE_H

#include "nm_int8_armv6m.h"
#include "nm_int8_dsp.h"
#include "nm_int8_layout.h"

/* ---------------------------------------------------------------------------
 * Accumulation: acc[0..3] = bias[0..3] + the block's 4 rows times x, for
 * groups of 4 inputs (ng of them; when one != 0 the last group has one real
 * input, the others padding, whose products add nothing: x is 0 there). w
 * points at the block's first group; the return value is the next block's.
 */
#if !NM_Q8_DSP && !NM_Q8_THUMB1
// Portable: unsigned sums wrap (no undefined overflow for any weights).
NM_INLINE const int8_t *nm_q8_block_acc(int32_t *a, const int16_t *x, const int8_t *w, size_t ng, int one) {
    uint32_t a0 = (uint32_t)a[0], a1 = (uint32_t)a[1], a2 = (uint32_t)a[2], a3 = (uint32_t)a[3];
    const size_t full = ng - (one != 0);
    for (size_t g = 0; g < full; g++, x += NM_Q8_GROUP, w += 16) {
        const int32_t x0 = x[0], x2 = x[1], x1 = x[2], x3 = x[3];
        a0 += (uint32_t)(w[0] * x0 + w[1] * x1 + w[2] * x2 + w[3] * x3);
        a1 += (uint32_t)(w[4] * x0 + w[5] * x1 + w[6] * x2 + w[7] * x3);
        a2 += (uint32_t)(w[8] * x0 + w[9] * x1 + w[10] * x2 + w[11] * x3);
        a3 += (uint32_t)(w[12] * x0 + w[13] * x1 + w[14] * x2 + w[15] * x3);
    }
    if (one) {
        const int32_t x0 = x[0];
        a0 += (uint32_t)(w[0] * x0);
        a1 += (uint32_t)(w[4] * x0);
        a2 += (uint32_t)(w[8] * x0);
        a3 += (uint32_t)(w[12] * x0);
        w += 16;
    }
    a[0] = (int32_t)a0;
    a[1] = (int32_t)a1;
    a[2] = (int32_t)a2;
    a[3] = (int32_t)a3;
    return w;
}
#endif

/* ---------------------------------------------------------------------------
 * Requantisation of one accumulator (see the top of nm_int8.h). shifted is a
 * constant where this is inlined: a layer whose shift is 0 (the exporter's
 * choice whenever its multipliers keep 22 bits) skips the second rounding.
 */
NM_INLINE int32_t nm_q8_requant(int32_t acc, int32_t mult, int32_t round, int32_t r, const int relu,
    const int shifted) {
    int32_t t = nm_q8_mulhr(acc, mult);
    int32_t v = shifted ? (t + round) >> r : t; // |t| < 2^30 for any acc and mult: no overflow
    const int32_t lo = relu ? 0 : -NM_Q8_AMAX - 1;
    return v < lo ? lo : v > NM_Q8_AMAX ? NM_Q8_AMAX : v;
}

// relu and shifted are constants where this is inlined: each case gets its own loop.
NM_INLINE void nm_q8_dense_rows(int16_t *y, const int16_t *x, const int8_t *w, const int32_t *bias,
    const int32_t *mult, int32_t shift, size_t n_in, size_t n_out, const int relu, const int shifted) {
    #if NM_Q8_DSP
    nm_q8_dsp_layer_t s;
    const int front = nm_q8_dsp_setup(&s, y, sizeof(int16_t), x, w, bias, mult, shift, n_in, nm_q8_pad(n_out));
    const int four = front != NM_Q8_DSP_ONE, half = front == NM_Q8_DSP_FOUR_HALF;
    if (relu && shifted) {
        (half ? nm_q8_dsp_relu_shift4h : four ? nm_q8_dsp_relu_shift4 : nm_q8_dsp_relu_shift1)(&s);
    } else if (relu) {
        (half ? nm_q8_dsp_relu4h : four ? nm_q8_dsp_relu4 : nm_q8_dsp_relu1)(&s);
    } else if (shifted) {
        (four ? nm_q8_dsp_id_shift4 : nm_q8_dsp_id_shift1)(&s);
    } else {
        (four ? nm_q8_dsp_id4 : nm_q8_dsp_id1)(&s);
    }
    #else
    const size_t ng = nm_q8_pad(n_in) / NM_Q8_GROUP;
    const int one = (n_in & 3) == 1;
    const int32_t r = shift & NM_Q8_SHIFT_MAX, round = (int32_t)(((uint32_t)1 << r) >> 1);
    for (const int32_t *end = bias + nm_q8_pad(n_out); bias != end; bias += NM_BLOCK, mult += NM_BLOCK, y += NM_BLOCK) {
        int32_t a[4] = { bias[0], bias[1], bias[2], bias[3] };
        w = nm_q8_block_acc(a, x, w, ng, one);
        #ifdef NM_Q8_T1_REQUANT4
        if ((((uint32_t)mult[0] | (uint32_t)mult[1] | (uint32_t)mult[2] | (uint32_t)mult[3]) & 0xffffu) == 0) {
            nm_q8_t1_requant4(y, a, mult, shifted ? round : 0, shifted ? r : 0, relu ? 0 : -NM_Q8_AMAX - 1);
            continue;
        }
        #endif
        // Rows 4k..4k+3 in pair order: 4k, 4k+2, 4k+1, 4k+3.
        y[0] = (int16_t)nm_q8_requant(a[0], mult[0], round, r, relu, shifted);
        y[1] = (int16_t)nm_q8_requant(a[2], mult[2], round, r, relu, shifted);
        y[2] = (int16_t)nm_q8_requant(a[1], mult[1], round, r, relu, shifted);
        y[3] = (int16_t)nm_q8_requant(a[3], mult[3], round, r, relu, shifted);
    }
    #endif
}

/* ---------------------------------------------------------------------------
 * One hidden layer: y (nm_q8_pad(n_out) int16, pair order) from x
 * (nm_q8_pad(n_in) int16, pair order). w, bias, mult as in qnet; shift is
 * the layer's right shift (only its low 5 bits are used). y must not overlap
 * x or the weights. act: NM_ACT_RELU clamps to 0..32767, anything else is
 * identity (-32768..32767). n_in <= NM_Q8_MAX_IN.
 */
static inline void nm_q8_dense(int16_t *y, const int16_t *x, const int8_t *w, const int32_t *bias,
    const int32_t *mult, int32_t shift, size_t n_in, size_t n_out, int act) {
    const int shifted = (shift & NM_Q8_SHIFT_MAX) != 0;
    if (act == NM_ACT_RELU) {
        if (shifted) {
            nm_q8_dense_rows(y, x, w, bias, mult, shift, n_in, n_out, 1, 1);
        } else {
            nm_q8_dense_rows(y, x, w, bias, mult, shift, n_in, n_out, 1, 0);
        }
    } else if (shifted) {
        nm_q8_dense_rows(y, x, w, bias, mult, shift, n_in, n_out, 0, 1);
    } else {
        nm_q8_dense_rows(y, x, w, bias, mult, shift, n_in, n_out, 0, 0);
    }
}

// The layer's int32 accumulators, natural row order, nm_q8_pad(n_out) of them.
static inline void nm_q8_dense_acc(int32_t *acc, const int16_t *x, const int8_t *w, const int32_t *bias,
    size_t n_in, size_t n_out) {
    #if NM_Q8_DSP
    nm_q8_dsp_layer_t s;
    const int front = nm_q8_dsp_setup(&s, acc, sizeof(int32_t), x, w, bias, NULL, 0, n_in, nm_q8_pad(n_out));
    (front != NM_Q8_DSP_ONE ? nm_q8_dsp_acc4 : nm_q8_dsp_acc1)(&s);
    #else
    const size_t ng = nm_q8_pad(n_in) / NM_Q8_GROUP;
    const int one = (n_in & 3) == 1;
    for (const int32_t *end = bias + nm_q8_pad(n_out); bias != end; bias += NM_BLOCK, acc += NM_BLOCK) {
        for (int i = 0; i < 4; i++) {
            acc[i] = bias[i];
        }
        w = nm_q8_block_acc(acc, x, w, ng, one);
    }
    #endif
}

#endif // NM_INT8_DENSE_H

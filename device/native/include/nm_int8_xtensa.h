/*
 * nm_int8_xtensa.h - nm_int8.h's policy forward on the ESP32's Xtensa core with the
 * MAC16 option (xtensawin, built with -DNM_XT_ASM=1): the layers in assembly
 * (device/native/xtensawin/nm_int8_xtensa.S), on weights widened once to int16.
 *
 * MAC16 multiplies 16-bit halves of 32-bit registers: int8 weights would need three
 * instructions of unpacking per four multiply-adds, so the caller widens them once, into
 * a buffer of its own (nm_q8_wide_bytes long), with nm_q8_widen, and passes it to every
 * nm_q8_mlp_wide call. Wide layout, per layer: rows 0..R-1 one after the other, each
 * P int16 weights in the pair order of the input vector (nm_int8_layout.h), so that
 * word k of a row meets word k of the input. Everything else (biases, multipliers,
 * shifts, the edges) is read from qnet as nm_q8_mlp reads it, and the results are
 * nm_q8_mlp's, bit for bit. A net with GRU layers is not widened: it runs nm_q8_mlp.
 * NM_Q8_MAC16 is 1 there, else 0.
 */
#ifndef NM_INT8_XTENSA_H
#define NM_INT8_XTENSA_H

#include "nm_int8.h"

#if defined(__XTENSA__) && defined(NM_XT_ASM) && NM_XT_ASM
#define NM_Q8_MAC16 1

// One layer for the assembly; the word offsets are fixed there: keep the order.
typedef struct {
    void *y;                 // int16 pair order (hidden), int32 row order (last)
    const int16_t *x;        // the input, nm_q8_pad(n_in) int16 in pair order
    const int16_t *w;        // the layer's wide weights
    const int32_t *bias;
    const int32_t *mult;     // hidden layers
    uint32_t ng;             // groups of 4 inputs (>= 1)
    uint32_t blocks;         // blocks of 4 rows (>= 1)
    int32_t shift;           // 0..31
    int32_t lo;              // the clamp's floor: 0 after relu, else -32768
    int32_t round1;          // (2^shift >> 1) + 1
} nm_xt_q8_layer_t;

void nm_xt_q8_hidden(const nm_xt_q8_layer_t *s);
void nm_xt_q8_last(const nm_xt_q8_layer_t *s);

// Bytes of the wide weights of a whole net; 0 when that does not fit in size_t, else 1.
static inline int nm_q8_wide_bytes(const uint16_t *sizes, size_t n_layers, size_t *out) {
    size_t total = 0, s;
    for (size_t l = 0; l < n_layers; l++) {
        if (!nm_mul_size(nm_q8_pad(sizes[l]), nm_q8_pad(sizes[l + 1]), &s) || !nm_mul_size(s, 2, &s)
            || !nm_add_size(total, s, &total)) {
            return 0;
        }
    }
    *out = total;
    return 1;
}

// The int8 weights of qnet (dense layers only, nm_q8_net_bytes long, checked by the
// caller) into wide (nm_q8_wide_bytes long, 4-byte aligned).
static inline void nm_q8_widen(int16_t *wide, const void *qnet, const uint16_t *sizes, size_t n_layers) {
    const uint8_t *p = (const uint8_t *)qnet + 8 * (size_t)sizes[0];
    for (size_t l = 0; l < n_layers; l++) {
        const size_t cols = nm_q8_pad(sizes[l]), rows = nm_q8_pad(sizes[l + 1]);
        const int8_t *w = (const int8_t *)p;
        for (size_t c = 0; c < rows; c++) {
            for (size_t s = 0; s < cols; s++) {
                // block c / 4, group s / 4, row c % 4, input nm_q8_slot(s) % 4 of the group
                *wide++ = w[(c >> 2) * 4 * cols + (s >> 2) * 16 + (c & 3) * 4 + (nm_q8_slot(s) & 3)];
            }
        }
        p += rows * cols + 8 * rows + (l + 1 < n_layers ? 4 : 0);
    }
}

/* nm_q8_mlp of a net of dense layers with the layers on wide (nm_q8_widen of this
 * qnet); same buffers and checks by the caller, and the same results. */
static inline void nm_q8_mlp_wide(float *out, const float *x, const void *qnet, const int16_t *wide,
    const uint16_t *sizes, const uint16_t *acts, size_t n_layers, void *scratch) {
    const size_t widest = nm_q8_widest(sizes, n_layers);
    int16_t *cur = scratch, *nxt = cur + widest;
    int32_t *acc = (int32_t *)(nxt + widest);
    const size_t s0 = sizes[0], sl = sizes[n_layers];
    const nm_f32a *f = qnet;
    nm_q8_quantize_input(cur, x, (const float *)f, (const float *)f + s0, s0);
    const uint8_t *p = (const uint8_t *)qnet + 8 * s0;
    const float *deq = NULL;
    nm_xt_q8_layer_t s;
    for (size_t l = 0; l < n_layers; l++) {
        const size_t cols = nm_q8_pad(sizes[l]), rows = nm_q8_pad(sizes[l + 1]);
        const int32_t *bias = (const int32_t *)(const nm_i32a *)(p + rows * cols);
        s.x = cur;
        s.w = wide;
        s.bias = bias;
        s.ng = (uint32_t)(cols / NM_Q8_GROUP);
        s.blocks = (uint32_t)(rows / NM_BLOCK);
        wide += rows * cols;
        if (l + 1 < n_layers) {
            const int32_t *mult = bias + rows;
            const int32_t r = mult[rows] & NM_Q8_SHIFT_MAX;
            s.y = nxt;
            s.mult = mult;
            s.shift = r;
            s.lo = acts[l] == NM_ACT_RELU ? 0 : -NM_Q8_AMAX - 1;
            s.round1 = (int32_t)((((uint32_t)1 << r) >> 1) + 1);
            nm_xt_q8_hidden(&s);
            p = (const uint8_t *)(mult + rows + 1);
            int16_t *t = cur;
            cur = nxt;
            nxt = t;
        } else {
            s.y = acc;
            nm_xt_q8_last(&s);
            deq = (const float *)(const nm_f32a *)(bias + rows);
            p = (const uint8_t *)(deq + rows);
        }
    }
    nm_q8_actions(out, acc, deq, (const float *)(const nm_f32a *)p, sl, acts[n_layers - 1]); // as nm_q8_mlp
}
#else
#define NM_Q8_MAC16 0
#endif

#endif // NM_INT8_XTENSA_H

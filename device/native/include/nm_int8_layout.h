/*
 * nm_int8_layout.h - what every part of an int8 policy's arithmetic shares (see
 * nm_int8.h for the format): its constants, the core's path, the qnet sizes, the pair
 * order of activation vectors and the rounded high product nm_q8_mulhr.
 */
#ifndef NM_INT8_LAYOUT_H
#define NM_INT8_LAYOUT_H

#include "nm_layout.h"

#define NM_Q8_GROUP 4
#define NM_Q8_AMAX 32767            // activations: int16
#define NM_Q8_MAX_IN 512            // inputs per layer: 127 * 32767 * 512 + 2^24 < 2^31
#define NM_Q8_BIAS_MAX (1L << 24)
#define NM_Q8_SHIFT_MAX 31

// int16 views of byte buffers (a GRU's h0 inside the qnet).
#if defined(__GNUC__)
typedef int16_t nm_i16a __attribute__((may_alias));
#else
typedef int16_t nm_i16a;
#endif

#if defined(__GNUC__) && defined(__ARM_FEATURE_DSP) && defined(__ARM_ARCH_7EM__)
#define NM_Q8_DSP 1
#else
#define NM_Q8_DSP 0
#endif

// The accumulation path: SMLAD layers (nm_int8_dsp.h), Thumb-1 blocks
// (nm_int8_armv6m.h), or the portable blocks of nm_int8_dense.h.
#if !NM_Q8_DSP && defined(__GNUC__) && defined(__thumb__) && !defined(__thumb2__) && !defined(NM_Q8_PORTABLE)
#define NM_Q8_THUMB1 1
#else
#define NM_Q8_THUMB1 0
#endif

/* ---------------------------------------------------------------------------
 * Sizes, in bytes unless said otherwise; the int ones return 0 when the result does
 * not fit in size_t, else 1 (the others cannot overflow: sizes are uint16).
 */
NM_INLINE size_t nm_q8_pad(size_t n) {
    return nm_blocks(n) * NM_BLOCK;
}

/* Layer i's section of qnet (sizes[i] inputs, sizes[i + 1] outputs, codes[i]): a GRU's
 * (nm_int8_gru.h: two blocks of G = nm_q8_pad(3 H) rows, then h0), else a dense layer's,
 * the last one without multipliers and shift. */
NM_INLINE int nm_q8_layer_bytes(const uint16_t *sizes, const uint16_t *codes, size_t i, size_t n_layers,
    size_t *out) {
    const size_t cols = nm_q8_pad(sizes[i]), n_out = sizes[i + 1];
    size_t w;
    if (NM_CODE_KIND(codes[i]) == NM_KIND_GRU) {
        const size_t g = nm_q8_pad(3 * n_out), q = nm_q8_pad(n_out);
        return nm_mul_size(g, cols + q, &w) && nm_add_size(w, 16 * g + 2 * q, out);
    }
    const size_t rows = nm_q8_pad(n_out);
    return nm_mul_size(rows, cols, &w) && nm_add_size(w, 8 * rows + (i + 1 < n_layers ? 4 : 0), out);
}

static inline int nm_q8_net_bytes(const uint16_t *sizes, const uint16_t *codes, size_t n_layers, size_t *out) {
    size_t total = 8 * (size_t)sizes[0] + 8 * (size_t)sizes[n_layers];
    size_t s;
    for (size_t i = 0; i < n_layers; i++) {
        if (!nm_q8_layer_bytes(sizes, codes, i, n_layers, &s) || !nm_add_size(total, s, &total)) {
            return 0;
        }
    }
    *out = total;
    return 1;
}

// The widest padded layer input: each of the two int16 activation vectors holds one.
static inline size_t nm_q8_widest(const uint16_t *sizes, size_t n_layers) {
    size_t widest = 0;
    for (size_t i = 0; i < n_layers; i++) {
        if (nm_q8_pad(sizes[i]) > widest) {
            widest = nm_q8_pad(sizes[i]);
        }
    }
    return widest;
}

// The two activation vectors, then int32 accumulators: the last layer's, or a GRU's
// two vectors (W_i x + b_i and W_h h + b_h), whichever is longer.
static inline size_t nm_q8_scratch_bytes(const uint16_t *sizes, const uint16_t *codes, size_t n_layers) {
    size_t accs = nm_q8_pad(sizes[n_layers]);
    for (size_t i = 0; i < n_layers; i++) {
        if (NM_CODE_KIND(codes[i]) == NM_KIND_GRU && 2 * nm_q8_pad(3 * (size_t)sizes[i + 1]) > accs) {
            accs = 2 * nm_q8_pad(3 * (size_t)sizes[i + 1]);
        }
    }
    return 4 * nm_q8_widest(sizes, n_layers) + 4 * accs;
}

// int16 of state: each GRU layer's hidden vector padded to whole groups, in layer order.
static inline size_t nm_q8_state_len(const uint16_t *sizes, const uint16_t *codes, size_t n_layers) {
    size_t total = 0;
    for (size_t i = 0; i < n_layers; i++) {
        if (NM_CODE_KIND(codes[i]) == NM_KIND_GRU) {
            total += nm_q8_pad(sizes[i + 1]);
        }
    }
    return total;
}

/* ---------------------------------------------------------------------------
 * Pair order: where value i of a vector sits in an int16 activation vector.
 */
NM_INLINE size_t nm_q8_slot(size_t i) {
    return (i & ~(size_t)3) | ((i & 1) << 1) | ((i >> 1) & 1);
}

/* (acc * mult + 2^31) >> 32 in 64 bits, truncated to int32. ARMv6-M has no
 * 32x32->64 multiply (libgcc's __aeabi_lmul, ~40 instructions a call), so
 * there it is summed from 16-bit halves: with acc = ah * 2^16 + al and
 * mult = mh * 2^16 + ml (ah, mh arithmetic shifts; al, ml 0..65535), every
 * partial product fits in 32 bits, and the bits below 2^32 carry in through
 * the 16-bit sum s. Same bits for any acc and mult (modulo 2^32);
 * -DNM_Q8_MULHR16=1 selects it anywhere. */
#if !defined(NM_Q8_MULHR16) && defined(__thumb__) && !defined(__thumb2__)
#define NM_Q8_MULHR16 1
#endif
NM_INLINE int32_t nm_q8_mulhr(int32_t acc, int32_t mult) {
    #if NM_Q8_MULHR16
    const int32_t ah = acc >> 16, mh = mult >> 16;
    const uint32_t al = (uint32_t)acc & 0xffffu, ml = (uint32_t)mult & 0xffffu;
    const int32_t hl = ah * (int32_t)ml, lh = (int32_t)al * mh;
    const uint32_t s = ((al * ml) >> 16) + ((uint32_t)hl & 0xffffu) + ((uint32_t)lh & 0xffffu) + 0x8000u;
    return (int32_t)((uint32_t)(ah * mh) + (uint32_t)(hl >> 16) + (uint32_t)(lh >> 16) + (s >> 16));
    #else
    return (int32_t)(((int64_t)acc * mult + ((int64_t)1 << 31)) >> 32);
    #endif
}

#endif // NM_INT8_LAYOUT_H

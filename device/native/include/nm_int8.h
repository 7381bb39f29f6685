/*
 * nm_int8.h - integer (int8) policy inference: the arithmetic of dtype-int8
 * policy files (docs/policy-format.md, version 3; version 4 when a layer is a
 * GRU, nm_int8_gru.h) for cores without an FPU.
 *
 * Plain C99 for any 32-bit core, no MicroPython, no libm, no allocation; every
 * buffer belongs to the caller. On ARMv7E-M (Cortex-M4/M7) the multiply-adds
 * use the dual 16-bit SMLAD with SXTB16, selected at compile time as the float
 * ISA paths of nm_kernels.h are. No float operation happens inside a layer:
 * floats appear only where the observation is quantised (a subtraction and a
 * multiplication per input: the file holds the reciprocal, so cores without an
 * FPU run no soft-float division there) and where the last layer's int32
 * accumulators are turned back into an action (after tanh: a float32 built
 * from an integer's bits, then the action scale and offset).
 *
 * Entry points:
 *   nm_q8_dense(y, x, w, bias, mult, shift, n_in, n_out, act)
 *       one quantised dense layer: int32 accumulation of int8 weights times
 *       int16 activations, requantised to the next layer's scale (nm_int8_dense.h);
 *   nm_q8_dense_acc(acc, x, w, bias, n_in, n_out)
 *       the same layer's raw int32 accumulators (the last layer's, a GRU's);
 *   nm_q8_gru_step(h, x, section, n_in, hd, acc)
 *       one step of a GRU layer (nm_int8_gru.h);
 *   nm_q8_quantize_input(q, x, mean, mul, n)
 *       normalise and quantise an observation;
 *   nm_q8_mlp(out, x, qnet, sizes, codes, n_layers, scratch, state)
 *       the whole int8 policy forward on caller-provided buffers;
 *   nm_q8_state_reset(state, qnet, sizes, codes, n_layers)
 *       the GRU layers' initial state;
 *   nm_q8_check(qnet, sizes, codes, n_layers, &fault)
 *       the values a reader must refuse (0 when the net is deployable);
 *   nm_q8_layer_bytes, nm_q8_net_bytes (overflow-checked), nm_q8_scratch_bytes,
 *   nm_q8_state_len (nm_int8_layout.h).
 *
 * Layer layout. Rows are padded to R = 4 * ceil(n_out / 4), inputs to
 * P = 4 * ceil(n_in / 4); padding weights are zero (so padding rows, whatever
 * their bias and multiplier, never reach a real output).
 * Weights are int8 in blocks of 4 rows and groups of 4 inputs: block k,
 * group g is 16 bytes, row 4k+0's weights for inputs 4g..4g+3, then row
 * 4k+1's, 4k+2's, 4k+3's. A word of one row is what SXTB16 splits into the
 * pairs (w0, w2) and (w1, w3).
 *
 * Activations are 16-bit: the observation and each hidden layer's output are
 * int16 vectors (-32768..32767; 0..32767 after relu), quantised with one scale
 * per layer: weights carry the 8-bit error, activations add next to none, and
 * SMLAD multiplies 16-bit halves anyway. Then 127 * 32767 * n_in + 2^24 < 2^31
 * bounds every accumulator for n_in <= NM_Q8_MAX_IN. Vectors hold
 * P entries in "pair order": group g holds x[4g], x[4g+2], x[4g+1], x[4g+3],
 * so each 32-bit word is one SMLAD operand. Every path reads this order.
 *
 * Requantisation of row c (hidden layers), with the layer's multipliers
 * mult[c] (0 <= mult < 2^31) and one right shift r (0..31):
 *     acc = bias[c] + sum_j w[c][j] * x[j]                  (int32)
 *     t   = (acc * mult[c] + 2^31) >> 32                     (64-bit product, arithmetic shift)
 *     v   = (t + (2^r >> 1)) >> r                            (rounds half up)
 *     y   = clamp(v, 0, 32767) after relu, else clamp(v, -32768, 32767)
 *
 * qnet (the int8 policy file's payload), every section 4-byte aligned:
 *     f32 obs_mean[s0], f32 in_mul[s0],
 *     per hidden layer: i8 w[R*P], i32 bias[R], i32 mult[R], i32 shift,
 *                       or a GRU layer's section (nm_int8_gru.h),
 *     last layer:       i8 w[R*P], i32 bias[R], f32 deq[R],
 *     f32 action_scale[sL], f32 action_offset[sL]
 *
 * Forward:
 *     t      = (x[i] - obs_mean[i]) * in_mul[i]                 (float32)
 *     q0[i]  = clamp(t rounded half away from zero (exactly), -32767, 32767)
 *     hidden layers as above (a GRU's output is its state, at scale 2^-15);
 *     the last layer's acc[c] then gives
 *     y[c]   = (float)acc[c] * deq[c], clamped at 0 after relu (float32), or after
 *              tanh the integer tanh of acc[c] * deq[c] as a float32 (nm_int8_edge.h)
 *     out[c] = y[c] * action_scale[c] + action_offset[c]                   (float32)
 *
 * Arithmetic wraps rather than overflows for any bytes (a corrupt file gives
 * wrong numbers, never undefined behaviour); nm_q8_check is what refuses it.
 */
#ifndef NM_INT8_H
#define NM_INT8_H

#include "nm_clamp.h"
#include "nm_int8_dense.h"
#include "nm_int8_edge.h"
#include "nm_int8_gru.h"
#include "nm_int8_layout.h"
#include "nm_layout.h"

/* ---------------------------------------------------------------------------
 * A float32 rounded half away from zero and clamped to -32767..32767, from its
 * bits: exact (no float addition that could round first), and on cores
 * without an FPU a few integer instructions instead of soft-float compares,
 * an addition and a conversion. |t| >= 2^15 (inf and NaN too) saturates by
 * the sign bit.
 */
NM_INLINE int32_t nm_q8_round_f32(float t) {
    union { float f; uint32_t u; } b = { t };
    const uint32_t u = b.u;
    const uint32_t e = (u >> 23) & 0xffu;
    int32_t v;
    if (e < 126) {                                  // |t| < 0.5
        v = 0;
    } else if (e > 127 + 14) {
        v = NM_Q8_AMAX;
    } else {                                        // |t| = m * 2^(e - 150), shift 9..24
        const uint32_t m = (u & 0x7fffffu) | 0x800000u, s = 150 - e;
        v = (int32_t)((m + ((uint32_t)1 << (s - 1))) >> s);
        v = v > NM_Q8_AMAX ? NM_Q8_AMAX : v;
    }
    return (u >> 31) ? -v : v;
}

/* ---------------------------------------------------------------------------
 * Observation to int16 (pair order, nm_q8_pad(n) entries, padding 0). x is
 * finite (the caller checked).
 */
static inline void nm_q8_quantize_input(int16_t *q, const float *x, const float *mean, const float *mul,
    size_t n) {
    for (size_t i = n; i < nm_q8_pad(n); i++) {
        q[nm_q8_slot(i)] = 0;
    }
    for (size_t i = 0; i < n; i++) {
        q[nm_q8_slot(i)] = (int16_t)nm_q8_round_f32(nm_q8_fmul(nm_q8_fsub(x[i], mean[i]), mul[i]));
    }
}

/* ---------------------------------------------------------------------------
 * The last layer's accumulators to the action: dequantised, activated, then
 * scaled and offset (scale[sl], offset[sl] follow each other in the net).
 */
static inline void nm_q8_actions(float *out, const int32_t *acc, const float *deq, const float *scale, size_t sl,
    int act) {
    const float *offset = scale + sl;
    for (size_t i = 0; i < sl; i++) {
        float y;
        if (act == NM_ACT_TANH) {
            y = nm_q8_q15_f32(nm_q8_tanh_q15(nm_q8_deq_q16(acc[i], deq[i])));
        } else {
            y = (float)acc[i] * deq[i];
            if (act == NM_ACT_RELU) {
                y = y > 0.0f ? y : 0.0f;
            }
        }
        out[i] = nm_q8_fadd(nm_q8_fmul(y, scale[i]), offset[i]); // unfused: the host reference's bits
    }
}

/* ---------------------------------------------------------------------------
 * Whole int8 policy forward: out[sL] from x[s0] (finite), qnet as at the top
 * (4-byte aligned, nm_q8_net_bytes long), layer codes as in nm_layout.h, scratch of
 * nm_q8_scratch_bytes (4-byte aligned), state nm_q8_state_len int16 (4-byte aligned;
 * NULL when no layer is a GRU): each GRU layer advances its part one step, and the
 * next layer reads it there. out, x, qnet, scratch and state are disjoint; the caller
 * checked every size and nm_q8_check_layout. The action is not clamped here (nm_clamp
 * does that).
 */
static inline void nm_q8_mlp(float *out, const float *x, const void *qnet, const uint16_t *sizes,
    const uint16_t *codes, size_t n_layers, void *scratch, int16_t *state) {
    const size_t widest = nm_q8_widest(sizes, n_layers);
    int16_t *const a = scratch, *const b = a + widest, *cur = a;
    int32_t *acc = (int32_t *)(b + widest);
    const size_t s0 = sizes[0], sl = sizes[n_layers];
    const nm_f32a *f = qnet;
    nm_q8_quantize_input(cur, x, (const float *)f, (const float *)f + s0, s0);
    const uint8_t *p = (const uint8_t *)qnet + 8 * s0;
    const float *deq = NULL;
    for (size_t l = 0; l < n_layers; l++) {
        const size_t n_in = sizes[l], n_out = sizes[l + 1], rows = nm_q8_pad(n_out);
        const int8_t *w = (const int8_t *)p;
        const int32_t *bias = (const int32_t *)(const nm_i32a *)(p + rows * nm_q8_pad(n_in));
        // state is NULL only for layouts without GRU layers (callers check): testing it
        // first lets the compiler drop the GRU path from callers that pass NULL
        if (state != NULL && NM_CODE_KIND(codes[l]) == NM_KIND_GRU) {
            p = nm_q8_gru_step(state, cur, p, n_in, n_out, acc);
            cur = state;
            state += rows;
        } else if (l + 1 < n_layers) {
            const int32_t *mult = bias + rows;
            int16_t *dst = cur == a ? b : a;
            nm_q8_dense(dst, cur, w, bias, mult, mult[rows], n_in, n_out, NM_CODE_ACT(codes[l]));
            cur = dst;
            p = (const uint8_t *)(mult + rows + 1);
        } else {
            nm_q8_dense_acc(acc, cur, w, bias, n_in, n_out);
            deq = (const float *)(const nm_f32a *)(bias + rows);
            p = (const uint8_t *)(deq + rows);
        }
    }
    nm_q8_actions(out, acc, deq, (const float *)(const nm_f32a *)p, sl, NM_CODE_ACT(codes[n_layers - 1]));
}

// state (nm_q8_state_len int16) <- every GRU layer's h0 from qnet, in layer order.
static inline void nm_q8_state_reset(int16_t *state, const void *qnet, const uint16_t *sizes,
    const uint16_t *codes, size_t n_layers) {
    const uint8_t *p = (const uint8_t *)qnet + 8 * (size_t)sizes[0];
    for (size_t l = 0; l < n_layers; l++) {
        const size_t rows = nm_q8_pad(sizes[l + 1]);
        if (NM_CODE_KIND(codes[l]) == NM_KIND_GRU) {
            nm_q8_gru_t g;
            p = nm_q8_gru_parts(&g, p, sizes[l], sizes[l + 1]);
            nm_q8_gru_reset(state, &g, sizes[l + 1]);
            state += rows;
        } else {
            p += rows * nm_q8_pad(sizes[l]) + 8 * rows + (l + 1 < n_layers ? 4 : 0);
        }
    }
}

/* ---------------------------------------------------------------------------
 * Validation: what a reader refuses. Returns NM_Q8_OK or the first fault, with
 * its layer (or -1 outside the layers) and index in fault: a row, an input or
 * 0 for a layer as a whole (a GRU's rows in either block are 0..3H-1).
 */
enum {
    NM_Q8_OK = 0,
    NM_Q8_BAD_ACT,        // a hidden layer with an activation other than identity/relu
    NM_Q8_NONFINITE,      // NaN or inf in obs_mean, in_mul, deq, action_scale/offset
    NM_Q8_BAD_IN_MUL,     // in_mul <= 0
    NM_Q8_BAD_DEQ,        // deq <= 0 for a real row
    NM_Q8_BAD_MULT,       // mult outside 1..2^31-1
    NM_Q8_BAD_SHIFT,      // shift outside 0..31
    NM_Q8_BAD_BIAS,       // |bias| > 2^24
    NM_Q8_BAD_WIDTH,      // a layer with more than NM_Q8_MAX_IN inputs
    NM_Q8_BAD_CODE,       // a layer neither dense (identity, relu, tanh) nor a GRU
    NM_Q8_GRU_LAST,       // a GRU as the last layer (the action comes from a dense one)
    NM_Q8_BAD_GRU_BIAS,   // |bi| > 2^24 (a GRU's input block)
    NM_Q8_BAD_GRU_HBIAS,  // |bh| > 2^24 (its hidden block)
    NM_Q8_BAD_GRU_DEQ,    // deqi not finite and positive
    NM_Q8_BAD_GRU_HDEQ,   // deqh not finite and positive
};

typedef struct {
    int layer;
    size_t index;
} nm_q8_fault_t;

static inline int nm_q8_fail(nm_q8_fault_t *f, int code, int layer, size_t index) {
    f->layer = layer;
    f->index = index;
    return code;
}

// The layout's part of nm_q8_check (no qnet needed): widths and layer codes. A GRU's
// hidden size is the next layer's input count, checked there.
static inline int nm_q8_check_layout(const uint16_t *sizes, const uint16_t *codes, size_t n_layers,
    nm_q8_fault_t *f) {
    for (size_t l = 0; l < n_layers; l++) {
        if (sizes[l] > NM_Q8_MAX_IN) {
            return nm_q8_fail(f, NM_Q8_BAD_WIDTH, (int)l, sizes[l]);
        }
    }
    for (size_t l = 0; l < n_layers; l++) {
        const unsigned code = codes[l];
        if (code >= NM_ACT_COUNT && code != NM_GRU_CODE) {
            return nm_q8_fail(f, NM_Q8_BAD_CODE, (int)l, 0);
        }
        if (code == NM_GRU_CODE && l + 1 == n_layers) {
            return nm_q8_fail(f, NM_Q8_GRU_LAST, (int)l, 0);
        }
        if (l + 1 < n_layers && code != NM_ACT_IDENTITY && code != NM_ACT_RELU && code != NM_GRU_CODE) {
            return nm_q8_fail(f, NM_Q8_BAD_ACT, (int)l, 0);
        }
    }
    return NM_Q8_OK;
}

// A GRU section's biases and scales over its 3 hd real rows.
static inline int nm_q8_check_gru(const nm_q8_gru_t *g, size_t hd, int layer, nm_q8_fault_t *f) {
    for (size_t c = 0; c < 3 * hd; c++) {
        if (g->bi[c] > NM_Q8_BIAS_MAX || g->bi[c] < -NM_Q8_BIAS_MAX) {
            return nm_q8_fail(f, NM_Q8_BAD_GRU_BIAS, layer, c);
        }
    }
    for (size_t c = 0; c < 3 * hd; c++) {
        if (g->bh[c] > NM_Q8_BIAS_MAX || g->bh[c] < -NM_Q8_BIAS_MAX) {
            return nm_q8_fail(f, NM_Q8_BAD_GRU_HBIAS, layer, c);
        }
    }
    for (size_t c = 0; c < 3 * hd; c++) {
        if (!nm_finite(g->deqi[c]) || !(g->deqi[c] > 0.0f)) {
            return nm_q8_fail(f, NM_Q8_BAD_GRU_DEQ, layer, c);
        }
    }
    for (size_t c = 0; c < 3 * hd; c++) {
        if (!nm_finite(g->deqh[c]) || !(g->deqh[c] > 0.0f)) {
            return nm_q8_fail(f, NM_Q8_BAD_GRU_HDEQ, layer, c);
        }
    }
    return NM_Q8_OK;
}

static inline int nm_q8_check(const void *qnet, const uint16_t *sizes, const uint16_t *codes, size_t n_layers,
    nm_q8_fault_t *f) {
    const size_t s0 = sizes[0], sl = sizes[n_layers];
    const nm_f32a *v = qnet;
    int code = nm_q8_check_layout(sizes, codes, n_layers, f);
    if (code != NM_Q8_OK) {
        return code;
    }
    for (size_t i = 0; i < 2 * s0; i++) {
        if (!nm_finite(v[i])) {
            return nm_q8_fail(f, NM_Q8_NONFINITE, -1, i);
        }
    }
    for (size_t i = 0; i < s0; i++) {
        if (!(v[s0 + i] > 0.0f)) {
            return nm_q8_fail(f, NM_Q8_BAD_IN_MUL, -1, i);
        }
    }
    const uint8_t *p = (const uint8_t *)qnet + 8 * s0;
    for (size_t l = 0; l < n_layers; l++) {
        const size_t n_out = sizes[l + 1], rows = nm_q8_pad(n_out);
        if (codes[l] == NM_GRU_CODE) {
            nm_q8_gru_t g;
            p = nm_q8_gru_parts(&g, p, sizes[l], n_out);
            code = nm_q8_check_gru(&g, n_out, (int)l, f);
            if (code != NM_Q8_OK) {
                return code;
            }
            continue;
        }
        const nm_i32a *bias = (const nm_i32a *)(p + rows * nm_q8_pad(sizes[l]));
        for (size_t c = 0; c < n_out; c++) {
            if (bias[c] > NM_Q8_BIAS_MAX || bias[c] < -NM_Q8_BIAS_MAX) {
                return nm_q8_fail(f, NM_Q8_BAD_BIAS, (int)l, c);
            }
        }
        if (l + 1 < n_layers) {
            const nm_i32a *mult = bias + rows;
            for (size_t c = 0; c < n_out; c++) {
                if (mult[c] < 1) {
                    return nm_q8_fail(f, NM_Q8_BAD_MULT, (int)l, c);
                }
            }
            if (mult[rows] < 0 || mult[rows] > NM_Q8_SHIFT_MAX) {
                return nm_q8_fail(f, NM_Q8_BAD_SHIFT, (int)l, 0);
            }
            p = (const uint8_t *)(mult + rows + 1);
        } else {
            const nm_f32a *deq = (const nm_f32a *)(bias + rows);
            for (size_t c = 0; c < n_out; c++) {
                if (!nm_finite(deq[c])) {
                    return nm_q8_fail(f, NM_Q8_NONFINITE, (int)l, c);
                }
                if (!(deq[c] > 0.0f)) {
                    return nm_q8_fail(f, NM_Q8_BAD_DEQ, (int)l, c);
                }
            }
            p = (const uint8_t *)(deq + rows);
        }
    }
    const nm_f32a *tail = (const nm_f32a *)p;
    for (size_t i = 0; i < 2 * sl; i++) {
        if (!nm_finite(tail[i])) {
            return nm_q8_fail(f, NM_Q8_NONFINITE, -1, i);
        }
    }
    return NM_Q8_OK;
}

#endif // NM_INT8_H

/*
 * nm_int8.h - integer (int8) policy inference: the arithmetic of dtype-int8
 * policy files (docs/policy-format.md, version 3) for cores without an FPU.
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
 *       int16 activations, requantised to the next layer's scale;
 *   nm_q8_dense_acc(acc, x, w, bias, n_in, n_out)
 *       the same layer's raw int32 accumulators (the last layer);
 *   nm_q8_quantize_input(q, x, mean, mul, n)
 *       normalise and quantise an observation;
 *   nm_q8_mlp(out, x, qnet, sizes, acts, n_layers, scratch)
 *       the whole int8 policy forward on caller-provided buffers;
 *   nm_q8_check(qnet, sizes, acts, n_layers, &fault)
 *       the values a reader must refuse (0 when the net is deployable);
 *   nm_q8_layer_bytes, nm_q8_net_bytes, nm_q8_scratch_bytes (overflow-checked).
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
 *     last layer:       i8 w[R*P], i32 bias[R], f32 deq[R],
 *     f32 action_scale[sL], f32 action_offset[sL]
 *
 * Forward:
 *     t      = (x[i] - obs_mean[i]) * in_mul[i]                 (float32)
 *     q0[i]  = clamp(t rounded half away from zero (exactly), -32767, 32767)
 *     hidden layers as above; the last layer's acc[c] then gives
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
#include "nm_int8_armv6m.h"
#include "nm_int8_dsp.h"
#include "nm_int8_edge.h"
#include "nm_int8_layout.h"
#include "nm_layout.h"

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
 * Requantisation of one accumulator (see the top of this file). shifted is a
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
 * (4-byte aligned, nm_q8_net_bytes long), scratch of nm_q8_scratch_bytes
 * (4-byte aligned). out, x, qnet and scratch are disjoint; the caller checked
 * every size. The action is not clamped here (nm_clamp does that).
 */
static inline void nm_q8_mlp(float *out, const float *x, const void *qnet, const uint16_t *sizes,
    const uint16_t *acts, size_t n_layers, void *scratch) {
    size_t widest = (nm_q8_scratch_bytes(sizes, n_layers) - 4 * nm_q8_pad(sizes[n_layers])) / 4;
    int16_t *cur = scratch, *nxt = cur + widest;
    int32_t *acc = (int32_t *)(nxt + widest);
    const size_t s0 = sizes[0], sl = sizes[n_layers];
    const nm_f32a *f = qnet;
    nm_q8_quantize_input(cur, x, (const float *)f, (const float *)f + s0, s0);
    const uint8_t *p = (const uint8_t *)qnet + 8 * s0;
    const float *deq = NULL;
    for (size_t l = 0; l < n_layers; l++) {
        const size_t n_in = sizes[l], n_out = sizes[l + 1], rows = nm_q8_pad(n_out);
        const int8_t *w = (const int8_t *)p;
        const int32_t *bias = (const int32_t *)(const nm_i32a *)(p + rows * nm_q8_pad(n_in));
        if (l + 1 < n_layers) {
            const int32_t *mult = bias + rows;
            nm_q8_dense(nxt, cur, w, bias, mult, mult[rows], n_in, n_out, acts[l]);
            p = (const uint8_t *)(mult + rows + 1);
            int16_t *t = cur;
            cur = nxt;
            nxt = t;
        } else {
            nm_q8_dense_acc(acc, cur, w, bias, n_in, n_out);
            deq = (const float *)(const nm_f32a *)(bias + rows);
            p = (const uint8_t *)(deq + rows);
        }
    }
    nm_q8_actions(out, acc, deq, (const float *)(const nm_f32a *)p, sl, acts[n_layers - 1]);
}

/* ---------------------------------------------------------------------------
 * Validation: what a reader refuses. Returns NM_Q8_OK or the first fault, with
 * its layer (or -1 outside the layers) and index in fault.
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

static inline int nm_q8_check(const void *qnet, const uint16_t *sizes, const uint16_t *acts, size_t n_layers,
    nm_q8_fault_t *f) {
    const size_t s0 = sizes[0], sl = sizes[n_layers];
    const nm_f32a *v = qnet;
    for (size_t l = 0; l < n_layers; l++) {
        if (sizes[l] > NM_Q8_MAX_IN) {
            return nm_q8_fail(f, NM_Q8_BAD_WIDTH, (int)l, sizes[l]);
        }
    }
    for (size_t l = 0; l + 1 < n_layers; l++) {
        if (acts[l] != NM_ACT_IDENTITY && acts[l] != NM_ACT_RELU) {
            return nm_q8_fail(f, NM_Q8_BAD_ACT, (int)l, 0);
        }
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

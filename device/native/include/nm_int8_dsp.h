/* nm_int8.h's hidden and output layers on ARMv7E-M: SXTB16 + SMLAD, a whole
 * layer per call. Empty unless the core takes this path (NM_Q8_DSP); nm_int8_dense.h
 * includes it. See nm_int8.h for the layout, the pair order and the requantisation.
 *
 * The layer is assembly from end to end, so every core register but sp works
 * in the accumulation: 4 accumulators, the weight and input pointers, a
 * counter, an input pair, the 4 row words of a group (one LDM) and a
 * temporary: 18 instructions per 16 multiply-adds. The per-block values wait
 * on the stack (an nm_q8_dsp_layer_t copied there) and move with one LDM/STM
 * each; a block of 4 rows costs 18 instructions besides its multiply-adds
 * (the next biases, 4 SMMULR, 4 saturations, 2 PKHBT packing the pair-ordered
 * int16 results, one STRD), 4 more with a rounding shift.
 *
 * One function per (front, back): the front is the accumulation (4 groups of
 * 4 inputs per loop iteration when the groups come in fours, else one), the
 * back is what becomes of the 4 accumulators (requantised with or without a
 * shift, clamped to relu or int16; or stored as they are for the last layer).
 */
#ifndef NM_INT8_DSP_H
#define NM_INT8_DSP_H

#include "nm_int8_layout.h"

#if NM_Q8_DSP

// The stack copy's word offsets are fixed in the assembly: keep the order.
typedef struct {
    const int32_t *mult;     // sp + 0: the next block's multipliers (hidden layers)
    void *y;                 // sp + 4: the next block's output
    const int32_t *bias;     // sp + 8: the block after next's biases
    void *y_end;             // sp + 12: where the output ends
    int32_t round, shift;    // sp + 16, + 20: the rounding shift (shifted backs)
    const int16_t *x;        // sp + 24: the layer's input vector
    uint32_t loops;          // sp + 28: per block, iterations of the front (>= 1)
    const int8_t *w;         // the first block's weights (not copied)
} nm_q8_dsp_layer_t;

// Registers: r0 weights, r1 input, r2 counter, r3-r6 rows 0-3, r7/r8 one input
// pair word each, r9-r12 the group's 4 row words, lr the split of one.
#define NM_Q8_DSP_ROW(a, w) \
    "sxtb16 lr, " w "\n\t" \
    "sxtb16 " w ", " w ", ror #8\n\t" \
    "smlad " a ", lr, r7, " a "\n\t" \
    "smlad " a ", " w ", r8, " a "\n\t"

// One group: 4 inputs (x0, x2 | x1, x3) into the 4 rows.
#define NM_Q8_DSP_GROUP \
    "ldrd r7, r8, [r1], #8\n\t" \
    "ldmia r0!, {r9, r10, r11, r12}\n\t" \
    NM_Q8_DSP_ROW("r3", "r9") NM_Q8_DSP_ROW("r4", "r10") NM_Q8_DSP_ROW("r5", "r11") NM_Q8_DSP_ROW("r6", "r12")

#define NM_Q8_DSP_FRONT4 \
    "2:\n\t" NM_Q8_DSP_GROUP NM_Q8_DSP_GROUP NM_Q8_DSP_GROUP NM_Q8_DSP_GROUP \
    "subs r2, r2, #1\n\t" \
    "bne 2b\n\t"

// The input's second (x2) and padding slots meet zero weights: one SMLAD a row.
#define NM_Q8_DSP_HALF_ROW(a, w) \
    "sxtb16 lr, " w "\n\t" \
    "smlad " a ", lr, r7, " a "\n\t"

// Groups in fours whose last input is the layer's only real one in its group
// (n_in = 4k + 1): the first iteration enters at its second group, so the
// loop ends one group early, and that last group's three padding inputs
// (zero weights) are skipped: 8 instructions less per block.
#define NM_Q8_DSP_FRONT4H \
    "b 3f\n\t" \
    "2:\n\t" NM_Q8_DSP_GROUP "3:\n\t" NM_Q8_DSP_GROUP NM_Q8_DSP_GROUP NM_Q8_DSP_GROUP \
    "subs r2, r2, #1\n\t" \
    "bne 2b\n\t" \
    "ldr r7, [r1]\n\t" \
    "ldmia r0!, {r9, r10, r11, r12}\n\t" \
    NM_Q8_DSP_HALF_ROW("r3", "r9") NM_Q8_DSP_HALF_ROW("r4", "r10") \
    NM_Q8_DSP_HALF_ROW("r5", "r11") NM_Q8_DSP_HALF_ROW("r6", "r12")

#define NM_Q8_DSP_FRONT1 \
    "2:\n\t" NM_Q8_DSP_GROUP \
    "subs r2, r2, #1\n\t" \
    "bne 2b\n\t"

// t = (acc * mult + 2^31) >> 32 for the 4 rows (SMMULR rounds exactly so);
// r7-r10: mult, y, bias, y_end.
#define NM_Q8_DSP_MULHR \
    "ldm sp, {r7, r8, r9, r10}\n\t" \
    "ldmia r7!, {r1, r2, r11, r12}\n\t" \
    "smmulr r3, r3, r1\n\t" \
    "smmulr r4, r4, r2\n\t" \
    "smmulr r5, r5, r11\n\t" \
    "smmulr r6, r6, r12\n\t"

// (t + round) >> shift: SMMLAR adds round (r11) to the high word, so the sum is
// exact (|t| <= 2^30 for a valid file: it cannot wrap).
#define NM_Q8_DSP_MULHR_SHIFT \
    "ldm sp, {r7, r8, r9, r10, r11, r12}\n\t" \
    "ldrd r1, r2, [r7], #8\n\t" \
    "smmlar r3, r3, r1, r11\n\t" \
    "smmlar r4, r4, r2, r11\n\t" \
    "ldrd r1, r2, [r7], #8\n\t" \
    "smmlar r5, r5, r1, r11\n\t" \
    "smmlar r6, r6, r2, r11\n\t" \
    "asr r3, r3, r12\n\t" \
    "asr r4, r4, r12\n\t" \
    "asr r5, r5, r12\n\t" \
    "asr r6, r6, r12\n\t"

#define NM_Q8_DSP_SAT(op, bits) \
    op " r3, #" bits ", r3\n\t" \
    op " r4, #" bits ", r4\n\t" \
    op " r5, #" bits ", r5\n\t" \
    op " r6, #" bits ", r6\n\t"

// Rows 0-3 in pair order (0, 2 | 1, 3): one word each, one STRD.
#define NM_Q8_DSP_STORE16 \
    "pkhbt r3, r3, r5, lsl #16\n\t" \
    "pkhbt r4, r4, r6, lsl #16\n\t" \
    "strd r3, r4, [r8], #8\n\t"

// The last layer: the raw accumulators, natural row order.
#define NM_Q8_DSP_BACK_ACC \
    "ldm sp, {r7, r8, r9, r10}\n\t" \
    "stmia r8!, {r3, r4, r5, r6}\n\t"

#define NM_Q8_DSP_BACK_RELU NM_Q8_DSP_MULHR NM_Q8_DSP_SAT("usat", "15") NM_Q8_DSP_STORE16
#define NM_Q8_DSP_BACK_RELU_SHIFT NM_Q8_DSP_MULHR_SHIFT NM_Q8_DSP_SAT("usat", "15") NM_Q8_DSP_STORE16
#define NM_Q8_DSP_BACK_ID NM_Q8_DSP_MULHR NM_Q8_DSP_SAT("ssat", "16") NM_Q8_DSP_STORE16
#define NM_Q8_DSP_BACK_ID_SHIFT NM_Q8_DSP_MULHR_SHIFT NM_Q8_DSP_SAT("ssat", "16") NM_Q8_DSP_STORE16

// void name(const nm_q8_dsp_layer_t *s): every block of one layer (at least
// one). Each block's biases are loaded at the end of the one before (the last
// block's load reads the 16 bytes after the biases: the multipliers or deq).
// noipa: the caller must assume the AAPCS clobbers (r0-r3, r12, flags), which
// it cannot read off a body of assembly.
#define NM_Q8_DSP_LAYER_FN(name, front, back) \
    __attribute__((naked, noinline, noipa, unused)) static void name(const nm_q8_dsp_layer_t *s) { \
        (void)s; \
        __asm__ volatile ( \
            "push {r4, r5, r6, r7, r8, r9, r10, r11, lr}\n\t" \
            "sub sp, sp, #32\n\t" \
            "ldmia r0!, {r1, r2, r3, r4, r5, r6, r7, r8}\n\t" \
            "stm sp, {r1, r2, r3, r4, r5, r6, r7, r8}\n\t" \
            "mov r1, r7\n\t" \
            "mov r2, r8\n\t" \
            "ldr r0, [r0]\n\t" \
            "add r9, r3, #16\n\t" \
            "str r9, [sp, #8]\n\t" \
            "ldm r3, {r3, r4, r5, r6}\n\t" \
            "1:\n\t" \
            front \
            back \
            "ldmia r9!, {r3, r4, r5, r6}\n\t" \
            "stm sp, {r7, r8, r9}\n\t" \
            "ldrd r1, r2, [sp, #24]\n\t" \
            "cmp r8, r10\n\t" \
            "bne 1b\n\t" \
            "add sp, sp, #32\n\t" \
            "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}\n\t"); \
    }

NM_Q8_DSP_LAYER_FN(nm_q8_dsp_relu4, NM_Q8_DSP_FRONT4, NM_Q8_DSP_BACK_RELU)
NM_Q8_DSP_LAYER_FN(nm_q8_dsp_relu4h, NM_Q8_DSP_FRONT4H, NM_Q8_DSP_BACK_RELU)
NM_Q8_DSP_LAYER_FN(nm_q8_dsp_relu1, NM_Q8_DSP_FRONT1, NM_Q8_DSP_BACK_RELU)
NM_Q8_DSP_LAYER_FN(nm_q8_dsp_relu_shift4, NM_Q8_DSP_FRONT4, NM_Q8_DSP_BACK_RELU_SHIFT)
NM_Q8_DSP_LAYER_FN(nm_q8_dsp_relu_shift4h, NM_Q8_DSP_FRONT4H, NM_Q8_DSP_BACK_RELU_SHIFT)
NM_Q8_DSP_LAYER_FN(nm_q8_dsp_relu_shift1, NM_Q8_DSP_FRONT1, NM_Q8_DSP_BACK_RELU_SHIFT)
NM_Q8_DSP_LAYER_FN(nm_q8_dsp_id4, NM_Q8_DSP_FRONT4, NM_Q8_DSP_BACK_ID)
NM_Q8_DSP_LAYER_FN(nm_q8_dsp_id1, NM_Q8_DSP_FRONT1, NM_Q8_DSP_BACK_ID)
NM_Q8_DSP_LAYER_FN(nm_q8_dsp_id_shift4, NM_Q8_DSP_FRONT4, NM_Q8_DSP_BACK_ID_SHIFT)
NM_Q8_DSP_LAYER_FN(nm_q8_dsp_id_shift1, NM_Q8_DSP_FRONT1, NM_Q8_DSP_BACK_ID_SHIFT)
NM_Q8_DSP_LAYER_FN(nm_q8_dsp_acc4, NM_Q8_DSP_FRONT4, NM_Q8_DSP_BACK_ACC)
NM_Q8_DSP_LAYER_FN(nm_q8_dsp_acc1, NM_Q8_DSP_FRONT1, NM_Q8_DSP_BACK_ACC)

enum { NM_Q8_DSP_ONE, NM_Q8_DSP_FOUR, NM_Q8_DSP_FOUR_HALF };

// A layer's state, rows padded to a multiple of 4, y_bytes per output row (2:
// int16 activations, 4: int32 accumulators). Returns the front that fits the
// layer's groups of 4 inputs: NM_Q8_DSP_FOUR_HALF when they come in fours and
// the last holds one input, NM_Q8_DSP_FOUR when they come in fours, else
// NM_Q8_DSP_ONE.
NM_INLINE int nm_q8_dsp_setup(nm_q8_dsp_layer_t *s, void *y, size_t y_bytes, const int16_t *x,
    const int8_t *w, const int32_t *bias, const int32_t *mult, int32_t shift, size_t n_in, size_t rows) {
    const size_t ng = nm_q8_pad(n_in) / NM_Q8_GROUP;
    const int front = ng & 3 ? NM_Q8_DSP_ONE : (n_in & 3) == 1 ? NM_Q8_DSP_FOUR_HALF : NM_Q8_DSP_FOUR;
    const int32_t r = shift & NM_Q8_SHIFT_MAX;
    s->x = x;
    s->loops = (uint32_t)(front == NM_Q8_DSP_ONE ? ng : ng / 4);
    s->y_end = (uint8_t *)y + rows * y_bytes;
    s->mult = mult;
    s->y = y;
    s->round = (int32_t)(((uint32_t)1 << r) >> 1);
    s->shift = r;
    s->w = w;
    s->bias = bias;
    return front;
}

#endif // NM_Q8_DSP

#endif // NM_INT8_DSP_H

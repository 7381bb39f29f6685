/*
 * nm_int8_xtensa.S - nm_int8.h's layers on the ESP32's windowed Xtensa core with the
 * MAC16 option (xtensawin: ESP32 LX6, ESP32-S3 LX7, QEMU's de233_fpu), on the int16
 * weights nm_q8_widen writes (nm_int8_xtensa.h):
 *
 *   void nm_xt_q8_hidden(const nm_xt_q8_layer_t *s);   requantised int16 rows, pair order
 *   void nm_xt_q8_last(const nm_xt_q8_layer_t *s);     raw int32 accumulators, row order
 *
 * One row at a time in MAC16's accumulator: acc = bias, then per 32-bit word of the
 * row's weights and of the input (two int16 each, in the same pair order) a
 * mula.dd.ll and a mula.dd.hh whose ldinc loads the next word, weights into m0/m1 and
 * inputs into m2/m3, in a zero-overhead LOOPNEZ: one instruction per multiply-add and
 * no load of its own. The last group's four multiply-adds run after the loop without
 * loads, so nothing past the row or the input is read. ACCLO wraps modulo 2^32 as the
 * C path's unsigned sums do (ACCHI is never read), so results are bit-exact for any bytes.
 *
 * Requantisation: t = (acc * mult + 2^31) >> 32 from 16-bit halves (no MULSH on
 * de233_fpu): al * ml by mul16u, the three others by mull (each fits 32 bits), the low
 * halves carried through s = (al * ml >> 16) + lo(hl) + lo(lh) - 2^15, whose arithmetic
 * shift is one less than the C path's (s + 2^16) >> 16: round1 = round + 1 makes up for
 * it. Then (t + round) >> shift by SAR, clamps to int16 and max with the floor (0 after
 * relu, -32768 else). Same integers as nm_q8_mulhr and nm_q8_requant.
 *
 * Uses a2-a15, m0-m3, ACC, SAR, LBEG/LEND/LCOUNT: caller-saved in the windowed ABI.
 * Plain assembly for llvm-mc-22.
 */

    .include "nm_loop_xtensa.inc"

/* Registers: a3 y, a4 input - 4, a5 weights - 4 (runs through every row), a6 bias,
 * a7 mult, a8 loop count (groups - 1), a9 blocks left, a10 floor, a11 round1, a15 the
 * row's input pointer; a2, a12-a14 temporaries. Leaves the row's sum in a12. */
    .macro ROW_SUM fn, boff
    /* the loop's alignment (see LOOPNEZ_ALIGNED) from narrow forms of the first and
     * third instruction where they give it, so most rows run no padding */
    .if ((. - \fn + 15) & 3) == 1
    l32i a12, a6, \boff
    wsr a12, acclo
    mov a15, a4
    .elseif ((. - \fn + 15) & 3) == 2
    l32i.n a12, a6, \boff
    wsr a12, acclo
    mov a15, a4
    .elseif ((. - \fn + 15) & 3) == 3
    l32i.n a12, a6, \boff
    wsr a12, acclo
    mov.n a15, a4
    .else
    nop.n
    l32i.n a12, a6, \boff
    wsr a12, acclo
    mov a15, a4
    .endif
    ldinc m0, a5
    ldinc m2, a15
    LOOPNEZ_ALIGNED \fn, a8, 1f
    mula.dd.ll.ldinc m1, a5, m0, m2
    mula.dd.hh.ldinc m3, a15, m0, m2
    mula.dd.ll.ldinc m0, a5, m1, m3
    mula.dd.hh.ldinc m2, a15, m1, m3
1:
    mula.dd.ll.ldinc m1, a5, m0, m2
    mula.dd.hh.ldinc m3, a15, m0, m2
    mula.dd.ll m1, m3
    mula.dd.hh m1, m3
    rsr a12, acclo
    .endm

/* a12 (the row's sum) requantised with mult[moff] and stored as int16 at y + yoff. */
    .macro REQUANT moff, yoff
    l32i a13, a7, \moff         # mult
    mul16u a2, a12, a13         # al * ml
    extui a2, a2, 16, 16        # al * ml >> 16
    extui a14, a13, 0, 16       # ml
    srai a13, a13, 16           # mh
    srai a15, a12, 16           # ah
    extui a12, a12, 0, 16       # al
    mull a14, a15, a14          # hl = ah * ml
    mull a12, a12, a13          # lh = al * mh
    mull a13, a15, a13          # hh = ah * mh
    extui a15, a14, 0, 16
    add a2, a2, a15
    extui a15, a12, 0, 16
    add a2, a2, a15
    addmi a2, a2, -32768        # s - 2^15 (s + 2^15 - 2^16)
    srai a14, a14, 16
    add a13, a13, a14
    srai a12, a12, 16
    add a13, a13, a12
    srai a2, a2, 16
    add a13, a13, a2            # t - 1
    add a13, a13, a11           # t + round
    sra a13, a13
    clamps a13, a13, 15
    max a13, a13, a10
    s16i a13, a3, \yoff
    .endm

/* The layer's registers from the nm_xt_q8_layer_t in a2 (its fields 4 bytes apart, in
 * order: y, x, w, bias, mult, ng, blocks, shift, lo, round1); SAR = shift. */
    .macro LAYER_SETUP
    l32i a3, a2, 0  # y
    l32i a4, a2, 4  # x
    addi a4, a4, -4
    l32i a5, a2, 8  # w
    addi a5, a5, -4
    l32i a6, a2, 12  # bias
    l32i a7, a2, 16  # mult
    l32i a8, a2, 20  # ng
    addi a8, a8, -1
    l32i a9, a2, 24  # blocks
    l32i a10, a2, 32  # lo
    l32i a11, a2, 36  # round1
    l32i a12, a2, 28  # shift
    ssr a12
    .endm

    .text
    .section .text.nm_xt_q8_hidden, "ax"
    .global nm_xt_q8_hidden
    .type nm_xt_q8_hidden, @function
    .align 4
nm_xt_q8_hidden:
    entry a1, 32
    LAYER_SETUP
.Lhidden_block:
    /* rows 4k..4k+3 go to pair-order slots 0, 2, 1, 3 */
    ROW_SUM nm_xt_q8_hidden, 0
    REQUANT 0, 0
    ROW_SUM nm_xt_q8_hidden, 4
    REQUANT 4, 4
    ROW_SUM nm_xt_q8_hidden, 8
    REQUANT 8, 2
    ROW_SUM nm_xt_q8_hidden, 12
    REQUANT 12, 6
    addi a3, a3, 8
    addi a6, a6, 16
    addi a7, a7, 16
    addi a9, a9, -1
    bnez a9, .Lhidden_block
    retw
    .size nm_xt_q8_hidden, . - nm_xt_q8_hidden

    .section .text.nm_xt_q8_last, "ax"
    .global nm_xt_q8_last
    .type nm_xt_q8_last, @function
    .align 4
nm_xt_q8_last:
    entry a1, 32
    LAYER_SETUP
.Llast_block:
    ROW_SUM nm_xt_q8_last, 0
    s32i a12, a3, 0
    ROW_SUM nm_xt_q8_last, 4
    s32i a12, a3, 4
    ROW_SUM nm_xt_q8_last, 8
    s32i a12, a3, 8
    ROW_SUM nm_xt_q8_last, 12
    s32i a12, a3, 12
    addi a3, a3, 16
    addi a6, a6, 16
    addi a9, a9, -1
    bnez a9, .Llast_block
    retw
    .size nm_xt_q8_last, . - nm_xt_q8_last

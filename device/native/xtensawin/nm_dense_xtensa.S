/*
 * nm_dense_xtensa.S - nm_dense.h's full blocks on the ESP32's windowed Xtensa core with
 * its single-precision FPU (xtensawin: ESP32 LX6, ESP32-S3 LX7, QEMU's de233_fpu):
 *
 *   void nm_xt_dense_f32(float *y, const float *x, const float *w, uint32_t n_in,
 *                        uint32_t n_blocks, uint32_t relu);
 *
 * n_blocks whole block-4 blocks (nm_layout.h) from w, 4 outputs each into y; ReLU when
 * relu != 0 (an output that is not > 0, NaN included, becomes 0, as nm_dense.h's blocks).
 * Blocks go in pairs: 8 accumulators (f0-f7) share each input, loaded 4 at a time
 * (f8-f11); f12-f15 take the weights, one lsi each, each weight feeding one madd.s. The
 * input loops are zero-overhead LOOPNEZ loops; pointers step once per 4 inputs. An odd
 * last block runs the same with 4 accumulators.
 *
 * Only base-ISA loads: no lsiu/lsip, whose update is a pre-increment on the ESP32's
 * FPU and a post-increment on newer ones (the same encoding, device/native/README.md).
 * madd.s is one rounding (fused) where C's a * b + c under -ffp-contract=off rounds
 * twice: results agree with the C path and NumPy to float32 rounding, not bit for bit.
 * Uses a2-a15 and f0-f15, b0, LBEG/LEND/LCOUNT: all caller-saved in the windowed ABI.
 * Plain assembly for llvm-mc-22 (no preprocessor needed).
 */

    .include "nm_loop_xtensa.inc"

/* acc{0..3} += w[off + 0..12] * x, one block's 4 weights of one input (f12-f15). */
    .macro BLOCK_INPUT p, off, x, a0, a1, a2, a3
    lsi f12, \p, \off
    lsi f13, \p, \off + 4
    madd.s \a0, f12, \x
    lsi f14, \p, \off + 8
    madd.s \a1, f13, \x
    lsi f15, \p, \off + 12
    madd.s \a2, f14, \x
    madd.s \a3, f15, \x
    .endm

/* The 4 accumulators from the block's biases at p; p moves to its first input. */
    .macro BLOCK_BIAS p, a0, a1, a2, a3
    lsi \a0, \p, 0
    lsi \a1, \p, 4
    lsi \a2, \p, 8
    lsi \a3, \p, 12
    addi \p, \p, 16
    .endm

/* ReLU on one accumulator: 0 unless > 0 (ule.s is true for NaN too); f8 holds 0. */
    .macro RELU a
    ule.s b0, \a, f8
    movt.s \a, f8, b0
    .endm

    .text
    .section .text.nm_xt_dense_f32, "ax"
    .global nm_xt_dense_f32
    .type nm_xt_dense_f32, @function
    .align 4
nm_xt_dense_f32:
    entry a1, 32
    addi a8, a5, 1
    slli a8, a8, 4  # a8: bytes per block, 16 * (n_in + 1)
    srli a9, a5, 2  # a9: groups of 4 inputs
    extui a10, a5, 0, 2  # a10: inputs after them
    srli a11, a6, 1  # a11: pairs of blocks
    movi a15, 0
    beqz a11, .Lsingle

.Lpair:
    mov a12, a4
    add a13, a4, a8
    BLOCK_BIAS a12, f0, f1, f2, f3
    BLOCK_BIAS a13, f4, f5, f6, f7
    mov a14, a3
    LOOPNEZ_ALIGNED nm_xt_dense_f32, a9, .Lpair4_end
    lsi f8, a14, 0
    lsi f9, a14, 4
    lsi f10, a14, 8
    lsi f11, a14, 12
    BLOCK_INPUT a12, 0, f8, f0, f1, f2, f3
    BLOCK_INPUT a13, 0, f8, f4, f5, f6, f7
    BLOCK_INPUT a12, 16, f9, f0, f1, f2, f3
    BLOCK_INPUT a13, 16, f9, f4, f5, f6, f7
    BLOCK_INPUT a12, 32, f10, f0, f1, f2, f3
    BLOCK_INPUT a13, 32, f10, f4, f5, f6, f7
    BLOCK_INPUT a12, 48, f11, f0, f1, f2, f3
    BLOCK_INPUT a13, 48, f11, f4, f5, f6, f7
    addi a12, a12, 64
    addi a13, a13, 64
    addi a14, a14, 16
.Lpair4_end:
    LOOPNEZ_ALIGNED nm_xt_dense_f32, a10, .Lpair1_end
    lsi f8, a14, 0
    BLOCK_INPUT a12, 0, f8, f0, f1, f2, f3
    BLOCK_INPUT a13, 0, f8, f4, f5, f6, f7
    addi a12, a12, 16
    addi a13, a13, 16
    addi a14, a14, 4
.Lpair1_end:
    beqz a7, .Lpair_store
    wfr f8, a15
    RELU f0
    RELU f1
    RELU f2
    RELU f3
    RELU f4
    RELU f5
    RELU f6
    RELU f7
.Lpair_store:
    ssi f0, a2, 0
    ssi f1, a2, 4
    ssi f2, a2, 8
    ssi f3, a2, 12
    ssi f4, a2, 16
    ssi f5, a2, 20
    ssi f6, a2, 24
    ssi f7, a2, 28
    addi a2, a2, 32
    addx2 a4, a8, a4  # the pair after
    addi a11, a11, -1
    bnez a11, .Lpair

.Lsingle:
    extui a11, a6, 0, 1
    beqz a11, .Ldone
    mov a12, a4
    BLOCK_BIAS a12, f0, f1, f2, f3
    mov a14, a3
    LOOPNEZ_ALIGNED nm_xt_dense_f32, a9, .Lone4_end
    lsi f8, a14, 0
    lsi f9, a14, 4
    lsi f10, a14, 8
    lsi f11, a14, 12
    BLOCK_INPUT a12, 0, f8, f0, f1, f2, f3
    BLOCK_INPUT a12, 16, f9, f0, f1, f2, f3
    BLOCK_INPUT a12, 32, f10, f0, f1, f2, f3
    BLOCK_INPUT a12, 48, f11, f0, f1, f2, f3
    addi a12, a12, 64
    addi a14, a14, 16
.Lone4_end:
    LOOPNEZ_ALIGNED nm_xt_dense_f32, a10, .Lone1_end
    lsi f8, a14, 0
    BLOCK_INPUT a12, 0, f8, f0, f1, f2, f3
    addi a12, a12, 16
    addi a14, a14, 4
.Lone1_end:
    beqz a7, .Lone_store
    wfr f8, a15
    RELU f0
    RELU f1
    RELU f2
    RELU f3
.Lone_store:
    ssi f0, a2, 0
    ssi f1, a2, 4
    ssi f2, a2, 8
    ssi f3, a2, 12
.Ldone:
    retw
    .size nm_xt_dense_f32, . - nm_xt_dense_f32

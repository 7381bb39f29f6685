/*
 * Cycle-model microbenchmarks: short instruction sequences whose cycle counts the
 * Cortex-M4 TRM states (and the Cortex-M7 model's pairing and latency rules).
 * Each sequence sits between two calls of nm_mark and is followed by an ISB (which
 * waits until the sequence's results are written), so the block around it is
 * [sequence, isb, bl nm_mark]; the first pair of marks brackets [isb, bl nm_mark]
 * alone, the baseline the host subtracts.
 * The host reads the marks in the order the BENCH lines below list them
 * (host/neuromotor/boards/cycles.py: MICROBENCHMARKS).
 */
    .syntax unified
    .thumb
    .text

    .macro BENCH
    isb
    bl nm_mark
    .endm

    .global nm_mark
    .type nm_mark, %function
    .thumb_func
nm_mark:
    bx lr

    .global Reset_Handler
    .type Reset_Handler, %function
    .thumb_func
Reset_Handler:
    ldr r0, =0xE000ED88          @ CPACR: enable the FPU
    ldr r1, [r0]
    orr r1, r1, #(0xf << 20)
    str r1, [r0]
    dsb
    isb
    ldr r0, =buf
    str r0, [r0]                 @ buf[0] holds its own address (dependent load)
    vmov.f32 s4, #1.0
    vmov.f32 s5, #1.0
    movs r2, #100
    movs r3, #7
    bl nm_mark
    BENCH                        @ baseline
@ alu_dep: 8 dependent ADDs
    add.w r1, r1, #1
    add.w r1, r1, #1
    add.w r1, r1, #1
    add.w r1, r1, #1
    add.w r1, r1, #1
    add.w r1, r1, #1
    add.w r1, r1, #1
    add.w r1, r1, #1
    BENCH
@ alu_indep: 8 independent ADDs
    add.w r1, r0, #1
    add.w r4, r0, #2
    add.w r5, r0, #3
    add.w r6, r0, #4
    add.w r7, r0, #5
    add.w r8, r0, #6
    add.w r9, r0, #7
    add.w r10, r0, #8
    BENCH
@ ldr3: three neighbouring loads
    ldr r1, [r0]
    ldr r4, [r0, #4]
    ldr r5, [r0, #8]
    BENCH
@ ldr_dep: the second address is the first load's result
    ldr r1, [r0]
    ldr r4, [r1, #4]
    BENCH
@ str_imm3: stores with immediate offsets
    str r1, [r0, #16]
    str r4, [r0, #20]
    str r5, [r0, #24]
    BENCH
@ ldm8
    ldm r0, {r1, r4, r5, r6, r7, r8, r9, r10}
    BENCH
@ push5 (+ pop to restore sp, measured together: 1+5 and 1+5)
    push {r4, r5, r6, r7, lr}
    pop {r4, r5, r6, r7, r12}
    BENCH
@ vldm8
    vldmia r0, {s8-s15}
    BENCH
@ vldr2: two neighbouring single-precision loads
    vldr s8, [r0]
    vldr s9, [r0, #4]
    BENCH
@ vfma_indep: 4 independent fused multiply-adds
    vfma.f32 s0, s4, s5
    vfma.f32 s1, s4, s5
    vfma.f32 s2, s4, s5
    vfma.f32 s3, s4, s5
    BENCH
@ vfma_chain: 4 multiply-adds into one accumulator
    vfma.f32 s0, s4, s5
    vfma.f32 s0, s4, s5
    vfma.f32 s0, s4, s5
    vfma.f32 s0, s4, s5
    BENCH
@ vmla_indep: 4 independent (chained) multiply-accumulates
    vmla.f32 s0, s4, s5
    vmla.f32 s1, s4, s5
    vmla.f32 s2, s4, s5
    vmla.f32 s3, s4, s5
    BENCH
@ vadd_indep: 4 independent adds
    vadd.f32 s0, s4, s5
    vadd.f32 s1, s4, s5
    vadd.f32 s2, s4, s5
    vadd.f32 s3, s4, s5
    BENCH
@ vdiv
    vdiv.f32 s0, s4, s5
    BENCH
@ mul_mla: MUL then an independent MLA
    mul r1, r2, r3
    mla r4, r2, r3, r5
    BENCH
@ sdiv
    sdiv r1, r2, r3
    BENCH
@ ldr_vfma: a load and a multiply-add (the M7 model does not pair VLDR with VFMA)
    vldr s8, [r0]
    vfma.f32 s0, s4, s5
    BENCH
@ b_taken: an unconditional branch
    b 1f
1:
    BENCH
@ bne_not_taken: compare and a forward branch that falls through
    movs r1, #0
    cmp r1, #0
    bne 2f
    BENCH
@ beq_taken: compare and a forward branch that is taken
    movs r1, #0
    cmp r1, #0
    beq 3f
    nop
3:
    BENCH
@ loop_aligned: a call of an 8-iteration multiply-add loop inside one 1 KiB page
    bl loop_a
    BENCH
@ loop_split: the same loop placed across a 1 KiB page boundary, where QEMU splits
@ its body into two translated blocks; the model must cost it the same
    bl loop_b
    BENCH
2:
    movs r0, #0x18               @ semihosting SYS_EXIT, ApplicationExit
    ldr r1, =0x20026
    bkpt 0xab
4:
    b 4b

    .ltorg

    .balign 1024
    .thumb_func
loop_a:
    movs r2, #8
5:
    vfma.f32 s0, s4, s5
    subs r2, #1
    bne 5b
    bx lr

    .balign 1024
    .space 1018                  @ loop_b's VFMA ends exactly at the next 1 KiB boundary
    .thumb_func
loop_b:
    movs r2, #8
6:
    vfma.f32 s0, s4, s5
    subs r2, #1
    bne 6b
    bx lr

    .section .isr_vector, "a"
    .word _estack
    .word Reset_Handler + 1
    .rept 14
    .word hang + 1
    .endr

    .text
    .thumb_func
hang:
    b hang

    .bss
    .balign 8
buf:
    .space 64

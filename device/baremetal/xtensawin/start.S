/* Reset, window-exception vectors and start-up of the bare-metal program on QEMU's sim
 * machine with the de233_fpu core (windowed registers, the ESP32's ABI). The core resets
 * at 0xfe000000 (its system ROM) with VECBASE at 0x2000 (its system RAM); xtensawin.ld
 * places the sections there. Plain assembly, no preprocessor: llvm-mc-22 reads it. */

    .section .reset, "ax"
    .global _reset
    .align 4
_reset:
    j 1f
    .align 4
.Lstart_addr:
    .long nm_crt0
1:
    l32r a0, .Lstart_addr
    jx a0

/* Window overflow and underflow handlers at VECBASE + 0x000 .. 0x140: the ISA's
 * save/restore of a frame's registers to the base save area below the stack pointer of
 * the frame that follows (and, for 8- and 12-register frames, the extra save area at the
 * top of the caller's frame, found through the caller's caller's stack pointer). */
    .section .vectors, "ax"
    .align 4
    .global _vectors
_vectors:
_WindowOverflow4:                  /* VECBASE + 0x000 */
    s32e a0, a5, -16
    s32e a1, a5, -12
    s32e a2, a5, -8
    s32e a3, a5, -4
    rfwo

    .org _vectors + 0x40
_WindowUnderflow4:
    l32e a0, a5, -16
    l32e a1, a5, -12
    l32e a2, a5, -8
    l32e a3, a5, -4
    rfwu

    .org _vectors + 0x80
_WindowOverflow8:
    s32e a0, a9, -16
    l32e a0, a1, -12
    s32e a1, a9, -12
    s32e a2, a9, -8
    s32e a3, a9, -4
    s32e a4, a0, -32
    s32e a5, a0, -28
    s32e a6, a0, -24
    s32e a7, a0, -20
    rfwo

    .org _vectors + 0xc0
_WindowUnderflow8:
    l32e a1, a9, -12
    l32e a0, a9, -16
    l32e a7, a1, -12
    l32e a2, a9, -8
    l32e a4, a7, -32
    l32e a3, a9, -4
    l32e a5, a7, -28
    l32e a6, a7, -24
    l32e a7, a7, -20
    rfwu

    .org _vectors + 0x100
_WindowOverflow12:
    s32e a0, a13, -16
    l32e a0, a1, -12
    s32e a1, a13, -12
    s32e a2, a13, -8
    s32e a3, a13, -4
    s32e a4, a0, -48
    s32e a5, a0, -44
    s32e a6, a0, -40
    s32e a7, a0, -36
    s32e a8, a0, -32
    s32e a9, a0, -28
    s32e a10, a0, -24
    s32e a11, a0, -20
    rfwo

    .org _vectors + 0x140
_WindowUnderflow12:
    l32e a1, a13, -12
    l32e a0, a13, -16
    l32e a11, a1, -12
    l32e a2, a13, -8
    l32e a4, a11, -48
    l32e a8, a11, -32
    l32e a3, a13, -4
    l32e a5, a11, -44
    l32e a6, a11, -40
    l32e a7, a11, -36
    l32e a9, a11, -28
    l32e a10, a11, -24
    l32e a11, a11, -20
    rfwu

/* Kernel and double exceptions: leave QEMU with status 3 (simcall exit). */
    .org _vectors + 0x300
_KernelException:
    movi a2, 1
    movi a3, 3
    .byte 0x00, 0x51, 0x00          /* simcall (LLVM 22 has no mnemonic for it) */
/* User exceptions: MOVSP's alloca exception (cause 5) is handled, any other ends the
 * program. clang moves the stack pointer with MOVSP around calls with arguments on the
 * stack; MOVSP raises the exception when the caller's registers are spilled (their
 * base save area would be left behind). The caller's frame is reloaded through the
 * window-underflow handler for its size (the window increment in the top bits of this
 * frame's a0), with PS.OWB set to this frame's window so that RFWU comes back here,
 * to the MOVSP, which then runs. */
    .org _vectors + 0x340
_UserException:
    wsr a0, excsave1
    rsr a0, exccause
    bnei a0, 5, .Lfatal
    /* the window base of this frame, in a0: after the rotation it is a4, and a0..a3
     * belong to the spilled caller */
    rsr a0, windowbase
    rotw -1
    rsr a2, ps
    /* PS.OWB (bits 8..11) becomes the window base of this frame */
    extui a3, a2, 8, 4
    xor a3, a3, a4
    slli a3, a3, 8
    xor a2, a2, a3
    wsr a2, ps
    rsync
    /* a0 of this frame back, with its window increment in bits 30..31 */
    rsr a4, excsave1
    bbsi a4, 31, 1f
    j _WindowUnderflow4             /* increment 1 (call4) */
1:  rotw -1                         /* a0 of this frame is now a8 */
    bbsi a8, 30, 2f
    j _WindowUnderflow8             /* increment 2 (call8) */
2:  rotw -1
    j _WindowUnderflow12            /* increment 3 (call12) */
.Lfatal:
    movi a2, 1
    movi a3, 3
    .byte 0x00, 0x51, 0x00          /* simcall (LLVM 22 has no mnemonic for it) */
    .org _vectors + 0x3c0
_DoubleException:
    movi a2, 1
    movi a3, 3
    .byte 0x00, 0x51, 0x00          /* simcall (LLVM 22 has no mnemonic for it) */

/* One window (WINDOWBASE 0, WINDOWSTART 1), the FPU (coprocessor 0) enabled, PS with
 * window overflow exceptions on (WOE) and user vector mode (UM), then nm_start through a
 * windowed call. */
    .section .text.nm_crt0, "ax"
    .align 4
.Lstack_top:
    .long _estack
.Lps:
    .long 0x00040020
.Lnm_start:
    .long nm_start
    .global nm_crt0
    .align 4
nm_crt0:
    movi a0, 0
    wsr a0, windowbase
    rsync
    movi a0, 1
    wsr a0, windowstart
    wsr a0, cpenable
    rsync
    l32r a1, .Lstack_top
    l32r a2, .Lps
    wsr a2, ps
    rsync
    movi a0, 0
    l32r a4, .Lnm_start
    callx4 a4
2:
    j 2b

/* Register-window support of the port: setjmp/longjmp for MicroPython's NLR
 * (MICROPY_NLR_SETJMP; the NLR of py/nlrxtensa.c is for the call0 ABI), the window
 * spill behind longjmp and the GC's root scan, code-cache sync and restart.
 * Plain assembly, no preprocessor: llvm-mc-22 reads it. */

    .text

/* int setjmp(jmp_buf env): called with call8/callx8 (clang, and the native emitter
 * through mp_fun_table), and runs without `entry`, in its caller's window: env is the
 * caller's a10, the return address its a8. The caller's a0..a7 (a8..a15 are the
 * callee's side of a call8) and the return address are what longjmp restores; the
 * frames above the caller are untouched until then. Returns 0 in the caller's a10. */
    .align 4
    .global setjmp
    .type setjmp, @function
setjmp:
    s32i a0, a10, 0
    s32i a1, a10, 4
    s32i a2, a10, 8
    s32i a3, a10, 12
    s32i a4, a10, 16
    s32i a5, a10, 20
    s32i a6, a10, 24
    s32i a7, a10, 28
    s32i a8, a10, 32
    movi a10, 0
    /* the top two bits of a windowed return address hold the window increment */
    slli a8, a8, 2
    srli a8, a8, 2
    jx a8

/* void longjmp(jmp_buf env, int val): every frame older than this one goes to its
 * stack save area (where the windowed return of setjmp's caller finds its callers,
 * by window underflow); this frame's registers then become setjmp's caller's, which
 * continues after the setjmp call with val (1 if 0) in a10.
 * The caller of setjmp's caller ("P") is found again through the 16 bytes below the
 * stack pointer of setjmp's caller. If that stack pointer has moved since setjmp
 * (MOVSP: clang's outgoing stack arguments), P's registers were spilled below the
 * moved one: they are copied to where the restored stack pointer expects them. The
 * moved pointer is found by walking the spilled frames up from here (each frame's
 * caller's stack pointer is the second word below its own) to the first frame whose
 * caller's stack pointer lies above the one setjmp recorded. */
    .align 4
.Lspill_addr:
    .long xtensa_spill_windows
    .global longjmp
    .type longjmp, @function
longjmp:
    entry a1, 32
    l32r a8, .Lspill_addr
    callx8 a8
    l32i a6, a2, 4                  /* stack pointer at setjmp */
    mov a4, a1
1:  addi a7, a4, -16
    l32i a5, a7, 4                  /* stack pointer of the caller of this frame */
    bltu a6, a5, 2f
    mov a4, a5
    j 1b
2:  beq a4, a6, 3f                  /* not moved */
    addi a6, a6, -16
    l32i a5, a7, 0
    s32i a5, a6, 0
    l32i a5, a7, 4
    s32i a5, a6, 4
    l32i a5, a7, 8
    s32i a5, a6, 8
    l32i a5, a7, 12
    s32i a5, a6, 12
3:  rsr a4, windowbase
    movi a5, 1
    ssl a4
    sll a5, a5
    wsr a5, windowstart
    rsync
    mov a9, a2
    movi a10, 1
    movnez a10, a3, a3
    l32i a8, a9, 32
    slli a8, a8, 2
    srli a8, a8, 2
    l32i a0, a9, 0
    l32i a1, a9, 4
    l32i a2, a9, 8
    l32i a3, a9, 12
    l32i a4, a9, 16
    l32i a5, a9, 20
    l32i a6, a9, 24
    l32i a7, a9, 28
    jx a8

/* void xtensa_spill_windows(void): a chain of call12s whose frames each touch their
 * a15 rotates through the whole register file (16 panes of 4 cover the ESP32's 64
 * physical registers; the de233_fpu has 32), so the window-overflow handlers write
 * out every older frame. On return only the caller's frame is in registers.
 * Frame sizes: a caller of call8 needs 32 bytes, of call12 48 (the extra save area
 * for its a4..a11 sits at the top of its frame). */
    .align 4
    .global xtensa_spill_windows
    .type xtensa_spill_windows, @function
xtensa_spill_windows:
    entry a1, 48
    movi a14, 5                     /* further call12 levels: the callee's a2 */
    call12 .Lspill
    retw

    .align 4
.Lspill:
    entry a1, 48
    mov a15, a15
    beqz a2, 1f
    addi a14, a2, -1
    call12 .Lspill
1:
    retw

/* void xtensa_sync_code(const void *buf, size_t len): write back the data cache and
 * invalidate the instruction cache over [buf, buf + len), 16 bytes at a time (no
 * more than a line). DHWB and IHI as bytes: LLVM 22's assembler has no mnemonics. */
    .align 4
    .global xtensa_sync_code
    .type xtensa_sync_code, @function
xtensa_sync_code:
    entry a1, 16
    add a3, a2, a3
    movi a4, -16
    and a2, a2, a4
1:
    bgeu a2, a3, 2f
    .byte 0x42, 0x72, 0x00          /* dhwb a2, 0 */
    .byte 0xe2, 0x72, 0x00          /* ihi a2, 0 */
    addi a2, a2, 16
    j 1b
2:
    dsync
    isync
    retw

/* void xtensa_sim_reset(void): back to the reset vector (start.S sets the windows
 * up afresh). */
    .align 4
.Lreset_addr:
    .long _reset
    .global xtensa_sim_reset
    .type xtensa_sim_reset, @function
xtensa_sim_reset:
    entry a1, 16
    l32r a2, .Lreset_addr
    jx a2

/* void xtensa_sim_exit(int code): QEMU exits with `code` (simcall 1). */
    .align 4
    .global xtensa_sim_exit
    .type xtensa_sim_exit, @function
xtensa_sim_exit:
    entry a1, 16
    mov a3, a2
    movi a2, 1
    .byte 0x00, 0x51, 0x00          /* simcall */
3:
    j 3b

    .section .note.GNU-stack, "", @progbits

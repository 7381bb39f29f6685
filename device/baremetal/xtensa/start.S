/* The lx106's reset vector on QEMU's sim machine is 0x50000000 (not the ELF entry):
 * xtensa.ld puts this section there. l32r reads literals at lower addresses only, so the
 * two literals sit between the jump and the code that loads them. */
    .section .reset, "ax"
    .global _reset
    .align 4
_reset:
    j 1f
    .align 4
.Lstack:
    .word _estack
.Lstart:
    .word nm_start
1:
    l32r a1, .Lstack
    l32r a0, .Lstart
    callx0 a0
2:
    j 2b

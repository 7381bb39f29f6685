/*
 * The Xtensa port of nm_policy_run.c on QEMU's sim machine, for both cores built here: the
 * lx106 (this folder, GCC) and the de233_fpu with the ESP32's windowed ABI (../xtensawin,
 * clang). Semihosting is the instruction set simulator's simcall: call number in a2,
 * arguments in a3.., result in a2 (1 = exit(status), 4 = write(fd, buffer, length)).
 */
#include <nm_port.h> // the port of the folder being built (-I), not this one

// The program's entry: the policy runner, or another bare-metal program (xtensawin/varargs.mk).
#ifndef NM_PROGRAM
#define NM_PROGRAM nm_policy_run
#endif
void NM_PROGRAM(void);
void nm_start(void);

// LLVM's assembler has no mnemonic for simcall: clang gets its bytes
#ifdef __clang__
#define NM_SIMCALL ".byte 0x00, 0x51, 0x00"
#else
#define NM_SIMCALL "simcall"
#endif

enum { SIM_EXIT = 1, SIM_WRITE = 4 };

static int simcall(int nr, int a, const void *b, size_t c) {
    register int a2 __asm__ ("a2") = nr;
    register int a3 __asm__ ("a3") = a;
    register const void *a4 __asm__ ("a4") = b;
    register size_t a5 __asm__ ("a5") = c;
    __asm__ volatile (NM_SIMCALL : "+r" (a2), "+r" (a3) : "r" (a4), "r" (a5) : "memory");
    return a2;
}

void nm_port_write(const char *s, size_t n) {
    simcall(SIM_WRITE, 1, s, n);
}

void nm_port_exit(int code) {
    simcall(SIM_EXIT, code, 0, 0);
    for (;;) {
    }
}

// Called by start.S with the stack (and on xtensawin the register window and FPU) set up:
// clear .bss, then run.
void nm_start(void) {
    extern uint32_t _sbss, _ebss;
    for (uint32_t *p = &_sbss; p < &_ebss; p++) {
        *p = 0;
    }
    NM_PROGRAM();
    nm_port_exit(2);
}

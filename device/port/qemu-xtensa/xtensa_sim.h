// The QEMU Xtensa sim machine as this port sees it: the simulator's simcall
// semihosting (console on QEMU's own stdin/stdout, exit) and the core's CCOUNT.
#ifndef NM_XTENSA_SIM_H
#define NM_XTENSA_SIM_H
#include <stddef.h>
#include <stdint.h>

// Call numbers: a2 = number, a3.. = arguments, result in a2 (errno in a3).
enum {
    XTENSA_SIM_EXIT = 1,
    XTENSA_SIM_READ = 3,
    XTENSA_SIM_WRITE = 4,
    XTENSA_SIM_SELECT_ONE = 29,
};
enum { XTENSA_SIM_SELECT_READ = 1 };

static inline int xtensa_simcall(int nr, int a, int b, int c) {
    register int a2 __asm__ ("a2") = nr;
    register int a3 __asm__ ("a3") = a;
    register int a4 __asm__ ("a4") = b;
    register int a5 __asm__ ("a5") = c;
    // simcall, as bytes: LLVM 22's assembler has no mnemonic for it
    __asm__ volatile (".byte 0x00, 0x51, 0x00" : "+r" (a2), "+r" (a3) : "r" (a4), "r" (a5) : "memory");
    return a2;
}

// Under -icount shift=0 CCOUNT counts the sim core's 40 MHz clock: one tick per 25
// instructions (1 ns each).
#define XTENSA_SIM_CCOUNT_HZ (40000000u)

static inline uint32_t xtensa_ccount(void) {
    uint32_t v;
    __asm__ volatile ("rsr %0, ccount" : "=r" (v) :: "memory");
    return v;
}

// Console input: fd 0 is QEMU's stdin (the host pty neuromotor gives it). Not a
// chardev (-serial): QEMU 7.2's sim console loses and repeats input bytes there.
static inline int xtensa_sim_rx_ready(void) {
    static const uint32_t no_wait[2] = {0, 0};
    return xtensa_simcall(XTENSA_SIM_SELECT_ONE, 0, XTENSA_SIM_SELECT_READ, (int)(uintptr_t)no_wait) > 0;
}

static inline int xtensa_sim_rx_read(void) {
    uint8_t c;
    return xtensa_simcall(XTENSA_SIM_READ, 0, (int)(uintptr_t)&c, 1) == 1 ? c : -1;
}

// Blocks the core inside QEMU (a host select on its stdin) until console input
// arrives or 10 ms of host time pass: an unbounded wait would hold QEMU's vCPU
// thread in the select, and QEMU could then neither reset nor quit.
static inline void xtensa_sim_rx_wait(void) {
    static const uint32_t ten_ms[2] = {0, 10000};
    xtensa_simcall(XTENSA_SIM_SELECT_ONE, 0, XTENSA_SIM_SELECT_READ, (int)(uintptr_t)ten_ms);
}

static inline void xtensa_sim_write(const char *s, size_t n) {
    xtensa_simcall(XTENSA_SIM_WRITE, 1, (int)(uintptr_t)s, (int)n);
}

__attribute__((noreturn)) void xtensa_sim_exit(int code);
// Restart from the reset vector: .data is copied afresh, .bss cleared; RAM above
// the firmware (the filesystem) is kept.
__attribute__((noreturn)) void xtensa_sim_reset(void);
// Every register window but the caller's is written to its stack save area.
void xtensa_spill_windows(void);
// Make `len` bytes of freshly written code at `buf` visible to instruction fetch.
void xtensa_sync_code(const void *buf, size_t len);
#endif

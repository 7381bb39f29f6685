/*
 * The armv6m port of ../xtensa/nm_policy_run.c: QEMU's microbit machine (nRF51, a
 * Cortex-M0 with 256 KB flash at 0 and 16 KB RAM at 0x20000000). The policy's arrays are
 * const, so they stay in flash as on a real board; ARM semihosting (BKPT 0xAB) carries
 * the output and the exit status.
 */
#include "nm_port.h"

void nm_policy_run(void);

static int semihost(int op, const void *arg) {
    register int r0 __asm__ ("r0") = op;
    register const void *r1 __asm__ ("r1") = arg;
    __asm__ volatile ("bkpt 0xab" : "+r" (r0) : "r" (r1) : "memory");
    return r0;
}

void nm_port_write(const char *s, size_t n) {
    static char z[129]; // SYS_WRITE0 prints up to a NUL
    while (n) {
        size_t k = n < sizeof(z) - 1 ? n : sizeof(z) - 1;
        for (size_t i = 0; i < k; i++) {
            z[i] = s[i];
        }
        z[k] = 0;
        semihost(0x04, z);
        s += k;
        n -= k;
    }
}

// SYS_EXIT; on M-profile r1 is the reason itself: ApplicationExit (QEMU exits with 0) or
// RunTimeErrorUnknown (QEMU exits with 1).
void nm_port_exit(int code) {
    semihost(0x18, (void *)(code == 0 ? 0x20026 : 0x20023));
    for (;;) {
    }
}

extern uint32_t _estack, _sidata, _sdata, _edata, _sbss, _ebss;

void Reset_Handler(void) {
    for (uint32_t *s = &_sidata, *d = &_sdata; d < &_edata;) {
        *d++ = *s++;
    }
    for (uint32_t *d = &_sbss; d < &_ebss;) {
        *d++ = 0;
    }
    nm_policy_run();
    nm_port_exit(2);
}

static void Fault_Handler(void) {
    static const char msg[] = "{\"error\": \"fault\"}\n";
    nm_port_write(msg, sizeof(msg) - 1);
    nm_port_exit(3);
}

const uint32_t isr_vector[16] __attribute__((section(".isr_vector"), used)) = {
    (uint32_t)&_estack, (uint32_t)&Reset_Handler, (uint32_t)&Fault_Handler, (uint32_t)&Fault_Handler,
};

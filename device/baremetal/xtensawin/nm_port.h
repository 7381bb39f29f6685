/* The xtensawin (ESP32's windowed ABI) port of nm_policy_run.c on QEMU's sim machine with
 * the de233_fpu core: console and exit through the simulator's simcall semihosting, time
 * from CCOUNT. */
#ifndef NM_PORT_H
#define NM_PORT_H
#include <stddef.h>
#include <stdint.h>

#define NM_PORT_ARCH "xtensawin"
// CCOUNT ticks once per 25 instructions under -icount shift=0 (the sim core's 40 MHz
// clock, 1 ns per instruction): 20000 calibration instructions are 800 ticks.
#define NM_CALIB_INSNS 20000
#define NM_STR_(x) #x
#define NM_STR(x) NM_STR_(x)

void nm_port_write(const char *s, size_t n);
__attribute__((noreturn)) void nm_port_exit(int code);

static inline uint32_t nm_port_ticks(void) {
    uint32_t v;
    __asm__ volatile ("rsr %0, ccount" : "=r" (v) :: "memory");
    return v;
}
#endif

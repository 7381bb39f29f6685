/* What the two Xtensa ports of nm_policy_run.c on QEMU's sim machine (xtensa, xtensawin)
 * share besides nm_port_common.h: time from CCOUNT. */
#ifndef NM_CCOUNT_H
#define NM_CCOUNT_H
#include "../nm_port_common.h"

// CCOUNT ticks once per 25 instructions under -icount shift=0 (the sim core's 40 MHz
// clock, 1 ns per instruction): 20000 calibration instructions are 800 ticks.
#define NM_CALIB_INSNS 20000

static inline uint32_t nm_port_ticks(void) {
    uint32_t v;
    __asm__ volatile ("rsr %0, ccount" : "=r" (v) :: "memory");
    return v;
}
#endif

/* The armv6m (Cortex-M0/M0+) port of ../xtensa/nm_policy_run.c on QEMU's microbit
 * machine: console and exit through ARM semihosting. The machine has no clock worth
 * timing with: the host counts instructions with the cycle-model plugin's marks. */
#ifndef NM_PORT_H
#define NM_PORT_H
#include "../nm_port_common.h"

#define NM_PORT_ARCH "armv6m"
#define NM_CALIB_INSNS 0

static inline uint32_t nm_port_ticks(void) {
    return 0;
}
#endif

/* The armv6m (Cortex-M0/M0+) port of ../xtensa/nm_policy_run.c on QEMU's microbit
 * machine: console and exit through ARM semihosting. The machine has no clock worth
 * timing with: the host counts instructions with the cycle-model plugin's marks. */
#ifndef NM_PORT_H
#define NM_PORT_H
#include <stddef.h>
#include <stdint.h>

#define NM_PORT_ARCH "armv6m"
#define NM_CALIB_INSNS 0
#define NM_STR_(x) #x
#define NM_STR(x) NM_STR_(x)

void nm_port_write(const char *s, size_t n);
__attribute__((noreturn)) void nm_port_exit(int code);

static inline uint32_t nm_port_ticks(void) {
    return 0;
}
#endif

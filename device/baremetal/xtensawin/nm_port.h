/* The xtensawin (ESP32's windowed ABI) port of nm_policy_run.c on QEMU's sim machine with
 * the de233_fpu core: console and exit through the simulator's simcall semihosting, time
 * from CCOUNT. */
#ifndef NM_PORT_H
#define NM_PORT_H
#include "../xtensa/nm_ccount.h"

#define NM_PORT_ARCH "xtensawin"
#endif

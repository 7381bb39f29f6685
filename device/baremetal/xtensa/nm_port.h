/* The xtensa (ESP8266 LX106) port of nm_policy_run.c on QEMU's sim machine: console
 * and exit through the simulator's simcall semihosting, time from CCOUNT. */
#ifndef NM_PORT_H
#define NM_PORT_H
#include "nm_ccount.h"

#define NM_PORT_ARCH "xtensa"
#endif

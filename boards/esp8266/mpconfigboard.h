// neuromotor custom firmware for ESP8266 modules: the stock ESP8266_GENERIC board with
// neuromotor's kernels built in and device/lib frozen (see README.md).
#include "boards/ESP8266_GENERIC/mpconfigboard.h"

#undef MICROPY_HW_BOARD_NAME
#define MICROPY_HW_BOARD_NAME "ESP8266 + neuromotor"

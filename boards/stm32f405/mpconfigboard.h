// neuromotor custom firmware for STM32F405 boards: the stock PYBV11 board with
// neuromotor's kernels built in and device/lib frozen (see README.md).
#include "boards/PYBV11/mpconfigboard.h"

#undef MICROPY_HW_BOARD_NAME
#define MICROPY_HW_BOARD_NAME "PYBv1.1 + neuromotor"

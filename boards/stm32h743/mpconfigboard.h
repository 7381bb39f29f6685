// neuromotor custom firmware for STM32H743 boards: the stock NUCLEO_H743ZI2 board
// with neuromotor's kernels built in and device/lib frozen (see README.md).
#include "boards/NUCLEO_H743ZI2/mpconfigboard.h"

#undef MICROPY_HW_BOARD_NAME
#define MICROPY_HW_BOARD_NAME "NUCLEO_H743ZI2 + neuromotor"

// neuromotor custom firmware for the Teensy 4.1: the stock TEENSY41 board with
// neuromotor's kernels built in and device/lib frozen (see README.md).
#include "ports/mimxrt/boards/TEENSY41/mpconfigboard.h"

#undef MICROPY_HW_BOARD_NAME
#define MICROPY_HW_BOARD_NAME "Teensy 4.1 + neuromotor"

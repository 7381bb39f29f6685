// The early init (power, clocks) the stock NUCLEO_H743ZI board configuration names
// in MICROPY_BOARD_EARLY_INIT; ports/stm32 compiles every .c in BOARD_DIR.
#include "boards/NUCLEO_H743ZI/board_init.c"

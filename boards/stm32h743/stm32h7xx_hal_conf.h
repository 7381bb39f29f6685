// The HAL configuration of the stock NUCLEO_H743ZI board (looked up in BOARD_DIR).
#include "boards/NUCLEO_H743ZI/stm32h7xx_hal_conf.h"

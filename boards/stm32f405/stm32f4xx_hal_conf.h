// The HAL configuration of the stock PYBV11 board (looked up in BOARD_DIR).
#include "boards/PYBV11/stm32f4xx_hal_conf.h"

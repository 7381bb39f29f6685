// neuromotor custom firmware for ESP32-C3 modules (see README.md).
#define MICROPY_HW_BOARD_NAME "ESP32C3 + neuromotor"
#define MICROPY_HW_MCU_NAME "ESP32C3"

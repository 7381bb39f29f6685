// neuromotor custom firmware for ESP32-S3 modules (see README.md).
#define MICROPY_HW_BOARD_NAME "ESP32-S3 + neuromotor"
#define MICROPY_HW_MCU_NAME "ESP32S3"
// The REPL also on the UART, for modules wired through a USB-UART bridge.
#define MICROPY_HW_ENABLE_UART_REPL (1)

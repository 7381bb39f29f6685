# neuromotor custom firmware for ESP32-C3 modules: the ESP32_GENERIC_C3 configuration
# (REPL on the USB Serial/JTAG) with device/lib frozen. Our kernels (and ulab) come in
# through USER_C_MODULES=usermods.cmake.
set(IDF_TARGET esp32c3)

set(SDKCONFIG_DEFAULTS
    boards/sdkconfig.base
    boards/sdkconfig.ble
    boards/ESP32_GENERIC_C3/sdkconfig.c3usb
)

set(MICROPY_FROZEN_MANIFEST ${MICROPY_BOARD_DIR}/manifest.py)

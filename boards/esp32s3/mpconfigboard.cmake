# neuromotor custom firmware for ESP32-S3 modules: the ESP32_GENERIC_S3 configuration (REPL
# on the native USB, PSRAM used when the module has it) with device/lib frozen. Our kernels
# (and ulab) come in through USER_C_MODULES=usermods.cmake.
set(IDF_TARGET esp32s3)

set(SDKCONFIG_DEFAULTS
    boards/sdkconfig.base
    boards/sdkconfig.usb
    boards/sdkconfig.ble
    boards/sdkconfig.spiram_sx
    boards/ESP32_GENERIC_S3/sdkconfig.board
)

set(MICROPY_FROZEN_MANIFEST ${MICROPY_BOARD_DIR}/manifest.py)

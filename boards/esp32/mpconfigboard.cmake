# neuromotor custom firmware for ESP32 modules: the ESP32_GENERIC configuration with
# device/lib frozen. Our kernels (and ulab) come in through USER_C_MODULES=usermods.cmake.
set(IDF_TARGET esp32)

set(SDKCONFIG_DEFAULTS
    boards/sdkconfig.base
    boards/sdkconfig.ble
)

set(MICROPY_FROZEN_MANIFEST ${MICROPY_BOARD_DIR}/manifest.py)

# neuromotor custom firmware for STM32F405 boards (pyboard v1.1 hardware).
#   make -C ports/stm32 BOARD_DIR=<repo>/boards/stm32f405 [USER_C_MODULES=<dir>] -j2
# Everything about the chip comes from the stock PYBV11 board; we change the frozen
# manifest and add our kernels as a user C module.

NEUROMOTOR_REPO := $(abspath $(BOARD_DIR)/../..)

FROZEN_MANIFEST ?= $(BOARD_DIR)/manifest.py

# Our kernels (device/native/usermod). For ulab too, pass a directory holding both:
#   mkdir usermods && ln -s <repo>/device/native/usermod usermods/neuromotor \
#     && ln -s <micropython-ulab>/code usermods/ulab
#   make ... USER_C_MODULES=$PWD/usermods
USER_C_MODULES ?= $(NEUROMOTOR_REPO)/device/native

include boards/PYBV11/mpconfigboard.mk

# The stock pin table (ports/stm32 reads $(BOARD_DIR)/pins.csv otherwise).
override BOARD_PINS := boards/PYBV11/pins.csv

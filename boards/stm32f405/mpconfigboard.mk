# neuromotor custom firmware for STM32F405 boards (pyboard v1.1 hardware).
#   make -C ports/stm32 BOARD_DIR=<repo>/boards/stm32f405 [USER_C_MODULES=<dir>] -j2
# Everything about the chip comes from the stock PYBV11 board; we change the frozen
# manifest and add our kernels as a user C module.

NEUROMOTOR_REPO := $(abspath $(BOARD_DIR)/../..)

FROZEN_MANIFEST ?= $(BOARD_DIR)/manifest.py

# Our native modules (device/native/nm_kernels, nm_train). For ulab too, pass a
# directory holding all three:
#   mkdir usermods && ln -s <repo>/device/native/nm_kernels <repo>/device/native/nm_train usermods/ \
#     && ln -s <micropython-ulab>/code usermods/ulab
#   make ... USER_C_MODULES=$PWD/usermods
USER_C_MODULES ?= $(NEUROMOTOR_REPO)/device/native

include boards/PYBV11/mpconfigboard.mk

# The stock pin table (ports/stm32 reads $(BOARD_DIR)/pins.csv otherwise).
override BOARD_PINS := boards/PYBV11/pins.csv

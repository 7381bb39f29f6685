# neuromotor custom firmware for STM32H743 boards (Nucleo-H743ZI2 hardware).
#   make -C ports/stm32 BOARD_DIR=<repo>/boards/stm32h743 [USER_C_MODULES=<dir>] -j2
# Everything about the chip comes from the stock NUCLEO_H743ZI2 board; we change the
# frozen manifest and add our kernels as a user C module.

NEUROMOTOR_REPO := $(abspath $(BOARD_DIR)/../..)

FROZEN_MANIFEST ?= $(BOARD_DIR)/manifest.py

# Our native modules (device/native/nm_kernels, nm_train). For ulab too, pass a
# directory holding all three:
#   mkdir usermods && ln -s <repo>/device/native/nm_kernels <repo>/device/native/nm_train usermods/ \
#     && ln -s <micropython-ulab>/code usermods/ulab
#   make ... USER_C_MODULES=$PWD/usermods
USER_C_MODULES ?= $(NEUROMOTOR_REPO)/device/native

include boards/NUCLEO_H743ZI2/mpconfigboard.mk

override BOARD_PINS := boards/NUCLEO_H743ZI2/pins.csv

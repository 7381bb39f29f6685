# neuromotor custom firmware for the Teensy 4.1.
#   make -C ports/mimxrt BOARD_DIR=<repo>/boards/teensy41 [USER_C_MODULES=<dir>] -j2
# Everything about the chip comes from the stock TEENSY41 board; we change the frozen
# manifest and add our kernels as a user C module.

NEUROMOTOR_REPO := $(abspath $(BOARD_DIR)/../..)

FROZEN_MANIFEST ?= $(BOARD_DIR)/manifest.py

# Our native modules (device/native/nm_kernels, nm_train). For ulab too, pass a
# directory holding all three:
#   mkdir usermods && ln -s <repo>/device/native/nm_kernels <repo>/device/native/nm_train usermods/ \
#     && ln -s <micropython-ulab>/code usermods/ulab
#   make ... USER_C_MODULES=$PWD/usermods
USER_C_MODULES ?= $(NEUROMOTOR_REPO)/device/native

include boards/TEENSY41/mpconfigboard.mk

override BOARD_PINS := boards/TEENSY41/pins.csv

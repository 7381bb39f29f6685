# neuromotor custom firmware for ESP8266 modules with 2 MiB or more flash.
#   make -C ports/esp8266 BOARD_DIR=<repo>/boards/esp8266 [USER_C_MODULES=<dir>] -j2
# Everything about the chip comes from the stock ESP8266_GENERIC board (its default
# 2 MiB variant); we change the frozen manifest and add our kernels as a user C module.

NEUROMOTOR_REPO := $(abspath $(BOARD_DIR)/../..)

FROZEN_MANIFEST ?= $(BOARD_DIR)/manifest.py

# Our native modules (device/native/nm_kernels, nm_train). For ulab too, pass a
# directory holding all three:
#   mkdir usermods && ln -s <repo>/device/native/nm_kernels <repo>/device/native/nm_train usermods/ \
#     && ln -s <micropython-ulab>/code usermods/ulab
#   make ... USER_C_MODULES=$PWD/usermods
USER_C_MODULES ?= $(NEUROMOTOR_REPO)/device/native

include boards/ESP8266_GENERIC/mpconfigvariant.mk

# nm_train as a user C module for make-based ports (unix, qemu, stm32, mimxrt).
NM_TRAIN_DIR := $(USERMOD_DIR)
# realpath: USERMOD_DIR may be a symlink (a directory that also holds ulab).
NM_TRAIN_NATIVE_DIR := $(realpath $(USERMOD_DIR)/..)

SRC_USERMOD_C += $(NM_TRAIN_DIR)/nm_train.c
CFLAGS_USERMOD += -I$(NM_TRAIN_NATIVE_DIR) -I$(NM_TRAIN_NATIVE_DIR)/include -ffp-contract=off

# -O2 in every home (micropython.cmake and the natmod Makefile beside this file):
# the matrix tiles are -O2 anyway (NM_HOT in nm_gemm.h), the rest is elementwise.
# Object path as py/py.mk derives it from USER_C_MODULES.
$(BUILD)/$(patsubst $(USER_C_MODULES)/%,%,$(NM_TRAIN_DIR))/nm_train.o: CFLAGS += -O2

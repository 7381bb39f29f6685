# nm_kernels as a user C module for make-based ports (unix, qemu, stm32, mimxrt).
NM_KERNELS_DIR := $(USERMOD_DIR)
# realpath: USERMOD_DIR may be a symlink (a directory that also holds ulab).
NM_NATIVE_DIR := $(realpath $(USERMOD_DIR)/..)

SRC_USERMOD_C += $(NM_KERNELS_DIR)/nm_kernels.c
CFLAGS_USERMOD += -I$(NM_NATIVE_DIR) -I$(NM_NATIVE_DIR)/include -ffp-contract=off

# Ports build with -Os; the kernels want -O3: GCC keeps the block accumulators in
# s-registers there (13->64->64->4 on the Cortex-M7: -Os 6.4, -O2 6.2, -O3 2.7
# instructions per multiply-add). The same level in every home: micropython.cmake
# and the natmod Makefile beside this file, and device/baremetal.
# Object path as py/py.mk derives it from USER_C_MODULES.
$(BUILD)/$(patsubst $(USER_C_MODULES)/%,%,$(NM_KERNELS_DIR))/nm_kernels.o: CFLAGS += -O3

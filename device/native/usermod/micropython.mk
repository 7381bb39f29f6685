# neuromotor kernels as a user C module for make-based ports.
NM_USERMOD_DIR := $(USERMOD_DIR)
# realpath: USERMOD_DIR may be a symlink (unix.mk links us beside ulab).
NM_NATIVE_DIR := $(realpath $(USERMOD_DIR)/..)

SRC_USERMOD_C += $(NM_USERMOD_DIR)/nm_module.c
CFLAGS_USERMOD += -I$(NM_NATIVE_DIR) -I$(NM_NATIVE_DIR)/include -ffp-contract=off

# The bindings live in headers: regenerate qstrs when they change.
QSTR_GLOBAL_DEPENDENCIES += $(NM_NATIVE_DIR)/nm_glue.h $(NM_NATIVE_DIR)/include/nm_kernels.h

# Ports build with -Os; the kernels want -O3: GCC keeps the block accumulators in
# s-registers there (13->64->64->4 on the Cortex-M7: -Os 6.4, -O2 6.2, -O3 2.7
# instructions per multiply-add). The one place the user C module's level is set
# (micropython.cmake mirrors it; the natmod Makefile and device/baremetal use the
# same level).
# Object path as py/py.mk derives it from USER_C_MODULES.
$(BUILD)/$(patsubst $(USER_C_MODULES)/%,%,$(NM_USERMOD_DIR))/nm_module.o: CFLAGS += -O3

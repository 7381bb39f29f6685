# neuromotor kernels as a user C module for make-based ports.
NM_USERMOD_DIR := $(USERMOD_DIR)
# realpath: USERMOD_DIR may be a symlink (unix.mk links us beside ulab).
NM_NATIVE_DIR := $(realpath $(USERMOD_DIR)/..)

SRC_USERMOD_C += $(NM_USERMOD_DIR)/nm_module.c
CFLAGS_USERMOD += -I$(NM_NATIVE_DIR) -ffp-contract=off

# The bindings live in headers: regenerate qstrs when they change.
QSTR_GLOBAL_DEPENDENCIES += $(NM_NATIVE_DIR)/nm_glue.h $(NM_NATIVE_DIR)/nm_kernels.h

# Ports build with -Os; the kernels want -O2 (loop scheduling, no spills).
# Object path as py/py.mk derives it from USER_C_MODULES.
$(BUILD)/$(patsubst $(USER_C_MODULES)/%,%,$(NM_USERMOD_DIR))/nm_module.o: CFLAGS += -O2

# neuromotor training kernels (nm_train) as a user C module for make-based ports.
NMT_DIR := $(USERMOD_DIR)
NMT_NATIVE_DIR := $(abspath $(USERMOD_DIR)/..)

SRC_USERMOD_C += $(NMT_DIR)/nm_train_module.c
CFLAGS_USERMOD += -I$(NMT_NATIVE_DIR) -I$(NMT_NATIVE_DIR)/include -I$(NMT_DIR)

QSTR_GLOBAL_DEPENDENCIES += $(NMT_DIR)/nm_train_glue.h $(wildcard $(NMT_NATIVE_DIR)/include/*.h)

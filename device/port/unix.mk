# MicroPython unix port with neuromotor's kernels built in (user C module
# device/native) and device/lib frozen in. Optional: ULAB_DIR=<ulab checkout>
# adds ulab as a second user C module.
#
#   make -C device/port firmware BOARD=unix [ULAB_DIR=...]
#
# Everything is built under $(NEUROMOTOR_CACHE); the build directory is keyed
# on a hash of the configuration (make variables, this file, the manifest and
# the module's micropython.mk), so a configuration change gets a fresh build
# dir while source edits rebuild incrementally (the module's headers are qstr
# dependencies; frozen code is regenerated on every build).
# The last line printed is the path of the built micropython binary.

include $(dir $(lastword $(MAKEFILE_LIST)))port_common.mk
# Quiet sub-makes (ports/unix); the path is the last line this file prints.
MAKEFLAGS += --no-print-directory
LIB_DIR := $(REPO)/device/lib

ifneq ($(ULAB_DIR),)
ULAB_CODE := $(if $(wildcard $(ULAB_DIR)/code/micropython.mk),$(abspath $(ULAB_DIR)/code),$(abspath $(ULAB_DIR)))
ifeq ($(wildcard $(ULAB_CODE)/micropython.mk),)
$(error ULAB_DIR=$(ULAB_DIR) has no micropython.mk (expected a micropython-ulab checkout))
endif
FLAVOR := unix-ulab
else
FLAVOR := unix
endif

MP_VARS := MICROPY_PY_BTREE=0 MICROPY_PY_SSL=0 FROZEN_MANIFEST=$(PORT_DIR)/unix_manifest.py
# Every user C module in device/native (one folder each with a micropython.mk).
NATIVE_MODS := $(patsubst %/micropython.mk,%,$(wildcard $(NATIVE_DIR)/*/micropython.mk))
CONFIG_FILES := $(PORT_DIR)/unix.mk $(PORT_DIR)/unix_manifest.py $(addsuffix /micropython.mk,$(NATIVE_MODS))
KEY := $(shell { echo "$(MPY_SRC) $(MP_VARS) $(ULAB_CODE) $(CFLAGS_EXTRA)"; cat $(CONFIG_FILES); } \
	| sha256sum | cut -c1-12)
BUILD_DIR := $(NEUROMOTOR_CACHE)/build/$(FLAVOR)-$(KEY)
BIN_LINK := $(NEUROMOTOR_CACHE)/bin/micropython$(if $(ULAB_DIR),-ulab,)

ifneq ($(ULAB_DIR),)
USERMODS := $(NEUROMOTOR_CACHE)/usermods-$(KEY)
else
USERMODS := $(NATIVE_DIR)
endif

MP_VARS += $(MPY_CROSS_VAR)

.PHONY: all firmware path
all firmware:
	@mkdir -p $(dir $(BIN_LINK)) $(NEUROMOTOR_CACHE)/build
	$(make_empty_lib)
ifneq ($(ULAB_DIR),)
	@mkdir -p $(USERMODS) && ln -sfn $(ULAB_CODE) $(USERMODS)/ulab
	@for m in $(NATIVE_MODS); do ln -sfn $$m $(USERMODS)/$$(basename $$m); done
endif
	$(MAKE) -C $(MPY_SRC)/ports/unix -j$(JOBS) BUILD=$(BUILD_DIR) USER_C_MODULES=$(USERMODS) \
		MPY_LIB_DIR=$(EMPTY_LIB) $(MP_VARS) $(if $(CFLAGS_EXTRA),CFLAGS_EXTRA="$(CFLAGS_EXTRA)")
	@ln -sfn $(BUILD_DIR)/micropython $(BIN_LINK)
	@find $(NEUROMOTOR_CACHE)/build -maxdepth 1 -regextype posix-extended \
		-regex '.*/$(FLAVOR)-[0-9a-f]{12}' ! -name '$(FLAVOR)-$(KEY)' -exec rm -rf {} + # stale configs
	@echo "built: $(BIN_LINK) -> $(BUILD_DIR)/micropython"
	@echo $(BUILD_DIR)/micropython

path:
	@echo $(BUILD_DIR)/micropython

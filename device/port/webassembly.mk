# The browser board: MicroPython ports/webassembly built by Debian's emscripten, with
# neuromotor's native modules as user C modules and device/lib frozen in; the port
# variant is boards/browser/ (no ASYNCIFY, a heap that grows: see its mpconfigvariant.h).
#
#   make -C device/port firmware BOARD=browser
#
# Everything is built under $(NEUROMOTOR_CACHE). The build directory is keyed on a
# hash of the configuration (make variables, the compiler's version, this file, the
# variant's files, the user modules' micropython.mk), so a configuration change gets a
# fresh build dir while source edits rebuild incrementally.
# $(NEUROMOTOR_CACHE)/firmware/browser links to the directory that holds
# micropython.mjs and micropython.wasm (what `neuromotor serve-web` serves).
# The last line printed is the path of micropython.mjs.

include $(dir $(lastword $(MAKEFILE_LIST)))port_common.mk
MAKEFLAGS += --no-print-directory
VARIANT_DIR := $(REPO)/boards/browser

ifeq ($(shell command -v emcc),)
$(error emcc not found: install Debian's emscripten (device/port/setup_system.sh))
endif

NATIVE_MK := $(wildcard $(NATIVE_DIR)/*/micropython.mk)
CONFIG_FILES := $(PORT_DIR)/webassembly.mk $(wildcard $(VARIANT_DIR)/*.mk $(VARIANT_DIR)/*.h \
	$(VARIANT_DIR)/manifest.py) $(NATIVE_MK)
EMCC_VERSION := $(shell emcc --version 2>/dev/null | head -1)
KEY := $(shell { echo "$(MPY_SRC) $(EMCC_VERSION) $(CFLAGS_EXTRA)"; cat $(CONFIG_FILES); } \
	| sha256sum | cut -c1-12)
BUILD_DIR := $(NEUROMOTOR_CACHE)/build/browser-$(KEY)
OUT_LINK := $(NEUROMOTOR_CACHE)/firmware/browser

MP_VARS := VARIANT_DIR=$(VARIANT_DIR) BUILD=$(BUILD_DIR) USER_C_MODULES=$(NATIVE_DIR) \
	MPY_LIB_DIR=$(EMPTY_LIB)
MP_VARS += $(MPY_CROSS_VAR)

.PHONY: all firmware path
all firmware:
	@mkdir -p $(dir $(OUT_LINK)) $(NEUROMOTOR_CACHE)/build
	$(make_empty_lib)
	$(MAKE) -C $(MPY_SRC)/ports/webassembly -j$(JOBS) $(MP_VARS) $(if $(CFLAGS_EXTRA),CFLAGS_EXTRA="$(CFLAGS_EXTRA)")
	@ln -sfn $(BUILD_DIR) $(OUT_LINK)
	$(call drop_old_builds,browser)
	@echo "built: $(OUT_LINK) -> $(BUILD_DIR)"
	@echo $(BUILD_DIR)/micropython.mjs

path:
	@echo $(BUILD_DIR)/micropython.mjs

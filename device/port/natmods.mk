# Dynamic native modules (.mpy) of neuromotor's kernels, one per architecture:
#   make -C device/port natmods      (x64 armv6m armv7m armv7emsp armv7emdp rv32imc xtensa xtensawin)
#   make -C device/port -f natmods.mk ARCHS="x64 armv7emsp"
# Output: $(NEUROMOTOR_CACHE)/natmods/<arch>/<module>_natmod.mpy for each module folder in
# device/native (nm_kernels, nm_train), built by that folder's Makefile; and a mip package
# index of them and of device/lib (mpy-cross) in $(NEUROMOTOR_CACHE)/mip (neuromotor.boards.mip).
# Architectures build in parallel (make -j2); an arch rebuilds from scratch when
# any kernel source changes (dynruntime.mk does not track headers).

NEUROMOTOR_CACHE ?= $(HOME)/.cache/neuromotor
PORT_DIR := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
REPO := $(abspath $(PORT_DIR)/../..)
NATIVE_DIR := $(REPO)/device/native
OUT := $(NEUROMOTOR_CACHE)/natmods
MODULES := nm_kernels nm_train
PYTHON := $(firstword $(wildcard $(REPO)/.venv/bin/python) python3)

MPY_SRC := $(shell $(PORT_DIR)/fetch_micropython.sh)
ifeq ($(MPY_SRC),)
$(error fetching MicroPython failed (device/port/fetch_micropython.sh))
endif

ARCHS ?= x64 armv6m armv7m armv7emsp armv7emdp rv32imc xtensa xtensawin
ARCHS := $(sort $(ARCHS))

cross_x64 :=
cross_armv6m := arm-none-eabi-
cross_armv7m := arm-none-eabi-
cross_armv7emsp := arm-none-eabi-
cross_armv7emdp := arm-none-eabi-
cross_rv32imc := riscv64-unknown-elf-
cross_xtensa := xtensa-lx106-elf-
cross_xtensawin := $(PORT_DIR)/xtensawin/xtensawin-

# What every module shares; each module adds its own folder.
SHARED := $(wildcard $(NATIVE_DIR)/include/*.h) $(NATIVE_DIR)/nm_args.h $(NATIVE_DIR)/natmod.mk

.PHONY: all natmods
MIP_INDEX := $(NEUROMOTOR_CACHE)/mip

all natmods: $(foreach m,$(MODULES),$(foreach a,$(ARCHS),$(OUT)/$(a)/$(m)_natmod.mpy))
	@echo "natmods in $(OUT): $(ARCHS)"
	@$(PYTHON) -m neuromotor.boards.mip.build $(MIP_INDEX) --natmods $(OUT) --archs "$(ARCHS)"

# $(OUT)/<arch>/<module>_natmod.mpy from device/native/<module>/Makefile, in
# $(OUT)/build/<module>/<arch>.
define natmod_rule
$$(OUT)/%/$(1)_natmod.mpy: $$(SHARED) $$(wildcard $$(NATIVE_DIR)/$(1)/*)
	@if ! command -v $$(cross_$$*)gcc >/dev/null 2>&1; then \
	    echo "natmods: $$*: compiler $$(cross_$$*)gcc not found" \
	         "(run device/port/setup_system.sh)" >&2; \
	    exit 1; fi
	@rm -rf $$(OUT)/build/$(1)/$$* && mkdir -p $$(OUT)/build/$(1)/$$* $$(OUT)/$$*
	@ln -sfn $$(NATIVE_DIR)/$(1)/Makefile $$(OUT)/build/$(1)/$$*/Makefile
	$$(MAKE) -s -C $$(OUT)/build/$(1)/$$* MPY_DIR=$$(MPY_SRC) ARCH=$$* CROSS=$$(cross_$$*) PYTHON=$$(PYTHON) $$(extra_$$*) MAKEFLAGS=
	@cp $$(OUT)/build/$(1)/$$*/$(1)_natmod.mpy $$@.tmp && mv $$@.tmp $$@
	@echo "natmods: $$@"
endef
$(foreach m,$(MODULES),$(eval $(call natmod_rule,$(m))))

# ESP8266 natmods link the lx106 soft-float routines built from GCC's source.
include $(REPO)/device/baremetal/xtensa/softfp.mk
# mpy_ld through a wrapper that links GCC 12's qstr-table offsets (see the wrapper).
extra_xtensa := NM_SOFTFP_LIB=$(NM_SOFTFP_LIB) \
	MPY_LD="$(PYTHON) $(REPO)/device/baremetal/xtensa/mpy_ld_xtensa.py $(MPY_SRC)/tools"
$(foreach m,$(MODULES),$(OUT)/xtensa/$(m)_natmod.mpy): $(NM_SOFTFP_LIB)

# armv6m natmods link GCC's C division in place of libgcc's Cortex-M0 one.
include $(REPO)/device/baremetal/armv6m/fdiv.mk
extra_armv6m := NM_FDIV_LIB=$(NM_FDIV_LIB)
$(foreach m,$(MODULES),$(OUT)/armv6m/$(m)_natmod.mpy): $(NM_FDIV_LIB)

# ESP32/ESP32-S3 natmods: Debian's clang-22 behind a gcc-style driver (xtensawin-gcc), linked
# by mpy_ld through a wrapper that reads LLVM's objects (see both files).
extra_xtensawin := MPY_LD="$(PYTHON) $(PORT_DIR)/xtensawin/mpy_ld_xtensawin.py $(MPY_SRC)/tools"
$(foreach m,$(MODULES),$(OUT)/xtensawin/$(m)_natmod.mpy): $(wildcard $(PORT_DIR)/xtensawin/* $(PORT_DIR)/xtensawin/include/* $(NATIVE_DIR)/xtensawin/*)

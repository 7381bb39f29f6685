# Dynamic native modules (.mpy) of neuromotor's kernels, one per architecture:
#   make -C device/port natmods                       (x64 armv6m armv7m armv7emsp armv7emdp rv32imc)
#   make -C device/port natmods CROSS=xtensa-esp32-elf-   (+ xtensawin, needs an ESP32 toolchain)
#   make -C device/port -f natmods.mk ARCHS="x64 armv7emsp"
# Output: $(NEUROMOTOR_CACHE)/natmods/<arch>/nm_kernels_natmod.mpy
# Architectures build in parallel (make -j2); an arch rebuilds from scratch when
# any kernel source changes (dynruntime.mk does not track headers).

NEUROMOTOR_CACHE ?= $(HOME)/.cache/neuromotor
PORT_DIR := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
REPO := $(abspath $(PORT_DIR)/../..)
NATMOD_SRC := $(REPO)/device/native/natmod
OUT := $(NEUROMOTOR_CACHE)/natmods
MOD := nm_kernels_natmod
PYTHON := $(firstword $(wildcard $(REPO)/.venv/bin/python) python3)

MPY_SRC := $(shell $(PORT_DIR)/fetch_micropython.sh)
ifeq ($(MPY_SRC),)
$(error fetching MicroPython failed (device/port/fetch_micropython.sh))
endif

ARCHS ?= x64 armv6m armv7m armv7emsp armv7emdp rv32imc
ifneq ($(CROSS),)
ARCHS += xtensawin
endif
ARCHS := $(sort $(ARCHS))

cross_x64 :=
cross_armv6m := arm-none-eabi-
cross_armv7m := arm-none-eabi-
cross_armv7emsp := arm-none-eabi-
cross_armv7emdp := arm-none-eabi-
cross_rv32imc := riscv64-unknown-elf-
cross_xtensawin := $(CROSS)

HEADERS := $(wildcard $(REPO)/device/native/*.h $(REPO)/device/native/include/*.h) $(REPO)/device/native/natmod.mk $(NATMOD_SRC)/nm_natmod.c $(NATMOD_SRC)/Makefile

.PHONY: all natmods xtensawin-note
all natmods: $(foreach a,$(ARCHS),$(OUT)/$(a)/$(MOD).mpy) xtensawin-note
	@echo "natmods in $(OUT): $(ARCHS)"

xtensawin-note:
ifeq ($(filter xtensawin,$(ARCHS)),)
	@echo "natmods: skipping xtensawin (ESP32/ESP32-S3): no registry packages an ESP32 toolchain;" \
	      "with ESP-IDF installed run: make natmods CROSS=xtensa-esp32-elf-"
endif

$(OUT)/%/$(MOD).mpy: $(HEADERS)
	@if ! command -v $(cross_$*)gcc >/dev/null 2>&1; then \
	    echo "natmods: $*: compiler $(cross_$*)gcc not found" \
	         "$(if $(filter xtensawin,$*),(ESP-IDF provides it; no registry package does: install ESP-IDF, then make natmods CROSS=xtensa-esp32-elf-),(run device/port/setup_system.sh))" >&2; \
	    exit 1; fi
	@rm -rf $(OUT)/build/$* && mkdir -p $(OUT)/build/$* $(OUT)/$*
	@ln -sfn $(NATMOD_SRC)/Makefile $(OUT)/build/$*/Makefile
	$(MAKE) -s -C $(OUT)/build/$* MPY_DIR=$(MPY_SRC) ARCH=$* CROSS=$(cross_$*) PYTHON=$(PYTHON) MAKEFLAGS=
	@cp $(OUT)/build/$*/$(MOD).mpy $@.tmp && mv $@.tmp $@
	@echo "natmods: $@"

# Training kernels (device/native/natmod_train): nm_train_natmod.mpy beside the kernels, same archs.
TRAIN_MOD := nm_train_natmod
TRAIN_SRC := $(REPO)/device/native/natmod_train
all natmods: $(foreach a,$(ARCHS),$(OUT)/$(a)/$(TRAIN_MOD).mpy)
$(OUT)/%/$(TRAIN_MOD).mpy: $(HEADERS) $(wildcard $(REPO)/device/native/trainmod/*.h) $(TRAIN_SRC)/nm_train_natmod.c $(TRAIN_SRC)/Makefile
	@rm -rf $(OUT)/build-train/$* && mkdir -p $(OUT)/build-train/$* $(OUT)/$*
	@ln -sfn $(TRAIN_SRC)/Makefile $(OUT)/build-train/$*/Makefile
	$(MAKE) -s -C $(OUT)/build-train/$* MPY_DIR=$(MPY_SRC) ARCH=$* CROSS=$(cross_$*) PYTHON=$(PYTHON) MAKEFLAGS=
	@cp $(OUT)/build-train/$*/$(TRAIN_MOD).mpy $@.tmp && mv $@.tmp $@

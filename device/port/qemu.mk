# MicroPython ports/qemu with an out-of-tree neuromotor board from boards/<BOARD>/
# (qemu-m4f, qemu-m7, qemu-rv32) and neuromotor's native modules built in as user
# C modules (every device/native/<module>/ with a micropython.mk).
# Optional: ULAB_DIR=<ulab checkout> adds ulab as a second user C module.
#
#   make -C device/port -f qemu.mk BOARD=qemu-m7 [ULAB_DIR=...]
#
# Everything is built under $(NEUROMOTOR_CACHE). The build directory is keyed on
# a hash of the configuration (make variables, this file, the board's make/config/
# linker files, the user module's micropython.mk), so a configuration change gets a
# fresh build dir (stale qstrs otherwise break it) while source edits rebuild
# incrementally. $(NEUROMOTOR_CACHE)/firmware/<BOARD>.elf links to the result.
# The last line printed is the path of the firmware ELF.

include $(dir $(lastword $(MAKEFILE_LIST)))port_common.mk

BOARD ?= qemu-m7
BOARD_DIR := $(REPO)/boards/$(BOARD)
ifeq ($(wildcard $(BOARD_DIR)/mpconfigboard.mk),)
$(error BOARD=$(BOARD): no emulated board here (expected $(BOARD_DIR)/mpconfigboard.mk; emulated boards: $(notdir $(patsubst %/mpconfigboard.mk,%,$(wildcard $(REPO)/boards/qemu-*/mpconfigboard.mk)))))
endif
COMMON_DIR := $(REPO)/boards/qemu-common

# Every user C module in device/native (one folder each with a micropython.mk).
NATIVE_MK := $(wildcard $(NATIVE_DIR)/*/micropython.mk)

ifneq ($(ULAB_DIR),)
ULAB_CODE := $(if $(wildcard $(ULAB_DIR)/code/micropython.mk),$(abspath $(ULAB_DIR)/code),$(abspath $(ULAB_DIR)))
ifeq ($(wildcard $(ULAB_CODE)/micropython.mk),)
$(error ULAB_DIR=$(ULAB_DIR) has no micropython.mk (expected a micropython-ulab checkout))
endif
endif

CONFIG_FILES := $(PORT_DIR)/qemu.mk $(wildcard $(BOARD_DIR)/*.mk $(BOARD_DIR)/*.h $(BOARD_DIR)/*.ld \
	$(COMMON_DIR)/*.mk $(COMMON_DIR)/*.h $(COMMON_DIR)/*.ld) $(NATIVE_MK)
KEY := $(shell { echo "$(MPY_SRC) $(BOARD) $(NATIVE_MK) $(ULAB_CODE) $(CFLAGS_EXTRA)"; cat $(CONFIG_FILES); } \
	| sha256sum | cut -c1-12)
BUILD_DIR := $(NEUROMOTOR_CACHE)/build/$(BOARD)$(if $(ULAB_CODE),-ulab,)-$(KEY)
ELF_LINK := $(NEUROMOTOR_CACHE)/firmware/$(BOARD)$(if $(ULAB_CODE),-ulab,).elf

ifneq ($(ULAB_CODE),)
USERMODS := $(NEUROMOTOR_CACHE)/usermods-$(BOARD)-$(KEY)
else ifneq ($(NATIVE_MK),)
USERMODS := $(NATIVE_DIR)
else
USERMODS :=
endif

MP_VARS := BOARD=$(BOARD) BOARD_DIR=$(BOARD_DIR) BUILD=$(BUILD_DIR)
ifneq ($(USERMODS),)
MP_VARS += USER_C_MODULES=$(USERMODS)
endif

.PHONY: all firmware path
all firmware:
	@mkdir -p $(dir $(ELF_LINK)) $(NEUROMOTOR_CACHE)/build
ifneq ($(ULAB_CODE),)
	@mkdir -p $(USERMODS) && ln -sfn $(ULAB_CODE) $(USERMODS)/ulab
	@for m in $(patsubst %/micropython.mk,%,$(NATIVE_MK)); do ln -sfn $$m $(USERMODS)/$$(basename $$m); done
endif
	$(MAKE) -C $(MPY_SRC)/ports/qemu -j$(JOBS) $(MP_VARS) $(if $(CFLAGS_EXTRA),CFLAGS_EXTRA="$(CFLAGS_EXTRA)")
	@ln -sfn $(BUILD_DIR)/firmware.elf $(ELF_LINK)
	$(call drop_old_builds,$(BOARD)$(if $(ULAB_CODE),-ulab,))
	@echo "built: $(ELF_LINK) -> $(BUILD_DIR)/firmware.elf$(if $(USERMODS),, (no user C module: device/native/*/micropython.mk not found))"
	@echo $(BUILD_DIR)/firmware.elf

path:
	@echo $(BUILD_DIR)/firmware.elf

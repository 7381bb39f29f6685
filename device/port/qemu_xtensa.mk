# The emulated Xtensa board (boards/qemu-xtensa): device/port/qemu-xtensa, built
# under $(NEUROMOTOR_CACHE) like qemu.mk's boards, with neuromotor's native modules
# built in as user C modules (every device/native/<module>/ with a micropython.mk).
#
#   make -C device/port -f qemu_xtensa.mk [BOARD=qemu-xtensa]
#
# The build directory is keyed on a hash of the configuration (port Makefile and
# headers, the board's make file, qemu-common's config header, the compiler wrapper
# and its <stdarg.h>), so a configuration
# change gets a fresh build dir; $(NEUROMOTOR_CACHE)/firmware/<BOARD>.elf links to the
# result. The last line printed is the path of the firmware ELF.

include $(dir $(lastword $(MAKEFILE_LIST)))port_common.mk

BOARD ?= qemu-xtensa
BOARD_DIR := $(REPO)/boards/$(BOARD)
XTENSA_PORT := $(PORT_DIR)/qemu-xtensa
# pyelftools (check_varargs.py) is in the venv
PYTHON := $(firstword $(wildcard $(REPO)/.venv/bin/python) python3)
NATIVE_MK := $(wildcard $(NATIVE_DIR)/*/micropython.mk)
CONFIG_FILES := $(NATIVE_MK) $(PORT_DIR)/qemu_xtensa.mk $(XTENSA_PORT)/Makefile $(wildcard $(XTENSA_PORT)/*.h \
	$(XTENSA_PORT)/*.ld $(BOARD_DIR)/*.mk $(REPO)/boards/qemu-common/*.h) \
	$(PORT_DIR)/xtensawin/xtensawin-gcc $(wildcard $(PORT_DIR)/xtensawin/include/*.h)
KEY := $(shell { echo "$(MPY_SRC) $(BOARD)"; cat $(CONFIG_FILES); } | sha256sum | cut -c1-12)
BUILD_DIR := $(NEUROMOTOR_CACHE)/build/$(BOARD)-$(KEY)
ELF_LINK := $(NEUROMOTOR_CACHE)/firmware/$(BOARD).elf

.PHONY: all firmware path
all firmware:
	@mkdir -p $(dir $(ELF_LINK)) $(NEUROMOTOR_CACHE)/build
	$(MAKE) -C $(XTENSA_PORT) -j$(JOBS) MPY_SRC=$(MPY_SRC) BUILD=$(BUILD_DIR) BOARD_DIR=$(BOARD_DIR) $(MPY_CROSS_VAR) \
		PYTHON=$(PYTHON) QEMUBOARD_COMMON=$(REPO)/boards/qemu-common \
		$(if $(NATIVE_MK),USER_C_MODULES=$(NATIVE_DIR))
	@ln -sfn $(BUILD_DIR)/firmware.elf $(ELF_LINK)
	$(call drop_old_builds,$(BOARD))
	@echo "built: $(ELF_LINK) -> $(BUILD_DIR)/firmware.elf"
	@echo $(BUILD_DIR)/firmware.elf

path:
	@echo $(BUILD_DIR)/firmware.elf

# neuromotor emulated boards: MPS2 (Cortex-M4F AN386, Cortex-M7 AN500) common part.
QEMUBOARD_MPS2_DIR := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))

QEMU_ARCH = arm
CFLAGS += -mthumb -DQEMU_SOC_MPS2
LDSCRIPT = $(QEMUBOARD_MPS2_DIR)/mps2.ld
SRC_BOARD_O = shared/runtime/gchelper_native.o shared/runtime/gchelper_thumb2.o

# mp_semihosting_init is the first thing _start calls: its wrapper enables the
# FPU and the timers before any float code; uart_init's enables the RX interrupt.
LDFLAGS += -Wl,--wrap=mp_semihosting_init -Wl,--wrap=uart_init

include $(QEMUBOARD_MPS2_DIR)/qemuboard.mk

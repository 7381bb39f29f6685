# neuromotor emulated boards: QEMU RISC-V `virt` (rv32imac) common part.
QEMUBOARD_VIRT_DIR := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))

QEMU_ARCH = riscv32
QEMU_MACHINE = virt
# Debian bookworm's riscv64-unknown-elf-gcc 12.2 with picolibc only links with the
# 2.2 ISA spec (zicsr implied); this rides on ports/qemu's -march=$(RV32_ARCH).
RV32_ARCH = rv32imac -misa-spec=2.2
CFLAGS += -DQEMU_SOC_VIRT
LDSCRIPT = mcu/rv32/virt.ld
SRC_BOARD_O += shared/runtime/gchelper_native.o shared/runtime/gchelper_rv32i.o

# uart_init is the first board call of _entry_point: its wrapper sets up the WFI
# wake-up sources (UART RX via the PLIC, the machine timer).
LDFLAGS += -Wl,--wrap=uart_init

include $(QEMUBOARD_VIRT_DIR)/qemuboard.mk

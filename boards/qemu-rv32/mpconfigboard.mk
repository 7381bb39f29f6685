# neuromotor qemu-rv32: MicroPython ports/qemu on QEMU's RISC-V `virt` machine
# (rv32imac, no FPU: software floats). Built with BOARD=qemu-rv32 BOARD_DIR=<this folder>.
CFLAGS += -DMICROPY_HW_MCU_NAME='"RV32IMAC"'
MPY_CROSS_FLAGS += -march=rv32imc

include $(BOARD_DIR)/../qemu-common/virt_rv32.mk

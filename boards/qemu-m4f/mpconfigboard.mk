# neuromotor qemu-m4f: MicroPython ports/qemu on QEMU's mps2-an386 (Cortex-M4F,
# single-precision FPv4 FPU). Built with BOARD=qemu-m4f BOARD_DIR=<this folder>.
QEMU_MACHINE = mps2-an386

CFLAGS += -mcpu=cortex-m4 -mfpu=fpv4-sp-d16 -mfloat-abi=hard
CFLAGS += -DMICROPY_HW_MCU_NAME='"Cortex-M4F"'
MPY_CROSS_FLAGS += -march=armv7emsp

include $(BOARD_DIR)/../qemu-common/mps2.mk

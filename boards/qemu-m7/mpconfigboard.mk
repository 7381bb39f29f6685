# neuromotor qemu-m7: MicroPython ports/qemu on QEMU's mps2-an500 (Cortex-M7,
# double-precision FPv5 FPU). Built with BOARD=qemu-m7 BOARD_DIR=<this folder>.
QEMU_MACHINE = mps2-an500

CFLAGS += -mcpu=cortex-m7 -mfpu=fpv5-d16 -mfloat-abi=hard
CFLAGS += -DMICROPY_HW_MCU_NAME='"Cortex-M7"'
MPY_CROSS_FLAGS += -march=armv7emdp

include $(BOARD_DIR)/../qemu-common/mps2.mk

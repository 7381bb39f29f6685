# qemu-m7 with a 900 KiB MicroPython heap: the teensy41 training profile's budget
# (device/lib/nm_td3.py), so a run that fits here fits that budget. Not a board of
# its own: the same machine and settings as boards/qemu-m7, only the heap differs.
# The name keeps its build dirs clear of qemu-m7's (qemu.mk drops other
# `<BOARD>-<key>` dirs of a board when it builds).
#
#   make -C device/port -f qemu.mk BOARD=qemu-m7_heap900k \
#       BOARD_DIR=$PWD/boards/qemu-common/qemu-m7_heap900k
#   neuromotor board start qemu-m7 --firmware $NEUROMOTOR_CACHE/firmware/qemu-m7_heap900k.elf
QEMU_MACHINE = mps2-an500

CFLAGS += -mcpu=cortex-m7 -mfpu=fpv5-d16 -mfloat-abi=hard
CFLAGS += -DMICROPY_HW_MCU_NAME='"Cortex-M7"'
MPY_CROSS_FLAGS += -march=armv7emdp

include $(BOARD_DIR)/../mps2.mk

MICROPY_HEAP_SIZE = 921600

# qemu-xtensa with a 110 KiB MicroPython heap: the ESP32's without PSRAM (boards/esp32),
# so a training run that fits here fits that heap. Not a board of its own: the same
# machine and settings as boards/qemu-xtensa, only the heap differs. The name keeps its
# build dirs clear of qemu-xtensa's (qemu_xtensa.mk drops other `<BOARD>-<key>` dirs).
#
#   make -C device/port -f qemu_xtensa.mk BOARD=qemu-xtensa_heap110k \
#       BOARD_DIR=$PWD/boards/qemu-common/qemu-xtensa_heap110k
#   neuromotor board start qemu-xtensa --firmware $NEUROMOTOR_CACHE/firmware/qemu-xtensa_heap110k.elf
include $(BOARD_DIR)/../../qemu-xtensa/mpconfigboard.mk

MICROPY_HEAP_SIZE = 112640

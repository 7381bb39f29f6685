# neuromotor qemu-xtensa: device/port/qemu-xtensa on QEMU's Xtensa sim machine with the
# de233_fpu core (the ESP32's windowed ABI and single-precision FPU).
MICROPY_HEAP_SIZE = 1048576
MICROPY_PYSTACK_BYTES = 65536
MICROPY_STACK_BYTES = 1048576
QEMU_MACHINE = sim
MPY_CROSS_FLAGS += -march=xtensawin
CFLAGS += -DMICROPY_HW_MCU_NAME='"Xtensa de233_fpu"'

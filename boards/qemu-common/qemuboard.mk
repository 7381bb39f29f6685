# neuromotor emulated boards: make fragment shared by boards/qemu-*/mpconfigboard.mk.
# Everything here goes through variables ports/qemu/Makefile already honours, so the
# MicroPython tree is used unmodified.

QEMUBOARD_COMMON := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))

# Our own board support, by absolute path (objects land under $(BUILD)/<path>),
# and nm_heap (the GC heap's high-water mark; MICROPY_GC_PEAK_TRACKING in
# qemuboard_config.h, counted by device/port/patches/gc-peak-tracking.patch).
SRC_C += $(QEMUBOARD_COMMON)/qemuboard.c
SRC_C += $(abspath $(QEMUBOARD_COMMON)/../../device/port/nm_heap.c)
CFLAGS += -I$(QEMUBOARD_COMMON)
CFLAGS += -DMP_CONFIGFILE='"qemuboard_config.h"'

# Reach into the stock startup/HAL without editing it (see qemuboard.c).
LDFLAGS += -Wl,--wrap=uart_rx_chr -Wl,--wrap=mp_hal_stdio_poll

# 1 MiB MicroPython heap unless the board sets its own (after including this);
# littlefs v2 for the RAM root filesystem.
MICROPY_HEAP_SIZE = 1048576
MICROPY_VFS_LFS2 = 1

# The port's default manifest needs micropython-lib's unittest, absent from
# Debian's +ds tarball. Our runtime is deployed with mpremote, not frozen.
FROZEN_MANIFEST =

# ports/qemu builds with -Werror; GCC 12's -Os maybe-uninitialized analysis gives
# false positives across inlined kernels, so keep that one a warning.
CFLAGS += -Wno-error=maybe-uninitialized

# The native modules' optimisation level is set by each user C module itself
# (device/native/<module>/micropython.mk); the rest of MicroPython stays at -Os.

# The part every module's natmod Makefile shares (nm_kernels/, nm_train/): per-arch
# float settings and the dynruntime build. The including Makefile sets MOD,
# SRC and its optimisation level in CFLAGS_EXTRA first.
MPY_DIR ?= $(error set MPY_DIR to the MicroPython source tree)
ARCH ?= x64
NM_NATIVE_DIR := $(dir $(realpath $(lastword $(MAKEFILE_LIST))))

# Cores without an FPU (and the soft-float default of rv32imc) need float
# objects enabled and libgcc's soft-float helpers linked in.
ifneq ($(filter $(ARCH),armv6m armv7m rv32imc),)
MICROPY_FLOAT_IMPL = float
LINK_RUNTIME = 1
endif
ifeq ($(ARCH),armv6m)
# libgcc's Cortex-M0 float divide has absolute relocations mpy_ld rejects: NM_FDIV_LIB is
# GCC's C one (device/baremetal/armv6m/fdiv.mk), the same correctly rounded division.
MPY_LD_FLAGS += $(addprefix -l,$(NM_FDIV_LIB))
endif
ifeq ($(ARCH),xtensa)
# ESP8266 (lx106, no FPU): Debian's libgcc lacks the soft-float routines the chip keeps
# in ROM; NM_SOFTFP_LIB is the archive device/baremetal/xtensa/softfp.mk builds.
MICROPY_FLOAT_IMPL = float
LINK_RUNTIME = 1
MPY_LD_FLAGS += $(addprefix -l,$(NM_SOFTFP_LIB))
endif
ifeq ($(ARCH),xtensawin)
# ESP32/ESP32-S3 through clang (device/port/xtensawin/xtensawin-gcc): no libgcc, so the
# 64-bit multiply is our own, and division is NM_NO_FDIV's reciprocal (LLVM calls
# __divsf3 for a / b, which the natmod cannot link).
# The dense layers' inner loops are assembly (NM_XT_ASM, device/native/xtensawin/).
SRC += $(NM_NATIVE_DIR)../port/xtensawin/muldi3.c $(NM_NATIVE_DIR)xtensawin/nm_dense_xtensa.S \
	$(NM_NATIVE_DIR)xtensawin/nm_int8_xtensa.S
CFLAGS_EXTRA += -DNM_NO_FDIV -DNM_XT_ASM=1
endif
ifeq ($(ARCH),rv32imc)
# Debian's riscv64-unknown-elf gcc 12.2 with picolibc.
CFLAGS_EXTRA += -march=rv32imac -mabi=ilp32
endif

# natmods have no libc: keep GCC from turning loops into strlen/memset/memcpy calls.
CFLAGS_EXTRA += -I$(NM_NATIVE_DIR) -I$(NM_NATIVE_DIR)include -ffp-contract=off -fno-tree-loop-distribute-patterns

include $(MPY_DIR)/py/dynruntime.mk

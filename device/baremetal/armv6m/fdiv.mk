# A correctly rounded single-precision division (__aeabi_fdiv) for armv6m natmods.
# libgcc's Cortex-M0 division has absolute relocations MicroPython's mpy_ld cannot link;
# GCC's own C implementation of the same IEEE operation (libgcc/soft-fp/divsf3.c, from
# Debian's gcc-12-source, as ../xtensa/softfp.mk uses) links, and gives the bits libgcc's
# would: the armv6m natmod then divides as every other home of the kernels does.
#
# Include this file, then depend on $(NM_FDIV_LIB):
#   NEUROMOTOR_CACHE   build cache (the archive lands in $(NEUROMOTOR_CACHE)/armv6m-fdiv)

NEUROMOTOR_CACHE ?= $(HOME)/.cache/neuromotor
NM_FDIV_CC ?= arm-none-eabi-gcc
NM_GCC_TARBALL ?= $(firstword $(wildcard /usr/src/gcc-12/gcc-12.2.0*.tar.xz))
NM_FDIV_DIR := $(NEUROMOTOR_CACHE)/armv6m-fdiv
NM_FDIV_LIB := $(NM_FDIV_DIR)/libnm_fdiv.a
NM_FDIV_MK := $(abspath $(lastword $(MAKEFILE_LIST)))

$(NM_FDIV_LIB): $(NM_FDIV_MK)
	@if [ -z "$(NM_GCC_TARBALL)" ]; then \
	    echo "armv6m division: GCC's source is missing: install Debian's gcc-12-source" \
	         "(device/port/setup_system.sh)" >&2; \
	    exit 1; fi
	@rm -rf $(NM_FDIV_DIR) && mkdir -p $(NM_FDIV_DIR)/src
	tar -xJf $(NM_GCC_TARBALL) -C $(NM_FDIV_DIR)/src --strip-components=2 --wildcards \
	    '*/libgcc/soft-fp/divsf3.c' '*/libgcc/soft-fp/soft-fp.h' '*/libgcc/soft-fp/single.h' \
	    '*/libgcc/soft-fp/op-*.h' '*/libgcc/config/arm/sfp-machine.h' '*/include/longlong.h'
	$(NM_FDIV_CC) -mthumb -mcpu=cortex-m0 -O2 -fpic -fno-common -std=gnu99 \
	    -I$(NM_FDIV_DIR)/src/config/arm -I$(NM_FDIV_DIR)/src \
	    -c $(NM_FDIV_DIR)/src/soft-fp/divsf3.c -o $(NM_FDIV_DIR)/divsf3.o
	arm-none-eabi-ar rcs $@.tmp $(NM_FDIV_DIR)/divsf3.o && mv $@.tmp $@

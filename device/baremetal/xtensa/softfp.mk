# The lx106 runtime routines Debian's libgcc for xtensa-lx106-elf leaves out: single-
# precision add/sub/mul, int<->float conversions, 32-bit division and the 64-bit
# multiplies (__umulsidi3, and __muldi3 from muldi3.c on top of it). On an ESP8266 they
# live in the chip's ROM and the firmware's linker script gives their addresses; a natmod
# or a program for the emulator must carry its own. They are built from libgcc's own
# xtensa sources (libgcc/config/xtensa/lib1funcs.S, which includes ieee754-sf.S), taken
# from Debian's gcc-12-source package (the lx106 compiler is the same GCC 12.2), with the
# lx106 core configuration the compiler itself was built with.
#
# Include this file, then depend on $(NM_SOFTFP_LIB):
#   NEUROMOTOR_CACHE   build cache (the archive lands in $(NEUROMOTOR_CACHE)/xtensa-softfp)

NEUROMOTOR_CACHE ?= $(HOME)/.cache/neuromotor
NM_XCC ?= xtensa-lx106-elf-gcc
NM_GCC_TARBALL ?= $(firstword $(wildcard /usr/src/gcc-12/gcc-12.2.0*.tar.xz))
NM_SOFTFP_DIR := $(NEUROMOTOR_CACHE)/xtensa-softfp
NM_SOFTFP_LIB := $(NM_SOFTFP_DIR)/libnm_softfp.a
# lib1funcs.S sections (L_<name>) missing from Debian's lx106 libgcc.a.
NM_SOFTFP_FUNCS := addsubsf3 mulsf3 floatsisf fixunssfsi divsi3 udivsi3 umodsi3 umulsidi3
NM_SOFTFP_MK := $(abspath $(lastword $(MAKEFILE_LIST)))
NM_SOFTFP_C := $(dir $(NM_SOFTFP_MK))muldi3.c

$(NM_SOFTFP_LIB): $(NM_SOFTFP_MK) $(NM_SOFTFP_C)
	@if ! command -v $(NM_XCC) >/dev/null 2>&1; then \
	    echo "xtensa soft-float: $(NM_XCC) not found (run device/port/setup_system.sh)" >&2; \
	    exit 1; fi
	@if [ -z "$(NM_GCC_TARBALL)" ]; then \
	    echo "xtensa soft-float: GCC's source is missing: install Debian's gcc-12-source" \
	         "(device/port/setup_system.sh)" >&2; \
	    exit 1; fi
	@rm -rf $(NM_SOFTFP_DIR) && mkdir -p $(NM_SOFTFP_DIR)/src $(NM_SOFTFP_DIR)/obj
	tar -xJf $(NM_GCC_TARBALL) -C $(NM_SOFTFP_DIR)/src --strip-components=4 --wildcards \
	    '*/libgcc/config/xtensa/lib1funcs.S' '*/libgcc/config/xtensa/ieee754-sf.S' \
	    '*/libgcc/config/xtensa/ieee754-df.S'
	@inc=$$(dirname $$($(NM_XCC) -print-file-name=plugin/include/xtensa-config.h)); \
	for f in $(NM_SOFTFP_FUNCS); do \
	    $(NM_XCC) -c -mlongcalls -I$$inc -DL_$$f $(NM_SOFTFP_DIR)/src/lib1funcs.S \
	        -o $(NM_SOFTFP_DIR)/obj/_$$f.o || exit 1; \
	done
	$(NM_XCC) -c -O2 -mlongcalls -std=c99 -Wall -Werror $(NM_SOFTFP_C) -o $(NM_SOFTFP_DIR)/obj/_muldi3.o
	xtensa-lx106-elf-ar rcs $@.tmp $(NM_SOFTFP_DIR)/obj/*.o && mv $@.tmp $@

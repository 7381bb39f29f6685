# Variadic calls under the ESP32's windowed ABI, bare metal on QEMU's de233_fpu core,
# compiled as the MicroPython port and the natmods are (xtensawin-gcc: clang-22 with our
# <stdarg.h>). tests/boards/test_xtensawin_varargs.py builds and runs it.
#   make -C device/baremetal/xtensawin -f varargs.mk OUT=<dir>       # -> <dir>/nm_varargs.elf
#   make -C device/baremetal/xtensawin -f varargs.mk OUT=<dir> run   # one line per call
# EXTRA_CFLAGS=-fno-omit-frame-pointer builds the program with the frame pointer that
# device/port/xtensawin/check_varargs.py must refuse.

HERE := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
XTENSAWIN := $(abspath $(HERE)/../../port/xtensawin)
OUT ?= $(error OUT=<build directory>)

# -Os and -g as the MicroPython port builds; -DNM_PROGRAM: ../xtensa/port.c's start-up runs this program
CFLAGS := -Os -g $(EXTRA_CFLAGS) -std=gnu99 -Wall -Werror -ffreestanding -fdata-sections -I$(HERE) -I$(HERE)/varargs \
	-DNM_PROGRAM=nm_varargs_run
ELF := $(OUT)/nm_varargs.elf
OBJ := $(OUT)
C_SRC := $(HERE)/../xtensa/port.c $(HERE)/varargs/nm_varargs_callee.c $(HERE)/varargs/nm_varargs_run.c
DEPS := $(HERE)/nm_port.h $(addprefix $(HERE)/../,xtensa/nm_ccount.h nm_port_common.h) $(HERE)/varargs/nm_varargs.h \
	$(HERE)/xtensawin.ld $(HERE)/varargs.mk $(HERE)/rules.mk \
	$(XTENSAWIN)/xtensawin-gcc $(XTENSAWIN)/include/stdarg.h
OBJS := $(OBJ)/start.o $(patsubst %.c,$(OBJ)/%.o,$(notdir $(C_SRC)))

.PHONY: all run
all: $(ELF)
	@echo $(ELF)

$(OBJ)/start.o: $(HERE)/start.S $(DEPS)
	@mkdir -p $(OBJ)
	$(MC) -triple=xtensa -mattr=$(MATTR) -filetype=obj -o $@ $<

include $(HERE)/rules.mk

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

CC := NM_XTENSAWIN_EXTRA_FEATURES=timers1 $(XTENSAWIN)/xtensawin-gcc
LD := xtensa-lx106-elf-ld
MC := llvm-mc-22
# -Os and -g as the MicroPython port builds; -DNM_PROGRAM: ../xtensa/port.c's start-up runs this program
CFLAGS := -Os -g $(EXTRA_CFLAGS) -std=gnu99 -Wall -Werror -ffreestanding -fdata-sections -I$(HERE) -I$(HERE)/varargs \
	-DNM_PROGRAM=nm_varargs_run
MATTR := +windowed,+density,+loop,+nsa,+minmax,+sext,+clamps,+mul16,+mul32,+div32,+mac16,+bool,+fp,+exception,+coprocessor,+debug,+interrupt
ELF := $(OUT)/nm_varargs.elf
C_SRC := $(HERE)/../xtensa/port.c $(HERE)/varargs/nm_varargs_callee.c $(HERE)/varargs/nm_varargs_run.c
DEPS := $(HERE)/nm_port.h $(HERE)/varargs/nm_varargs.h $(HERE)/xtensawin.ld $(HERE)/varargs.mk \
	$(XTENSAWIN)/xtensawin-gcc $(XTENSAWIN)/include/stdarg.h
OBJS := $(OUT)/start.o $(patsubst %.c,$(OUT)/%.o,$(notdir $(C_SRC)))

.PHONY: all run
all: $(ELF)
	@echo $(ELF)

$(OUT)/start.o: $(HERE)/start.S $(DEPS)
	@mkdir -p $(OUT)
	$(MC) -triple=xtensa -mattr=$(MATTR) -filetype=obj -o $@ $<

define compile
$(OUT)/$(basename $(notdir $(1))).o: $(1) $$(DEPS)
	@mkdir -p $$(OUT)
	$$(CC) $$(CFLAGS) -c $$< -o $$@
endef
$(foreach s,$(C_SRC),$(eval $(call compile,$(s))))

$(ELF): $(OBJS)
	$(LD) --no-relax -T $(HERE)/xtensawin.ld --gc-sections -e _reset -o $@.tmp $(OBJS)
	mv $@.tmp $@

run: $(ELF)
	@qemu-system-xtensa -M sim -cpu de233_fpu -nographic -monitor none -semihosting -icount shift=0 -kernel $(ELF)

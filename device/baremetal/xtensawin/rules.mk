# The tools and rules of the xtensawin bare-metal programs (Makefile, varargs.mk): each sets
# C_SRC, OBJ (the folder of its objects), OBJS, DEPS and ELF, and includes this after them.

# CCOUNT (nm_port.h) belongs to the timer option, which natmods do not use.
CC := NM_XTENSAWIN_EXTRA_FEATURES=timers1 $(XTENSAWIN)/xtensawin-gcc
LD := xtensa-lx106-elf-ld
MC := llvm-mc-22
MATTR := +windowed,+density,+loop,+nsa,+minmax,+sext,+clamps,+mul16,+mul32,+div32,+mac16,+bool,+fp,+exception,+coprocessor,+debug,+interrupt

define compile
$(OBJ)/$(basename $(notdir $(1))).o: $(1) $$(DEPS)
	@mkdir -p $$(OBJ)
	$$(CC) $$(CFLAGS) -c $$< -o $$@
endef
$(foreach s,$(C_SRC),$(eval $(call compile,$(s))))

$(ELF): $(OBJS)
	$(LD) --no-relax -T $(HERE)/xtensawin.ld --gc-sections -e _reset -o $@.tmp $(OBJS)
	mv $@.tmp $@

run: $(ELF)
	@qemu-system-xtensa -M sim -cpu de233_fpu -nographic -monitor none -semihosting -icount shift=0 -kernel $(ELF)

"""SCons build of the bare-metal timing program for an emulated MPS2 board.

Options from platformio.ini: custom_cpu_flags (e.g. -mcpu=cortex-m7 -mfpu=fpv5-d16),
custom_qemu_machine (mps2-an500 / mps2-an386), custom_board (the program's board name).
Targets: the ELF (default) and `exec`, which runs it under qemu-system-arm -icount shift=0
and prints the program's JSON and NMB/1 lines.
"""

import os

from SCons.Script import AlwaysBuild, Default, DefaultEnvironment

env = DefaultEnvironment()
here = os.path.dirname(env.subst("$PROJECT_CONFIG"))
cpu = env.GetProjectOption("custom_cpu_flags").split()
machine = env.GetProjectOption("custom_qemu_machine")
board = env.GetProjectOption("custom_board")

env.Replace(CC="arm-none-eabi-gcc", CXX="arm-none-eabi-g++", AS="arm-none-eabi-gcc",
            AR="arm-none-eabi-ar", RANLIB="arm-none-eabi-ranlib", LINK="arm-none-eabi-gcc",
            OBJCOPY="arm-none-eabi-objcopy", SIZETOOL="arm-none-eabi-size", PROGSUFFIX=".elf")
common = ["-mthumb", *cpu, "-mfloat-abi=hard"]
env.Append(CCFLAGS=common + ["-O3", "-ffp-contract=off", "-Wall", "-Werror", "-Wdouble-promotion",
                             "-ffunction-sections", "-fdata-sections", "-ffreestanding",
                             "-fno-builtin-memcpy", "-fno-builtin-memset"],
           CFLAGS=["-std=gnu99"],
           CPPDEFINES=[("NM_BOARD", '\\"%s\\"' % board)],
           CPPPATH=[os.path.join(here, "..", "native", "include"), here],
           LINKFLAGS=common + ["-nostdlib", "-T", os.path.join(here, "baremetal.ld"), "-Wl,--gc-sections"],
           LIBS=["gcc"])


program = env.BuildProgram()
run = env.Alias("exec", program, " ".join([
    "qemu-system-arm", "-machine", machine, "-nographic", "-monitor", "none", "-serial", "none",
    "-semihosting", "-icount", "shift=0", "-kernel", "$SOURCE"]))
AlwaysBuild(run)
Default(program)

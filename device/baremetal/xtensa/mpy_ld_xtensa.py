"""MicroPython's tools/mpy_ld.py for ESP8266 (ARCH=xtensa) natmods built with GCC 12.

    python mpy_ld_xtensa.py <micropython>/tools <mpy_ld.py arguments...>

GCC 12 for the lx106 loads MP_QSTR_x (an element of mp_native_qstr_table) through a
literal holding `mp_native_qstr_table + offset`. mpy_ld 1.25 only knows offsets into
mp_fun_table and stops with an AssertionError. The .mpy loader adds the table's address
to the word already there (py/persistentcode.c, mp_native_relocate), so such an entry
is a relocation against the qstr table whose stored word is the offset: that is what
this wrapper tells mpy_ld before it lays out the GOT. Several such GOT words lie next to
each other, and the .mpy format has a run length only for text/rodata/bss relocations,
so a run against the table is written as single relocations. Nothing else changes.
"""

import sys
from pathlib import Path

TABLE = "mp_native_qstr_table"


def main():
    tools = Path(sys.argv.pop(1)).resolve()
    sys.path[:0] = [str(tools), str(tools.parent / "py")]
    import mpy_ld

    populate_got = mpy_ld.populate_got

    def populate_got_with_offsets(env):
        for entry in env.got_entries.values():
            base, sep, offset = entry.name.partition("+0x")
            if sep and base == TABLE:
                entry.name = TABLE
                entry.link_addr = int(offset, 16)
        populate_got(env)

    write_reloc = mpy_ld.MPYOutput.write_reloc

    def write_reloc_runs_as_singles(self, base, offset, dest, n):
        if dest <= 2:  # text, rodata, bss: the format's run length
            write_reloc(self, base, offset, dest, n)
            return
        for i in range(n):
            write_reloc(self, base, offset + i, dest, 1)

    mpy_ld.populate_got = populate_got_with_offsets
    mpy_ld.MPYOutput.write_reloc = write_reloc_runs_as_singles
    mpy_ld.main()


if __name__ == "__main__":
    main()

"""MicroPython's tools/mpy_ld.py for ESP32 (ARCH=xtensawin) natmods built with clang.

    python mpy_ld_xtensawin.py <micropython>/tools <mpy_ld.py arguments...>

mpy_ld 1.25 links the objects of GCC for the ESP32 (xtensa-esp32-elf-gcc); the objects
of LLVM's Xtensa back end (device/port/xtensawin/xtensawin-gcc) differ in four ways,
which this wrapper reconciles before and while mpy_ld lays out the module:

- One literal pool per function (-ffunction-sections): mpy_ld names a literal by its
  file and offset, so pools of one file would collide. Each pool gets a name of its own.
- RELA addends: LLVM keeps the offset of `section + offset` literals in r_addend and
  leaves the literal word 0 (GCC stores it in the word). The addend becomes the offset.
- l32r immediates: LLVM leaves the unrelocated immediate at 0xffff; mpy_ld adds the
  literal's distance to the immediate it finds, so it is cleared first.
- Tables of pointers (MicroPython's function objects, message tables) land in .rodata,
  not .data.rel.ro (clang builds Xtensa code without -fpic). mpy_ld relocates pointers
  only in .data.rel.ro, so a .rodata section with relocations is renamed to it.

An l32r into another function's text section (a direct call8 to another section) is
refused: mpy_ld treats text relocations as already resolved.
"""

import struct
import sys
from pathlib import Path

R_XTENSA_SLOT0_OP = 20
OP0_L32R = 0x1  # RI16 format, op0 field


def main():
    tools = Path(sys.argv.pop(1)).resolve()
    sys.path[:0] = [str(tools), str(tools.parent / "py")]
    import mpy_ld

    load_object_file = mpy_ld.load_object_file

    def load_object_file_for_clang(env, f, felf):
        n_lit = len(env.literal_sections)
        load_object_file(env, f, felf)
        for sec in env.literal_sections[n_lit:]:
            sec.filename = "{}:{}".format(sec.filename, sec.name)
            sec.data = bytearray(sec.data)
            for r in sec.reloc:
                addend = r["r_addend"]
                if addend:
                    # Into the word, as GCC's objects have it (mpy_ld reads it from there
                    # for section symbols, and wants 0 in both for named ones).
                    if r.sym.entry["st_info"]["type"] == "STT_SECTION":
                        (word,) = struct.unpack_from("<I", sec.data, r["r_offset"])
                        struct.pack_into("<I", sec.data, r["r_offset"], word + addend)
                        r.entry["r_addend"] = 0
                    else:
                        raise mpy_ld.LinkError(
                            "{}: literal {}+{} (symbol plus offset) is not supported".format(
                                felf, r.sym.name, addend
                            )
                        )
        for sec in env.sections:
            if sec.name.startswith(".rodata") and sec.reloc and sec.filename == felf:
                sec.name = ".data.rel.ro" + sec.name[len(".rodata") :]

    do_relocation_text = mpy_ld.do_relocation_text

    def do_relocation_text_for_clang(env, text_addr, r):
        if r["r_info_type"] == R_XTENSA_SLOT0_OP:
            sec = r.sym.section
            if sec.name.startswith(".text"):
                if sec.addr != text_addr:
                    raise mpy_ld.LinkError(
                        "{}: direct branch into {} from another section".format(r.sym.filename, sec.name)
                    )
            else:
                offset = r["r_offset"] + text_addr
                insn = mpy_ld.unpack_u24le(env.full_text, offset)
                if insn & 0xF == OP0_L32R:
                    mpy_ld.pack_u24le(env.full_text, offset, insn & 0xFF)
        do_relocation_text(env, text_addr, r)

    mpy_ld.load_object_file = load_object_file_for_clang
    mpy_ld.do_relocation_text = do_relocation_text_for_clang
    mpy_ld.main()


if __name__ == "__main__":
    main()

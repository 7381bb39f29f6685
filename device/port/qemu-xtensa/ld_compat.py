"""Adjust an Xtensa object of LLVM (clang-22, llvm-mc-22) for GNU ld, in place.

    python3 ld_compat.py <object.o>

Two section-header changes (ELF32, little endian), nothing else:

- Literal pools (.literal, .literal.<f>, <section>.literal) get 4-byte alignment:
  llvm-mc emits them with alignment 1, and GNU ld then may place one where `l32r`
  cannot address it ("misaligned literal target").
- Mergeable sections (SHF_MERGE, SHF_STRINGS: string literals) become plain ones:
  LLVM refers to a string as section + offset in the RELA addend, and the Xtensa
  back end of GNU ld does not map such an offset when it merges the section, so the
  pointer would land on another string.
"""

import struct
import sys

SHF_MERGE = 0x10
SHF_STRINGS = 0x20


def adjust(path):
    with open(path, "r+b") as f:
        elf = bytearray(f.read())
        if elf[:4] != b"\x7fELF" or elf[4] != 1 or elf[5] != 1:
            sys.exit(f"{path}: not a little-endian ELF32 object")
        (shoff,) = struct.unpack_from("<I", elf, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x2E)
        (strtab_off,) = struct.unpack_from("<I", elf, shoff + shstrndx * shentsize + 0x10)
        for i in range(shnum):
            hdr = shoff + i * shentsize
            (name_off,) = struct.unpack_from("<I", elf, hdr)
            end = elf.index(b"\0", strtab_off + name_off)
            name = elf[strtab_off + name_off : end].decode()
            (flags,) = struct.unpack_from("<I", elf, hdr + 0x08)
            if flags & (SHF_MERGE | SHF_STRINGS):
                struct.pack_into("<I", elf, hdr + 0x08, flags & ~(SHF_MERGE | SHF_STRINGS))
                struct.pack_into("<I", elf, hdr + 0x24, 0)  # sh_entsize
            if name.startswith(".literal") or name.endswith(".literal"):
                (align,) = struct.unpack_from("<I", elf, hdr + 0x20)
                if align < 4:
                    struct.pack_into("<I", elf, hdr + 0x20, 4)
        f.seek(0)
        f.write(elf)


if __name__ == "__main__":
    adjust(sys.argv[1])

"""Fail when a variadic function of an Xtensa (windowed ABI) program overwrites its sixth
argument register a7 before saving it.

    python check_varargs.py <program.elf>     # built with -g; exit 1 and a list on failure

clang 22's Xtensa back end makes a7 the frame pointer in the prologue, before the
variadic register arguments a2..a7 are saved, so the last register argument is lost.
xtensawin-gcc passes -fomit-frame-pointer; a function that needs a frame pointer all the
same (a variable-length array, alloca) would bring the fault back. The variadic functions
come from the DWARF (DW_TAG_unspecified_parameters); their code from llvm-objdump-22.
"""

import re
import subprocess
import sys

from elftools.elf.elffile import ELFFile

MATTR = "+windowed,+density,+loop,+nsa,+minmax,+sext,+clamps,+mul16,+mul32,+div32,+mac16,+bool,+fp"
# instructions whose first operand is read, not written
READS_FIRST = re.compile(r"^(s8i|s16i|s32i|s32i\.n|s32e|s32ri|ssi|ssip|wsr|wur|b\w*|jx|callx\d+|ret\w*)$")


def variadic_functions(elf_path):
    """(name, low_pc, high_pc) of every variadic function with code in the program."""
    with open(elf_path, "rb") as f:
        elf = ELFFile(f)
        if not elf.has_dwarf_info():
            sys.exit(f"{elf_path}: no DWARF: build with -g")
        found = []
        for cu in elf.get_dwarf_info().iter_CUs():
            for die in cu.iter_DIEs():
                if die.tag != "DW_TAG_subprogram" or "DW_AT_low_pc" not in die.attributes:
                    continue
                decl = die
                if "DW_AT_abstract_origin" in die.attributes:
                    decl = die.get_DIE_from_attribute("DW_AT_abstract_origin")
                if not any(c.tag == "DW_TAG_unspecified_parameters" for c in decl.iter_children()):
                    continue
                low = die.attributes["DW_AT_low_pc"].value
                high = die.attributes["DW_AT_high_pc"]
                high = high.value if high.form == "DW_FORM_addr" else low + high.value
                name = decl.attributes.get("DW_AT_name")
                found.append((name.value.decode() if name else hex(low), low, high))
        return found


def a7_written_before_read(elf_path, low, high):
    """The first instruction of the function that names a7, if it writes a7; else None."""
    out = subprocess.run(["llvm-objdump-22", "-d", f"--mattr={MATTR}", "--no-show-raw-insn",
                          f"--start-address={low:#x}", f"--stop-address={high:#x}", elf_path],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        m = re.match(r"\s*[0-9a-f]+:\s+(\S+)\s*(.*)$", line)
        if not m:
            continue
        mnemonic, operands = m.group(1), [o.strip() for o in m.group(2).split(",")]
        if "a7" not in operands:
            continue
        if operands[0] == "a7" and not READS_FIRST.match(mnemonic):
            return line.strip()
        return None
    return None


def main(elf_path):
    functions = variadic_functions(elf_path)
    bad = [(name, insn) for name, low, high in functions
           if (insn := a7_written_before_read(elf_path, low, high))]
    for name, insn in bad:
        print(f"{elf_path}: variadic {name} overwrites a7 (its sixth argument register) before saving it: "
              f"{insn}", file=sys.stderr)
    if bad:
        sys.exit(1)
    print(f"check_varargs: {len(functions)} variadic functions keep a7")


if __name__ == "__main__":
    main(sys.argv[1])

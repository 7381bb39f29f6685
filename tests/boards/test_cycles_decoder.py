"""The cycle model's Thumb-2 decoder against the disassembler: every instruction the plugin
translated while running real programs (the bare-metal kernels and generic loops for both
cores, the microbenchmarks, the MicroPython firmware's boot) gets the class its mnemonic says."""

import re
import shutil
import signal
import subprocess
import time

import pytest

from neuromotor.boards import cycles as cyc

pytestmark = [pytest.mark.qemu]

CLASSES = ["ALU", "MUL", "MULL", "DIV", "LD", "ST", "LDD", "STD", "LDM", "STM", "B", "BC", "BI", "IT", "FALU",
           "FMAC", "FDIV", "FSQRT", "VLD", "VST", "VLDM", "VSTM", "VMOV", "VMOV2", "SYS"]
CONDS = "eq|ne|cs|hs|cc|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le"


def expected(mnemonic, operands):
    """The class(es) a disassembled instruction must get; None: not checked (ambiguous forms)."""
    m = re.sub(r"\.(n|w)$", "", mnemonic)
    m = re.sub(r"\.(f32|f64|32|64)$", "", m)
    base = re.sub(r"\.(f32|f64|s32|u32|f32\.s32|s32\.f32|f32\.u32|u32\.f32|f64\.f32|f32\.f64)$", "", m)
    if re.fullmatch(r"vf?n?m[la]s?|vfm[as]|vfnm[as]|vmla|vmls|vnmla|vnmls", base):
        return {"FMAC"}
    if base in ("vadd", "vsub", "vmul", "vnmul", "vabs", "vneg", "vcmp", "vcmpe") or base.startswith("vcvt"):
        return {"FALU"}
    if base == "vmov":
        return {"FALU", "VMOV", "VMOV2"}
    table = {"vldr": "VLD", "vstr": "VST", "vdiv": "FDIV", "vsqrt": "FSQRT", "vmrs": "VMOV", "vmsr": "VMOV",
             "ldrd": "LDD", "strd": "STD", "bl": "B", "b": "B", "bx": "BI", "blx": "BI", "tbb": "BI", "tbh": "BI",
             "cbz": "BC", "cbnz": "BC", "mul": "MUL", "mla": "MUL", "mls": "MUL", "muls": "MUL", "sdiv": "DIV",
             "udiv": "DIV", "smull": "MULL", "umull": "MULL", "smlal": "MULL", "umlal": "MULL",
             "nop": "SYS", "bkpt": "SYS", "dsb": "SYS", "dmb": "SYS", "isb": "SYS", "svc": "SYS", "wfi": "SYS",
             "cpsid": "SYS", "cpsie": "SYS", "msr": "SYS", "mrs": "SYS", "udf": "SYS"}
    if base in table:
        return {table[base]}
    if re.fullmatch(r"ldr(b|h|sb|sh|ex|exb|exh)?", base):
        return {"BI", "LD"} if operands.startswith("pc") else {"LD"}
    families = ((r"vldm(ia|db)?|vpop", "VLDM"), (r"vstm(ia|db)?|vpush", "VSTM"), (r"ldm(ia|db|fd)?|pop", "LDM"),
                (r"stm(ia|db|ea)?|push", "STM"), (r"str(b|h|ex|exb|exh)?", "ST"), (rf"b({CONDS})", "BC"),
                (r"it[te]{0,3}", "IT"))
    for pattern, cls in families:
        if re.fullmatch(pattern, base):
            return {cls}
    if base.startswith("v"):
        return None
    if re.match(rf"(add|sub|mov|cmp|cmn|tst|teq|and|orr|orn|eor|bic|mvn|rsb|adc|sbc|lsl|lsr|asr|ror|rrx|neg|"
                rf"uxt|sxt|ubfx|sbfx|bfi|bfc|clz|rbit|rev|movw|movt|adr|ssat|usat|uadd|sadd|usub|ssub|qadd|qsub|"
                rf"sel|pkh)", base):
        return {"BI", "ALU"} if operands.startswith("pc") else {"ALU"}
    return None


def _regs(operands):
    m = re.search(r"\{([^}]*)\}", operands)
    if not m:
        return None
    n = 0
    for part in m.group(1).split(","):
        part = part.strip()
        r = re.fullmatch(r"([rsd])(\d+)-[rsd](\d+)", part)
        n += (int(r.group(3)) - int(r.group(2)) + 1) if r else 1
        if r and r.group(1) == "d" or (not r and part.startswith("d")):
            n += (int(r.group(3)) - int(r.group(2)) + 1) if r else 1  # a double is two words
    return n


def _disassembly(elf):
    out = subprocess.run(["arm-none-eabi-objdump", "-d", "--no-show-raw-insn", str(elf)], capture_output=True,
                         text=True, check=True).stdout
    insns = {}
    for line in out.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(\S+)\s*([^;@]*)", line)
        if m and not m.group(2).startswith("."):
            insns[int(m.group(1), 16)] = (m.group(2), m.group(3).strip())
    return insns


def _translated(elf, machine, core, tmp_path, run_for=None):
    log = tmp_path / f"{core}.log"
    so = cyc.build_plugin()
    cmd = ["qemu-system-arm", "-machine", machine, "-nographic", "-monitor", "none", "-serial", "none",
           "-semihosting", "-icount", "shift=0", "-plugin", f"{so},core={core},log={log}", "-kernel", str(elf)]
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        p.wait(timeout=run_for or 60)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGTERM)
        p.wait(10)
    seen = {}
    for line in log.read_text().splitlines():
        m = re.match(r"\s+0x([0-9a-f]+) size=(\d+) cls=(\d+) n=(\d+)", line)
        if m:
            seen[int(m.group(1), 16)] = (CLASSES[int(m.group(3))], int(m.group(4)))
    return seen


def _check(elf, machine, core, tmp_path, run_for=None):
    insns = _disassembly(elf)
    seen = _translated(elf, machine, core, tmp_path, run_for)
    checked, wrong = 0, []
    for addr, (cls, n) in seen.items():
        if addr not in insns:
            continue
        mnem, ops = insns[addr]
        want = expected(mnem, ops)
        if want is None:
            continue
        checked += 1
        if cls not in want:
            wrong.append(f"{addr:#x} {mnem} {ops}: {cls}, expected {sorted(want)}")
        elif cls in ("LDM", "STM", "VLDM", "VSTM") and _regs(ops) is not None and n != _regs(ops):
            wrong.append(f"{addr:#x} {mnem} {ops}: {n} registers/words, expected {_regs(ops)}")
    return checked, wrong


@pytest.fixture(autouse=True)
def _tools():
    for tool in ("arm-none-eabi-gcc", "arm-none-eabi-objdump", "qemu-system-arm", "cc"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed")


@pytest.mark.parametrize("board,machine,core", [("qemu-m7", "mps2-an500", "cortex-m7"),
                                                 ("qemu-m4f", "mps2-an386", "cortex-m4")])
def test_decoder_on_the_baremetal_program(board, machine, core, tmp_path):
    from neuromotor.boards.baremetal import build_baremetal
    elf = build_baremetal(board, sizes=(13, 64, 64, 4), repeat=2)
    checked, wrong = _check(elf, machine, core, tmp_path)
    assert checked > 300 and not wrong, "\n".join(wrong[:20])


def test_decoder_on_the_microbenchmarks(tmp_path):
    cyc.run_microbench("cortex-m4")  # builds them
    elf = cyc.cache_dir() / "timing" / "microbench-cortex-m4.elf"
    checked, wrong = _check(elf, "mps2-an386", "cortex-m4", tmp_path)
    assert checked > 60 and not wrong, "\n".join(wrong[:20])


def test_decoder_on_the_micropython_firmware_boot(tmp_path):
    from neuromotor.boards import firmware_path, load_board
    elf = firmware_path(load_board("qemu-m7"))
    if not elf.exists():
        pytest.skip(f"no firmware at {elf} (make emulated)")
    start = time.monotonic()
    checked, wrong = _check(elf, "mps2-an500", "cortex-m7", tmp_path, run_for=3)
    assert time.monotonic() - start < 30
    assert checked > 2000 and not wrong, "\n".join(wrong[:20])


def expected_rv(mnemonic):
    m = mnemonic.removeprefix("c.")
    if re.fullmatch(r"l[bhw]u?|lwsp", m):
        return {"LD"}
    if re.fullmatch(r"s[bhw]|swsp", m):
        return {"ST"}
    if re.fullmatch(r"b(eq|ne|lt|ge|ltu|geu|gt|le|gtu|leu)|b(eq|ne|lt|ge|gt|le)z", m):
        return {"BC"}
    if m in ("j", "jal"):
        return {"B"}
    if m in ("jr", "jalr", "ret"):
        return {"BI"}
    if re.fullmatch(r"mul(h|hsu|hu)?", m):
        return {"MUL"}
    if re.fullmatch(r"(div|rem)u?", m):
        return {"DIV"}
    if m.startswith(("amo", "lr.", "sc.")):
        return {"LDD"}
    if m.startswith(("csr", "fence", "ecall", "ebreak", "wfi", "mret", "unimp")):
        return {"SYS"}
    if m.startswith("f"):
        return None
    return {"ALU"}


def test_decoder_rv32_on_the_micropython_firmware_boot(tmp_path):
    for tool in ("qemu-system-riscv32", "riscv64-unknown-elf-objdump"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed")
    from neuromotor.boards import firmware_path, load_board
    elf = firmware_path(load_board("qemu-rv32"))
    if not elf.exists():
        pytest.skip(f"no firmware at {elf} (make emulated)")
    out = subprocess.run(["riscv64-unknown-elf-objdump", "-d", str(elf)],
                         capture_output=True, text=True, check=True).stdout
    insns = {}
    for line in out.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+[0-9a-f]+\s+(\S+)", line)
        if m:
            insns[int(m.group(1), 16)] = m.group(2)
    log = tmp_path / "rv.log"
    cmd = ["qemu-system-riscv32", "-machine", "virt", "-bios", "none", "-nographic", "-monitor", "none",
           "-serial", "none", "-semihosting", "-icount", "shift=0",
           "-plugin", f"{cyc.build_plugin()},core=rv32imc,log={log}", "-kernel", str(elf)]
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        p.wait(timeout=3)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGTERM)
        p.wait(10)
    checked, wrong = 0, []
    for line in log.read_text().splitlines():
        m = re.match(r"\s+0x([0-9a-f]+) size=(\d+) cls=(\d+) n=(\d+)", line)
        if not m or int(m.group(1), 16) not in insns:
            continue
        mnem = insns[int(m.group(1), 16)]
        want = expected_rv(mnem)
        if want is None:
            continue
        checked += 1
        got = CLASSES[int(m.group(3))]
        if got not in want:
            wrong.append(f"{m.group(1)} {mnem}: {got}, expected {sorted(want)}")
    assert checked > 2000 and not wrong, "\n".join(wrong[:20])

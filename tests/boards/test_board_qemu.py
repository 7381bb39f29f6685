"""Emulated boards, driven with the real mpremote over QEMU's pty.

Boots, time, the RAM littlefs across soft and hard resets, select (mpremote mount),
Ctrl-C, console input integrity, the FPU, our kernels as a user C module and as natmods.
"""

import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from neuromotor import boards
from neuromotor.paths import cache_dir

MPREMOTE = str(Path(sys.executable).with_name("mpremote"))

pytestmark = [pytest.mark.qemu]

# qemu-m4f, qemu-m7 and qemu-xtensa are built when missing; qemu-rv32 runs when its
# firmware was built (make firmware BOARD=qemu-rv32: needs the RISC-V toolchain, about 80 s).
BOARDS = ["qemu-m4f", "qemu-m7", "qemu-rv32", "qemu-xtensa"]
ARCH = {"qemu-m4f": "armv7emsp", "qemu-m7": "armv7emdp", "qemu-rv32": "rv32imc", "qemu-xtensa": "xtensawin"}
# sys.implementation._mpy >> 10 is the native arch index (py/persistentcode.h)
ARCH_INDEX = {"armv7emsp": 7, "armv7emdp": 8, "xtensawin": 10, "rv32imc": 11}
SYSTEM = {"qemu-m4f": "qemu-system-arm", "qemu-m7": "qemu-system-arm", "qemu-rv32": "qemu-system-riscv32",
          "qemu-xtensa": "qemu-system-xtensa"}


@pytest.fixture(scope="module", params=BOARDS)
def board(request, board_pool):
    name = request.param
    if not shutil.which(SYSTEM[name]):
        pytest.skip(f"{SYSTEM[name]} is not installed (make system)")
    if name == "qemu-rv32" and not board_pool.firmware_ready(name):
        pytest.skip("qemu-rv32 firmware not built (make firmware BOARD=qemu-rv32)")
    return board_pool.get(name)


def test_boots_and_answers_mpremote_exec(board, mpremote):
    out = mpremote(board.port, "exec", "import sys, os; print(1); print(sys.platform, sys.implementation._mpy)\n"
                   "print(os.uname().machine)")
    lines = out.split()
    assert lines[0] == "1"
    assert lines[1] == "qemu"
    assert int(lines[2]) >> 10 == ARCH_INDEX[ARCH[board.name]]
    machine = boards.load_board(board.name).qemu["args"][1]  # -machine <name>
    assert lines[3] == machine


def test_fpu_hard_float(board, mpremote):
    out = mpremote(board.port, "exec", "import math; print(repr(math.sqrt(2.0) * math.exp(1.5)))")
    assert abs(float(out) - math.sqrt(2.0) * math.exp(1.5)) < 1e-5


NATIVE_CODE = """
import micropython
@micropython.native
def squares(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
@micropython.viper
def total(buf: ptr8, n: int) -> int:
    s = 0
    for i in range(n):
        s += buf[i]
    return s
@micropython.native
def gen():
    yield 1
    try:
        raise ValueError(7)
    except ValueError as e:
        yield e.args[0]
print(squares(100), total(bytearray(range(10, 20)), 10), list(gen()))
"""


def test_native_and_viper_emitters(board, mpremote):
    assert mpremote(board.port, "exec", NATIVE_CODE).split() == ["328350", "145", "[1,", "7]"]


def test_formatted_output_and_tracebacks(board, mpremote):
    # MicroPython's C formatting (mp_printf: %d, %q, %s) prints attribute names, tracebacks and
    # exception messages; on the Xtensa board it goes through our <stdarg.h>
    out = mpremote(board.port, "exec", "import sys\nprint('sys' in repr(sys), 'maxsize' in dir(sys))\n"
                   "print('%d|%5.2f|%s|%x' % (-123, 2.5, 'ab', 0xbeef))\n"
                   "def f(x):\n    return x[7]\nf([1])", check=False)
    lines = out.splitlines()
    assert lines[:2] == ["True True", "-123| 2.50|ab|beef"]
    assert lines[2:] == ["Traceback (most recent call last):", '  File "<stdin>", line 6, in <module>',
                         '  File "<stdin>", line 5, in f', "IndexError: list index out of range"]


def test_ticks_advance_and_sleep(board, mpremote):
    code = ("import time\n"
            "a = time.ticks_us(); c = time.ticks_cpu(); m = time.ticks_ms()\n"
            "time.sleep_ms(20)\n"
            "print(time.ticks_diff(time.ticks_us(), a), time.ticks_diff(time.ticks_cpu(), c), "
            "time.ticks_diff(time.ticks_ms(), m))")
    us, cpu, ms = map(int, mpremote(board.port, "exec", code).split())
    assert us >= 20000          # slept at least what was asked (guest time)
    assert cpu > 0 and ms >= 20
    # time_ns (no RTC: since reset) advances with the same clock
    a, b = map(int, mpremote(board.port, "exec", "import time\na = time.time_ns()\ntime.sleep_ms(5)\n"
                             "print(a, time.time_ns())").split())
    assert b - a >= 5_000_000
    # ticks_cpu runs at qemuboard.TICKS_CPU_HZ: consistent with ticks_us
    hz = int(mpremote(board.port, "exec", "import qemuboard; print(qemuboard.TICKS_CPU_HZ)"))
    assert abs(cpu / hz * 1e6 - us) <= us * 0.05 + 100


def test_icount_time_counts_instructions(board, mpremote):
    if board.name in ("qemu-rv32", "qemu-xtensa"):
        # the Xtensa core's CCOUNT against instructions: tests/boards/test_xtensawin_baremetal.py
        pytest.skip("Thumb inline assembler: Arm boards only")
    # two Thumb instructions per iteration: ticks_cpu * (1e9 / TICKS_CPU_HZ) = instructions
    code = ("import time, micropython, qemuboard\n"
            "@micropython.asm_thumb\n"
            "def spin(r0):\n"
            "    label(loop)\n"
            "    sub(r0, r0, 1)\n"
            "    bne(loop)\n"
            "t = time.ticks_cpu(); spin(500000); d = time.ticks_diff(time.ticks_cpu(), t)\n"
            "print(d * (1000000000 // qemuboard.TICKS_CPU_HZ))\n")
    instructions = int(mpremote(board.port, "exec", code))
    assert 1_000_000 <= instructions <= 1_000_000 + 2000


def test_files_persist_across_soft_reset(board, mpremote, tmp_path):
    src = tmp_path / "persist.py"
    payload = os.urandom(8).hex()
    src.write_text(f"TOKEN = {payload!r}\n")
    mpremote(board.port, "cp", str(src), ":persist.py")
    # mpremote soft-resets at each new invocation; do an explicit one too
    out = mpremote(board.port, "soft-reset", "exec", "import os, persist; print(persist.TOKEN, os.getcwd())")
    assert out.split() == [payload, "/"]
    assert "persist.py" in mpremote(board.port, "fs", "ls", ":")
    mpremote(board.port, "fs", "rm", ":persist.py")
    assert "persist.py" not in mpremote(board.port, "fs", "ls", ":")


def test_files_survive_hardware_reset(board, mpremote):
    mpremote(board.port, "exec", "f = open('keep.txt', 'w'); f.write('kept'); f.close()")
    board.reset()  # QMP system_reset: the MCU reboots, RAM (and the littlefs in it) stays
    time.sleep(0.5)
    assert mpremote(board.port, "exec", "print(open('keep.txt').read())").strip() == "kept"
    mpremote(board.port, "fs", "rm", ":keep.txt")


def test_mpremote_mount_uses_select(board, mpremote, tmp_path):
    (tmp_path / "hostmod.py").write_text("VALUE = 6 * 7\n")
    out = mpremote(board.port, "mount", str(tmp_path), "exec", "import hostmod, os; print(hostmod.VALUE, os.getcwd())")
    assert "42 /remote" in out


def test_ctrl_c_stops_a_running_program(board, mpremote):
    # the host side of a running program dies; the board keeps looping ...
    p = subprocess.Popen([MPREMOTE, "connect", board.port, "exec", "while True: pass"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(2)
    assert p.poll() is None  # still running the loop
    p.kill()
    p.wait()
    # ... and the next mpremote interrupts it with Ctrl-C (KeyboardInterrupt from the UART)
    assert mpremote(board.port, "exec", "print('alive')").strip() == "alive"


ECHO_CRC = """
import sys, binascii
read = sys.stdin.buffer.read
print('ready')
for _ in range({blocks}):
    print(binascii.crc32(read(256)))
"""


def test_console_input_arrives_intact(board):
    """100 KiB of random bytes through the console, each 256-byte block's CRC echoed by the board."""
    import binascii
    import random

    from mpremote.transport_serial import SerialTransport

    blocks = 400
    rng = random.Random(7)
    data = [bytes(rng.choice(range(4, 256)) for _ in range(256)) for _ in range(blocks)]  # no Ctrl-A..Ctrl-C
    t = SerialTransport(board.port, baudrate=115200)
    try:
        t.enter_raw_repl(soft_reset=False)
        t.exec_raw_no_follow(ECHO_CRC.format(blocks=blocks))
        assert t.read_until(1, b"ready\r\n", timeout=20).endswith(b"ready\r\n")
        bad = []
        for i, block in enumerate(data):
            t.serial.write(block)
            line = t.read_until(1, b"\r\n", timeout=20)
            if int(line.strip()) != binascii.crc32(block):
                bad.append(i)
        assert bad == [], f"{len(bad)} of {blocks} blocks arrived changed, the first at block {bad[0]}"
        t.read_until(1, b"\x04>", timeout=20)  # the program's end
    finally:
        t.close()


# A tiny layer, computed by our kernels and by plain Python on the board.
DENSE_CHECK = """
from array import array
K = {mod}
n_in, n_out = 5, 6
w = array('f', [((i * 7) % 11 - 5) * 0.125 for i in range(n_in * n_out)])
b = array('f', [0.25 * (j - 3) for j in range(n_out)])
x = array('f', [0.5, -1.0, 2.0, 0.75, -0.25])
packed = array('f', bytes(4 * K.layer_size(n_in, n_out)))
K.pack(packed, w, b, n_in, n_out)
out = array('f', bytes(4 * n_out))
K.dense(out, x, packed, 1)
ref = [max(0.0, sum(w[j * n_in + i] * x[i] for i in range(n_in)) + b[j]) for j in range(n_out)]
print(max(abs(out[j] - ref[j]) for j in range(n_out)), list(out))
"""


def test_user_c_module_kernels(board, mpremote):
    out = mpremote(board.port, "exec", "import nm_kernels; print(nm_kernels.isa())")
    assert out.strip()
    err, _ = mpremote(board.port, "exec", DENSE_CHECK.format(mod="__import__('nm_kernels')")).split(" ", 1)
    assert float(err) < 1e-5


# natmods each board must import: its own arch, and on the M7 (double-precision FPU)
# also the single-precision armv7emsp build.
NATMODS = {"qemu-m4f": ["armv7emsp"], "qemu-m7": ["armv7emdp", "armv7emsp"], "qemu-rv32": ["rv32imc"],
           "qemu-xtensa": ["xtensawin"]}


@pytest.mark.parametrize("which", [0, 1])
def test_natmod_import(board, mpremote, which):
    if which >= len(NATMODS[board.name]):
        pytest.skip(f"{board.name} has one natmod arch")
    arch = NATMODS[board.name][which]
    mpy = cache_dir() / "natmods" / arch / "nm_kernels_natmod.mpy"
    if not mpy.exists():
        pytest.skip(f"no {arch} natmod: run `make natmods`")
    mpremote(board.port, "cp", str(mpy), ":nm_kernels_natmod.mpy")
    try:
        code = DENSE_CHECK.format(mod="__import__('nm_kernels_natmod')")
        natmod = mpremote(board.port, "exec", code).split(" ", 1)
        builtin = mpremote(board.port, "exec", DENSE_CHECK.format(mod="__import__('nm_kernels')")).split(" ", 1)
        assert float(natmod[0]) < 1e-5
        assert natmod[1] == builtin[1]  # same kernel source, same arithmetic
    finally:
        mpremote(board.port, "fs", "rm", ":nm_kernels_natmod.mpy", check=False)


def test_wrong_arch_natmod_is_refused(board, mpremote):
    other = "armv7emsp" if board.name == "qemu-rv32" else "rv32imc"
    mpy = cache_dir() / "natmods" / other / "nm_kernels_natmod.mpy"
    if not mpy.exists():
        pytest.skip(f"no {other} natmod: run `make natmods`")
    mpremote(board.port, "cp", str(mpy), ":wrongarch.mpy")
    try:
        out = mpremote(board.port, "exec", "try:\n import wrongarch\nexcept ValueError as e:\n print('refused', e)")
        assert "refused" in out and "arch" in out
    finally:
        mpremote(board.port, "fs", "rm", ":wrongarch.mpy", check=False)


def test_damaged_filesystem_is_reported_not_reformatted(board_pool, mpremote):
    """A littlefs whose superblock is damaged is left alone (and said so), not wiped."""
    board_pool.get("qemu-m4f")  # firmware built
    b = boards.start("qemu-m4f", instance=f"qemu-m4f-fsdamage-{os.getpid()}", die_with_parent=True)
    try:
        mpremote(b.port, "exec", "open('precious.txt', 'w').write('x')")
        mpremote(b.port, "exec", "import machine\nm = machine.mem32\nfor blk in (0, 1):\n"
                 "    for off in range(16, 64, 4):\n        m[0x20000000 + 4096 * blk + off] = 0x5a5a5a5a\n")
        out = mpremote(b.port, "soft-reset", "exec",
                       "import os, machine\nprint(os.listdir())\n"
                       "print(bytes(machine.mem8[0x20000000 + 8 + i] for i in range(8)))")
        assert "[]" in out                  # nothing mounted ...
        assert "b'littlefs'" in out         # ... and the superblock magic is still there (no mkfs)
    finally:
        b.stop()

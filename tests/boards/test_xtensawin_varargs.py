"""Variadic calls under the ESP32's windowed ABI, compiled by clang-22 the way the
qemu-xtensa firmware and the xtensawin natmods are (device/port/xtensawin/xtensawin-gcc
with our <stdarg.h>), run bare metal on QEMU's de233_fpu core: every callee reads back
exactly the ints, long longs, doubles and pointers its caller passed, in registers, on
the stack and split between both, after 1 to 7 named arguments, through va_copy and a
va_list handed on (device/baremetal/xtensawin/varargs/). check_varargs.py, which the
firmware build runs, passes that program and refuses it built with a frame pointer.
"""

import shutil
import struct
import subprocess
import sys

import pytest

from neuromotor.paths import DEVICE_DIR, cache_dir

HERE = DEVICE_DIR / "baremetal" / "xtensawin"
CHECK = DEVICE_DIR / "port" / "xtensawin" / "check_varargs.py"


def build(out, *make_args):
    subprocess.run(["make", "-s", "-C", str(HERE), "-f", "varargs.mk", f"OUT={out}", *make_args], check=True,
                   capture_output=True)
    return out / "nm_varargs.elf"


def i(v):
    return v & (2**64 - 1)


def d(v):
    return struct.unpack("<Q", struct.pack("<d", v))[0]


# what nm_varargs_run.c passes, as the callee logs it (64-bit words); "P" is the marker's address
EXPECTED = {
    "ints8": [i(v) for v in range(1, 9)],
    "ints3": [i(-1), 2, i(-3)],
    "kinds_ints7": [10, 20, 30, 40, 50, 60, 70],
    "kinds_mixed": [d(1.5), 2, d(-2.25), 3, d(1e300), 4, 0x123456789ABCDEF0],
    "kinds_pairs": [7, i(-2), d(0.1), 8, 1 << 40, d(-3.5)],
    "kinds_pointers": ["P", 0xDEADBEEF, 0, 9],
    "after_double": [d(6.25), 11, d(1.0), d(2.0), 12],
    "named5": [10, 21, 22, d(4.5), 99],
    "named5_double": [10, d(8.5), 31, 32],
    "named6": [15, 41, d(-0.5), 77],
    "named7": [21, 51, 52, d(3.0)],
    "twice": [61, d(2.5), 62] * 2,
}


@pytest.fixture(scope="module")
def calls():
    for tool in ("clang-22", "llvm-mc-22", "xtensa-lx106-elf-ld", "qemu-system-xtensa"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} is not installed: run device/port/setup_system.sh")
    elf = build(cache_dir() / "baremetal" / "xtensawin-varargs")
    res = subprocess.run(["qemu-system-xtensa", "-M", "sim", "-cpu", "de233_fpu", "-nographic", "-monitor", "none",
                          "-semihosting", "-icount", "shift=0", "-kernel", str(elf)],
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stdout + res.stderr
    lines = dict(line.split(" ", 1) for line in res.stdout.splitlines() if " " in line)
    assert "done" in res.stdout.split()
    marker = int(lines.pop("marker"), 16)
    return {name: [marker if w == "P" else w for w in want] for name, want in EXPECTED.items()}, lines, elf


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_callee_reads_what_the_caller_passed(calls, name):
    expected, lines, _ = calls
    got = [int(w, 16) for w in lines[name].split()]
    assert [hex(v) for v in got] == [hex(v) for v in expected[name]]


def test_frame_pointer_check(calls):
    _, _, elf = calls
    ok = subprocess.run([sys.executable, str(CHECK), str(elf)], capture_output=True, text=True)
    assert ok.returncode == 0 and "7 variadic functions keep a7" in ok.stdout, ok.stdout + ok.stderr
    # a frame pointer (a7) set before the variadic registers are saved: the check names the functions
    fp = build(cache_dir() / "baremetal" / "xtensawin-varargs-fp", "EXTRA_CFLAGS=-fno-omit-frame-pointer")
    bad = subprocess.run([sys.executable, str(CHECK), str(fp)], capture_output=True, text=True)
    assert bad.returncode == 1
    assert "variadic nm_va_ints overwrites a7" in bad.stderr and "or\ta7, a1, a1" in bad.stderr

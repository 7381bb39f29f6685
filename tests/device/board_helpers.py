"""Helpers for the device tests on the emulated boards: the real mpremote, each board's QEMU
system and natmod architecture, and the board's natmod copied onto it."""

import contextlib
import subprocess
import sys
from pathlib import Path

import pytest

from neuromotor.paths import cache_dir

MPREMOTE = str(Path(sys.executable).with_name("mpremote"))
SYSTEM = {"qemu-m4f": "qemu-system-arm", "qemu-m7": "qemu-system-arm", "qemu-rv32": "qemu-system-riscv32",
          "qemu-xtensa": "qemu-system-xtensa"}
NATMOD = {"qemu-m4f": "armv7emsp", "qemu-m7": "armv7emdp", "qemu-rv32": "rv32imc", "qemu-xtensa": "xtensawin"}


def mpremote(port, *args):
    """The stdout of the real mpremote connected to `port`; a failure raises with its output."""
    res = subprocess.run([MPREMOTE, "connect", port, *args], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


@contextlib.contextmanager
def natmod_on(board_name, port):
    """nm_kernels_natmod.mpy of the board's architecture in its filesystem for the block, removed
    after it so the next test on the shared board starts without it; skips when it is not built."""
    mpy = cache_dir() / "natmods" / NATMOD[board_name] / "nm_kernels_natmod.mpy"
    if not mpy.exists():
        pytest.skip(f"no {NATMOD[board_name]} natmod: run `make natmods`")
    mpremote(port, "cp", str(mpy), ":nm_kernels_natmod.mpy")
    try:
        yield
    finally:
        subprocess.run([MPREMOTE, "connect", port, "fs", "rm", ":nm_kernels_natmod.mpy"],
                       capture_output=True, timeout=60)

"""The limit to compare with: neuromotor's kernel as a bare-metal program (no MicroPython).

device/baremetal/nm_baremetal.c includes device/native/include/nm_kernels.h, is built with
Debian's arm-none-eabi-gcc (same CPU flags, -O3 and -ffp-contract=off as the kernels in
our emulated firmware) and runs on the emulated MPS2 board under QEMU -icount shift=0,
timed with the same CMSDK timer0 that backs time.ticks_cpu() in the firmware.

    from neuromotor.boards.baremetal import run_baremetal
    r = run_baremetal("qemu-m7", sizes=(13, 64, 64, 4))
    r["instructions_per_inference"], r["instructions_per_mac"]
"""

from __future__ import annotations

import json
import re
import subprocess

from neuromotor.errors import UserError
from neuromotor.paths import REPO_ROOT

from .descriptor import load_board

BAREMETAL_DIR = REPO_ROOT / "device" / "baremetal"
ACT_CODES = {"identity": 0, "linear": 0, "relu": 1, "tanh": 2}


def _vars(board, sizes, acts, repeat):
    sizes = [int(s) for s in sizes]
    if len(sizes) < 2:
        raise UserError("bare metal: need at least an input and an output size")
    if acts is None:
        acts = ["relu"] * (len(sizes) - 2) + ["identity"]
    codes = [ACT_CODES[a] if isinstance(a, str) else int(a) for a in acts]
    if len(codes) != len(sizes) - 1:
        raise UserError("bare metal: one activation per layer")
    return [f"BOARD={board}", f"SIZES={','.join(map(str, sizes))}", f"ACTS={','.join(map(str, codes))}",
            f"REPEAT={int(repeat)}"]


def build_baremetal(board: str = "qemu-m7", sizes=(13, 64, 64, 4), acts=None, repeat: int = 200) -> str:
    """Build the program; return the ELF path."""
    res = subprocess.run(["make", "-s", "-C", str(BAREMETAL_DIR), *_vars(board, sizes, acts, repeat)],
                         capture_output=True, text=True)
    if res.returncode != 0:
        raise UserError(f"building the bare-metal program failed:\n{res.stdout}{res.stderr}")
    return res.stdout.strip().splitlines()[-1]


def run_baremetal(board: str = "qemu-m7", sizes=(13, 64, 64, 4), acts=None, repeat: int = 200,
                  timeout: float = 120) -> dict:
    """Build and run it under QEMU -icount shift=0; return the measurement.

    instructions_per_inference = timer ticks x 40 / repeat (the timer runs at 25 MHz,
    one instruction is 1 ns): instruction-count time, resolution 40 instructions per run
    of `repeat` inferences.
    """
    b = load_board(board)
    elf = build_baremetal(board, sizes, acts, repeat)
    args = b.qemu["args"]
    machine = args[args.index("-machine") + 1]
    cmd = [b.qemu["system"], "-machine", machine, "-nographic", "-monitor", "none", "-serial", "none",
           "-semihosting", "-icount", "shift=0", "-kernel", elf]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise UserError(f"the bare-metal program did not finish within {timeout} s") from None
    m = re.search(r"\{.*\}", res.stdout + res.stderr)  # semihosting writes to stderr
    line = m.group(0) if m else None
    if res.returncode != 0 or line is None:
        raise UserError(f"the bare-metal program failed (exit {res.returncode}): {res.stdout}{res.stderr}")
    r = json.loads(line)
    if "error" in r:
        raise UserError(f"the bare-metal program reported: {r['error']}")
    per_tick = r["instructions_per_tick"]
    r["instructions_per_inference"] = r["ticks"] * per_tick / r["repeat"]
    r["instructions_per_mac"] = r["instructions_per_inference"] / r["macs"]
    r["max_abs_err"] = r["max_abs_err_e9"] * 1e-9
    r["elf"] = elf
    r["clock"] = "instruction-count time: QEMU -icount shift=0, CMSDK timer0 at 25 MHz = 40 instructions/tick"
    return r

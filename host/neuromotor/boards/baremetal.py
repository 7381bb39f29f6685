"""The limit to compare with: neuromotor's kernel as a bare-metal program (no MicroPython).

device/baremetal/nm_baremetal.c includes device/native/include/nm_kernels.h, is built with
Debian's arm-none-eabi-gcc (same CPU flags, -O3 and -ffp-contract=off as the kernels in
our emulated firmware) and runs on the emulated MPS2 board under QEMU -icount shift=0,
timed with the same CMSDK timer0 that backs time.ticks_cpu() in the firmware. The same
network also runs as a generic-library forward pass (device/baremetal/nm_generic.c).

It runs under the cycle-model plugin (neuromotor.boards.cycles) with a mark at each edge
of the timed regions, so each implementation gets an exact instruction count and a
modelled cycle count per inference, and predicted µs on the real boards the emulated
core stands for.

    from neuromotor.boards.baremetal import run_baremetal
    r = run_baremetal("qemu-m7", sizes=(13, 64, 64, 4))
    r["instructions_per_inference"], r["cycles_per_inference"], r["generic"]["predicted"]
"""

from __future__ import annotations

import json
import re
import subprocess

from neuromotor.errors import UserError
from neuromotor.paths import REPO_ROOT

from . import cycles as cyc
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
    """Build and run it under QEMU -icount shift=0 with the cycle model; return the measurement.

    instructions_per_inference and cycles_per_inference come from the plugin's marks
    (exact counts, the timing loop's own cost subtracted); instructions_timer is the
    CMSDK timer's figure (40 instructions per tick) as a cross-check.
    """
    b = load_board(board)
    elf = build_baremetal(board, sizes, acts, repeat)
    args = b.qemu["args"]
    machine = args[args.index("-machine") + 1]
    core = cyc.timing_of(board)["core"]
    counters, output = cyc.run_marked(elf, machine, core, system=b.qemu["system"], timeout=timeout)
    m = re.search(r"\{.*\}", output)  # semihosting writes to stderr
    if m is None:
        raise UserError(f"the bare-metal program printed no result: {output[-500:]}")
    r = json.loads(m.group(0))
    if "error" in r:
        raise UserError(f"the bare-metal program reported: {r['error']}")
    marks = counters["marks"]
    if len(marks) != 4:
        raise UserError(f"the bare-metal program passed {len(marks)} marks, expected 4")
    rep, macs = r["repeat"], r["macs"]

    def region(i, key):  # per inference, the timing loop's own cost taken out
        loop = marks[1][key] - marks[0][key]
        return (marks[i + 1][key] - marks[i][key] - loop) / rep

    per_tick = r["instructions_per_tick"]
    r["instructions_timer"] = r["ticks"] * per_tick / rep
    r["instructions_per_inference"] = region(1, "insns")
    r["instructions_per_mac"] = r["instructions_per_inference"] / macs
    r["cycles_per_inference"] = region(1, "cycles")
    r["cycles_per_mac"] = r["cycles_per_inference"] / macs
    r["predicted"] = cyc.predict(board, r["cycles_per_inference"], region(1, "beats"), macs)
    r["core"] = core
    if r.get("generic"):
        r["generic"] = {"instructions": region(2, "insns"), "cycles": region(2, "cycles"),
                        "instructions_per_mac": region(2, "insns") / macs,
                        "cycles_per_mac": region(2, "cycles") / macs,
                        "predicted": cyc.predict(board, region(2, "cycles"), region(2, "beats"), macs),
                        "max_abs_err": r["generic_max_abs_err_e9"] * 1e-9}
    else:
        r["generic"] = None
    r["max_abs_err"] = r["max_abs_err_e9"] * 1e-9
    r["elf"] = elf
    r["clock"] = (f"instructions counted exactly, cycles from the {core} model "
                  "(device/timing, docs/timing-model.md); QEMU -icount shift=0")
    return r

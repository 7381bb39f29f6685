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
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from neuromotor.errors import UserError
from neuromotor.paths import SOURCE_ROOT, cache_dir, require_checkout
from neuromotor.safe_write import atomic_write

from . import cycles as cyc
from .descriptor import load_board

BAREMETAL_DIR = SOURCE_ROOT / "device" / "baremetal"
ACT_CODES = {"identity": 0, "linear": 0, "relu": 1, "tanh": 2}


def _vars(board, sizes, acts, repeat, generic=None):
    sizes = [int(s) for s in sizes]
    if len(sizes) < 2:
        raise UserError("bare metal: need at least an input and an output size")
    if acts is None:
        acts = ["relu"] * (len(sizes) - 2) + ["identity"]
    codes = [ACT_CODES[a] if isinstance(a, str) else int(a) for a in acts]
    if len(codes) != len(sizes) - 1:
        raise UserError("bare metal: one activation per layer")
    out = [f"BOARD={board}", f"SIZES={','.join(map(str, sizes))}", f"ACTS={','.join(map(str, codes))}",
           f"REPEAT={int(repeat)}"]
    if generic is not None:  # a real board's generic build (neuromotor.boards.cycles.generic_build_of)
        out.append(f"GENERIC_EXTRA={' '.join(generic['extra'])}")
    return out


def build_baremetal(board: str = "qemu-m7", sizes=(13, 64, 64, 4), acts=None, repeat: int = 200,
                    generic=None) -> str:
    """Build the program; return the ELF path. generic: a real board's generic build."""
    require_checkout("the bare-metal program")
    res = subprocess.run(["make", "-s", "-C", str(BAREMETAL_DIR), *_vars(board, sizes, acts, repeat, generic)],
                         capture_output=True, text=True)
    if res.returncode != 0:
        raise UserError(f"building the bare-metal program failed:\n{res.stdout}{res.stderr}")
    return res.stdout.strip().splitlines()[-1]


def run_baremetal(board: str = "qemu-m7", sizes=(13, 64, 64, 4), acts=None, repeat: int = 200,
                  timeout: float = 120, generic=None) -> dict:
    """Build and run it under QEMU -icount shift=0 with the cycle model; return the measurement.

    instructions_per_inference and cycles_per_inference come from the plugin's marks
    (exact counts, the timing loop's own cost subtracted); instructions_timer is the
    CMSDK timer's figure (40 instructions per tick) as a cross-check. generic: build the
    generic loops the way a real board's measured firmware did ([timing.generic],
    neuromotor.boards.cycles.generic_build_of); the fused kernel is unchanged.
    """
    b = load_board(board)
    elf = build_baremetal(board, sizes, acts, repeat, generic)
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
        # A generic library's weights and biases are const arrays compiled into the
        # program, which a microcontroller's linker puts in flash ([timing.flash]).
        n_params = sum(a * b + b for a, b in zip(r["sizes"], r["sizes"][1:]))
        r["generic"] = {"instructions": region(2, "insns"), "cycles": region(2, "cycles"),
                        "instructions_per_mac": region(2, "insns") / macs,
                        "cycles_per_mac": region(2, "cycles") / macs,
                        "const_bytes": 4 * n_params,
                        "predicted": cyc.predict(board, region(2, "cycles"), region(2, "beats"), macs,
                                                 flash_bytes=4 * n_params),
                        "max_abs_err": r["generic_max_abs_err_e9"] * 1e-9}
    else:
        r["generic"] = None
    r["max_abs_err"] = r["max_abs_err_e9"] * 1e-9
    r["elf"] = elf
    r["clock"] = (f"instructions counted exactly, cycles from the {core} model "
                  "(device/timing, docs/timing-model.md); QEMU -icount shift=0")
    return r


# PlatformIO (device/baremetal/platformio.ini). PlatformIO 6.2.0 pins its SCons as the
# package tool-scons ~4.41101.0, i.e. SCons 4.11.1: the same SCons from PyPI is put where
# PlatformIO looks for that package, so the emulated environments build without its registry.
PIO_VERSION = "6.2.0"
TOOL_SCONS_VERSION = "4.41101.0"


def pio_executable() -> str:
    for cand in (Path(sys.executable).with_name("pio"), shutil.which("pio")):
        if cand and Path(cand).exists():
            return str(cand)
    raise UserError("PlatformIO is not installed: pip install -e '.[platformio]'")


def pio_env() -> dict:
    """Environment for `pio`: a core directory in the cache with tool-scons provided from PyPI's scons."""
    core = cache_dir() / "platformio"
    pkg = core / "packages" / "tool-scons"
    files = {
        "scons.py": "from SCons.Script.Main import main\n\nif __name__ == \"__main__\":\n    main()\n",
        "package.json": json.dumps({"name": "tool-scons", "version": TOOL_SCONS_VERSION}),
        ".piopm": json.dumps({"type": "tool", "name": "tool-scons", "version": TOOL_SCONS_VERSION,
                              "spec": {"owner": "platformio", "id": None, "name": "tool-scons",
                                       "requirements": None, "uri": None}}),
    }
    pkg.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        path = pkg / name
        if not path.exists() or path.read_text() != text:
            atomic_write(path, text)
    # the build lands in the cache, not in device/baremetal/.pio
    return dict(os.environ, PLATFORMIO_CORE_DIR=str(core), PLATFORMIO_WORKSPACE_DIR=str(core / "baremetal"),
                PLATFORMIO_SETTING_ENABLE_TELEMETRY="No", PLATFORMIO_SETTING_CHECK_PLATFORMIO_INTERVAL="3650")


def pio_run(env_name: str, target: str | None = None, timeout: float = 300) -> str:
    """`pio run -d device/baremetal -e ENV [-t TARGET]`; returns its output."""
    cmd = [pio_executable(), "run", "-d", str(BAREMETAL_DIR), "-e", env_name]
    if target:
        cmd += ["-t", target]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, env=pio_env(), timeout=timeout,
                             stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise UserError(f"{' '.join(cmd)} did not finish within {timeout:.0f} s") from None
    if res.returncode != 0:
        raise UserError(f"{' '.join(cmd)} failed:\n{(res.stdout + res.stderr)[-3000:]}")
    return res.stdout + res.stderr

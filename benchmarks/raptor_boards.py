"""RAPTOR's foundation policy on the emulated boards: its own example replayed by MicroPython.

    make firmware BOARD=qemu-m7 (and the other boards), make natmods
    pip install foundation-policy        # its checkpoint; the dev extra installs it
    .venv/bin/python benchmarks/raptor_boards.py [--boards qemu-m7 ...]

The policy is imported from the package's checkpoint as `neuromotor import ... --env quadrotor`
does and deployed with `neuromotor deploy`; the checkpoint's example (2 sequences of 500 steps
of 22 observations, float32) is uploaded once as a binary file with mpremote and stepped on the
board, the GRU state reset at each sequence's start, by every backend the board has: the
firmware's kernels (nm_kernels), the natmod of the board's architecture and plain Python. The
board compares each action with the example's output itself and answers with the largest
|difference|, so only a few numbers cross the ~4 KB/s serial line.

The example's outputs are the network's, before the env's action bounds [-1, 1] clamp them (a
third of them lie outside), so the board replays the file's network without its clamp; the
deployed policy itself, clamp included, is replayed once more on the firmware's kernels against
the clamped example.

Times are instruction counts: QEMU runs with -icount shift=0 (one guest instruction per guest
ns) and the board reads time.ticks_cpu around each call. µs at the board's clock (bench's
prediction clock: the descriptor's predict_mhz, else a Teensy 4.1's 600 MHz) are *predicted*
at one instruction per cycle, not measured. Prints a table per board, writes
benchmarks/results/raptor_boards.json.
"""

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from benchutil import RESULTS, write_json

ENV_KWARGS = {"position_scale": 1, "rotor_speeds": False, "action_history": 1}
BOARDS = ("qemu-m4f", "qemu-m7", "qemu-rv32", "qemu-xtensa")
NATMOD = {"qemu-m4f": "armv7emsp", "qemu-m7": "armv7emdp", "qemu-rv32": "rv32imc", "qemu-xtensa": "xtensawin"}
LOOP_HZ = 400
MPREMOTE = str(Path(sys.executable).with_name("mpremote"))

# On the board: the example as (sequence, step, value) float32 in x.bin, its outputs in y.bin.
REPLAY = """
import sys, time
from array import array
sys.path.append('/')
import neuromotor_rt as rt
k = None if {module!r} == '' else __import__({module!r})
sizes, acts, net, clamp = rt.read_policy('/policy.nmp')
if {clamped!r}:
    p = rt.Policy.load('/policy.nmp', backend={backend!r}, kernels=k)
else:
    p = rt.Policy.create(sizes, acts, net, backend={backend!r}, kernels=k)
assert p.backend == {backend!r} and p.recurrent and sizes == [22, 16, 16, 4], (p.backend, sizes)
tick = getattr(time, 'ticks_cpu', None) or time.ticks_us
o, y = array('f', range(22)), array('f', range(4))
worst, ticks, n = 0.0, 0, 0
with open('x.bin', 'rb') as fx, open('y.bin', 'rb') as fy:
    for s in range(2):
        p.reset()
        for t in range(500):
            fx.readinto(o)
            fy.readinto(y)
            if {clamped!r}:
                for i in range(4):
                    y[i] = min(max(y[i], clamp[i]), clamp[4 + i])
            t0 = tick()
            a = p(o)
            ticks += time.ticks_diff(tick(), t0)
            n += 1
            for i in range(4):
                d = abs(a[i] - y[i])
                if not d <= worst:
                    worst = d
print('REPLAY', n, repr(worst), ticks, 'cpu' if hasattr(time, 'ticks_cpu') else 'us')
"""


def checkpoint() -> Path:
    import importlib_resources

    return Path(str(importlib_resources.files("foundation_policy").joinpath("blob", "checkpoint.h5")))


def build(directory) -> dict:
    """raptor.nmp imported from the installed package (the repository holds no weights), and the
    example as the binary files the board reads."""
    import h5py

    import neuromotor

    d = Path(directory)
    spec = neuromotor.import_policy(checkpoint(), d / "raptor.nmp", env="quadrotor", env_kwargs=ENV_KWARGS)
    with h5py.File(checkpoint(), "r") as f:
        x, y = f["example/input"][()], f["example/output"][()]
    assert x.shape == (500, 2, 22) and y.shape == (500, 2, 4), (x.shape, y.shape)
    for name, a in (("x.bin", x), ("y.bin", y)):
        np.ascontiguousarray(a.transpose(1, 0, 2), "<f4").tofile(d / name)
    return {"policy": d / "raptor.nmp", "x": d / "x.bin", "y": d / "y.bin", "spec": spec,
            "host_diff": spec.meta["import"]["example_max_abs_diff"]}


def mpremote(port, *args, timeout=600) -> str:
    res = subprocess.run([MPREMOTE, "connect", port, *map(str, args)], capture_output=True, text=True,
                         timeout=timeout)
    if res.returncode:
        raise RuntimeError(f"mpremote {' '.join(map(str, args))} failed: {res.stdout}\n{res.stderr}")
    return res.stdout


def natmod_path(board_name) -> Path:
    from neuromotor.paths import cache_dir

    return cache_dir() / "natmods" / NATMOD[board_name] / "nm_kernels_natmod.mpy"


def upload(port, files) -> None:
    """The policy deployed as a user deploys it, and the example's files beside it."""
    res = subprocess.run([sys.executable, "-m", "neuromotor", "deploy", files["policy"], "--port", port],
                         capture_output=True, text=True, timeout=600)
    if res.returncode:
        raise RuntimeError(f"neuromotor deploy failed: {res.stdout}\n{res.stderr}")
    mpremote(port, "cp", files["x"], ":x.bin", "+", "cp", files["y"], ":y.bin")


def replay(port, backend, module="", clamped=False) -> dict:
    """The largest |difference| from the example over both sequences, and the board's ticks per
    step (ticks_cpu where the port has it), one backend."""
    out = mpremote(port, "exec", REPLAY.format(module=module, backend=backend, clamped=clamped))
    line = [w for w in out.splitlines() if w.startswith("REPLAY ")]
    if not line:
        raise RuntimeError(f"the board's replay printed no result: {out}")
    _, n, worst, ticks, clock = line[-1].split()
    return {"steps": int(n), "max_abs_diff": float(worst), "ticks_per_step": int(ticks) / int(n), "clock": clock}


def board_rows(board_name, port, files, log=print) -> list:
    """One row per backend: max |diff| on the example, instructions per step, predicted µs."""
    from neuromotor.boards import load_board
    from neuromotor.boards.bench import DEFAULT_PREDICT_MHZ

    q = load_board(board_name).qemu
    mhz = float(q.get("predict_mhz", DEFAULT_PREDICT_MHZ))
    runs = [("firmware native (nm_kernels)", "native", "nm_kernels", False),
            ("firmware native, deployed clamp", "native", "nm_kernels", True),
            ("python", "python", "", False)]
    mpy = natmod_path(board_name)
    if mpy.exists():
        mpremote(port, "cp", mpy, ":nm_kernels_natmod.mpy")
        runs.insert(2, (f"natmod ({NATMOD[board_name]})", "native", "nm_kernels_natmod", False))
    rows = []
    try:
        for label, backend, module, clamped in runs:
            log(f"  {board_name}: replaying the example on {label} ...")
            r = replay(port, backend, module, clamped)
            per_tick = q["instructions_per_us"] * (1e6 / q["ticks_cpu_hz"] if r["clock"] == "cpu" else 1)
            instr = r["ticks_per_step"] * per_tick
            us = instr / mhz
            rows.append({"board": board_name, "backend": label, "clamped": clamped, "steps": r["steps"],
                         "max_abs_diff": r["max_abs_diff"], "instructions_per_step": instr, "predict_mhz": mhz,
                         "predicted_us": us, f"fits_{LOOP_HZ}hz": us <= 1e6 / LOOP_HZ})
    finally:
        if mpy.exists():
            subprocess.run([MPREMOTE, "connect", port, "fs", "rm", ":nm_kernels_natmod.mpy"],
                           capture_output=True, timeout=60)
    return rows


def table(rows) -> str:
    lines = [f"{'board':<12} {'backend':<32} {'max |diff|':>10} {'instr/step':>11} {'MHz':>5} "
             f"{'pred µs':>9} {'fits ' + str(LOOP_HZ) + ' Hz':>11}"]
    for r in rows:
        lines.append(f"{r['board']:<12} {r['backend']:<32} {r['max_abs_diff']:>10.2e} "
                     f"{r['instructions_per_step']:>11.0f} {r['predict_mhz']:>5.0f} {r['predicted_us']:>9.1f} "
                     f"{'yes' if r[f'fits_{LOOP_HZ}hz'] else 'no':>11}")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--boards", nargs="+", default=list(BOARDS), choices=BOARDS)
    p.add_argument("--out", default=str(RESULTS / "raptor_boards.json"))
    args = p.parse_args(argv)
    from neuromotor import boards

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        files = build(tmp)
        for name in args.boards:
            if not shutil.which(boards.load_board(name).qemu["system"]):
                print(f"{name}: {boards.load_board(name).qemu['system']} is not installed; skipped")
                continue
            instance = f"{name}-raptor-bench"
            b = boards.start(name, instance=instance, build=True, die_with_parent=True)
            try:
                upload(b.port, files)
                rows += board_rows(name, b.port, files)
            finally:
                boards.stop(instance)
    print(f"RAPTOR (22 -> dense 16 relu -> GRU 16 -> dense 4) replaying its example, 2 x 500 steps; "
          f"host reference max |diff| {files['host_diff']:.2g}")
    print("instructions per step: QEMU -icount shift=0 guest time of each call (time.ticks_cpu); "
          "pred µs: PREDICTED at the clock given, 1 instruction per cycle")
    print(table(rows))
    path = write_json(args.out, {"env_kwargs": ENV_KWARGS, "loop_hz": LOOP_HZ, "example": "2 x 500 steps",
                                 "host_max_abs_diff": files["host_diff"],
                                 "timing": "instruction counts (QEMU -icount shift=0), predicted at 1 instruction "
                                           "per cycle at predict_mhz; not measured on hardware",
                                 "rows": rows})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

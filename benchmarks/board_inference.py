"""Table-2-style inference benchmark on the emulated boards, over the serial line.

For each emulated board: start it (QEMU -icount shift=0), deploy a 13->64->64->4
ReLU policy (the RLtools paper's network) with `neuromotor deploy`, time every
backend through the NMB/1 bench server, and stop the board. Next to it: the same
kernel as a bare-metal C program (no MicroPython) on the same emulated core, so
the MicroPython overhead is a ratio measured in the same run.

All times on emulated boards are instruction-count time: 1 guest instruction =
1 ns. "pred µs" = instructions / MHz, predicted at --predict-mhz (default 600,
Teensy 4.1) with one instruction per cycle - a prediction, not a measurement.

    .venv/bin/python benchmarks/board_inference.py [--boards qemu-m7,qemu-m4f] [-n 1000] [--json]

Writes benchmarks/results/board_inference.json and .png; with --json the last
line is one JSON object: per board, per backend median_us, p99_us,
instructions_per_mac (+ bare-metal figures and overhead_ratio).
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchutil import RESULTS, macs, plt, save_png, write_json

SIZES = (13, 64, 64, 4)
ACTS = ("relu", "relu", "identity")


def make_policy(path):
    from neuromotor.export import write_policy
    from neuromotor.policy import PolicySpec
    rng = np.random.default_rng(0)
    n = len(SIZES) - 1
    spec = PolicySpec([rng.normal(0, 1 / np.sqrt(SIZES[i]), (SIZES[i + 1], SIZES[i])) for i in range(n)],
                      [rng.normal(0, 0.1, SIZES[i + 1]) for i in range(n)], list(ACTS),
                      np.zeros(SIZES[0]), np.ones(SIZES[0]), np.ones(SIZES[-1]), np.zeros(SIZES[-1]))
    write_policy(spec, path)
    return spec


def bench_board(name, policy, n, predict_mhz, log):
    from neuromotor.bench import bench_port
    from neuromotor import boards
    from neuromotor.deploy import deploy
    instance = f"{name}-bench-{os.getpid()}"
    try:
        b = boards.start(name, instance=instance, build=True, die_with_parent=True)
        log(f"{name}: running on {b.port} (QEMU pid {b.pid}); deploying")
        deploy(b.port, str(policy), log=lambda s: None)
        return bench_port(b.port, n=n, predict_mhz=predict_mhz, log=log)
    finally:
        boards.stop(instance)


def baremetal(name, log):
    try:
        from neuromotor.boards.baremetal import run_baremetal
        r = run_baremetal(name, sizes=SIZES, acts=list(ACTS), repeat=200)
        return {"instructions": r["instructions_per_inference"], "instructions_per_mac": r["instructions_per_mac"],
                "max_abs_err": r.get("max_abs_err")}
    except Exception as exc:  # no bare-metal build for this core (e.g. RISC-V)
        log(f"{name}: no bare-metal figure ({exc})")
        return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boards", default=None, help="comma-separated emulated boards "
                    "(default: qemu-m4f,qemu-m7, plus qemu-rv32 when qemu-system-riscv32 exists)")
    ap.add_argument("-n", type=int, default=1000, help="timed inferences per backend (python: n/20)")
    ap.add_argument("--predict-mhz", type=float, default=600.0)
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    boards = args.boards.split(",") if args.boards else (
        ["qemu-m4f", "qemu-m7"] + (["qemu-rv32"] if shutil.which("qemu-system-riscv32") else []))
    log = lambda s: print(s, file=sys.stderr if args.json else sys.stdout, flush=True)  # noqa: E731
    tmp = Path(tempfile.mkdtemp(prefix="nm-bench-"))
    policy = tmp / "policy_13_64_64_4.nmp"
    make_policy(policy)
    results = {}
    t0 = time.monotonic()
    for name in boards:
        try:
            res = bench_board(name, policy, args.n, args.predict_mhz, log)
        except Exception as exc:
            log(f"{name}: skipped ({exc})")
            continue
        bm = baremetal(name, log)
        entry = {"port": res["port"], "backends": {}, "unavailable": res["unavailable"], "baremetal": bm}
        for b, s in res["backends"].items():
            entry["backends"][b] = {k: s.get(k) for k in (
                "median_us", "p99_us", "min_us", "mean_us", "instructions", "instructions_per_mac",
                "instructions_median_per_call", "predicted_us", "predicted_khz", "alloc_per_call")}
        if bm and "native" in entry["backends"]:
            entry["overhead_ratio"] = entry["backends"]["native"]["instructions"] / bm["instructions"]
        results[name] = entry
    shutil.rmtree(tmp, ignore_errors=True)

    lines = [f"13->64->64->4 ReLU policy ({macs(SIZES)} multiply-adds), emulated boards: instruction-count time "
             f"(QEMU -icount shift=0); 'pred' = predicted at {args.predict_mhz:.0f} MHz, 1 instruction/cycle",
             f"{'board':10s} {'backend':12s} {'instr':>10s} {'instr/MAC':>9s} {'pred µs':>9s} {'pred kHz':>9s} "
             f"{'guest p99 µs':>12s} {'vs C':>6s}"]
    for name, e in results.items():
        bm = e["baremetal"]
        if bm:
            lines.append(f"{name:10s} {'bare-metal C':12s} {bm['instructions']:10.0f} {bm['instructions_per_mac']:9.2f} "
                         f"{bm['instructions'] / args.predict_mhz:9.2f} {1000 * args.predict_mhz / bm['instructions']:9.1f} "
                         f"{'':>12s} {1.0:6.2f}")
        for b, s in e["backends"].items():
            ratio = f"{s['instructions'] / bm['instructions']:6.2f}" if bm else f"{'-':>6s}"
            lines.append(f"{name:10s} {b:12s} {s['instructions']:10.0f} {s['instructions_per_mac']:9.2f} "
                         f"{s['predicted_us']:9.2f} {s['predicted_khz']:9.2f} {s['p99_us']:12.0f} {ratio}")
        for b, why in e["unavailable"].items():
            lines.append(f"{name:10s} {b:12s} unavailable: {why}")
    lines.append("design goals on qemu-m7: native <= 2.5 instr/MAC; MicroPython overhead <= 1.15x bare-metal C")
    lines.append(f"({time.monotonic() - t0:.0f} s)")
    print("\n".join(lines), file=sys.stderr if args.json else sys.stdout)

    out = Path(args.out)
    summary = {"network": "-".join(map(str, SIZES)), "macs": macs(SIZES), "predict_mhz": args.predict_mhz,
               "clock": "instruction-count time (QEMU -icount shift=0, 1 instruction = 1 ns guest)",
               "boards": results}
    write_json(out / "board_inference.json", summary)
    plot(results, out / "board_inference.png", args.predict_mhz)
    if args.json:
        print(json.dumps(summary))
    return 0 if results else 1


def plot(results, path, mhz):
    labels, vals = [], []
    for name, e in results.items():
        if e["baremetal"]:
            labels.append(f"{name}\nbare-metal C")
            vals.append(e["baremetal"]["instructions"])
        for b, s in e["backends"].items():
            labels.append(f"{name}\n{b}")
            vals.append(s["instructions"])
    fig, ax = plt.subplots(figsize=(max(5, 1.1 * len(vals)), 4))
    bars = ax.bar(range(len(vals)), vals, color=["#777" if "bare" in x else "#3a7" if "native" in x else "#c55"
                                                  for x in labels])
    ax.bar_label(bars, labels=[f"{v / mhz:.3g} µs" for v in vals], fontsize=7)
    ax.set_xticks(range(len(vals)), labels, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("instructions per inference (log)")
    ax.set_title(f"13->64->64->4 inference on emulated boards (labels: predicted at {mhz:.0f} MHz)")
    save_png(fig, path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())

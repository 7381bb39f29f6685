"""The cycle model against the RLtools paper's measured "generic" inference times (Table 2).

The generic forward pass (device/baremetal/nm_generic.c: compile-time sizes, the network
a global object read through its matrices' pointers, -O3 by default) runs as a bare-metal
program on the emulated Cortex-M4F and Cortex-M7 under the cycle model (device/timing,
docs/timing-model.md). For each paper board it is built the way the firmware the figure
was measured in built it ([timing.generic] in board.toml: optimisation level, the
firmware's code-generation flags, where the benchmark kept its buffers, whether the
weights were const). Its core cycles (zero-wait memory) plus the memory term of where the
weights were ([timing.flash] for const arrays, [timing.data] for initialised data) give
the prediction, at the clock the paper's board ran at (Appendix H: Crazyflie 168 MHz,
PixRacer Pro 460 MHz, Teensy 4.1 600 MHz), beside the paper's measured figure and the
plain -O3 build. The fused kernel's bare-metal figure is shown too (its packed weights
are in RAM: no flash term); with --micropython, also the fused kernel called from
MicroPython on the emulated boards, plus the board's heap term ([timing.heap]: the
policy's arrays in MicroPython's heap), at each real board's own clock, beside half of
the paper's measured optimised time.

    .venv/bin/python benchmarks/cycle_validation.py [--micropython] [--json]

Writes benchmarks/results/cycle_validation.json. The model is deterministic: the
figures do not depend on the machine's load.
"""

import argparse
import json
import sys

from benchutil import RESULTS, write_json

SIZES = (13, 64, 64, 4)
ACTS = ("relu", "relu", "identity")
# RLtools paper, Table 2 (generic and optimised columns, µs) and the clock each board ran at (Appendix H).
PAPER = {
    "stm32f405": {"board": "Crazyflie 2.x", "generic_us": 743.0, "optimised_us": 293.0, "clock_hz": 168_000_000},
    "stm32h743": {"board": "PixRacer Pro (Pixhawk 6C)", "generic_us": 133.0, "optimised_us": 53.0,
                  "clock_hz": 460_000_000},
    "teensy41": {"board": "Teensy 4.1", "generic_us": 64.0, "optimised_us": 41.0, "clock_hz": 600_000_000},
}
EMULATED = ("qemu-m4f", "qemu-m7")
TARGET = 0.25


def paper_boards():
    """[(real board, emulated board)] for the paper's boards, in the paper's order."""
    from neuromotor.boards import cycles as cyc
    pairs = {real: emu for emu in EMULATED for real, _, _ in cyc.real_boards(emu) if real in PAPER}
    return [(real, pairs[real]) for real in PAPER if real in pairs]


def rows_from(runs, plain):
    """One row per paper board.

    runs: {real board: run_baremetal(...) with that board's generic build};
    plain: {emulated board: run_baremetal(...) of the default (-O3) build}.
    """
    from neuromotor.boards import cycles as cyc
    rows = []
    for real, emu in paper_boards():
        if real not in runs:
            continue
        r, paper = runs[real], PAPER[real]
        build = cyc.generic_build_of(real)
        g = r["generic"]
        memory = cyc.stream_cycles(cyc.generic_weights_memory(real, build), g["const_bytes"])
        total = g["cycles"] + memory
        us = total / paper["clock_hz"] * 1e6
        p = plain[emu]["generic"]
        plain_us = (p["cycles"] + cyc.stream_cycles(cyc.flash_of(real), p["const_bytes"])) / paper["clock_hz"] * 1e6
        rows.append({"board": real, "paper_board": paper["board"], "emulated": emu,
                     "build": {k: build[k] for k in cyc.GENERIC_KEYS} if build else None,
                     "core_cycles": g["cycles"], "memory_cycles": memory, "cycles": total,
                     "cycles_per_mac": total / r["macs"], "clock_mhz": paper["clock_hz"] / 1e6,
                     "predicted_us": us, "measured_us": paper["generic_us"],
                     "error": us / paper["generic_us"] - 1.0,
                     "within_target": abs(us / paper["generic_us"] - 1.0) <= TARGET,
                     "plain_o3_us": plain_us, "plain_o3_error": plain_us / paper["generic_us"] - 1.0,
                     "fused_cycles": r["cycles_per_inference"],
                     "fused_us": r["cycles_per_inference"] / paper["clock_hz"] * 1e6,
                     "half_optimised_us": paper["optimised_us"] / 2})
    return rows


def micropython_rows(n, log):
    """The fused kernel called from MicroPython (neuromotor bench on boards started with the
    cycle model), with each real board's heap term."""
    import tempfile
    from pathlib import Path

    from board_inference import bench_board, make_policy
    from neuromotor.boards import cycles as cyc
    n_params = sum(a * b + b for a, b in zip(SIZES, SIZES[1:]))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        policy = Path(tmp) / "policy.nmp"
        make_policy(policy)
        for emu in EMULATED:
            s = bench_board(emu, policy, n, 600.0, log)["backends"]["native"]
            pred = cyc.predict(emu, s["cycles"], macs=s.get("macs"), heap_bytes=4 * n_params)
            for real, p in pred.items():
                if real in PAPER:
                    goal = PAPER[real]["optimised_us"] / 2
                    rows.append({"board": real, "emulated": emu, "core_cycles": s["cycles"],
                                 "heap_cycles": p["heap_cycles"], "cycles": p["cycles"],
                                 "clock_mhz": p["clock_mhz"], "predicted_us": p["us"], "goal_us": goal,
                                 "met": p["us"] <= goal})
    return sorted(rows, key=lambda x: list(PAPER).index(x["board"]))


def micropython_table(rows):
    lines = ["fused kernel called from MicroPython (policy arrays in the heap) at each board's clock "
             "vs half of the paper's measured optimised time",
             f"{'board':10s} {'model':9s} {'core cyc':>9s} {'heap cyc':>8s} {'MHz':>4s} {'pred µs':>8s} "
             f"{'goal µs':>8s}"]
    for r in rows:
        lines.append(f"{r['board']:10s} {r['emulated']:9s} {r['core_cycles']:9.0f} {r['heap_cycles']:8d} "
                     f"{r['clock_mhz']:4.0f} {r['predicted_us']:8.1f} {r['goal_us']:8.1f}  "
                     f"{'met' if r['met'] else 'not met'}")
    return lines


def table(rows):
    lines = ["generic 13->64->64->4 (device/baremetal/nm_generic.c) built as each paper board's firmware built it "
             "([timing.generic]), through the cycle model, vs the RLtools paper's measured generic column (Table 2), "
             "at the paper's clocks",
             f"{'board':10s} {'model':9s} {'build':26s} {'core cyc':>9s} {'mem cyc':>7s} {'cyc/MAC':>8s} {'MHz':>4s} "
             f"{'pred µs':>8s} {'paper µs':>8s} {'error':>7s}  {'-O3 µs':>6s} {'error':>7s}  "
             f"{'fused µs':>8s} {'paper opt/2':>11s}"]
    for r in rows:
        b = r["build"]
        build = f"{b['opt']} {b['buffers']}/{b['output']} {b['weights']}" if b else "-O3 (default)"
        if b and "-fno-strict-aliasing" in b["cflags"]:
            build += " nsa"
        lines.append(f"{r['board']:10s} {r['emulated']:9s} {build:26s} {r['core_cycles']:9.0f} "
                     f"{r['memory_cycles']:7d} {r['cycles_per_mac']:8.2f} {r['clock_mhz']:4.0f} "
                     f"{r['predicted_us']:8.1f} {r['measured_us']:8.0f} {100 * r['error']:+6.1f}%  "
                     f"{r['plain_o3_us']:6.1f} {100 * r['plain_o3_error']:+6.1f}%  {r['fused_us']:8.1f} "
                     f"{r['half_optimised_us']:11.1f}")
    lines.append("(build: optimisation level, buffers/output placement and where the weights are ([timing.generic]); "
                 "nsa: -fno-strict-aliasing; mem cyc: the weights' memory term; -O3: the default build, const "
                 "weights in flash)")
    met = sum(r["within_target"] for r in rows)
    lines.append(f"within {100 * TARGET:.0f}% of the measured figure: {met} of {len(rows)} boards")
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--json", action="store_true", help="also print the result as one JSON line")
    ap.add_argument("--micropython", action="store_true",
                    help="also bench the fused kernel from MicroPython on the emulated boards (minutes)")
    ap.add_argument("-n", type=int, default=200, help="timed inferences per board with --micropython")
    args = ap.parse_args(argv)
    from neuromotor.boards.baremetal import run_baremetal
    out = sys.stderr if args.json else sys.stdout
    from neuromotor.boards.cycles import generic_build_of
    plain = {emu: run_baremetal(emu, sizes=SIZES, acts=list(ACTS), repeat=200) for emu in EMULATED}
    runs = {real: run_baremetal(emu, sizes=SIZES, acts=list(ACTS), repeat=200, generic=generic_build_of(real))
            for real, emu in paper_boards()}
    rows = rows_from(runs, plain)
    print("\n".join(table(rows)), file=out)
    mp_rows = None
    if args.micropython:
        mp_rows = micropython_rows(args.n, lambda msg: print(msg, file=sys.stderr))
        print("\n" + "\n".join(micropython_table(mp_rows)), file=out)
    doc = {"network": list(SIZES), "activations": list(ACTS), "rows": rows, "micropython": mp_rows,
           "note": "cycle model (device/timing, docs/timing-model.md), deterministic; "
                   "paper: RLtools (arXiv 2306.03530) Table 2 and Appendix H"}
    path = write_json(f"{args.out}/cycle_validation.json", doc)
    print(f"wrote {path}", file=sys.stderr)
    if args.json:
        print(json.dumps(doc))


if __name__ == "__main__":
    main()

"""Table-2-style inference benchmark on the emulated boards, over the serial line.

For each emulated board: start it (QEMU -icount shift=0), deploy a 13->64->64->4
ReLU policy (the RLtools paper's network) with `neuromotor deploy`, time every
backend through the NMB/1 bench server, and stop the board. Next to it: the same
kernel as a bare-metal C program (no MicroPython) on the same emulated core, so
the MicroPython overhead is a ratio measured in the same run.

All times on emulated boards are instruction-count time: 1 guest instruction =
1 ns. The boards run under the cycle model (device/timing, docs/timing-model.md):
next to the instruction counts, modelled cycles, cycles per multiply-add and µs
predicted at the clock of each real board the emulated core stands for (qemu-m7:
teensy41 600 MHz, stm32h743 480 MHz; qemu-m4f: stm32f405 168 MHz; qemu-rv32:
esp32c3 160 MHz) - predictions, not measurements. qemu-xtensa (the ESP32's ABI on
QEMU's de233_fpu core) has no cycle model: its µs are predicted at the ESP32's
240 MHz at one instruction per cycle, from the instruction count alone. Every board's
actions for a few observations are compared with NumPy's (max |board - NumPy|).

The model against the paper's measured figures (the generic forward pass, and the
fused kernel against half the optimised times, at the paper's clocks with the flash
and heap terms) is benchmarks/cycle_validation.py.

    .venv/bin/python benchmarks/board_inference.py [--boards qemu-m7,qemu-m4f] [-n 1000] [--json]

int8 rows: the same network quantised to int8 (per-channel weights, calibrated on
random observations; docs/policy-format.md, version 3), deployed and timed the same
way, and the bare-metal program's int8 run (make NM_INT8=1) on the Arm cores and
device/baremetal/xtensawin on qemu-xtensa's core.

Writes benchmarks/results/board_inference.json and .png; with --json the last
line is one JSON object: per board, per backend median_us, p99_us,
instructions_per_mac, cycles_per_mac, predicted µs per real board (+ bare-metal
figures and overhead_ratio; "int8": the same per board).

--gru instead times a recurrent policy (13 -> GRU 64 -> 4 tanh: 3·64·(13 + 64) + 64·4 =
15,040 multiply-adds) against an MLP of about as many (13 -> 114 -> 114 -> 4, ReLU:
14,934), native backend, deployed and timed the same way, and writes
board_inference_gru.json: instructions per multiply-add of both and their ratio
(goal: the GRU's at most 1.3x the MLP's), float32 and int8 (both calibrated on random
inputs, the GRU along sequences: its gates and state in integers).
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
    from neuromotor.policy import write_policy
    from neuromotor.policy.spec import PolicySpec
    rng = np.random.default_rng(0)
    n = len(SIZES) - 1
    spec = PolicySpec([rng.normal(0, 1 / np.sqrt(SIZES[i]), (SIZES[i + 1], SIZES[i])) for i in range(n)],
                      [rng.normal(0, 0.1, SIZES[i + 1]) for i in range(n)], list(ACTS),
                      np.zeros(SIZES[0]), np.ones(SIZES[0]), np.ones(SIZES[-1]), np.zeros(SIZES[-1]))
    write_policy(spec, path)
    return spec


def make_int8_policy(spec, path):
    from neuromotor.policy import quantize, write_policy
    spec.action_low, spec.action_high = -np.full(SIZES[-1], 10, np.float32), np.full(SIZES[-1], 10, np.float32)
    calib = np.random.default_rng(1).normal(0, 1, (1000, SIZES[0])).astype(np.float32)
    qp = quantize(spec, calib)
    write_policy(qp, path)
    return qp


def check_obs():
    return np.random.default_rng(2).normal(0, 1, (8, SIZES[0])).astype(np.float32)


def vs_numpy(port, want, obs):
    """max |board action - NumPy's| over `obs`, per backend that loads the deployed policy."""
    from neuromotor.boards.link import LinkClient
    out = {}
    with LinkClient(port) as c:
        for backend in ("native", "python"):
            c.load("/policy.nmp", backend)
            got = np.stack([c.act(o)[0] for o in obs])
            out[backend] = float(np.abs(got - want).max())
    return out


GRU_H = 64
MLP_SAME = (13, 114, 114, 4)


def make_gru_policies(tmp):
    """The GRU policy and the MLP of about its multiply-adds, as files."""
    from neuromotor.policy import write_policy
    from neuromotor.policy.spec import PolicySpec
    rng = np.random.default_rng(1)
    h, n_in = GRU_H, SIZES[0]
    gru = PolicySpec([rng.normal(0, 1 / np.sqrt(n_in), (3 * h, n_in)), rng.normal(0, 1 / np.sqrt(h), (4, h))],
                     [rng.normal(0, 0.1, 3 * h), rng.normal(0, 0.1, 4)], ["identity", "tanh"],
                     np.zeros(n_in), np.ones(n_in), np.ones(4), np.zeros(4), np.full(4, -1.0), np.full(4, 1.0),
                     kinds=["gru", "dense"], hidden_weights=[rng.normal(0, 1 / np.sqrt(h), (3 * h, h)), None],
                     hidden_biases=[rng.normal(0, 0.1, 3 * h), None], initial_hidden=[np.zeros(h), None])
    n = len(MLP_SAME) - 1
    mlp = PolicySpec([rng.normal(0, 1 / np.sqrt(MLP_SAME[i]), (MLP_SAME[i + 1], MLP_SAME[i])) for i in range(n)],
                     [rng.normal(0, 0.1, MLP_SAME[i + 1]) for i in range(n)], ["relu", "relu", "tanh"],
                     np.zeros(n_in), np.ones(n_in), np.ones(4), np.zeros(4), np.full(4, -1.0), np.full(4, 1.0))
    paths = {"gru": tmp / "gru_13_64_4.nmp", "mlp": tmp / "mlp_13_114_114_4.nmp"}
    write_policy(gru, paths["gru"])
    write_policy(mlp, paths["mlp"])
    # int8 versions, calibrated on random inputs (the GRU along 32 sequences of 50 steps)
    from neuromotor.policy.quantize import calibrate
    calib = np.random.default_rng(3).normal(0, 1, (50, 32, n_in)).astype(np.float32)
    paths["gru int8"], paths["mlp int8"] = tmp / "gru8.nmp", tmp / "mlp8.nmp"
    write_policy(calibrate(gru, calib, headroom=2.0)[0], paths["gru int8"])
    write_policy(calibrate(mlp, calib.reshape(-1, n_in), headroom=2.0)[0], paths["mlp int8"])
    return paths


def gru_vs_mlp(boards_list, n, log, out):
    """Instructions per multiply-add of the GRU policy and the MLP of as many, per board."""
    from neuromotor import boards
    from neuromotor.boards.bench import bench_port
    from neuromotor.boards.deploy import deploy
    tmp = Path(tempfile.mkdtemp(prefix="nm-bench-gru-"))
    paths = make_gru_policies(tmp)
    results = {}
    for name in boards_list:
        instance = f"{name}-bench-gru-{os.getpid()}"
        try:
            b = boards.start(name, instance=instance, build=True, die_with_parent=True)
            entry = {}
            for kind, path in paths.items():
                log(f"{name}: deploying the {kind} policy")
                deploy(b.port, str(path), log=lambda s: None)
                s = bench_port(b.port, n=n, backends=["native"], log=log)["backends"]["native"]
                entry[kind] = {"macs": s["macs"], "instructions_per_mac": s["instructions_per_mac"],
                               "median_us": s["median_us"]}
            entry["ratio"] = entry["gru"]["instructions_per_mac"] / entry["mlp"]["instructions_per_mac"]
            entry["ratio int8"] = entry["gru int8"]["instructions_per_mac"] / entry["mlp int8"]["instructions_per_mac"]
            results[name] = entry
        except Exception as exc:
            log(f"{name}: skipped ({exc})")
        finally:
            boards.stop(instance)
    shutil.rmtree(tmp, ignore_errors=True)
    lines = ["GRU 13->64(GRU)->4 against MLP 13->114->114->4, native backend, instructions per multiply-add "
             "(QEMU -icount shift=0; per call, through Policy); float32, then int8",
             f"{'board':12s} {'GRU MACs':>8s} {'GRU i/MAC':>9s} {'MLP MACs':>8s} {'MLP i/MAC':>9s} {'ratio':>6s}"
             f" {'GRU8 i/MAC':>10s} {'MLP8 i/MAC':>10s} {'ratio8':>6s}"]
    for name, e in results.items():
        lines.append(f"{name:12s} {e['gru']['macs']:8d} {e['gru']['instructions_per_mac']:9.2f} "
                     f"{e['mlp']['macs']:8d} {e['mlp']['instructions_per_mac']:9.2f} {e['ratio']:6.2f}"
                     f" {e['gru int8']['instructions_per_mac']:10.2f} {e['mlp int8']['instructions_per_mac']:10.2f}"
                     f" {e['ratio int8']:6.2f}  {'met' if e['ratio'] <= 1.3 else 'NOT met'} (float goal <= 1.3)")
    log("\n".join(lines))
    summary = {"gru": "13-64gru-4", "mlp": "-".join(map(str, MLP_SAME)), "boards": results}
    write_json(Path(out) / "board_inference_gru.json", summary)
    return summary


def has_cycle_model(name):
    from neuromotor.boards import load_board
    return "core" in (load_board(name).data.get("timing") or {})


def bench_board(name, policy, n, predict_mhz, log, refs, int8_policy=None):
    """refs: {"float": NumPy's actions, "int8": the int8 reference's, "obs": the observations}."""
    from neuromotor.boards.bench import bench_port
    from neuromotor import boards
    from neuromotor.boards.deploy import deploy
    instance = f"{name}-bench-{os.getpid()}"
    try:
        b = boards.start(name, instance=instance, build=True, die_with_parent=True, cycles=has_cycle_model(name))
        log(f"{name}: running on {b.port} (QEMU pid {b.pid}); deploying")
        deploy(b.port, str(policy), log=lambda s: None)
        res = bench_port(b.port, n=n, predict_mhz=predict_mhz, log=log)
        res["vs_numpy"] = vs_numpy(b.port, refs["float"], refs["obs"])
        if int8_policy is not None:
            log(f"{name}: deploying the int8 policy")
            deploy(b.port, str(int8_policy), log=lambda s: None)
            res["int8"] = bench_port(b.port, n=n, predict_mhz=predict_mhz, log=log)
            res["int8"]["vs_numpy"] = vs_numpy(b.port, refs["int8"], refs["obs"])
        return res
    finally:
        boards.stop(instance)


def baremetal_xtensawin(spec, qp, obs, mhz):
    """device/baremetal/xtensawin on de233_fpu: the same kernels, compiler and options as the
    xtensawin natmods, with no MicroPython. Per kind ("float", "int8") the entry baremetal()
    gives, without cycles (no cycle model for this core)."""
    from neuromotor.boards import policy_baremetal as pb
    r = pb.run_policy("xtensawin", spec, qp, obs, repeat=20)
    out = {}
    for kind, want in (("float", spec.forward(obs)), ("int8", qp.forward(obs))):
        ins = r["instructions_per_inference"][kind]
        out[kind] = {"instructions": ins, "instructions_per_mac": r["instructions_per_mac"][kind],
                     "cycles": None, "cycles_per_mac": None,
                     "predicted_us": {f"esp32 ({mhz:.0f} MHz, 1 instr/cycle)": ins / mhz},
                     "generic": None, "max_abs_err": float(np.abs(r[kind] - want).max())}
    return out


def baremetal(name, log, int8=False):
    try:
        from neuromotor.boards.baremetal import run_baremetal
        # The bare-metal Makefile takes NM_INT8 from the environment (the int8 run).
        os.environ["NM_INT8"] = "1" if int8 else "0"
        try:
            r = run_baremetal(name, sizes=SIZES, acts=list(ACTS), repeat=200)
        finally:
            del os.environ["NM_INT8"]
        return {"instructions": r["instructions_per_inference"], "instructions_per_mac": r["instructions_per_mac"],
                "cycles": r["cycles_per_inference"], "cycles_per_mac": r["cycles_per_mac"],
                "predicted_us": {n: p["us"] for n, p in r["predicted"].items()},
                "generic": r["generic"], "max_abs_err": r.get("max_abs_err")}
    except Exception as exc:  # no bare-metal build for this core (e.g. RISC-V)
        log(f"{name}: no bare-metal figure ({exc})")
        return None


def backend_entry(res, bm):
    entry = {"port": res["port"], "backends": {}, "unavailable": res["unavailable"], "baremetal": bm,
             "predict_mhz": res.get("predict_mhz"), "vs_numpy": res.get("vs_numpy")}
    for b, s in res["backends"].items():
        entry["backends"][b] = {k: s.get(k) for k in (
            "median_us", "p99_us", "min_us", "mean_us", "instructions", "instructions_per_mac",
            "instructions_median_per_call", "predicted_us", "predicted_khz", "alloc_per_call",
            "cycles", "cycles_per_mac", "cycles_per_instruction")}
        entry["backends"][b]["predicted_boards_us"] = {n: p["us"] for n, p in
                                                       (s.get("predicted_boards") or {}).items()} or {
            f"at {res['predict_mhz']:.0f} MHz, 1 instr/cycle": s["predicted_us"]}
    if bm and "native" in entry["backends"]:
        entry["overhead_ratio"] = entry["backends"]["native"]["instructions"] / bm["instructions"]
    return entry


def _cycles(d):
    return f"{d['cycles']:10.0f} {d['cycles_per_mac']:8.2f}" if d.get("cycles") else f"{'-':>10s} {'-':>8s}"


def table_rows(name, e, tag=""):
    lines = []
    bm = e["baremetal"]
    if bm:
        preds = "  ".join(f"{n} {us:.1f}" for n, us in bm["predicted_us"].items())
        err = f"  |C - NumPy| {bm['max_abs_err']:.2g}" if bm.get("max_abs_err") is not None else ""
        lines.append(f"{name:10s} {'bare-metal C' + tag:17s} {bm['instructions']:10.0f} "
                     f"{bm['instructions_per_mac']:9.2f} {_cycles(bm)} {1.0:6.2f}  {preds}{err}")
        g = bm.get("generic")
        if g:
            preds = "  ".join(f"{n} {p['us']:.1f}" for n, p in g["predicted"].items())
            lines.append(f"{name:10s} {'generic C':17s} {g['instructions']:10.0f} {g['instructions_per_mac']:9.2f} "
                         f"{g['cycles']:10.0f} {g['cycles_per_mac']:8.2f} "
                         f"{g['instructions'] / bm['instructions']:6.2f}  {preds}")
    for b, s in e["backends"].items():
        ratio = f"{s['instructions'] / bm['instructions']:6.2f}" if bm else f"{'-':>6s}"
        preds = "  ".join(f"{n} {us:.1f}" for n, us in s["predicted_boards_us"].items())
        err = (e.get("vs_numpy") or {}).get(b)
        err = f"  |board - NumPy| {err:.2g}" if err is not None else ""
        lines.append(f"{name:10s} {b + tag:17s} {s['instructions']:10.0f} {s['instructions_per_mac']:9.2f} "
                     f"{_cycles(s)} {ratio}  {preds}{err}")
    for b, why in e["unavailable"].items():
        lines.append(f"{name:10s} {b + tag:17s} unavailable: {why}")
    return lines


def int8_targets(results):
    """The int8 goals: rv32imc <= 8 instr/MAC from MicroPython; ARMv7E-M <= 1.5 bare metal
    and the MicroPython call <= 1.15x bare metal."""
    out = []
    for name, e in results.items():
        q = e.get("int8")
        if not q:
            continue
        native = q["backends"].get("native")
        if name == "qemu-rv32" and native:
            v = native["instructions_per_mac"]
            out.append({"board": name, "what": "int8 from MicroPython, instr/MAC", "value": v, "goal": 8.0,
                        "met": v <= 8.0})
        if name in ("qemu-m4f", "qemu-m7") and q["baremetal"]:
            v = q["baremetal"]["instructions_per_mac"]
            out.append({"board": name, "what": "int8 bare metal, instr/MAC", "value": v, "goal": 1.5,
                        "met": v <= 1.5})
            if native:
                v = q["overhead_ratio"]
                out.append({"board": name, "what": "int8 MicroPython call / bare metal", "value": v,
                            "goal": 1.15, "met": v <= 1.15})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boards", default=None, help="comma-separated emulated boards (default: qemu-m4f,qemu-m7, "
                    "plus qemu-rv32 and qemu-xtensa when their QEMU exists)")
    ap.add_argument("-n", type=int, default=1000, help="timed inferences per backend (python: n/20)")
    ap.add_argument("--predict-mhz", type=float, default=None,
                    help="clock for predicted µs without a cycle model (default: the board's own)")
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--gru", action="store_true", help="a GRU policy against an MLP of as many multiply-adds")
    args = ap.parse_args(argv)
    boards = args.boards.split(",") if args.boards else (
        ["qemu-m4f", "qemu-m7"] + (["qemu-rv32"] if shutil.which("qemu-system-riscv32") else [])
        + (["qemu-xtensa"] if shutil.which("qemu-system-xtensa") else []))
    log = lambda s: print(s, file=sys.stderr if args.json else sys.stdout, flush=True)  # noqa: E731
    if args.gru:
        summary = gru_vs_mlp(boards, args.n, log, args.out)
        if args.json:
            print(json.dumps(summary))
        return 0 if summary["boards"] else 1
    tmp = Path(tempfile.mkdtemp(prefix="nm-bench-"))
    policy = tmp / "policy_13_64_64_4.nmp"
    spec = make_policy(policy)
    int8_policy = tmp / "policy_13_64_64_4_int8.nmp"
    qp = make_int8_policy(spec, int8_policy)
    obs = check_obs()
    refs = {"float": spec.forward(obs), "int8": qp.forward(obs), "obs": obs}
    results = {}
    t0 = time.monotonic()
    for name in boards:
        try:
            res = bench_board(name, policy, args.n, args.predict_mhz, log, refs, int8_policy)
        except Exception as exc:
            log(f"{name}: skipped ({exc})")
            continue
        if name == "qemu-xtensa":
            bm = baremetal_xtensawin(spec, qp, obs, res["predict_mhz"])
            bm_float, bm_int8 = bm["float"], bm["int8"]
        else:
            bm_float, bm_int8 = baremetal(name, log), baremetal(name, log, int8=True)
        entry = backend_entry(res, bm_float)
        if "int8" in res:
            entry["int8"] = backend_entry(res["int8"], bm_int8)
        results[name] = entry
    shutil.rmtree(tmp, ignore_errors=True)

    lines = [f"13->64->64->4 ReLU policy ({macs(SIZES)} multiply-adds), emulated boards: instructions counted "
             f"(QEMU -icount shift=0), cycles from the cycle model; predicted µs at each real board's clock "
             f"(predictions, not measurements)",
             f"{'board':10s} {'backend':17s} {'instr':>10s} {'instr/MAC':>9s} {'cycles':>10s} {'cyc/MAC':>8s} "
             f"{'vs C':>6s}  predicted µs"]
    for name, e in results.items():
        lines += table_rows(name, e)
        if e.get("int8"):
            lines += table_rows(name, e["int8"], " int8")
    lines.append("design goals on qemu-m7: native <= 2.5 instr/MAC; MicroPython overhead <= 1.15x bare-metal C")
    int8_goals = int8_targets(results)
    for t in int8_goals:
        lines.append(f"{t['board']}: {t['what']} {t['value']:.2f}, goal <= {t['goal']}: "
                     f"{'met' if t['met'] else 'NOT met'}")
    lines.append(f"({time.monotonic() - t0:.0f} s)")
    print("\n".join(lines), file=sys.stderr if args.json else sys.stdout)

    out = Path(args.out)
    summary = {"network": "-".join(map(str, SIZES)), "macs": macs(SIZES), "predict_mhz": args.predict_mhz,
               "check_observations": len(obs),
               "clock": "instruction-count time (QEMU -icount shift=0, 1 instruction = 1 ns guest); cycles from "
                        "the cycle model (docs/timing-model.md)",
               "boards": results, "int8_targets": int8_goals}
    write_json(out / "board_inference.json", summary)
    plot(results, out / "board_inference.png")
    if args.json:
        print(json.dumps(summary))
    return 0 if results else 1


def plot(results, path):
    labels, vals, mhz = [], [], []
    for name, e in results.items():
        q = e.get("int8") or {}
        rows = [("bare-metal C", (e["baremetal"] or {}).get("instructions"))]
        rows += [(b, s["instructions"]) for b, s in e["backends"].items()]
        rows += [("bare-metal C int8", (q.get("baremetal") or {}).get("instructions"))]
        rows += [(f"{b} int8", s["instructions"]) for b, s in q.get("backends", {}).items()]
        for what, v in rows:
            if v is not None:
                labels.append(f"{name}\n{what}")
                vals.append(v)
                mhz.append(e["predict_mhz"])
    fig, ax = plt.subplots(figsize=(max(5, 1.1 * len(vals)), 4))
    bars = ax.bar(range(len(vals)), vals, color=["#777" if "bare" in x else "#3a7" if "native" in x else "#c55"
                                                  for x in labels])
    ax.bar_label(bars, labels=[f"{v / m:.3g} µs\n@{m:.0f} MHz" for v, m in zip(vals, mhz)], fontsize=6)
    ax.set_xticks(range(len(vals)), labels, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("instructions per inference (log)")
    ax.set_title("13->64->64->4 inference on emulated boards (labels: predicted µs, 1 instruction per cycle)")
    save_png(fig, path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())

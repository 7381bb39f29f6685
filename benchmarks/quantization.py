"""int8 against float32: action error (plain rounding, then the export's error-compensated
rounding and fine-tune), returns and policy size, for pendulum TD3 and SAC runs of five
seeds each and an Ant PPO run.

For each run: `neuromotor export --quantize int8`'s library path (calibration on
rollouts of the run's env, error-compensated rounding, the fine-tune, held-out
episodes for the action error; the contract: at most 2% of each action dimension's
range), then the same episodes (seeds) played by the float policy, by the exported
int8 policy's host reference (nm_int8.h's exact bits) and by plain rounding's; with
--hil, the exported int8 policy deployed to an emulated board (qemu-m4f, the
SXTB16+SMLAD path) and played hardware-in-the-loop over the serial line (neuromotor
hil): the board's returns must equal the host reference's.

Runs live in --runs (default $NEUROMOTOR_CACHE/runs/quantization) and are trained
there when absent (said in the output and the JSON): `neuromotor train pendulum --algo
td3|sac --steps 10000 --seed S` for S in --seeds, and `neuromotor train ant --algo ppo
--steps N --seed 0` (the built-in Ant-v5 with the paper's 27-number observation; N =
--ant-steps, default 204,800: the paper's config, fewer steps).

    .venv/bin/python benchmarks/quantization.py [--hil] [--json]

Writes benchmarks/results/quantization.json.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from benchutil import RESULTS, write_json

DEFAULT_RUNS = Path(os.environ.get("NEUROMOTOR_CACHE", Path.home() / ".cache" / "neuromotor")) / "runs" / "quantization"
RETURN_GOAL = 0.02   # int8 mean return within 2% of the float policy's


def ensure_run(path, train_args, log):
    """The run at `path`, trained with `train_args` when it has no checkpoint yet."""
    from neuromotor.cli import main as cli
    path = Path(path)
    if (path / "config.json").exists():
        return path, False
    log(f"training {path} ({' '.join(train_args)})")
    if cli(["train", *train_args, "--run-dir", str(path), "--force", "--quiet"]) != 0:
        raise SystemExit(f"training {path} failed")
    return path, True


def returns(spec, policy, episodes, seed):
    from neuromotor.boards.hil import env_for, rollout
    _, factory = env_for(spec)
    return rollout(factory, episodes, seed, lambda obs, t: policy.forward(obs))


def hil_returns(path, episodes, seed, env_name, env_kwargs, log):
    """The int8 file played on an emulated qemu-m4f, hardware in the loop (a policy file
    names no env: the run's is given)."""
    from neuromotor import boards
    from neuromotor.boards.deploy import deploy
    from neuromotor.boards.hil import run_hil
    instance = f"qemu-m4f-quant-{os.getpid()}"
    try:
        b = boards.start("qemu-m4f", instance=instance, build=True, die_with_parent=True)
        deploy(b.port, str(path), log=lambda s: None)
        return run_hil(b.port, str(path), episodes=episodes, seed=seed, log=log, env_name=env_name,
                       env_kwargs=env_kwargs)
    finally:
        boards.stop(instance)


def compare(name, run, args, tmp, log):
    from neuromotor.policy import (DEFAULT_MAX_ERROR, encode, quantize, quantize_measured, rollout_observations,
                                   write_policy)
    from neuromotor.training.run_policy import load_spec
    spec = load_spec(str(run))
    t0 = time.monotonic()
    qp, acc = quantize_measured(spec, args.calibration, args.heldout, args.seed, DEFAULT_MAX_ERROR,
                                finetune_steps=args.finetune_steps)
    quant_s = time.monotonic() - t0
    plain = quantize(spec, rollout_observations(spec, args.calibration, args.seed))   # what "_before" measures
    seed_eval = args.seed + 2_000_003  # episodes neither calibration nor the error check saw
    r_float = returns(spec, spec, args.episodes, seed_eval)
    r_int8 = returns(spec, qp, args.episodes, seed_eval)
    r_plain = returns(spec, plain, args.episodes, seed_eval)
    row = {"policy": name, "run": str(run), "env": spec.meta.get("env"), "sizes": spec.sizes,
           "activations": spec.activations, "float_bytes": len(encode(spec)), "int8_bytes": len(encode(qp)),
           "accuracy": acc, "contract_met": acc["max_error_frac"] <= DEFAULT_MAX_ERROR, "quantize_s": quant_s,
           "episodes": args.episodes, "seed": seed_eval,
           "float_returns": r_float.tolist(), "int8_returns": r_int8.tolist(), "plain_int8_returns": r_plain.tolist(),
           "float_return_mean": float(r_float.mean()), "int8_return_mean": float(r_int8.mean()),
           "plain_int8_return_mean": float(r_plain.mean())}
    scale = abs(row["float_return_mean"])
    row["return_rel_diff"] = (row["int8_return_mean"] - row["float_return_mean"]) / scale
    row["plain_return_rel_diff"] = (row["plain_int8_return_mean"] - row["float_return_mean"]) / scale
    row["return_goal"] = RETURN_GOAL
    row["return_met"] = abs(row["return_rel_diff"]) <= RETURN_GOAL
    if args.hil:
        path = tmp / f"{name}_int8.nmp"
        write_policy(qp, path)
        h = hil_returns(path, args.hil_episodes, seed_eval, spec.meta.get("env"), spec.meta.get("env_kwargs"), log)
        row["hil"] = {k: h[k] for k in ("returns", "host_returns", "return_mean", "returns_match", "backend",
                                        "max_action_rel_diff", "device_median_us", "rtt_median_us", "episodes")}
        # The first hil_episodes of the comparison's episodes (same seeds), on the board.
        row["hil"]["equals_host_int8"] = bool(np.array_equal(np.float32(h["returns"]),
                                                             np.float32(r_int8[:args.hil_episodes])))
    return row


def cases(args) -> dict:
    """name -> (run directory, `neuromotor train` arguments)."""
    out = {}
    for algo in args.algos.split(","):
        for seed in args.seeds:
            out[f"pendulum_{algo}_s{seed}"] = (args.runs / f"pendulum-{algo}-s{seed}",
                                               ["pendulum", "--algo", algo, "--steps", str(args.pendulum_steps),
                                                "--seed", str(seed)])
    if args.ant_steps:
        out["ant_ppo_s0"] = (args.runs / "ant-ppo-s0",
                             ["ant", "--algo", "ppo", "--steps", str(args.ant_steps), "--seed", "0"])
    return out


def table(rows, trained) -> str:
    lines = ["int8 vs float32 (same episodes; int8 returns from the host reference, bit-exact with the boards)",
             "before: plain rounding; after: the export's (error-compensated rounding and fine-tune)",
             f"{'policy':18s} {'network':16s} {'KB f/i8':>9s} {'max err before->after':>22s} "
             f"{'mean err before->after':>23s} {'float ret':>10s} {'int8 ret':>10s} {'diff':>7s} "
             f"{'plain ret':>10s} {'quant s':>7s} {'contract':>8s} {'return':>6s}"]
    for r in rows:
        a = r["accuracy"]
        lines.append(
            f"{r['policy']:18s} {'->'.join(map(str, r['sizes'])):16s} "
            f"{r['float_bytes'] / 1024:4.1f}/{r['int8_bytes'] / 1024:4.1f} "
            f"{100 * a['max_error_frac_before']:9.2f}% -> {100 * a['max_error_frac']:6.2f}%    "
            f"{100 * a['mean_error_frac_before']:9.3f}% -> {100 * a['mean_error_frac']:6.3f}%    "
            f"{r['float_return_mean']:10.1f} {r['int8_return_mean']:10.1f} {100 * r['return_rel_diff']:+6.2f}% "
            f"{r['plain_int8_return_mean']:10.1f} {r['quantize_s']:7.1f} "
            f"{'met' if r['contract_met'] else 'MISS':>8s} {'met' if r['return_met'] else 'MISS':>6s}")
        if "hil" in r:
            h = r["hil"]
            lines.append(f"{'':18s} HIL on qemu-m4f ({h['backend']}), {h['episodes']} episodes: returns "
                         f"{', '.join(f'{x:.1f}' for x in h['returns'])}, "
                         f"{'equal to' if h['equals_host_int8'] else 'DIFFERENT from'} the host int8 reference's; "
                         f"board {h['device_median_us']:.0f} µs per inference (instruction-count time)")
    lines.append("errors: |int8 action - float action| as a fraction of the action range, on held-out episodes; "
                 "contract: max <= 2%; return: int8 mean within 2% of float's; quant s: export's int8 step, "
                 "wall time on a shared machine")
    for name, t in trained.items():
        lines.append(f"{name}: {'trained here' if t['trained_here'] else 'existing run'} {t['run']} "
                     f"(neuromotor train {' '.join(t['train_args'])})")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=Path, default=DEFAULT_RUNS,
                    help="directory of the runs (trained there when absent; "
                    "default $NEUROMOTOR_CACHE/runs/quantization)")
    ap.add_argument("--algos", default="td3,sac", help="pendulum algorithms (default td3,sac)")
    ap.add_argument("--seeds", type=lambda v: [int(x) for x in v.split(",")], default=[0, 1, 2, 3, 4],
                    help="pendulum seeds (default 0,1,2,3,4)")
    ap.add_argument("--pendulum-steps", type=int, default=10_000, help="steps of each pendulum run (default 10,000)")
    ap.add_argument("--ant-steps", type=int, default=204_800,
                    help="steps of the Ant PPO run (default 204,800; 0: no Ant run)")
    ap.add_argument("--episodes", type=int, default=50, help="returns over this many episodes per policy "
                    "(Ant's returns vary by hundreds between episodes: fewer make the comparison noise)")
    ap.add_argument("--calibration", type=int, default=2000,
                    help="rollout steps the int8 policy is calibrated on (as export's; default 2000)")
    ap.add_argument("--heldout", type=int, default=2000,
                    help="held-out rollout observations the action error is measured on (default 2000)")
    ap.add_argument("--finetune-steps", type=int, default=100, help="the export's fine-tuning steps (default 100)")
    ap.add_argument("--seed", type=int, default=0,
                    help="seed of the rollouts: calibration, held-out and the compared episodes (default 0)")
    ap.add_argument("--hil", action="store_true", help="also play the int8 policies on an emulated qemu-m4f")
    ap.add_argument("--hil-episodes", type=int, default=3, help="episodes played on the board (default 3)")
    ap.add_argument("--only", default=None, help="only the cases whose name starts with this (e.g. pendulum_td3)")
    ap.add_argument("--out", default=str(RESULTS), help="directory for quantization.json (default benchmarks/results)")
    ap.add_argument("--json", action="store_true", help="print the JSON on stdout (the table goes to stderr)")
    args = ap.parse_args(argv)
    log = lambda s: print(s, file=sys.stderr if args.json else sys.stdout, flush=True)  # noqa: E731
    import tempfile
    tmp = Path(tempfile.mkdtemp(prefix="nm-quant-"))
    rows, trained = [], {}
    for name, (run, train_args) in cases(args).items():
        if args.only and not name.startswith(args.only):
            continue
        run, fresh = ensure_run(run, train_args, log)
        trained[name] = {"run": str(run), "trained_here": fresh, "train_args": train_args}
        rows.append(compare(name, run, args, tmp, log))
        log(f"{name}: max error {100 * rows[-1]['accuracy']['max_error_frac_before']:.2f}% -> "
            f"{100 * rows[-1]['accuracy']['max_error_frac']:.2f}%, return {rows[-1]['float_return_mean']:.1f} "
            f"(float) {rows[-1]['int8_return_mean']:.1f} (int8)")
    print(table(rows, trained), file=sys.stderr if args.json else sys.stdout)
    summary = {"rows": rows, "runs": trained, "command": "benchmarks/quantization.py " + " ".join(argv or sys.argv[1:]),
               "machine": "shared, loaded (returns, errors and sizes are exact; wall times are not)"}
    write_json(Path(args.out) / "quantization.json", summary)
    if args.json:
        print(json.dumps(summary))
    return 0 if rows and all(r["contract_met"] and r["return_met"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

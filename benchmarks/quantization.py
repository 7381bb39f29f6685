"""int8 against float32: action error, returns and policy size for the Pendulum TD3 and
the Ant PPO policy.

For each run: `neuromotor export --quantize int8`'s library path (calibration on
rollouts of the run's env, held-out episodes for the action error), then the
same episodes (seeds) played by the float policy and by the int8 policy's host
reference (nm_int8.h's exact bits), and, with --hil, the int8 policy deployed to
an emulated board (qemu-m4f, the SXTB16+SMLAD path) and played hardware-in-the-
loop over the serial line (neuromotor hil): the board's returns must equal the
host reference's.

Runs: --pendulum-run and --ant-run, or short runs trained here when absent (said in
the output and the JSON): TD3 on the built-in pendulum, 20,000 steps; PPO (the
paper's Ant config) on gymnasium's Ant-v5 with the paper's 27-number observation
(include_cfrc_ext_in_observation=False), --ant-steps (default 307,200).

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

DEFAULT_RUNS = Path(os.environ.get("NEUROMOTOR_CACHE", Path.home() / ".cache" / "neuromotor")) / "runs"
ANT_KWARGS = {"include_cfrc_ext_in_observation": False}


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


def returns(spec, policy, episodes, seed, env_name=None, env_kwargs=None):
    from neuromotor.boards.hil import env_for, rollout
    _, factory = env_for(spec, env_name, env_kwargs)
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


def compare(name, run, episodes, calibration, heldout, seed, hil, hil_episodes, tmp, log):
    from neuromotor.policy import encode, quantize_checked, write_policy
    from neuromotor.training.run_policy import load_spec
    spec = load_spec(str(run))
    t0 = time.monotonic()
    qp, acc = quantize_checked(spec, calibration, heldout, seed, max_error=float("inf"))
    quant_s = time.monotonic() - t0
    seed_eval = seed + 2_000_003  # episodes neither calibration nor the error check saw
    r_float = returns(spec, spec, episodes, seed_eval)
    r_int8 = returns(spec, qp, episodes, seed_eval)
    row = {"policy": name, "run": str(run), "env": spec.meta.get("env"), "sizes": spec.sizes,
           "activations": spec.activations, "float_bytes": len(encode(spec)), "int8_bytes": len(encode(qp)),
           "accuracy": acc, "quantize_s": quant_s, "episodes": episodes, "seed": seed_eval,
           "float_returns": r_float.tolist(), "int8_returns": r_int8.tolist(),
           "float_return_mean": float(r_float.mean()), "int8_return_mean": float(r_int8.mean())}
    row["return_rel_diff"] = (row["int8_return_mean"] - row["float_return_mean"]) / abs(row["float_return_mean"])
    if hil:
        path = tmp / f"{name}_int8.nmp"
        write_policy(qp, path)
        h = hil_returns(path, hil_episodes, seed_eval, spec.meta.get("env"), spec.meta.get("env_kwargs"), log)
        row["hil"] = {k: h[k] for k in ("returns", "host_returns", "return_mean", "returns_match", "backend",
                                        "max_action_rel_diff", "device_median_us", "rtt_median_us", "episodes")}
        # The first hil_episodes of the comparison's episodes (same seeds), on the board.
        row["hil"]["equals_host_int8"] = bool(np.array_equal(np.float32(h["returns"]),
                                                             np.float32(r_int8[:hil_episodes])))
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pendulum-run", default=str(DEFAULT_RUNS / "pendulum-td3"),
                    help="a TD3 pendulum run directory (trained here, 20,000 steps, when absent)")
    ap.add_argument("--ant-run", default=str(DEFAULT_RUNS / "ant-ppo"),
                    help="a PPO Ant-v5 run directory (trained here when absent)")
    ap.add_argument("--ant-steps", type=int, default=307_200, help="steps of the Ant run trained here (default 307,200)")
    ap.add_argument("--episodes", type=int, default=50, help="returns over this many episodes per policy "
                    "(Ant's returns vary by hundreds between episodes: fewer make the comparison noise)")
    ap.add_argument("--calibration", type=int, default=2000,
                    help="rollout observations the activation scales are calibrated on (as export's; default 2000)")
    ap.add_argument("--heldout", type=int, default=2000,
                    help="held-out rollout observations the action error is measured on (default 2000)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the rollouts: calibration, held-out and the compared episodes (default 0)")
    ap.add_argument("--hil", action="store_true", help="also play the int8 policies on an emulated qemu-m4f")
    ap.add_argument("--hil-episodes", type=int, default=3, help="episodes played on the board (default 3)")
    ap.add_argument("--only", choices=("pendulum", "ant"), default=None, help="one of the two policies only")
    ap.add_argument("--out", default=str(RESULTS), help="directory for quantization.json (default benchmarks/results)")
    ap.add_argument("--json", action="store_true", help="print the JSON on stdout (the table goes to stderr)")
    args = ap.parse_args(argv)
    log = lambda s: print(s, file=sys.stderr if args.json else sys.stdout, flush=True)  # noqa: E731
    import tempfile
    tmp = Path(tempfile.mkdtemp(prefix="nm-quant-"))
    cases = {
        "pendulum_td3": (args.pendulum_run, ["pendulum", "--algo", "td3", "--steps", "20000"], 0.02),
        "ant_ppo": (args.ant_run, ["Ant-v5", "--algo", "ppo", "--env-kwargs", json.dumps(ANT_KWARGS),
                                   "--steps", str(args.ant_steps)], 0.05),
    }
    rows, trained = [], {}
    for name, (run, train_args, goal) in cases.items():
        if args.only and not name.startswith(args.only):
            continue
        run, fresh = ensure_run(run, train_args, log)
        trained[name] = {"run": str(run), "trained_here": fresh, "train_args": train_args}
        row = compare(name, run, args.episodes, args.calibration, args.heldout, args.seed, args.hil,
                      args.hil_episodes, tmp, log)
        row["return_goal"] = goal
        row["return_met"] = abs(row["return_rel_diff"]) <= goal
        rows.append(row)
    lines = ["int8 vs float32 (same episodes; int8 returns from the host reference, bit-exact with the boards)",
             f"{'policy':13s} {'network':22s} {'float KB':>8s} {'int8 KB':>8s} {'max err':>8s} {'mean err':>9s} "
             f"{'float ret':>10s} {'int8 ret':>10s} {'diff':>7s} {'goal':>5s}"]
    for r in rows:
        a = r["accuracy"]
        lines.append(f"{r['policy']:13s} {'->'.join(map(str, r['sizes'])):22s} {r['float_bytes'] / 1024:8.1f} "
                     f"{r['int8_bytes'] / 1024:8.1f} {100 * a['max_error_frac']:7.2f}% {100 * a['mean_error_frac']:8.3f}% "
                     f"{r['float_return_mean']:10.1f} {r['int8_return_mean']:10.1f} {100 * r['return_rel_diff']:+6.2f}% "
                     f"{'met' if r['return_met'] else 'MISS':>5s}")
        if "hil" in r:
            h = r["hil"]
            lines.append(f"{'':13s} HIL on qemu-m4f ({h['backend']}), {h['episodes']} episodes: returns "
                         f"{', '.join(f'{x:.1f}' for x in h['returns'])}, "
                         f"{'equal to' if h['equals_host_int8'] else 'DIFFERENT from'} the host int8 reference's; "
                         f"board {h['device_median_us']:.0f} µs per inference (instruction-count time)")
    lines.append("errors: |int8 action - float action| as a fraction of the action range, on held-out episodes")
    for name, t in trained.items():
        lines.append(f"{name}: {'trained here' if t['trained_here'] else 'existing run'} {t['run']} "
                     f"({' '.join(t['train_args'])})")
    print("\n".join(lines), file=sys.stderr if args.json else sys.stdout)
    summary = {"rows": rows, "runs": trained, "machine": "shared, loaded (returns and sizes are exact; "
               "wall times are not)"}
    write_json(Path(args.out) / "quantization.json", summary)
    if args.json:
        print(json.dumps(summary))
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())

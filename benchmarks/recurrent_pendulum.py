"""The pendulum without its angular velocity: recurrent TD3 and SAC against TD3's MLP, same run.

    .venv/bin/python benchmarks/recurrent_pendulum.py                 # 10 seeds x 30,000 steps each
    .venv/bin/python benchmarks/recurrent_pendulum.py --seeds 0-1 --steps 3000   # a quick look
    .venv/bin/python benchmarks/recurrent_pendulum.py --rows sac-gru --seeds 0-2 # some rows only

The env observes (cos theta, sin theta) only (`--env-kwargs '{"observe_velocity": false}'`), so
a policy must infer the velocity from what it saw before. Rows, each with the same seeds, steps
and evaluation: `td3-gru` (its defaults: Dense 64 -> GRU 32 -> Dense 1 actor, GRU critics over
observations and actions, 16 windows of 10 steps, 2 of them burn-in), `sac-gru` (the same networks
and windows, the actor's head giving a mean and a log-std per action), `td3` (its MLP 64-64 with
the paper's defaults) on the same observations, and, for scale, `td3` seeing the velocity.
Each run evaluates its agents 10 times while training (10 episodes each, the curves in the json);
each agent's run policy (the one export and deploy use: its best.npz where the run keeps one,
else the last checkpoint's, as on the pendulum) then flies 100 fresh episodes
(initial states seeded 7, the same for every row), and a seed solves the task when their mean
return is >= -200. The recurrent rows also fly the last checkpoint's two actors for as many
episodes: the online actor's last iterate ("last actor") and its Polyak average ("last avg", what
the run deploys), to choose between them; and each run policy's int8 export (`export --quantize
int8`: its largest action error along held-out episodes, as a fraction of the action range, against
the 2% contract, and its return over the same 100 episodes).
CPU seconds are each training run's own (all its processes, its evaluation included). Prints a table, writes
benchmarks/results/recurrent_pendulum.json.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchutil import write_json

import neuromotor
from neuromotor.algos import algo_class
from neuromotor.envs import env_class
from neuromotor.policy import quantize_measured
from neuromotor.training.evaluation import evaluate_spec
from neuromotor.training.run_policy import load_spec

SOLVED = -200.0
EPISODES = 100
EVAL_SEED = 7
EVALUATIONS = 10  # during training, each of 10 episodes
ROWS = {  # --rows key: (name, algorithm, env_kwargs)
    "td3-gru": ("td3-gru, no velocity", "td3-gru", {"observe_velocity": False}),
    "sac-gru": ("sac-gru, no velocity", "sac-gru", {"observe_velocity": False}),
    "td3-blind": ("td3 MLP, no velocity", "td3", {"observe_velocity": False}),
    "td3-full": ("td3 MLP, with velocity", "td3", {}),
}
RECURRENT = ("td3-gru", "sac-gru")


def seeds_of(text: str) -> list:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def last_returns(run, algo: str, env_kwargs: dict) -> dict:
    """Per agent, the mean return over EPISODES of the last checkpoint's online actor and of its
    Polyak average (the policy the run deploys)."""
    cls = algo_class(algo)
    cfg, env = cls.Config(**run.config["algo_config"]), env_class("pendulum", env_kwargs)
    out = {"last actor": [], "last avg": []}
    with np.load(run.path / "checkpoint.npz", allow_pickle=False) as ck:
        prefixes = sorted((k[:-len("actor")] for k in ck.files if k.split(".")[-1] == "actor"),
                          key=lambda p: int(p[5:-1] or 0))  # "" or "shard0.", "shard1.", ...
        for prefix in prefixes:
            seeds, steps = ck[prefix + "seeds"], ck[prefix + "steps"]
            for name, key in (("last actor", "actor"), ("last avg", "actor_target")):
                state = {"actor_target": ck[prefix + key], "seeds": seeds, "steps": steps}
                for k in range(len(seeds)):
                    spec = cls.policy_from_state(cfg, env, state, k)
                    out[name].append(float(evaluate_spec(spec, env, EPISODES, EVAL_SEED)[0].mean()))
    return out


def run_row(algo: str, env_kwargs: dict, seeds: list, steps: int, root: Path, settings: list) -> dict:
    t0 = time.perf_counter()
    run = neuromotor.train("pendulum", algo, steps=steps, seeds=seeds, env_kwargs=env_kwargs,
                           settings=[f"eval_every={max(1, steps // EVALUATIONS)}", f"checkpoint_every={steps}",
                                     *settings],
                           run_dir=root / algo / ("blind" if env_kwargs else "full"), progress=True)
    wall = time.perf_counter() - t0
    env = env_class("pendulum", env_kwargs)
    returns, curves = [], []
    metrics = [m for m in run.metrics if m.get("eval_return_mean") is not None]
    int8 = {"returns": [], "max_error_frac": []}
    for k in range(len(seeds)):
        curves.append([[m["step"], round(m["eval_return_mean"], 1)] for m in metrics if m["agent"] == k])
        spec = load_spec(run.path, agent=k)
        returns.append(float(evaluate_spec(spec, env, EPISODES, EVAL_SEED)[0].mean()))
        if algo in RECURRENT:  # export's int8, measured whatever its error: the contract's verdict is the column
            q, report = quantize_measured(spec)
            int8["returns"].append(float(evaluate_spec(q, env, EPISODES, EVAL_SEED)[0].mean()))
            int8["max_error_frac"].append(report["max_error_frac"])
    return {"algo": algo, "env_kwargs": env_kwargs, "config": run.config["algo_config"], "seeds": seeds, "steps": steps, "episodes": EPISODES,
            "returns": returns, "eval_curves": curves, "solved": int(sum(r >= SOLVED for r in returns)), "wall_s": wall, "cpu_s": run.summary["cpu_s"],
            **({**last_returns(run, algo, env_kwargs), "int8": int8} if algo in RECURRENT else {})}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0-9", help="seed range, e.g. 0-9 (default)")
    ap.add_argument("--steps", type=int, default=30_000, help="env steps per seed (default 30000)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a setting of the recurrent rows over their defaults (train --set; for a setting "
                         "only one of them has, pick its row with --rows)")
    ap.add_argument("--rows", default=",".join(ROWS), help=f"the rows to run, of {','.join(ROWS)} (default: all)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "recurrent_pendulum.json"))
    args = ap.parse_args()
    seeds = seeds_of(args.seeds)
    keys = args.rows.split(",")
    if unknown := [k for k in keys if k not in ROWS]:
        ap.error(f"unknown rows {', '.join(unknown)}; known: {', '.join(ROWS)}")
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, algo, env_kwargs in (ROWS[k] for k in keys):
            rows[name] = run_row(algo, env_kwargs, seeds, args.steps, Path(tmp), args.set if algo in RECURRENT else [])
    print(f"\n{args.steps} steps per seed, {len(seeds)} seeds, {EPISODES} evaluation episodes per seed")
    print(f"{'row':<24} {'solved':>8} {'mean':>9} {'worst':>9} {'best':>9} {'CPU s':>8}")
    for name, r in rows.items():
        ret = np.array(r["returns"])
        print(f"{name:<24} {r['solved']:>5}/{len(seeds):<2} {ret.mean():>9.1f} {ret.min():>9.1f} {ret.max():>9.1f}"
              f" {r['cpu_s']:>8.0f}")
        if "last avg" in r:
            print("  per seed: " + ", ".join(f"{s}: {v:.1f}" for s, v in zip(seeds, ret)))
            for last in ("last avg", "last actor"):
                v = np.array(r[last])
                print(f"  {last:<10} solved {int((v >= SOLVED).sum())}/{len(seeds)}, per seed "
                      + ", ".join(f"{x:.1f}" for x in v))
            v, e = np.array(r["int8"]["returns"]), np.array(r["int8"]["max_error_frac"])
            print(f"  {'int8':<10} solved {int((v >= SOLVED).sum())}/{len(seeds)}, within 2%: "
                  f"{int((e <= 0.02).sum())}/{len(seeds)}, per seed "
                  + ", ".join(f"{x:.1f} ({100 * y:.2f}%)" for x, y in zip(v, e)))
    write_json(args.out, {"solved_at": SOLVED, "eval_seed": EVAL_SEED, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())

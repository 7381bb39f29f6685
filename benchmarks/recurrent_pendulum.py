"""The pendulum without its angular velocity: recurrent TD3 against TD3's MLP, same run.

    .venv/bin/python benchmarks/recurrent_pendulum.py                 # 10 seeds x 30,000 steps each
    .venv/bin/python benchmarks/recurrent_pendulum.py --seeds 0-1 --steps 3000   # a quick look

The env observes (cos theta, sin theta) only (`--env-kwargs '{"observe_velocity": false}'`), so
a policy must infer the velocity from what it saw before. Rows, each with the same seeds, steps
and evaluation: `td3-gru` (its defaults: Dense 64 -> GRU 32 -> Dense 1 actor, GRU critics over
observations and actions, 16 windows of 10 steps, 2 of them burn-in), `td3` (its MLP 64-64 with
the paper's defaults) on the same observations, and, for scale, `td3` seeing the velocity.
Each run evaluates its agents 10 times while training (10 episodes each) and keeps each agent's
best as its policy (the one export and deploy use); that policy then flies 100 fresh episodes
(initial states seeded 7, the same for every row), and a seed solves the task when their mean
return is >= -200.
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
from neuromotor.envs import env_class
from neuromotor.training.evaluation import evaluate_spec
from neuromotor.training.run_policy import load_spec

SOLVED = -200.0
EPISODES = 100
EVAL_SEED = 7
EVALUATIONS = 10  # during training, each of 10 episodes: the run keeps its best as its policy
ROWS = {  # name: (algorithm, env_kwargs)
    "td3-gru, no velocity": ("td3-gru", {"observe_velocity": False}),
    "td3 MLP, no velocity": ("td3", {"observe_velocity": False}),
    "td3 MLP, with velocity": ("td3", {}),
}


def seeds_of(text: str) -> list:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


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
    for k in range(len(seeds)):
        curves.append([[m["step"], round(m["eval_return_mean"], 1)] for m in metrics if m["agent"] == k])
        spec = load_spec(run.path, agent=k)
        returns.append(float(evaluate_spec(spec, env, EPISODES, EVAL_SEED)[0].mean()))
    return {"algo": algo, "env_kwargs": env_kwargs, "config": run.config["algo_config"], "seeds": seeds, "steps": steps, "episodes": EPISODES,
            "returns": returns, "eval_curves": curves, "solved": int(sum(r >= SOLVED for r in returns)), "wall_s": wall, "cpu_s": run.summary["cpu_s"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0-9", help="seed range, e.g. 0-9 (default)")
    ap.add_argument("--steps", type=int, default=30_000, help="env steps per seed (default 30000)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a td3-gru setting over its defaults (train --set)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "recurrent_pendulum.json"))
    args = ap.parse_args()
    seeds = seeds_of(args.seeds)
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (algo, env_kwargs) in ROWS.items():
            rows[name] = run_row(algo, env_kwargs, seeds, args.steps, Path(tmp), args.set if algo == "td3-gru" else [])
    print(f"\n{args.steps} steps per seed, {len(seeds)} seeds, {EPISODES} evaluation episodes per seed")
    print(f"{'row':<24} {'solved':>8} {'mean':>9} {'worst':>9} {'best':>9} {'CPU s':>8}")
    for name, r in rows.items():
        ret = np.array(r["returns"])
        print(f"{name:<24} {r['solved']:>5}/{len(seeds):<2} {ret.mean():>9.1f} {ret.min():>9.1f} {ret.max():>9.1f}"
              f" {r['cpu_s']:>8.0f}")
    write_json(args.out, {"solved_at": SOLVED, "eval_seed": EVAL_SEED, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())

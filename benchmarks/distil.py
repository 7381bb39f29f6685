"""Distillation on the quadrotor: teachers on their own drones, one GRU student for all of them.

    .venv/bin/python benchmarks/distil.py                                  # the full size below
    .venv/bin/python benchmarks/distil.py --set teachers=2 --set teacher_steps=2000 --set iterations=2
    .venv/bin/python benchmarks/distil.py --run runs/quadrotor-distil-...   # evaluate a finished run
    .venv/bin/python benchmarks/distil.py --nominal runs/quadrotor-sac-s1-... # with a single nominal policy

Full size (281 CPU s measured, 9 minutes' wall on a shared 2-core machine): 6 teachers x 150,000 SAC steps (the
quadrotor preset, its rate decay and averaging scaled to the budget), 8 DAgger iterations of
8 envs per drone x 500 steps, 300 BPTT updates each (windows of 64 steps, 16 of them burn-in).

Rows (success: the env's criterion from the task's starts, seeded 10,000 as
benchmarks/quadrotor.py): the student on drones no teacher trained on (fresh draws from the
teachers' ranges), on the teachers' drones, each teacher on its own drone, and, with --nominal,
that policy on the fresh drones; then the student and the nominal policy on the task's
randomised Crazyflie (env_kwargs randomize 0.3 and 0.5: mass and thrust coefficient drawn at
every start) and on the nominal one. Prints a table, writes benchmarks/results/distil.json.
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from benchutil import write_json

import neuromotor
from neuromotor.envs import env_class
from neuromotor.training.config import parse_set
from neuromotor.training.distil import EVAL_SEED
from neuromotor.training.evaluation import evaluate_spec
from neuromotor.training.run_policy import load_spec

FULL = {"teachers": 6, "teacher_steps": 150_000, "iterations": 8, "updates": 300}
TASK_CONDITIONS = {"nominal Crazyflie": {}, "randomize 0.3": {"randomize": 0.3}, "randomize 0.5": {"randomize": 0.5}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a DistilConfig setting")
    ap.add_argument("--run", help="evaluate this finished distillation instead of running one")
    ap.add_argument("--nominal", help="a run directory or policy file: the single nominal policy")
    ap.add_argument("--episodes", type=int, default=100, help="episodes per task condition (default 100)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "distil.json"))
    args = ap.parse_args()
    if args.run:
        summary = json.loads((Path(args.run) / "summary.json").read_text())
    else:
        settings = FULL | parse_set(args.set)
        summary = neuromotor.distil("quadrotor", settings=settings, nominal=args.nominal, progress=True)
    student = neuromotor.read_policy(summary["student"])
    policies = {"student (GRU)": student}
    if args.nominal:
        policies["nominal policy"] = load_spec(args.nominal)
    task = {}
    for name, spec in policies.items():
        for condition, kwargs in TASK_CONDITIONS.items():
            _, success = evaluate_spec(spec, env_class("quadrotor", kwargs), args.episodes, EVAL_SEED)
            task.setdefault(name, {})[condition] = float(np.mean(success))
    print(f"{'policy':<34} {'success':>8} {'worst drone':>12}")
    for name, row in summary["evaluation"].items():
        print(f"{name:<34} {row['success_mean']:>7.0%} {row['success_min']:>12.0%}")
    print()
    print(f"{'policy':<16}" + "".join(f"{c:>20}" for c in TASK_CONDITIONS))
    for name, row in task.items():
        print(f"{name:<16}" + "".join(f"{row[c]:>20.0%}" for c in TASK_CONDITIONS))
    print(f"teachers {summary['teacher_cpu_s']:.0f} CPU s, all {summary['cpu_s']:.0f} CPU s, "
          f"{summary['wall_s']:.0f} s wall; run {summary['run_dir']}")
    write_json(args.out, {"distil": summary, "task": task, "episodes": args.episodes})
    return 0


if __name__ == "__main__":
    sys.exit(main())

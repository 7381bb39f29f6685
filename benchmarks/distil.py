"""Distillation on the quadrotor: teachers on their own drones, one GRU student for all of them.

    .venv/bin/python benchmarks/distil.py --nominal runs/quadrotor-sac-s1-...  # the full size below
    .venv/bin/python benchmarks/distil.py --set teachers=2 --set base_steps=2000 --set teacher_steps=2000 --set iterations=2
    .venv/bin/python benchmarks/distil.py --run runs/quadrotor-distil-... --nominal ...  # a finished run

Full size: DistilConfig's defaults: a base policy on the Crazyflie (SAC's quadrotor preset,
300,000 steps), 16 teachers fine-tuned from it for 100,000 steps each (one population, agent k on
drone k), then 12 DAgger iterations of 16 envs per drone x 500 steps, 1,800 BPTT updates of 64
windows each (64 steps, 16 of them burn-in), the student of the iteration that flies the
teachers' drones best kept.

Rows (success: the env's criterion from the task's starts, seeded 10,000 as
benchmarks/quadrotor.py) on 100 drones no teacher trained on (fresh draws from the teachers'
ranges, 10 starts each): the student, the base policy, the best of the teachers (each flown on
all of them), with --nominal that single policy, and RAPTOR's foundation policy (the
`foundation-policy` package, imported as benchmarks/raptor.py does), and the student's int8 export
(`neuromotor export RUN --quantize int8`: integer weights, activations and GRU state); then the student on the
teachers' drones and each teacher on its own drone. The student and RAPTOR observe the same 22
numbers (training.distil.STUDENT_ENV). Then each of them on the task's
randomised Crazyflie (env_kwargs randomize 0.3 and 0.5: mass and thrust coefficient drawn at
every start) and on the nominal one. CPU seconds per phase (teachers, DAgger, evaluation) are
the run's. Prints a table, writes benchmarks/results/distil.json.
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from benchutil import write_json

import neuromotor
from neuromotor.envs import env_class
from neuromotor.training.config import parse_set
from neuromotor.training import distil as d
from neuromotor.training.evaluation import evaluate_spec
from neuromotor.training.run_policy import load_spec

FULL = {}
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
        summary = neuromotor.distil("quadrotor", settings=settings, progress=True)
    run = json.loads((Path(summary["run_dir"]) / d.CONFIG).read_text())
    # (policy, the quadrotor's env_kwargs it observes)
    policies = {"student (GRU)": (neuromotor.read_policy(summary["student"]), d.STUDENT_ENV)}
    with tempfile.TemporaryDirectory() as tmp:
        _, int8, int8_report = neuromotor.export(summary["run_dir"], Path(tmp) / "student8.nmp", quantize="int8")
    policies["student (int8)"] = (int8, d.STUDENT_ENV)
    if args.nominal:
        policies["nominal policy"] = (load_spec(args.nominal), {})
    raptor = raptor_spec()
    if raptor is not None:
        policies["RAPTOR"] = (raptor, d.STUDENT_ENV)
    rows = summary["evaluation"]
    for name, (spec, kwargs) in policies.items():
        if name != "student (GRU)":
            rows[f"{name} on fresh drones"] = on_fresh(spec, run["fresh_drones"], run["config"]["eval_episodes"], kwargs)
    task = {}
    for name, (spec, kwargs) in policies.items():
        for condition, extra in TASK_CONDITIONS.items():
            _, success = evaluate_spec(spec, env_class("quadrotor", {**kwargs, **extra}), args.episodes, d.EVAL_SEED)
            task.setdefault(name, {})[condition] = float(np.mean(success))
    print(f"{'policy':<34} {'success':>8} {'worst drone':>12}")
    for name, row in rows.items():
        print(f"{name:<34} {row['success_mean']:>7.0%} {row['success_min']:>12.0%}")
    print()
    print(f"{'policy':<16}" + "".join(f"{c:>20}" for c in TASK_CONDITIONS))
    for name, row in task.items():
        print(f"{name:<16}" + "".join(f"{row[c]:>20.0%}" for c in TASK_CONDITIONS))
    phases = ", ".join(f"{k} {v:.0f}" for k, v in summary["cpu_s_per_phase"].items())
    print(f"CPU s: {phases}; all {summary['cpu_s']:.0f}, {summary['wall_s']:.0f} s wall; run {summary['run_dir']}")
    student = rows["student on fresh drones"]["success_mean"]
    margins = {"student_minus_best_teacher": student - rows["best teacher on fresh drones"]["success_mean"]}
    if "RAPTOR on fresh drones" in rows:
        margins["student_minus_raptor"] = student - rows["RAPTOR on fresh drones"]["success_mean"]
    print("on fresh drones, the student minus " + ", ".join(
        f"{k.removeprefix('student_minus_').replace('_', ' ')}: {v * 100:+.1f} points" for k, v in margins.items()))
    write_json(args.out, {"distil": summary, "task": task, "episodes": args.episodes, "margins": margins,
                          "int8_export": int8_report})
    return 0


def on_fresh(spec, drones: list, episodes: int, env_kwargs: dict) -> dict:
    v = d.success_on(spec, drones, episodes, env_kwargs).mean(1)
    return {"success_mean": float(v.mean()), "success_min": float(v.min()), "per_drone": v.round(4).tolist()}


def raptor_spec():
    """RAPTOR's foundation policy as a policy file's spec observing STUDENT_ENV, or None
    without the `foundation-policy` package."""
    try:
        from raptor import checkpoint
        path = checkpoint()
    except ImportError:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        neuromotor.import_policy(path, Path(tmp) / "raptor.nmp", env="quadrotor", env_kwargs=d.STUDENT_ENV)
        return neuromotor.read_policy(Path(tmp) / "raptor.nmp")


if __name__ == "__main__":
    sys.exit(main())

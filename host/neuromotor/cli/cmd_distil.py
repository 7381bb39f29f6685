"""`neuromotor distil quadrotor`: teachers on their own drones, distilled into one GRU student."""

import json
import shlex

from neuromotor import api
from neuromotor.cli import checks, json_line, shown_path


def register(sub):
    p = sub.add_parser("distil", help="distil quadrotor teachers (one per drone) into one recurrent student")
    p.add_argument("env", choices=["quadrotor"], help="the environment (the quadrotor)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a DistilConfig setting (teachers, iterations, hidden, max_thrust_to_weight, ...)")
    p.add_argument("--nominal", metavar="RUN_OR_NMP", help="a single policy evaluated beside the student")
    p.add_argument("--run-dir", type=checks.nonempty_path, help="where to write the run (default runs/quadrotor-distil-<time>)")
    p.add_argument("--force", action="store_true", help="replace an earlier distillation in --run-dir")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON line")
    p.set_defaults(func=run)


def run(args) -> int:
    summary = api.distil(args.env, settings=args.set, nominal=args.nominal, run_dir=args.run_dir,
                         force=args.force, progress=not args.json)
    if args.json:
        print(json_line(summary))
        return 0
    print(f"{'policy':<34} {'success':>8} {'worst drone':>12}")
    for name, row in summary["evaluation"].items():
        print(f"{name:<34} {row['success_mean']:>7.0%} {row['success_min']:>12.0%}")
    print("CPU s: " + ", ".join(f"{phase} {cpu:.0f}" for phase, cpu in summary["cpu_s_per_phase"].items()))
    student = shlex.quote(shown_path(summary["student"]))
    env = f"--env quadrotor --env-kwargs {shlex.quote(json.dumps(summary['student_env_kwargs']))}"
    print(f"student: {student}; teachers' run: {shown_path(summary['teachers'])}")
    print(f"evaluate: neuromotor eval {student} {env}")
    print(f"on a board: neuromotor deploy {student} --port PORT, then neuromotor hil {student} --port PORT {env}")
    return 0

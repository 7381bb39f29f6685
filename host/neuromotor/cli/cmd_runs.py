"""`neuromotor runs`: the run directories as a table."""

from neuromotor import api
from neuromotor.cli import json_line, shown_path


def register(sub):
    p = sub.add_parser("runs", help="list training runs")
    p.add_argument("root", nargs="?", help="directory holding the runs (default ./runs or $NEUROMOTOR_RUNS)")
    p.add_argument("--json", action="store_true", help="one JSON line per run")
    p.set_defaults(func=run)


def run(args) -> int:
    rows = [{**r, "run": shown_path(r["run"]), "path": shown_path(r["path"])} for r in api.list_runs(args.root)]
    if args.json:
        for r in rows:
            print(json_line(r))
        return 0
    if not rows:
        print("no runs")
        return 0
    width = max(len(r["run"]) for r in rows)
    print(f"{'run':<{width}}  {'env':<10} {'algo':<5} {'agents':>6} {'steps':>8} {'eval return':>12}")
    for r in rows:
        ret = "-" if r["eval_return_mean"] is None else f"{r['eval_return_mean']:.1f}"
        steps = "-" if r["steps"] is None else r["steps"]
        print(f"{r['run']:<{width}}  {r['env']:<10} {r['algo']:<5} {len(r['seeds']):>6} {steps:>8} {ret:>12}")
    return 0

"""Sweep throughput: agents trained per minute by `neuromotor sweep` on the local backend
(worker processes) and on Ray (one task per unit), same agents, steps and units.

    .venv/bin/python benchmarks/sweep.py                         # 64 TD3 pendulum agents, 2000 steps
    .venv/bin/python benchmarks/sweep.py --agents 16 --steps 1000 --repeat 3

Ray is started once (its start-up time is reported on its own) and every Ray sweep joins it,
so a Ray row's time is the sweep's; Ray's overhead per unit is (Ray wall - local wall) / units.
The backends alternate (and swap order each repeat), so a change in machine load hits both;
the units' own CPU seconds are reported too, as wall time on a shared machine mostly measures
the neighbours. Both must give every agent
the same final return (checked). Prints a table, writes benchmarks/results/sweep.json with
the load average, marked as a shared machine when the load exceeded the core count.
"""

import argparse
import io
import json
import os
import statistics
import tempfile
import time
from contextlib import redirect_stdout

from benchutil import RESULTS, write_json
from neuromotor.cli import main


def _sweep(root, name, backend, args) -> dict:
    argv = ["sweep", "pendulum", "--algo", "td3", "--steps", str(args.steps), "--seeds", f"0-{args.agents - 1}",
            "--shards", str(args.shards), "--set", "eval_episodes=1", "--set", f"eval_every={args.steps}",
            "--set", "checkpoint_every=0", "--backend", backend, "--dir", os.path.join(root, name),
            "--quiet", "--json"]
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(argv)
    if code != 0:
        raise SystemExit(f"sweep on {backend} failed ({code})")
    return json.loads(out.getvalue().strip().splitlines()[-1])


def _units_cpu_s(result) -> float:
    """CPU seconds the units' processes spent training (their summaries' cpu_s)."""
    dirs = {t["run_dir"] for t in result["trials"]}
    return sum(json.loads(open(os.path.join(d, "summary.json")).read())["cpu_s"] for d in dirs)


def main_(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agents", type=int, default=64)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--shards", type=int, default=len(os.sched_getaffinity(0)),
                    help="units (stacked shards of agents) per configuration (default: one per CPU)")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args(argv)
    import ray

    cpus = len(os.sched_getaffinity(0))
    t0 = time.perf_counter()
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, logging_level="warning",
             object_store_memory=100 * 2**20)
    ray_start_s = time.perf_counter() - t0
    walls = {"local": [], "ray": []}
    cpus_s = {"local": [], "ray": []}
    returns = {}
    load = [os.getloadavg()[0]]
    try:
        with tempfile.TemporaryDirectory() as root:
            for i in range(args.repeat):
                for backend in ("local", "ray") if i % 2 == 0 else ("ray", "local"):
                    r = _sweep(root, f"{backend}{i}", backend, args)
                    walls[backend].append(r["wall_s"])
                    cpus_s[backend].append(_units_cpu_s(r))
                    returns.setdefault(backend, [t["eval_return_mean"] for t in r["trials"]])
                    load.append(os.getloadavg()[0])
    finally:
        ray.shutdown()
    if returns["local"] != returns["ray"]:
        raise SystemExit("the backends trained different numbers")
    units = args.shards
    rows = {b: {"wall_s": statistics.median(w), "agents_per_min": args.agents / statistics.median(w) * 60,
                "units_cpu_s": statistics.median(cpus_s[b])} for b, w in walls.items()}
    ratio = rows["ray"]["agents_per_min"] / rows["local"]["agents_per_min"]
    doc = {"agents": args.agents, "steps": args.steps, "units": units, "cpus": cpus, "repeat": args.repeat,
           "rows": rows, "ray_over_local_agents_per_min": round(ratio, 3),
           "ray_overhead_per_unit_s": round((rows["ray"]["wall_s"] - rows["local"]["wall_s"]) / units, 3),
           "ray_start_s": round(ray_start_s, 3), "walls": walls, "units_cpu_s": cpus_s, "load_average": load,
           "shared_machine": max(load) > cpus}
    print(f"{'backend':<8} {'wall s':>8} {'agents/min':>11} {'unit cpu s':>11}   ({args.agents} TD3 pendulum agents x {args.steps} steps, "
          f"{units} units, median of {args.repeat})")
    for b, r in rows.items():
        print(f"{b:<8} {r['wall_s']:>8.2f} {r['agents_per_min']:>11.1f} {r['units_cpu_s']:>11.1f}")
    print(f"ray / local agents per minute: {ratio:.3f}; Ray's overhead per unit {doc['ray_overhead_per_unit_s']} s; "
          f"Ray start-up {ray_start_s:.1f} s (not in the rows); load average {max(load):.1f} on {cpus} CPUs"
          + (" (shared machine)" if doc["shared_machine"] else ""))
    print(f"wrote {write_json(RESULTS / 'sweep.json', doc)}")


if __name__ == "__main__":
    main_()

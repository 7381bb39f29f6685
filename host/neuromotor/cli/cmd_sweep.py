"""`neuromotor sweep ENV`: a grid or random search over hyperparameters x seeds."""

import time

from neuromotor.training import sweep
from neuromotor.cli import checks, json_line
from neuromotor.errors import UserError

BACKENDS = ("local", "ray")


def register(sub):
    p = sub.add_parser("sweep", help="train every configuration of a hyperparameter grid or random search x seeds",
                       description="Each configuration (the --grid cross product, each point with -n --random "
                       "draws) trains every seed; a shard of seeds of one configuration is a normal run directory "
                       "in the sweep directory, trained as by `neuromotor train`. Settings not swept come from "
                       "--preset, --config and --set as for train. An agent's numbers do not depend on the "
                       "backend, the shards or an interruption.")
    p.add_argument("env", nargs="?", help="environment, as for train")
    p.add_argument("--algo", default="td3", help="algorithm (default td3)")
    p.add_argument("--steps", "--env-steps", type=int, help="environment steps per agent (default 10000)")
    p.add_argument("--seeds", default="0", help="seeds of every configuration: 0-15 or 0,3,5 (default 0)")
    p.add_argument("--grid", action="append", metavar="KEY=V1,V2,...", help="values of one setting; "
                   "repeatable, the configurations are their cross product")
    p.add_argument("--random", action="append", metavar="KEY=DIST:LOW:HIGH", help="a setting drawn from "
                   "uniform or loguniform between LOW and HIGH (integers rounded); repeatable")
    p.add_argument("-n", type=int, help="random draws per grid point (with --random; default 1)")
    p.add_argument("--sample-seed", type=int, default=0, help="seed of the --random draws (default 0)")
    p.add_argument("--preset", metavar="NAME", help="a named configuration of the algorithm, as for train")
    p.add_argument("--config", metavar="FILE.toml", help="settings file, as for train")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="one setting of every configuration")
    p.add_argument("--shards", type=int, help="units per configuration: its seeds split into this many run "
                   "directories, each a worker's stacked agents (default: one per CPU, at most one per seed)")
    p.add_argument("--backend", choices=BACKENDS, default="local", help="local (worker processes on this "
                   "machine, default) or ray (Ray tasks; needs pip install -e '.[ray]')")
    p.add_argument("--address", help="with --backend ray: the cluster to join (auto, or HOST:PORT of "
                   "`ray start --head`); default: a local Ray started and stopped by this command")
    p.add_argument("--workers", type=int, help="with --backend local: units trained at once (default: one per CPU)")
    p.add_argument("--dir", type=checks.nonempty_path, help="the sweep directory (default runs/sweep-<time>)")
    p.add_argument("--resume", type=checks.nonempty_path, metavar="DIR", help="finish an interrupted sweep: "
                   "train its unfinished units, from their last checkpoints")
    p.add_argument("--json", action="store_true", help="print one final JSON line")
    p.add_argument("--quiet", action="store_true", help="no table")
    p.set_defaults(func=run)


def _check_backend(args) -> None:
    if args.address is not None:
        if args.backend != "ray":
            raise UserError("--address names a Ray cluster; it needs --backend ray")
        if not args.address.strip():
            raise UserError("--address needs auto or HOST:PORT")
    if args.workers is not None:
        if args.backend != "local":
            raise UserError("--workers is for --backend local (Ray schedules its own)")
        if not 1 <= args.workers <= 4096:
            raise UserError(f"--workers must be from 1 to 4096, got {args.workers}")
    if args.backend == "ray":
        from neuromotor.training.sweep_ray import check_available

        check_available()


def run(args) -> int:
    import os

    _check_backend(args)
    if args.resume is not None:
        if (args.env is not None or args.grid or args.random or args.n is not None or args.set or args.preset
                or args.config or args.steps is not None or args.shards is not None or args.dir is not None
                or args.seeds != "0" or args.sample_seed != 0 or args.algo != "td3"):
            raise UserError("--resume finishes a sweep with its own plan; only --backend, --address and "
                            "--workers may be given")
        sweep_dir = args.resume
        doc = {**sweep.read_plan(sweep_dir), "backend": args.backend}
    else:
        if args.sample_seed < 0:
            raise UserError(f"--sample-seed must be 0 or more, got {args.sample_seed}")
        if args.n is not None and not 1 <= args.n <= sweep.MAX_CONFIGS:
            raise UserError(f"-n must be from 1 to {sweep.MAX_CONFIGS}, got {args.n}")
        the_plan = sweep.plan(args)  # every configuration checked before anything is written
        sweep_dir = sweep.create(args.dir, the_plan, args.backend)
        doc = sweep.read_plan(sweep_dir)
    t0 = time.perf_counter()
    if args.backend == "ray":
        from neuromotor.training.sweep_ray import run_ray

        summaries = run_ray(sweep_dir, doc["units"], args.address)
    else:
        summaries = sweep.run_local(sweep_dir, doc["units"], args.workers or os.cpu_count() or 1)
    out = sweep.finish(sweep_dir, doc, summaries, time.perf_counter() - t0)
    if not args.quiet:
        print_table(out)
    if args.json:
        print(json_line(out))
    return 0


def print_table(out: dict) -> None:
    rows = sorted(out["configs"], key=lambda c: -c["eval_return_mean"])
    print(f"\n{'eval return':>12} {'std':>8} {'seeds':>6}  configuration")
    for c in rows:
        print(f"{c['eval_return_mean']:>12.1f} {c['eval_return_std']:>8.1f} {len(c['eval_returns']):>6}  "
              f"{sweep.label(c['config'])}")
    print(f"{out['agents']} agents in {out['wall_s']:.1f} s wall on {out['backend']}; "
          f"sweep dir {out['sweep_dir']} ({sweep.PLAN}, {sweep.PLOT})")

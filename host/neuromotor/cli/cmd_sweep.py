"""`neuromotor sweep ENV`: a grid or random search over hyperparameters x seeds."""

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


def run(args) -> int:
    from neuromotor import api  # NumPy, the algorithms and Ray: imported once there is work

    if args.resume is not None:
        if (args.env is not None or args.grid or args.random or args.n is not None or args.set or args.preset
                or args.config or args.steps is not None or args.shards is not None or args.dir is not None
                or args.seeds != "0" or args.sample_seed != 0 or args.algo != "td3"):
            raise UserError("--resume finishes a sweep with its own plan; only --backend, --address and "
                            "--workers may be given")
        result = api.resume_sweep(args.resume, backend=args.backend, address=args.address, workers=args.workers)
    else:
        result = api.sweep(args.env, args.algo, grid=args.grid, random=args.random, n=args.n, settings=args.set,
                           preset=args.preset, config=args.config, steps=args.steps, shards=args.shards,
                           seeds=args.seeds, sample_seed=args.sample_seed, sweep_dir=args.dir, backend=args.backend,
                           address=args.address, workers=args.workers)
    if not args.quiet:
        print()
        print(result.table)
    if args.json:
        print(json_line(result.summary))
    return 0

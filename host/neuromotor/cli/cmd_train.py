"""`neuromotor train ENV`: train one agent or a population, or resume a run."""

from neuromotor.cli import checks, json_line
from neuromotor.errors import UserError



def register(sub):
    p = sub.add_parser("train", help="train an agent (or a population of seeds) on an environment",
                       description="Train with the algorithm's paper defaults; settings come from "
                       "--config FILE.toml, then --set key=value, then the explicit flags. ENV is a "
                       "built-in environment, a registered gymnasium id (Pendulum-v1, InvertedPendulum-v5, "
                       "...) or module:attr naming your own gymnasium.Env class or factory. A run on a "
                       "gymnasium env resumes exactly, except that the episodes in flight at the checkpoint "
                       "restart (an arbitrary env cannot be snapshotted); built-in envs resume bit-exactly.")
    p.add_argument("env", nargs="?", help="built-in name (pendulum, ant, ant-full, halfcheetah, hopper), "
                   "gymnasium id, or module:attr")
    p.add_argument("--env-kwargs", metavar="TABLE", help="keyword arguments for gymnasium.make or your "
                   "factory, as JSON or a TOML inline table, e.g. '{\"max_episode_steps\": 500}'; "
                   "single ones also as --set env_kwargs.NAME=VALUE")
    p.add_argument("--vector", metavar="{sync,async}", help="how a gymnasium env's copies are stepped: sync "
                   "(default, in this process) or async (one worker process per env, for slow Python envs)")
    p.add_argument("--algo", help="algorithm: td3, sac or ppo (default: sac on the quadrotor, td3 elsewhere)")
    p.add_argument("--steps", "--env-steps", type=int, help="environment steps per agent (default 10000)")
    p.add_argument("--envs", type=int, help="parallel envs per agent (PPO's num_envs)")
    p.add_argument("--threads", help="MuJoCo stepping threads: auto (default, all cores) or 1..cores")
    seeds = p.add_mutually_exclusive_group()
    seeds.add_argument("--seed", type=int, help="train one agent with this seed (default 0)")
    seeds.add_argument("--seeds", help="a population in one process: 0-15 or 0,3,5")
    p.add_argument("--shards", type=int, help="population shards stepped in parallel processes (default: one per CPU)")
    p.add_argument("--preset", metavar="NAME", help="a named configuration of the algorithm "
                   "(ppo: ant-paper, pendulum; sac: pendulum, mujoco; default: the env's); "
                   "--config and --set apply on top")
    p.add_argument("--config", metavar="FILE.toml", help="settings file (keys of the run or algorithm config)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="one setting, repeatable")
    p.add_argument("--run-dir", type=checks.nonempty_path, help="where to write the run (default runs/<env>-<algo>-<seeds>-<time>)")
    p.add_argument("--force", action="store_true", help="overwrite an existing run directory")
    p.add_argument("--resume", type=checks.nonempty_path, metavar="RUN_DIR", help="continue a run from its "
                   "checkpoint (on a gymnasium env the episodes in flight restart; --steps and --vector may change)")
    p.add_argument("--json", action="store_true", help="print one final JSON line")
    p.add_argument("--quiet", action="store_true", help="no progress bar or table")
    p.set_defaults(func=run)


def run(args) -> int:
    from neuromotor import api  # NumPy and the algorithms: imported once there is work

    if args.threads is not None:  # a property of this machine, not of the run: not saved
        api.set_threads(args.threads)
    if args.resume:
        if (args.env is not None or args.preset is not None or args.config is not None or args.set
                or args.env_kwargs is not None
                or args.seed is not None or args.seeds is not None
                or args.run_dir or args.envs is not None or args.shards is not None or args.force):
            raise UserError("--resume continues a run with its own config; only --steps and --vector may change")
        run = api.resume(args.resume, steps=args.steps, vector=args.vector, progress=not args.quiet)
    else:
        run = api.train(args.env, args.algo, steps=args.steps, seeds=args.seeds if args.seeds is not None else (0 if args.seed is None else args.seed),
                        config=args.config, settings=args.set or (), preset=args.preset, env_kwargs=args.env_kwargs,
                        vector=args.vector, num_envs=args.envs, shards=args.shards, run_dir=args.run_dir,
                        force=args.force, progress=not args.quiet)
    summary = run.summary
    if not args.quiet:
        print_table(summary)
        print(f"learning curve: {run.curve_file}")
    if args.json:
        print(json_line(summary))
    return 0


def print_table(summary: dict) -> None:
    judged = "eval_success" in summary  # the env judges success (the quadrotor's hover)
    print(f"\n{'seed':>6} {'eval return':>12} {'std':>8}" + (f" {'success':>8}" if judged else ""))
    for a in summary["agents"]:
        print(f"{a['seed']:>6} {a['eval_return_mean']:>12.1f} {a['eval_return_std']:>8.1f}"
              + (f" {a['eval_success']:>8.0%}" if judged else ""))
    if len(summary["agents"]) > 1:
        print(f"{'mean':>6} {summary['eval_return_mean']:>12.1f} {summary['eval_return_std']:>8.1f}"
              + (f" {summary['eval_success']:>8.0%}" if judged else ""))
    if "best" in summary:
        best = summary["best"]
        print(f"best evaluation: step {best['step']}, success {best['eval_success']:.0%}, return "
              f"{best['eval_return_mean']:.1f}; its policy (<run dir>/{best['checkpoint']}) is the run's: "
              f"export, deploy, hil and eval use it (the last state: <run dir>/checkpoint.npz)")
    print(f"{summary['steps']} steps per agent in {summary['wall_s']:.1f} s wall "
          f"({summary['steps'] * len(summary['agents']) / summary['wall_s']:.0f} agent-steps/s); "
          f"run dir {summary['run_dir']}")

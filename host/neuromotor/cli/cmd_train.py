"""`neuromotor train ENV`: train one agent or a population, or resume a run."""

import argparse
import sys
import textwrap
from pathlib import Path

from neuromotor.cli import checks, json_line
from neuromotor.errors import UserError



EXAMPLES = """\
examples:
  neuromotor train pendulum                          TD3 on the built-in pendulum
  neuromotor train quadrotor                         SAC hovers a Crazyflie (its quadrotor preset)
  neuromotor train myenv:PointEnv --steps 3000       your own gymnasium.Env (myenv.py in this directory)
  neuromotor train pendulum --seeds 0-15             a population of 16 agents
  neuromotor train pendulum --set batch_size=64      one setting over the defaults
  neuromotor train --resume runs/<run> --steps 20000 train a run on
"""


def register(sub):
    from neuromotor.api import algorithm_names, env_names

    p = sub.add_parser("train", help="train an agent (or a population of seeds) on an environment",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLES,
                       description=textwrap.fill("Train with the algorithm's paper defaults; settings come from "
                       "--config FILE.toml, then --set key=value, then the explicit flags. ENV is a "
                       "built-in environment, a registered gymnasium id (Pendulum-v1, InvertedPendulum-v5, "
                       "...) or module:attr naming your own gymnasium.Env class or factory. A run on a "
                       "gymnasium env resumes exactly, except that the episodes in flight at the checkpoint "
                       "restart (an arbitrary env cannot be snapshotted); built-in envs resume bit-exactly.", 100))
    p.add_argument("env", nargs="?", help=f"built-in name ({', '.join(env_names())}), gymnasium id, or module:attr")
    p.add_argument("--env-kwargs", metavar="TABLE", help="keyword arguments for gymnasium.make or your "
                   "factory, as JSON or a TOML inline table, e.g. '{\"max_episode_steps\": 500}'; "
                   "single ones also as --set env_kwargs.NAME=VALUE")
    p.add_argument("--vector", metavar="{sync,async}", help="how a gymnasium env's copies are stepped: sync "
                   "(default, in this process) or async (one worker process per env, for slow Python envs)")
    p.add_argument("--algo", help=f"algorithm: {', '.join(algorithm_names())} or module:Class (default: {_default_algos()})")
    p.add_argument("--steps", "--env-steps", type=int, help="environment steps per agent (default: the preset's, listed below)")
    p.add_argument("--envs", type=int, help="parallel envs per agent (PPO's num_envs)")
    p.add_argument("--threads", help="MuJoCo stepping threads: auto (default, all cores) or 1..cores")
    seeds = p.add_mutually_exclusive_group()
    seeds.add_argument("--seed", type=int, help="train one agent with this seed (default 0)")
    seeds.add_argument("--seeds", help="a population in one process: 0-15 or 0,3,5")
    p.add_argument("--shards", type=int, help="population shards stepped in parallel processes (default: one per CPU)")
    p.add_argument("--preset", metavar="NAME", help="a named configuration of the algorithm (listed below; "
                   "default: the env's); --config and --set apply on top")
    p.add_argument("--config", metavar="FILE.toml", help="settings file (keys of the run or algorithm config, "
                   "listed below)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="one setting (listed below), repeatable")
    p.add_argument("--run-dir", type=checks.nonempty_path, help="where to write the run (default runs/<env>-<algo>-<seeds>-<time>)")
    p.add_argument("--force", action="store_true", help="overwrite an existing run directory")
    p.add_argument("--resume", type=checks.nonempty_path, metavar="RUN_DIR", help="continue a run from its "
                   "checkpoint (on a gymnasium env the episodes in flight restart; --steps and --vector may change)")
    p.add_argument("--json", action="store_true", help="print one final JSON line")
    p.add_argument("--quiet", action="store_true", help="no progress bar or table: print the run directory only "
                   "(or the --json line)")
    # The tables below import every algorithm (NumPy): only when the help is shown.
    p.format_help = lambda: argparse.ArgumentParser.format_help(p) + "\n" + algorithm_tables()
    p.set_defaults(func=run)


def _default_algos() -> str:
    from neuromotor.api import default_algorithms

    by_algo = {}
    defaults = default_algorithms()
    other = defaults.pop("*")
    for env, algo in defaults.items():
        by_algo.setdefault(algo, []).append("your own envs (module:attr)" if env == "module:attr" else f"the {env}")
    return "; ".join(f"{algo} on {' and '.join(envs)}" for algo, envs in by_algo.items()) + f"; {other} elsewhere"


def algorithm_tables() -> str:
    """Each algorithm's presets (with the steps they train) and settings, from its own module."""
    from neuromotor.api import algorithm_presets, settings

    lines = ["presets (--preset NAME; steps per agent):"]
    for name, presets in algorithm_presets().items():
        lines.append(f"  {name}: {', '.join(f'{p} ({steps})' for p, steps in presets.items()) or 'none'}")
    lines.append("settings (--set KEY=VALUE, or KEY = VALUE in --config FILE.toml):")
    for name, keys in settings().items():
        lines += textwrap.wrap(", ".join(keys), width=100, initial_indent=f"  {name}: ", subsequent_indent="    ")
    return "\n".join(lines) + "\n"


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
        run = api.resume(args.resume, steps=args.steps, vector=args.vector, progress=False if args.quiet else None)
    else:
        run = api.train(args.env, args.algo, steps=args.steps, seeds=args.seeds if args.seeds is not None else (0 if args.seed is None else args.seed),
                        config=args.config, settings=args.set or (), preset=args.preset, env_kwargs=args.env_kwargs,
                        vector=args.vector, num_envs=args.envs, shards=args.shards, run_dir=args.run_dir,
                        force=args.force, progress=False if args.quiet else None)
    summary = run.summary
    if not args.quiet:
        print_table(summary)
        print(f"learning curve: {run.curve_file}")
    warn_untrained(summary)
    if args.json:
        print(json_line(summary))
    elif args.quiet:  # the one result a script needs
        print(summary["run_dir"])
    return 0


def warn_untrained(summary: dict) -> None:
    """A run whose policy is the one it started with (no evaluation beat step 0's) says so."""
    policy = summary["policy"]
    if policy["step"] == 0 and summary["steps"] > 0:
        print(f"neuromotor: warning: no evaluation beat the untrained policy, so the run's policy "
              f"({policy['path']}) is the untrained one; train longer (--steps)", file=sys.stderr)


def print_table(summary: dict) -> None:
    policy = summary["policy"]
    judged = "eval_success" in summary  # the env judges success (the quadrotor's hover)
    print(f"\nthe run's policy (export, deploy, hil and eval use it): {policy['path']}, evaluated at step "
          f"{policy['step']}: " + (f"success {policy['eval_success']:.0%}, " if judged else "")
          + f"return {policy['eval_return_mean']:.1f}")
    if policy["step"] != summary["steps"]:
        print(f"the last state (step {summary['steps']}, {Path(summary['run_dir']) / 'checkpoint.npz'}):")
    print(f"{'seed':>6} {'eval return':>12} {'std':>8}" + (f" {'success':>8}" if judged else ""))
    for a in summary["agents"]:
        print(f"{a['seed']:>6} {a['eval_return_mean']:>12.1f} {a['eval_return_std']:>8.1f}"
              + (f" {a['eval_success']:>8.0%}" if judged else ""))
    if len(summary["agents"]) > 1:
        print(f"{'mean':>6} {summary['eval_return_mean']:>12.1f} {summary['eval_return_std']:>8.1f}"
              + (f" {summary['eval_success']:>8.0%}" if judged else ""))
    print(f"{summary['steps']} steps per agent in {summary['wall_s']:.1f} s wall "
          f"({summary['steps'] * len(summary['agents']) / summary['wall_s']:.0f} agent-steps/s); "
          f"run dir {summary['run_dir']}")

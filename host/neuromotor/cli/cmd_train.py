"""`neuromotor train ENV`: train one agent or a population, or resume a run."""

import os
import sys
from pathlib import Path

from neuromotor import config, runs
from neuromotor.algos import algo_class
from neuromotor.cli import checks, json_line
from neuromotor.envs import env_class
from neuromotor.envs.gymnasium_vec import VECTOR_MODES, check_kwargs, check_vector
from neuromotor.errors import UserError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


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
    p.add_argument("--vector", choices=VECTOR_MODES, help="how a gymnasium env's copies are stepped: sync "
                   "(default, in this process) or async (one worker process per env, for slow Python envs)")
    p.add_argument("--algo", default="td3", help="algorithm (default td3)")
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


def parse_table(option: str, text: str) -> dict:
    """A JSON object or a TOML inline table -> dict (one-line UserError otherwise)."""
    import json

    try:
        value = json.loads(text)
    except ValueError:
        try:
            value = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            raise UserError(f"{option} {text!r} is neither a JSON object nor a TOML inline table") from None
    if not isinstance(value, dict):
        raise UserError(f"{option} must be a table of keyword arguments, got {text!r}")
    return check_kwargs(value)


def _env_settings(settings: dict, env_kwargs: dict, where: str):
    """Take env_kwargs (a table), env_kwargs.NAME and vector out of `settings`; the rest are
    run and algorithm settings. Returns (env_kwargs, vector or None)."""
    vector = None
    for key in list(settings):
        if key == "env_kwargs":
            env_kwargs.update(check_kwargs(settings.pop(key)))
        elif key.startswith("env_kwargs."):
            name = key.partition(".")[2]
            if not name.isidentifier():
                raise UserError(f"{where}: {key!r} does not name a keyword argument")
            env_kwargs[name] = settings.pop(key)
        elif key == "vector":
            vector = check_vector(settings.pop(key))
    return env_kwargs, vector


def _new_config(args) -> dict:
    if args.preset == "":
        raise UserError("--preset needs a name")
    if not args.env:
        raise UserError("train needs an environment (e.g. `neuromotor train pendulum`) or --resume RUN_DIR")
    file_settings = config.load_toml(args.config) if args.config is not None else {}
    set_settings = config.parse_set(args.set)
    env_kwargs, vector = _env_settings(file_settings, {}, args.config)
    env_kwargs, set_vector = _env_settings(set_settings, env_kwargs, "--set")
    if args.env_kwargs is not None:
        env_kwargs.update(parse_table("--env-kwargs", args.env_kwargs))
    vector = args.vector or set_vector or vector or "sync"
    env_class(args.env, env_kwargs, vector)
    algo_cls = algo_class(args.algo)
    # An algorithm may supply per-env defaults (PPO: its named configs); else its Config().
    if hasattr(algo_cls, "defaults"):
        algo_cfg, run_defaults = algo_cls.defaults(args.env, args.preset)
    elif args.preset is not None:
        raise UserError(f"{args.algo} has no named presets; its defaults are the paper's")
    else:
        algo_cfg, run_defaults = algo_cls.Config(), {}
    run_cfg = config.RunConfig(**run_defaults)
    config.apply(file_settings, run_cfg, algo_cfg)
    config.apply(set_settings, run_cfg, algo_cfg)
    if args.envs is not None:
        config.apply({"num_envs": args.envs}, run_cfg, algo_cfg)
    if args.steps is not None:
        run_cfg.steps = args.steps
    if args.shards is not None:
        run_cfg.shards = args.shards
    config.validate(run_cfg, algo_cfg)
    whole = config.round_steps(run_cfg.steps, algo_cfg)
    if whole != run_cfg.steps:  # the config says what will be trained
        if not args.quiet:
            print(f"neuromotor: {args.algo} trains whole rollouts of {config.steps_per_iteration(algo_cfg)} "
                  f"env steps: {run_cfg.steps} steps become {whole}", file=sys.stderr)
        run_cfg.steps = whole
    if args.seeds is not None:
        seeds = config.parse_seeds(args.seeds)
    else:
        seeds = [config.check_seed(0 if args.seed is None else args.seed)]
    if run_cfg.shards == 0:  # resolved now and saved, so a resumed run has the same shards
        run_cfg.shards = min(len(seeds), os.cpu_count() or 1)
    return {"env": args.env, "env_kwargs": env_kwargs, "vector": vector, "algo": args.algo, "seeds": seeds,
            "run": run_cfg, "algo_config": algo_cfg}


def _resumed_run(args):
    """(config, algorithm) of the run in args.resume, whose lock the caller holds."""
    run_dir = args.resume
    from neuromotor.ondevice.rundir import refuse_resume
    refuse_resume(run_dir)  # its critics and replay stayed on the board
    cfg, algo = runs.load(run_dir, vector=args.vector)
    try:
        if args.vector is not None:  # how a gymnasium env's copies step, not what they compute
            runs.save_config(run_dir, cfg)
        if args.steps is not None:
            if args.steps < algo.steps:
                raise UserError(f"{run_dir}'s checkpoint is at step {algo.steps}; --steps {args.steps} would "
                                "go back (give at least that many, or train a new run)")
            cfg["run"].steps = config.round_steps(args.steps, cfg["algo_config"])
            config.validate(cfg["run"])
            runs.save_config(run_dir, cfg)
        elif cfg["run"].steps < algo.steps:
            raise UserError(f"{run_dir}: its checkpoint is at step {algo.steps}, past the {cfg['run'].steps} steps "
                            f"in {runs.CONFIG}; resume with --steps {algo.steps} or more")
        runs.truncate_metrics(run_dir, algo.steps)
    except BaseException:
        algo.close()
        raise
    return cfg, algo


def _train(args, run_dir, cfg, algo) -> dict:
    from neuromotor import trainer  # matplotlib and tqdm only once there is work to do

    try:
        return trainer.train(run_dir, cfg, algo, progress=not args.quiet)
    finally:
        algo.close()


def run(args) -> int:
    if args.threads is not None:  # a property of this machine, not of the run: not saved
        from neuromotor.envs.mujoco_vec import set_default_threads

        set_default_threads(args.threads)
    if args.resume:
        if (args.env is not None or args.preset is not None or args.config is not None or args.set
                or args.env_kwargs is not None
                or args.seed is not None or args.seeds is not None
                or args.run_dir or args.envs is not None or args.shards is not None or args.force):
            raise UserError("--resume continues a run with its own config; only --steps and --vector may change")
        if not (args.resume / runs.CONFIG).is_file():
            raise UserError(f"--resume {args.resume}: not a run directory (no {runs.CONFIG})")
        with runs.locked(args.resume):
            cfg, algo = _resumed_run(args)
            summary = _train(args, args.resume, cfg, algo)
    else:
        cfg = _new_config(args)
        algo = runs.build(cfg)  # bad hyperparameters and runs that cannot fit fail here, before any file
        try:
            if args.run_dir is None:
                run_dir = runs.new_run_dir(cfg["env"], cfg["algo"], cfg["seeds"])
            else:
                run_dir = args.run_dir
                runs.check_replaceable(run_dir, args.force)  # before the lock file is made
                runs.make_dir(run_dir)
            with runs.locked(run_dir):
                runs.prepare(run_dir, args.force)
                runs.save_config(run_dir, cfg)
                summary = _train(args, run_dir, cfg, algo)
        finally:
            algo.close()
    if not args.quiet:
        print_table(summary)
    if args.json:
        print(json_line(summary))
    return 0


def print_table(summary: dict) -> None:
    print(f"\n{'seed':>6} {'eval return':>12} {'std':>8}")
    for a in summary["agents"]:
        print(f"{a['seed']:>6} {a['eval_return_mean']:>12.1f} {a['eval_return_std']:>8.1f}")
    if len(summary["agents"]) > 1:
        print(f"{'mean':>6} {summary['eval_return_mean']:>12.1f} {summary['eval_return_std']:>8.1f}")
    print(f"{summary['steps']} steps per agent in {summary['wall_s']:.1f} s wall "
          f"({summary['steps'] * len(summary['agents']) / summary['wall_s']:.0f} agent-steps/s); "
          f"run dir {summary['run_dir']}")
    print(f"learning curve: {Path(summary['run_dir']) / runs.CURVE}")

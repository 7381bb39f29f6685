"""How a run is configured, resumed and trained: the one path `neuromotor train` and
`neuromotor sweep` share (the CLI turns its options into these calls)."""

import os
import sys

from neuromotor.training import config, rundir, runs
from neuromotor.training.rundir import RunDir
from neuromotor.algos import algo_class
from neuromotor.envs import default_algo, env_class
from neuromotor.envs.gymnasium_vec import check_kwargs, check_vector
from neuromotor import reading
from neuromotor.errors import UserError


def parse_table(option: str, text: str) -> dict:
    """A JSON object or a TOML inline table -> dict (one-line UserError otherwise)."""
    if reading.too_deep(text):
        raise UserError(f"{option} nests deeper than {reading.MAX_DEPTH} levels")
    try:
        value = reading.parse_json(text, option)
    except UserError:
        try:
            value = reading.parse_toml(f"v = {text}", option)["v"]
        except UserError:
            raise UserError(f"{option} {text[:80]!r} is neither a JSON object nor a TOML inline table") from None
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


def new_config(env, algo, *, preset=None, config_file=None, settings=(), env_kwargs=None, vector=None,
               envs=None, steps=None, shards=None, seeds=None, seed=None, quiet=False) -> config.RunSpec:
    """A new run's whole config, every setting checked: the algorithm's defaults for `env`
    (or `preset`), then the TOML file, then `settings` (KEY=VALUE texts, or a dict of values), then the options
    (`env_kwargs` is --env-kwargs' text)."""
    if preset == "":
        raise UserError("--preset needs a name")
    if not env:
        raise UserError("train needs an environment (e.g. `neuromotor train pendulum`) or --resume RUN_DIR")
    env_kwargs_text, vector_option = env_kwargs, vector
    algo = default_algo(env) if algo is None else algo
    file_settings = config.load_toml(config_file) if config_file is not None else {}
    set_settings = dict(settings) if isinstance(settings, dict) else config.parse_set(settings)
    env_kwargs, vector = _env_settings(file_settings, {}, config_file)
    env_kwargs, set_vector = _env_settings(set_settings, env_kwargs, "--set")
    if env_kwargs_text is not None:
        env_kwargs.update(parse_table("--env-kwargs", env_kwargs_text))
    vector = check_vector(vector_option if vector_option is not None else (set_vector or vector or "sync"))
    factory = env_class(env, env_kwargs, vector)
    algo_cls = algo_class(algo)
    # An algorithm may supply per-env defaults (PPO: its named configs); else its Config().
    if hasattr(algo_cls, "defaults"):
        algo_cfg, run_defaults = algo_cls.defaults(env, preset)
    elif preset is not None:
        raise UserError(f"{algo} has no named presets; its defaults are the paper's")
    else:
        algo_cfg, run_defaults = algo_cls.Config(), {}
    run_cfg = config.RunConfig(**run_defaults)
    config.apply(file_settings, run_cfg, algo_cfg)
    config.apply(set_settings, run_cfg, algo_cfg)
    if envs is not None:
        config.apply({"num_envs": envs}, run_cfg, algo_cfg)
    if steps is not None:
        run_cfg.steps = steps
    if shards is not None:
        run_cfg.shards = shards
    config.validate(run_cfg, algo_cfg)
    if getattr(algo_cfg, "start_draws", 1) > 1 and not getattr(factory, "ranks_starts", False):
        raise UserError(f"start_draws {algo_cfg.start_draws} needs an env that ranks its initial states "
                        f"(the quadrotor); {env} does not")
    whole = config.round_steps(run_cfg.steps, algo_cfg)
    if whole != run_cfg.steps:  # the config says what will be trained
        if not quiet:
            print(f"neuromotor: {algo} trains whole rollouts of {config.steps_per_iteration(algo_cfg)} "
                  f"env steps: {run_cfg.steps} steps become {whole}", file=sys.stderr)
        run_cfg.steps = whole
    if seeds is not None:
        seeds = config.parse_seeds(seeds)
    else:
        seeds = [config.check_seed(0 if seed is None else seed)]
    if run_cfg.shards == 0:  # resolved now and saved, so a resumed run has the same shards
        run_cfg.shards = min(len(seeds), os.cpu_count() or 1)
    return config.RunSpec(env, algo, seeds, run_cfg, algo_cfg, env_kwargs, vector)


def resume(run_dir, vector=None, steps=None):
    """(RunSpec, algorithm) of the run in run_dir, whose lock the caller holds; `steps` may
    extend it, `vector` changes how a gymnasium env's copies step."""
    rundir.refuse_resume(run_dir)
    rundir.check_own_files(run_dir)
    spec, algo = runs.load(run_dir, vector=vector)
    try:
        if vector is not None:  # how a gymnasium env's copies step, not what they compute
            rundir.write_config(run_dir, spec)
        if steps is not None:
            if steps < algo.steps:
                raise UserError(f"{run_dir}'s checkpoint is at step {algo.steps}; --steps {steps} would "
                                "go back (give at least that many, or train a new run)")
            spec.run.steps = config.round_steps(steps, spec.algo_config)
            config.validate(spec.run)
            rundir.write_config(run_dir, spec)
        elif spec.run.steps < algo.steps:
            raise UserError(f"{run_dir}: its checkpoint is at step {algo.steps}, past the {spec.run.steps} steps "
                            f"in {rundir.CONFIG}; resume with --steps {algo.steps} or more")
        rundir.truncate_metrics(run_dir, algo.steps)
    except BaseException:
        algo.close()
        raise
    return spec, algo


def train(run_dir, spec: config.RunSpec, algo, progress=True) -> dict:
    """Train `algo` to the end of spec's steps in run_dir (a path, or the RunDir that holds it),
    then release its workers."""
    from neuromotor.training import loop  # matplotlib and tqdm only once there is work to do

    try:
        return loop.train(run_dir if isinstance(run_dir, RunDir) else RunDir(run_dir), spec, algo,
                          progress=progress)
    finally:
        algo.close()

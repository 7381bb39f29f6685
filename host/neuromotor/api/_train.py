"""Training from Python: `train` makes a run directory and trains it (`resume`, beside Run,
continues one). `neuromotor train` calls `start` and `resume` too, so both faces train the
same way."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping

from neuromotor.training import rundir, runs, session
from neuromotor.training.config import RunSpec, parse_set
from neuromotor.api._env import env_name
from neuromotor.api._progress import show_progress
from neuromotor.api._run import Run, finished
from neuromotor.errors import UserError


def _seeds(seeds):
    """(seed, seeds text) for session.new_config from an int, "0-15"/"0,3,5" or a list of ints."""
    if isinstance(seeds, bool):
        raise UserError(f"seeds must be an integer, a list of integers or a range such as '0-15', got {seeds!r}")
    if isinstance(seeds, int):
        return seeds, None
    if isinstance(seeds, str):
        return None, seeds
    if isinstance(seeds, Iterable):
        seeds = list(seeds)
        if seeds and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds):
            return None, ",".join(map(str, seeds))
    raise UserError(f"seeds must be an integer, a list of integers or a range such as '0-15', got {seeds!r}")


def train(env: "str | type | Callable", algo: "str | None" = None, *, steps: "int | None" = None,
          seeds: "int | Iterable[int] | str" = 0, config: "Mapping | str | os.PathLike | None" = None,
          settings: "Iterable[str] | None" = None, preset: "str | None" = None,
          env_kwargs: "Mapping | str | None" = None, vector: "str | None" = None,
          num_envs: "int | None" = None, shards: "int | None" = None, run_dir: "str | os.PathLike | None" = None,
          force: bool = False,
          progress: "bool | None" = None) -> Run:
    """Train `algo` on `env` and return the finished Run.

    Args:
        env: a built-in environment (``"pendulum"``, ``"ant"``, ...), a registered gymnasium id
            (``"Pendulum-v1"``), ``"module:attr"``, or a gymnasium.Env subclass / factory
            function importable from a module.
        algo: ``"td3"``, ``"sac"``, ``"ppo"``, ``"td3-gru"`` or ``"sac-gru"`` (recurrent actor and critics), or
            ``"module:Class"`` (default: ``"sac"`` on the quadrotor and on your own envs,
            ``"module:attr"``; ``"td3"`` elsewhere).
        steps: environment steps per agent (default: the preset's: 10000 for the pendulum,
            300000 for the quadrotor).
        seeds: one seed (an agent), a list of seeds or a range text such as ``"0-15"`` (a
            population trained in stacked arrays).
        config: settings over the algorithm's defaults, as a dict (``{"batch_size": 64}``) or
            the path of a TOML file.
        settings: ``"KEY=VALUE"`` texts applied over `config` (the command line's ``--set``).
        preset: a named configuration of the algorithm (ppo: ant-paper, pendulum; sac:
            pendulum, mujoco).
        env_kwargs: keyword arguments for gymnasium.make or your env's factory (a dict, or
            its text as JSON or a TOML inline table).
        vector: ``"sync"`` or ``"async"``: how a gymnasium env's copies are stepped.
        num_envs: parallel envs per agent (PPO).
        shards: worker processes a population is cut into (default: one per core).
        run_dir: where the run is written (default ``runs/<env>-<algo>-<seeds>-<time>``).
        force: replace an existing run in `run_dir`.
        progress: show a progress bar; default: in a terminal or a notebook.

    Every setting is checked before anything is written; bad input raises
    neuromotor.UserError with one line saying what is wrong."""
    show = show_progress(progress)
    if run_dir is not None and not isinstance(run_dir, (str, os.PathLike)):
        raise UserError(f"run_dir must be a path, got {type(run_dir).__name__}")
    if run_dir is not None and os.fspath(run_dir) == "":
        raise UserError("run_dir is empty (it would mean the current directory)")
    seed, seeds_text = _seeds(seeds)
    config_file, values = None, {}
    if isinstance(config, Mapping):
        values = dict(config)
    elif isinstance(config, (str, os.PathLike)):
        config_file = config
    elif config is not None:
        raise UserError(f"config must be a dict of settings or the path of a TOML file, got {type(config).__name__}")
    if settings is not None:
        if isinstance(settings, (str, bytes)) or not all(isinstance(t, str) for t in settings):
            raise UserError("settings must be a list of KEY=VALUE texts")
        values.update(parse_set(settings))
    env_kwargs_text = None
    if isinstance(env_kwargs, str):
        env_kwargs_text = env_kwargs
    elif env_kwargs is not None and not isinstance(env_kwargs, Mapping):
        raise UserError(f"env_kwargs must be a dict, got {type(env_kwargs).__name__}")
    elif env_kwargs:
        values["env_kwargs"] = dict(env_kwargs)
    spec = session.new_config(env_name(env), algo, preset=preset, config_file=config_file, settings=values,
                              env_kwargs=env_kwargs_text, vector=vector, envs=num_envs, steps=steps, shards=shards,
                              seeds=seeds_text, seed=seed, quiet=progress is False)  # notices unless told quiet
    return start(spec, run_dir=run_dir, force=force, progress=show)


def start(spec: RunSpec, run_dir=None, force: bool = False, progress: bool = True) -> Run:
    """Train a new run from a whole RunSpec (session.new_config) into run_dir."""
    algo = runs.build(spec)  # bad hyperparameters and runs that cannot fit fail here, before any file
    try:
        with rundir.create(spec, run_dir, force) as run:
            summary = session.train(run, spec, algo, progress=progress)
    finally:
        algo.close()
    return finished(run.path, summary)


def set_threads(threads: "int | str") -> None:
    """Threads that MuJoCo envs made from now on step with (in this process and its shard
    workers): ``"auto"`` (every core) or a count; a property of the machine, not saved with a run."""
    from neuromotor.envs.mujoco_vec import set_default_threads  # MuJoCo: only when threads are set

    set_default_threads(threads)

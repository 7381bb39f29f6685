"""What can be trained, and how: the names and settings the command line's help lists,
read from the same tables the code uses (envs.ENVS, algos.ALGOS, each algorithm's presets
and Config)."""

import dataclasses
import importlib


def env_names() -> list:
    """The built-in environments' names."""
    from neuromotor.envs import ENVS

    return list(ENVS)


def algorithm_names() -> list:
    """The registered algorithms' names (any module:Class trains too)."""
    from neuromotor.algos import ALGOS

    return list(ALGOS)


def default_algorithms() -> dict:
    """The algorithm `train` uses without --algo: {"quadrotor": "sac", ..., "module:attr": ...,
    "*": ...} (the last two: your own envs, and every other env)."""
    from neuromotor.envs import DEFAULT_ALGOS, USER_ENV_ALGO, default_algo

    return {**DEFAULT_ALGOS, "module:attr": USER_ENV_ALGO, "*": default_algo("")}


def algorithm_presets() -> dict:
    """{algorithm: {preset: steps per agent}}, from each algorithm's own module (imports them)."""
    from neuromotor.algos import ALGOS, algo_class
    from neuromotor.training.config import RunConfig

    out = {}
    for name in ALGOS:
        configs = getattr(importlib.import_module(algo_class(name).__module__), "CONFIGS", {})
        out[name] = {preset: run.get("steps", RunConfig.steps) for preset, (_, run) in configs.items()}
    return out


def settings() -> dict:
    """{"run": keys of every run, algorithm: keys of its Config}: what --set and --config take."""
    from neuromotor.algos import ALGOS, algo_class
    from neuromotor.training.config import RunConfig

    out = {"run": [f.name for f in dataclasses.fields(RunConfig)]}
    for name in ALGOS:
        out[name] = [f.name for f in dataclasses.fields(algo_class(name).Config)]
    return out

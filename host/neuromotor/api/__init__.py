"""The Python API: train, evaluate, export, deploy and benchmark from a script or a notebook.

Everything here is importable from the package itself (``import neuromotor``), and the
``neuromotor`` command is built on these names alone::

    import neuromotor
    run = neuromotor.train("pendulum", steps=10_000)
    run.export("policy.nmp")

Bad input raises :class:`neuromotor.UserError` with one line saying what is wrong: the
same errors the command line prints before exiting with status 2.

Names are imported on first use (NumPy, the algorithms and the board code only when a
command needs them), so ``neuromotor --help`` starts fast.
"""

import importlib
from typing import TYPE_CHECKING

# name -> the module that defines it
_HOME = {
    # training and runs
    "train": "neuromotor.api._train", "set_threads": "neuromotor.api._train",
    "resume": "neuromotor.api._run", "load_run": "neuromotor.api._run", "list_runs": "neuromotor.api._run",
    "load_policy": "neuromotor.api._run",
    "Run": "neuromotor.api._run", "evaluate": "neuromotor.api._run", "Evaluation": "neuromotor.api._run",
    "export": "neuromotor.api._export", "import_policy": "neuromotor.api._import",
    **{name: "neuromotor.api._formats" for name in ("PolicyFormat", "policy_formats", "policy_format",
                                                    "register_format")},
    "sweep": "neuromotor.api._sweep", "resume_sweep": "neuromotor.api._sweep", "SweepResult": "neuromotor.api._sweep",
    "TD3": "neuromotor.algos.td3", "SAC": "neuromotor.algos.sac", "PPO": "neuromotor.algos.ppo",
    "env_factory": "neuromotor.api._env", "parse_kwargs": "neuromotor.api._env",
    **{name: "neuromotor.api._catalogue" for name in ("env_names", "algorithm_names", "default_algorithms",
                                                      "algorithm_presets", "settings")},
    # boards
    **{name: "neuromotor.api._board" for name in (
        "Board", "EmulatedBoard", "start_board", "stop_board", "reset_board", "running_boards", "connected_boards",
        "known_boards", "board_names", "build_firmware", "check_boards", "bench", "HilResult", "BenchResult",
        "run_baremetal", "pio", "web_server")},
    "train_on_device": "neuromotor.api._ondevice",
    "distil": "neuromotor.api._distil",
    # policies and errors
    "PolicySpec": "neuromotor.policy.spec", "read_policy": "neuromotor.policy.policy_file",
    "UserError": "neuromotor.errors",
}

__all__ = list(_HOME)

if TYPE_CHECKING:  # the lazy names, for type checkers and the reference pages
    # ruff: noqa: F401
    from neuromotor.algos.ppo import PPO
    from neuromotor.algos.sac import SAC
    from neuromotor.algos.td3 import TD3
    from neuromotor.api._distil import distil
    from neuromotor.api._board import (BenchResult, Board, EmulatedBoard, HilResult, bench, board_names,
                                       build_firmware, check_boards, connected_boards, known_boards, pio,
                                       reset_board, run_baremetal, running_boards, start_board, stop_board,
                                       web_server)
    from neuromotor.api._catalogue import algorithm_names, algorithm_presets, default_algorithms, env_names, settings
    from neuromotor.api._env import env_factory, parse_kwargs
    from neuromotor.api._export import export
    from neuromotor.api._import import import_policy
    from neuromotor.api._formats import PolicyFormat, policy_format, policy_formats, register_format
    from neuromotor.api._ondevice import train_on_device
    from neuromotor.api._run import Evaluation, Run, evaluate, list_runs, load_policy, load_run, resume
    from neuromotor.api._sweep import SweepResult, resume_sweep, sweep
    from neuromotor.api._train import set_threads, train
    from neuromotor.errors import UserError
    from neuromotor.policy.policy_file import read_policy
    from neuromotor.policy.spec import PolicySpec


def __getattr__(name: str):
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'neuromotor.api' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value

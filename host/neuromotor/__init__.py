"""neuromotor: reinforcement learning for microcontrollers, from Python.

The names below are the Python API (neuromotor.api); the `neuromotor` command is built on them.
"""

__version__ = "0.1.0"

from neuromotor.api import (PPO, SAC, TD3, BenchResult, Board, EmulatedBoard, Evaluation,  # noqa: E402
                            HilResult, PolicySpec, Run, UserError, env_factory, load_run, resume,
                            start_board, train)

__all__ = [
    "train", "resume", "load_run", "Run", "Evaluation",
    "Board", "EmulatedBoard", "start_board", "HilResult", "BenchResult",
    "PolicySpec", "UserError", "TD3", "SAC", "PPO", "env_factory", "__version__",
]

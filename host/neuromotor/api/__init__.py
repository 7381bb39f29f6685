"""The Python API: train, evaluate, export, deploy and benchmark from a script or a notebook.

Everything here is importable from the package itself (``import neuromotor``), and the
``neuromotor`` command runs the same functions::

    import neuromotor
    run = neuromotor.train("pendulum", steps=10_000)
    run.export("policy.nmp")

Bad input raises :class:`neuromotor.UserError` with one line saying what is wrong: the
same errors the command line prints before exiting with status 2.
"""

from neuromotor.algos.ppo import PPO
from neuromotor.algos.sac import SAC
from neuromotor.algos.td3 import TD3
from neuromotor.api._board import BenchResult, Board, EmulatedBoard, HilResult, start_board
from neuromotor.api._run import Evaluation, Run, load_run
from neuromotor.api._run import resume
from neuromotor.api._train import train
from neuromotor.envs import env_class as env_factory
from neuromotor.errors import UserError
from neuromotor.policy.spec import PolicySpec

__all__ = [
    "train", "resume", "load_run", "Run", "Evaluation",
    "Board", "EmulatedBoard", "start_board", "HilResult", "BenchResult",
    "PolicySpec", "UserError", "TD3", "SAC", "PPO", "env_factory",
]

"""NumPy networks with a leading population axis: MLP forward/backward, Adam, polyak."""

from neuromotor.nn.mlp import MLP
from neuromotor.nn.optim import Adam, polyak

__all__ = ["MLP", "Adam", "polyak"]

"""NumPy networks with a leading population axis: MLP forward/backward, Adam, polyak."""

import numpy as np

from neuromotor.nn.mlp import MLP
from neuromotor.nn.optim import Adam, polyak

F32 = np.float32  # what the algorithms train in, as the boards' kernels do

__all__ = ["F32", "MLP", "Adam", "polyak"]

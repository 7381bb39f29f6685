"""Fully connected networks for a whole population at once, with hand-written backward.

All parameters of a network family (e.g. 16 agents x 2 critics) live in ONE flat
vector, laid out layer by layer: [W0 of every member][b0 of every member]
[W1 ...]. Each layer's weight is then a contiguous (*pop, in, out) view, which is
what batched matmul wants, and the optimiser sees one vector. A member is
selected by indexing the leading axes of the views (`MLP.member(views, k)`).

Inputs are (*pop, batch, in). Weights are stored (in, out), i.e. transposed
relative to PyTorch and PolicySpec, so the forward pass is x @ W + b.

The hot path runs in a preallocated `Workspace` (one per call site and input
shape): layer outputs and input gradients are written with `out=`, so a
training step allocates almost nothing. The float dtype follows the flat vector.
"""

import math

import numpy as np

ACTIVATIONS = ("identity", "relu", "tanh")


class Workspace:
    """Buffers for one forward/backward pass of one input shape; doubles as the tape."""

    def __init__(self, net, batch_shape, dtype):
        self.x = None  # the input of the last forward pass
        self.h = [np.empty(tuple(batch_shape) + (n,), dtype) for n in net.sizes[1:]]
        self.dx = [np.empty(tuple(batch_shape) + (n,), dtype) for n in net.sizes[:-1]]


class MLP:
    def __init__(self, sizes, activations, pop=(), dtype=np.float32):
        if len(activations) != len(sizes) - 1:
            raise ValueError("one activation per layer")
        for a in activations:
            if a not in ACTIVATIONS:
                raise ValueError(f"activation {a!r} is not one of {ACTIVATIONS}")
        self.sizes = list(sizes)
        self.activations = list(activations)
        self.pop = tuple(pop)
        self.dtype = dtype
        members = math.prod(self.pop)
        self.shapes = []  # per layer: (w_offset, b_offset, in, out)
        offset = 0
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
            w_off = offset
            offset += members * fan_in * fan_out
            self.shapes.append((w_off, offset, fan_in, fan_out))
            offset += members * fan_out
        self.size = offset  # length of the flat vector for the whole population

    def zeros(self) -> np.ndarray:
        return np.zeros(self.size, self.dtype)

    def views(self, flat: np.ndarray) -> list:
        """[(W (*pop, in, out), b (*pop, 1, out)), ...] sharing memory with `flat`."""
        out = []
        for w_off, b_off, n_in, n_out in self.shapes:
            w = flat[w_off:b_off].reshape(self.pop + (n_in, n_out))
            b = flat[b_off:b_off + (b_off - w_off) // n_in].reshape(self.pop + (1, n_out))
            out.append((w, b))
        return out

    @staticmethod
    def member(views: list, index) -> list:
        return [(w[index], b[index]) for w, b in views]

    def init_member(self, views: list, index, rng: np.random.Generator) -> None:
        """PyTorch's nn.Linear default: W and b ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
        for w, b in self.member(views, index):
            bound = 1.0 / math.sqrt(w.shape[0])
            w[...] = rng.uniform(-bound, bound, w.shape)
            b[...] = rng.uniform(-bound, bound, b.shape)

    def workspace(self, batch_shape, dtype=None) -> Workspace:
        """batch_shape = (*pop, batch): the input shape without its feature axis."""
        return Workspace(self, batch_shape, dtype or self.dtype)

    def forward(self, views: list, x: np.ndarray, ws: Workspace = None) -> np.ndarray:
        """f(x). With a workspace the result lives in it (valid until its next use) and the
        pass is recorded for backward; without one, fresh arrays are returned."""
        if ws is None:
            pop = np.broadcast_shapes(x.shape[:-2], views[0][0].shape[:-2])
            ws = self.workspace(pop + x.shape[-2:-1], np.result_type(x, views[0][0]))
        ws.x = x
        for (w, b), act, z in zip(views, self.activations, ws.h):
            np.matmul(x, w, out=z)
            z += b
            if act == "relu":
                np.maximum(z, 0, out=z)
            elif act == "tanh":
                np.tanh(z, out=z)
            x = z
        return x

    def backward(self, views: list, ws: Workspace, dy: np.ndarray, grads: list = None, need_dx=False):
        """Backpropagate dL/dy (overwritten) through the last forward pass in `ws`.
        Writes dL/dparams into `grads` (views of a flat gradient vector; None skips
        them) and returns dL/dx (in the workspace) if need_dx."""
        for i in range(len(views) - 1, -1, -1):
            x = ws.h[i - 1] if i else ws.x
            y = ws.h[i]
            act = self.activations[i]
            # Derivatives from the layer output: relu' = [y > 0], tanh' = 1 - y^2.
            if act == "relu":
                np.multiply(dy, y > 0, out=dy)
            elif act == "tanh":
                dy *= 1 - y * y
            if grads is not None:
                gw, gb = grads[i]
                np.matmul(np.swapaxes(x, -1, -2), dy, out=gw)
                np.sum(dy, axis=-2, keepdims=True, out=gb)
            if i or need_dx:
                w = np.swapaxes(views[i][0], -1, -2)
                dx = ws.dx[i]
                # A one-output layer makes this an outer product, which gemm does slowly.
                if dy.shape[-1] == 1:
                    np.multiply(dy, w, out=dx)
                else:
                    np.matmul(dy, w, out=dx)
                dy = dx
        return dy if need_dx else None

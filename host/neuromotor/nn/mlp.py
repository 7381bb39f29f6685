"""Fully connected networks for a whole population at once, with hand-written backward.

Biases are folded into the matmuls. Every layer input carries a trailing
constant 1, and a layer's parameters are one augmented matrix

    A = [[W, 0],     (in + 1, out + 1): W (in, out), bias b (out,), and for hidden
         [b, 1]]     layers a constant column that re-creates the 1 for the next layer

so a layer is act([x, 1] @ A) = [act(x @ W + b), 1] (relu(1) = 1; after tanh the
1 is rewritten). The output layer has no constant column. This saves the
broadcast bias add of every forward and the bias reduction of every backward,
which cost as much as the matmuls at these sizes. The constant column's
gradient is exactly zero, so Adam and polyak leave it untouched.

All parameters of a network family (e.g. 16 agents x 2 critics) live in ONE flat
vector, laid out layer by layer: [A0 of every member][A1 of every member]...
Each layer's matrix is then a contiguous (*pop, in + 1, out (+ 1)) view, which is
what batched matmul wants, and the optimiser sees one vector.

Inputs are (*pop, batch, in + 1) with x[..., -1] == 1 (see `with_ones`). The hot
path runs in a preallocated `Workspace` (one per call site and input shape), so
a training step allocates almost nothing. The float dtype follows the arrays.
"""

import math

import numpy as np

ACTIVATIONS = ("identity", "relu", "tanh")


def with_ones(x: np.ndarray) -> np.ndarray:
    """x (..., n) -> (..., n + 1) with a trailing constant 1."""
    return np.concatenate([x, np.ones(x.shape[:-1] + (1,), x.dtype)], axis=-1)


class Workspace:
    """Buffers for one forward/backward pass of one input shape; doubles as the tape."""

    def __init__(self, net, batch_shape, dtype):
        batch_shape = tuple(batch_shape)
        self.x = None  # the input of the last forward pass
        self.h = [np.empty(batch_shape + (n,), dtype) for n in net.out_widths]
        self.dx = [np.empty(batch_shape + (n + 1,), dtype) for n in net.sizes[:-1]]
        # relu against an array of zeros: NumPy's maximum with a scalar operand skips
        # its SIMD loop and is ~4x slower than with two arrays.
        self.zero = [np.zeros(batch_shape + (n,), dtype) if act == "relu" else None
                     for n, act in zip(net.out_widths, net.activations)]


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
        last = len(sizes) - 2
        # Hidden layers also output the constant 1 for the next layer.
        self.out_widths = [n + (i != last) for i, n in enumerate(sizes[1:])]
        members = math.prod(self.pop)
        self.offsets = [0]
        for n_in, n_out in zip(sizes[:-1], self.out_widths):
            self.offsets.append(self.offsets[-1] + members * (n_in + 1) * n_out)
        self.size = self.offsets[-1]  # length of the flat vector for the whole population

    def zeros(self) -> np.ndarray:
        return np.zeros(self.size, self.dtype)

    def views(self, flat: np.ndarray) -> list:
        """Per layer the augmented matrix (*pop, in + 1, out (+ 1)), sharing memory with `flat`."""
        return [flat[a:b].reshape(self.pop + (n_in + 1, n_out))
                for a, b, n_in, n_out in zip(self.offsets, self.offsets[1:], self.sizes, self.out_widths)]

    @staticmethod
    def member(views: list, index) -> list:
        return [a[index] for a in views]

    def weights_and_biases(self, views: list) -> list:
        """[(W (..., in, out), b (..., out)), ...] as views (of one member or of many)."""
        return [(a[..., :n_in, :n_out], a[..., n_in, :n_out]) for a, n_in, n_out in zip(views, self.sizes, self.sizes[1:])]

    def init_member(self, views: list, index, rng: np.random.Generator) -> None:
        """PyTorch's nn.Linear default: W and b ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
        member = self.member(views, index)
        for a, (w, b) in zip(member, self.weights_and_biases(member)):
            bound = 1.0 / math.sqrt(w.shape[0])
            w[...] = rng.uniform(-bound, bound, w.shape)
            b[...] = rng.uniform(-bound, bound, b.shape)
            if a.shape[1] > w.shape[1]:  # the constant column: 0 ... 0 1
                a[:, -1] = 0
                a[-1, -1] = 1

    def workspace(self, batch_shape, dtype=None) -> Workspace:
        """batch_shape = (*pop, batch): the input shape without its feature axis."""
        return Workspace(self, batch_shape, dtype or self.dtype)

    def forward(self, views: list, x: np.ndarray, ws: Workspace = None) -> np.ndarray:
        """f(x) for x with its trailing 1. With a workspace the result lives in it (valid
        until its next use) and the pass is recorded for backward; without one, fresh
        arrays are returned. Inputs may broadcast over population axes."""
        if ws is None:
            pop = np.broadcast_shapes(x.shape[:-2], views[0].shape[:-2])
            ws = self.workspace(pop + x.shape[-2:-1], np.result_type(x, views[0]))
        ws.x = x
        last = len(views) - 1
        for i, (a, act, z, zero) in enumerate(zip(views, self.activations, ws.h, ws.zero)):
            np.matmul(x, a, out=z)
            if act == "relu":
                np.maximum(z, zero, out=z)
            elif act == "tanh":
                np.tanh(z, out=z)
                if i != last:
                    z[..., -1] = 1
            x = z
        return x

    def backward(self, views: list, ws: Workspace, dy: np.ndarray, grads: list = None, need_dx=False):
        """Backpropagate dL/dy (overwritten) through the last forward pass in `ws`.
        Writes dL/dparams into `grads` (views of a flat gradient vector; None skips
        them) and returns dL/d[x, 1] (in the workspace) if need_dx."""
        for i in range(len(views) - 1, -1, -1):
            x = ws.h[i - 1] if i else ws.x
            y = ws.h[i]
            act = self.activations[i]
            # Derivatives from the layer output: relu' = [y > 0], tanh' = 1 - y^2.
            if act == "relu":
                np.multiply(dy, y > 0, out=dy)
            elif act == "tanh":
                dy *= 1 - y * y
            if dy.shape[-1] > self.sizes[i + 1]:
                dy[..., -1] = 0  # the constant column is not a parameter: zero gradient
            if grads is not None:
                np.matmul(x.swapaxes(-1, -2), dy, out=grads[i])
            if i or need_dx:
                a = views[i].swapaxes(-1, -2)
                dx = ws.dx[i]
                # A one-output layer makes this an outer product, which gemm does slowly.
                if dy.shape[-1] == 1:
                    np.multiply(dy, a, out=dx)
                else:
                    np.matmul(dy, a, out=dx)
                dy = dx
        return dy if need_dx else None

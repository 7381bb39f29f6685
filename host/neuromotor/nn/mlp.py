"""Fully connected networks for a whole population at once, with hand-written backward.

All parameters of a network family (e.g. 16 agents x 2 critics) live in ONE flat
float32 vector, laid out layer by layer: [W0 of every member][b0 of every member]
[W1 ...]. Each layer's weight is then a contiguous (*pop, in, out) view, which is
what batched matmul wants, and the optimiser sees one vector. A member is
selected by indexing the leading axes of the views (`net.member(views, k)`).

Inputs are (*pop, batch, in); they may broadcast over population axes (a critic
pair (P, 2) takes inputs (P, 1, batch, in)). Weights are stored (in, out), i.e.
transposed relative to PyTorch and PolicySpec, so the forward pass is x @ W + b.
"""

import math

import numpy as np

ACTIVATIONS = ("identity", "relu", "tanh")


class MLP:
    def __init__(self, sizes, activations, pop=()):
        if len(activations) != len(sizes) - 1:
            raise ValueError("one activation per layer")
        for a in activations:
            if a not in ACTIVATIONS:
                raise ValueError(f"activation {a!r} is not one of {ACTIVATIONS}")
        self.sizes = list(sizes)
        self.activations = list(activations)
        self.pop = tuple(pop)
        members = math.prod(self.pop)
        self.shapes = []  # per layer: (w_offset, b_offset, in, out)
        offset = 0
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
            w_off = offset
            offset += members * fan_in * fan_out
            self.shapes.append((w_off, offset, fan_in, fan_out))
            offset += members * fan_out
        self.size = offset  # length of the flat vector for the whole population
        self.member_size = self.size // members

    def zeros(self) -> np.ndarray:
        return np.zeros(self.size, np.float32)

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

    def forward(self, views: list, x: np.ndarray, tape: list = None) -> np.ndarray:
        """y = f(x). With a tape (a list), records each layer's input and output for backward."""
        for (w, b), act in zip(views, self.activations):
            if tape is not None:
                tape.append(x)
            z = np.matmul(x, w)
            z += b
            if act == "relu":
                np.maximum(z, np.float32(0), out=z)
            elif act == "tanh":
                np.tanh(z, out=z)
            x = z
        if tape is not None:
            tape.append(x)
        return x

    def backward(self, views: list, tape: list, dy: np.ndarray, grads: list = None, need_dx=False):
        """Backpropagate dL/dy (overwritten). Writes dL/dparams into `grads` (views of a
        flat gradient vector, or None to skip them) and returns dL/dx if need_dx."""
        last = len(views) - 1
        for i in range(last, -1, -1):
            x, y = tape[i], tape[i + 1]
            act = self.activations[i]
            # Derivatives from the layer output: relu' = [y > 0], tanh' = 1 - y^2.
            if act == "relu":
                np.multiply(dy, y > 0, out=dy)
            elif act == "tanh":
                dy *= 1 - y * y
            if grads is not None:
                gw, gb = grads[i]
                _sum_to(np.matmul(np.swapaxes(x, -1, -2), dy), gw)
                _sum_to(np.sum(dy, axis=-2, keepdims=True), gb)
            if i or need_dx:
                w = np.swapaxes(views[i][0], -1, -2)
                # A one-output layer makes this an outer product, which gemm does slowly.
                dy = dy * w if dy.shape[-1] == 1 else np.matmul(dy, w)
        return dy if need_dx else None


def _sum_to(value: np.ndarray, out: np.ndarray) -> None:
    """out[...] = value, summing away axes over which the input was broadcast."""
    if value.shape == out.shape:
        out[...] = value
    else:
        axes = tuple(i for i, (v, o) in enumerate(zip(value.shape, out.shape)) if v != o)
        np.sum(value, axis=axes, keepdims=True, out=out)

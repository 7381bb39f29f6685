"""Small recurrent networks: Dense relu -> GRU -> dense head, trained by BPTT.

Every parameter (the GRU's initial state included) is a view into one flat vector per network
(per member of a population: `pop` leading axes, one agent's networks each), so one Adam
(neuromotor.nn.optim) updates them all. The layers are the policy file's (version 4: dense
relu, GRU, dense), so training's numbers are what a board computes.
"""

import math

import numpy as np

from neuromotor.nn import gru
from neuromotor.nn.gru import GRUParams, bias_grad, linear, weight_grad

ACTIVATE = {"relu": lambda x: np.maximum(x, 0), "tanh": np.tanh, "identity": lambda x: x}


class RecurrentNet:
    """x -> relu(W1 x + b1) -> GRU -> head, the head dense layers [(size, activation)]; inputs
    (T, *pop, B, n_in) (the population axes may be 1 where every member reads the same input)."""

    def __init__(self, n_in: int, dense: int, hidden: int, head: list, rng_of, pop: tuple = (), dtype=np.float32):
        """rng_of(member index) -> that member's Generator (members initialised in index order);
        None: zeros, a template to read a saved network into."""
        self.n_in, self.dense, self.hidden, self.pop = n_in, dense, hidden, tuple(pop)
        self.head = [tuple(layer) for layer in head]
        shapes = {"w1": (dense, n_in), "b1": (dense,), "wi": (3 * hidden, dense), "bi": (3 * hidden,),
                  "wh": (3 * hidden, hidden), "bh": (3 * hidden,), "h0": (hidden,)}
        fan_in = hidden
        for i, (size, _) in enumerate(self.head, start=2):
            shapes[f"w{i}"], shapes[f"b{i}"] = (size, fan_in), (size,)
            fan_in = size
        self.shapes = shapes
        self.size = sum(math.prod(s) for s in shapes.values())
        self.params = np.zeros((*self.pop, self.size), dtype)
        self.p = self.views(self.params)
        for member in np.ndindex(*self.pop) if rng_of else ():
            self._init_member(member, rng_of(member), dtype)

    def _init_member(self, member: tuple, rng: np.random.Generator, dtype) -> None:
        """PyTorch's defaults: nn.Linear U(+-1/sqrt(fan_in)), nn.GRU U(+-1/sqrt(H)), h0 zero."""
        p = {name: view[member] for name, view in self.p.items()}
        for name in p:
            if name[0] in "wb" and name[1:].isdigit():
                fan_in = self.shapes["w" + name[1:]][1]
                p[name][...] = rng.uniform(-1, 1, self.shapes[name]) / math.sqrt(fan_in)
        g = gru.init_params(self.dense, self.hidden, rng, dtype)
        for name in GRUParams.NAMES:
            p[name][...] = getattr(g, name)

    def views(self, flat: np.ndarray) -> dict:
        """name -> array (*pop, *shape) sharing memory with `flat` (*pop, size): the parameters,
        a gradient, a target copy."""
        out, at = {}, 0
        for name, shape in self.shapes.items():
            size = math.prod(shape)
            out[name] = flat[..., at:at + size].reshape(*flat.shape[:-1], *shape)
            at += size
        return out

    @staticmethod
    def _gru(p: dict) -> GRUParams:
        return GRUParams(*(p[name] for name in GRUParams.NAMES))

    def forward(self, x: np.ndarray, h: np.ndarray = None, resets: np.ndarray = None, p: dict = None):
        """(outputs (T, *pop, B, out), final state (*pop, B, H), cache for backward) of inputs x
        from state h (None: the initial state), resetting where `resets` (T, *pop, B); `p` other
        parameter views than the network's own (a target copy, one member of the population)."""
        p = self.p if p is None else p
        a1 = np.maximum(linear(x, p["w1"], p["b1"]), 0)
        hs, h_final, tape = gru.forward(self._gru(p), a1, h, resets)
        layers = [hs]
        for i, (_, act) in enumerate(self.head, start=2):
            layers.append(ACTIVATE[act](linear(layers[-1], p[f"w{i}"], p[f"b{i}"])))
        return layers[-1], h_final, (x, a1, tape, layers, h is None, p)

    def backward(self, cache, d_y: np.ndarray, need_dx: bool = False):
        """The flat gradient (*pop, size) of the loss whose derivative by the outputs is d_y; with
        need_dx also dL/dx (T, *pop, B, n_in)."""
        x, a1, tape, layers, from_h0, p = cache
        grad = np.zeros((*p["w1"].shape[:-2], self.size), d_y.dtype)
        g = self.views(grad)
        d = self._head_backward(layers, p, d_y, g)
        d_gru, d_a1, d_start = gru.backward(self._gru(p), tape, d)
        for name in GRUParams.NAMES:
            g[name][...] = getattr(d_gru, name)
        if from_h0:  # every row started from h0 itself
            g["h0"] += d_start.sum(-2)
        d_pre1 = d_a1 * (a1 > 0)
        g["w1"][...] = weight_grad(d_pre1, x)
        g["b1"][...] = bias_grad(d_pre1)
        return (grad, np.matmul(d_pre1, p["w1"])) if need_dx else grad

    def _head_backward(self, layers: list, p: dict, d: np.ndarray, g: dict = None) -> np.ndarray:
        """dL/d GRU outputs from dL/d network outputs d, through the head; the head's parameter
        gradients into g where given."""
        for i in range(len(self.head) + 1, 1, -1):
            act, out = self.head[i - 2][1], layers[i - 1]
            if act == "tanh":
                d = d * (1 - out * out)
            elif act == "relu":
                d = d * (out > 0)
            if g is not None:
                g[f"w{i}"][...] = weight_grad(d, layers[i - 2])
                g[f"b{i}"][...] = bias_grad(d)
            d = np.matmul(d, p[f"w{i}"])
        return d

    def input_gradient(self, cache, d_y: np.ndarray) -> np.ndarray:
        """dL/dx (T, *pop, B, n_in) alone (backward without the parameters' gradients), for a
        loss that trains something upstream of this network."""
        x, a1, tape, layers, _, p = cache
        d = self._head_backward(layers, p, d_y)
        _, d_a1, _ = gru.backward(self._gru(p), tape, d, params=False)
        return np.matmul(d_a1 * (a1 > 0), p["w1"])

    @staticmethod
    def states_before(cache, start: int = 0) -> np.ndarray:
        """(*pop, T' B, H): the GRU state each step from `start` on of the last forward started
        from, one row per (step, row), for one-step continuations from every point at once."""
        return gru.time_flat(cache[2].h_prev[start:])

    @staticmethod
    def states_after(cache, start: int = 0) -> np.ndarray:
        """(*pop, T' B, H): the GRU state after each step from `start` on, as states_before."""
        return gru.time_flat(cache[3][0][start:])

    def initial_state(self, batch: int) -> np.ndarray:
        return np.repeat(self.p["h0"][..., None, :], batch, axis=-2)


class RecurrentPolicyNet(RecurrentNet):
    """A policy: Dense relu -> GRU -> Dense tanh, outputs in (-1, 1), the actions an algorithm's
    actor gives before the env's affine map."""

    def __init__(self, obs_dim: int, act_dim: int, dense: int, hidden: int, rng: np.random.Generator,
                 dtype=np.float32):
        super().__init__(obs_dim, dense, hidden, [(act_dim, "tanh")], lambda member: rng, dtype=dtype)
        self.obs_dim, self.act_dim = obs_dim, act_dim

    def step(self, x: np.ndarray, h: np.ndarray):
        """One step for a batch: (actions (B, act_dim), next state (B, H)) from inputs (B, obs_dim)."""
        y, h, _ = self.forward(x[None], h)
        return y[0], h

"""A small recurrent policy network: Dense relu -> GRU -> Dense tanh, trained by BPTT.

Every parameter (the GRU's initial state included) is a view into one flat vector, so one
Adam (neuromotor.nn.optim) updates them all. Inputs are normalised observations; outputs lie
in (-1, 1), the actions an algorithm's actor gives before the env's affine map. The layers
are the policy file's (version 4: dense relu, GRU, dense tanh), so training's numbers are
what a board computes.
"""

import math

import numpy as np

from neuromotor.nn import gru
from neuromotor.nn.gru import GRUParams


class RecurrentPolicyNet:
    def __init__(self, obs_dim: int, act_dim: int, dense: int, hidden: int, rng: np.random.Generator,
                 dtype=np.float32):
        self.obs_dim, self.act_dim, self.dense, self.hidden = obs_dim, act_dim, dense, hidden
        shapes = {"w1": (dense, obs_dim), "b1": (dense,), "wi": (3 * hidden, dense), "bi": (3 * hidden,),
                  "wh": (3 * hidden, hidden), "bh": (3 * hidden,), "h0": (hidden,),
                  "w2": (act_dim, hidden), "b2": (act_dim,)}
        self.shapes = shapes
        self.params = np.zeros(sum(math.prod(s) for s in shapes.values()), dtype)
        self.p = self.views(self.params)
        # PyTorch's defaults: nn.Linear U(+-1/sqrt(fan_in)), nn.GRU U(+-1/sqrt(H)), h0 zero
        for name, fan_in in (("w1", obs_dim), ("b1", obs_dim), ("w2", hidden), ("b2", hidden)):
            self.p[name][...] = rng.uniform(-1, 1, shapes[name]) / math.sqrt(fan_in)
        g = gru.init_params(dense, hidden, rng, dtype)
        for name in GRUParams.NAMES:
            self.p[name][...] = getattr(g, name)

    def views(self, flat: np.ndarray) -> dict:
        """name -> array sharing memory with `flat` (the parameters, or a gradient vector)."""
        out, at = {}, 0
        for name, shape in self.shapes.items():
            size = math.prod(shape)
            out[name] = flat[at:at + size].reshape(shape)
            at += size
        return out

    def _gru(self, p: dict) -> GRUParams:
        return GRUParams(*(p[name] for name in GRUParams.NAMES))

    def forward(self, x: np.ndarray, h: np.ndarray = None, resets: np.ndarray = None):
        """(actions (T, B, act_dim) in (-1, 1), final state (B, H), cache for backward) of inputs
        (T, B, obs_dim) from state h (B, H) (None: the initial state), resetting where `resets`."""
        p = self.p
        a1 = np.maximum(x @ p["w1"].T + p["b1"], 0)
        hs, h_final, tape = gru.forward(self._gru(p), a1, h, resets)
        y = np.tanh(hs @ p["w2"].T + p["b2"])
        return y, h_final, (x, a1, hs, tape, y, h is None)

    def backward(self, cache, d_y: np.ndarray) -> np.ndarray:
        """The flat gradient of the loss whose derivative by the actions is d_y (T, B, act_dim)."""
        x, a1, hs, tape, y, from_h0 = cache
        grad = np.zeros_like(self.params)
        g, p = self.views(grad), self.p
        d_pre = (d_y * (1 - y * y)).reshape(-1, self.act_dim)
        g["w2"][...] = d_pre.T @ hs.reshape(-1, self.hidden)
        g["b2"][...] = d_pre.sum(0)
        d_hs = (d_pre @ p["w2"]).reshape(hs.shape)
        d_gru, d_a1, d_start = gru.backward(self._gru(p), tape, d_hs)
        for name in GRUParams.NAMES:
            g[name][...] = getattr(d_gru, name)
        if from_h0:  # every row started from h0 itself
            g["h0"] += d_start.sum(0)
        d_pre1 = (d_a1 * (a1 > 0)).reshape(-1, self.dense)
        g["w1"][...] = d_pre1.T @ x.reshape(-1, self.obs_dim)
        g["b1"][...] = d_pre1.sum(0)
        return grad

    def step(self, x: np.ndarray, h: np.ndarray):
        """One step for a batch: (actions (B, act_dim), next state (B, H)) from inputs (B, obs_dim)."""
        y, h, _ = self.forward(x[None], h)
        return y[0], h

    def initial_state(self, batch: int) -> np.ndarray:
        return np.tile(self.p["h0"], (batch, 1))

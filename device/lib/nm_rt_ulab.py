# nm_rt_ulab: the ulab backend of neuromotor_rt (ulab.numpy: CircuitPython, firmware
# built with ULAB_DIR=...). neuromotor_rt imports it only when ulab is there and this
# backend is chosen.
from neuromotor_rt import BLOCK, GRU, BackendUnavailableError, Policy, layer_size
from nm_rt_python import finite_obs, store


def ulab_numpy():
    try:
        from ulab import numpy as np

        return np
    except ImportError:
        pass
    try:
        import ulab as np  # very old ulab: functions at the top level

        np.dot
        return np
    except (ImportError, AttributeError):
        raise BackendUnavailableError("ulab backend unavailable: this firmware has no ulab module")


def _unpack(np, net, off, n_in, n_out):
    """W (n_out x n_in) and b of the block-4 layer at net[off:]."""
    w = np.zeros((n_out, n_in))
    b = np.zeros(n_out)
    stride = BLOCK * (n_in + 1)
    for r in range(n_out):
        base = off + (r // BLOCK) * stride + r % BLOCK
        b[r] = net[base]
        for j in range(n_in):
            w[r, j] = net[base + BLOCK * (j + 1)]
    return w, b


class UlabPolicy(Policy):
    name = "ulab"

    def __init__(self, sizes, acts, net, clamp=None):
        np = ulab_numpy()
        Policy.__init__(self, sizes, acts, net, clamp)
        self.np = np
        s0, sl = sizes[0], sizes[-1]
        self.mean = np.array(net[0:s0])
        self.std = np.array(net[s0:2 * s0])
        self.layers = []
        off, st = 2 * s0, 0
        for i in range(len(acts)):
            n_in, n_out = sizes[i], sizes[i + 1]
            if acts[i] == GRU:  # (W_i, b_i, W_h, b_h, state offset): the state lives in self.state
                w_i, b_i = _unpack(np, net, off, n_in, 3 * n_out)
                off += layer_size(n_in, 3 * n_out)
                w_h, b_h = _unpack(np, net, off, n_out, 3 * n_out)
                self.layers.append(((w_i, b_i, w_h, b_h, st), GRU))
                st += n_out
                off += layer_size(n_out, 3 * n_out) + n_out
            else:
                self.layers.append((_unpack(np, net, off, n_in, n_out), acts[i]))
                off += layer_size(n_in, n_out)
        self.scale = np.array(net[off:off + sl])
        self.offset = np.array(net[off + sl:off + 2 * sl])

    def _gru(self, x, w_i, b_i, w_h, b_h, st):
        np, state = self.np, self.state
        hd = len(b_i) // 3
        h = np.array(state[st:st + hd])
        gi, gh = np.dot(w_i, x) + b_i, np.dot(w_h, h) + b_h
        r = 1.0 / (1.0 + np.exp(-(gi[0:hd] + gh[0:hd])))  # float32 exp saturates to inf: r -> 0
        z = 1.0 / (1.0 + np.exp(-(gi[hd:2 * hd] + gh[hd:2 * hd])))
        n = np.tanh(gi[2 * hd:] + r * gh[2 * hd:])
        h = (1.0 - z) * n + z * h
        for i in range(hd):
            state[st + i] = h[i]
        return h

    def __call__(self, obs):
        np = self.np
        x = (np.array(finite_obs(obs, self.obs_dim)) - self.mean) / self.std
        for p, act in self.layers:
            if act == GRU:
                x = self._gru(x, *p)
                continue
            x = np.dot(p[0], x) + p[1]
            if act == 1:
                x = np.maximum(x, 0.0)
            elif act == 2:
                x = np.tanh(x)
            elif act == 3:
                x = 1.0 / (1.0 + np.exp(-x))
            elif act == 4:
                x = np.clip(x, -3.0, 3.0)
                x = x * (27.0 + x * x) / (27.0 + 9.0 * x * x)
        return store(self.out, x * self.scale + self.offset, self.clamp)

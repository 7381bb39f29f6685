# nm_rt_ulab: the ulab backend of neuromotor_rt (ulab.numpy: CircuitPython, firmware
# built with ULAB_DIR=...). neuromotor_rt imports it only when ulab is there and this
# backend is chosen.
from neuromotor_rt import BLOCK, BackendUnavailableError, Policy, layer_size
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
        off = 2 * s0
        for i in range(len(acts)):
            n_in, n_out = sizes[i], sizes[i + 1]
            w = np.zeros((n_out, n_in))
            b = np.zeros(n_out)
            stride = BLOCK * (n_in + 1)
            for r in range(n_out):
                base = off + (r // BLOCK) * stride + r % BLOCK
                b[r] = net[base]
                for j in range(n_in):
                    w[r, j] = net[base + BLOCK * (j + 1)]
            self.layers.append((w, b, acts[i]))
            off += layer_size(n_in, n_out)
        self.scale = np.array(net[off:off + sl])
        self.offset = np.array(net[off + sl:off + 2 * sl])

    def __call__(self, obs):
        np = self.np
        x = (np.array(finite_obs(obs, self.obs_dim)) - self.mean) / self.std
        for w, b, act in self.layers:
            x = np.dot(w, x) + b
            if act == 1:
                x = np.maximum(x, 0.0)
            elif act == 2:
                x = np.tanh(x)
        return store(self.out, x * self.scale + self.offset, self.clamp)

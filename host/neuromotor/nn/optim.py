"""Adam (PyTorch defaults and update order) and polyak averaging on flat float32 vectors.

Everything is elementwise, so one call updates every layer of every member of a
population; member k's numbers are the same whether it trains alone or not.
"""

import numpy as np


class Adam:
    def __init__(self, size: int, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
        self.lr, (self.b1, self.b2), self.eps = lr, betas, eps
        self.m = np.zeros(size, np.float32)
        self.v = np.zeros(size, np.float32)
        self.t = 0
        self._tmp = np.empty(size, np.float32)
        self._den = np.empty(size, np.float32)

    def step(self, params: np.ndarray, grad: np.ndarray) -> None:
        self.t += 1
        m, v, tmp, den = self.m, self.v, self._tmp, self._den
        f32 = np.float32
        # m = b1 m + (1 - b1) g ;  v = b2 v + (1 - b2) g^2   (torch: lerp_ / mul_.addcmul_)
        m *= f32(self.b1)
        np.multiply(grad, f32(1 - self.b1), out=tmp)
        m += tmp
        v *= f32(self.b2)
        np.multiply(grad, grad, out=tmp)
        tmp *= f32(1 - self.b2)
        v += tmp
        # p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps), with sqrt(1 - b2^t)
        # moved into the step size and eps (one pass fewer; equal up to rounding)
        bc1 = 1 - self.b1 ** self.t
        bc2 = (1 - self.b2 ** self.t) ** 0.5
        np.sqrt(v, out=den)
        den += f32(self.eps * bc2)
        np.divide(m, den, out=tmp)
        tmp *= f32(self.lr * bc2 / bc1)
        params -= tmp

    def kernel_state(self) -> np.ndarray:
        """[lr, beta1, beta2, eps, beta1^t, beta2^t] in float32, as the compiled kernels keep it
        (nm_adam): the powers are float32 products, t of them, so a resumed run continues them exactly."""
        st = np.array([self.lr, self.b1, self.b2, self.eps, 1, 1], np.float32)
        for _ in range(self.t):
            st[4] *= st[1]
            st[5] *= st[2]
        return st


def polyak(target: np.ndarray, online: np.ndarray, tau: float, tmp: np.ndarray) -> None:
    """target <- tau * online + (1 - tau) * target, in place (tmp: scratch of the same size)."""
    np.subtract(online, target, out=tmp)
    tmp *= np.float32(tau)
    target += tmp

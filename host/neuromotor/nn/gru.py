"""A GRU layer over whole sequences, with its backward through time (BPTT).

The equations and gate order are the policy file's (docs/policy-format.md, version 4), so a
trained layer is exported as it is:

    gi = W_i x + b_i,  gh = W_h h + b_h          rows in gate order r, z, n
    r = sigmoid(gi_r + gh_r),  z = sigmoid(gi_z + gh_z)
    n = tanh(gi_n + r * gh_n)                    b_hn sits inside the reset gate's product
    h' = (1 - z) * n + z * h

Inputs are (T, *pop, B, n_in), hidden states (*pop, B, H), parameters (*pop, ...): `pop` is
empty for one network, or a population's axes (one network per agent, one batched matmul for
all). `resets` (T, *pop, B) bool, where given, puts row b back to the initial state h0 before
step t (an episode starts there), so one sequence may hold several episodes as the deployed
policy flies them. The input projection of every step is one matmul before the loop and its
gradient one matmul after it: only the hidden recurrence is stepped. The dtype follows the
parameters (float32 for training, float64 for checking).
"""

from dataclasses import dataclass

import numpy as np


def sigmoid(x: np.ndarray) -> np.ndarray:
    # exp(-x) overflows to inf for x < -88 (float32), and 1 / inf is the right limit, 0
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


@dataclass
class GRUParams:
    wi: np.ndarray  # (3H, n_in)
    bi: np.ndarray  # (3H,)
    wh: np.ndarray  # (3H, H)
    bh: np.ndarray  # (3H,)
    h0: np.ndarray  # (H,), the state an episode starts in

    NAMES = ("wi", "bi", "wh", "bh", "h0")

    @property
    def hidden(self) -> int:
        return self.h0.shape[-1]


def init_params(n_in: int, hidden: int, rng: np.random.Generator, dtype=np.float32) -> GRUParams:
    """PyTorch's nn.GRU default: every weight and bias ~ U(-1/sqrt(H), 1/sqrt(H)); h0 zero."""
    bound = 1 / np.sqrt(hidden)
    u = lambda *shape: rng.uniform(-bound, bound, shape).astype(dtype)  # noqa: E731
    return GRUParams(u(3 * hidden, n_in), u(3 * hidden), u(3 * hidden, hidden), u(3 * hidden),
                     np.zeros(hidden, dtype))


@dataclass
class Tape:
    """What forward keeps for backward."""
    x: np.ndarray       # (T, B, n_in)
    h_prev: np.ndarray  # (T, B, H): the state each step started from (after any reset)
    r: np.ndarray
    z: np.ndarray
    n: np.ndarray
    ghn: np.ndarray     # (T, B, H): W_hn h + b_hn, the reset gate's operand
    resets: np.ndarray  # (T, B) bool, or None


def linear(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x W^T + b for inputs (..., B, n_in), weights (*pop, n_out, n_in), biases (*pop, n_out)."""
    return np.matmul(x, np.swapaxes(w, -1, -2)) + b[..., None, :]


def time_flat(a: np.ndarray) -> np.ndarray:
    """(T, *pop, B, k) -> (*pop, T B, k): every step's rows of a network side by side, so one
    matmul sums a weight's gradient over steps and rows."""
    moved = np.moveaxis(a, 0, -3)
    return moved.reshape(*moved.shape[:-3], -1, moved.shape[-1])


def bias_grad(d: np.ndarray) -> np.ndarray:
    """sum over steps and rows of d (T, *pop, B, n_out), each member's in the same order whatever
    the population around it (a member trains the same alone or in a population)."""
    return time_flat(d).sum(-2)


def weight_grad(d: np.ndarray, x: np.ndarray) -> np.ndarray:
    """sum over steps and rows of d x^T: the gradient of W in linear(x, W, b) given d (T, *pop, B, n_out)."""
    return np.matmul(np.swapaxes(time_flat(d), -1, -2), time_flat(x))


def forward(p: GRUParams, x: np.ndarray, h: np.ndarray = None, resets: np.ndarray = None):
    """(outputs (T, *pop, B, H), final state (*pop, B, H), tape) from state `h` (*pop, B, H)
    (None: h0 in every row)."""
    T = x.shape[0]
    H = p.hidden
    h0 = p.h0[..., None, :]
    gi = linear(x, p.wi, p.bi)
    shape = (T, *gi.shape[1:-1], H)
    h = np.broadcast_to(h0, shape[1:]) if h is None else h
    wh_t, bh = np.ascontiguousarray(np.swapaxes(p.wh, -1, -2)), p.bh[..., None, :]
    h_prev, z, n, ghn = (np.empty(shape, p.wh.dtype) for _ in range(4))
    r = np.empty(shape, p.wh.dtype)
    out = np.empty(shape, p.wh.dtype)
    for t in range(T):
        if resets is not None and resets[t].any():
            h = np.where(resets[t][..., None], h0, h)
        h_prev[t] = h
        gh = np.matmul(h, wh_t)
        gh += bh
        rz = sigmoid(gi[t, ..., :2 * H] + gh[..., :2 * H])  # r and z in one pass
        r[t], z[t] = rz[..., :H], rz[..., H:]
        ghn[t] = gh[..., 2 * H:]
        n[t] = np.tanh(gi[t, ..., 2 * H:] + r[t] * ghn[t])
        h = out[t] = n[t] + z[t] * (h - n[t])  # (1 - z) n + z h, one product fewer
    return out, h, Tape(x, h_prev, r, z, n, ghn, resets)


def backward(p: GRUParams, tape: Tape, d_out: np.ndarray, d_final: np.ndarray = None, params: bool = True):
    """Gradients of a loss given dL/d outputs (T, *pop, B, H) (and dL/d final state, if any):
    (GRUParams of parameter gradients, dL/dx (T, *pop, B, n_in), dL/d initial state (*pop, B, H)).
    The initial state's gradient excludes rows reset at step 0, whose start is h0 (its gradient
    is in the parameters'). Without `params`, the parameters' gradients are not computed (None)."""
    T = d_out.shape[0]
    H = p.hidden
    d_gi = np.empty((*d_out.shape[:-1], 3 * H), d_out.dtype)
    d_wh, d_bh, d_h0 = np.zeros_like(p.wh), np.zeros_like(p.bh), np.zeros_like(p.h0)
    dh = np.zeros(d_out.shape[1:], d_out.dtype) if d_final is None else d_final.copy()
    for t in range(T - 1, -1, -1):
        dh = dh + d_out[t]
        r, z, n, ghn, h_prev = tape.r[t], tape.z[t], tape.n[t], tape.ghn[t], tape.h_prev[t]
        d_an = dh * (1 - z) * (1 - n * n)           # through n = tanh(a_n)
        d_az = dh * (h_prev - n) * z * (1 - z)      # through z = sigmoid(a_z)
        d_ar = d_an * ghn * r * (1 - r)             # a_n = gi_n + r * ghn
        d_gi[t] = np.concatenate([d_ar, d_az, d_an], -1)
        d_gh = np.concatenate([d_ar, d_az, d_an * r], -1)
        if params:
            d_wh += np.matmul(np.swapaxes(d_gh, -1, -2), h_prev)
            d_bh += d_gh.sum(-2)
        dh = dh * z + np.matmul(d_gh, p.wh)
        if tape.resets is not None and tape.resets[t].any():
            reset = tape.resets[t][..., None]
            if params:
                d_h0 += np.where(reset, dh, 0).sum(-2)
            dh = np.where(reset, 0, dh)
    d_x = np.matmul(d_gi, p.wi)
    if not params:
        return None, d_x, dh
    d_gru = GRUParams(weight_grad(d_gi, tape.x), bias_grad(d_gi), d_wh, d_bh, d_h0)
    return d_gru, d_x, dh

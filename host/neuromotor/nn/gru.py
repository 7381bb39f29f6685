"""A GRU layer over whole sequences, with its backward through time (BPTT).

The equations and gate order are the policy file's (docs/policy-format.md, version 4), so a
trained layer is exported as it is:

    gi = W_i x + b_i,  gh = W_h h + b_h          rows in gate order r, z, n
    r = sigmoid(gi_r + gh_r),  z = sigmoid(gi_z + gh_z)
    n = tanh(gi_n + r * gh_n)                    b_hn sits inside the reset gate's product
    h' = (1 - z) * n + z * h

Inputs are (T, B, n_in), hidden states (B, H). `resets` (T, B) bool, where given, puts row b
back to the initial state h0 before step t (an episode starts there), so one sequence may hold
several episodes as the deployed policy flies them. The input projection of every step is one
matmul before the loop and its gradient one matmul after it: only the hidden recurrence is
stepped. The dtype follows the parameters (float32 for training, float64 for checking).
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
        return self.h0.shape[0]


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


def forward(p: GRUParams, x: np.ndarray, h: np.ndarray = None, resets: np.ndarray = None):
    """(outputs (T, B, H), final state (B, H), tape) from state `h` (B, H) (None: h0 in every row)."""
    T, B, _ = x.shape
    H = p.hidden
    h = np.broadcast_to(p.h0, (B, H)) if h is None else h
    gi = (x.reshape(T * B, -1) @ p.wi.T + p.bi).reshape(T, B, 3 * H)
    shape = (T, B, H)
    h_prev, r, z, n, ghn = (np.empty(shape, p.wh.dtype) for _ in range(5))
    out = np.empty(shape, p.wh.dtype)
    for t in range(T):
        if resets is not None and resets[t].any():
            h = np.where(resets[t][:, None], p.h0, h)
        h_prev[t] = h
        gh = h @ p.wh.T + p.bh
        r[t] = sigmoid(gi[t, :, :H] + gh[:, :H])
        z[t] = sigmoid(gi[t, :, H:2 * H] + gh[:, H:2 * H])
        ghn[t] = gh[:, 2 * H:]
        n[t] = np.tanh(gi[t, :, 2 * H:] + r[t] * ghn[t])
        h = out[t] = (1 - z[t]) * n[t] + z[t] * h
    return out, h, Tape(x, h_prev, r, z, n, ghn, resets)


def backward(p: GRUParams, tape: Tape, d_out: np.ndarray, d_final: np.ndarray = None):
    """Gradients of a loss given dL/d outputs (T, B, H) (and dL/d final state, if any):
    (GRUParams of parameter gradients, dL/dx (T, B, n_in), dL/d initial state (B, H)). The
    initial state's gradient excludes rows reset at step 0, whose start is h0 (its gradient is
    in the parameters')."""
    T, B, H = d_out.shape
    d_gi = np.empty((T, B, 3 * H), d_out.dtype)
    d_wh, d_bh, d_h0 = np.zeros_like(p.wh), np.zeros_like(p.bh), np.zeros_like(p.h0)
    dh = np.zeros((B, H), d_out.dtype) if d_final is None else d_final.copy()
    for t in range(T - 1, -1, -1):
        dh = dh + d_out[t]
        r, z, n, ghn, h_prev = tape.r[t], tape.z[t], tape.n[t], tape.ghn[t], tape.h_prev[t]
        d_an = dh * (1 - z) * (1 - n * n)           # through n = tanh(a_n)
        d_az = dh * (h_prev - n) * z * (1 - z)      # through z = sigmoid(a_z)
        d_ar = d_an * ghn * r * (1 - r)             # a_n = gi_n + r * ghn
        d_gi[t] = np.concatenate([d_ar, d_az, d_an], 1)
        d_gh = np.concatenate([d_ar, d_az, d_an * r], 1)
        d_wh += d_gh.T @ h_prev
        d_bh += d_gh.sum(0)
        dh = dh * z + d_gh @ p.wh
        if tape.resets is not None and tape.resets[t].any():
            d_h0 += dh[tape.resets[t]].sum(0)
            dh = np.where(tape.resets[t][:, None], 0, dh)
    flat = d_gi.reshape(T * B, 3 * H)
    d_wi = flat.T @ tape.x.reshape(T * B, -1)
    d_x = (flat @ p.wi).reshape(tape.x.shape)
    return GRUParams(d_wi, flat.sum(0), d_wh, d_bh, d_h0), d_x, dh

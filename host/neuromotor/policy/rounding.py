"""Error-compensating rounding of an int8 policy's weights, layer after layer (GPTQ-style).

Each layer in turn, from the first: its float weights are refitted (ridge regression
towards the float policy's weights) so that, fed the int8 network's own inputs on the
calibration observations, its pre-activations match the float policy's; then the weights
are rounded one input column at a time, each column's rounding error pushed onto the
columns not yet rounded and onto the bias, in proportion to how the calibration inputs
correlate (the inverse of their second-moment matrix). The later layers so absorb the
earlier ones' errors. The output layer weighs each observation by how much its
pre-activation moves the action (tanh's slope).
"""

import numpy as np

from neuromotor.policy.quantize import AMAX, HEADROOM, QMAX, calibrate, input_ranges
from neuromotor.policy.spec import PolicySpec

DAMP = 0.01      # added to the second-moment matrix's diagonal, relative to its mean (rounding)
RIDGE = 1e-3     # pull of the refit towards the float weights, relative to the same mean


def spec_with(spec: PolicySpec, weights, biases, hidden_weights=None, hidden_biases=None,
              initial_hidden=None) -> PolicySpec:
    """`spec` with other weights and biases (and a GRU's hidden ones and initial state, None: spec's)."""
    return PolicySpec(weights=weights, biases=biases, activations=spec.activations, obs_mean=spec.obs_mean,
                      obs_std=spec.obs_std, action_scale=spec.action_scale, action_offset=spec.action_offset,
                      action_low=spec.action_low, action_high=spec.action_high, meta=dict(spec.meta),
                      kinds=spec.kinds,
                      hidden_weights=spec.hidden_weights if hidden_weights is None else hidden_weights,
                      hidden_biases=spec.hidden_biases if hidden_biases is None else hidden_biases,
                      initial_hidden=spec.initial_hidden if initial_hidden is None else initial_hidden)


def _activate(name, z):
    return np.maximum(z, 0) if name == "relu" else np.tanh(z) if name == "tanh" else z


def _refit_and_round(x: np.ndarray, target: np.ndarray, w: np.ndarray, b: np.ndarray, weight: np.ndarray):
    """(rounded weights in units of their row scale (int), bias, row scales) for inputs x (n, k),
    float targets (n, rows) and the float layer (w (rows, k), b), samples weighted by `weight`."""
    a = np.concatenate([x, np.ones((len(x), 1))], axis=1)
    aw = a * weight[:, None]
    h = aw.T @ a / weight.sum()
    mean_diag = float(np.mean(np.diag(h))) or 1.0
    w0 = np.concatenate([w, b[:, None]], axis=1)
    lam = RIDGE * mean_diag
    fit = np.linalg.solve(h + lam * np.eye(len(h)), (aw.T @ target / weight.sum() + lam * w0.T)).T
    scale = np.abs(fit[:, :-1]).max(axis=1) / QMAX
    scale = np.where(scale > 0, scale, 1.0 / QMAX)
    hinv = np.linalg.inv(h + DAMP * mean_diag * np.eye(len(h)))
    u = np.linalg.cholesky(hinv).T          # upper: hinv = u.T @ u
    k = x.shape[1]
    q = np.zeros((len(fit), k))
    for j in range(k):
        q[:, j] = np.clip(np.round(fit[:, j] / scale), -QMAX, QMAX)
        err = (fit[:, j] - q[:, j] * scale) / u[j, j]
        fit[:, j + 1:] -= err[:, None] * u[j, j + 1:][None, :]
    return q, fit[:, -1], scale


def compensated(spec: PolicySpec, obs: np.ndarray) -> tuple:
    """(weights, biases in spec units, row scales for `calibrate`): float weights that are
    exactly the error-compensated integers at those scales."""
    obs = np.asarray(obs, np.float32)
    c = input_ranges(spec, obs, HEADROOM)
    x = ((obs - spec.obs_mean) / spec.obs_std).astype(np.float64)
    targets = []
    for w, b, act in zip(spec.weights, spec.biases, spec.activations):
        targets.append(x @ w.T.astype(np.float64) + b)
        x = _activate(act, targets[-1])
    n = len(spec.weights)
    ws = [w.astype(np.float64) for w in spec.weights]
    bs = [b.astype(np.float64) for b in spec.biases]
    scales = [None] * n
    for i in range(n):
        if i == 0:
            _, _, inputs = calibrate(spec, obs, scales, HEADROOM)
            x = inputs[0] / AMAX                 # the int16 input, in units of the input ranges
            w = ws[0] * c[None, :]
        else:
            _, act_scales, inputs = calibrate(spec_with(spec, ws, bs), obs, scales, HEADROOM)
            x = inputs[i] * act_scales[i - 1]
            w = ws[i]
        weight = np.ones(len(obs))
        if i == n - 1 and spec.activations[-1] == "tanh":
            # The squared slope turns a pre-activation error into the action error; the floor
            # keeps saturated observations (where any error is invisible) from being ignored
            # altogether, which would let the fit run wild there.
            weight = (1 - np.tanh(targets[i]) ** 2).max(axis=1) ** 2 + 1e-3
        q, bias, scale = _refit_and_round(x, targets[i], w, bs[i], weight)
        w = q * scale[:, None]
        ws[i] = w / c[None, :] if i == 0 else w
        bs[i] = bias
        scales[i] = scale
    return ws, bs, scales

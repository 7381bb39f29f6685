"""Quantisation-aware fine-tuning of an int8 policy: float weights adjusted so that the
int8 policy quantised from them acts like the float policy on the calibration observations.

Each step quantises the current float weights exactly as `quantize` does (the integer
forward pass of device/native/include/nm_int8.h, activation scales recalibrated, weight
scales held), then moves the float weights along the gradient of the action error taken
straight through the rounding (the straight-through estimator: the integer layers'
inputs, ReLU masks and outputs are the quantised network's, the derivative of rounding is
taken as 1). The loss is mean(|error|^POWER), the learning rate decays linearly to 0,
and the step whose int8 policy has the smallest largest error on the calibration
observations is kept (the fine-tune stops early at one that is good enough). Full-batch
Adam with no randomness: the same inputs give the same integers. The float policy is never
changed; only the int8 file holds the tuned integers.
"""

import numpy as np

from neuromotor.policy.quantize import HEADROOM, QuantizedPolicy, calibrate, input_ranges, int_dense
from neuromotor.policy.rounding import spec_with
from neuromotor.policy.spec import PolicySpec

STEPS = 100
LR = 0.01            # Adam's step, in units of each weight row's quantisation step, decaying to 0
BETAS = (0.9, 0.999)
POWER = 4            # the loss is mean(|error|^POWER): the contract is on the largest error


def _output_grad(spec: PolicySpec, qp: QuantizedPolicy, acc: np.ndarray, err: np.ndarray,
                 target: np.ndarray) -> np.ndarray:
    """d loss / d (last layer's pre-activation, spec units), through the float activation
    and the clamp. Where the int8 action is clamped at a limit the float action is not
    at, the gradient goes through the clamp (it must come back inside); where both sit
    at the same limit there is no error and no gradient."""
    z = acc * qp.deq.astype(np.float64)
    act = spec.activations[-1]
    if act == "tanh":
        u = np.tanh(z)
        dz = 1.0 - u ** 2
    elif act == "relu":
        u = np.maximum(z, 0)
        dz = (z > 0).astype(np.float64)
    else:
        u, dz = z, np.ones_like(z)
    u = u * spec.action_scale + spec.action_offset
    span = (spec.action_high - spec.action_low).astype(np.float64)
    span = np.where(span > 0, span, 1.0)
    high, low = u > spec.action_high, u < spec.action_low
    at_limit = (high & (target >= spec.action_high)) | (low & (target <= spec.action_low))
    e = np.where(at_limit, 0.0, np.where(high | low, (u - target) / span, err))
    g = POWER * np.abs(e) ** (POWER - 1) * np.sign(e) / span
    return g * dz * spec.action_scale / len(acc)


def action_errors(spec: PolicySpec, qp: QuantizedPolicy, acc: np.ndarray, target: np.ndarray) -> np.ndarray:
    """(int8 action - float action) / action range, per observation and dimension."""
    span = (spec.action_high - spec.action_low).astype(np.float64)
    return (qp.actions(acc).astype(np.float64) - target) / np.where(span > 0, span, 1.0)


def finetune(spec: PolicySpec, obs: np.ndarray, weights, biases, row_scales, steps: int = STEPS,
             good_enough: float = 0.0, on_step=None) -> tuple:
    """(QuantizedPolicy, info): starting from float `weights`, `biases` (spec units) quantised at
    `row_scales`, the int8 policy of the best of `steps` fine-tuning steps on `obs` (step 0:
    the start), stopping early at one whose largest error is at most `good_enough` (a
    fraction of the action range); on_step(step, steps) after each. info: the steps run, the
    kept step, and the largest and mean error of the start and of the kept step on `obs`."""
    obs = np.asarray(obs, np.float32)
    target = spec.forward(obs).astype(np.float64)
    x0 = ((obs - spec.obs_mean) / spec.obs_std).astype(np.float64)
    ws = [np.array(w, np.float64) for w in weights]
    bs = [np.array(b, np.float64) for b in biases]
    n = len(ws)
    params = ws + bs
    # Each weight's step is a fraction of its quantisation step (layer 0's weights are
    # quantised times the input ranges); a bias moves with its row's weights.
    lrs = [LR * s[:, None] for s in row_scales] + [LR * s for s in row_scales]
    lrs[0] = lrs[0] / input_ranges(spec, obs, HEADROOM)[None, :]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    best = first = None
    for step in range(steps + 1):
        qp, scales, inputs = calibrate(spec_with(spec, ws, bs), obs, row_scales, HEADROOM)
        acc = int_dense(inputs[-1], qp.weights[-1], qp.biases[-1])
        err = action_errors(spec, qp, acc, target)
        score = (float(np.abs(err).max()), float(np.abs(err).mean()))
        first = first or score
        if best is None or score < best[0]:
            best = (score, step, qp)
        if step == steps or score[0] <= good_enough:
            break
        hs = [x0] + [q * s for q, s in zip(inputs[1:], scales)]
        delta = _output_grad(spec, qp, acc, err, target)
        grads = [None] * (2 * n)
        for i in range(n - 1, -1, -1):
            grads[i], grads[n + i] = delta.T @ hs[i], delta.sum(axis=0)
            if i:
                delta = (delta @ ws[i]) * (inputs[i] > 0 if spec.activations[i - 1] == "relu" else 1.0)
        decay = 1 - step / steps
        for k, (p, g) in enumerate(zip(params, grads)):
            m[k] = BETAS[0] * m[k] + (1 - BETAS[0]) * g
            v[k] = BETAS[1] * v[k] + (1 - BETAS[1]) * g * g
            mh, vh = m[k] / (1 - BETAS[0] ** (step + 1)), v[k] / (1 - BETAS[1] ** (step + 1))
            p -= decay * lrs[k] * mh / (np.sqrt(vh) + 1e-30)
        if on_step is not None:
            on_step(step + 1, steps)
    (max_err, mean_err), best_step, qp = best
    return qp, {"steps": step, "best_step": best_step, "max_error_frac_start": first[0],
                "mean_error_frac_start": first[1], "max_error_frac": max_err, "mean_error_frac": mean_err}


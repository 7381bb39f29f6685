"""Quantisation-aware fine-tuning of a recurrent int8 policy, through time.

finetune.py's method for policies with GRU layers: float weights adjusted so that the int8
policy quantised from them acts like the float policy along the calibration episodes. Each
step runs the whole episodes with every weight matrix rounded to its int8 grid (row scales
held) and the GRU's initial state within +-1 (what Q15 holds), takes the gradient of
mean(|action error|^POWER) back through time (neuromotor.nn.gru's backward, float64) and
straight through the rounding, and moves the float weights by Adam. Every EVAL_EVERY steps
the int8 policy itself (calibrate, then its integer steps along the same episodes, each
policy its own state) is measured, and the step with the smallest largest error is kept.
The gates, state and activations stay float in the gradient's forward: the measurement is
what judges. The float policy is never changed.
"""

import numpy as np

from neuromotor.nn import gru
from neuromotor.policy.finetune import BETAS, POWER
from neuromotor.policy.gru_q8 import STATE_SCALE, row_scales
from neuromotor.policy.quantize import AMAX, HEADROOM, QMAX, calibrate, input_ranges, weight_scales
from neuromotor.policy.rounding import spec_with
from neuromotor.policy.spec import PolicySpec

STEPS = 300
LR = 0.1          # Adam's step in units of each row's quantisation step (the initial state's: absolute)
H0_LR = 0.01
EVAL_EVERY = 10


def _start(spec: PolicySpec, seqs: np.ndarray) -> tuple:
    """(parameters: per layer a dict of float64 arrays, layer 0's weights times the input
    ranges as calibrate quantises them; per layer the row scales; the input ranges)."""
    c = input_ranges(spec, seqs.reshape(-1, spec.obs_dim), HEADROOM)
    _, act_scales, _ = calibrate(spec, seqs, headroom=HEADROOM)
    params, scales = [], []
    for i, kind in enumerate(spec.kinds):
        p = {"w": spec.weights[i].astype(np.float64) * (c[None, :] if i == 0 else 1.0),
             "b": spec.biases[i].astype(np.float64)}
        if kind == "gru":
            s_x = 1.0 / AMAX if i == 0 else act_scales[i - 1]
            p.update(wh=spec.hidden_weights[i].astype(np.float64), bh=spec.hidden_biases[i].astype(np.float64),
                     h0=np.clip(spec.initial_hidden[i].astype(np.float64), -1, 1))
            scales.append({"w": row_scales(p["w"], p["b"], s_x), "wh": row_scales(p["wh"], p["bh"], STATE_SCALE)})
        else:
            scales.append({"w": weight_scales(p["w"])})
        params.append(p)
    return params, scales, c


def _spec_of(spec: PolicySpec, params: list, c: np.ndarray) -> PolicySpec:
    ws = [p["w"] / (c[None, :] if i == 0 else 1.0) for i, p in enumerate(params)]
    pick = lambda key: [p.get(key) for p in params]  # noqa: E731
    return spec_with(spec, ws, pick("b"), pick("wh"), pick("bh"), pick("h0"))


def _rounded(w: np.ndarray, s: np.ndarray) -> np.ndarray:
    return np.clip(np.round(w / s[:, None]), -QMAX, QMAX) * s[:, None]


def _act(name: str, z: np.ndarray) -> np.ndarray:
    return np.maximum(z, 0) if name == "relu" else np.tanh(z) if name == "tanh" else z


def _act_grad(name: str, out: np.ndarray) -> np.ndarray:
    return (out > 0).astype(np.float64) if name == "relu" else 1 - out * out if name == "tanh" else 1.0


def _gradients(spec: PolicySpec, params: list, scales: list, x0: np.ndarray, target: np.ndarray,
               weight: np.ndarray) -> list:
    """Per layer the loss's gradients (the parameters' keys) through the rounded network."""
    xs, caches = [x0], []
    for i, (p, s) in enumerate(zip(params, scales)):
        w = _rounded(p["w"], s["w"])
        if spec.kinds[i] == "gru":
            g = gru.GRUParams(w, p["b"], _rounded(p["wh"], s["wh"]), p["bh"], p["h0"])
            out, _, tape = gru.forward(g, xs[-1])
            caches.append((w, g, tape))
        else:
            out = _act(spec.activations[i], gru.linear(xs[-1], w, p["b"]))
            caches.append((w, None, None))
        xs.append(out)
    u = xs[-1] * spec.action_scale + spec.action_offset
    span = (spec.action_high - spec.action_low).astype(np.float64)
    span = np.where(span > 0, span, 1.0)
    # where both actions sit at the same limit there is no error; beyond a limit the clamp would hold
    at_limit = ((u >= spec.action_high) & (target >= spec.action_high)) | \
               ((u <= spec.action_low) & (target <= spec.action_low))
    e = np.where(at_limit, 0.0, (u - target) / span) * weight[..., None]
    d = POWER * np.abs(e) ** (POWER - 1) * np.sign(e) / span / max(weight.sum(), 1.0) * spec.action_scale
    grads = [None] * len(params)
    for i in range(len(params) - 1, -1, -1):
        w, g, tape = caches[i]
        if g is None:
            d = d * _act_grad(spec.activations[i], xs[i + 1])
            grads[i] = {"w": gru.weight_grad(d, xs[i]), "b": gru.bias_grad(d)}
            d = np.matmul(d, w)
        else:
            dg, d, d_start = gru.backward(g, tape, d)
            grads[i] = {"w": dg.wi, "b": dg.bi, "wh": dg.wh, "bh": dg.bh, "h0": dg.h0 + d_start.sum(-2)}
    return grads


def finetune_recurrent(spec: PolicySpec, seqs: np.ndarray, alive: np.ndarray, error_of, steps: int = STEPS,
                       good_enough: float = 0.0, on_step=None) -> tuple:
    """(QuantizedPolicy, info): the int8 policy of the best of `steps` fine-tuning steps along
    the float policy's episodes seqs (T, E, obs_dim) (steps where `alive` (T, E) is False do
    not count), stopping early once the largest error is at most `good_enough`. error_of(qp)
    -> (largest, mean) error along seqs (a fraction of the action range) judges the steps;
    on_step(step, steps) after each. info: the steps run, the kept step, and the largest and
    mean error of the start and of the kept step."""
    seqs = np.asarray(seqs, np.float32)
    params, scales, c = _start(spec, seqs)
    row = [s["w"] if "wh" not in s else (s["w"], s["wh"]) for s in scales]

    def int8(ps):
        return calibrate(_spec_of(spec, ps, c), seqs, row, HEADROOM)[0]

    state, target = spec.initial_state(), []
    for obs in seqs:
        action, state = spec.step(obs, state)
        target.append(action)
    target = np.stack(target).astype(np.float64)
    x0 = ((seqs - spec.obs_mean) / spec.obs_std).astype(np.float64) / c
    weight = np.asarray(alive, np.float64)
    # a weight's step is a fraction of its row's quantisation step; a bias moves with its row
    lrs = [{k: H0_LR if k == "h0" else LR * (s["wh"] if k in ("wh", "bh") else s["w"])[(...,) + (None,) * (a.ndim - 1)]
            for k, a in p.items()} for p, s in zip(params, scales)]
    m1 = [{k: np.zeros_like(a) for k, a in p.items()} for p in params]  # Adam's moments
    m2 = [{k: np.zeros_like(a) for k, a in p.items()} for p in params]
    qp = int8(params)
    best = first = (error_of(qp), 0, qp)
    step = 0
    while step < steps and best[0][0] > good_enough:
        step += 1
        grads = _gradients(spec, params, scales, x0, target, weight)
        decay = 1 - (step - 1) / steps
        for p, g, lr, a1, a2 in zip(params, grads, lrs, m1, m2):
            for k in p:
                a1[k] = BETAS[0] * a1[k] + (1 - BETAS[0]) * g[k]
                a2[k] = BETAS[1] * a2[k] + (1 - BETAS[1]) * g[k] ** 2
                mh, vh = a1[k] / (1 - BETAS[0] ** step), a2[k] / (1 - BETAS[1] ** step)
                p[k] = p[k] - decay * lr[k] * mh / (np.sqrt(vh) + 1e-30)
            if "h0" in p:
                p["h0"] = np.clip(p["h0"], -1, 1)
        if step % EVAL_EVERY == 0 or step == steps:
            qp = int8(params)
            score = error_of(qp)
            if score < best[0]:
                best = (score, step, qp)
        if on_step is not None:
            on_step(step, steps)
    (max_err, mean_err), best_step, qp = best
    return qp, {"steps": step, "best_step": best_step, "max_error_frac_start": first[0][0],
                "mean_error_frac_start": first[0][1], "max_error_frac": max_err, "mean_error_frac": mean_err}

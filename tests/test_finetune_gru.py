"""The fine-tune through time of a recurrent int8 policy (neuromotor.policy.finetune_gru): its
gradient is the loss's through the network with the rounded weights (finite differences,
rounding set aside), it lowers the int8 policy's largest error along the calibration
episodes and along others, it is deterministic, and with nothing to do it is plain rounding."""

import numpy as np
from test_policy_gru import gru_spec
from test_quantize_gru import episodes

from neuromotor.policy import finetune_gru
from neuromotor.policy.finetune_gru import finetune_recurrent
from neuromotor.policy.int8 import sequence_error
from neuromotor.policy.quantize import HEADROOM, calibrate


def _error_of(spec, seqs, alive):
    def error_of(qp):
        e = sequence_error(spec, qp, seqs, alive)
        return e["max_error_frac"], e["mean_error_frac"]
    return error_of


def _loss(spec, params, scales, x0, target, weight):
    """finetune_gru's loss, mean(|error|^POWER) over the alive steps, of the network as given."""
    x = x0
    for i, p in enumerate(params):
        if spec.kinds[i] == "gru":
            g = finetune_gru.gru.GRUParams(p["w"], p["b"], p["wh"], p["bh"], p["h0"])
            x = finetune_gru.gru.forward(g, x)[0]
        else:
            x = finetune_gru._act(spec.activations[i], finetune_gru.gru.linear(x, p["w"], p["b"]))
    u = x * spec.action_scale + spec.action_offset
    e = (u - target) / (spec.action_high - spec.action_low) * weight[..., None]
    return float((np.abs(e) ** finetune_gru.POWER).sum() / weight.sum())


def test_gradient_is_the_loss_derivative_through_time(monkeypatch):
    monkeypatch.setattr(finetune_gru, "_rounded", lambda w, s: w)  # the straight-through part aside
    spec = gru_spec(seed=3, hidden=4, act=2)
    seqs = episodes(spec, steps=6, batch=3, seed=5)
    params, scales, c = finetune_gru._start(spec, seqs)
    rng = np.random.default_rng(0)
    target = rng.uniform(-0.5, 0.5, (6, 3, 2))
    weight = (rng.random((6, 3)) < 0.8).astype(np.float64)
    x0 = ((seqs - spec.obs_mean) / spec.obs_std).astype(np.float64) / c
    grads = finetune_gru._gradients(spec, params, scales, x0, target, weight)
    for layer, name in ((0, "w"), (1, "w"), (1, "bh"), (1, "wh"), (1, "h0"), (2, "b")):
        p = params[layer][name]
        for index in list(np.ndindex(p.shape))[:3]:
            old = p[index]
            p[index] = old + 1e-6
            up = _loss(spec, params, scales, x0, target, weight)
            p[index] = old - 1e-6
            down = _loss(spec, params, scales, x0, target, weight)
            p[index] = old
            numeric = (up - down) / 2e-6
            assert abs(grads[layer][name][index] - numeric) <= 1e-6 * max(1.0, abs(numeric)), (layer, name, index)


def test_fine_tune_lowers_the_largest_error_and_is_deterministic():
    spec = gru_spec(seed=1, hidden=6, h0_scale=3.0)  # an initial state beyond Q15's +-1
    seqs, held = episodes(spec, steps=40, batch=16, seed=2), episodes(spec, steps=40, batch=16, seed=3)
    alive = np.ones(seqs.shape[:2], bool)
    plain = calibrate(spec, seqs, headroom=HEADROOM)[0]
    qp, info = finetune_recurrent(spec, seqs, alive, _error_of(spec, seqs, alive), steps=60)
    assert info["best_step"] > 0 and info["max_error_frac"] < 0.7 * info["max_error_frac_start"]
    assert info["max_error_frac_start"] == sequence_error(spec, plain, seqs, alive)["max_error_frac"]
    held_alive = np.ones(held.shape[:2], bool)
    assert sequence_error(spec, qp, held, held_alive)["max_error_frac"] < \
        sequence_error(spec, plain, held, held_alive)["max_error_frac"]
    again, _ = finetune_recurrent(spec, seqs, alive, _error_of(spec, seqs, alive), steps=60)
    for a, b in zip(qp.weights + qp.biases, again.weights + again.biases):
        assert np.array_equal(a, b)
    assert np.array_equal(qp.grus[1].wh, again.grus[1].wh) and np.array_equal(qp.grus[1].h0, again.grus[1].h0)


def test_good_enough_at_the_start_is_plain_rounding():
    spec = gru_spec(seed=4)
    seqs = episodes(spec, steps=10, batch=4, seed=6)
    alive = np.ones(seqs.shape[:2], bool)
    qp, info = finetune_recurrent(spec, seqs, alive, _error_of(spec, seqs, alive), steps=50, good_enough=1.0)
    plain = calibrate(spec, seqs, headroom=HEADROOM)[0]
    assert info["steps"] == 0 and info["best_step"] == 0
    assert all(np.array_equal(a, b) for a, b in zip(qp.weights, plain.weights))
    assert np.array_equal(qp.grus[1].wh, plain.grus[1].wh)

"""int8 GRU layers on the host: the integer step against the float one, the file (version 4,
dtype 1) and its checks, calibration along episodes, and the export of a recurrent run."""

import struct
import zlib

import numpy as np
import pytest
from test_policy_gru import gru_spec

from neuromotor.policy import PolicyFormatError, PolicyValueError, decode, encode
from neuromotor.policy.int_arith import gate_q16, mulhr, sigmoid_q15, tanh_q15
from neuromotor.policy.policy_file import header_size
from neuromotor.policy.quantize import QuantizedPolicy, calibrate, net_bytes
from neuromotor.policy.spec import InvalidPolicyError


def episodes(spec, steps=60, batch=8, seed=0):
    return np.random.default_rng(seed).normal(0, 1.5, (steps, batch, spec.obs_dim)).astype(np.float32)


def quantized(seed=0, **kw):
    spec = gru_spec(seed=seed, **kw)
    return spec, calibrate(spec, episodes(spec, seed=seed), headroom=2.0)[0]


def run(policy, seqs):
    """Actions (T, B, act) and final state of a policy stepped along seqs (T, B, obs)."""
    state, out = policy.initial_state(), []
    for obs in seqs:
        action, state = policy.step(obs, state)
        out.append(action)
    return np.stack(out), state


def test_gate_functions_follow_the_float_ones():
    z = np.arange(-14 * 65536, 14 * 65536, 97)
    sig = 1 / (1 + np.exp(-z / 65536))
    assert np.abs(sigmoid_q15(z) / 32768 - sig).max() < 6e-5
    assert sigmoid_q15(z).max() == 32767 and sigmoid_q15(z).min() == 0
    # r * gh in Q16, rounded half up, for the widest gate and the largest r
    gh = np.array([1 << 24, -(1 << 24), 12345, -12345])
    assert np.array_equal(mulhr(2 * gh, 32767 << 16), np.floor(gh * 32767 / 32768 + 0.5).astype(np.int64))
    # a gate beyond +-6 keeps its value: two halves may cancel before the sigmoid
    assert gate_q16(np.array([100_000]), np.float32(1e-3))[0] == round(100 * 65536)
    assert np.array_equal(tanh_q15(np.array([0, 1 << 30])), [0, 32768])


def test_int8_gru_tracks_the_float_policy_along_episodes():
    spec, qp = quantized()
    assert qp.recurrent and qp.state_size == 6 and qp.kinds == ["dense", "gru", "dense"]
    held = episodes(spec, seed=1)  # other episodes than calibration's
    a_float, s_float = run(spec, held)
    a_int8, s_int8 = run(qp, held)
    assert np.abs(a_float - a_int8).max() < 0.02 * 2  # 2% of the action range (-1..1)
    assert np.abs(s_float - s_int8 / 32768).max() < 0.02
    # the state matters: the same observation twice gives two actions, as in float
    first, state = qp.step(held[0, 0], qp.initial_state())
    assert np.abs(first - qp.step(held[0, 0], state)[0]).max() > 1e-3


def test_step_is_pure_and_forward_keeps_the_state():
    spec, qp = quantized()
    obs = episodes(spec, steps=3, batch=4)
    state0 = qp.initial_state().copy()
    qp.reset()
    acts = [qp.forward(o) for o in obs]
    assert np.array_equal(qp.initial_state(), state0)
    expected, _ = run(qp, obs)
    assert np.array_equal(np.stack(acts), expected)
    qp.reset()
    assert np.array_equal(qp.forward(obs[0]), expected[0])
    with pytest.raises(ValueError, match="state has shape"):
        qp.step(obs[0], np.zeros(5, np.int64))


def test_the_file_is_version_4_dtype_1_and_round_trips():
    spec, qp = quantized()
    data = encode(qp)
    version, hlen = struct.unpack_from("<HH", data, 4)
    assert version == 4 and data[16 + 2 * 4 + 3] == 1 and hlen == header_size(3, 4)
    assert list(data[16 + 2 * 4:16 + 2 * 4 + 3]) == [0x01, 0x10, 0x02]  # relu, GRU, tanh
    # the documented section: G P + 8 G + G Q + 8 G + 2 Q bytes (G = 4 ceil(3H/4), Q = 4 ceil(H/4))
    g, p, q = 20, 8, 8
    dense = 8 * 8 + 8 * 8 + 4 + 4 * 8 + 8 * 4
    assert net_bytes(qp.sizes, qp.kinds) == 8 * 5 + 8 * 3 + dense + g * p + 8 * g + g * q + 8 * g + 2 * q
    back = decode(data)
    assert isinstance(back, QuantizedPolicy) and back.kinds == qp.kinds and encode(back) == data
    seqs = episodes(spec, steps=20, seed=3)
    assert np.array_equal(run(back, seqs)[0], run(qp, seqs)[0])
    # an int8 MLP keeps version 3
    mlp = calibrate(gru_spec().__class__(weights=spec.weights[:1] + [np.ones((3, 8), np.float32)],
                                         biases=spec.biases[:1] + [np.zeros(3)], activations=["relu", "tanh"],
                                         obs_mean=spec.obs_mean, obs_std=spec.obs_std, action_scale=spec.action_scale,
                                         action_offset=spec.action_offset, action_low=spec.action_low,
                                         action_high=spec.action_high), episodes(spec)[0])[0]
    assert struct.unpack_from("<H", encode(mlp), 4)[0] == 3


def _patched(data: bytes, offset: int, value: bytes) -> bytes:
    body = data[:offset] + value + data[offset + len(value):-4]
    return body + struct.pack("<I", zlib.crc32(body))


def test_bad_gru_sections_are_refused_in_one_line():
    spec, qp = quantized()
    data = encode(qp)
    hlen = header_size(3, 4)
    gru_at = hlen + 8 * 5 + (8 * 8 + 8 * 8 + 4)  # after the input map and the dense layer
    deq_i = gru_at + 20 * 8 + 4 * 20
    bh = gru_at + 20 * 8 + 8 * 20 + 20 * 8
    cases = [(_patched(data, deq_i + 4 * 3, struct.pack("<f", 0.0)), "layer 1: GRU scale deq_i\\[3\\] must be positive"),
             (_patched(data, deq_i, struct.pack("<f", float("inf"))), "non-finite values: layer 1 deq_i"),
             (_patched(data, bh + 4, struct.pack("<i", (1 << 24) + 1)), "layer 1: GRU hidden bias\\[1\\] outside"),
             (_patched(data, 16 + 8 + 2, bytes([0x10])), "last layer of an int8 policy is dense"),
             (_patched(data, 16 + 8 + 2, bytes([0x03])), "an int8 layer is identity, relu or tanh")]
    for bad, message in cases:
        with pytest.raises(PolicyFormatError, match=message) as err:
            decode(bad)
        assert "\n" not in str(err.value)
    assert isinstance(pytest.raises(PolicyValueError, decode, cases[0][0]).value, PolicyValueError)


def test_calibration_keeps_large_biases_and_clips_the_initial_state():
    spec = gru_spec(h0_scale=3.0)
    spec.hidden_biases[1][0] = 40.0  # 40 / (2^-15 max|w_h row|/127) would leave +-2^24
    qp = calibrate(spec, episodes(spec), headroom=2.0)[0]
    g = qp.grus[1]
    assert np.abs(g.bh).max() <= 1 << 24
    assert abs(g.bh[0] * float(g.deq_h[0]) - 40.0) < 1e-3  # exact up to the row's coarser scale
    assert np.abs(g.h0).max() <= 32768 and np.abs(spec.initial_hidden[1]).max() > 1
    with pytest.raises(InvalidPolicyError, match="calibration observations must be finite, shape \\(steps"):
        calibrate(spec, episodes(spec)[0], headroom=2.0)  # a recurrent policy calibrates on episodes
    last_gru = gru_spec()
    last_gru.kinds, last_gru.activations = ["dense", "gru"], ["relu", "identity"]
    last_gru.weights, last_gru.biases = last_gru.weights[:2], last_gru.biases[:2]
    for name in ("hidden_weights", "hidden_biases", "initial_hidden"):
        setattr(last_gru, name, getattr(last_gru, name)[:2])
    last_gru.action_scale = last_gru.action_offset = np.ones(6, np.float32)
    last_gru.action_low, last_gru.action_high = -np.ones(6, np.float32), np.ones(6, np.float32)
    with pytest.raises(InvalidPolicyError, match="the last layer is a GRU"):
        calibrate(last_gru, episodes(last_gru), headroom=2.0)


def test_eval_flies_an_int8_recurrent_file_as_its_integer_reference(tmp_path):
    import neuromotor
    from neuromotor.envs import env_class
    from neuromotor.policy import write_policy
    from neuromotor.training.evaluation import evaluate_spec

    spec = gru_spec(obs=3, act=1)
    spec.action_low, spec.action_high = -2 * np.ones(1, np.float32), 2 * np.ones(1, np.float32)
    qp = calibrate(spec, episodes(spec), headroom=2.0)[0]
    path = write_policy(qp, tmp_path / "p8.nmp")
    result = neuromotor.evaluate(path, episodes=4, seed=5, env="pendulum")
    expected, _ = evaluate_spec(qp, env_class("pendulum"), 4, 5)
    assert np.array_equal(result.returns.ravel(), expected)
    assert not np.array_equal(expected, evaluate_spec(spec, env_class("pendulum"), 4, 5)[0])

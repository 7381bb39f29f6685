"""Policy file version 4: GRU layers, sigmoid and fast_tanh; the recurrent PolicySpec."""

import struct
import zlib

import numpy as np
import pytest

from neuromotor.errors import UserError
from neuromotor.policy import PolicyFormatError, PolicyValueError, decode, encode, layout, pack_net, write_policy
from neuromotor.policy.policy_file import header_size, layer_size, net_size
from neuromotor.policy.spec import InvalidPolicyError, PolicySpec


def gru_spec(seed=0, obs=5, hidden=6, act=3, out_act="tanh", h0_scale=0.3):
    rng = np.random.default_rng(seed)
    r = lambda *s: rng.normal(scale=0.5, size=s)  # noqa: E731
    return PolicySpec(
        weights=[r(8, obs), r(3 * hidden, 8), r(act, hidden)], biases=[r(8), r(3 * hidden), r(act)],
        activations=["relu", "identity", out_act], obs_mean=r(obs), obs_std=np.abs(r(obs)) + 0.5,
        action_scale=np.abs(r(act)) + 0.5, action_offset=r(act) * 0.1, action_low=-np.ones(act),
        action_high=np.ones(act), kinds=["dense", "gru", "dense"],
        hidden_weights=[None, r(3 * hidden, hidden), None], hidden_biases=[None, r(3 * hidden), None],
        initial_hidden=[None, r(hidden) * h0_scale, None])


def reference_gru(x, h, wi, bi, wh, bh):
    """PyTorch's GRU cell, written out in float64."""
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    n_h = len(h)
    gi, gh = wi @ x + bi, wh @ h + bh
    r, z = sig(gi[:n_h] + gh[:n_h]), sig(gi[n_h:2 * n_h] + gh[n_h:2 * n_h])
    n = np.tanh(gi[2 * n_h:] + r * gh[2 * n_h:])
    return (1 - z) * n + z * h


def test_version_4_layout_is_the_documented_one():
    spec = gru_spec()
    data = encode(spec)
    magic, version, hlen, n_layers, flags, n_words = struct.unpack_from("<4sHHHHI", data)
    assert (magic, version, n_layers, flags) == (b"NMPL", 4, 3, 0)
    assert hlen == header_size(3, 4) == (16 + 2 * 4 + 3 + 1 + 3) // 4 * 4
    assert list(struct.unpack_from("<4H", data, 16)) == [5, 8, 6, 3]
    assert list(data[24:27]) == [0x01, 0x10, 0x02] and data[27] == 0  # codes, dtype float32
    want = 2 * 5 + 4 * 3 + layer_size(5, 8) + layer_size(8, 18) + layer_size(6, 18) + 6 + layer_size(6, 3)
    assert n_words == want == net_size([5, 8, 6, 3], [0x01, 0x10, 0x02]) + 2 * 3
    assert len(data) == hlen + 4 * n_words + 4
    assert struct.unpack_from("<I", data, len(data) - 4)[0] == zlib.crc32(data[:-4])
    payload = np.frombuffer(data, "<f4", n_words, hlen)
    at = 10 + layer_size(5, 8)
    # the GRU layer: input block, hidden block, initial state
    gru = payload[at:at + layer_size(8, 18) + layer_size(6, 18) + 6]
    assert np.array_equal(gru[:4], spec.biases[1][:4]) and np.array_equal(gru[4:8], spec.weights[1][:4, 0])
    hidden_block = gru[layer_size(8, 18):layer_size(8, 18) + layer_size(6, 18)]
    assert np.array_equal(hidden_block[:4], spec.hidden_biases[1][:4])
    assert np.array_equal(hidden_block[4:8], spec.hidden_weights[1][:4, 0])
    assert np.array_equal(gru[-6:], spec.initial_hidden[1])
    assert np.array_equal(payload[:-6], pack_net(spec))
    assert np.array_equal(payload[-6:], np.r_[spec.action_low, spec.action_high])
    assert layout(spec) == [3, 5, 8, 6, 3, 0x01, 0x10, 0x02]


def test_version_4_round_trips_and_steps_alike(tmp_path):
    spec = gru_spec()
    back = decode(write_policy(spec, tmp_path / "p.nmp").read_bytes())
    assert back.kinds == spec.kinds and back.sizes == spec.sizes and back.state_size == 6
    assert np.array_equal(back.initial_state(), spec.initial_state())
    obs = np.random.default_rng(1).normal(size=(20, 4, 5))
    spec.reset()
    back.reset()
    assert all(np.array_equal(spec(o), back(o)) for o in obs)
    assert encode(back) == encode(spec)


def test_gru_step_is_pytorchs_cell():
    spec = gru_spec(h0_scale=1.0)
    rng = np.random.default_rng(2)
    state = spec.initial_state()
    h = state.astype(np.float64)
    for _ in range(30):
        obs = rng.normal(size=5)
        action, state = spec.step(obs, state)
        x = np.maximum(spec.weights[0] @ ((obs - spec.obs_mean) / spec.obs_std) + spec.biases[0], 0)
        h = reference_gru(x, h, spec.weights[1], spec.biases[1], spec.hidden_weights[1], spec.hidden_biases[1])
        want = np.clip(np.tanh(spec.weights[2] @ h + spec.biases[2]) * spec.action_scale + spec.action_offset, -1, 1)
        assert np.abs(state - h).max() < 1e-5 and np.abs(action - want).max() < 1e-5


def test_step_is_pure_and_forward_keeps_and_resets_its_state():
    spec = gru_spec()
    s0 = spec.initial_state()
    obs = np.random.default_rng(3).normal(size=(4, 5))
    a1, s1 = spec.step(obs, s0)
    a1b, s1b = spec.step(obs, s0)
    assert np.array_equal(a1, a1b) and np.array_equal(s1, s1b) and s1.shape == (4, 6)
    assert np.array_equal(spec.initial_state(), s0)
    assert np.array_equal(spec(obs), a1)
    second = spec(obs)
    assert np.array_equal(second, spec.step(obs, s1)[0]) and not np.array_equal(second, a1)
    with pytest.raises(ValueError, match="reset"):
        spec(obs[0])  # a batch's state, a single observation
    spec.reset()
    assert np.array_equal(spec(obs[0]), a1[0])
    assert spec.recurrent and spec.state_size == 6


def test_mlp_has_no_state_and_keeps_its_version():
    spec = gru_spec()
    mlp = PolicySpec(weights=spec.weights[:1] + [np.ones((3, 8))], biases=spec.biases[:1] + [np.zeros(3)],
                     activations=["relu", "tanh"], obs_mean=spec.obs_mean, obs_std=spec.obs_std,
                     action_scale=spec.action_scale, action_offset=spec.action_offset,
                     action_low=spec.action_low, action_high=spec.action_high)
    assert not mlp.recurrent and mlp.state_size == 0 and mlp.initial_state().shape == (0,)
    mlp.reset()
    obs = np.ones((2, 5))
    assert np.array_equal(mlp(obs), mlp.step(obs, mlp.initial_state())[0])
    assert struct.unpack_from("<H", encode(mlp), 4)[0] == 2


@pytest.mark.parametrize("act", ["sigmoid", "fast_tanh"])
def test_new_activations_write_version_4(act):
    spec = gru_spec()
    mlp = PolicySpec(weights=[spec.weights[0], np.ones((3, 8))], biases=[spec.biases[0], np.zeros(3)],
                     activations=[act, "tanh"], obs_mean=spec.obs_mean, obs_std=spec.obs_std,
                     action_scale=spec.action_scale, action_offset=spec.action_offset,
                     action_low=-10 * np.ones(3), action_high=10 * np.ones(3))
    data = encode(mlp)
    assert struct.unpack_from("<H", data, 4)[0] == 4 and list(data[22:25]) == [3 if act == "sigmoid" else 4, 2, 0]
    back = decode(data)
    obs = np.random.default_rng(4).normal(size=(10, 5))
    assert back.activations == [act, "tanh"] and np.array_equal(back(obs), mlp(obs))
    x = np.linspace(-5, 5, 41, dtype=np.float32)
    from neuromotor.policy.spec import _activate
    got = _activate(act, x)
    want = 1 / (1 + np.exp(-x.astype(np.float64))) if act == "sigmoid" else \
        np.clip(x, -3, 3) * (27 + np.clip(x, -3, 3) ** 2) / (27 + 9 * np.clip(x, -3, 3) ** 2)
    assert got.dtype == np.float32 and np.abs(got - want).max() < 1e-6


def _patched(data: bytes, offset: int, value: bytes) -> bytes:
    body = data[:offset] + value + data[offset + len(value):-4]
    return body + struct.pack("<I", zlib.crc32(body))


def test_bad_codes_and_dtype_are_refused():
    data = encode(gru_spec())
    with pytest.raises(PolicyFormatError, match="layer 1: unknown layer code 0x12"):
        decode(_patched(data, 25, bytes([0x12])))  # a GRU with an activation
    with pytest.raises(PolicyFormatError, match="unknown layer code 0x20"):
        decode(_patched(data, 25, bytes([0x20])))  # kind 2
    with pytest.raises(PolicyFormatError, match="unknown layer code 0x05"):
        decode(_patched(data, 26, bytes([0x05])))  # activation 5
    with pytest.raises(PolicyFormatError, match=r"payload words .*\(version 4, int8\)"):
        decode(_patched(data, 27, bytes([1])))  # int8's version 4 has another payload
    old = encode(PolicySpec(weights=[np.ones((2, 3))], biases=[np.zeros(2)], activations=["tanh"],
                            obs_mean=np.zeros(3), obs_std=np.ones(3), action_scale=np.ones(2),
                            action_offset=np.zeros(2), action_low=-np.ones(2), action_high=np.ones(2)))
    with pytest.raises(PolicyFormatError, match="unknown layer code 0x03 for version 2"):
        decode(_patched(old, 20, bytes([3])))  # sigmoid is version 4's


def test_non_finite_recurrent_values_are_refused_everywhere(tmp_path):
    spec = gru_spec()
    data = encode(spec)
    hlen, n_words = header_size(3, 4), struct.unpack_from("<I", data, 12)[0]
    h0_at = hlen + 4 * (n_words - 6 - 6 - layer_size(6, 3) - 6)  # before the last layer, map, limits
    assert np.array_equal(np.frombuffer(data, "<f4", 6, h0_at), spec.initial_hidden[1])
    with pytest.raises(PolicyValueError, match="layer 1 initial state"):
        decode(_patched(data, h0_at, struct.pack("<f", float("nan"))))
    with pytest.raises(InvalidPolicyError, match="layer 1 hidden weights"):
        spec.hidden_weights[1][0, 0] = np.inf
        write_policy(spec, tmp_path / "bad.nmp")
    assert not (tmp_path / "bad.nmp").exists()
    with pytest.raises(InvalidPolicyError, match="activation is fixed"):
        gru = gru_spec()
        gru.activations[1] = "tanh"
        gru.validate()
    with pytest.raises(InvalidPolicyError, match="needs action limits"):
        free = gru_spec()
        free.action_low = free.action_high = None
        encode(free)


def test_version_4_in_a_c_header_and_sigmoid_refused_by_int8(tmp_path):
    from neuromotor.api import export

    src = write_policy(gru_spec(), tmp_path / "gru.nmp")
    sig = write_policy(gru_spec(out_act="sigmoid"), tmp_path / "sig.nmp")
    export(src, tmp_path / "p.h")
    assert "nm_policy_reset" in (tmp_path / "p.h").read_text()
    with pytest.raises(UserError, match="int8 runs identity, relu and tanh") as err:
        export(sig, tmp_path / "q.nmp", quantize="int8")
    assert "\n" not in str(err.value) and not (tmp_path / "q.nmp").exists()

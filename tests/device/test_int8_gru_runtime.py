"""neuromotor_rt with int8 GRU policies on the unix MicroPython build: Policy.load of a
calibrated int8 recurrent policy file keeps its state in an array('h'), steps like the host's
integer reference (native: bit for bit; python: within math.tanh's distance from the table)
and restarts from h0 at reset() (each episode's actions are the reference's from h0); the
reader refuses a bad GRU section in one line."""

import struct
import zlib

import numpy as np
import pytest
from mp_helpers import run_script

from neuromotor.policy import encode
from neuromotor.policy.quantize import calibrate
from neuromotor.policy.spec import PolicySpec

pytestmark = pytest.mark.device
EPISODES, STEPS = 2, 12


def recurrent_int8(seed=0, obs=5, dense=8, hidden=6, act=3):
    rng = np.random.default_rng(seed)
    r = lambda *s: rng.normal(scale=0.5, size=s)  # noqa: E731
    spec = PolicySpec(
        weights=[r(dense, obs), r(3 * hidden, dense), r(act, hidden)], biases=[r(dense), r(3 * hidden), r(act)],
        activations=["relu", "identity", "tanh"], obs_mean=r(obs), obs_std=np.abs(r(obs)) + 0.5,
        action_scale=np.abs(r(act)) + 0.5, action_offset=r(act) * 0.1, action_low=-np.ones(act),
        action_high=np.ones(act), kinds=["dense", "gru", "dense"],
        hidden_weights=[None, r(3 * hidden, hidden), None], hidden_biases=[None, r(3 * hidden), None],
        initial_hidden=[None, r(hidden) * 0.3, None])
    calib = rng.normal(0, 1.5, (40, 8, obs)).astype(np.float32)
    held = rng.normal(0, 1.5, (EPISODES, STEPS, obs)).astype(np.float32)
    return calibrate(spec, calib, headroom=2.0)[0], held


def reference(qp, held):
    out = []
    for episode in held:
        state = qp.initial_state()
        for obs in episode:
            action, state = qp.step(obs, state)
            out.append(action)
    return np.array(out)


def board_steps(micropython, path, held, backend):
    proc = run_script(micropython, f"""
from neuromotor_rt import Policy
p = Policy.load({str(path)!r}, backend={backend!r})
print(p.dtype, p.backend, p.recurrent, 'h' in repr(p.state)[:8], len(p.state))
res = []
for episode in {held.tolist()!r}:
    p.reset()
    for obs in episode:
        res.append(list(p(obs)))
print(res)
""")
    lines = proc.stdout.splitlines()
    return lines[0].split(), np.array(eval(lines[1]), np.float32)


@pytest.mark.parametrize("backend", ["native", "python"])
def test_an_int8_recurrent_policy_steps_like_the_host(micropython, tmp_path, backend):
    qp, held = recurrent_int8()
    (tmp_path / "p.nmp").write_bytes(encode(qp))
    head, got = board_steps(micropython, tmp_path / "p.nmp", held, backend)
    assert head == ["int8", backend, "True", "True", "8"]  # 6 units padded to 8, int16
    ref = reference(qp, held)
    if backend == "native":
        assert np.array_equal(got, ref)
    else:  # integer layers; the gates' tanh is math's, not the table (within 6e-5 of it)
        assert np.abs(got - ref).max() < 2e-3


def test_the_reader_refuses_a_bad_gru_section(micropython, tmp_path):
    qp, _ = recurrent_int8()
    data = bytearray(encode(qp)[:-4])
    hlen = 16 + 2 * 4 + 3 + 1  # 3 layers: sizes, codes, dtype, padded to 4 below
    hlen = (hlen + 3) & ~3
    deq_i = hlen + 8 * 5 + (8 * 8 + 8 * 8 + 4) + 20 * 8 + 4 * 20  # after the dense layer and wi, bi
    struct.pack_into("<f", data, deq_i + 4 * 2, -1.0)
    (tmp_path / "bad.nmp").write_bytes(bytes(data) + struct.pack("<I", zlib.crc32(data)))
    out = run_script(micropython, f"""
import neuromotor_rt as rt
try:
    rt.Policy.load({str(tmp_path / 'bad.nmp')!r}, backend='python')
except rt.PolicyValueError as e:
    print(e)
""").stdout.strip()
    assert out == "layer 1: GRU scale deq_i[2] must be positive, got -1.0"

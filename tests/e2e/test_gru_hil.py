"""A recurrent policy end to end on an emulated Cortex-M7: deployed by `neuromotor deploy`,
its hidden state carried through each HIL episode and reset at each episode's start on the
board and on the host, and timed by `neuromotor bench` with a GRU layer's multiply-adds."""

import json

import numpy as np
import pytest

from neuromotor.policy.spec import PolicySpec

from .helpers import ensure_deployed, last_json, nm, started_board, write_spec

pytestmark = [pytest.mark.qemu, pytest.mark.slow]
H = 16


def gru_spec(seed=3) -> PolicySpec:
    """Pendulum (3 observations, 1 action in [-2, 2]): a GRU of 16, then a tanh layer."""
    rng = np.random.default_rng(seed)
    return PolicySpec(
        [rng.normal(0, 1 / np.sqrt(3), (3 * H, 3)), rng.normal(0, 1 / np.sqrt(H), (1, H))],
        [rng.normal(0, 0.2, 3 * H), rng.normal(0, 0.1, 1)], ["identity", "tanh"],
        np.zeros(3), np.ones(3), np.full(1, 2.0), np.zeros(1), np.full(1, -2.0), np.full(1, 2.0),
        meta={"env": "pendulum"}, kinds=["gru", "dense"],
        hidden_weights=[rng.normal(0, 1 / np.sqrt(H), (3 * H, H)), None],
        hidden_biases=[rng.normal(0, 0.2, 3 * H), None], initial_hidden=[rng.normal(0, 0.5, H), None])


@pytest.fixture(scope="module")
def m7():
    with started_board("qemu-m7") as b:
        yield b


def test_hil_carries_and_resets_the_state(m7, tmp_path):
    spec = gru_spec()
    path = write_spec(spec, tmp_path / "gru.nmp")
    ensure_deployed(m7.port, path)
    res = nm("hil", path, "--port", m7.port, "--episodes", "2", "--steps", "40", "--json", check=True)
    r = last_json(res.stdout)
    assert r["recurrent"] is True and r["steps"] == 80
    assert r["returns_match"] is True and r["max_action_rel_diff"] < 1e-5
    # The same observation twice in a row gives two actions: the agreement above needed the
    # state carried from step to step on the board.
    obs = np.float32([[1.0, 0.0, 0.5]] * 2)
    spec.reset()
    a0, a1 = spec.forward(obs[:1]), spec.forward(obs[1:])
    assert abs(float(a0[0, 0]) - float(a1[0, 0])) > 1e-4


def test_bench_counts_gru_multiply_adds(m7, tmp_path):
    spec = gru_spec()
    path = write_spec(spec, tmp_path / "gru.nmp")
    ensure_deployed(m7.port, path)
    res = nm("bench", "--port", m7.port, "-n", "100", "--out", tmp_path, "--json", check=True)
    assert last_json(res.stdout)["backends"]
    full = json.loads((tmp_path / "bench.json").read_text())["results"][0]["backends"]
    for name, s in full.items():
        assert s["macs"] == 3 * H * (3 + H) + H * 1 and s["sizes"] == [3, H, 1] and s["n"] > 0, name
    assert full["native"]["instructions_per_mac"] > 0

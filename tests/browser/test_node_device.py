"""The unix port's device tests on the browser build under Node: the inference kernels
against the host's NumPy forward pass, and the on-board TD3 trainer step by step against
the host's TD3 (tests/ondevice/test_td3_equivalence.py, run here with `micropython_train`
pointing at the Node runner)."""

import pytest

from mp_helpers import random_spec
from ondevice.test_td3_equivalence import (  # noqa: F401  (the fixture and tests run here too)
    compared, test_delay_schedule, test_every_transition_equals_host, test_every_update_equals_host,
    test_schedule_and_draws)
from test_runtime import NETS, assert_agrees, random_obs, run_policy


@pytest.fixture(scope="session")
def micropython_train(node_micropython):
    return node_micropython


@pytest.mark.parametrize("net", list(NETS))
def test_kernels_agree_with_numpy(node_micropython, tmp_path, net):
    spec = random_spec(NETS[net], seed=len(net))
    obs = random_obs(spec)
    dev, out = run_policy(node_micropython, spec, obs, tmp_path, "usermod")
    assert out.split()[-1] in ("scalar", "wasm-simd128"), out
    assert_agrees(dev, spec.forward(obs), f"browser build {net}")

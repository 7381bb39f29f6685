"""The unix port's device tests on the browser build under Node: the inference kernels
against the host's NumPy forward pass; the on-board TD3 trainer step by step against the
host's TD3, its pendulum against the host's, its saved policy against its actor (the tests
of tests/ondevice, imported here and run with `micropython_train` pointing at the Node
runner)."""

import numpy as np
import pytest

from mp_helpers import random_spec
from ondevice.test_td3_equivalence import (  # noqa: F401  (the fixture and tests run here too)
    compared, test_delay_schedule, test_every_transition_equals_host, test_every_update_equals_host,
    test_schedule_and_draws)
from ondevice.test_pendulum_equivalence import test_pendulum_equals_host_step_by_step  # noqa: F401
from ondevice.test_trainer_modules import (  # noqa: F401
    test_python_kernels_only_without_native, test_saved_policy_is_the_trained_actor)
from test_runtime import NETS, assert_agrees, random_obs, run_policy


@pytest.fixture(scope="session")
def micropython_train(node_micropython):
    return node_micropython


@pytest.mark.parametrize("net", list(NETS))
def test_kernels_agree_with_numpy(node_micropython, tmp_path, net):
    spec = random_spec(NETS[net], seed=len(net))
    obs = random_obs(spec)
    dev, out = run_policy(node_micropython, spec, obs, tmp_path, "usermod")
    assert out.split()[-1] == "simd128", out  # the best path is the default
    assert_agrees(dev, spec.forward(obs), f"browser build {net}")


def test_simd128_path_equals_scalar_bit_for_bit(node_micropython, tmp_path):
    """WebAssembly SIMD (nm_kernels_wasm.h) against the scalar path of the same build: each
    lane does the scalar arithmetic in its order, so the bits agree; both agree with NumPy.
    Odd sizes exercise partial blocks and every activation."""
    for tag, spec in (("odd", random_spec([5, 7, 18, 3], seed=3, activations=["tanh", "identity", "relu"])),
                      ("paper", random_spec([13, 64, 64, 4], seed=4))):
        obs = random_obs(spec, n=300)
        got = {}
        for isa in ("scalar", "simd128"):
            got[isa], out = run_policy(node_micropython, spec, obs, tmp_path, "usermod", isa=isa, tag=tag)
            assert out.split()[-1] == isa, out
            assert_agrees(got[isa], spec.forward(obs), f"{isa} {tag}")
        assert np.array_equal(got["scalar"].view(np.uint32), got["simd128"].view(np.uint32)), tag

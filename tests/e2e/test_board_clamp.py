"""Action limits and non-finite observations on an emulated board: a PPO-shaped policy
(unbounded identity output) deployed with `neuromotor deploy` stays inside the env's
bounds on the native and python backends, exactly where the host clamps, and a NaN
observation is a ValueError, not a command."""

import dataclasses

import numpy as np
import pytest

from .helpers import board_exec, ensure_deployed, make_spec, write_spec

pytestmark = [pytest.mark.qemu, pytest.mark.slow]


def test_ppo_shaped_policy_is_clamped_on_the_board(arm_board, tmp_path):
    base = make_spec(5, sizes=(3, 16, 1), acts=("tanh", "identity"))
    spec = dataclasses.replace(base, weights=[base.weights[0], 40 * base.weights[1]],
                               action_scale=np.ones(1), action_offset=np.zeros(1),
                               action_low=np.float32([-2.0]), action_high=np.float32([1.5]))
    path = write_spec(spec, tmp_path / "clamped.nmp")
    ensure_deployed(arm_board.port, path)
    obs = np.random.default_rng(3).normal(0, 2, (40, 3)).astype(np.float32)
    out = board_exec(arm_board.port, (
        "from neuromotor_rt import Policy\n"
        f"obs = {obs.tolist()!r}\n"
        "for be in ('native', 'python'):\n"
        "    p = Policy.load('/policy.nmp', backend=be)\n"
        "    print(be, ' '.join(repr(p(o)[0]) for o in obs))\n"
        "    try:\n"
        "        p([0.0, float('nan'), 0.0])\n"
        "        print(be, 'ACCEPTED NaN')\n"
        "    except ValueError as e:\n"
        "        print(be, 'ValueError', e)\n"), timeout=120)
    lines = out.splitlines()
    raw = dataclasses.replace(spec, action_low=None, action_high=None).forward(obs)[:, 0]
    ref = spec(obs)[:, 0]
    far = (raw < -2.0 - 1e-3) | (raw > 1.5 + 1e-3)
    assert (raw < -2.0 - 1e-3).any() and (raw > 1.5 + 1e-3).any()
    for be in ("native", "python"):
        got = np.array([float(v) for v in next(x for x in lines if x.startswith(be + " ")).split()[1:]], np.float32)
        assert np.array_equal(got[far], ref[far]), be
        assert got.min() >= -2.0 and got.max() <= 1.5, be
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5, err_msg=be)
        assert f"{be} ValueError obs[1] is not finite" in lines

"""SAC's learning-rate decay: from lr_decay_start the actor's and critics' rates fall linearly to
lr_decay_factor times their own at lr_decay_end; both backends (and the native whole step) use
the same rates, and a decayed run's networks differ from a constant-rate run's."""

import numpy as np
import pytest

from neuromotor.algos.sac import SAC
from neuromotor.envs.pendulum import PendulumVec
from neuromotor.envs.quadrotor import QuadrotorVec
from neuromotor.errors import UserError

pytest.importorskip("neuromotor.native._nm_host")

DECAY = dict(lr_decay_start=10, lr_decay_end=20, lr_decay_factor=0.25)


def _sac(backend, env, **decay):
    make = {"pendulum": lambda n: PendulumVec(n), "quadrotor": lambda n: QuadrotorVec(n, 2)}[env]
    return SAC(SAC.Config(backend=backend, learning_starts=5, batch_size=8, **decay), make, [3, 4])


@pytest.mark.parametrize("env", ["pendulum", "quadrotor"])  # the pendulum steps in the native whole step
def test_rates_fall_linearly_and_both_backends_follow_them(env):
    runs = {b: _sac(b, env, **DECAY) for b in ("native", "numpy")}
    for agents in runs.values():
        for _ in range(15):
            agents.advance()
        # the 15th step (steps = 14 before it) decayed by 4/10 of the way to 0.25
        assert agents.actor.opt.lr == pytest.approx(1e-3 * (1 - 0.4 * 0.75))
        for _ in range(25):
            agents.advance()
        assert (agents.actor.opt.lr, agents.critic.opt.lr) == pytest.approx((2.5e-4, 2.5e-4))
        agents.sync_host()
    native, numpy_ = (runs[b]._arrays() for b in ("native", "numpy"))
    for key in ("actor", "critic", "critic_target"):
        np.testing.assert_allclose(native[key], numpy_[key], rtol=1e-4, atol=1e-4, err_msg=key)
    constant = _sac("native", env)
    for _ in range(40):
        constant.advance()
    constant.sync_host()
    assert not np.allclose(constant.actor.params, runs["native"].actor.params, rtol=1e-4, atol=1e-4)


def test_a_decay_that_ends_before_it_starts_is_refused():
    with pytest.raises(UserError, match="lr_decay_start .* must be below lr_decay_end"):
        _sac("numpy", "pendulum", lr_decay_start=20, lr_decay_end=10, lr_decay_factor=0.5)

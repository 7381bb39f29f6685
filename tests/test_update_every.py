"""update_every: TD3 and SAC update once per that many env steps from learning_starts on
(TD3's actor on every policy_delay-th of those), on both backends and on the native whole
step, and the backends still agree."""

import numpy as np
import pytest

from neuromotor.algos.sac import SAC
from neuromotor.algos.td3 import TD3
from neuromotor.envs.pendulum import PendulumVec
from neuromotor.envs.quadrotor import QuadrotorVec

pytest.importorskip("neuromotor.native._nm_host")

# learning_starts 10, update_every 3, 40 steps: updates at steps 10, 13, ..., 37 (10 of them);
# TD3's actor where step // 3 is even: 12 // 3 .. 36 // 3 gives 13, 19, 25, 31, 37 (5 of them)
SETTINGS = dict(learning_starts=10, update_every=3, batch_size=8)


def _agents(algo, backend, env):
    cls = {"td3": TD3, "sac": SAC}[algo]
    make = {"pendulum": lambda n: PendulumVec(n), "quadrotor": lambda n: QuadrotorVec(n, 2)}[env]
    return cls(cls.Config(backend=backend, **SETTINGS), make, [3, 4])


@pytest.mark.parametrize("env", ["pendulum", "quadrotor"])  # the pendulum steps in the native whole step
@pytest.mark.parametrize("algo", ["td3", "sac"])
def test_updates_come_every_update_every_steps_and_the_backends_agree(algo, env):
    runs = {b: _agents(algo, b, env) for b in ("native", "numpy")}
    for agents in runs.values():
        for _ in range(40):
            agents.advance()
        agents.sync_host()
    for agents in runs.values():
        assert agents.critic.opt.t == 10
        assert agents.actor.opt.t == (5 if algo == "td3" else 10)
    native, numpy_ = (runs[b]._arrays() for b in ("native", "numpy"))
    for key in ("actor", "critic", "critic_target", "replay"):
        np.testing.assert_allclose(native[key], numpy_[key], rtol=1e-4, atol=1e-4, err_msg=key)
    assert not np.array_equal(runs["native"].critic.params, _agents(algo, "native", env).critic.params)


@pytest.mark.parametrize("algo", ["td3", "sac"])
@pytest.mark.parametrize("update_every", [1, 3, 7])
def test_a_block_draws_numbers_for_its_updates_only(algo, update_every):
    """A block of 1000 steps draws the acting noise of every step and the update's numbers
    (minibatch indices, target or reparameterisation noise) of each update: ceil(1000 /
    update_every) rows, each update of a block on a row of its own, over blocks whose updates
    do not line up with their starts (update_every 7, learning_starts 10)."""
    cls = {"td3": TD3, "sac": SAC}[algo]
    agents = cls(cls.Config(learning_starts=10, update_every=update_every, batch_size=8), lambda n: PendulumVec(n), [0])
    agents.advance()
    rows = -(-1000 // update_every)
    assert [len(x) for x in agents._block] == [1000, 1000] + [rows] * (len(agents._block) - 2)
    for start in (0, 1000, 2000):
        used = [agents._update_row(s - start) for s in range(start, start + 1000)
                if s >= 10 and (s - 10) % update_every == 0]
        assert len(used) == len(set(used)) and max(used) < rows
        assert start == 0 or len(used) >= rows - 1  # past the warm-up, no more rows than updates (+1)


def test_update_every_is_checked(tmp_path):
    from neuromotor.cli import main

    assert main(["train", "pendulum", "--set", "update_every=0", "--run-dir", str(tmp_path / "r")]) == 2
    assert not (tmp_path / "r").exists()

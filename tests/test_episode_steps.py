"""episode_steps: TD3's and SAC's training episodes time out after that many steps (a time-out,
bootstrapped: the replay keeps not_done = 1) on both backends and on the native whole step;
evaluation keeps the env's own limit."""

import numpy as np
import pytest

from neuromotor.algos.sac import SAC
from neuromotor.algos.td3 import TD3
from neuromotor.envs.pendulum import PendulumVec
from neuromotor.envs.quadrotor import QuadrotorVec

pytest.importorskip("neuromotor.native._nm_host")


def _agents(algo, backend, env, episode_steps):
    cls = {"td3": TD3, "sac": SAC}[algo]
    make = {"pendulum": lambda n: PendulumVec(n), "quadrotor": lambda n: QuadrotorVec(n, 2)}[env]
    return cls(cls.Config(backend=backend, learning_starts=30, batch_size=8, episode_steps=episode_steps), make, [3, 4])


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("env", ["pendulum", "quadrotor"])  # the pendulum steps in the native whole step
@pytest.mark.parametrize("algo", ["td3", "sac"])
def test_training_episodes_time_out_at_episode_steps(algo, env, backend):
    agents = _agents(algo, backend, env, 25)
    for _ in range(100):
        agents.advance()
        assert agents.episodes.ep_len.max() <= 25
    per_agent = [len(r) for r in agents.pop_episode_returns()]
    if env == "pendulum":  # it never terminates: four time-outs each
        assert per_agent == [4, 4]
        assert agents.replay.data[:, :100, agents.replay.row.not_done].all()
    else:  # random commands also crash drones on the way
        assert min(per_agent) >= 4


def test_without_episode_steps_training_episodes_last_the_envs_limit():
    agents = _agents("sac", "native", "pendulum", 0)
    assert agents.episode_steps == PendulumVec.max_episode_steps == 200
    for _ in range(400):
        agents.advance()
    assert [len(r) for r in agents.pop_episode_returns()] == [2, 2]

"""PendulumVec against gymnasium's own Pendulum-v1, and the env registry."""

import gymnasium as gym
import numpy as np
import pytest

from neuromotor.envs import ENVS, env_class, make_env
from neuromotor.errors import UserError


def test_pendulum_matches_gymnasium_side_by_side():
    n = 4
    refs = [gym.make("Pendulum-v1") for _ in range(n)]
    ours = make_env("pendulum", n)
    rng = np.random.default_rng(0)
    obs = ours.reset([np.random.default_rng(i) for i in range(n)])
    ref_obs = []
    for i, env in enumerate(refs):
        env.reset(seed=i)
        env.unwrapped.state = ours.state[i].copy()  # same initial state
        ref_obs.append(env.unwrapped._get_obs())
    np.testing.assert_allclose(obs, np.array(ref_obs), atol=1e-5)
    for t in range(ours.max_episode_steps):
        # beyond the bounds too, to check the clipping
        actions = rng.uniform(-3, 3, (n, 1)).astype(np.float32)
        obs, reward, terminated = ours.step(actions)
        for i, env in enumerate(refs):
            o, r, term, trunc, _ = env.step(actions[i])
            np.testing.assert_allclose(obs[i], o, atol=1e-5)
            assert reward[i] == pytest.approx(r, abs=1e-5)
            assert not terminated[i] and not term
            assert trunc == (t == 199)  # gymnasium's TimeLimit agrees on the episode length
    assert obs.dtype == np.float32 and obs.shape == (n, 3)


def test_pendulum_reset_distribution_is_gymnasiums():
    env = make_env("pendulum", 1000)
    env.reset([np.random.default_rng(i) for i in range(1000)])
    th, thdot = env.state[:, 0], env.state[:, 1]
    assert np.abs(th).max() <= np.pi and np.abs(th).max() > 3.0
    assert np.abs(thdot).max() <= 1.0 and np.abs(thdot).max() > 0.95
    # same Generator, same draw as gymnasium's np_random.uniform(low=-high, high=high)
    ref = np.random.default_rng(7).uniform(low=-np.array([np.pi, 1.0]), high=np.array([np.pi, 1.0]))
    env.reset([np.random.default_rng(7)] * 1000, mask=np.arange(1000) == 3)
    np.testing.assert_array_equal(env.state[3], ref)


def test_registry():
    assert "pendulum" in ENVS
    assert env_class("pendulum")(2).num_envs == 2
    with pytest.raises(UserError, match="unknown environment 'cartpole'"):
        env_class("cartpole")

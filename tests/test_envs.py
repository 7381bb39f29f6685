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


def test_autoreset_truncates_resets_and_counts_returns():
    """Two agents of two envs each: at max_episode_steps every episode is truncated, the
    next obs starts a new episode drawn from the agent's Generator, final_obs is where
    the old one ended, and each agent gets its two returns."""
    from neuromotor.envs.autoreset import AutoReset
    agent_rngs = [np.random.default_rng(s) for s in (7, 8)]
    twin_rngs = [np.random.default_rng(s) for s in (7, 8)]
    env, twin = make_env("pendulum", 4), make_env("pendulum", 4)
    auto = AutoReset(env, [r for r in agent_rngs for _ in range(2)], envs_per_agent=2)
    obs = auto.reset()
    np.testing.assert_array_equal(obs, twin.reset([r for r in twin_rngs for _ in range(2)]))
    actions = np.random.default_rng(0).uniform(-2, 2, (twin.max_episode_steps, 4, 1)).astype(np.float32)
    total = np.zeros(4)
    for t, act in enumerate(actions):
        obs, reward, terminated, truncated, final_obs = auto.step(act)
        raw_obs, raw_reward, _ = twin.step(act)
        total += raw_reward
        np.testing.assert_array_equal(final_obs, raw_obs)
        assert not terminated.any()
        if t < len(actions) - 1:
            assert not truncated.any() and obs is final_obs
    assert truncated.all()
    np.testing.assert_array_equal(obs, twin.reset([r for r in twin_rngs for _ in range(2)]))
    assert not np.array_equal(obs, final_obs)
    returns = auto.pop_episode_returns()
    np.testing.assert_allclose(returns, total.reshape(2, 2))
    assert auto.pop_episode_returns() == [[], []] and not auto.ep_len.any()

"""The batched MuJoCo envs against gymnasium's own v5 envs, step by step."""

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")
pytest.importorskip("mujoco")

from neuromotor.envs import mujoco_vec  # noqa: E402
from neuromotor.errors import UserError  # noqa: E402

CLASSES = [mujoco_vec.AntVec, mujoco_vec.AntFullVec, mujoco_vec.HalfCheetahVec, mujoco_vec.HopperVec]


def close(a, b):
    # Our obs/rewards are float32 views of the same float64 numbers.
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.gym_id + str(c.gym_kwargs or ""))
def test_matches_gymnasium_for_100_random_steps(cls, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # gymnasium's half_cheetah load writes MUJOCO_LOG.TXT here
    n = 3
    ours = cls(n, threads=min(2, mujoco_vec.max_threads()))
    refs = [gym.make(cls.gym_id, **cls.gym_kwargs).unwrapped for _ in range(n)]
    assert ours.obs_dim == refs[0].observation_space.shape[0]
    np.testing.assert_array_equal(ours.action_low, refs[0].action_space.low)
    # Same seeds -> same reset noise (gymnasium seeds np_random like default_rng).
    first = np.stack([r.reset(seed=10 + i)[0] for i, r in enumerate(refs)])
    close(ours.reset([np.random.default_rng(10 + i) for i in range(n)]), first)
    # And from an arbitrary shared state: a perturbed start, so the envs differ.
    rng = np.random.default_rng(0)
    for i, r in enumerate(refs):
        r.set_state(r.init_qpos + rng.uniform(-0.1, 0.1, r.model.nq), r.init_qvel + rng.normal(0, 0.1, r.model.nv))
        ours.set_qpos_qvel(i, r.data.qpos, r.data.qvel)
    terminated_seen = 0
    for t in range(100):
        actions = rng.uniform(-1, 1, (n, ours.act_dim)).astype(np.float32)
        if cls is mujoco_vec.HopperVec:
            actions *= 3  # out of the ctrl range: MuJoCo clamps, the ctrl cost must not
        obs, reward, terminated = ours.step(actions)
        for i, r in enumerate(refs):
            o, rew, term, trunc, _ = r.step(actions[i])
            close(obs[i], o)
            close(reward[i], rew)
            assert terminated[i] == term, (t, i)
            assert not trunc
            terminated_seen += term
    close(ours.qpos, np.stack([r.data.qpos for r in refs]))
    close(ours.qvel, np.stack([r.data.qvel for r in refs]))
    if cls is mujoco_vec.HopperVec:
        assert terminated_seen > 0  # the termination rule was exercised, not only "never"
    ours.close()


def test_threads_out_of_range_is_a_user_error():
    with pytest.raises(UserError, match="out of range"):
        mujoco_vec.AntVec(2, threads=mujoco_vec.max_threads() + 1)
    with pytest.raises(UserError, match="out of range"):
        mujoco_vec.parse_threads(0)
    with pytest.raises(UserError, match="integer"):
        mujoco_vec.parse_threads("many")
    assert mujoco_vec.parse_threads("auto") == mujoco_vec.max_threads()


def test_threaded_and_serial_stepping_agree():
    if mujoco_vec.max_threads() < 2:
        pytest.skip("needs two cores")
    a, b = mujoco_vec.AntVec(5, threads=1), mujoco_vec.AntVec(5, threads=2)
    rngs = lambda: [np.random.default_rng(i) for i in range(5)]  # noqa: E731
    np.testing.assert_array_equal(a.reset(rngs()), b.reset(rngs()))
    rng = np.random.default_rng(1)
    for _ in range(20):
        act = rng.uniform(-1, 1, (5, 8)).astype(np.float32)
        for x, y in zip(a.step(act), b.step(act)):
            np.testing.assert_array_equal(x, y)


def test_checkpointed_state_continues_bit_exactly():
    rng = np.random.default_rng(2)
    actions = rng.uniform(-1, 1, (20, 4, 8)).astype(np.float32)
    a = mujoco_vec.AntVec(4)
    a.reset([np.random.default_rng(i) for i in range(4)])
    for act in actions[:10]:
        a.step(act)
    b = mujoco_vec.AntVec(4)
    b.set_state(a.get_state())
    for act in actions[10:]:
        for x, y in zip(a.step(act), b.step(act)):
            np.testing.assert_array_equal(x, y)
    with pytest.raises(ValueError, match="shape"):
        b.set_state(np.zeros((4, 3)))


def test_autoreset_on_termination():
    """Hopper falls under strong random actions: that env's episode is terminated (not
    truncated), final_obs is its fallen state, obs its fresh start; the others go on."""
    from neuromotor.envs.autoreset import AutoReset
    env = mujoco_vec.HopperVec(3, threads=1)
    auto = AutoReset(env, [np.random.default_rng(s) for s in range(3)])
    auto.reset()
    rng = np.random.default_rng(1)
    for _ in range(env.max_episode_steps):
        obs, reward, terminated, truncated, final_obs = auto.step(rng.uniform(-1, 1, (3, 3)).astype(np.float32))
        if terminated.any():
            break
    assert terminated.any() and not truncated.any()
    i = int(np.flatnonzero(terminated)[0])
    assert not np.array_equal(obs[i], final_obs[i])
    assert auto.ep_len[i] == 0 and auto.ep_len[~terminated].min() > 0
    np.testing.assert_array_equal(obs[~terminated], final_obs[~terminated])
    assert len(auto.pop_episode_returns()[i]) == 1

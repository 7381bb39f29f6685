"""TD3: population runs are exactly independent agents; the exported actor is the trained one."""

import numpy as np
import pytest

from neuromotor.training import config, run_policy, runs
from neuromotor.algos.td3 import TD3, Config
from neuromotor.envs import env_class
from neuromotor.errors import UserError
from run_checks import round_trip_mid_block_continues_exactly, seed_alone_equals_seed_inside_a_population, \
    swings_up_the_pendulum, train

SMALL = dict(batch_size=32, buffer_size=500, learning_starts=50)


def _train(seeds, steps, shards=1, cfg=None):
    return train(TD3, cfg or Config(**SMALL), seeds, steps, shards)


def test_seed_alone_equals_seed_inside_a_population():
    # 260 steps cross an episode boundary (200) and several actor/target updates
    seed_alone_equals_seed_inside_a_population(TD3, Config(**SMALL), 260)


def test_update_schedule():
    algo = _train([0], 120).local
    assert algo.critic.opt.t == 70          # one critic update per step from step 50 on
    assert algo.actor.opt.t == 35           # actor (and targets) every second step
    assert algo.replay.size == 120


def test_policy_spec_is_the_deterministic_actor():
    algo = _train([1, 2], 120)
    obs = np.random.default_rng(0).standard_normal((2, 7, 3)).astype(np.float32)
    acts = algo.act(obs)
    for k in range(2):
        spec = algo.policy_spec(k)
        assert spec.activations == ["relu", "relu", "tanh"]
        assert spec.sizes == [3, 64, 64, 1]
        np.testing.assert_allclose(spec.action_scale, [2.0])
        np.testing.assert_allclose(spec.obs_mean, 0)
        np.testing.assert_allclose(spec.obs_std, 1)
        np.testing.assert_allclose(spec.forward(obs[k]), acts[k], rtol=1e-5, atol=1e-6)
        assert np.abs(acts[k]).max() <= 2.0


def test_load_policy_spec_from_a_run_dir(tmp_path, cli):
    run_dir = tmp_path / "run"
    code, _, _ = cli("train", "pendulum", "--seeds", "3,4", "--steps", 150, "--run-dir", run_dir,
                     "--set", "batch_size=16", "--quiet")
    assert code == 0
    cfg, algo = runs.load(run_dir)
    assert cfg.seeds == [3, 4] and algo.steps == 150
    spec = run_policy.load_policy_spec(run_dir, agent=1)
    assert spec.meta["seed"] == 4 and spec.meta["env"] == "pendulum"
    obs = np.array([[1.0, 0.0, 0.5]], np.float32)
    np.testing.assert_allclose(spec.forward(obs), algo.act(np.stack([obs, obs]))[1], rtol=1e-5)


def test_config_dataclass_is_the_paper_configuration():
    c = Config()
    assert (c.actor_hidden, c.critic_hidden, c.activation) == ((64, 64), (64, 64), "relu")
    assert (c.batch_size, c.buffer_size, c.learning_starts) == (100, 10_000, 100)
    assert (c.exploration_noise, c.policy_noise, c.noise_clip) == (0.1, 0.2, 0.5)
    assert (c.gamma, c.tau, c.actor_lr, c.critic_lr, c.policy_delay) == (0.99, 0.005, 1e-3, 1e-3, 2)
    run = config.RunConfig()
    assert (run.steps, run.eval_every, run.eval_episodes) == (10_000, 1000, 10)


@pytest.mark.slow
def test_td3_swings_up_the_pendulum():
    """Two seeds of the paper configuration, 10k steps: both well past random (-1200)."""
    swings_up_the_pendulum(TD3, -300, -800)


def test_state_dict_round_trip_mid_rng_block_continues_exactly():
    round_trip_mid_block_continues_exactly(TD3, Config(**SMALL), 90)


def test_each_critic_learns_from_its_own_minibatch():
    """RLtools' sampling: critic c's update (regression and Bellman target) sees only minibatch c."""
    algo = _train([3], 60).local
    start = {k: np.array(v) for k, v in algo.state_dict().items()}
    rng = np.random.default_rng(0)
    idx = rng.integers(0, algo.replay.size, (1, 2, algo.cfg.batch_size))
    noise = rng.standard_normal((1, 2, algo.cfg.batch_size, 1)).astype(np.float32)
    other = idx.copy()
    other[:, 1] = rng.integers(0, algo.replay.size, algo.cfg.batch_size)
    critics = []
    for ix in (idx, other):
        algo.load_state_dict(start)
        algo._update_critics(algo.replay.data[0][ix[0]][None], noise)
        critics.append([layer.copy() for layer in algo.critic.layers])
    for a, b in zip(*critics):
        np.testing.assert_array_equal(a[:, 0], b[:, 0])  # critic 1: same minibatch 0
    assert not np.array_equal(critics[0][0][:, 1], critics[1][0][:, 1])  # critic 2: other minibatch


def test_warmup_actions():
    policy = _train([1], 40, cfg=Config(**SMALL, warmup_actions="policy")).local
    uniform = _train([1], 40).local
    act = policy.row.act
    assert np.ptp(policy.replay.data[0, :40, act]) < np.ptp(uniform.replay.data[0, :40, act])  # tanh policy + 0.1 noise
    with pytest.raises(UserError, match="warmup_actions"):
        TD3(Config(warmup_actions="zero"), env_class("pendulum"), [0])


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_shared_minibatch_is_one_minibatch_per_update_for_critics_and_actor(backend, monkeypatch):
    """SB3's scheme: both critics learn from one minibatch and one set of Bellman targets (so twin
    critics that start equal stay equal), and the actor from the same minibatch; RLtools' gives
    each its own. The random streams advance alike either way."""
    def after(shared, steps=10):
        algo = TD3(Config(**SMALL, shared_minibatch=shared, backend=backend), env_class("pendulum"), [3, 4])
        for _ in range(SMALL["learning_starts"]):
            algo.advance()
        for arr in (algo.critic.params, algo.critic.target):  # critic 1 := critic 0, per agent
            for layer in algo.critic.mlp.views(arr):
                layer[:, 1] = layer[:, 0]
        if algo.native:
            algo.native.load()
        for _ in range(steps):
            algo.advance()
        algo.sync_host()
        return algo

    shared, rltools = after(True), after(False)
    for layer in shared.critic.mlp.views(shared.critic.params):
        np.testing.assert_array_equal(layer[:, 0], layer[:, 1])
    assert not np.array_equal(*(rltools.critic.mlp.views(rltools.critic.params)[0][:, c] for c in (0, 1)))
    assert shared.critic.opt.t == 10 and shared.actor.opt.t == 5
    np.testing.assert_array_equal(shared._rng_states(), rltools._rng_states())
    if backend == "numpy":
        seen = {}
        critics, actor = shared._update_critics, shared._update_actor
        monkeypatch.setattr(shared, "_update_critics", lambda b, n: seen.update(critic=b.copy(), noise=n) or critics(b, n))
        monkeypatch.setattr(shared, "_update_actor", lambda b: seen.update(actor=b.copy()) or actor(b))
        shared.advance()
        P, B = 2, SMALL["batch_size"]
        assert seen["critic"].shape == (P, 1, B, shared.row.width) and seen["noise"].shape == (P, 1, B, 1)
        np.testing.assert_array_equal(seen["actor"], seen["critic"][:, 0])


def test_shared_minibatch_from_the_cli_trains_and_resumes_exactly(tmp_path, cli):
    fast = ["--set", "shared_minibatch=true", "--set", "batch_size=16", "--set", "learning_starts=50",
            "--set", "eval_episodes=1", "--set", "eval_every=100", "--quiet"]
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    assert cli("train", "pendulum", "--steps", 160, "--run-dir", straight, *fast)[0] == 0
    assert cli("train", "pendulum", "--steps", 110, "--run-dir", resumed, *fast)[0] == 0
    code, _, err = cli("train", "--resume", resumed, "--steps", 160)
    assert code == 0, err
    for run_dir in (straight, resumed):
        cfg, algo = runs.load(run_dir)
        assert cfg.algo_config.shared_minibatch is True and algo.local.cfg.shared_minibatch is True
        assert algo.steps == 160
        algo.close()
    with np.load(straight / "checkpoint.npz") as a, np.load(resumed / "checkpoint.npz") as b:
        assert a.files == b.files
        for key in a.files:
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)

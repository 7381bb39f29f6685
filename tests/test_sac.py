"""SAC: gradients against finite differences, losses against their definitions, population
agents are independent, checkpoints continue exactly, the exported policy is tanh(mean)."""

import json
import math
import shutil
import textwrap

import numpy as np
import pytest

from neuromotor.training import config, memory, run_policy, rundir, runs
from neuromotor.algos import algo_class
from neuromotor.algos.sac import SAC, Config, TanhGaussian
from neuromotor.envs import env_class
from neuromotor.errors import UserError
from neuromotor.nn import MLP
from neuromotor.nn.mlp import with_ones
from run_checks import agent_arrays, checkpoint_arrays, kill_then_resume_equals_uninterrupted, \
    round_trip_mid_block_continues_exactly, seed_alone_equals_seed_inside_a_population, swings_up_the_pendulum, train

SMALL = dict(batch_size=32, buffer_size=500, learning_starts=50)
# float64 nets for the gradient checks; the upper log-std bound clips some outputs so its zero
# gradient is checked too (initial log-stds spread around 0)
CHECK = dict(actor_hidden=(16, 16), critic_hidden=(16, 16), batch_size=8, buffer_size=200, learning_starts=1000,
             log_std_max=0.05)


def _train(seeds, steps, shards=1, cfg=None):
    return train(SAC, cfg or Config(**SMALL), seeds, steps, shards)


def _agent_arrays(algo: SAC, k: int) -> dict:
    return {**agent_arrays(algo, k), "log_alpha": algo.log_alpha[k].copy()}


def test_seed_alone_equals_seed_inside_a_population():
    # 230 steps cross an episode boundary (200) and many updates
    alone = seed_alone_equals_seed_inside_a_population(SAC, Config(**SMALL), 230, _agent_arrays)
    assert alone.log_alpha[0] != 0  # alpha has been learning


def test_update_schedule():
    algo = _train([0], 120).local
    assert algo.critic.opt.t == algo.actor.opt.t == algo.alpha_opt.t == 70  # every step from step 50 on
    assert algo.replay.size == 120


def test_warmup_actions():
    policy = _train([1], 40, cfg=Config(**SMALL, warmup_actions="policy")).local
    uniform = _train([1], 40).local
    act = policy.row.act
    # uniform in [-1, 1] vs tanh of N(mean ~ 0, std ~ 1) samples: both spread, differently
    assert not np.array_equal(policy.replay.data[0, :40, act], uniform.replay.data[0, :40, act])
    assert np.abs(policy.replay.data[0, :40, act]).max() < 1 and np.ptp(policy.replay.data[0, :40, act]) > 0.5
    with pytest.raises(UserError, match="warmup_actions"):
        SAC(Config(warmup_actions="zero"), env_class("pendulum"), [0])


@pytest.mark.parametrize("shared", [False, True])
def test_state_dict_round_trip_mid_rng_block_continues_exactly(shared):
    round_trip_mid_block_continues_exactly(SAC, Config(**SMALL, shared_minibatch=shared), 60)


def test_policy_spec_is_tanh_of_the_mean():
    algo = _train([1, 2], 80).local
    obs = np.random.default_rng(0).standard_normal((2, 7, 3)).astype(np.float32)
    acts = algo.act(obs)
    out = algo.actor.mlp.forward(algo.actor.layers, with_ones(obs))
    np.testing.assert_allclose(acts, 2 * np.tanh(out[..., :1]), rtol=1e-6)
    for k in range(2):
        spec = algo.policy_spec(k)
        assert spec.activations == ["relu", "relu", "tanh"] and spec.sizes == [3, 64, 64, 1]
        assert spec.meta["algo"] == "sac" and spec.meta["seed"] == k + 1
        np.testing.assert_array_equal([spec.action_low, spec.action_high], [[-2], [2]])
        np.testing.assert_allclose(spec.forward(obs[k]), acts[k], rtol=1e-5, atol=1e-6)


def test_policy_average_is_the_moving_average_of_the_actor_and_is_the_policy():
    algo = _train([3, 5], 0, cfg=Config(**SMALL, policy_average=300)).local
    expected = algo._actor_params().copy()
    b = math.exp(-100 / 300)
    for _ in range(4):
        for _ in range(100):
            algo.advance()
        expected = b * expected + (1 - b) * algo._actor_params()
    np.testing.assert_allclose(algo.policy_actor, expected, rtol=1e-5, atol=1e-7)
    assert np.abs(expected - algo._actor_params()).max() > 1e-3  # it lags the actor it averages
    obs = np.random.default_rng(1).standard_normal((2, 7, 3)).astype(np.float32)
    out = algo.actor.mlp.forward(algo.actor.mlp.views(expected.astype(np.float32)), with_ones(obs))
    np.testing.assert_allclose(algo.act(obs), 2 * np.tanh(out[..., :1]), rtol=1e-5, atol=1e-6)
    for k in range(2):  # evaluations, exports and checkpoints hold the average, not the actor
        np.testing.assert_allclose(algo.policy_spec(k).forward(obs[k]), algo.act(obs)[k], rtol=1e-5, atol=1e-6)
    assert set(SAC.policy_state(algo.cfg, algo.env, 2)) == {"policy_actor", "seeds", "steps"}


def test_policy_average_is_the_runs_policy_and_resumes_exactly(tmp_path):
    import neuromotor

    cfg = {**SMALL, "policy_average": 200}
    run = neuromotor.train("pendulum", "sac", steps=500, seeds=4, config=cfg, run_dir=tmp_path / "a", progress=False)
    state = np.load(run.path / rundir.CHECKPOINT)
    obs = np.random.default_rng(2).standard_normal((5, 3)).astype(np.float32)
    algo = SAC(Config(**cfg), env_class("pendulum"), [4])
    algo.load_state_dict({k: state[k] for k in algo.state_dict()})
    np.testing.assert_allclose(run.policy.forward(obs), algo.policy_spec(0).forward(obs), rtol=1e-6)
    assert not np.allclose(state["policy_actor"], state["actor"])
    half = neuromotor.train("pendulum", "sac", steps=250, seeds=4, config=cfg, run_dir=tmp_path / "b", progress=False)
    resumed = neuromotor.resume(half.path, steps=500, progress=False)
    np.testing.assert_array_equal(np.load(resumed.path / rundir.CHECKPOINT)["policy_actor"], state["policy_actor"])


def test_config_is_rltools_pendulum_sac_and_presets():
    c = Config()
    assert (c.actor_hidden, c.critic_hidden, c.activation) == ((64, 64), (64, 64), "relu")
    assert (c.batch_size, c.buffer_size, c.learning_starts, c.gamma, c.tau) == (100, 10_000, 100, 0.99, 0.005)
    assert (c.actor_lr, c.critic_lr, c.alpha_lr, c.init_alpha) == (1e-3, 1e-3, 1e-3, 1.0)
    assert (c.log_std_min, c.log_std_max) == (-20, 2)
    assert algo_class("sac") is SAC
    cfg, run = SAC.defaults("halfcheetah")
    assert (cfg.actor_hidden, cfg.batch_size, cfg.buffer_size, cfg.actor_lr) == ((256, 256), 256, 1_000_000, 3e-4)
    assert run["steps"] == 1_000_000
    assert SAC.defaults("pendulum") == SAC.defaults("Pendulum-v1") == SAC.defaults("my_envs:Robot") == (Config(), {})
    assert SAC.defaults("HalfCheetah-v5") == SAC.defaults("InvertedPendulum-v4") == (cfg, run)
    assert SAC.defaults("pendulum", "mujoco")[0] == cfg and cfg is not SAC.defaults("hopper")[0]  # copies
    with pytest.raises(UserError, match="unknown sac preset 'big'"):
        SAC.defaults("pendulum", "big")
    for bad, match in ((dict(init_alpha=0.0), "init_alpha must be"), (dict(alpha_lr=-1.0), "alpha_lr must be"),
                       (dict(log_std_min=2.0), "log_std_min .* must be below"),
                       (dict(log_std_max=float("nan")), "log_std_max must be")):
        with pytest.raises(UserError, match=match):
            config.validate(Config(**bad))
    with pytest.raises(UserError, match="log_std_min"):
        SAC(Config(log_std_min=3.0), env_class("pendulum"), [0])


def test_tanh_gaussian_log_prob_is_the_change_of_variables():
    rng = np.random.default_rng(1)
    out = rng.standard_normal((5, 4))
    eps = rng.standard_normal((5, 2))
    s = TanhGaussian(out, eps, -20, 2)
    mean, std = out[:, :2], np.exp(out[:, 2:])
    u = np.arctanh(s.action)
    np.testing.assert_allclose(u, mean + std * eps, rtol=1e-9)
    normal = -0.5 * ((u - mean) / std) ** 2 - np.log(std) - 0.5 * math.log(2 * math.pi)
    expected = (normal - np.log(1 - np.tanh(u) ** 2 + 1e-6)).sum(-1, keepdims=True)
    np.testing.assert_allclose(s.log_prob, expected, rtol=1e-9)


def _check_algo(shared=False):
    algo = SAC(Config(**CHECK, shared_minibatch=shared, backend="numpy"), env_class("pendulum"), [3, 8], dtype=np.float64)
    for _ in range(60):  # warm-up only: fills the replay, no updates
        algo.advance()
    rng = np.random.default_rng(0)
    algo.critic.target[...] += 0.05 * rng.standard_normal(algo.critic.target.shape)  # targets != online
    algo.log_alpha[...] = [0.3, -0.7]
    B = algo.cfg.batch_size
    batch = algo.replay.data[np.arange(2)[:, None, None], rng.integers(0, algo.replay.size, (2, 3, B))]
    return algo, batch, rng


def _weight_entries(net, rng, n):
    """n random indices of real weights and biases (not the constant columns) of the flat vector."""
    mask = np.zeros(net.mlp.size)
    for w, b in net.mlp.weights_and_biases(net.mlp.views(mask)):
        w[...], b[...] = 1, 1
    return rng.choice(np.flatnonzero(mask), n, replace=False)


def _finite_differences(loss, params, idx, h=1e-6):
    out = []
    for i in idx:
        keep = params[i]
        params[i] = keep + h
        up = loss()
        params[i] = keep - h
        down = loss()
        params[i] = keep
        out.append((up - down) / (2 * h))
    return np.array(out)


@pytest.mark.parametrize("minibatches", [2, 1])
def test_critic_gradient_matches_finite_differences(minibatches):
    algo, batch, rng = _check_algo(shared=minibatches == 1)
    noise = rng.standard_normal((2, minibatches, algo.cfg.batch_size, 1))
    batch = batch[:, :minibatches]
    algo._critic_loss(batch, noise)
    grad = algo.critic.grad.copy()
    idx = _weight_entries(algo.critic, rng, 40)
    fd = _finite_differences(lambda: algo._critic_loss(batch, noise, want_loss=True).sum(),
                             algo.critic.params, idx)
    assert np.abs(fd).max() > 1e-3
    np.testing.assert_allclose(grad[idx], fd, rtol=1e-5, atol=1e-8)


def test_actor_gradient_matches_finite_differences():
    """The actor loss through the reparameterised sample: alpha log pi (tanh correction
    included, log-std clip) and min(Q1, Q2) of the sampled action."""
    algo, batch, rng = _check_algo()
    noise = rng.standard_normal((2, algo.cfg.batch_size, 1))
    algo._actor_loss(batch[:, 2], noise)
    grad = algo.actor.grad.copy()
    idx = _weight_entries(algo.actor, rng, 60)
    fd = _finite_differences(lambda: algo._actor_loss(batch[:, 2], noise, want_loss=True)[0].sum(),
                             algo.actor.params, idx)
    np.testing.assert_allclose(grad[idx], fd, rtol=1e-5, atol=1e-8)
    # the log-std clip was active for some samples, and its gradient really is zero there
    out = algo.actor.mlp.forward(algo.actor.layers, batch[:, 2][..., algo.row.actor_input])
    assert 0 < (out[..., 1] > algo.cfg.log_std_max).sum() < out[..., 1].size


def test_alpha_gradient_matches_finite_differences():
    algo, batch, rng = _check_algo()
    _, log_prob = algo._actor_loss(batch[:, 2], rng.standard_normal((2, algo.cfg.batch_size, 1)))
    fd = _finite_differences(lambda: algo._alpha_loss(log_prob).sum(), algo.log_alpha, [0, 1])
    np.testing.assert_allclose(algo._alpha_grad(log_prob), fd, rtol=1e-5)


@pytest.mark.parametrize("shared", [False, True])
def test_losses_equal_their_definitions(shared):
    """Per agent, from the networks' plain forward passes: the soft Bellman critic loss and the
    actor loss, with alpha = exp(log_alpha) and log pi from the Gaussian density. With a shared
    minibatch both critics learn from minibatch 0 and its one set of next-action samples."""
    algo, batch, rng = _check_algo(shared)
    B, f = algo.cfg.batch_size, algo.row
    M = 1 if shared else 2
    noise_c = rng.standard_normal((2, M, B, 1))
    noise_a = rng.standard_normal((2, B, 1))
    critic_loss = algo._critic_loss(batch[:, :M], noise_c, want_loss=True)
    actor_loss, _ = algo._actor_loss(batch[:, 2], noise_a, want_loss=True)
    amlp, cmlp = algo.actor.mlp, algo.critic.mlp

    def sample(k, obs1, eps):
        out = amlp.forward(MLP.member(algo.actor.layers, k), obs1)
        mean, log_std = out[:, :1], np.clip(out[:, 1:], algo.cfg.log_std_min, algo.cfg.log_std_max)
        u = mean + np.exp(log_std) * eps
        logp = -0.5 * eps ** 2 - log_std - 0.5 * math.log(2 * math.pi) - np.log(1 - np.tanh(u) ** 2 + 1e-6)
        return np.tanh(u), logp

    def q(views, k, c, act, obs1):
        return cmlp.forward(MLP.member(views, (k, c)), np.concatenate([act, obs1], -1))

    for k in range(2):
        alpha = math.exp(algo.log_alpha[k])
        expected = 0.0
        for c in range(2):
            mb = batch[k, c % M]
            next1 = mb[:, f.next_actor_input]
            a2, logp2 = sample(k, next1, noise_c[k, c % M])
            v = np.minimum(q(algo.critic.target_layers, k, 0, a2, next1), q(algo.critic.target_layers, k, 1, a2, next1))
            y = mb[:, f.reward] + 0.99 * mb[:, f.not_done] * (v - alpha * logp2)
            expected += 0.5 * np.mean((q(algo.critic.layers, k, c, mb[:, f.act], mb[:, f.actor_input]) - y) ** 2)
        assert critic_loss[k] == pytest.approx(expected, rel=1e-10)
        obs1 = batch[k, 2][:, f.actor_input]
        a, logp = sample(k, obs1, noise_a[k])
        qmin = np.minimum(q(algo.critic.layers, k, 0, a, obs1), q(algo.critic.layers, k, 1, a, obs1))
        assert actor_loss[k] == pytest.approx(np.mean(alpha * logp - qmin), rel=1e-10)


def test_shared_minibatch_is_one_minibatch_per_update_for_critics_and_actor(monkeypatch):
    """SB3's loop: one gradient step per env step, whose critics and actor all learn from one
    minibatch (so twin critics that start equal stay equal); RLtools' gives each its own."""
    def after_first_update(shared):
        algo = SAC(Config(**SMALL, shared_minibatch=shared, backend="numpy"), env_class("pendulum"), [3, 4])
        for _ in range(SMALL["learning_starts"]):
            algo.advance()
        for arr in (algo.critic.params, algo.critic.target):  # critic 1 := critic 0, per agent
            for layer in algo.critic.mlp.views(arr):
                layer[:, 1] = layer[:, 0]
        seen = {}
        critic_loss, actor_loss = algo._critic_loss, algo._actor_loss
        monkeypatch.setattr(algo, "_critic_loss", lambda b, n: seen.update(critic=b.copy(), noise=n) or critic_loss(b, n))
        monkeypatch.setattr(algo, "_actor_loss", lambda b, n: seen.update(actor=b.copy()) or actor_loss(b, n))
        algo.advance()
        return algo, seen

    algo, seen = after_first_update(shared=True)
    P, B = 2, SMALL["batch_size"]
    assert seen["critic"].shape == (P, 1, B, algo.row.width) and seen["noise"].shape == (P, 1, B, 1)
    np.testing.assert_array_equal(seen["actor"], seen["critic"][:, 0])
    for layer in algo.critic.mlp.views(algo.critic.params):
        np.testing.assert_array_equal(layer[:, 0], layer[:, 1])
    assert algo.critic.opt.t == algo.actor.opt.t == algo.alpha_opt.t == 1
    rltools, seen = after_first_update(shared=False)
    assert seen["critic"].shape == (P, 2, B, rltools.row.width)
    assert not np.array_equal(seen["critic"][:, 0], seen["critic"][:, 1])
    assert not np.array_equal(rltools.critic.mlp.views(rltools.critic.params)[0][:, 0],
                              rltools.critic.mlp.views(rltools.critic.params)[0][:, 1])
    # the random streams advance alike: the same warm-up, the same env steps
    np.testing.assert_array_equal(algo.replay.data, rltools.replay.data)
    np.testing.assert_array_equal(algo._rng_states(), rltools._rng_states())
    # an update per env step from learning_starts on, as without it
    shared = _train([0], 120, cfg=Config(**SMALL, shared_minibatch=True)).local
    assert shared.critic.opt.t == shared.actor.opt.t == shared.alpha_opt.t == 70
    with pytest.raises(UserError, match="shared_minibatch must be true or false"):
        config.validate(Config(shared_minibatch=1))


def test_scalars_are_the_last_update_losses():
    algo, batch, rng = _check_algo()
    assert set(algo.scalars()) == {"lr/actor", "lr/critic", "lr/alpha", "entropy/alpha"}  # before any update
    B = algo.cfg.batch_size
    critic = algo._critic_loss(batch[:, :2], rng.standard_normal((2, 2, B, 1)), want_loss=True)
    actor, log_prob = algo._actor_loss(batch[:, 2], rng.standard_normal((2, B, 1)), want_loss=True)
    algo._last_log_alpha = algo.log_alpha.copy()
    s = algo.scalars()
    np.testing.assert_allclose(s["loss/critic"], critic, rtol=1e-12)
    np.testing.assert_allclose(s["loss/actor"], actor, rtol=1e-12)
    np.testing.assert_allclose(s["loss/alpha"], algo._alpha_loss(log_prob), rtol=1e-12)
    np.testing.assert_allclose(s["policy/entropy"], -log_prob.mean(axis=(1, 2)), rtol=1e-12)
    np.testing.assert_allclose(s["entropy/alpha"], np.exp([0.3, -0.7]), rtol=1e-12)
    trained = _train([0, 1], 60, cfg=Config(**SMALL))
    s = trained.scalars()
    assert all(np.isfinite(v).all() and v.shape == (2,) for v in s.values()) and len(s) == 8
    np.testing.assert_allclose(s["lr/alpha"], 1e-3)


@pytest.mark.slow
def test_sac_swings_up_the_pendulum():
    """Two seeds of the default configuration, 10k steps: both near the RLtools result (about -150)."""
    swings_up_the_pendulum(SAC, -250, -400)


FAST = ["--algo", "sac", "--set", "batch_size=16", "--set", "eval_episodes=2", "--quiet"]


def test_cli_trains_exports_and_refuses_bad_settings(tmp_path, cli, runs_root):
    run_dir = tmp_path / "r"
    code, out, err = cli("train", "pendulum", "--steps", 150, "--run-dir", run_dir, "--seeds", "3,4", "--json", *FAST)
    assert code == 0, err
    cfg = json.loads((run_dir / "config.json").read_text())
    assert cfg["algo"] == "sac" and cfg["algo_config"]["alpha_lr"] == 1e-3
    spec = run_policy.load_policy_spec(run_dir, agent=1)
    _, algo = runs.load(run_dir)
    obs = np.array([[1.0, 0.0, 0.5]], np.float32)
    np.testing.assert_allclose(spec.forward(obs), algo.act(np.stack([obs, obs]))[1], rtol=1e-5)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir / "agent1_seed4"))
    events.Reload()
    assert {"entropy/alpha", "loss/critic", "loss/actor", "loss/alpha", "policy/entropy",
            "lr/alpha"} <= set(events.Tags()["scalars"])
    assert events.Scalars("entropy/alpha")[-1].value == pytest.approx(algo.scalars()["entropy/alpha"][1], rel=1e-6)
    nmp = tmp_path / "p.nmp"
    assert cli("export", run_dir, "-o", nmp)[0] == 0 and nmp.stat().st_size > 0
    for args, message in ((["--set", "init_alpha=0"], "init_alpha must be"),
                          (["--set", "log_std_min=5", "--set", "log_std_max=1"], "log_std_min (5.0) must be below"),
                          (["--preset", "huge"], "unknown sac preset 'huge'")):
        code, _, err = cli("train", "pendulum", *FAST, *args)
        assert code == 2 and message in err and err.count("\n") == 1
    assert not any(runs_root.iterdir())


def test_memory_estimate_counts_what_sac_allocates(cli, runs_root):
    parts = memory.estimate(SAC, Config(), config.RunConfig(), env_class("pendulum"), 3)
    algo = SAC(Config(), env_class("pendulum"), [0, 1, 2])
    assert parts["replay buffers"] == algo.replay.data.nbytes
    nets = [algo.actor.params, algo.actor.grad, algo.actor.opt.m, algo.actor.opt.v, algo.critic.params,
            algo.critic.target, algo.critic.grad, algo.critic.opt.m, algo.critic.opt.v, algo.critic._tmp]
    assert 0.95 * sum(a.nbytes for a in nets) < parts["networks"] <= sum(a.nbytes for a in nets)  # a lower bound
    for cfg in (Config(), Config(update_every=4)):  # a block draws update numbers for its updates only
        algo = SAC(cfg, env_class("pendulum"), [0, 1, 2])
        algo.advance()
        drawn = memory.estimate(SAC, cfg, config.RunConfig(), env_class("pendulum"), 3)["pre-drawn random numbers"]
        assert drawn == sum(x.nbytes for x in algo._block)
    code, _, err = cli("train", "pendulum", "--algo", "sac", "--preset", "mujoco", "--seeds", "0-999", "--quiet")
    assert code == 2 and "GB" in err and "replay buffers" in err and err.count("\n") == 1
    assert not any(runs_root.iterdir())


@pytest.mark.slow
def test_sigkill_then_resume_equals_uninterrupted(tmp_path, cli, neuromotor_process):
    # enough steps after the first checkpoint that the kill lands mid-run however fast training is
    args = ["--seed", 7, "--steps", 3000, "--set", "checkpoint_every=200", "--set", "eval_every=1000", *FAST]
    straight, killed, a = kill_then_resume_equals_uninterrupted(tmp_path, cli, neuromotor_process, args, 3000, 200)
    assert "log_alpha" in a
    assert [r["eval_return_mean"] for r in rundir.read_metrics(straight)] == \
        [r["eval_return_mean"] for r in rundir.read_metrics(killed)]


# Pendulum-v1 with its action in float64: the same arithmetic as the built-in pendulum
TWIN = textwrap.dedent("""
    import numpy as np
    from gymnasium.envs.classic_control.pendulum import PendulumEnv


    class Pendulum64(PendulumEnv):
        def step(self, u):
            return super().step(np.asarray(u, np.float64))
""")


def test_gymnasium_twin_trains_to_the_built_in_numbers_and_resumes(cli, tmp_path, monkeypatch):
    pytest.importorskip("gymnasium")
    module = f"sac_twin_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(TWIN)
    monkeypatch.chdir(tmp_path)
    args = ["--steps", 150, "--seeds", "0,7", "--set", "checkpoint_every=150", *FAST]
    assert cli("train", "pendulum", "--run-dir", tmp_path / "builtin", *args)[0] == 0
    code, _, err = cli("train", f"{module}:Pendulum64", "--env-kwargs", '{"max_episode_steps": 200}',
                       "--run-dir", tmp_path / "twin", *args)
    assert code == 0, err
    a, b = checkpoint_arrays(tmp_path / "builtin"), checkpoint_arrays(tmp_path / "twin")
    for key in a:
        if key.rpartition(".")[2] != "env_state" and not key.startswith("run."):
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    # a gymnasium env cannot be snapshotted: the resumed run restarts the episodes in flight
    shutil.copytree(tmp_path / "twin", tmp_path / "resumed")
    code, _, err = cli("train", "--resume", tmp_path / "resumed", "--steps", 250, "--quiet")
    assert code == 0, err
    def ep_len(run_dir):
        return [int(n) for k, v in sorted(checkpoint_arrays(run_dir).items()) if k.rpartition(".")[2] == "ep_len" for n in v]
    assert ep_len(tmp_path / "twin") == [150, 150]
    assert ep_len(tmp_path / "resumed") == [100, 100]  # restarted at 150, not at 200


@pytest.mark.parametrize("shards", [1, 2])
def test_a_population_starts_from_one_trained_agent(shards):
    cfg = Config(**SMALL, policy_average=300)
    base = _train([9], 300, cfg=cfg)
    state = base.state_dict()
    pop = _train([1, 2, 3], 0, shards, cfg=cfg)
    obs = np.random.default_rng(4).standard_normal((7, 3)).astype(np.float32)
    want = base.policy_spec(0).forward(obs)
    assert np.abs(pop.policy_spec(0).forward(obs) - want).max() > 1e-3  # its own initial networks
    pop.start_from(state)
    for k in range(3):
        np.testing.assert_array_equal(pop.policy_spec(k).forward(obs), want)
    if shards == 1:
        local = pop.local
        np.testing.assert_array_equal(local.log_alpha, np.full(3, state["log_alpha"][0]))
        for key in ("critic", "critic_target", "actor"):
            mine = local.critic.mlp.views(getattr(local.critic, "target" if key == "critic_target" else "params")) \
                if key != "actor" else local.actor.layers
            one = MLP(local.critic.mlp.sizes if key != "actor" else local.actor.mlp.sizes,
                      local.critic.mlp.activations if key != "actor" else local.actor.mlp.activations,
                      (1, 2) if key != "actor" else (1,))
            for m, t in zip(mine, one.views(state[key])):
                for k in range(3):
                    np.testing.assert_array_equal(m[k], t[0])
        assert local.replay.size == 0 and local.steps == 0  # its own replay and streams
    for _ in range(150):
        pop.advance()
    assert np.abs(pop.policy_spec(0).forward(obs) - pop.policy_spec(1).forward(obs)).max() > 0  # own seeds, own ways
    with pytest.raises(UserError, match="one-agent run"):
        pop.start_from(pop.state_dict() if shards == 1 else _train([1, 2], 0, cfg=cfg).state_dict())
    pop.close()
    base.close()

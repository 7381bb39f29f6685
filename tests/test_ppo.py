"""PPO: its gradient, the adaptive learning rate, populations, checkpoints, export, the CLI."""

import json
import sys
from dataclasses import replace

import numpy as np
import pytest

from neuromotor.algos.ppo import PPO, Config
from neuromotor.cli import main
from neuromotor.envs import env_class
from neuromotor.nn.mlp import with_ones

TINY = Config(actor_hidden=(8,), critic_hidden=(8,), num_envs=4, num_steps=50, minibatch_size=50, epochs=2)


def pendulum_ppo(cfg=TINY, seeds=(0,)):
    return PPO(cfg, env_class("pendulum"), list(seeds))


def test_policy_gradient_matches_finite_differences():
    algo = pendulum_ppo(seeds=(0, 1))
    rng = np.random.default_rng(0)
    P, B, a = 2, 64, algo.act_dim
    x = with_ones(rng.standard_normal((P, B, algo.obs_dim), np.float32))
    act = rng.standard_normal((P, B, a), np.float32)
    adv = rng.standard_normal((P, B)).astype(np.float32)
    mean_old = algo.actor.forward(algo.actor_v, x)
    log_std_old = algo.log_std.copy()
    logp_now = -0.5 * np.square((act - mean_old) / np.exp(log_std_old)).sum(-1) - log_std_old.sum(-1) - 0.5 * a * np.log(2 * np.pi)
    # Old log-probs off by up to +-0.5: some ratios leave [0.8, 1.2], so both branches of the clip are used.
    logp_old = (logp_now + rng.uniform(-0.5, 0.5, (P, B))).astype(np.float32)
    algo.cfg = replace(algo.cfg, ent_coef=0.01)

    def loss():
        return algo._policy_grad(x, act, adv, logp_old, mean_old, log_std_old)[0].sum()

    loss()
    grad = algo.actor_g.copy()
    n = algo.actor.size
    # Real parameters only: the augmented matrices' constant column feeds the next layer's 1.
    is_param = np.zeros(n, bool)
    for w, b in algo.actor.weights_and_biases(algo.actor.views(is_param)):
        w[...] = b[...] = True
    picks = list(rng.choice(np.flatnonzero(is_param), 40, replace=False)) + list(range(n, algo.actor_p.size))
    eps = np.float32(1e-3)  # small enough that no ratio crosses a clip boundary
    for i in picks:
        saved = algo.actor_p[i]
        algo.actor_p[i] = saved + eps
        up = loss()
        algo.actor_p[i] = saved - eps
        down = loss()
        algo.actor_p[i] = saved
        np.testing.assert_allclose((up - down) / (2 * eps), grad[i], rtol=0.02, atol=2e-4, err_msg=f"param {i}")


def test_adaptive_lr_is_the_papers_bang_bang_rule():
    updates = TINY.epochs * TINY.num_envs * TINY.num_steps // TINY.minibatch_size  # minibatch steps per iteration
    # KL never above 2 * target: the lr grows by 1.5 per minibatch until clamped at lr_max.
    algo = pendulum_ppo(replace(TINY, target_kl=1e9, actor_lr=1e-3))
    algo.advance()
    assert algo.lr[0] == pytest.approx(min(1e-3 * 1.5 ** updates, 1e-2))
    assert algo.lr[0] == pytest.approx(1e-2)  # the clamp was reached (updates = 8)
    # A tiny target: the first minibatch has KL = 0 (< target / 2, grow), every later one shrinks it.
    algo = pendulum_ppo(replace(TINY, target_kl=1e-12, actor_lr=1e-3))
    algo.advance()
    assert algo.lr[0] == pytest.approx(1e-3 * 1.5 / 1.5 ** (updates - 1))
    # And it is off when asked.
    algo = pendulum_ppo(replace(TINY, adaptive_lr=False))
    algo.advance()
    assert algo.lr[0] == TINY.actor_lr and algo.actor_opt.lr == TINY.actor_lr


def test_population_member_equals_agent_trained_alone():
    pop, alone = pendulum_ppo(seeds=(5, 7)), pendulum_ppo(seeds=(7,))
    for _ in range(2):
        pop.advance()
        alone.advance()
    np.testing.assert_allclose(pop.lr[1], alone.lr[0])
    for a1, a2 in zip(pop.actor.member(pop.actor_v, 1), alone.actor.member(alone.actor_v, 0)):
        np.testing.assert_allclose(a1, a2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(pop.log_std[1], alone.log_std[0], rtol=1e-5)
    np.testing.assert_allclose(pop.obs_mean[1], alone.obs_mean[0])


@pytest.mark.parametrize("hidden", [((8,), (8,)), ((8,), (6,))])
def test_rollout_acts_and_values_as_the_networks_alone_do(hidden):
    """With one action and equal hidden layers the rollout runs actor and critic stacked; its
    means and values are bit for bit what each network computes by itself."""
    cfg = replace(TINY, actor_hidden=hidden[0], critic_hidden=hidden[1])
    algo = pendulum_ppo(replace(cfg, num_steps=25), seeds=(1, 2))
    algo.actor_p[: algo.actor.size] += np.float32(0.3)  # weights away from their init, actor != critic
    assert (algo._joint is not None) == (hidden[0] == hidden[1])
    algo._rollout()
    for t in range(algo.T):
        x = algo.b_obs[:, t]
        np.testing.assert_array_equal(algo.b_mean[:, t], algo.actor.forward(algo.actor_v, x))
        np.testing.assert_array_equal(algo.b_val[:, t], algo.critic.forward(algo.critic_v, x)[..., 0])


@pytest.mark.parametrize("env", ["pendulum", "ant"])
def test_checkpoint_continues_bit_exactly(env):
    if env == "ant":
        pytest.importorskip("mujoco")
    cfg = replace(TINY, num_steps=16, minibatch_size=32)
    a = PPO(cfg, env_class(env), [3])
    a.advance()
    state = {k: np.copy(v) for k, v in a.state_dict().items()}
    b = PPO(cfg, env_class(env), [3])
    b.load_state_dict(state)
    a.advance()
    b.advance()
    for k, v in a.state_dict().items():
        np.testing.assert_array_equal(v, b.state_dict()[k], err_msg=k)


def test_ant_policy_exports_as_27_256_256_8():
    pytest.importorskip("mujoco")
    algo = PPO(replace(Config(), num_envs=8, num_steps=16, minibatch_size=64, epochs=1), env_class("ant"), [0])
    algo.advance()
    spec = algo.policy_spec(0)
    assert spec.sizes == [27, 256, 256, 8]
    assert spec.activations == ["relu", "relu", "identity"]
    assert np.all(spec.action_scale == 1) and np.all(spec.action_offset == 0)
    np.testing.assert_allclose(spec.obs_mean, algo.obs_mean[0], rtol=1e-6)  # the running statistics
    assert not np.allclose(spec.obs_std, 1)
    obs = algo.obs[0]
    mean = algo.actor.forward(algo.actor_v, algo._normalize(algo.obs))[0]
    np.testing.assert_allclose(spec.forward(obs), mean, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(algo.act(algo.obs)[0], np.clip(mean, -1, 1), rtol=1e-4, atol=1e-5)


def test_train_pendulum_cli_learns_and_resumes(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["train", "pendulum", "--algo", "ppo", "--steps", "25600", "--run-dir", str(run),
                 "--set", "eval_every=12800", "--quiet", "--json"]) == 0
    first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert first["steps"] == 25600  # 8 iterations of 16 envs x 200 steps
    assert main(["train", "--resume", str(run), "--steps", "48000", "--quiet", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["steps"] == 48000
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [0, 12800, 25600, 38400, 48000]
    # The untrained policy scores about -1200; PPO's deterministic policy is far better after 48k steps.
    assert summary["eval_return_mean"] > metrics[0]["eval_return_mean"] + 300
    assert json.loads((run / "config.json").read_text())["algo_config"]["num_envs"] == 16  # pendulum's named config


@pytest.mark.parametrize("argv, message", [
    (["train", "walker", "--algo", "ppo"], "unknown environment"),
    (["train", "ant", "--algo", "ppo", "--threads", "999"], "out of range"),
    (["train", "ant", "--algo", "ppo", "--threads", "0"], "out of range"),
    (["train", "pendulum", "--algo", "ppo", "--envs", "3"], "multiple of minibatch_size"),
    (["train", "pendulum", "--algo", "ppo", "--preset", "ant-papr"], "unknown ppo preset 'ant-papr'"),
    (["train", "pendulum", "--algo", "td3", "--preset", "pendulum"], "td3 has no named presets"),
])
def test_bad_input_is_a_clean_error(argv, message, tmp_path, capsys):
    assert main(argv + ["--run-dir", str(tmp_path / "r")]) == 2
    assert message in capsys.readouterr().err


def test_preset_selects_a_named_config(tmp_path):
    run = tmp_path / "r"
    # ant-paper on pendulum: the schedule's 64 envs x 64 steps, one iteration only.
    assert main(["train", "pendulum", "--algo", "ppo", "--preset", "ant-paper", "--steps", "4096",
                 "--set", "eval_episodes=1", "--run-dir", str(run), "--quiet"]) == 0
    algo_config = json.loads((run / "config.json").read_text())["algo_config"]
    assert (algo_config["num_envs"], algo_config["num_steps"]) == (64, 64)
    assert list(algo_config["actor_hidden"]) == [256, 256]


def test_missing_mujoco_says_what_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "mujoco", None)  # what `import mujoco` sees when it is not installed
    assert main(["train", "ant", "--algo", "ppo", "--run-dir", str(tmp_path / "r")]) == 2
    assert "pip install 'neuromotor[mujoco]'" in capsys.readouterr().err


def test_gymnasium_evaluation_equals_ours_on_the_same_initial_states():
    pytest.importorskip("mujoco")
    from neuromotor.envs.mujoco_vec import AntVec, gymnasium_returns

    algo = PPO(replace(Config(), num_envs=8, num_steps=16, minibatch_size=64, epochs=1), AntVec, [0])
    algo.advance()
    gym_returns = gymnasium_returns(AntVec, algo.act, 1, 2, seed=7)
    # The same episodes in neuromotor's env: reset(seed=s) in gymnasium == default_rng(s) here.
    env = AntVec(2)
    obs = env.reset([np.random.default_rng(7), np.random.default_rng(8)])
    ours, alive = np.zeros(2), np.ones(2, bool)
    for _ in range(env.max_episode_steps):
        obs, reward, terminated = env.step(algo.act(obs[None])[0])
        ours += np.where(alive, reward, 0)
        alive &= ~terminated
    np.testing.assert_allclose(gym_returns[0], ours, rtol=1e-5)


def test_eval_gymnasium_cli(tmp_path, capsys):
    pytest.importorskip("mujoco")
    run = tmp_path / "ant"
    assert main(["train", "ant", "--algo", "ppo", "--steps", "256", "--run-dir", str(run), "--quiet",
                 "--set", "num_envs=8", "--set", "num_steps=16", "--set", "minibatch_size=64",
                 "--set", "eval_episodes=1", "--threads", "1"]) == 0
    capsys.readouterr()
    assert main(["eval", str(run), "--gymnasium", "--episodes", "2", "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["episodes"] == 2 and np.isfinite(result["eval_return_mean"])
    # An untrained Ant mostly stands: about 1 per step for 1000 steps, minus small costs.
    assert 500 < result["eval_return_mean"] < 1100


@pytest.mark.device
def test_exported_ant_policy_runs_on_unix_micropython(tmp_path, capsys):
    """A trained 27->256->256->8 PPO policy, observation normalisation included, on the device runtime."""
    import os
    import subprocess
    from pathlib import Path

    from neuromotor.training import run_policy, runs
    from neuromotor.paths import cache_dir

    pytest.importorskip("mujoco")
    binary = Path(os.environ.get("NEUROMOTOR_MICROPYTHON") or cache_dir() / "bin" / "micropython")
    if not binary.exists():
        pytest.skip(f"unix MicroPython not built ({binary} missing): run `make firmware BOARD=unix`")
    run = tmp_path / "ant"
    assert main(["train", "ant", "--algo", "ppo", "--steps", "1024", "--run-dir", str(run), "--quiet",
                 "--set", "num_envs=16", "--set", "num_steps=64", "--set", "minibatch_size=512",
                 "--set", "eval_episodes=1", "--threads", "1"]) == 0
    assert main(["export", str(run), "-o", str(tmp_path / "ant.nmp")]) == 0
    capsys.readouterr()
    spec = run_policy.load_policy_spec(run)
    assert spec.sizes == [27, 256, 256, 8] and not np.allclose(spec.obs_std, 1)
    obs = np.concatenate([runs.load(run)[1].local.obs[0], np.random.default_rng(0).normal(0, 2, (4, 27))])
    script = (f"from neuromotor_rt import Policy\nobs = {obs.astype(np.float32).tolist()!r}\n"
              "for be in ('native', 'python'):\n"
              f"    p = Policy.load({str(tmp_path / 'ant.nmp')!r}, backend=be)\n"
              "    for o in obs:\n        print(be, ' '.join(repr(v) for v in p(o)))\n")
    proc = subprocess.run([str(binary), "-X", "heapsize=64M", "-c", script], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split("\n")
    for backend in ("native", "python"):
        got = np.array([[float(v) for v in line.split()[1:]] for line in lines if line.startswith(backend + " ")])
        np.testing.assert_allclose(got, spec.forward(obs), rtol=1e-5, atol=1e-5, err_msg=backend)


def test_defaults_follow_the_kind_of_env():
    """MuJoCo tasks, built in or gymnasium's, get the paper's Ant schedule; every other
    env (Pendulum-v1, a user's module:attr) the small pendulum one, not 10M steps."""
    mujoco = PPO.defaults("ant")
    small = PPO.defaults("pendulum")
    assert mujoco != small
    for name in ("halfcheetah", "HalfCheetah-v5", "InvertedPendulum-v5"):
        assert PPO.defaults(name) == mujoco
    for name in ("Pendulum-v1", "MountainCarContinuous-v0", "my_envs:Robot"):
        assert PPO.defaults(name) == small

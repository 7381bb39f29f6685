"""Recurrent SAC (neuromotor.algos.sac_gru): agents independent of their population, checkpoints
that continue bit-exactly (also through a killed and resumed `train`), the actor's gradient
against finite differences, and a run's policy that acts as its deterministic actor did, on the
pendulum that hides its velocity."""

import numpy as np
import pytest

from neuromotor.algos.sac_gru import Config, RecurrentSAC
from neuromotor.nn.recurrent import RecurrentNet

from run_checks import kill_then_resume_equals_uninterrupted, round_trip_mid_block_continues_exactly, \
    seed_alone_equals_seed_inside_a_population
from recurrent_setup import HIDDEN_VELOCITY, SMALL, blind as _blind


def _arrays(algo, k):
    out = {name: a[k].copy() for name, a in algo._arrays().items()
           if name.startswith(("actor", "critic", "replay", "log_alpha", "alpha"))}
    out["acting_state"], out["critic_acting_state"] = algo.h[k].copy(), algo.hc[k].copy()
    out["actor0"] = out.pop("actor")  # the name the population check compares agents by
    return out


def test_seed_alone_equals_seed_inside_a_population():
    alone = seed_alone_equals_seed_inside_a_population(RecurrentSAC, Config(**SMALL), 120, _arrays)
    assert alone.critic_opt.t == alone.actor_opt.t == alone.alpha_opt.t == 120 - 40 + 1
    assert alone.log_alpha[0] != 0  # the temperature learned


def test_round_trip_continues_exactly():
    round_trip_mid_block_continues_exactly(RecurrentSAC, Config(**SMALL), 60)


def test_the_runs_policy_is_the_averaged_actors_tanh_mean():
    algo = RecurrentSAC(Config(**SMALL), _blind, [3])
    for _ in range(80):
        algo.advance()
    spec = algo.policy_spec(0)
    assert spec.recurrent and spec.sizes == [2, 8, 4, 1] and spec.meta["algo"] == "sac-gru"
    env = _blind(2)
    obs = env.reset([np.random.default_rng(1)] * 2)
    algo.begin_episodes(2)
    state = np.tile(spec.initial_state(), (2, 1))
    h = np.repeat(algo.actor_target_p["h0"][:, None], 2, axis=1)
    first = None
    for t in range(30):
        ours = algo.act(obs[None])[0]
        theirs, state = spec.step(obs, state)
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
        mean_log_std, h = algo._actor_step(obs[None], h, algo.actor_target_p)
        np.testing.assert_array_equal(ours, np.tanh(mean_log_std[0, :, :1]) * algo.act_scale)
        first = ours if first is None else first
        obs, _, _ = env.step(ours)
    # evaluation starts every episode from the initial state: the first actions come back
    algo.begin_episodes(2)
    np.testing.assert_array_equal(algo.act(env.reset([np.random.default_rng(1)] * 2)[None])[0], first)


def test_the_actors_gradient_matches_finite_differences_in_float64():
    cfg = Config(**SMALL)
    algo = RecurrentSAC(cfg, _blind, [7])
    f64 = {}
    for name in ("actor", "critic"):  # the same networks in float64
        net = getattr(algo, name)
        twin = RecurrentNet(net.n_in, net.dense, net.hidden, net.head, None, pop=net.pop, dtype=np.float64)
        twin.params[...] = net.params
        f64[name] = twin
    algo.actor, algo.critic = f64["actor"], f64["critic"]
    algo.log_alpha = np.array([np.log(0.3)])
    rng = np.random.default_rng(0)
    L, B, T = cfg.sequence_length, cfg.batch_size, cfg.sequence_length - cfg.burn_in
    obs = rng.normal(size=(L, 1, B, 2))
    resets = np.zeros((L, 1, B), bool)
    resets[3, 0, 1] = True
    h_critic = rng.normal(size=(1, 2, T * B, cfg.hidden)) * 0.5
    noise = rng.normal(size=(1, T * B, 1))

    def loss():
        out, _, cache = algo.actor.forward(obs, None, resets)
        value, _, d_out = algo._actor_loss(obs, out, h_critic, noise)
        return value[0], algo.actor.backward(cache, d_out)[0]

    _, grad = loss()
    params, checked = algo.actor.params[0], 0
    for name, view in algo.actor.views(np.arange(algo.actor.size)[None]).items():
        for i in view[0].reshape(-1)[:: max(1, view[0].size // 3)]:  # a few of every array, log-std rows included
            saved, step = params[i], 1e-6
            params[i] = saved + step
            up = loss()[0]
            params[i] = saved - step
            down = loss()[0]
            params[i] = saved
            np.testing.assert_allclose(grad[i], (up - down) / (2 * step), rtol=1e-4, atol=1e-8, err_msg=f"{name}[{i}]")
            checked += grad[i] != 0
    assert checked > 10


@pytest.mark.parametrize("setting, message", [
    ("log_std_min=3", "log_std_min (3.0) must be below log_std_max (2.0)"),
    ("burn_in=16", "burn_in (16) must be less than sequence_length (10)"),
])
def test_bad_settings_are_one_line_errors(cli, tmp_path, setting, message):
    code, _, err = cli("train", "pendulum", "--algo", "sac-gru", "--set", setting, "--run-dir", tmp_path / "r")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_a_killed_run_resumes_to_the_uninterrupted_ones_numbers(tmp_path, cli, neuromotor_process):
    args = ["--algo", "sac-gru", "--env-kwargs", HIDDEN_VELOCITY, "--seeds", "0-1", "--shards", "1", "--steps", "900",
            *[f"--set={k}={v}" for k, v in SMALL.items()], "--set", "checkpoint_every=300", "--set", "eval_every=300"]
    straight, _, arrays = kill_then_resume_equals_uninterrupted(tmp_path, cli, neuromotor_process, args, 900, 300)
    assert arrays["log_alpha"].shape == (2,) and int(arrays["alpha_opt_t"]) == 900 - 40 + 1
    code, out, err = cli("export", straight, "-o", tmp_path / "p.nmp")
    assert code == 0, err
    assert "2 -> 8 -> 4 -> 1, relu, gru, tanh" in out

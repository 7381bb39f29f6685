"""Recurrent TD3 (neuromotor.algos.td3_gru): sequence replay, agents independent of their
population, checkpoints that continue bit-exactly (also through a killed and resumed `train`),
and a run's policy that acts as its actor did, on the pendulum that hides its velocity."""

import json

import numpy as np
import pytest

from neuromotor.algos.sac_gru import RecurrentSAC
from neuromotor.algos.td3_gru import Config, RecurrentTD3, SequenceReplay
from neuromotor.policy.policy_file import read_policy
from neuromotor.training.evaluation import Evaluator

from run_checks import kill_then_resume_equals_uninterrupted, round_trip_mid_block_continues_exactly, \
    seed_alone_equals_seed_inside_a_population
from recurrent_setup import HIDDEN_VELOCITY, SMALL, blind as _blind


def _arrays(algo, k):
    out = {name: a[k].copy() for name, a in algo._arrays().items() if name.startswith(("actor", "critic", "replay"))}
    out["acting_state"], out["critic_acting_state"] = algo.h[k].copy(), algo.hc[k].copy()
    out["actor0"] = out.pop("actor")  # the name the population check compares agents by
    return out


def test_windows_are_consecutive_steps_from_the_oldest_with_episode_starts():
    replay = SequenceReplay(2, 8, obs_dim=1, act_dim=1, hidden=3)
    for i in range(11):  # wraps: the ring holds steps 3..10, oldest at position 3
        replay.store(np.full((2, 1), i), np.zeros((2, 1)), np.zeros(2), np.zeros(2, bool), np.full((2, 1), i + 1),
                     np.array([i in (3, 6), False]), np.full((2, 3), 10 * i), np.full((2, 2, 3), [[i], [-i]]))
    w = replay.windows(np.array([[0, 3], [2, 4]]), 4)
    assert w["obs"].shape == (4, 2, 2, 1)
    np.testing.assert_array_equal(w["obs"][:, 0, 0, 0], [3, 4, 5, 6])
    np.testing.assert_array_equal(w["obs"][:, 1, 1, 0], [7, 8, 9, 10])
    np.testing.assert_array_equal(w["next_obs"][:, 0, 1, 0], [7, 8, 9, 10])
    np.testing.assert_array_equal(w["first"][:, 0, 0], [True, False, False, True])  # agent 0's episodes
    np.testing.assert_array_equal(w["first"][:, 1, 0], [False, False, False, False])
    # the states at each window's first step: actor (P, B, H), critics (P, 2, B, H)
    np.testing.assert_array_equal(w["actor_state"][:, :, 0], [[30, 60], [50, 70]])
    assert w["critic_state"].shape == (2, 2, 2, 3)
    np.testing.assert_array_equal(w["critic_state"][1, :, 1, 0], [7, -7])


def test_seed_alone_equals_seed_inside_a_population():
    alone = seed_alone_equals_seed_inside_a_population(RecurrentTD3, Config(**SMALL), 120, _arrays)
    assert alone.critic_opt.t > 0 and alone.actor_opt.t > 0


def test_round_trip_continues_exactly():
    round_trip_mid_block_continues_exactly(RecurrentTD3, Config(**SMALL), 60)


def test_the_runs_policy_acts_as_the_actor_did():
    algo = RecurrentTD3(Config(**SMALL), _blind, [3])
    for _ in range(80):
        algo.advance()
    spec = algo.policy_spec(0)
    assert spec.recurrent and spec.sizes == [2, 8, 4, 1]
    env = _blind(2)
    obs = env.reset([np.random.default_rng(1)] * 2)
    algo.begin_episodes(2)
    state = np.tile(spec.initial_state(), (2, 1))
    first = None
    for t in range(30):
        ours = algo.act(obs[None])[0]
        theirs, state = spec.step(obs, state)
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
        first = ours if first is None else first
        obs, _, _ = env.step(ours)
    # evaluation starts every episode from the initial state: the first actions come back
    algo.begin_episodes(2)
    np.testing.assert_array_equal(algo.act(env.reset([np.random.default_rng(1)] * 2)[None])[0], first)


@pytest.mark.parametrize("algo_cls", [RecurrentTD3, RecurrentSAC])
def test_evaluation_restarts_the_state_of_every_episode(algo_cls):
    algo = algo_cls(algo_cls.Config(**SMALL), _blind, [3, 4])
    evaluator = Evaluator(_blind, [3, 4], 3)
    a = evaluator.run(algo, 0)
    algo.act(np.ones((2, 3, 2), np.float32))  # a state left over from elsewhere, for as many envs
    np.testing.assert_array_equal(evaluator.run(algo, 0), a)


def test_sequence_settings_are_checked(cli, tmp_path):
    code, _, err = cli("train", "pendulum", "--algo", "td3-gru", "--set", "burn_in=16", "--run-dir", tmp_path / "r")
    assert code == 2 and "burn_in (16) must be less than sequence_length (10)" in err
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_a_killed_run_resumes_to_the_uninterrupted_ones_numbers(tmp_path, cli, neuromotor_process):
    args = ["--algo", "td3-gru", "--env-kwargs", HIDDEN_VELOCITY, "--seeds", "0-1", "--shards", "1", "--steps", "900",
            *[f"--set={k}={v}" for k, v in SMALL.items()], "--set", "checkpoint_every=300", "--set", "eval_every=300"]
    straight, _, arrays = kill_then_resume_equals_uninterrupted(tmp_path, cli, neuromotor_process, args, 900, 300)
    assert arrays["replay_obs"].shape == (2, 300, 2)
    code, out, err = cli("export", straight, "-o", tmp_path / "p.nmp")
    assert code == 0, err
    assert "2 -> 8 -> 4 -> 1, relu, gru, tanh" in out
    # int8 too: calibrated along the run's own episodes (the pendulum without its velocity)
    code, out, err = cli("export", straight, "-o", tmp_path / "p8.nmp", "--quantize", "int8", "--json")
    assert code == 0, err
    assert "steps of whole episodes" in out and "int8, network 2 -> 8 -> 4 -> 1, relu, gru, tanh" in out
    report = json.loads(out.splitlines()[-1])
    assert report["contract"] == "action" and report["max_error_frac"] <= 0.02
    assert report["rounding"] in ("plain", "through time") and report["calibration_obs"] > 0
    assert read_policy(tmp_path / "p8.nmp").state_size == 4

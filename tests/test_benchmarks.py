"""The benchmark scripts' bookkeeping (never their timings): which rows are compared, where a
peer's time comes from, how rl-zoo3's hyperparameters become an SB3 model, the shared helpers."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from neuromotor.paths import SOURCE_ROOT


@pytest.fixture
def bench(monkeypatch):
    """Import a benchmark script as `python benchmarks/<name>.py` would see its folder."""
    monkeypatch.syspath_prepend(str(SOURCE_ROOT / "benchmarks"))
    import importlib
    return importlib.import_module


def _row(peer=None, threads=1, wall=1.0, cpu=1.0, agents=1):
    r = {"threads": threads, "wall_s": wall, "cpu_s": cpu, "agents": agents, "wall_per_agent_s": wall / agents}
    return r if peer is None else {**r, "peer": peer}


def test_td3_speedups_only_between_equal_thread_counts(bench):
    td3 = bench("td3_pendulum")
    rows = {"neuromotor, 1 agent, 1 thread": _row(threads=1, wall=2.0, cpu=2.0),
            "neuromotor shared_minibatch, 1 agent, 1 thread": {**_row(threads=1, wall=1.5, cpu=1.5),
                                                               "shared_minibatch": True},
            "neuromotor, 1 agent, 2 threads": _row(threads=2, wall=1.0, cpu=2.0),
            "neuromotor, 4 agents, 2 threads": _row(threads=2, wall=4.0, cpu=8.0, agents=4),
            "stable-baselines3, 1 thread": _row("sb3", threads=1, wall=6.0, cpu=6.0),
            "RLtools (C++, OpenBLAS), 2 threads": _row("rltools", threads=2, wall=3.0, cpu=5.0)}
    ratios = td3.speedups(rows)
    assert set(ratios) == {"sb3_over_neuromotor_single_1thread", "sb3_over_neuromotor_rltools_update_single_1thread",
                           "rltools_over_neuromotor_single_2thread",
                           "rltools_over_neuromotor_per_agent_in_population_2thread"}
    # SB3 against the row with its own update, not against 2 threads; RLtools' update beside it
    assert ratios["sb3_over_neuromotor_single_1thread"] == {"wall": 4.0, "cpu": 4.0}
    assert ratios["sb3_over_neuromotor_rltools_update_single_1thread"] == {"wall": 3.0, "cpu": 3.0}
    assert ratios["rltools_over_neuromotor_single_2thread"] == {"wall": 3.0, "cpu": 2.5}
    assert ratios["rltools_over_neuromotor_per_agent_in_population_2thread"] == {"wall": 3.0, "cpu": 2.5}


def test_rltools_time_is_its_own_report_or_wall_less_startup(bench, tmp_path):
    td3 = bench("td3_pendulum")
    reports = tmp_path / "reports"
    reports.write_text("#!/bin/sh\necho 'Loop step: 100'\necho 'Time: 1.25s'\n")
    reports.chmod(0o755)
    r = td3.rltools(reports, threads=2)
    assert r["time_source"] == "reported by the binary" and r["wall_s"] == 1.25
    assert r["threads"] == 2 and len(r["runs"]) == 5
    # a dynamically linked binary that reports nothing: its loader-only start-up is timed and subtracted
    true = td3.rltools(td3.Path("/bin/true"), threads=1)
    assert true["time_source"].startswith("wall time less start-up") and true["startup_s"] > 0
    assert true["wall_s"] == pytest.approx(
        sorted(m["process_wall_s"] for m in true["runs"])[2] - true["startup_s"], abs=1e-12)


def test_rl_zoo3_ant_hyperparameters_become_sb3_settings(bench):
    torch = pytest.importorskip("torch")
    pytest.importorskip("rl_zoo3")
    ppo_ant = bench("ppo_ant")
    entry, hp = ppo_ant.zoo_hyperparams()  # read from the installed package
    assert entry.startswith("rl_zoo3 ") and "Ant-v" in entry and hp["normalize"]
    n_envs, normalize, kwargs = ppo_ant.zoo_settings(hp, torch)
    assert normalize is not None and "n_timesteps" not in kwargs and "normalize" not in kwargs
    # the translations rl-zoo3 applies, on an entry that uses them all
    n_envs, normalize, kwargs = ppo_ant.zoo_settings(
        {"normalize": "dict(norm_obs=True, norm_reward=False)", "n_envs": 4, "gamma": 0.98, "policy": "MlpPolicy",
         "learning_rate": "lin_3e-4", "policy_kwargs": "dict(activation_fn=nn.ReLU, net_arch=[8])",
         "n_timesteps": 1e6}, torch)
    assert n_envs == 4 and normalize == {"norm_obs": True, "norm_reward": False, "gamma": 0.98}
    assert kwargs["policy_kwargs"] == {"activation_fn": torch.nn.ReLU, "net_arch": [8]}
    assert math.isclose(kwargs["learning_rate"](1.0), 3e-4) and math.isclose(kwargs["learning_rate"](0.5), 1.5e-4)


def test_benchutil(bench, tmp_path):
    util = bench("benchutil")
    assert util.macs([13, 64, 64, 4]) == 13 * 64 + 64 * 64 + 64 * 4
    path = util.write_json(tmp_path / "new" / "x.json", {"a": [1, 2]})
    assert json.loads(path.read_text()) == {"a": [1, 2]} and not list(path.parent.glob("*.tmp"))
    fig, ax = util.plt.subplots()
    ax.plot([0, 1])
    util.save_png(fig, tmp_path / "x.png")
    assert (tmp_path / "x.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_rltools_flights_are_judged_against_their_own_reference(bench, tmp_path):
    quad = bench("quadrotor")
    # RLtools' trajectories.json: each episode's states, padded with dt 0 after an early end
    reference = [{"position": [0.1 * k, 0.0, 0.0], "linear_velocity": [1.0, 0.0, 0.0]} for k in range(4)]

    def episode(position, velocity, flown=3, step=2):
        state = {"position": position, "linear_velocity": velocity, "trajectory": {"trajectory_step": step}}
        steps = [{"state": state, "dt": 0.02 if k < flown else 0.0, "terminated": False} for k in range(3)]
        return {"parameters": {"integration": {"dt": 0.02}, "trajectory": {"steps": reference},
                               "trajectory_parameters": {"type": "LISSAJOUS"}}, "trajectory": steps}

    flights = [episode([0.2, 0.05, 0.0], [1.1, 0.0, 0.0]),     # on the moving reference: succeeds
               episode([0.2, 0.05, 0.0], [0.0, 0.0, 0.0]),     # there, but 1 m/s behind it
               episode([0.5, 0.0, 0.0], [1.0, 0.0, 0.0]),      # 0.3 m off
               episode([0.2, 0.0, 0.0], [1.0, 0.0, 0.0], flown=2)]  # ended early
    path = tmp_path / "trajectories.json"
    path.write_text(json.dumps(flights))
    got = quad.rltools_flights(path)
    assert got["episodes"] == 4 and got["steps"] == 3 and got["task"] == "lissajous" and got["dt_s"] == 0.02
    assert got["ended_early"] == 1 and got["success_rate"] == 0.25
    assert got["final_distance_m"] == pytest.approx(math.hypot(0.0, 0.05))


def test_quadrotor_success_needs_the_whole_episode_and_a_still_end_on_the_target(bench):
    quad = bench("quadrotor")
    falling = quad.success(lambda obs: -np.ones((len(obs), 4)), episodes=8, env_kwargs={})
    assert falling == {"success_rate": 0.0, "survived": 0.0, "left_box": list(range(8)), "passed": False,
                       "final_distance_m": None, "final_speed_m_s": None}
    from neuromotor.envs.quadrotor import HOVER_ACTION

    hovering = quad.success(lambda obs: np.full((len(obs), 4), HOVER_ACTION), episodes=40,
                            env_kwargs={"action_history": 4})
    # a constant hover command cannot right a tilted drone: most leave the box, none succeeds
    # unless it started level on the target and still
    assert hovering["survived"] < 0.5 and hovering["success_rate"] <= hovering["survived"]
    assert hovering["passed"] is False
    assert len(hovering["left_box"]) == round(40 * (1 - hovering["survived"]))
    widths = set()  # the policy flies the env it was trained on: its observation size
    quad.success(lambda obs: widths.add(obs.shape[1]) or -np.ones((len(obs), 4)), episodes=2,
                 env_kwargs={"action_history": 4})
    assert widths == {22 + 4 * 4}
    from neuromotor.policy import read_policy

    # a trained hover (tests/data/README.md) passes: every drone ends near the target and still
    trained = quad.success(read_policy(Path(__file__).parent / "data" / "quadrotor_hover.nmp").forward, 100, {})
    assert trained["passed"] and trained["success_rate"] >= 0.95 and trained["final_distance_m"] < 0.1


def test_the_quadrotor_bound_counts_train_quadrotors_preset(bench):
    from neuromotor.algos.sac import SAC
    from neuromotor.envs.quadrotor import QuadrotorVec

    ab = bench("arithmetic_bound")
    shape, scheme = ab.sac_quadrotor()
    cfg, run = SAC.defaults("quadrotor")
    assert (shape.obs, shape.act, shape.hidden, shape.batch, shape.steps, shape.learning_starts) == (
        QuadrotorVec(1).obs_dim, 4, tuple(cfg.critic_hidden), cfg.batch_size, run["steps"], cfg.learning_starts)
    assert scheme == ("shared" if cfg.shared_minibatch else "rltools")
    # the native update's products exceed the minimum by one critic's backward to the action
    # columns (the actor's gradient through both critics, not the smaller alone): no more
    native, minimum = (ab.sac_update(shape, kind, scheme) for kind in ("native", "minimum"))
    h1, h2 = shape.hidden
    assert native["per_update_madds"] - minimum["per_update_madds"] == shape.batch * (h2 + h1 * h2 + shape.act * h1)


def test_quadrotor_benchmark_refuses_no_episodes(bench):
    quad = bench("quadrotor")
    for flag in ("--episodes", "--crash-episodes"):
        with pytest.raises(SystemExit) as exc:
            quad.main([flag, "0"])
        assert exc.value.code == 2

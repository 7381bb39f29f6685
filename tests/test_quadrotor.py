"""The quadrotor's physics, checked against what a rigid body under gravity must do, not
against the code's own formulas: hover, free fall, a pure yaw torque, which way a push on
one side moves it, and the frames its observation reports."""

import warnings

import gymnasium
import numpy as np
import pytest

import neuromotor
from neuromotor.envs import env_class
from neuromotor.envs import quadrotor as qr
from neuromotor.envs.quadrotor import QuadrotorVec


@pytest.fixture(params=["native", "numpy"])
def both_steps(request, monkeypatch):
    """Run a physics test on the C step and on its NumPy reference."""
    if request.param == "numpy":
        monkeypatch.setattr(qr, "_nm_host", None)
    else:
        assert qr._nm_host is not None, "the extension is built by `make venv`"
    return request.param


def _at_rest(n=1, rpm=None):
    env = QuadrotorVec(n)
    state = np.zeros((n, env.get_state().shape[1]))
    state[:, 3] = 1.0
    state[:, qr.RPM] = qr.HOVER_RPM if rpm is None else rpm
    env.set_state(state)
    return env


def _action(rpm):
    return 2 * np.asarray(rpm, float) / qr.RPM_MAX - 1


@pytest.mark.usefixtures("both_steps")
def test_hover_thrust_equals_weight_at_the_published_parameters():
    # four rotors at the hover speed carry the 27 g drone: 4 * 3.16e-10 * rpm^2 = 0.027 * 9.81
    assert 4 * 3.16e-10 * qr.HOVER_RPM ** 2 == pytest.approx(0.027 * 9.81, rel=1e-12)
    assert qr.HOVER_RPM == pytest.approx(14475.8, abs=0.1) and qr.HOVER_ACTION == pytest.approx(0.334, abs=1e-3)
    env = _at_rest()
    for _ in range(300):  # 3 s
        obs, reward, terminated = env.step(np.full((1, 4), qr.HOVER_ACTION))
    assert np.abs(env.state[0, :3]).max() < 1e-9 and np.abs(env.state[0, 7:13]).max() < 1e-9
    assert not terminated[0] and reward[0] == pytest.approx(2.0, abs=1e-6)


@pytest.mark.usefixtures("both_steps")
def test_free_fall():
    env = _at_rest(rpm=0.0)
    for _ in range(50):  # 0.5 s with the rotors off
        env.step(np.full((1, 4), -1.0))
    t = 0.5
    assert env.state[0, 2] == pytest.approx(-0.5 * 9.81 * t ** 2, rel=1e-9)
    assert env.state[0, 9] == pytest.approx(-9.81 * t, rel=1e-9)
    assert np.abs(env.state[0, [0, 1, 7, 8]]).max() < 1e-12  # straight down


@pytest.mark.usefixtures("both_steps")
def test_motors_follow_their_command_with_the_published_time_constant():
    env = _at_rest(rpm=0.0)
    for _ in range(15):  # 0.15 s: one time constant
        env.step(np.full((1, 4), 1.0))
    assert env.state[0, qr.RPM] == pytest.approx(np.full(4, qr.RPM_MAX * (1 - np.exp(-1))), rel=1e-6)


@pytest.mark.usefixtures("both_steps")
def test_a_pure_yaw_torque_spins_without_tilting():
    # rotors 0 and 2 (one diagonal) faster, 1 and 3 slower, the same total thrust: their pulls
    # cancel about x and y; the drag of the faster pair turns the body about z
    fast, slow = qr.HOVER_RPM * 1.05, np.sqrt(2 * qr.HOVER_RPM ** 2 - (qr.HOVER_RPM * 1.05) ** 2)
    rpm = np.array([fast, slow, fast, slow])
    env = _at_rest(rpm=rpm)
    for _ in range(100):
        obs, _, _ = env.step(_action(rpm)[None])
    w = env.state[0, qr.W]
    assert w[2] < -0.1 and np.abs(w[:2]).max() < 1e-9
    assert obs[0, 3:12].reshape(3, 3)[:, 2] == pytest.approx([0, 0, 1], abs=1e-9)  # body z still up
    assert np.abs(env.state[0, :3]).max() < 1e-9


@pytest.mark.usefixtures("both_steps")
def test_more_thrust_on_the_left_rolls_it_and_it_drifts_right():
    # left rotors (2, 3: y > 0) push harder: positive roll about x, the thrust tilts toward -y
    rpm = qr.HOVER_RPM * np.array([0.99, 0.99, 1.01, 1.01])
    env = _at_rest(rpm=rpm)
    for _ in range(40):
        env.step(_action(rpm)[None])
    assert env.state[0, 10] > 0 and env.state[0, 8] < 0 and env.state[0, 1] < 0
    assert abs(env.state[0, 11]) < 1e-9  # no pitch


@pytest.mark.usefixtures("both_steps")
def test_observation_frames():
    env = QuadrotorVec(16)
    obs = env.reset([np.random.default_rng(s) for s in range(16)])
    assert obs.shape == (16, 22 + 4 * qr.ACTION_HISTORY) and obs.dtype == np.float32
    R = obs[:, 3:12].reshape(-1, 3, 3).astype(np.float64)
    assert np.allclose(R @ R.transpose(0, 2, 1), np.eye(3), atol=1e-6) and np.allclose(np.linalg.det(R), 1, atol=1e-6)
    # body z of each drone, from its rotation, against the quaternion's own rotation of (0, 0, 1)
    w, x, y, z = env.state[:, qr.Q].T
    up = np.stack([2 * (x * z + w * y), 2 * (y * z - w * x), w * w - x * x - y * y + z * z], 1)
    assert np.allclose(R[:, :, 2], up, atol=1e-6)
    tilt = np.degrees(np.arccos(np.clip(R[:, 2, 2], -1, 1)))
    assert tilt.max() <= 90.0 + 1e-6 and np.abs(env.state[:, qr.P]).max() <= 0.2
    # the position error in units of 0.1 m: the success radius is 1
    assert qr.POSITION_SCALE == 10 and np.array_equal(obs[:, :3], (env.state[:, qr.P] * 10).astype(np.float32))
    assert np.abs(obs[:, 12:18]).max() <= 1.0 and (obs[:, 18:] == 0).all()  # rotors and history: half speed


@pytest.mark.usefixtures("both_steps")
def test_the_observed_rotor_speeds_lag_the_command_by_the_motor_time_constant():
    env = _at_rest(rpm=qr.RPM_MAX / 2)
    for _ in range(round(qr.MOTOR_TIME_CONSTANT / qr.DT)):
        obs, _, terminated = env.step(np.ones((1, 4)))
    # from half speed (0) toward full (1): a first-order lag covers 1 - 1/e of the way in one time constant
    assert np.allclose(obs[0, 18:22], 1 - np.exp(-1), atol=1e-3) and not terminated[0]
    assert np.allclose(obs[0, 22:], 1.0)  # the history: the commands themselves
    paper = env_class("quadrotor", {"rotor_speeds": False, "position_scale": 1})(1)
    assert paper.obs_dim == 18 + 4 * qr.ACTION_HISTORY
    obs = paper.reset([np.random.default_rng(0)])
    assert (obs[0, 18:] == 0).all() and np.array_equal(obs[0, :3], paper.state[0, qr.P].astype(np.float32))


@pytest.mark.usefixtures("both_steps")
def test_leaving_the_box_ends_the_episode():
    env = _at_rest(rpm=0.0)
    steps = 0
    while True:
        steps += 1
        _, _, terminated = env.step(np.full((1, 4), -1.0))
        if terminated[0]:
            break
    # 0.6 m of free fall: t = sqrt(2 * 0.6 / 9.81) = 0.35 s
    assert steps == int(np.ceil(np.sqrt(2 * 0.6 / 9.81) / qr.DT))


@pytest.mark.parametrize("randomize, history, reward, rotors, scale", [
    (0.0, 32, "initial", True, 10.0), (0.3, 2, "distance", False, 1.0), (0.0, 0, "target", True, 3.7),
    (0.1, 4, "hover", True, 10.0), (0.0, 4, "hover", False, 1.0)])
def test_the_native_step_is_the_numpy_step(randomize, history, reward, rotors, scale):
    # 64 drones from the task's initial states under random commands (some beyond [-1, 1]),
    # 500 steps: the same states, observations, rewards and ends to rounding
    n = 64
    native, numpy_ = (QuadrotorVec(n, history, randomize, reward, rotors, scale) for _ in range(2))
    for env in (native, numpy_):
        env.reset([np.random.default_rng(k) for k in range(n)])
    rng = np.random.default_rng(7)
    ended = 0
    for _ in range(500):
        actions = rng.uniform(-1.2, 1.2, (n, 4))
        got, want = native.step(actions), numpy_.step_numpy(actions)
        np.testing.assert_allclose(native.state, numpy_.state, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
        np.testing.assert_array_equal(got[2], want[2])
        np.testing.assert_array_equal(native.history, numpy_.history)
        ended += got[2].sum()
        fresh = [np.random.default_rng(1000 + k) for k in range(n)]
        native.reset(fresh, got[2])
        numpy_.reset([np.random.default_rng(1000 + k) for k in range(n)], got[2])
    assert ended > 50  # random commands crash drones: the ends were compared too


def test_the_native_step_checks_its_arrays():
    from neuromotor.native import _nm_host

    env = QuadrotorVec(3, 2)
    env.reset([np.random.default_rng(k) for k in range(3)])
    good = dict(model=env.model, state=env.state, params=env.params, actions=np.zeros((3, 4)),
                history=env.history, obs=np.empty((3, 30), np.float32), reward=np.empty(3, np.float32),
                terminated=np.empty(3, bool))
    before = env.state.copy()
    bad = [("model", env.model[:-1], "model: axis 0"), ("state", env.state.astype(np.float32), "state must be float64"),
           ("state", np.zeros((3, 34))[:, ::2], "C-contiguous"), ("params", np.zeros((2, 2)), "params: axis 0"),
           ("actions", np.zeros((3, 3)), "actions: axis 1"), ("history", np.zeros((3, 2, 3)), "history: axis 2"),
           ("obs", np.empty((3, 26), np.float32), "obs: axis 1"), ("reward", np.empty(3), "reward must be float32"),
           ("terminated", np.empty(3, np.uint8), "terminated must be bool"),
           ("history", np.zeros((3, 1025, 4)), "at most 1024")]
    for name, value, said in bad:
        with pytest.raises(ValueError, match=said):
            _nm_host.quadrotor_step(*{**good, name: value}.values())
    read_only = env.history.copy()
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="history must be a C-contiguous, writable"):
        _nm_host.quadrotor_step(*{**good, "history": read_only}.values())
    with pytest.raises(ValueError, match="state and obs overlap"):
        _nm_host.quadrotor_step(*{**good, "obs": env.state.reshape(-1).view(np.float32)[:90].reshape(3, 30)}.values())
    np.testing.assert_array_equal(env.state, before)  # nothing written by a refused call


def test_the_gymnasium_env_is_the_built_in_one():
    from gymnasium.utils.env_checker import check_env

    env = gymnasium.make("neuromotor.envs.quadrotor_gym:neuromotor/Quadrotor-v0")
    check_env(env.unwrapped, skip_render_check=True)
    vec = env_class("quadrotor")(1)
    obs, _ = env.reset(seed=7)
    assert np.array_equal(obs, vec.reset([np.random.default_rng(7)])[0])
    action = np.array([0.4, 0.3, 0.35, 0.2], np.float32)
    for _ in range(20):
        obs, reward, terminated, truncated, _ = env.step(action)
        vobs, vreward, vterm = vec.step(action[None].astype(np.float64))
        assert np.array_equal(obs, vobs[0]) and reward == vreward[0] and terminated == vterm[0]
    assert env.spec.max_episode_steps == 500


def test_trains_exports_and_renders(tmp_path, cli):
    run = tmp_path / "q"
    code, _, err = cli("train", "quadrotor", "--algo", "td3", "--steps", 600, "--run-dir", run, "--set",
                       "batch_size=32", "--set", "eval_episodes=2", "--set", "eval_every=300", "--quiet")
    assert code == 0, err
    import json

    # every evaluation judges the hover: each agent's share of successful episodes
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [0, 300, 600]
    assert all(m["eval_success"] in (0.0, 0.5, 1.0) for m in metrics)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["eval_success"] == summary["agents"][0]["eval_success"] == metrics[-1]["eval_success"]
    # best.npz: the evaluation with the highest success, then return (the first of equals); only
    # the policy's arrays, not the replay buffer
    best = max(metrics, key=lambda m: (m["eval_success"], m["eval_return_mean"], -m["step"]))
    assert summary["best"]["step"] == best["step"] and summary["best"]["checkpoint"] == "best.npz"
    assert (run / "best.npz").stat().st_size < (run / "checkpoint.npz").stat().st_size / 10
    code, out, err = cli("export", run / "best.npz", "-o", tmp_path / "best.nmp")
    assert code == 0, err
    assert neuromotor.load_policy(run / "best.npz").meta["step"] == best["step"]
    # it is the run's policy (export, deploy, hil, eval); checkpoint.npz names the last state
    assert best["step"] != 600  # (this run's best is an earlier one: the two are told apart)
    assert neuromotor.load_policy(run).meta["step"] == best["step"] == neuromotor.evaluate(run, episodes=1).steps
    assert neuromotor.load_policy(run / "checkpoint.npz").meta["step"] == 600
    assert cli("export", run, "-o", tmp_path / "q.nmp")[0] == 0
    from neuromotor.policy.policy_file import read_policy

    spec = read_policy(tmp_path / "q.nmp")
    assert (spec.obs_dim, spec.act_dim) == (22 + 4 * 4, 4)  # rotor speeds and the default action history: 4
    code, out, _ = cli("eval", run, "--episodes", 1, "--render", tmp_path / "q.gif")
    assert code == 0 and "q.png" in out
    assert (tmp_path / "q.gif").read_bytes()[:6] == b"GIF89a"
    assert (tmp_path / "q.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # position and attitude over time


def test_training_starts_from_the_hardest_of_its_draws_and_evaluation_from_the_task():
    from neuromotor.envs.autoreset import AutoReset

    n = 400
    task, training = QuadrotorVec(n), QuadrotorVec(n)
    task.reset([np.random.default_rng(k) for k in range(n)])
    AutoReset(training, [np.random.default_rng(k) for k in range(n)], start_draws=3).reset()
    easy, hard = ([qr.start_difficulty(s) for s in env.state] for env in (task, training))
    # the first of the three draws is the task's own start: the kept one is never easier
    assert all(h >= e for h, e in zip(hard, easy)) and np.mean(hard) > np.mean(easy) + 0.1
    tilt = np.degrees(2 * np.arccos(np.clip(training.state[:, 3], -1, 1)))
    assert np.median(tilt) > 60 and tilt.max() <= 90 + 1e-6  # harder, still from the task's range


def test_train_quadrotor_defaults_to_sac_with_its_quadrotor_preset(tmp_path, cli):
    run = tmp_path / "q"
    code, _, err = cli("train", "quadrotor", "--steps", 300, "--run-dir", run, "--set", "eval_every=300",
                       "--set", "eval_episodes=2", "--quiet")
    assert code == 0, err
    import json

    config = json.loads((run / "config.json").read_text())
    assert config["algo"] == "sac"
    keys = ("episode_steps", "lr_decay_start", "lr_decay_end", "start_draws", "batch_size", "shared_minibatch",
            "policy_average")
    assert {k: config["algo_config"][k] for k in keys} == {"episode_steps": 200, "lr_decay_start": 150_000,
                                                          "lr_decay_end": 300_000, "start_draws": 3,
                                                          "batch_size": 64, "shared_minibatch": True,
                                                          "policy_average": 30_000}
    assert neuromotor.load_policy(run).obs_dim == 22 + 4 * 4
    code, out, err = cli("export", run, "-o", tmp_path / "q8.nmp", "--quantize", "int8", "--calibration", 200,
                         "--heldout", 200)  # judged on flights: both policies fly the same 100 held-out starts
    assert code == 0 and "of 100 held-out episodes, the float policy in" in out, err


def test_the_best_evaluation_is_success_first_then_return_then_the_earliest():
    from neuromotor.training.rundir import _best_evaluation

    def rec(step, agent, success, ret):
        return {"step": step, "agent": agent, "eval_success": success, "eval_return_mean": ret}

    metrics = [rec(0, 0, 0.0, 50.0), rec(0, 1, 0.0, 70.0),          # mean (0, 60)
               rec(10, 0, 0.5, 10.0), rec(10, 1, 0.0, 10.0),        # mean (0.25, 10): the best
               rec(20, 0, 0.25, 90.0), rec(20, 1, 0.25, -70.0),     # mean (0.25, 10): equal, later
               rec(30, 0, 0.0, 99.0), rec(30, 1, 0.0, 99.0)]
    assert _best_evaluation(metrics) == ((0.25, 10.0), 10)
    assert _best_evaluation([{"step": 0, "agent": 0, "eval_return_mean": 1.0}]) is None  # no success judged


def test_bench_says_which_control_loops_a_policy_fits():
    from neuromotor.boards.bench import control_loops

    real = {"emulated": False, "backends": {"native": {"median_us": 150.0}, "python": {"median_us": 4000.0}}}
    lines = control_loops(real)
    assert "measured" in lines[0]
    assert "100 Hz fits, 67x headroom  400 Hz fits, 17x headroom  500 Hz fits, 13x headroom" in lines[1]
    assert "100 Hz fits, 2.5x headroom  400 Hz too slow (1.6x the period)  500 Hz too slow (2.0x the period)" in lines[2]
    emulated = {"emulated": True, "predict_mhz": 600, "backends": {"native": {
        "predicted_us": 36.0, "predicted_boards": {"teensy41": {"us": 50.0}, "stm32f405": {"us": 2500.0}}}}}
    lines = control_loops(emulated)
    assert "predicted" in lines[0] and "teensy41: 100 Hz fits, 200x headroom" in lines[1]
    assert "stm32f405: 100 Hz fits, 4.0x headroom  400 Hz fits, 1.0x headroom  500 Hz too slow (1.2x the period)" in lines[2]


def test_the_action_history_is_as_long_as_asked_and_holds_the_last_actions():
    env = env_class("quadrotor", {"action_history": 3})(2)
    assert env.obs_dim == 22 + 12
    env.reset([np.random.default_rng(s) for s in (0, 1)])
    for k in range(5):
        obs, _, _ = env.step(np.full((2, 4), k / 10))
    assert obs.shape == (2, 34)
    assert np.allclose(obs[:, 22:].reshape(2, 3, 4), [[[0.2] * 4, [0.3] * 4, [0.4] * 4]] * 2)
    none = env_class("quadrotor", {"action_history": 0})(1)
    assert none.reset([np.random.default_rng(0)]).shape == (1, 22)


def test_randomised_drones_differ_and_a_heavier_one_sinks_at_the_nominal_hover_speed():
    env = env_class("quadrotor", {"randomize": 0.3})(64)
    env.reset([np.random.default_rng(s) for s in range(64)])
    factors = env.params / [qr.MASS, qr.THRUST_PER_RPM2]
    assert ((factors >= 0.7) & (factors <= 1.3)).all() and factors.std(0).min() > 0.1
    state = env.get_state()
    state[:, :qr.STATE] = 0.0
    state[:, 3] = 1.0
    state[:, qr.RPM] = qr.HOVER_RPM
    env.set_state(state)
    for _ in range(20):
        env.step(np.full((64, 4), qr.HOVER_ACTION))
    lift_per_weight = factors[:, 1] / factors[:, 0]  # thrust over weight at the nominal hover speed
    vz = env.state[:, 9]
    assert (np.sign(vz) == np.sign(lift_per_weight - 1)).all()
    # the same seeds draw the same drones; the draws survive a checkpoint
    again = env_class("quadrotor", {"randomize": 0.3})(64)
    again.reset([np.random.default_rng(s) for s in range(64)])
    assert np.array_equal(again.params, env.params)
    copy = env_class("quadrotor", {"randomize": 0.3})(64)
    copy.set_state(env.get_state())
    assert np.array_equal(copy.params, env.params)


@pytest.mark.usefixtures("both_steps")
def test_the_target_reward_pays_for_the_target_not_the_box():
    # hovering still, 0.3 m off the target: 2 - (5 or 40) * 0.09 / 2
    rewards = {}
    for reward in ("initial", "target"):
        env = env_class("quadrotor", {"reward": reward})(1)
        state = _at_rest().get_state()
        state[0, 0] = 0.3
        env.set_state(state)
        rewards[reward] = float(env.step(np.full((1, 4), qr.HOVER_ACTION))[1][0])
    assert rewards["initial"] == pytest.approx(2 - 5 * 0.09 / 2, abs=1e-5)
    assert rewards["target"] == pytest.approx(2 - 40 * 0.09 / 2, abs=1e-5)


@pytest.mark.usefixtures("both_steps")
def test_the_distance_reward_keeps_pulling_near_the_target():
    # hovering still 0.3 m and 0.03 m off: the squared term alone pays the second almost as
    # much as the target; the distance term takes 2 |p| / 2 more from each
    rewards = {}
    for reward in ("initial", "distance"):
        for x in (0.3, 0.03):
            env = env_class("quadrotor", {"reward": reward})(1)
            state = _at_rest().get_state()
            state[0, 0] = x
            env.set_state(state)
            rewards[reward, x] = float(env.step(np.full((1, 4), qr.HOVER_ACTION))[1][0])
    for x in (0.3, 0.03):
        assert rewards["distance", x] == pytest.approx(rewards["initial", x] - 2 * x / 2, abs=1e-5)
    assert 2 - rewards["initial", 0.03] < 0.003 and 2 - rewards["distance", 0.03] > 0.03


@pytest.mark.usefixtures("both_steps")
def test_the_hover_reward_never_pays_less_than_a_crash():
    # 0.3 m off costs 40 * 0.09 + 2 * 0.3 = 4.2, half of it over the constant 2: floored at 0 (a
    # crash ends the rewards at 0 too, so leaving the box never pays); 0.03 m off: 2 - 0.048
    got = {}
    for x in (0.3, 0.03):
        env = env_class("quadrotor", {"reward": "hover"})(1)
        state = _at_rest().get_state()
        state[0, 0] = x
        env.set_state(state)
        got[x] = float(env.step(np.full((1, 4), qr.HOVER_ACTION))[1][0])
    assert got[0.3] == 0.0
    assert got[0.03] == pytest.approx(2 - (40 * 0.03 ** 2 + 2 * 0.03) / 2, abs=1e-4)


def test_an_evaluation_never_acts_on_a_crashed_drone_whose_state_diverged():
    # drone 1 spins so fast that its first step is no longer finite, which ends its episode;
    # the evaluation steps it on but the policy sees only finite numbers
    from neuromotor.envs.episodes import episode_returns

    env = _at_rest(2)
    state = env.get_state()
    state[1, qr.W] = 1e200
    env.set_state(state)
    obs = np.zeros((2, env.obs_dim), np.float32)

    def hover(obs, t):
        assert np.isfinite(obs).all()
        return np.full((2, 4), qr.HOVER_ACTION)

    returns = episode_returns(env, obs, hover, 20)
    assert not np.isfinite(env.state[1]).all()
    assert returns[0] == pytest.approx(20 * 2.0, abs=1e-4)


def test_success_is_ending_near_and_slow_without_leaving_the_box():
    from neuromotor.envs.episodes import episode_outcomes

    env = _at_rest(4)
    state = env.get_state()
    state[1, qr.P] = [0.0, 0.08, 0.0]      # near enough
    state[2, qr.P] = [0.0, 0.0, 0.12]      # too far from the target
    state[3, qr.P] = [0.59, 0.0, 0.0]      # about to leave the box ...
    state[3, qr.V] = [1.0, 0.0, 0.0]       # ... and does
    env.set_state(state)
    assert env.success().tolist() == [True, True, False, False]
    state[1, qr.V] = [0.0, 0.0, 0.25]      # near but too fast
    env.set_state(state)
    assert not env.success()[1]
    obs = np.zeros((4, env.obs_dim), np.float32)
    returns, success = episode_outcomes(env, obs, lambda o, t: np.full((4, 4), qr.HOVER_ACTION), 3)
    # a drone at rest on the target under the hover command ends there: the only success
    assert success.tolist() == [True, False, False, False]
    assert returns[3] < returns[0]  # drone 3's episode ended when it left


def test_a_drone_whose_integration_overflowed_is_no_success_and_no_warning():
    env = _at_rest(3)
    env.state[1, qr.V] = [1e200, 0.0, 0.0]  # what a spun-up drone's integration reaches: squared, past float64
    env.state[2, qr.P] = [np.nan, 0.0, 0.0]  # (set_state takes finite states only)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert env.success().tolist() == [True, False, False]


@pytest.mark.parametrize("kwargs, said", [({"mass": 1.0}, "takes the env_kwargs"),
                                          ({"randomize": 0.9}, "randomize must be"),
                                          ({"action_history": -1}, "action_history must be"),
                                          ({"rotor_speeds": 1}, "rotor_speeds must be"),
                                          ({"position_scale": 0}, "position_scale must be"),
                                          ({"position_scale": 1e9}, "position_scale must be"),
                                          ({"reward": "final"}, "reward must be one of initial, target, distance, hover")])
def test_bad_quadrotor_kwargs_are_one_line_and_write_nothing(cli, tmp_path, kwargs, said):
    import json

    code, out, err = cli("train", "quadrotor", "--steps", 10, "--env-kwargs", json.dumps(kwargs),
                         "--run-dir", tmp_path / "run")
    assert code == 2 and said in err and err.count("\n") == 1 and not (tmp_path / "run").exists()


def test_trains_with_a_short_history_and_randomised_drones_and_exports_that_size(cli, tmp_path):
    run = tmp_path / "run"
    assert cli("train", "quadrotor", "--algo", "sac", "--steps", 300, "--env-kwargs",
               '{"action_history": 2, "randomize": 0.2}', "--set", "learning_starts=100", "--set", "eval_every=300",
               "--set", "eval_episodes=1", "--run-dir", run, "--quiet")[0] == 0
    assert cli("export", run, "-o", tmp_path / "p.nmp")[0] == 0
    from neuromotor.policy.policy_file import read_policy

    assert read_policy(tmp_path / "p.nmp").obs_dim == 22 + 8


@pytest.mark.usefixtures("both_steps")
def test_nan_commands_and_states_are_refused_and_commands_beyond_the_range_saturate():
    from neuromotor.errors import UserError

    env = _at_rest(2)
    before = env.get_state()
    with pytest.raises(UserError, match=r"quadrotor: motor command \(1, 2\) is nan: it must be a finite number"):
        env.step(np.array([[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, np.nan, 0.0]]))
    bad = before.copy()
    bad[0, 4] = np.inf
    with pytest.raises(UserError, match=r"state entry \(0, 4\) is inf"):
        env.set_state(bad)
    np.testing.assert_array_equal(env.get_state(), before)  # nothing moved
    beyond, at_limit = _at_rest(), _at_rest()
    beyond.step(np.array([[5.0, -3.0, 1.5, -1e9]]))
    at_limit.step(np.array([[1.0, -1.0, 1.0, -1.0]]))
    np.testing.assert_array_equal(beyond.get_state(), at_limit.get_state())
    gym_env = gymnasium.make("neuromotor.envs.quadrotor_gym:neuromotor/Quadrotor-v0")
    gym_env.reset(seed=0)
    with pytest.raises(UserError, match="motor command"):
        gym_env.step(np.array([np.nan, 0, 0, 0], np.float32))

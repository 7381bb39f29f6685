"""Distillation (neuromotor distil): 2 teachers x a few steps through the whole pipeline, the
student's policy file (version 4, recurrent) equal to the trained network, its observation the
student env's, and bad input."""

import json
from pathlib import Path

import numpy as np
import pytest

import neuromotor
from neuromotor.cli import main
from neuromotor.envs.quadrotor_drones import QuadrotorDronesVec
from neuromotor.policy.policy_file import read_policy
from neuromotor.training import distil as d

TINY = {"teachers": 2, "base_steps": 200, "teacher_steps": 200, "teacher_eval_episodes": 2, "teacher_eval_every": 100, "iterations": 2, "envs_per_teacher": 2,
        "rollout_steps": 40, "window": 16, "burn_in": 4, "batch_windows": 4, "updates": 3,
        "eval_drones": 2, "eval_episodes": 2, "select_episodes": 2, "dense": 8, "hidden": 6}


def test_the_students_file_is_the_trained_network(tmp_path):
    cfg = d.make_config({**TINY, "updates": 20})
    drones = d.draw_drones(cfg, cfg.teachers, 0)
    base = d.train_base(tmp_path / "base", cfg, progress=False)
    teachers = d.train_teachers(tmp_path / "teachers", cfg, drones, base, progress=False)
    assert len(teachers) == 2 and not teachers[0].recurrent
    for k, teacher in enumerate(teachers):  # each teacher's policy file is the one kept
        kept = read_policy(tmp_path / d.TEACHER_FILE.format(k))
        for w, want in zip(kept.weights, teacher.weights):
            np.testing.assert_array_equal(w, want)
    evaluated = [json.loads(line) for line in (tmp_path / "teachers" / "metrics.jsonl").read_text().splitlines()]
    assert sorted({r["step"] for r in evaluated}) == [0, 100, 200]  # two legs, the second a resume
    net, norm, env, iteration = d.dagger(tmp_path, cfg, teachers, drones, progress=False)
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [0, 1] and all(np.isfinite(r["loss"]) for r in records)
    flown = [r["select_success"] for r in records]
    assert iteration == flown.index(max(flown))  # the iteration whose student flew best is kept
    spec = d.student_spec(net, norm, env, {})
    assert d.success_on(spec, drones, cfg.select_episodes, d.STUDENT_ENV, d.SELECT_SEED).mean() == flown[iteration]
    d.write_policy(d.student_spec(net, norm, env, {"env": "quadrotor"}), tmp_path / "s.nmp")
    spec = read_policy(tmp_path / "s.nmp")
    assert spec.recurrent and spec.state_size == 6 and spec.kinds == ["dense", "gru", "dense"]
    assert (tmp_path / "s.nmp").read_bytes()[4] == 4  # the format version byte
    obs = np.stack([env.reset([np.random.default_rng([7, i]) for i in range(4)])] +
                   [env.step(np.full((4, 4), 0.3))[0] for _ in range(9)])
    seen = np.stack([d.student_obs(o) for o in obs])
    want, _, _ = net.forward(((seen - norm[0]) / norm[1]).astype(np.float32))
    state = spec.initial_state()
    for t in range(len(obs)):
        action, state = spec.step(seen[t], state)
        np.testing.assert_allclose(action, want[t], rtol=1e-4, atol=1e-5)
    assert np.abs(want[-1] - want[0]).max() > 1e-4  # the sequence moved the policy


def test_the_student_sees_what_the_student_env_observes():
    drones = [{"mass": 1.1, "motor_time_constant": 0.8}, {"thrust": 0.9, "arm": 1.2}]
    teacher_env = QuadrotorDronesVec(4, drones=drones)
    student_env = QuadrotorDronesVec(4, drones=drones, **d.STUDENT_ENV)
    rngs = lambda: [np.random.default_rng([3, i]) for i in range(4)]  # noqa: E731
    teacher_env.reset(rngs()), student_env.reset(rngs())
    actions = np.random.default_rng(5).uniform(-1, 1, (6, 4, 4))
    for a in actions:
        seen, want = teacher_env.step(a)[0], student_env.step(a)[0]
    assert want.shape == (4, 22)
    np.testing.assert_allclose(d.student_obs(seen), want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(want[:, -4:], actions[-1], rtol=1e-6)


def test_distil_command_writes_a_run_and_its_student_evaluates(tmp_path, capsys):
    run = tmp_path / "run"
    argv = ["distil", "quadrotor", "--run-dir", str(run), "--json"] + [f"--set={k}={v}" for k, v in TINY.items()]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    for name in ("distil.json", "metrics.jsonl", "learning_curve.png", "summary.json", "student.nmp",
                 "base/checkpoint.npz", "teachers/best.npz", "teacher-0.nmp", "teacher-1.nmp"):
        assert (run / name).is_file(), name
    rows = summary["evaluation"]
    assert set(rows) == {"student on fresh drones", "base policy on fresh drones", "best teacher on fresh drones",
                         "student on the teachers' drones", "each teacher on its own drone"}
    best = rows["best teacher on fresh drones"]
    assert best["success_mean"] == pytest.approx(max(best["each_teacher_mean"]), abs=1e-4) and best["teacher"] in (0, 1)
    assert all(0 <= r["success_mean"] <= 1 and len(r["per_drone"]) == 2 for r in rows.values())
    fresh = json.loads((run / "distil.json").read_text())["fresh_drones"]
    assert fresh != json.loads((run / "distil.json").read_text())["drones"]
    assert set(summary["cpu_s_per_phase"]) == {"base", "teachers", "dagger", "evaluation"}
    kwargs = json.dumps({**d.STUDENT_ENV, "drones": fresh[:1], "obs_delay": 1})
    assert main(["eval", str(run / "student.nmp"), "--env", "quadrotor", "--env-kwargs", kwargs,
                 "--episodes", "2", "--json"]) == 0
    assert main(argv) == 2  # an existing distillation is replaced only with --force
    assert "--force" in capsys.readouterr().err
    # the directory stands for its student, on the env it flies: the student's observation and
    # the teachers' drones
    assert main(["export", str(run), "-o", str(tmp_path / "s.nmp")]) == 0
    assert (tmp_path / "s.nmp").read_bytes() == (run / "student.nmp").read_bytes()
    student = neuromotor.load_policy(run)
    assert student.meta["env"] == "quadrotor"
    assert student.meta["env_kwargs"] == {**d.STUDENT_ENV, "drones": json.loads((run / "distil.json").read_text())["drones"]}
    capsys.readouterr()
    assert main(["eval", str(run), "--episodes", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["episodes"] == 2
    (run / "distil.json").unlink()  # without its config it is neither a run nor a distillation
    assert main(["export", str(run), "-o", str(tmp_path / "t.nmp")]) == 2
    assert f"its policy is {run / 'student.nmp'}" in capsys.readouterr().err
    assert not (tmp_path / "t.nmp").exists()


@pytest.mark.parametrize("argv, match", [
    (["--set", "window=8", "--set", "burn_in=8"], "burn_in"),
    (["--set", "mass=0.9"], "mass"),
    (["--set", "wings=2"], "wings"),
])
def test_bad_settings_are_one_line_errors(tmp_path, capsys, argv, match):
    assert main(["distil", "quadrotor", "--run-dir", str(tmp_path / "r")] + argv) == 2
    err = capsys.readouterr().err
    assert match in err and err.count("\n") == 1
    assert not (tmp_path / "r").exists()


def test_only_the_quadrotor_distils():
    with pytest.raises(neuromotor.UserError, match="quadrotor"):
        neuromotor.distil("pendulum")


def _dataset(T: int, n: int, reset_at=()) -> d.Dataset:
    """Observations that say their own step (x[t, :, 0] == t), zero labels."""
    data = d.Dataset()
    x = np.zeros((T, n, 3), np.float32)
    x[..., 0] = np.arange(T)[:, None]
    reset = np.zeros((T, n), bool)
    reset[list(reset_at)] = True
    data.add(x, np.full((T, n, 2), 0.5, np.float32), reset, np.zeros((T, n, 6), np.float32))
    return data


def test_windows_hold_every_step_alike():
    x = _dataset(40, 3).windows(np.random.default_rng(0), 20_000, 8)[0]
    counts = np.bincount(x[..., 0].astype(int).ravel(), minlength=40)
    assert counts.min() > 0.95 * np.median(counts)  # the rollout's first steps too (drawn in the data: 1/8 for step 0)


def test_an_episodes_first_steps_count_and_a_stored_states_burn_in_does_not():
    cfg = d.make_config({"window": 8, "burn_in": 4, "batch_windows": 2, "lr": 1e-9})
    net = d.RecurrentPolicyNet(3, 2, 8, 6, np.random.default_rng(1))
    for reset_at, counted in (((0,), slice(None)), ((), slice(4, None)), ((2,), slice(2, None))):
        data = _dataset(8, 2, reset_at)  # one window per env: steps 0-7
        x, label, reset, h = data.windows(np.random.default_rng(2), 2, 8)
        y, _, _ = net.forward(x, np.where(reset[0][:, None], net.p["h0"], h), reset)
        want = float(((y - label)[counted] ** 2).mean())
        loss = d._update(net, d.Adam(len(net.params), lr=1e-9), data, np.random.default_rng(2), cfg)
        assert loss == pytest.approx(want, rel=1e-5)


def test_distillations_started_in_the_same_second_get_their_own_directories(tmp_path, monkeypatch):
    monkeypatch.setenv("NEUROMOTOR_RUNS", str(tmp_path))
    monkeypatch.setattr("time.strftime", lambda fmt: "20261207-120000")
    first = neuromotor.distil("quadrotor", settings=TINY, progress=False)["run_dir"]
    second = neuromotor.distil("quadrotor", settings=TINY, progress=False)["run_dir"]
    assert first == str(tmp_path / "quadrotor-distil-20261207-120000")
    assert second == first + "-2" and (Path(second) / "student.nmp").is_file()


def test_teachers_drones_fill_every_stratum_of_every_range():
    cfg = d.make_config({"teachers": 16})
    drones = d.draw_drones(cfg, 16, 0, spread=True)
    ratio = np.array([x["thrust"] / x["mass"] for x in drones]) * d.THRUST_TO_WEIGHT
    lo, hi = cfg.min_thrust_to_weight, cfg.max_thrust_to_weight
    strata = {"thrust_to_weight": np.floor((ratio - lo) / (hi - lo) * 16)}
    for name in d.RANGED_FACTORS:
        r = getattr(cfg, name)
        strata[name] = np.floor((np.array([x[name] for x in drones]) - (1 - r)) / (2 * r) * 16)
    for name, s in strata.items():
        assert sorted(s.astype(int)) == list(range(16)), name  # one drone in each sixteenth of the range
    fresh = d.draw_drones(cfg, 100, 1)
    ratio = np.array([x["thrust"] / x["mass"] for x in fresh]) * d.THRUST_TO_WEIGHT
    assert lo <= ratio.min() < lo + 0.1 and hi - 0.1 < ratio.max() <= hi
    assert d.draw_drones(cfg, 16, 1) == d.draw_drones(cfg, 16, 1) != drones  # fresh draws: independent


def test_thrust_to_weight_ranges_are_checked():
    with pytest.raises(neuromotor.UserError, match="exceeds max_thrust_to_weight"):
        d.make_config({"min_thrust_to_weight": 3, "max_thrust_to_weight": 2})
    with pytest.raises(neuromotor.UserError, match="thrust coefficients outside"):
        d.make_config({"max_thrust_to_weight": 8, "mass": 0.5})

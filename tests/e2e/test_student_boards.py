"""The recurrent student of `neuromotor distil quadrotor` (Dense 64 relu -> GRU 32 -> Dense 4 tanh)
on every emulated board: distilled once per module at the smallest budget that is still a
distillation, exported as a float policy file by `neuromotor export`, deployed by `neuromotor
deploy` and flown in the loop by `neuromotor hil` against the host's steps, as RAPTOR's
policy is (test_raptor_boards.py); and its int8 export (from the distillation's directory, checked
on the student's env) the same way, bit for bit with the host's integer steps."""

import hashlib
import json

import numpy as np
import pytest

from neuromotor.envs import env_class
from neuromotor.policy.policy_file import read_policy

from .helpers import board_sha256, ensure_deployed, last_json, nm, recurrent_hil

pytestmark = [pytest.mark.qemu, pytest.mark.slow]

# Two teachers (the student imitates more than one drone), one evaluation leg of 100 steps each,
# two DAgger rounds (beta 1, then 0.5: in the second the student flies half the steps) and a few
# updates: a couple of CPU seconds. The student keeps distil's own sizes (dense 64, hidden 32).
TINY = {"teachers": 2, "base_steps": 100, "teacher_steps": 100, "teacher_eval_every": 100, "teacher_eval_episodes": 1,
        "iterations": 2, "envs_per_teacher": 2, "rollout_steps": 64, "window": 16, "burn_in": 4,
        "batch_windows": 8, "updates": 10, "eval_drones": 1, "eval_episodes": 1, "select_episodes": 1}
EPISODES, STEPS, SEED = 2, 100, 7


@pytest.fixture(scope="module")
def student(tmp_path_factory):
    d = tmp_path_factory.mktemp("student")
    sets = [a for k, v in TINY.items() for a in ("--set", f"{k}={v}")]
    summary = last_json(nm("distil", "quadrotor", "--run-dir", d / "run", "--json", *sets, check=True).stdout)
    policy = d / "student.nmp"
    exported = last_json(nm("export", summary["student"], "-o", policy, "--json", check=True).stdout)
    # The hover reward is floored at 0, and this barely trained student crashes from most starts
    # with every reward at 0: the first stage's unfloored reward makes each return depend on every
    # step flown. The observation is the student's own.
    env_kwargs = {**summary["student_env_kwargs"], "reward": "initial"}
    int8 = d / "student8.nmp"
    report = last_json(nm("export", d / "run", "-o", int8, "--quantize", "int8", "--json", check=True).stdout)
    return {"run": d / "run", "summary": summary, "policy": policy, "exported": exported, "env_kwargs": env_kwargs,
            "int8": int8, "int8_report": report}


def host_flight(spec, env_kwargs: dict):
    """(returns, steps flown) of hil's episodes (episode i alone, seeded SEED + i, from the initial
    state), stepped by PolicySpec.step on the host."""
    factory = env_class("quadrotor", env_kwargs)
    returns, flown = [], 0
    for i in range(EPISODES):
        env = factory(1)
        obs, state, ret = env.reset([np.random.default_rng(SEED + i)]), spec.initial_state(), 0.0
        for _ in range(STEPS):
            action, state = spec.step(obs, state)
            obs, reward, terminated = env.step(action.astype(np.float32))
            ret, flown = ret + float(reward[0]), flown + 1
            if terminated[0]:
                break
        returns.append(ret)
    return returns, flown


def test_the_export_is_distils_recurrent_student(student):
    run, policy = student["run"], student["policy"]
    assert policy.read_bytes() == (run / "student.nmp").read_bytes()
    assert student["exported"]["dtype"] == "float32" and student["exported"]["sizes"] == [22, 64, 32, 4]
    spec = read_policy(policy)
    assert spec.kinds == ["dense", "gru", "dense"] and spec.state_size == 32
    assert env_class("quadrotor", student["env_kwargs"]).obs_dim == spec.obs_dim
    rounds = [json.loads(line)["beta"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert rounds == [1.0, 0.5]
    # The same observation twice from the initial state gives two actions: agreeing with the host
    # step by step on the board needs the state carried.
    obs = env_class("quadrotor", student["env_kwargs"])(1).reset([np.random.default_rng(SEED)])[0]
    first, state = spec.step(obs, spec.initial_state())
    second, _ = spec.step(obs, state)
    assert np.abs(first - second).max() > 1e-4


def test_the_int8_export_is_the_students_checked_on_its_env(student, tmp_path):
    r = student["int8_report"]
    assert r["dtype"] == "int8" and r["sizes"] == [22, 64, 32, 4] and r["rounding"] == "plain"
    assert r["contract"] == "success" and r["int8_success"] >= r["float_success"] - 0.02
    q = read_policy(student["int8"])
    assert q.kinds == ["dense", "gru", "dense"] and q.state_size == 32
    assert r["bytes"] < 0.3 * student["policy"].stat().st_size
    # the student file itself, which names no env, is refused in one line
    res = nm("export", student["policy"], "-o", tmp_path / "x.nmp", "--quantize", "int8")
    err = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(err) == 1 and "export from its run (or distillation) directory" in err[0], res.stderr
    assert not (tmp_path / "x.nmp").exists()


def test_deploy_puts_the_student_on_the_board(board, student):
    policy = student["policy"]
    info = last_json(nm("deploy", policy, "--port", board.port, "--json", check=True).stdout)
    assert info["backend"] == "native"
    assert board_sha256(board.port, "/policy.nmp") == hashlib.sha256(policy.read_bytes()).hexdigest()


def test_hil_agrees_with_the_host_step_by_step(board, student):
    ensure_deployed(board.port, student["policy"])
    r = recurrent_hil(board.port, student["policy"], student["env_kwargs"], episodes=EPISODES, steps=STEPS,
                      seed=SEED)
    returns, flown = host_flight(read_policy(student["policy"]), student["env_kwargs"])
    assert r["steps"] == flown
    np.testing.assert_allclose(r["returns"], returns, rtol=1e-3, atol=1e-3)
    assert len(set(r["returns"])) == EPISODES  # two different starts, each flown from the initial state


def test_hil_of_the_int8_student_is_the_hosts_integer_steps(board, student):
    ensure_deployed(board.port, student["int8"])
    r = recurrent_hil(board.port, student["int8"], student["env_kwargs"], episodes=EPISODES, steps=STEPS, seed=SEED)
    returns, flown = host_flight(read_policy(student["int8"]), student["env_kwargs"])
    assert r["steps"] == flown and r["max_action_rel_diff"] == 0.0
    np.testing.assert_allclose(r["returns"], returns, rtol=1e-6, atol=1e-6)

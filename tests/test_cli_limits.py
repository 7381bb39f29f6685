"""Runs that cannot fit are refused with numbers; evaluation is chunked; run directories are locked."""

import json
import subprocess
import sys
import time

import numpy as np
import pytest

from neuromotor.training import evaluation, memory, rundir
from neuromotor.envs import env_class

FAST = ["--set", "batch_size=16", "--set", "eval_episodes=1", "--quiet"]


def _one_line_error(code, err, *words):
    assert code == 2, err
    assert err.startswith("neuromotor: error: ") and err.count("\n") == 1, err
    for w in words:
        assert w in err, err


@pytest.fixture
def address_space_cap():
    """A regression must fail with MemoryError here, not have the kernel kill processes."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        mapped = int(f.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (mapped + 4 * 2**30, hard))
    yield
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@pytest.mark.usefixtures("address_space_cap")
@pytest.mark.parametrize("args", [
    ["--seeds", "0-100000"],
    ["--set", "buffer_size=2000000000"],
    ["--algo", "ppo", "--set", "num_envs=100000000", "--set", "minibatch_size=64"],
])
def test_a_run_that_cannot_fit_is_refused_with_the_numbers(cli, runs_root, args):
    _one_line_error(*cli("train", "pendulum", "--steps", 10, *args, "--quiet")[::2], "GB", "available")
    assert not any(runs_root.iterdir())


def test_the_estimate_is_checked_against_what_is_available(cli, runs_root, monkeypatch):
    monkeypatch.setattr(memory, "available", lambda: 10**6)
    _one_line_error(*cli("train", "pendulum", "--steps", 10, "--quiet")[::2], "MB", "replay buffers")
    monkeypatch.setattr(memory, "available", lambda: 10**9)
    assert cli("train", "pendulum", "--steps", 10, "--run-dir", runs_root / "ok", *FAST)[0] == 0


def test_estimate_tracks_the_real_replay_size():
    from neuromotor.algos.td3 import TD3, Config

    from neuromotor.training.config import RunConfig

    parts = memory.estimate(TD3, Config(), RunConfig(), env_class("pendulum"), 16)
    assert parts["replay buffers"] == 16 * 10_000 * 11 * 4  # (P, buffer, [act, obs, 1, r, not_done, obs, 1]) float32
    assert 10e6 < sum(parts.values()) < 200e6


def test_chunked_evaluation_equals_all_at_once(monkeypatch):
    from neuromotor.algos.td3 import TD3, Config

    algo = TD3(Config(actor_hidden=(8,), critic_hidden=(8,)), env_class("pendulum"), [3, 4])
    whole = evaluation.Evaluator(env_class("pendulum"), [3, 4], 5).run(algo, 7, record_env=7)
    monkeypatch.setattr(evaluation, "EVAL_MAX_ENVS", 4)  # 2 episodes per agent at a time
    chunked_eval = evaluation.Evaluator(env_class("pendulum"), [3, 4], 5)
    assert chunked_eval.chunk == 2
    chunked = chunked_eval.run(algo, 7, record_env=7)
    np.testing.assert_allclose(chunked[0], whole[0], rtol=1e-6)
    np.testing.assert_allclose(chunked[1], whole[1], rtol=1e-6)  # agent 1, episode 2's states


def test_a_huge_episode_count_does_not_allocate_every_env():
    ev = evaluation.Evaluator(env_class("pendulum"), [0], 100_000_000)
    assert ev.chunk * 1 <= evaluation.EVAL_MAX_ENVS


def test_default_run_names_never_collide(cli, runs_root):
    for _ in range(3):
        assert cli("train", "pendulum", "--steps", 10, *FAST)[0] == 0
    dirs = sorted(p.name for p in runs_root.iterdir())
    assert len(dirs) == 3, dirs
    assert all((runs_root / d / rundir.SUMMARY).is_file() for d in dirs)


def test_a_second_trainer_in_the_same_run_dir_is_refused(cli, tmp_path):
    run_dir = tmp_path / "r"
    assert cli("train", "pendulum", "--steps", 20, "--run-dir", run_dir, *FAST)[0] == 0
    before = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    with rundir.locked(run_dir):  # as a running trainer holds it
        _one_line_error(*cli("train", "--resume", run_dir, "--steps", 40)[::2], "in use")
        _one_line_error(*cli("train", "pendulum", "--steps", 20, "--run-dir", run_dir, "--force", "--quiet")[::2],
                        "in use")
    assert {p.name: p.read_bytes() for p in run_dir.iterdir()} == before
    assert cli("train", "--resume", run_dir, "--steps", 40, "--quiet")[0] == 0


def test_two_trainer_processes_one_run_dir(tmp_path):
    """A real second process exits 2 with one line while the first keeps training into the directory."""
    run_dir = tmp_path / "r"
    cmd = [sys.executable, "-m", "neuromotor", "train", "pendulum", "--run-dir", str(run_dir), *FAST]
    first = subprocess.Popen(cmd + ["--steps", "1000000"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while not (run_dir / rundir.CONFIG).exists() and time.time() < deadline:
            assert first.poll() is None, first.communicate()
            time.sleep(0.05)
        second = subprocess.run(cmd + ["--steps", "10", "--force"], capture_output=True, text=True, timeout=120)
        assert second.returncode == 2 and "in use" in second.stderr and second.stderr.count("\n") == 1, second.stderr
        assert first.poll() is None
    finally:
        first.kill()
        first.wait()
    assert json.loads((run_dir / rundir.CONFIG).read_text())["run"]["steps"] == 1000000

"""TensorBoard event files in run directories, read back with TensorBoard's own reader."""

import json
import shutil

import numpy as np
import pytest

event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")


def _scalars(directory) -> dict:
    acc = event_accumulator.EventAccumulator(str(directory))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def _metrics(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _train(cli, run_dir, *extra):
    code, out, err = cli("train", *extra, "--run-dir", run_dir, "--quiet",
                         "--set", "eval_every=100", "--set", "eval_episodes=2")
    assert code == 0, err


def test_population_agents_are_separate_runs_with_one_tag_scheme(cli, tmp_path):
    run = tmp_path / "run"
    _train(cli, run, "pendulum", "--seeds", "3,8", "--steps", 300, "--set", "learning_starts=50")
    metrics = _metrics(run)
    for k, seed in enumerate((3, 8)):
        tags = _scalars(run / f"agent{k}_seed{seed}")
        assert {"eval/return_mean", "eval/return_std", "train/episode_return", "lr/actor", "lr/critic"} <= set(tags)
        want = [(r["step"], r["eval_return_mean"]) for r in metrics if r["agent"] == k]
        got = tags["eval/return_mean"]
        assert [s for s, _ in got] == [s for s, _ in want] == [0, 100, 200, 300]
        np.testing.assert_allclose([v for _, v in got], [v for _, v in want], rtol=1e-6)
        assert tags["lr/actor"][-1][1] == pytest.approx(1e-3)
        # the one 200-step training episode each agent finished
        assert [s for s, _ in tags["train/episode_return"]] == [200]
    whole = _scalars(run)
    assert [s for s, _ in whole["perf/env_steps_per_s"]] == [100, 200, 300]
    assert all(v > 0 for _, v in whole["perf/env_steps_per_s"])


def test_ppo_writes_its_adaptive_learning_rate_and_losses(cli, tmp_path):
    run = tmp_path / "run"
    _train(cli, run, "pendulum", "--algo", "ppo", "--steps", 400, "--set", "num_envs=2", "--set", "num_steps=100",
           "--set", "minibatch_size=50")
    tags = _scalars(run)  # a single agent is the run itself
    assert not any(p.is_dir() for p in run.iterdir())
    assert {"perf/env_steps_per_s", "loss/actor", "loss/critic", "policy/kl", "policy/entropy", "lr/actor"} <= set(tags)
    with np.load(run / "checkpoint.npz") as z:
        assert tags["lr/actor"][-1][1] == pytest.approx(float(z["lr"][0]), rel=1e-6)


def test_a_resumed_run_drops_what_was_written_after_its_checkpoint(cli, tmp_path):
    run = tmp_path / "run"
    _train(cli, run, "pendulum", "--steps", 200, "--set", "checkpoint_every=100")
    saved = tmp_path / "checkpoint-200.npz"
    shutil.copy(run / "checkpoint.npz", saved)
    code, _, err = cli("train", "--resume", run, "--steps", 400, "--quiet")
    assert code == 0, err
    first = dict(_scalars(run)["eval/return_mean"])
    # as if the second session had been killed after writing events up to 400 but before
    # saving a checkpoint past 200
    shutil.copy(saved, run / "checkpoint.npz")
    code, _, err = cli("train", "--resume", run, "--steps", 300, "--quiet")
    assert code == 0, err
    got = _scalars(run)["eval/return_mean"]
    assert [s for s, _ in got] == [0, 100, 200, 300]
    assert dict(got)[200] == pytest.approx(first[200])
    last = [r["eval_return_mean"] for r in _metrics(run) if r["step"] == 300]
    assert dict(got)[300] == pytest.approx(last[0], rel=1e-6)


def test_force_removes_the_old_event_files(cli, tmp_path):
    run = tmp_path / "run"
    _train(cli, run, "pendulum", "--seeds", "0,1", "--steps", 100)
    code, _, err = cli("train", "pendulum", "--steps", 100, "--run-dir", run, "--force", "--quiet")
    assert code == 0, err
    assert not (run / "agent0_seed0").exists() and not (run / "agent1_seed1").exists()
    assert len(list(run.glob("events.out.tfevents.*"))) == 1
    assert [s for s, _ in _scalars(run)["eval/return_mean"]] == [0, 100]


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_td3_writes_its_losses_per_agent(cli, tmp_path, backend):
    """loss/critic and loss/actor of TD3 (either backend) at every evaluation after learning
    starts: the last update's values, as the same training in this process gives them."""
    from neuromotor.algos.td3 import TD3, Config
    from neuromotor.native import _nm_host
    from neuromotor.envs import env_class
    if backend == "native" and _nm_host is None:
        pytest.fail("the compiled extension is missing: pip install -e .")
    run = tmp_path / "run"
    _train(cli, run, "pendulum", "--seeds", "3,8", "--steps", 300, "--set", "learning_starts=150",
           "--set", f"backend={backend}")
    algo = TD3(Config(learning_starts=150, backend=backend), env_class("pendulum"), [3, 8])
    for _ in range(300):
        algo.advance()
    want = algo.scalars()
    for k, seed in enumerate((3, 8)):
        tags = _scalars(run / f"agent{k}_seed{seed}")
        for tag in ("loss/critic", "loss/actor"):
            assert [s for s, _ in tags[tag]] == [200, 300], tag  # none before the first update
            assert tags[tag][-1][1] == pytest.approx(float(want[tag][k]), rel=1e-6), tag
        assert tags["loss/critic"][-1][1] > 0
        assert tags["lr/critic"][-1][1] == pytest.approx(1e-3)

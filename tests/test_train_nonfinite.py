"""A diverging run stops with exit 2 and one line, before its NaN reaches a checkpoint,
metrics.jsonl, summary.json or --json output; the last good checkpoint stays."""

import json

import numpy as np
import pytest

from neuromotor.training.evaluation import Evaluator
from neuromotor.training.rundir import RunDir
from neuromotor.cli import main
from neuromotor.errors import UserError


def _strict_json(text: str):
    def refuse(name):
        raise ValueError(f"{name} is not JSON")
    return json.loads(text, parse_constant=refuse)


def _train(run, *extra):
    seed = [] if "--seeds" in extra else ["--seed", "0"]
    return main(["train", "pendulum", *seed, "--run-dir", str(run), "--quiet", "--json", *extra])


@pytest.mark.parametrize("extra,diverged", [
    (["--algo", "td3", "--steps", "1000", "--set", "actor_lr=1e30"], "actor"),
    (["--algo", "td3", "--steps", "1000", "--seeds", "0-1", "--shards", "2", "--set", "critic_lr=1e30"], "critic"),
    (["--algo", "ppo", "--steps", "2000", "--set", "critic_lr=1e30", "--set", "num_envs=2",
      "--set", "num_steps=100", "--set", "minibatch_size=100"], "critic"),
])
def test_diverging_run_stops_with_exit_2_and_keeps_last_good_checkpoint(tmp_path, capsys, extra, diverged):
    run = tmp_path / "run"
    # learning starts at step 100 (TD3) or after the first rollout (PPO): the step-200
    # checkpoint is either still good or never written, never a NaN one.
    assert _train(run, *extra, "--set", "checkpoint_every=100", "--set", "eval_every=100") == 2
    out, err = capsys.readouterr()
    assert out == ""  # no --json summary of a diverged run
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and "RuntimeWarning" not in err
    assert lines[0].startswith("neuromotor: error: training diverged by step ")
    assert f" {diverged}" in lines[0] and "shard" not in lines[0]
    assert not (run / "summary.json").exists()
    for line in (run / "metrics.jsonl").read_text().splitlines():
        record = _strict_json(line)
        assert np.isfinite(record["eval_return_mean"])
    if "the last good checkpoint (step 100)" in lines[0]:
        with np.load(run / "checkpoint.npz") as ckpt:
            steps = [int(ckpt[k]) for k in ckpt.files if k.endswith("steps") and "replay" not in k]
            assert set(steps) == {100}
            for k in ckpt.files:
                if ckpt[k].dtype.kind == "f":
                    assert np.isfinite(ckpt[k]).all(), k
    else:
        assert "no checkpoint had been written yet" in lines[0]
        assert not (run / "checkpoint.npz").exists()


def test_td3_divergence_keeps_the_step_100_checkpoint(tmp_path, capsys):
    run = tmp_path / "run"
    assert _train(run, "--algo", "td3", "--steps", "1000", "--set", "actor_lr=1e30",
                  "--set", "checkpoint_every=100", "--set", "eval_every=100") == 2
    assert "the last good checkpoint (step 100) is kept" in capsys.readouterr().err
    before = (run / "checkpoint.npz").read_bytes()
    assert main(["train", "--resume", str(run), "--quiet"]) == 2  # diverges again, same place
    assert (run / "checkpoint.npz").read_bytes() == before


def test_healthy_run_json_is_strict(tmp_path, capsys):
    run = tmp_path / "run"
    assert _train(run, "--algo", "td3", "--steps", "400", "--set", "eval_every=200") == 0
    summary = _strict_json(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["steps"] == 400 and np.isfinite(summary["eval_return_mean"])
    assert _strict_json((run / "summary.json").read_text()) == summary


def test_check_names_arrays_without_shard_prefixes(tmp_path):
    state = {"shard0.actor": np.zeros(3, np.float32), "shard1.critic": np.float32([0, np.inf]),
             "shard1.replay": np.float32([np.nan]), "shard1.steps": np.int64(5)}
    run = RunDir(tmp_path)
    with pytest.raises(UserError, match=r"by step 7: NaN or inf in critic, replay;.*no checkpoint had been"):
        run.refuse_diverged(state, 7)
    run.refuse_diverged({"actor": np.zeros(2), "steps": np.int64(1)}, 1)
    evaluator = Evaluator(None, [0], 2)
    evaluator.run = lambda algo, step: np.array([[1.0, np.nan]])
    with pytest.raises(UserError, match="non-finite rewards"):
        evaluator.run_finite(None, 3)

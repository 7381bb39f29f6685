"""`neuromotor train / eval / runs`: outputs, run directories, configs and every kind of bad input."""

import json
import zipfile

import numpy as np
import pytest

from neuromotor.training import run_policy, rundir
from run_checks import kill_then_resume_equals_uninterrupted

FAST = ["--set", "batch_size=16", "--set", "eval_episodes=2", "--quiet"]


def _train(cli, run_dir, *extra, steps=300):
    return cli("train", "pendulum", "--steps", steps, "--run-dir", run_dir, *FAST, *extra)


def test_train_writes_a_run_dir_and_one_json_line(tmp_path, cli):
    run_dir = tmp_path / "r"
    code, out, _ = _train(cli, run_dir, "--json", "--set", "eval_every=100")
    assert code == 0
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["steps"] == 300 and summary["run_dir"] == str(run_dir)
    assert {"steps", "wall_s", "eval_return_mean", "eval_return_std", "run_dir"} <= set(summary)  # the --json contract
    assert "eval_success" not in summary  # the pendulum judges no success
    assert summary["eval_return_mean"] < 0 and summary["eval_return_std"] >= 0
    assert [a["seed"] for a in summary["agents"]] == [0]
    for name in rundir.OWN_FILES:
        assert (run_dir / name).is_file() == (name != rundir.BEST), name  # no success judged: no best
    cfg = json.loads((run_dir / "config.json").read_text())
    assert cfg["algo_config"]["batch_size"] == 16 and cfg["run"]["eval_episodes"] == 2
    steps = [r["step"] for r in rundir.read_metrics(run_dir)]
    assert steps == [0, 100, 200, 300]
    with np.load(run_dir / "checkpoint.npz", allow_pickle=False) as ck:
        assert int(ck["steps"]) == 300 and ck["replay"].shape == (1, 10_000, 11)
    assert (run_dir / "learning_curve.png").read_bytes()[:4] == b"\x89PNG"


def test_population_json_reports_each_agent(tmp_path, cli):
    code, out, _ = cli("train", "pendulum", "--seeds", "0-2", "--steps", 120, "--run-dir", tmp_path / "p",
                       "--json", *FAST)
    assert code == 0
    summary = json.loads(out.strip().splitlines()[-1])
    assert [a["seed"] for a in summary["agents"]] == [0, 1, 2]
    means = [a["eval_return_mean"] for a in summary["agents"]]
    assert summary["eval_return_mean"] == pytest.approx(np.mean(means))


def test_toml_config_and_set_overrides(tmp_path, cli):
    toml = tmp_path / "c.toml"
    toml.write_text('steps = 150\n[algo]\nbatch_size = 8\nactor_hidden = [32, 16]\n')
    run_dir = tmp_path / "r"
    code, _, _ = cli("train", "pendulum", "--config", toml, "--set", "tau=0.01", "--run-dir", run_dir, "--quiet")
    assert code == 0
    cfg = json.loads((run_dir / "config.json").read_text())
    assert cfg["run"]["steps"] == 150
    assert cfg["algo_config"]["batch_size"] == 8 and cfg["algo_config"]["tau"] == 0.01
    assert run_policy.load_policy_spec(run_dir).sizes == [3, 32, 16, 1]


@pytest.mark.parametrize("args, message", [
    (["cartpole"], "unknown environment 'cartpole'"),
    (["pendulum", "--algo", "dqn"], "unknown algorithm 'dqn'"),
    (["pendulum", "--steps", "0"], "steps must be an integer from 1"),
    (["pendulum", "--steps", "-5"], "steps must be an integer from 1"),
    (["pendulum", "--set", "batch_sise=10"], "unknown setting 'batch_sise'"),
    (["pendulum", "--set", "batch_size=ten"], "batch_size must be an integer"),
    (["pendulum", "--seeds", "3-x"], "bad seed list"),
    (["pendulum", "--set", "warmup_actions=zero"], "warmup_actions must be"),
    # the same refusal from inside population shard processes, as one line
    (["pendulum", "--seeds", "0-3", "--shards", "2", "--set", "warmup_actions=zero"], "warmup_actions must be"),
])
def test_bad_input_is_one_clear_message(tmp_path, cli, args, message, runs_root):
    code, out, err = cli("train", *args, "--quiet")
    assert code == 2
    assert err.startswith("neuromotor: error: ") and message in err and err.count("\n") == 1
    assert not any(runs_root.iterdir())  # nothing written


def test_bad_toml(tmp_path, cli, runs_root):
    bad = tmp_path / "bad.toml"
    bad.write_text("steps = = 3\n")
    code, _, err = cli("train", "pendulum", "--config", bad)
    assert code == 2 and "malformed TOML" in err
    bad.write_text("gama = 0.9\n")
    code, _, err = cli("train", "pendulum", "--config", bad)
    assert code == 2 and "unknown setting 'gama'" in err
    code, _, err = cli("train", "pendulum", "--config", tmp_path / "missing.toml")
    assert code == 2 and "cannot read config" in err
    assert not any(runs_root.iterdir())


def test_existing_run_is_not_overwritten_without_force(tmp_path, cli):
    run_dir = tmp_path / "r"
    assert _train(cli, run_dir, steps=100)[0] == 0
    before = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    code, _, err = _train(cli, run_dir, steps=100)
    assert code == 2 and "already exists" in err
    assert {p.name: p.read_bytes() for p in run_dir.iterdir()} == before
    assert _train(cli, run_dir, "--force", steps=120)[0] == 0
    assert json.loads((run_dir / "summary.json").read_text())["steps"] == 120


def test_corrupted_checkpoint(tmp_path, cli):
    run_dir = tmp_path / "r"
    assert _train(cli, run_dir, steps=100)[0] == 0
    ck = run_dir / "checkpoint.npz"
    ck.write_bytes(ck.read_bytes()[: ck.stat().st_size // 2])  # cut short, as by a full disk
    damaged = ck.read_bytes()
    for args in (["eval", run_dir], ["train", "--resume", run_dir, "--steps", 200]):
        code, _, err = cli(*args)
        assert code == 2 and "corrupted" in err and err.count("\n") == 1
    assert ck.read_bytes() == damaged
    ck.write_bytes(b"not a zip file at all")
    assert cli("eval", run_dir)[0] == 2


def test_checkpoint_of_another_network_shape(tmp_path, cli):
    run_dir = tmp_path / "r"
    assert _train(cli, run_dir, steps=100)[0] == 0
    cfg_path = run_dir / "config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["algo_config"]["actor_hidden"] = [32, 32]
    cfg_path.write_text(json.dumps(cfg))
    ck = (run_dir / "checkpoint.npz").read_bytes()
    for args in (["eval", run_dir], ["train", "--resume", run_dir, "--steps", 200]):
        code, _, err = cli(*args)
        assert code == 2 and "does not match this configuration" in err and "actor" in err
    assert (run_dir / "checkpoint.npz").read_bytes() == ck
    # a checkpoint npz holding a pickled object array is refused from its header, not unpickled
    np.savez(run_dir / "checkpoint.npz", steps=np.array([{"x": 1}], dtype=object))
    cfg["algo_config"]["actor_hidden"] = [64, 64]
    cfg_path.write_text(json.dumps(cfg))
    code, _, err = cli("eval", run_dir)
    assert code == 2 and "steps is object[1]" in err


@pytest.mark.slow
def test_sigkill_then_resume_equals_uninterrupted(tmp_path, cli, neuromotor_process):
    # Enough steps after the first checkpoint that the kill lands mid-run however fast training is.
    args = ["--seed", 7, "--steps", 4000, "--set", "checkpoint_every=200", "--set", "eval_every=1000", *FAST]
    straight, killed, _ = kill_then_resume_equals_uninterrupted(tmp_path, cli, neuromotor_process, args, 4000, 200)
    # metrics: every evaluation exactly once, and the same numbers as the uninterrupted run
    ma, mb = rundir.read_metrics(straight), rundir.read_metrics(killed)
    assert [r["step"] for r in mb] == [0, 1000, 2000, 3000, 4000]
    assert [r["eval_return_mean"] for r in ma] == [r["eval_return_mean"] for r in mb]


def test_eval_renders_a_gif_and_runs_lists_the_run(tmp_path, cli, runs_root):
    run_dir = runs_root / "demo"
    assert _train(cli, run_dir, steps=100)[0] == 0
    gif = tmp_path / "p.gif"
    code, out, _ = cli("eval", run_dir, "--episodes", 3, "--render", gif, "--json")
    assert code == 0
    result = json.loads(out.strip().splitlines()[-1])
    assert result["steps"] == 100 and result["agents"][0]["seed"] == 0
    from PIL import Image

    with Image.open(gif) as im:
        assert im.format == "GIF" and im.n_frames == 200
    code, out, _ = cli("runs")
    assert code == 0 and "demo" in out and "pendulum" in out
    assert cli("eval", run_dir, "--episodes", 0)[0] == 2
    assert cli("eval", tmp_path / "nowhere")[0] == 2
    with zipfile.ZipFile(run_dir / "checkpoint.npz") as z:
        assert "actor.npy" in z.namelist()

"""A checkpoint speaks for itself: resume/eval/export refuse a config.json that disagrees with it."""

import json

import numpy as np
import pytest

from neuromotor.training import rundir

FAST = ["--set", "batch_size=16", "--set", "eval_episodes=1", "--set", "eval_every=50", "--quiet"]


def _one_line_error(code, err, *words):
    assert code == 2, err
    assert err.startswith("neuromotor: error: ") and err.count("\n") == 1, err
    for w in words:
        assert w in err, err


def _snapshot(run_dir):
    return {p.name: p.read_bytes() for p in run_dir.iterdir()}


def _edit_config(run_dir, **changes):
    path = run_dir / rundir.CONFIG
    doc = json.loads(path.read_text())
    for key, value in changes.items():
        section, _, field = key.rpartition("__")
        (doc[section] if section else doc)[field] = value
    path.write_text(json.dumps(doc))


@pytest.fixture
def finished(cli, tmp_path):
    run_dir = tmp_path / "r"
    assert cli("train", "pendulum", "--steps", 100, "--run-dir", run_dir, *FAST)[0] == 0
    return run_dir


@pytest.fixture
def population(cli, tmp_path):
    run_dir = tmp_path / "p"
    assert cli("train", "pendulum", "--seeds", "0-1", "--shards", 2, "--steps", 50, "--run-dir", run_dir,
               *FAST)[0] == 0
    return run_dir


@pytest.mark.parametrize("seeds", [[7], [1]])
def test_seeds_edited_in_config_are_refused_everywhere(finished, cli, tmp_path, seeds):
    _edit_config(finished, seeds=seeds)
    before = _snapshot(finished)
    for args in (["train", "--resume", finished, "--steps", 150], ["eval", finished],
                 ["export", finished, "-o", tmp_path / "p.nmp"]):
        _one_line_error(*cli(*args)[::2], "seeds", "[0]")
    assert _snapshot(finished) == before
    assert not (tmp_path / "p.nmp").exists()


def test_sharded_population_seeds_are_checked_too(population, cli):
    _edit_config(population, seeds=[1, 0])
    _one_line_error(*cli("eval", population)[::2], "seeds", "[0, 1]")


def test_resume_to_fewer_steps_than_the_checkpoint_is_refused(finished, cli):
    before = _snapshot(finished)
    _one_line_error(*cli("train", "--resume", finished, "--steps", 50)[::2], "100", "--steps 50")
    assert _snapshot(finished) == before


def test_config_steps_below_the_checkpoint_are_refused(finished, cli):
    _edit_config(finished, run__steps=60)
    before = _snapshot(finished)
    _one_line_error(*cli("train", "--resume", finished)[::2], "100", "60")
    assert _snapshot(finished) == before


def test_env_edited_in_config_is_named(finished, cli):
    pytest.importorskip("mujoco")
    _edit_config(finished, env="ant")
    _one_line_error(*cli("eval", finished)[::2], "pendulum", "ant")


def test_resume_of_a_finished_run_with_more_steps_still_works(finished, cli):
    code, out, err = cli("train", "--resume", finished, "--steps", 150, "--json")
    assert code == 0, err
    assert json.loads(out.strip().splitlines()[-1])["steps"] == 150
    assert json.loads((finished / rundir.CONFIG).read_text())["run"]["steps"] == 150


def test_checkpoints_without_identity_still_load(finished, cli):
    """Checkpoints written before env/algo were recorded in them."""
    path = finished / rundir.CHECKPOINT
    with np.load(path, allow_pickle=False) as ck:
        arrays = {k: ck[k] for k in ck.files if not k.startswith("run.")}
    np.savez(path, **arrays)
    assert cli("eval", finished, "--episodes", 1)[0] == 0

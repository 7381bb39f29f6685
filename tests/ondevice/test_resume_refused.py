"""`neuromotor train --resume RUN` on a run directory made by `train-on-device` is refused
(exit 2, one line, the run untouched): its checkpoint holds the board's actor but neither
critics nor replay, so continuing on the host would start from untrained critics. Both a
finished run (write_run_dir) and one cut short after it started are recognised. No board
needed: the run directory is written by the same host functions train-on-device uses."""

import numpy as np
import pytest

from neuromotor.algos.td3 import TD3
from neuromotor.envs.pendulum import PendulumVec
from neuromotor.policy import encode
from neuromotor.boards.ondevice.rundir import algo_config, write_run_dir, write_started


def _snapshot(run_dir):
    """The run's files (not the hidden lock file the CLI keeps while it works in the directory)."""
    return {p.name: p.read_bytes() for p in sorted(run_dir.iterdir()) if not p.name.startswith(".")}


def _refused(cli, run_dir):
    before = _snapshot(run_dir)
    code, out, err = cli("train", "--resume", run_dir, "--quiet")
    assert code == 2, (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "train-on-device" in lines[0] and "cannot be resumed" in lines[0], err
    assert _snapshot(run_dir) == before, "a refused resume changed the run directory"


def test_finished_ondevice_run_is_not_resumed(tmp_path, cli, runs_root):
    td3 = TD3(algo_config("small"), PendulumVec, [4])
    spec = td3.policy_spec(0)
    run_dir = tmp_path / "board-run"
    run_dir.mkdir()
    write_started(run_dir, "small", 4, 200)
    write_run_dir(run_dir, spec, encode(spec), "small", 4, 200, [], {"kernels": "usermod"}, eval_episodes=1)
    assert (run_dir / "checkpoint.npz").is_file()  # a checkpoint the host could load...
    with np.load(run_dir / "checkpoint.npz") as ck:
        assert int(ck["steps"]) == 200
    _refused(cli, run_dir)                           # ...but must not continue from


def test_interrupted_ondevice_run_is_not_resumed(tmp_path, cli, runs_root):
    """A board reset leaves config and progress but no policy: still an on-device run."""
    from neuromotor.training import rundir
    from neuromotor.training.config import RunConfig, RunSpec
    run_dir = tmp_path / "cut-short"
    rundir.prepare(run_dir, False)
    write_started(run_dir, "small", 1, 5000)
    rundir.write_config(run_dir, RunSpec("pendulum", "td3", [1], RunConfig(steps=5000, shards=1), algo_config("small")))
    _refused(cli, run_dir)


@pytest.mark.parametrize("ondevice", [False, True])
def test_host_run_still_resumes(tmp_path, cli, runs_root, ondevice):
    """The check keys on the on-device marker only: a host run resumes as before."""
    run_dir = tmp_path / "host-run"
    code, _, err = cli("train", "pendulum", "--steps", 150, "--run-dir", run_dir, "--set", "batch_size=8",
                       "--set", "eval_episodes=1", "--quiet")
    assert code == 0, err
    if ondevice:
        write_started(run_dir, "small", 0, 150)
        _refused(cli, run_dir)
    else:
        code, _, err = cli("train", "--resume", run_dir, "--steps", 200, "--quiet")
        assert code == 0, err


def test_host_run_forced_over_a_board_run_resumes(tmp_path, cli, runs_root):
    """`train --force` over a board's run directory clears its on-device marker with the rest:
    the new host run is resumable."""
    run_dir = tmp_path / "reused"
    run_dir.mkdir()
    write_started(run_dir, "small", 0, 150)
    args = ["--run-dir", run_dir, "--set", "batch_size=8", "--set", "eval_episodes=1", "--quiet"]
    code, _, err = cli("train", "pendulum", "--steps", 150, *args)
    assert code == 2 and "already exists" in err, err  # not silently reused
    code, _, err = cli("train", "pendulum", "--steps", 150, "--force", *args)
    assert code == 0, err
    code, _, err = cli("train", "--resume", run_dir, "--steps", 200, "--quiet")
    assert code == 0, err

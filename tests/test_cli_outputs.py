"""What the CLI writes: only regular files the user meant, never a run's own files, atomically."""

import os
import shutil
import stat

import pytest

from neuromotor.training import rundir
from special_files import private_null

FAST = ["--set", "batch_size=16", "--set", "eval_episodes=1", "--set", "eval_every=50", "--quiet"]


def _snapshot(run_dir):
    return {p.name: p.read_bytes() for p in run_dir.iterdir()}


def _one_line_error(code, err, *words):
    assert code == 2, err
    assert err.startswith("neuromotor: error: ") and err.count("\n") == 1, err
    for w in words:
        assert w in err, err


@pytest.mark.parametrize("name", rundir.OWN_FILES + (rundir.LOCK, rundir.ON_DEVICE))
def test_export_refuses_the_runs_own_files(run_copy, cli, name):
    (run_copy / name).touch()
    before = _snapshot(run_copy)
    code, _, err = cli("export", run_copy, "-o", run_copy / name)
    _one_line_error(code, err, name)
    assert _snapshot(run_copy) == before


def test_export_writes_a_host_runs_policy_beside_its_checkpoint(run_copy, cli):
    """`make demo`'s export: runs/demo -o runs/demo/policy.nmp, new and then replaced."""
    target = run_copy / rundir.BOARD_POLICY
    for _ in range(2):
        code, out, err = cli("export", run_copy, "-o", target)
        assert code == 0, err
        assert target.read_bytes()[:4] == b"NMPL" and "wrote" in out


def test_export_refuses_the_policy_a_board_wrote(run_copy, cli):
    (run_copy / rundir.ON_DEVICE).write_text("{}")
    (run_copy / rundir.BOARD_POLICY).write_bytes(b"the board's own policy")
    before = _snapshot(run_copy)
    _one_line_error(*cli("export", run_copy, "-o", run_copy / rundir.BOARD_POLICY)[::2], rundir.BOARD_POLICY)
    assert _snapshot(run_copy) == before


def test_export_refuses_another_runs_files_and_its_own_via_a_symlink(run_copy, trained, cli, tmp_path):
    (tmp_path / "alias.nmp").symlink_to(run_copy / "config.json")
    before = _snapshot(run_copy)
    _one_line_error(*cli("export", trained, "-o", tmp_path / "alias.nmp")[::2])
    _one_line_error(*cli("export", trained, "-o", run_copy / "checkpoint.npz")[::2])
    assert _snapshot(run_copy) == before


def test_export_over_its_own_source_policy_is_refused(run_copy, cli, tmp_path):
    nmp = tmp_path / "p.nmp"
    assert cli("export", run_copy, "-o", nmp)[0] == 0
    data = nmp.read_bytes()
    _one_line_error(*cli("export", nmp, "-o", nmp, "--format", "c-header")[::2])
    assert nmp.read_bytes() == data


@pytest.mark.parametrize("target, words", [
    ("NULL", ["not a regular file"]),
    ("", ["empty"]),
    ("DIR", ["directory"]),
    ("/proc/neuromotor.nmp", ["cannot write"]),
    ("FILE/x.nmp", ["not a directory"]),
    ("missing/x.nmp", ["does not exist"]),
    ("FIFO", ["not a regular file"]),
])
def test_export_refuses_non_regular_targets(trained, cli, tmp_path, target, words):
    (tmp_path / "FILE").write_text("keep")
    os.mkfifo(tmp_path / "FIFO")
    null = private_null(tmp_path)
    target = target if target.startswith("/") or not target else str(tmp_path / target)
    if target.endswith("DIR"):
        os.mkdir(target)
    code, _, err = cli("export", trained, "-o", null if target.endswith("NULL") else target)
    _one_line_error(code, err, *words)
    assert stat.S_ISCHR(null.lstat().st_mode)
    assert stat.S_ISFIFO((tmp_path / "FIFO").lstat().st_mode)
    assert (tmp_path / "FILE").read_text() == "keep"


def test_export_through_a_symlink_writes_the_file_it_points_to(trained, cli, tmp_path):
    real = tmp_path / "real.nmp"
    real.write_bytes(b"old")
    (tmp_path / "link.nmp").symlink_to(real)
    assert cli("export", trained, "-o", tmp_path / "link.nmp")[0] == 0
    assert (tmp_path / "link.nmp").is_symlink() and real.read_bytes()[:4] != b"old"


def test_force_removes_the_old_runs_policy_file(run_copy, cli):
    (run_copy / "policy.nmp").write_bytes(b"stale policy of the old run")
    (run_copy / "on_device.json").write_text("{}")
    code, _, err = cli("train", "pendulum", "--steps", "50", "--run-dir", run_copy, "--force", *FAST)
    assert code == 0, err
    assert not (run_copy / "policy.nmp").exists() and not (run_copy / "on_device.json").exists()


def test_bench_out_that_is_a_file_fails_before_any_board_is_used(cli, tmp_path, monkeypatch):
    import neuromotor.boards.bench as bench

    def no_board(*a, **k):
        raise AssertionError("benchmarked a board before checking --out")

    monkeypatch.setattr(bench, "bench_port", no_board)
    (tmp_path / "f").write_text("keep")
    code, _, err = cli("bench", "--port", "/dev/nonexistent-port", "--out", tmp_path / "f")
    _one_line_error(code, err, "not a directory")
    assert (tmp_path / "f").read_text() == "keep"


@pytest.mark.parametrize("gif, words", [("nodir/x.gif", ["does not exist"]), ("FILE/x.gif", ["not a directory"])])
def test_eval_render_to_a_bad_path_fails_before_evaluating(trained, cli, tmp_path, gif, words):
    (tmp_path / "FILE").write_text("keep")
    before = _snapshot(trained)
    code, _, err = cli("eval", trained, "--episodes", 1, "--render", tmp_path / gif)
    _one_line_error(code, err, *words)
    assert _snapshot(trained) == before


@pytest.mark.parametrize("args, words", [
    (["--predict-mhz", "0"], ["--predict-mhz"]), (["--predict-mhz", "-1"], ["--predict-mhz"]),
    (["--predict-mhz", "nan"], ["--predict-mhz"]), (["-n", "0"], ["-n must be from 1"]),
    (["--out", ""], ["--out is empty"]),
])
def test_bench_settings_are_checked_first(cli, args, words):
    _one_line_error(*cli("bench", "--port", "/dev/nonexistent-port", *args)[::2], *words)


def test_runs_lists_good_runs_beside_broken_ones(trained, cli, tmp_path):
    root = tmp_path / "runs"
    shutil.copytree(trained, root / "good")
    (root / "list").mkdir()
    (root / "list" / "config.json").write_text("[1, 2]")
    (root / "badmetrics").mkdir()
    shutil.copy(trained / "config.json", root / "badmetrics" / "config.json")
    (root / "badmetrics" / "metrics.jsonl").write_text('[1]\n{"step": "x"}\n')
    code, out, err = cli("runs", root)
    assert code == 0, err
    assert "good" in out and "badmetrics" in out and "list" not in out.split()
    code, out, _ = cli("runs", root, "--json")
    assert code == 0 and len(out.strip().splitlines()) == 2

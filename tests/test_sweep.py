"""neuromotor sweep: configurations x seeds as run directories, on worker processes or Ray, and
the same numbers whether a trial ran alone, in a sweep, on Ray, or was killed and resumed."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from neuromotor.training import run_policy, rundir, sweep
from neuromotor.cli import main

SETTINGS = ["--steps", "600", "--seeds", "0-1", "--grid", "batch_size=16,32", "--set", "eval_episodes=1",
            "--set", "eval_every=200", "--set", "checkpoint_every=100", "--quiet", "--json"]


def _sweep(capsys, sweep_dir, *extra):
    code = main(["sweep", "pendulum", *SETTINGS, "--dir", str(sweep_dir), *extra])
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out.strip().splitlines()[-1])


def _numbers(result) -> dict:
    return {(t["config"]["batch_size"], t["seed"]): t["eval_return_mean"] for t in result["trials"]}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The sweep undisturbed, on the local backend."""
    sweep_dir = tmp_path_factory.mktemp("sweep") / "local"
    code = main(["sweep", "pendulum", *SETTINGS, "--dir", str(sweep_dir)])
    assert code == 0
    return sweep.read_plan(sweep_dir)["results"]


def test_local_sweep_is_configurations_times_seeds_in_run_directories(reference):
    assert sorted(_numbers(reference)) == [(16, 0), (16, 1), (32, 0), (32, 1)]
    assert {"trials", "wall_s", "configs", "agents", "backend"} <= set(reference)
    assert all(set(t) == {"seed", "config", "eval_return_mean", "run_dir"} for t in reference["trials"])
    sweep_dir = reference["sweep_dir"]
    for t in reference["trials"]:
        cfg = rundir.read_config(t["run_dir"])  # a normal run directory, readable as any run
        assert cfg.algo_config.batch_size == t["config"]["batch_size"] and t["seed"] in cfg.seeds
        assert cfg.run.steps == 600
        final = [r for r in rundir.read_metrics(t["run_dir"]) if r["step"] == 600 and r["seed"] == t["seed"]]
        assert [r["eval_return_mean"] for r in final] == [t["eval_return_mean"]]
    with open(os.path.join(sweep_dir, sweep.PLOT), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    by_config = {c["config"]["batch_size"]: c["eval_returns"] for c in reference["configs"]}
    assert by_config[16] == [_numbers(reference)[(16, 0)], _numbers(reference)[(16, 1)]]


def test_trial_equals_the_same_agent_trained_alone(reference, tmp_path, capsys):
    code = main(["train", "pendulum", "--steps", "600", "--seed", "1", "--set", "batch_size=32", "--set",
                 "eval_episodes=1", "--set", "eval_every=200", "--run-dir", str(tmp_path / "alone"), "--quiet",
                 "--json"])
    assert code == 0
    alone = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert alone["eval_return_mean"] == _numbers(reference)[(32, 1)]


def test_random_draws_are_seeded_within_bounds_and_integers_rounded():
    defaults = {"actor_lr": 1e-3, "batch_size": 100}
    rand = sweep.parse_random(["actor_lr=loguniform:1e-4:1e-2", "batch_size=uniform:16:256"])
    grid = sweep.parse_grid(["critic_lr=1e-3,3e-4"])
    a = sweep.configurations(grid, rand, 5, 7, defaults)
    assert a == sweep.configurations(grid, rand, 5, 7, defaults)
    assert a != sweep.configurations(grid, rand, 5, 8, defaults)
    assert len(a) == 10 and a[0][0] == "critic_lr=1e-3" and a[5][0] == "critic_lr=3e-4"
    assert a[0][1:] == a[5][1:]  # the same draws at every grid point
    for items in a:
        lr, bs = (sweep.config.parse_set([s]) for s in items[1:])
        assert 1e-4 <= lr["actor_lr"] <= 1e-2
        assert isinstance(bs["batch_size"], int) and 16 <= bs["batch_size"] <= 256


def test_resume_finishes_a_sweep_whose_driver_was_killed(reference, tmp_path, capsys):
    sweep_dir = tmp_path / "killed"
    argv = [sys.executable, "-m", "neuromotor", "sweep", "pendulum", *SETTINGS, "--dir", str(sweep_dir),
            "--workers", "1"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        finished = _wait_for_unit_in_progress(sweep_dir, proc, need_finished=True)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and its worker processes
        proc.wait()
    done_before = {d: (sweep_dir / d / rundir.SUMMARY).read_text() for d in finished}
    result = _sweep_resume(capsys, sweep_dir)
    assert _numbers(result) == _numbers(reference)
    for d, text in done_before.items():  # finished units are not trained again
        assert (sweep_dir / d / rundir.SUMMARY).read_text() == text
    _assert_metrics_once(sweep_dir)


def test_local_worker_killed_stops_in_one_line_and_resume_finishes(reference, tmp_path, capsys):
    sweep_dir = tmp_path / "worker-killed"
    run = _Thread(["sweep", "pendulum", *SETTINGS, "--dir", str(sweep_dir), "--workers", "1"])
    unit = _wait_for_unit_in_progress(sweep_dir, run)
    pid = int((unit / rundir.LOCK).read_text())
    assert pid != os.getpid()
    os.kill(pid, signal.SIGKILL)
    run.thread.join(timeout=300)
    assert run.code == 2
    err = capsys.readouterr().err
    assert "sweep --resume" in err and err.count("\n") == 1 and "Traceback" not in err
    assert _numbers(_sweep_resume(capsys, sweep_dir)) == _numbers(reference)
    _assert_metrics_once(sweep_dir)


def _sweep_resume(capsys, sweep_dir, *extra):
    code = main(["sweep", "--resume", str(sweep_dir), "--quiet", "--json", *extra])
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out.strip().splitlines()[-1])


def _wait_for_unit_in_progress(sweep_dir, alive, need_finished=False, timeout=120):
    """Poll until some unit has a checkpoint but no summary (and, if asked, another one is
    finished); returns the names of the finished units and the in-progress unit's lock pid."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert alive.poll() is None, "the sweep ended before it could be interrupted"
        units = sorted(p for p in sweep_dir.glob("c*-s*") if p.is_dir()) if sweep_dir.is_dir() else []
        finished = [p.name for p in units if (p / rundir.SUMMARY).is_file()]
        running = [p for p in units if (p / rundir.CHECKPOINT).is_file() and not (p / rundir.SUMMARY).is_file()]
        if running and (finished or not need_finished):
            return finished if need_finished else running[0]
        time.sleep(0.02)
    raise AssertionError("no unit reached a checkpoint in time")


def _assert_metrics_once(sweep_dir):
    for unit in sweep_dir.glob("c*-s*"):
        keys = [(r["step"], r["agent"]) for r in rundir.read_metrics(unit)]
        assert len(keys) == len(set(keys)), f"{unit.name}: evaluations recorded twice"


def test_resume_refuses_new_settings_and_non_sweeps(reference, capsys):
    assert main(["sweep", "--resume", reference["sweep_dir"], "--grid", "batch_size=8"]) == 2
    assert "only --backend" in capsys.readouterr().err
    run_dir = reference["trials"][0]["run_dir"]
    assert main(["sweep", "--resume", run_dir]) == 2
    assert "not a sweep directory" in capsys.readouterr().err


def test_ray_backend_missing_says_how_to_install(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    assert main(["sweep", "pendulum", *SETTINGS, "--dir", str(tmp_path / "s"), "--backend", "ray"]) == 2
    err = capsys.readouterr().err
    assert "pip install -e '.[ray]'" in err and err.count("\n") == 1
    assert not (tmp_path / "s").exists()


def _ray_daemons() -> set:
    out = set()
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/comm") as f:
                if f.read().strip() in ("raylet", "gcs_server"):
                    out.add(int(d))
        except (OSError, ValueError):
            continue
    return out


def test_ray_backend_starts_and_stops_its_own_ray(reference, tmp_path, capsys):
    ray = pytest.importorskip("ray")
    assert not ray.is_initialized()  # runs before the module's shared Ray session
    before = _ray_daemons()
    result = _sweep(capsys, tmp_path / "own-ray", "--backend", "ray")
    assert _numbers(result) == _numbers(reference)
    assert not ray.is_initialized()
    deadline = time.monotonic() + 30
    while _ray_daemons() - before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _ray_daemons() - before, "the sweep left its Ray running"


def test_unit_on_a_node_without_the_heads_disk_comes_back_whole(reference, tmp_path):
    from neuromotor.training import sweep_ray

    unit = reference["trials"][0]["run_dir"]
    node = tmp_path / "node" / "c0-s0"  # the same path on another machine: nothing there yet
    summary, files = sweep_ray._unit_task(str(node), (Path(unit) / rundir.CONFIG).read_text(), head="another-host")
    assert {rundir.CONFIG, rundir.CHECKPOINT, rundir.METRICS, rundir.SUMMARY} <= set(files) and rundir.LOCK not in files
    head = tmp_path / "head" / "c0-s0"
    got = sweep_ray.receive(head, summary, files)
    assert got["run_dir"] == str(head) and got["eval_return_mean"] == _numbers(reference)[(16, 0)]
    assert rundir.read_metrics(head) == rundir.read_metrics(node)
    assert run_policy.load_policy_spec(head).meta["run_dir"] == str(head)  # a whole run: its checkpoint loads
    with pytest.raises(sweep.UserError, match="outside"):
        sweep_ray.receive(head, summary, {"../x": b""})


# --- Ray: one local two-CPU Ray for the module, shut down at its end ---

@pytest.fixture(scope="module")
def ray_session():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="warning",
             object_store_memory=100 * 2**20)
    try:
        yield ray
    finally:
        ray.shutdown()


def test_ray_backend_gives_the_local_numbers(ray_session, reference, tmp_path, capsys):
    result = _sweep(capsys, tmp_path / "ray", "--backend", "ray")
    assert result["backend"] == "ray"
    assert _numbers(result) == _numbers(reference)
    for t in result["trials"]:
        assert os.path.isfile(os.path.join(t["run_dir"], rundir.CHECKPOINT))


class _Thread:
    """A sweep run by main() in a thread, with Popen's poll() so the waiting helper can watch it."""

    def __init__(self, argv):
        self.code = None
        self.thread = threading.Thread(target=self._run, args=(argv,), daemon=True)
        self.thread.start()

    def _run(self, argv):
        self.code = main(argv)

    def poll(self):
        return None if self.thread.is_alive() else self.code


def test_ray_worker_killed_mid_trial_is_retried_from_its_checkpoint(ray_session, reference, tmp_path, capsys):
    sweep_dir = tmp_path / "ray-killed"
    run = _Thread(["sweep", "pendulum", *SETTINGS, "--dir", str(sweep_dir), "--backend", "ray"])
    unit = _wait_for_unit_in_progress(sweep_dir, run)
    pid = int((unit / rundir.LOCK).read_text())
    assert pid != os.getpid()
    before = rundir.read_metrics(unit)
    os.kill(pid, signal.SIGKILL)
    run.thread.join(timeout=300)
    assert run.code == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert before[-1]["step"] < 600
    # resumed, not restarted: what the killed worker recorded up to its checkpoint is kept as it was
    assert rundir.read_metrics(unit)[:1] == before[:1]
    assert int((unit / rundir.LOCK).read_text()) != pid  # another worker finished it
    assert _numbers(result) == _numbers(reference)
    _assert_metrics_once(sweep_dir)

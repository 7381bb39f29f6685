"""Failure paths of the host commands: malformed files, killed and concurrent commands, a board
that goes away, memory limits. Each test runs the real command (a subprocess where it is killed)."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from neuromotor.training import rundir, sweep

FAST = ["--set", "eval_episodes=1", "--set", "eval_every=200", "--set", "checkpoint_every=100", "--quiet"]


def _spawn(*args, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "neuromotor", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def _one_line_error(code, err, *needles):
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, err


# --- sweep.json ------------------------------------------------------------------------------

def _finished_sweep(root: Path, plan: dict) -> Path:
    """A sweep directory whose one unit is finished (its summary written), so --resume goes
    straight to the results: what a malformed plan would break there is reached at once."""
    (root / "c0-s0").mkdir(parents=True)
    (root / "c0-s0" / rundir.SUMMARY).write_text(json.dumps({"agents": [{"seed": 0, "eval_return_mean": -1.5}]}))
    (root / sweep.PLAN).write_text(json.dumps(plan))
    return root


PLAN = {"env": "pendulum", "algo": "td3", "seeds": [0], "configs": [{}], "backend": "local",
        "units": [{"name": "c0-s0", "config": 0, "seeds": [0]}]}


@pytest.mark.parametrize("broken", [
    {k: v for k, v in PLAN.items() if k != "algo"},
    {k: v for k, v in PLAN.items() if k != "env"},
    {**PLAN, "algo": 3},
    {**PLAN, "units": PLAN["units"] * 2},
], ids=["no-algo", "no-env", "algo-not-a-name", "unit-twice"])
def test_resume_of_a_malformed_sweep_plan_is_one_line(tmp_path, cli, broken):
    sweep_dir = _finished_sweep(tmp_path / "s", broken)
    code, _, err = cli("sweep", "--resume", sweep_dir, "--workers", "1")
    _one_line_error(code, err, "sweep.json is corrupted")


def test_resume_of_a_well_formed_finished_sweep_succeeds(tmp_path, cli):
    sweep_dir = _finished_sweep(tmp_path / "s", PLAN)
    code, _, err = cli("sweep", "--resume", sweep_dir, "--workers", "1")
    assert code == 0, err
    assert json.loads((sweep_dir / sweep.PLAN).read_text())["results"]["agents"] == 1


# --- killed and concurrent sweeps --------------------------------------------------------------

def _proc_stat(pid: int):
    """(state, start time) of `pid`, or None when there is no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return fields[0], fields[19]


def _descendants(pid: int) -> dict:
    """{pid: start time} of every process below `pid`."""
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                text = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(text.rsplit(")", 1)[1].split()[1]), []).append(int(name))
    out, todo = {}, [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            stat = _proc_stat(child)
            if stat is not None:
                out[child] = stat[1]
                todo.append(child)
    return out


def _survivors(procs: dict) -> list:
    """The processes of `procs` still running (a zombie has ended; the same pid with another
    start time is another process)."""
    out = []
    for pid, started in procs.items():
        stat = _proc_stat(pid)
        if stat is not None and stat[1] == started and stat[0] != "Z":
            out.append(pid)
    return out


def _wait_for_units_in_training(sweep_dir: Path, proc, n: int, timeout: float = 60) -> list:
    """The units whose lock names a training process, once there are n of them."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        busy = [u for u in sorted(sweep_dir.glob("c*-s*")) if (u / rundir.LOCK).is_file()
                and (u / rundir.LOCK).read_text().strip().isdigit()]
        if len(busy) >= n:
            return busy
        time.sleep(0.02)
    raise AssertionError("the sweep's units did not start training in time")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT], ids=["KILL", "TERM", "INT"])
def test_killed_sweep_leaves_no_process_behind(tmp_path, sig):
    sweep_dir = tmp_path / "s"
    proc = _spawn("sweep", "pendulum", "--steps", "100000", "--grid", "batch_size=16,32", "--workers", "2",
                  "--dir", sweep_dir, *FAST)
    below = {}
    try:
        _wait_for_units_in_training(sweep_dir, proc, 2)
        below = _descendants(proc.pid)
        assert len(below) >= 3, below  # the forkserver, and two workers under it
        proc.send_signal(sig)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 2
        while _survivors(below) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _survivors(below) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in _survivors(below):  # only the processes this sweep started
            os.kill(pid, signal.SIGKILL)


def test_refused_second_driver_leaves_the_running_sweep_alone(tmp_path):
    sweep_dir = tmp_path / "s"
    first = _spawn("sweep", "pendulum", "--steps", "100000", "--grid", "batch_size=16,32", "--workers", "1",
                   "--dir", sweep_dir, *FAST)
    below = {}
    try:
        (unit,) = _wait_for_units_in_training(sweep_dir, first, 1)
        holder = (unit / rundir.LOCK).read_text()
        below = _descendants(first.pid)
        second = _spawn("sweep", "--resume", sweep_dir, "--workers", "2")
        try:
            _, err = second.communicate(timeout=30)
        finally:
            if second.poll() is None:
                second.kill()
                second.wait()
        _one_line_error(second.returncode, err, "is being run by another neuromotor process")
        # the unit the first has not reached is as the plan left it, so the first can take it
        assert sorted(p.name for p in (sweep_dir / "c1-s0").iterdir()) == [rundir.CONFIG]
        assert first.poll() is None and (unit / rundir.LOCK).read_text() == holder
    finally:
        first.kill()
        first.wait()
        time.sleep(0.5)
        for pid in _survivors(below):  # only the processes this sweep started
            os.kill(pid, signal.SIGKILL)


# --- board start -----------------------------------------------------------------------------

@pytest.fixture
def board_cache(tmp_path, monkeypatch):
    """A private board state directory with the real qemu-m7 firmware, and the set the test
    adds every QEMU pid it sees to: the finaliser stops those (and only those) still running."""
    from neuromotor import boards

    firmware = boards.firmware_path(boards.load_board("qemu-m7"))
    if not firmware.exists() or not shutil.which("qemu-system-arm"):
        pytest.skip("needs qemu-system-arm and the qemu-m7 firmware (make emulated)")
    cache = tmp_path / "cache"
    (cache / "firmware").mkdir(parents=True)
    (cache / "firmware" / "qemu-m7.elf").symlink_to(firmware.resolve())
    monkeypatch.setenv("NEUROMOTOR_CACHE", str(cache))
    seen = set()
    yield cache / "boards", seen
    for pid in seen:
        if _runs_qemu(pid):
            os.kill(pid, signal.SIGKILL)


def _runs_qemu(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"qemu-system-")
    except OSError:
        return False


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _runs_qemu(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _runs_qemu(pid)


@pytest.mark.qemu
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
def test_interrupted_board_start_leaves_no_qemu(board_cache, sig):
    states, seen = board_cache
    state = states / "qemu-m7.json"
    proc = _spawn("board", "start", "qemu-m7")
    try:
        deadline = time.monotonic() + 30
        while not state.exists():  # recorded before anything is waited for
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.005)
        pid = json.loads(state.read_text())["pid"]
        seen.add(pid)
        assert proc.poll() is None, "the start finished before it could be interrupted"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130 and out == "" and "interrupted" in err, (proc.returncode, out, err)
    assert _gone_within(pid, 2)
    assert not state.exists()


@pytest.mark.qemu
def test_two_starts_of_one_instance_run_one_qemu(board_cache):
    states, seen = board_cache
    procs = [_spawn("board", "start", "qemu-m7") for _ in range(2)]
    results = []
    for proc in procs:
        try:
            results.append((proc.wait(timeout=60), *proc.communicate()))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    started = {int(m) for _, _, err in results for m in re.findall(r"QEMU pid (\d+)", err)}
    seen.update(started)
    assert sorted(code for code, _, _ in results) == [0, 2], results
    refused = next(err for code, _, err in results if code == 2)
    assert "already running" in refused and refused.count("\n") == 1
    (pid,) = started
    assert json.loads((states / "qemu-m7.json").read_text())["pid"] == pid
    stop = subprocess.run([sys.executable, "-m", "neuromotor", "board", "stop", "qemu-m7"], capture_output=True,
                          text=True, timeout=60)
    assert stop.returncode == 0, stop.stderr
    assert _gone_within(pid, 2)


# --- memory limits ---------------------------------------------------------------------------

def _under_address_limit(mib: int, *args, env=None):
    """`neuromotor args...` as a subprocess whose address space is limited to `mib` MiB (ulimit -v)."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (mib << 20, mib << 20))

    # one BLAS thread: a thread's buffers count against the limit, and the machine's core count must not
    env = dict(env or os.environ, OPENBLAS_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "neuromotor", *map(str, args)], capture_output=True, text=True,
                          timeout=120, env=env, preexec_fn=limit)


def test_metrics_are_read_without_allocating_their_bound(trained, tmp_path):
    # 400 MiB holds the interpreter, NumPy and the listing, not also the metrics file's 512 MiB bound
    res = _under_address_limit(400, "runs", trained.parent)
    assert res.returncode == 0, res.stderr
    assert trained.name in res.stdout


def test_memory_check_counts_the_address_space_limit(tmp_path):
    res = _under_address_limit(700, "train", "pendulum", "--steps", "50", "--set", "buffer_size=20000000",
                               "--run-dir", tmp_path / "r", "--quiet")
    _one_line_error(res.returncode, res.stderr, "replay buffers", "is available")
    assert not (tmp_path / "r").exists()


HOG = '''
import dataclasses

import numpy as np


@dataclasses.dataclass
class Config:
    pass


class Hog:
    """An algorithm with no memory estimate that needs 32 GiB."""
    Config = Config

    def __init__(self, cfg, env_factory, seeds):
        self.table = np.zeros((8, 1 << 30), np.float32)
'''


def test_out_of_memory_past_the_check_is_one_line(tmp_path):
    (tmp_path / "hog_algo.py").write_text(HOG)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    res = _under_address_limit(1500, "train", "pendulum", "--algo", "hog_algo:Hog", "--steps", "50",
                               "--run-dir", tmp_path / "r", "--quiet", env=env)
    _one_line_error(res.returncode, res.stderr, "out of memory", "32.0 GiB", "ulimit -v")


# --- a port where nothing answers --------------------------------------------------------------

def test_silent_port_is_one_error_and_nothing_on_stdout(capsys):
    from neuromotor.boards.link.client import LinkClient, ProtocolError

    master, slave = os.openpty()  # a serial line with nobody at the other end
    try:
        with pytest.raises(ProtocolError) as exc:
            LinkClient(os.ttyname(slave), timeout=1.0)
    finally:
        os.close(slave)
        os.close(master)
    assert capsys.readouterr().out == ""
    assert "could not start the bench server" in str(exc.value) and "the board sent nothing" in str(exc.value)


def test_deploy_to_a_silent_port_is_one_error_and_nothing_on_stdout(capsys):
    from neuromotor.boards.deploy.core import DeployError, Deployer

    master, slave = os.openpty()
    try:
        with pytest.raises(DeployError) as exc:
            Deployer(os.ttyname(slave), log=lambda s: None, timeout=1.0)
    finally:
        os.close(slave)
        os.close(master)
    assert capsys.readouterr().out == ""
    assert "could not enter MicroPython's raw REPL" in str(exc.value) and "the board sent nothing" in str(exc.value)


# --- temporaries of a killed writer -------------------------------------------------------------

KILLED_WRITER = """
import os, signal, sys
from neuromotor.safe_write import atomic_open
with atomic_open(sys.argv[1]) as f:
    f.write(b"half a checkpoint")
    f.flush()
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_temporaries_of_a_killed_writer_go_when_the_run_is_resumed(run_copy, cli):
    for name in (rundir.CHECKPOINT, rundir.BOARD_POLICY):
        killed = subprocess.run([sys.executable, "-c", KILLED_WRITER, run_copy / name])
        assert killed.returncode == -signal.SIGKILL
    stale = sorted(p.name for p in run_copy.glob(".*.tmp"))
    assert len(stale) == 2 and stale[0].startswith(f".{rundir.CHECKPOINT}."), stale
    live = run_copy / f".{rundir.CHECKPOINT}.{os.getpid()}.abcdefgh.tmp"  # a writer that still runs
    live.write_bytes(b"")
    code, _, err = cli("train", "--resume", run_copy, "--steps", 100)
    assert code == 0, err
    assert not (run_copy / stale[0]).exists() and live.exists()
    code, _, err = cli("export", run_copy, "-o", run_copy / rundir.BOARD_POLICY)
    assert code == 0, err
    assert sorted(p.name for p in run_copy.glob(".*.tmp")) == [live.name]

"""Faults of the long-running and file-writing commands, each run as a real process: signals at
points of train, resume, export, import, sweep and distil; a frozen process; a full disk; a
read-only run directory; two commands on one run; ports where no board answers. Each checks the
exit status and stderr, that what was there before is intact, and that no process is left."""

import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tree_snapshot import tree_state
from test_faults import _descendants, _survivors
from neuromotor.training import rundir

FAST = ["--set", "batch_size=16", "--set", "eval_episodes=1", "--set", "eval_every=200",
        "--set", "checkpoint_every=100", "--quiet"]
DISTIL = {"teachers": 2, "base_steps": 200, "teacher_steps": 200, "teacher_eval_episodes": 2, "teacher_eval_every": 100,
          "iterations": 2, "envs_per_teacher": 2, "rollout_steps": 40, "window": 16, "burn_in": 4,
          "batch_windows": 4, "updates": 3, "eval_drones": 2, "eval_episodes": 2, "select_episodes": 2, "dense": 8, "hidden": 6}
DATA = Path(__file__).parent / "data"
SIGNALS = {"KILL": signal.SIGKILL, "TERM": signal.SIGTERM, "INT": signal.SIGINT}


def _argv(*args) -> list:
    return [sys.executable, "-m", "neuromotor", *map(str, args)]


@pytest.fixture
def procs():
    """procs(*args, **popen) -> Popen of `neuromotor args...`; whatever a test started (the
    command and the processes seen below it) is killed, by pid, if it outlives the test."""
    started, below = [], {}

    def spawn(*args, **kwargs):
        proc = subprocess.Popen(_argv(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)
        started.append(proc)
        return proc
    spawn.below = below
    yield spawn
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for pid in _survivors(below):
        os.kill(pid, signal.SIGKILL)


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wait_until(proc, ready, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the command did not reach the point of the fault in time"
        time.sleep(0.01)


def _holds_lock(proc, directory: Path):
    """A readiness test: `proc`'s pid is in the lock of `directory` (it trains there)."""
    def ready():
        try:
            return (directory / rundir.LOCK).read_text().strip() == str(proc.pid)
        except OSError:
            return False
    return ready


def _fault(procs, proc, sig, frozen: bool = False, quiet: bool = True) -> str:
    """Send `sig` (after SIGSTOP when `frozen`); check the status, stderr (empty after a default
    action when `quiet`), and that every process that was below the command is gone within 2 s."""
    below = _descendants(proc.pid)
    procs.below.update(below)
    if frozen:
        proc.send_signal(signal.SIGSTOP)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    if sig == signal.SIGINT:  # Python's KeyboardInterrupt, turned into one line by the CLI
        # now and then the process, having printed its line, ends by SIGINT rather than with
        # status 130 (see the report of this suite): either says "interrupted" to a shell
        assert proc.returncode in (130, -signal.SIGINT), (proc.returncode, err)
        assert err == "neuromotor: interrupted\n", err
    else:  # the default action: no chance to print anything
        assert proc.returncode == -sig and (err == "" or not quiet), (proc.returncode, err)
    deadline = time.monotonic() + 2
    while _survivors(below) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _survivors(below) == [], below
    return err


def _one_line(res, *needles, code: int = 2) -> None:
    assert res.returncode == code, res.stderr
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("neuromotor: error: "), res.stderr
    for needle in needles:
        assert needle in res.stderr, res.stderr


def _run(*args, preexec_fn=None, timeout: float = 120):
    return subprocess.run(_argv(*args), capture_output=True, text=True, timeout=timeout, preexec_fn=preexec_fn)


def _without_temporaries(state: dict) -> dict:
    return {k: v for k, v in state.items() if not (os.path.basename(k).startswith(".") and k.endswith(".tmp"))}


def _resumes(run: Path) -> None:
    """What a fault left is a run that continues: its checkpoint loads and training goes on from it."""
    def steps():
        with np.load(run / rundir.CHECKPOINT) as arrays:
            return int(arrays["steps" if "steps" in arrays.files else "shard0.steps"])
    done = steps()
    res = _run("train", "--resume", run, "--steps", done + 100)
    assert res.returncode == 0, res.stderr
    assert steps() == done + 100


@pytest.fixture
def exported(run_copy):
    """run_copy with a float policy exported into it: the file an export's fault must leave alone."""
    res = _run("export", run_copy, "-o", run_copy / "policy.nmp")
    assert res.returncode == 0, res.stderr
    return run_copy


@pytest.fixture
def onnx_actor(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.normal(size=(3, 8)).astype(np.float32), "w0"),
             numpy_helper.from_array(rng.normal(size=(8, 1)).astype(np.float32), "w1")]
    nodes = [helper.make_node("MatMul", ["obs", "w0"], ["h"]), helper.make_node("Tanh", ["h"], ["a"]),
             helper.make_node("MatMul", ["a", "w1"], ["m"]), helper.make_node("Tanh", ["m"], ["action"])]
    graph = helper.make_graph(nodes, "actor", [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", 3])],
                              [helper.make_tensor_value_info("action", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "actor.onnx"
    onnx.save(model, str(path))
    return path


# --- signals ---------------------------------------------------------------------------------

@pytest.mark.parametrize("sig", SIGNALS.values(), ids=SIGNALS)
def test_train_signalled_after_a_checkpoint_leaves_a_run_that_resumes(tmp_path, procs, sig):
    run = tmp_path / "r"
    proc = procs("train", "pendulum", "--steps", 10 ** 6, "--run-dir", run, *FAST)
    _wait_until(proc, lambda: (run / rundir.CHECKPOINT).is_file())
    _fault(procs, proc, sig)
    _resumes(run)


@pytest.mark.parametrize("frozen", [False, True], ids=["INT", "STOP-KILL"])
def test_resume_signalled_in_training_keeps_the_checkpoint(run_copy, procs, frozen):
    before = (run_copy / rundir.CHECKPOINT).read_bytes()
    # the trained run checkpoints every 1000 steps: far past the fault, so the file must be untouched
    proc = procs("train", "--resume", run_copy, "--steps", 10 ** 6, "--quiet")
    _wait_until(proc, _holds_lock(proc, run_copy))
    _fault(procs, proc, signal.SIGKILL if frozen else signal.SIGINT, frozen=frozen)
    if frozen:
        assert (run_copy / rundir.CHECKPOINT).read_bytes() == before
    _resumes(run_copy)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["KILL", "TERM"])
def test_sharded_population_ends_with_its_training_process(tmp_path, procs, sig):
    run = tmp_path / "r"
    # no checkpoint or evaluation to meet at: the shards are asked for all the steps at once, so
    # they are busy, not waiting on the pipe, when the training process goes
    proc = procs("train", "pendulum", "--seeds", "0-3", "--shards", 2, "--steps", 10 ** 6, "--run-dir", run,
                 "--set", "batch_size=16", "--set", "checkpoint_every=0", "--set", f"eval_every={10 ** 6}", "--quiet")

    def shards_stepping():
        below = _descendants(proc.pid)
        return len(below) >= 3 and sum(_cpu_seconds(pid) for pid in below) >= 0.5
    _wait_until(proc, shards_stepping)
    config = (run / rundir.CONFIG).read_bytes()
    _fault(procs, proc, sig)
    assert (run / rundir.CONFIG).read_bytes() == config and not list(run.glob(".*.tmp"))


@pytest.mark.parametrize("sig,cpu", [(signal.SIGKILL, 0.8), (signal.SIGKILL, 1.6), (signal.SIGINT, 1.2)],
                         ids=["KILL-early", "KILL-late", "INT"])
def test_quantized_export_signalled_leaves_the_previous_policy(exported, procs, sig, cpu):
    before = tree_state(exported)
    proc = procs("export", exported, "-o", exported / "policy.nmp", "--quantize", "int8",
                 "--calibration", 100000, "--finetune-steps", 2000)
    _wait_until(proc, lambda: _cpu_seconds(proc.pid) >= cpu)  # past the imports, calibrating
    _fault(procs, proc, sig)
    after = tree_state(exported)
    # a killed writer may leave its temporary (the next command in the run removes it); Ctrl-C may not
    assert (after if sig == signal.SIGINT else _without_temporaries(after)) == before


def test_frozen_export_killed_leaves_the_previous_policy(exported, procs):
    before = tree_state(exported)
    # an export long enough to be frozen mid-work on any machine (a plain one may end first)
    proc = procs("export", exported, "-o", exported / "policy.nmp", "--quantize", "int8",
                 "--calibration", 100000, "--finetune-steps", 2000)
    _wait_until(proc, lambda: _cpu_seconds(proc.pid) >= 1.0)
    _fault(procs, proc, signal.SIGKILL, frozen=True)
    assert _without_temporaries(tree_state(exported)) == before


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["KILL", "TERM"])
def test_import_signalled_leaves_the_previous_file(onnx_actor, tmp_path, procs, sig):
    target = tmp_path / "p.nmp"
    target.write_bytes(b"the previous policy")
    proc = procs("import", onnx_actor, "-o", target, "--action-low", "-2", "--action-high", "2")
    _fault(procs, proc, sig)  # during start-up: the default actions end it wherever it is
    assert target.read_bytes() == b"the previous policy"
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".tmp")) == ["actor.onnx", "p.nmp"]


def test_frozen_sweep_killed_leaves_no_process_and_its_plan(tmp_path, procs):
    sweep_dir = tmp_path / "s"
    proc = procs("sweep", "pendulum", "--steps", 10 ** 6, "--grid", "batch_size=16,32", "--workers", 2,
                 "--dir", sweep_dir, *FAST[4:])
    def both_training():
        locks = [u / rundir.LOCK for u in sweep_dir.glob("c*-s*")]
        return sum(p.is_file() and p.read_text().strip().isdigit() for p in locks) >= 2
    _wait_until(proc, both_training)
    plan = (sweep_dir / "sweep.json").read_bytes()
    # not quiet: multiprocessing's resource tracker outlives the sweep by a moment and warns
    # about the semaphores the killed sweep never released (see the report of this suite)
    err = _fault(procs, proc, signal.SIGKILL, frozen=True, quiet=False)
    assert "Traceback" not in err, err
    assert (sweep_dir / "sweep.json").read_bytes() == plan


def test_distil_interrupted_in_teacher_training_leaves_its_nominal_policy(tmp_path, procs):
    nominal = tmp_path / "nominal.nmp"
    shutil.copyfile(DATA / "quadrotor_hover.nmp", nominal)
    run = tmp_path / "d"
    sets = [f"--set={k}={v}" for k, v in {**DISTIL, "teacher_steps": 10 ** 6}.items()]
    proc = procs("distil", "quadrotor", "--run-dir", run, "--nominal", nominal, "--json", *sets)  # no bars: the base's, finished, would precede the one line
    _wait_until(proc, _holds_lock(proc, run / "teachers"))
    _fault(procs, proc, signal.SIGINT)
    assert nominal.read_bytes() == (DATA / "quadrotor_hover.nmp").read_bytes()
    assert not list(run.rglob(".*.tmp"))


# --- a full disk -----------------------------------------------------------------------------

def _file_size_limit(size: int = 4096):
    """A preexec_fn: files may not grow past `size` bytes (ulimit -f). Writes past it fail
    with EFBIG instead of killing the process with SIGXFSZ."""
    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    return limit


def test_new_run_on_a_full_disk_is_one_line(tmp_path):
    res = _run("train", "pendulum", "--steps", 50, "--run-dir", tmp_path / "r", *FAST, preexec_fn=_file_size_limit())
    _one_line(res, "checkpoint.npz", "File too large")
    assert not list((tmp_path / "r").glob(".*.tmp")) and not (tmp_path / "r" / rundir.CHECKPOINT).exists()


def test_resume_on_a_full_disk_keeps_checkpoint_and_metrics(run_copy):
    kept = {n: (run_copy / n).read_bytes() for n in (rundir.CHECKPOINT, "summary.json")}
    metrics = (run_copy / "metrics.jsonl").read_bytes()
    res = _run("train", "--resume", run_copy, "--steps", 100, preexec_fn=_file_size_limit())
    _one_line(res, "checkpoint.npz", "File too large")
    assert {n: (run_copy / n).read_bytes() for n in kept} == kept
    # appended to, never rewritten (the next resume cuts what lies past the checkpoint)
    assert (run_copy / "metrics.jsonl").read_bytes().startswith(metrics)
    assert not list(run_copy.glob(".*.tmp"))
    _resumes(run_copy)


@pytest.mark.parametrize("quantize", [[], ["--quantize", "int8"]], ids=["float", "int8"])
def test_export_on_a_full_disk_keeps_the_previous_policy(exported, quantize):
    before = tree_state(exported)
    res = _run("export", exported, "-o", exported / "policy.nmp", *quantize, preexec_fn=_file_size_limit())
    _one_line(res, "policy.nmp", "File too large")
    assert tree_state(exported) == before


def test_import_on_a_full_disk_keeps_the_previous_file(onnx_actor, tmp_path):
    target = tmp_path / "p.nmp"
    target.write_bytes(b"the previous policy")
    res = _run("import", onnx_actor, "-o", target, "--action-low", "-2", "--action-high", "2",
               preexec_fn=_file_size_limit(64))
    _one_line(res, "p.nmp", "File too large")
    assert target.read_bytes() == b"the previous policy" and not list(tmp_path.glob(".*.tmp"))


def test_sweep_on_a_full_disk_is_one_line(tmp_path):
    res = _run("sweep", "pendulum", "--steps", 50, "--grid", "batch_size=16,32", "--workers", 1,
               "--dir", tmp_path / "s", *FAST[4:], preexec_fn=_file_size_limit())
    _one_line(res, "File too large")
    assert not list((tmp_path / "s").rglob(".*.tmp"))


def test_distil_on_a_full_disk_is_one_line(tmp_path):
    sets = [f"--set={k}={v}" for k, v in DISTIL.items()]
    res = _run("distil", "quadrotor", "--run-dir", tmp_path / "d", *sets, preexec_fn=_file_size_limit())
    _one_line(res, "File too large")
    assert not list(tmp_path.rglob(".*.tmp"))


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 1 MiB tmpfs (this suite runs as root), unmounted whatever the test did."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "tmpfs"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_export_onto_a_full_tmpfs_keeps_the_previous_policy(trained, small_tmpfs):
    target = small_tmpfs / "policy.nmp"
    target.write_bytes(b"the previous policy")
    fd = os.open(small_tmpfs / "filler", os.O_WRONLY | os.O_CREAT)
    try:  # the rest of the space, to the last block
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    res = _run("export", trained, "-o", target)
    _one_line(res, "policy.nmp", "No space left on device")
    assert target.read_bytes() == b"the previous policy"
    assert sorted(p.name for p in small_tmpfs.iterdir()) == ["filler", "policy.nmp"]


# --- read-only run directories -----------------------------------------------------------------

@pytest.fixture
def read_only(tmp_path):
    """read_only(directory): `directory` as a read-only bind mount of itself, unmounted at the end."""
    if os.geteuid() != 0:
        pytest.skip("a bind mount needs root")
    mounted = []

    def make(directory: Path) -> Path:
        subprocess.run(["mount", "--bind", str(directory), str(directory)], check=True)
        mounted.append(directory)
        subprocess.run(["mount", "-o", "remount,ro,bind", str(directory)], check=True)
        return directory
    try:
        yield make
    finally:
        for directory in reversed(mounted):
            subprocess.run(["umount", str(directory)], check=True)


def test_resume_of_a_read_only_run_is_one_line_and_changes_nothing(run_copy, read_only):
    before = tree_state(read_only(run_copy))
    res = _run("train", "--resume", run_copy, "--steps", 100)
    _one_line(res, "Read-only file system")
    assert tree_state(run_copy) == before


def test_export_into_a_read_only_run_is_one_line_and_out_of_it_works(exported, read_only, tmp_path):
    before = tree_state(read_only(exported))
    res = _run("export", exported, "-o", exported / "policy.nmp", "--quantize", "int8")
    _one_line(res, "cannot write", "policy.nmp")  # it says "permission denied" (see the report)
    assert tree_state(exported) == before
    res = _run("export", exported, "-o", tmp_path / "elsewhere.nmp")  # reading a read-only run is fine
    assert res.returncode == 0 and (tmp_path / "elsewhere.nmp").read_bytes() == (exported / "policy.nmp").read_bytes()


def test_sweep_resume_in_a_read_only_directory_is_one_line(tmp_path, read_only):
    from neuromotor.training import sweep

    sweep_dir = tmp_path / "s"
    res = _run("sweep", "pendulum", "--steps", 50, "--grid", "batch_size=16", "--workers", 1, "--dir", sweep_dir,
               *FAST[4:])
    assert res.returncode == 0, res.stderr
    (sweep_dir / "c0-s0" / rundir.SUMMARY).unlink()  # as if it was stopped before the unit finished
    before = tree_state(read_only(sweep_dir))
    res = _run("sweep", "--resume", sweep_dir, "--workers", 1)
    _one_line(res, "Read-only file system")
    assert tree_state(sweep_dir) == before and (sweep_dir / sweep.PLAN).is_file()


def test_root_writes_through_a_chmod_read_only_run(run_copy):
    # chmod is no barrier to root (CAP_DAC_OVERRIDE): as root the resume goes through and the
    # modes are kept; only a read-only mount (above) stops it
    if os.geteuid() != 0:
        pytest.skip("what root may write")
    paths = [run_copy, *run_copy.iterdir()]
    for p in paths:
        p.chmod(0o555 if p.is_dir() else 0o444)
    try:
        _resumes(run_copy)
        assert (run_copy / rundir.CHECKPOINT).stat().st_mode & 0o777 in (0o444, 0o644)
    finally:
        for p in [run_copy, *run_copy.iterdir()]:
            p.chmod(0o755 if p.is_dir() else 0o644)


# --- two commands on one run -----------------------------------------------------------------

@pytest.mark.parametrize("second", [["train", "--resume", "{run}", "--steps", 200],
                                    ["train", "pendulum", "--steps", 50, "--run-dir", "{run}", "--force", "--quiet"]],
                         ids=["resume", "train-force"])
def test_second_command_on_a_training_run_is_refused(run_copy, procs, second):
    first = procs("train", "--resume", run_copy, "--steps", 10 ** 6, "--quiet")
    holds = _holds_lock(first, run_copy)
    # the first takes the lock, then records its new step count: wait for both
    _wait_until(first, lambda: holds() and b'"steps": 1000000,' in (run_copy / rundir.CONFIG).read_bytes())
    config = (run_copy / rundir.CONFIG).read_bytes()
    res = _run(*[str(run_copy) if a == "{run}" else a for a in second])
    _one_line(res, "is in use by another neuromotor process", f"pid {first.pid}")
    assert first.poll() is None and (run_copy / rundir.LOCK).read_text().strip() == str(first.pid)
    # the first checkpoints as it goes, but only the second (steps, or a new run) would rewrite the config
    assert (run_copy / rundir.CONFIG).read_bytes() == config
    _fault(procs, first, signal.SIGINT)


# --- ports where no board answers ------------------------------------------------------------

@pytest.mark.parametrize("command", [["deploy", "{run}"], ["hil", "{run}"], ["bench"]], ids=["deploy", "hil", "bench"])
def test_dev_null_is_not_a_port(trained, tmp_path, command):
    before = tree_state(trained)
    res = subprocess.run(_argv(*[trained if a == "{run}" else a for a in command], "--port", "/dev/null"),
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    _one_line(res, "/dev/null is not a serial port")
    assert res.stdout == "" or command[0] == "deploy", res.stdout  # deploy names what it is about to do
    assert tree_state(trained) == before
    assert list(tmp_path.iterdir()) == []  # bench's output directory, and the runs/ it made, are gone


def test_hil_on_a_silent_port_is_one_line(trained, tmp_path):
    master, slave = os.openpty()  # a serial line with nobody at the other end
    try:
        res = subprocess.run(_argv("hil", trained, "--port", os.ttyname(slave)), capture_output=True, text=True,
                             timeout=60, cwd=tmp_path)
    finally:
        os.close(slave)
        os.close(master)
    _one_line(res, "the board sent nothing")
    assert res.stdout == "" and list(tmp_path.iterdir()) == []

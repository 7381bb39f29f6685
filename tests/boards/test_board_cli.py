"""`neuromotor board start/stop` and `neuromotor boards` as real subprocesses.

Every QEMU started here is stopped in a finaliser, by the PID `board start` recorded.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from neuromotor import boards

pytestmark = [pytest.mark.qemu]


def nm(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "neuromotor", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.fixture(scope="session")
def m4f_firmware():
    """The qemu-m4f firmware in the real build cache (built if missing)."""
    fw = boards.firmware_path(boards.load_board("qemu-m4f"))
    return fw if fw.exists() else boards.build_firmware("qemu-m4f", quiet=True)


@pytest.fixture
def isolated_cache(tmp_path, monkeypatch, m4f_firmware):
    """A private state directory; the firmware is the real cache's."""
    cache = tmp_path / "cache"
    (cache / "firmware").mkdir(parents=True)
    (cache / "firmware" / "qemu-m4f.elf").symlink_to(m4f_firmware.resolve())
    monkeypatch.setenv("NEUROMOTOR_CACHE", str(cache))
    yield cache
    for b in boards.running():  # whatever a failing test left behind, by recorded PID
        boards.stop(b.instance)


def _alive(pid):
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes() != b""
    except OSError:
        return False


def test_start_prints_pty_and_stop_ends_that_pid(isolated_cache):
    env = dict(os.environ)
    res = nm("board", "start", "qemu-m4f", env=env)
    assert res.returncode == 0, res.stderr
    port = res.stdout.strip().splitlines()[-1]
    assert port.startswith("/dev/pts/") and os.path.exists(port)
    rec = json.loads((isolated_cache / "boards" / "qemu-m4f.json").read_text())
    pid = rec["pid"]
    try:
        assert _alive(pid) and rec["port"] == port
        assert "-icount" in rec["cmdline"] and "shift=0" in rec["cmdline"]
        # listed by `neuromotor boards`, with its port
        listing = nm("boards", "--json", env=env)
        rows = [json.loads(line) for line in listing.stdout.splitlines()]
        assert {"kind": "emulated", "board": "qemu-m4f", "port": port, "pid": pid}.items() <= \
            next(r for r in rows if r["kind"] == "emulated").items()
        # a second start of the same instance is refused, and leaves the first running
        again = nm("board", "start", "qemu-m4f", env=env)
        assert again.returncode == 2 and "already running" in again.stderr
        assert _alive(pid)
        # the REPL answers on the printed port
        out = subprocess.run([str(Path(sys.executable).with_name("mpremote")), "connect", port, "exec",
                              "print(6*7)"], capture_output=True, text=True, timeout=60)
        assert out.stdout.strip() == "42"
    finally:
        res = nm("board", "stop", "qemu-m4f", env=env)
    assert res.returncode == 0 and "stopped" in res.stdout
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid)
    assert not (isolated_cache / "boards" / "qemu-m4f.json").exists()
    res = nm("board", "stop", "qemu-m4f", env=env)
    assert res.returncode == 1 and "not running" in res.stderr


def test_stale_record_is_detected_and_never_signalled(isolated_cache):
    # a record whose PID now belongs to another process (here: a sleep we own)
    decoy = subprocess.Popen(["sleep", "30"])
    try:
        state = isolated_cache / "boards"
        state.mkdir(parents=True, exist_ok=True)
        rec = {"name": "qemu-m7", "instance": "qemu-m7", "pid": decoy.pid, "port": "/dev/pts/999",
               "firmware": "/nonexistent.elf", "cmdline": ["qemu-system-arm", "-kernel", "/nonexistent.elf"]}
        (state / "qemu-m7.json").write_text(json.dumps(rec))
        assert boards.running() == []
        assert [p.name for p in boards.stale()] == ["qemu-m7.json"]
        assert boards.stop("qemu-m7") is False  # never signals a PID running something else
        assert decoy.poll() is None
        assert not (state / "qemu-m7.json").exists()
        # and `boards` cleans such records up and says so
        (state / "qemu-m7.json").write_text(json.dumps(rec))
        res = nm("boards")
        assert res.returncode == 0 and "stale" in res.stdout
        assert not (state / "qemu-m7.json").exists()
        assert decoy.poll() is None
    finally:
        decoy.send_signal(signal.SIGTERM)
        decoy.wait()


def test_start_unknown_or_real_board_is_a_clean_error(isolated_cache):
    res = nm("board", "start", "no-such-board")
    assert res.returncode == 2 and "unknown board" in res.stderr and "qemu-m7" in res.stderr
    res = nm("board", "start", "teensy41")
    assert res.returncode == 2 and "real board" in res.stderr


def test_start_without_firmware_says_how_to_build(isolated_cache):
    for f in (isolated_cache / "firmware").iterdir():
        f.unlink()
    res = nm("board", "start", "qemu-m4f")
    assert res.returncode == 2 and "board build qemu-m4f" in res.stderr
    assert boards.running() == []


def test_known_boards_and_check():
    res = nm("boards", "--known", "--json")
    assert res.returncode == 0
    rows = {r["board"]: r for r in map(json.loads, res.stdout.splitlines())}
    assert {"esp32", "esp32c3", "teensy41", "stm32f405", "stm32h743", "qemu-m4f", "qemu-m7"} <= set(rows)
    assert rows["teensy41"]["natmod_arch"] == "armv7emdp" and rows["teensy41"]["clock_mhz"] == 600
    assert "303a:1001" in rows["esp32c3"]["usb"]
    res = nm("board", "check")
    assert res.returncode == 0 and "PROBLEMS" not in res.stdout
    assert res.stdout.count(": ok") == len(rows)

"""Detected USB boards and running emulated boards answer to one protocol (name, port, kind):
`--port auto`, `board_for_port` and bench's emulated check use it for both. No QEMU is
started: a process we own stands in for a running emulated board."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from neuromotor.boards import bench

from neuromotor import boards
from neuromotor.errors import UserError
from neuromotor.boards.link.ports import board_for_port, resolve_port

detect_mod = sys.modules["neuromotor.boards.detect"]  # the package exports a function of that name


@pytest.fixture
def emulated(tmp_path, monkeypatch):
    """A recorded emulated board whose process (a sleep we own) is alive."""
    monkeypatch.setenv("NEUROMOTOR_CACHE", str(tmp_path))
    cmdline = ["sleep", "60"]
    proc = subprocess.Popen(cmdline)
    # Popen returns after fork, possibly before exec: wait until the PID runs the command line.
    deadline = time.monotonic() + 10
    while Path(f"/proc/{proc.pid}/cmdline").read_bytes() != b"sleep\x0060\x00" and time.monotonic() < deadline:
        time.sleep(0.01)
    state = tmp_path / "boards"
    state.mkdir()
    (state / "qemu-m7.json").write_text(json.dumps({
        "name": "qemu-m7", "instance": "qemu-m7", "pid": proc.pid, "port": "/dev/pts/990",
        "firmware": "/nonexistent.elf", "cmdline": cmdline}))
    yield
    proc.terminate()
    proc.wait()


def _usb(monkeypatch):
    usb = boards.UsbBoard(name="teensy41", port="/dev/ttyACM7", usb_id="16c0:0483")
    monkeypatch.setattr(detect_mod, "serial_ports", lambda all_ports=False: [usb])


def test_emulated_and_usb_boards_share_name_port_kind(emulated, monkeypatch):
    _usb(monkeypatch)
    found = boards.detect()
    assert [(b.name, b.port, b.kind) for b in found] == [
        ("teensy41", "/dev/ttyACM7", "serial"), ("qemu-m7", "/dev/pts/990", "emulated")]
    assert not any(hasattr(b, "get") for b in found)  # attributes, not dict look-ups
    assert board_for_port("/dev/pts/990").kind == "emulated"
    assert board_for_port("/dev/ttyACM7").name == "teensy41"
    assert board_for_port("/dev/ttyUSB9") is None
    assert bench.is_emulated("/dev/pts/990", {}) and not bench.is_emulated("/dev/ttyACM7", {"platform": "qemu"})
    assert bench.board_label("/dev/ttyACM7", {}) == "teensy41"
    with pytest.raises(UserError, match="several boards.*teensy41 on /dev/ttyACM7.*qemu-m7 on /dev/pts/990"):
        resolve_port("auto")


def test_port_auto_picks_the_one_emulated_board(emulated, monkeypatch):
    monkeypatch.setattr(detect_mod, "serial_ports", lambda all_ports=False: [])
    assert resolve_port("auto") == "/dev/pts/990"

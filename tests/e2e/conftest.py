"""End-to-end fixtures: one emulated board per board name for the whole module, always stopped.

The board is started through neuromotor.boards (the same code as `neuromotor
board start`), which runs QEMU with `-icount shift=0` on a pty and records its
PID; the finaliser stops exactly that process. Tests that need the firmware
are skipped with the reason when it has not been built (`make firmware BOARD=...`).
"""

import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from neuromotor.paths import cache_dir

from .helpers import make_spec, write_spec

E2E_BOARDS = ["qemu-m4f", "qemu-m7"]
_MACHINES = {"qemu-m4f": "mps2-an386", "qemu-m7": "mps2-an500"}


class Board:
    def __init__(self, name, port, stop):
        self.name, self.port, self._stop = name, port, stop

    def stop(self):
        if self._stop:
            self._stop()
            self._stop = None


def _firmware(name):
    return cache_dir() / "firmware" / f"{name}.elf"


def _start_with_boards_api(name):
    try:
        from neuromotor import boards
    except ImportError:
        return None
    if not (hasattr(boards, "start") and hasattr(boards, "stop")):
        return None
    info = boards.start(name)
    port = getattr(info, "port", None) or (info.get("port") if isinstance(info, dict) else None)
    return Board(name, port, lambda: boards.stop(name))


def _start_qemu(name):
    """Fallback while neuromotor.boards has no start(): the same QEMU command line."""
    if not shutil.which("qemu-system-arm"):
        pytest.skip("qemu-system-arm is not installed (make system)")
    elf = _firmware(name)
    p = subprocess.Popen(["qemu-system-arm", "-machine", _MACHINES[name], "-nographic", "-monitor", "null",
                          "-semihosting", "-serial", "pty", "-icount", "shift=0", "-kernel", str(elf)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    port = None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        line = p.stdout.readline()
        m = re.search(r"(/dev/pts/\d+)", line or "")
        if m:
            port = m.group(1)
            break
        if not line and p.poll() is not None:
            break
    if port is None:
        p.kill()
        p.wait()
        pytest.fail(f"QEMU for {name} did not report its pty")

    def stop():
        if p.poll() is None:
            os.kill(p.pid, signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()
        p.stdout.close()
    return Board(name, port, stop)


@pytest.fixture(scope="module", params=E2E_BOARDS)
def board(request):
    name = request.param
    if not _firmware(name).exists():
        pytest.skip(f"no firmware for {name}: run `make firmware BOARD={name}`")
    b = _start_with_boards_api(name) or _start_qemu(name)
    try:
        time.sleep(0.5)
        yield b
    finally:
        b.stop()


@pytest.fixture(scope="module")
def policies(tmp_path_factory):
    """Two different pendulum policies (3->64->64->1) as specs and .nmp files."""
    d = tmp_path_factory.mktemp("policies")
    a, b = make_spec(1), make_spec(2)
    return {"A": (a, write_spec(a, d / "A.nmp")), "B": (b, write_spec(b, d / "B.nmp"))}

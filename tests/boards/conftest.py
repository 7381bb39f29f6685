"""Emulated-board fixtures, shared by every test that needs a running QEMU board.

`board_pool` (session): BoardPool from neuromotor.boards.testing; `board_pool.get(name)`
builds the firmware if it is missing, starts QEMU (-icount shift=0, UART on a pty)
once per session and board, and the finaliser ALWAYS stops exactly those QEMU
processes. `qemu_m7` / `qemu_m4f`: that board, started.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from neuromotor.boards.testing import BoardPool

MPREMOTE = str(Path(sys.executable).with_name("mpremote"))


def _need(tool):
    if not shutil.which(tool):
        pytest.skip(f"{tool} is not installed (make system)")


@pytest.fixture(scope="session")
def board_pool():
    pool = BoardPool(build=True)
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture(scope="session")
def qemu_m7(board_pool):
    _need("qemu-system-arm")
    return board_pool.get("qemu-m7")


@pytest.fixture(scope="session")
def qemu_m4f(board_pool):
    _need("qemu-system-arm")
    return board_pool.get("qemu-m4f")


def run_mpremote(port, *args, timeout=60, check=True):
    """Run the real mpremote against `port`; return its stdout."""
    res = subprocess.run([MPREMOTE, "connect", port, *args], capture_output=True, text=True, timeout=timeout)
    if check and res.returncode != 0:
        raise AssertionError(f"mpremote {' '.join(args)} failed ({res.returncode}): {res.stdout}{res.stderr}")
    return res.stdout


@pytest.fixture(scope="session")
def mpremote():
    """mpremote(port, *args, timeout=60, check=True) -> stdout of the real mpremote."""
    return run_mpremote

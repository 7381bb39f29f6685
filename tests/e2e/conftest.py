"""End-to-end fixtures: one emulated board per board name for the whole module, always stopped.

The board comes from neuromotor.boards.start (the code behind `neuromotor board
start`): QEMU with `-icount shift=0` on a pty, firmware built if missing, its PID
recorded under an instance name of our own; the finaliser stops exactly that
process (and QEMU dies with the test process anyway).
"""

import shutil

import pytest

from .helpers import make_spec, started_board, write_spec

# qemu-rv32 runs the deploy/run/bench/HIL tests where its QEMU is installed, qemu-xtensa
# (the ESP32's ABI) runs them too; fault injection,
# garbage and the other protocol tests run on the two Arm boards,
# which keeps the whole directory at a few minutes.
E2E_BOARDS = ["qemu-m4f", "qemu-m7"] + (["qemu-rv32"] if shutil.which("qemu-system-riscv32") else []) + ["qemu-xtensa"]
FAULT_BOARDS = ("qemu-m4f", "qemu-m7")


@pytest.fixture(scope="module", params=E2E_BOARDS)
def board(request):
    """One running board per module and board name; stopped (by PID) when the module ends."""
    from neuromotor.boards import load_board
    system = load_board(request.param).qemu["system"]
    if not shutil.which(system):
        pytest.skip(f"{system} is not installed (make system)")
    with started_board(request.param) as b:
        yield b


@pytest.fixture(scope="module")
def policies(tmp_path_factory):
    """Two different pendulum policies (3->32->32->1, small: the pty moves ~4 KB/s) as specs and files."""
    d = tmp_path_factory.mktemp("policies")
    a, b = make_spec(1, sizes=(3, 32, 32, 1)), make_spec(2, sizes=(3, 32, 32, 1))
    return {"A": (a, write_spec(a, d / "A.nmp")), "B": (b, write_spec(b, d / "B.nmp"))}


@pytest.fixture
def arm_board(board):
    if board.name not in FAULT_BOARDS:
        pytest.skip(f"runs on {', '.join(FAULT_BOARDS)} only")
    return board

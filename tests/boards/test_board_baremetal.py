"""The bare-metal program (device/baremetal): our kernel header without MicroPython,
on the emulated MPS2 boards under QEMU -icount shift=0."""

import shutil

import pytest

from neuromotor.boards.baremetal import run_baremetal
from neuromotor.errors import UserError

pytestmark = [pytest.mark.qemu]


@pytest.fixture(autouse=True)
def _tools():
    for tool in ("arm-none-eabi-gcc", "qemu-system-arm"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed (make system)")


@pytest.mark.parametrize("board", ["qemu-m7", "qemu-m4f"])
def test_paper_network_runs_and_matches_reference(board):
    r = run_baremetal(board, sizes=(13, 64, 64, 4))
    assert r["board"] == board and r["sizes"] == [13, 64, 64, 4]
    assert r["macs"] == 13 * 64 + 64 * 64 + 64 * 4
    assert r["ticks"] > 0 and r["instructions_per_inference"] > 0
    # the kernel agrees with a naive C forward pass of the same weights
    assert r["max_abs_err"] <= 1e-5 * max(1.0, r["max_abs_ref_e6"] * 1e-6)


def test_other_shapes_and_activations():
    r = run_baremetal("qemu-m7", sizes=(3, 64, 64, 1), acts=["relu", "relu", "tanh"], repeat=20)
    assert r["macs"] == 3 * 64 + 64 * 64 + 64 and r["repeat"] == 20
    assert r["max_abs_err"] <= 1e-5


def test_bad_requests_are_clean_errors():
    with pytest.raises(UserError, match="one activation per layer"):
        run_baremetal("qemu-m7", sizes=(3, 4, 1), acts=["relu"])
    with pytest.raises(UserError, match="failed"):
        run_baremetal("teensy41")  # a real board: no bare-metal target here

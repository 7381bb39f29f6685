"""The ARMv7E-M int8 layers (device/native/include/nm_int8_dsp.h), bare metal on the
emulated Cortex-M4F and M7: every front (groups in fours, in fours with a last group of
one input, one at a time) and every back (relu or int16 clamp, with or without the
rounding shift, the last layer's raw accumulators) equals the bare-metal program's
row-by-row reference with 64-bit requantisation, and the 13->64->64->4 forward stays
within 1.5 instructions per multiply-add."""

import json
import os
import re
import shutil
import subprocess

import pytest

from neuromotor.boards.baremetal import BAREMETAL_DIR, run_baremetal

pytestmark = [pytest.mark.qemu]

MACHINE = {"qemu-m4f": "mps2-an386", "qemu-m7": "mps2-an500"}
ACTS = {"identity": 0, "relu": 1}

# sizes, activations, the hidden layers' shift, gain (multipliers up to 2^gain times larger,
# so some rows saturate): together every (front, back) pair, every clamp reached
CASES = [
    ((13, 64, 64, 4), ("relu", "relu", "identity"), 0, 0),      # fours with a one-input last group, fours
    ((13, 64, 64, 4), ("relu", "relu", "identity"), 3, 4),      # the same, shifted
    ((29, 40, 4), ("relu", "identity"), 0, 5),                  # a full loop before the one-input group
    ((29, 40, 4), ("relu", "identity"), 8, 0),                  # multipliers up to 2^31 - 1
    ((3, 8, 6, 5), ("relu", "identity", "identity"), 0, 4),     # one group at a time
    ((3, 8, 6, 5), ("relu", "identity", "identity"), 5, 2),
    ((16, 32, 20, 2), ("identity", "identity", "identity"), 0, 4),  # int16 clamp, groups in fours
    ((16, 32, 20, 2), ("identity", "identity", "identity"), 2, 4),
]


@pytest.fixture(autouse=True)
def _tools():
    for tool in ("arm-none-eabi-gcc", "qemu-system-arm"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed (make system)")


def run_int8(board, sizes, acts, shift, gain):
    args = ["make", "-s", "-C", str(BAREMETAL_DIR), f"BOARD={board}", "NM_INT8=1", "REPEAT=1",
            f"SIZES={','.join(map(str, sizes))}", f"ACTS={','.join(str(ACTS[a]) for a in acts)}",
            f"OPT=-O3 -DNM_Q8_SHIFT={shift} -DNM_Q8_GAIN={gain}", "run"]
    res = subprocess.run(args, capture_output=True, text=True, timeout=120)
    m = re.search(r"\{.*\}", res.stdout + res.stderr)
    assert res.returncode == 0 and m, res.stdout + res.stderr
    return json.loads(m.group(0))


@pytest.mark.parametrize("board", ["qemu-m4f", "qemu-m7"])
@pytest.mark.parametrize("sizes, acts, shift, gain", CASES)
def test_int8_layers_equal_the_reference(board, sizes, acts, shift, gain):
    r = run_int8(board, sizes, acts, shift, gain)
    assert r["max_abs_ref_e6"] > 0  # a network whose outputs are not all zero
    assert r["max_abs_err_e9"] == 0


@pytest.mark.parametrize("board", ["qemu-m4f", "qemu-m7"])
def test_int8_forward_within_1_5_instructions_per_mac(board, monkeypatch):
    monkeypatch.setitem(os.environ, "NM_INT8", "1")
    r = run_baremetal(board, sizes=(13, 64, 64, 4), acts=["relu", "relu", "identity"], repeat=20)
    assert r["max_abs_err"] == 0.0
    assert r["instructions_per_mac"] <= 1.5

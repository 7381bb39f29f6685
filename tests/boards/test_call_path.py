"""The float policy called from MicroPython, under the cycle model: the fused kernel plus
the Forward call path (buffer lookups, checks, dispatch) within half of RLtools' measured
optimised time on the Cortex-M7 boards (docs/timing-model.md, "Our kernels under the same
model"). The call path is where a per-call lookup or check added to the hot path shows."""

import shutil
import sys
from pathlib import Path

import pytest

from neuromotor.boards import cycles as cyc
from neuromotor.errors import UserError

pytestmark = [pytest.mark.qemu]

SIZES = (13, 64, 64, 4)
# Half of the paper's optimised times (µs), the goal for the fused kernel from MicroPython.
GOAL_US = {"stm32h743": 26.5, "teensy41": 20.5}


def test_float_call_from_micropython_meets_the_m7_goals(tmp_path):
    if not shutil.which("qemu-system-arm"):
        pytest.skip("qemu-system-arm is not installed (make system)")
    from neuromotor import boards
    from neuromotor.bench import bench_port
    from neuromotor.deploy import deploy
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from board_inference import make_policy
    make_policy(tmp_path / "p.nmp")
    instance = "qemu-m7-call-path-test"
    try:
        b = boards.start("qemu-m7", instance=instance, build=True, die_with_parent=True, cycles=True)
    except UserError as exc:
        pytest.skip(f"qemu-m7 firmware: {exc}")
    try:
        deploy(b.port, str(tmp_path / "p.nmp"), log=lambda s: None)
        r = bench_port(b.port, n=200, backends=["native"], log=lambda s: None)
    finally:
        boards.stop(instance)
    s = r["backends"]["native"]
    n_params = sum(a * b + b for a, b in zip(SIZES, SIZES[1:]))
    pred = cyc.predict("qemu-m7", s["cycles"], macs=s.get("macs"), heap_bytes=4 * n_params)
    for board, goal in GOAL_US.items():
        assert pred[board]["us"] <= goal, (board, s["cycles"], pred[board])

"""int8 kernels on the emulated boards: the Cortex-M4F and M7 (SXTB16+SMLAD path),
rv32imc and the ESP32's Xtensa ABI (plain C), built into the firmware and as natmods,
give the host NumPy reference's exact bits."""

import shutil

import numpy as np
import pytest

from neuromotor.policy.quantize import pack_qnet
from board_helpers import SYSTEM, mpremote, natmod_on
from test_int8 import int8_policy

pytestmark = [pytest.mark.qemu]


def _script(module, qp, obs):
    sizes = qp.sizes
    acts = [("identity", "relu", "tanh").index(a) for a in qp.activations]
    return f"""
import struct
from array import array
k = __import__({module!r})
q = array('b', {pack_qnet(qp)!r})
lay = array('H', {[len(acts)] + sizes + acts!r})
out = array('f', [0] * {sizes[-1]})
clamp = array('f', {np.concatenate([qp.action_low, qp.action_high]).tolist()!r})
f = k.Forward(out, q, lay, array('f', [0] * k.scratch_size(lay, 1)), array('f', [0] * {sizes[0]}), clamp)
for r in {obs.tolist()!r}:
    print(*struct.unpack('<{sizes[-1]}I', f(r)))
"""


@pytest.mark.parametrize("board_name", ["qemu-m4f", "qemu-m7", "qemu-rv32", "qemu-xtensa"])
def test_int8_kernels_on_emulated_boards_are_bit_exact(board_pool, board_name):
    if not shutil.which(SYSTEM[board_name]):
        pytest.fail(f"{SYSTEM[board_name]} is not installed (make system)")
    if board_name == "qemu-rv32" and not board_pool.firmware_ready(board_name):
        pytest.skip("qemu-rv32 firmware not built (make firmware BOARD=qemu-rv32)")
    board = board_pool.get(board_name)
    qp, obs = int8_policy([13, 64, 64, 4], ["relu", "relu", "tanh"], seed=5, n_obs=12)
    want = qp.forward(obs).view(np.uint32).tolist()
    got = [list(map(int, line.split())) for line in mpremote(board.port, "exec", _script("nm_kernels", qp, obs))
           .splitlines()]
    assert got == want
    with natmod_on(board_name, board.port):
        out = mpremote(board.port, "exec", _script("nm_kernels_natmod", qp, obs))
    assert [list(map(int, line.split())) for line in out.splitlines()] == want

"""Recurrent policies on the emulated boards (real firmware under QEMU, driven by the real
mpremote): a version-4 file with GRU layers loaded by neuromotor_rt on the board, stepped
through two episodes by the firmware's kernels, the natmod of the board's architecture and
the python backend, against test_gru's float32 NumPy reference of the format's step."""

import shutil
from pathlib import Path

import numpy as np
import pytest

from board_helpers import SYSTEM, mpremote, natmod_on
from test_gru import GRU, encode_v4, random_policy, ref_episodes

pytestmark = [pytest.mark.qemu]

REPO = Path(__file__).resolve().parents[2]
EP = 12


SCRIPT = """
import struct, sys
from array import array
sys.path.append('/')
import neuromotor_rt as rt
k = None if {module!r} == '' else __import__({module!r})
p = rt.Policy.load('gru.nmp', backend={backend!r}, kernels=k)
assert p.backend == {backend!r} and p.recurrent
for t, o in enumerate({obs!r}):
    if t % {ep} == 0:
        p.reset()
    a = p(array('f', o))
    print(*struct.unpack('<{n}I', bytes(a) + bytes(p.state)))
"""


def _run(port, module, backend, obs, n):
    out = mpremote(port, "exec", SCRIPT.format(module=module, backend=backend, obs=obs.tolist(), ep=EP, n=n))
    return np.array([[int(v) for v in line.split()] for line in out.splitlines()], np.uint32).view(np.float32)


def _close(dev, ref, tol):
    return (np.abs(dev.astype(np.float64) - ref) / np.maximum(1.0, np.abs(ref))).max() <= tol


@pytest.mark.parametrize("board_name", ["qemu-m7", "qemu-m4f", "qemu-rv32", "qemu-xtensa"])
def test_gru_policy_on_emulated_boards(board_pool, board_name, tmp_path):
    if not shutil.which(SYSTEM[board_name]):
        pytest.fail(f"{SYSTEM[board_name]} is not installed (make system)")
    if not board_pool.firmware_ready(board_name):
        pytest.skip(f"{board_name} firmware not built (make firmware BOARD={board_name})")
    board = board_pool.get(board_name)
    p = random_policy([6, 16, 12, 3], [3, GRU, 2], seed=21)
    policy = tmp_path / "gru.nmp"
    policy.write_bytes(encode_v4(p))
    rng = np.random.default_rng(4)
    obs = np.tile((p["mean"] + 2 * p["std"] * rng.standard_normal((EP, 6))).astype(np.float32), (2, 1))
    ref_acts, ref_states = ref_episodes(p, obs, EP)
    ref = np.concatenate([ref_acts, ref_states], axis=1)
    for name in ("neuromotor_rt.py", "nm_rt_python.py", "nm_rt_native.py"):
        mpremote(board.port, "cp", str(REPO / "device" / "lib" / name), ":" + name)
    mpremote(board.port, "cp", str(policy), ":gru.nmp")
    firmware = _run(board.port, "nm_kernels", "native", obs, 3 + 12)
    assert _close(firmware, ref, 1e-5), np.abs(firmware - ref).max()
    assert firmware[:EP].tobytes() == firmware[EP:].tobytes()  # reset() restarts the episode exactly
    python = _run(board.port, "", "python", obs, 3 + 12)
    assert _close(python, ref, 1e-4), np.abs(python - ref).max()
    with natmod_on(board_name, board.port):
        natmod = _run(board.port, "nm_kernels_natmod", "native", obs, 3 + 12)
    assert _close(natmod, ref, 1e-5), np.abs(natmod - ref).max()
    if board_name != "qemu-xtensa":  # xtensawin's natmod runs the dense layers in assembly (madd.s)
        assert natmod.tobytes() == firmware.tobytes()

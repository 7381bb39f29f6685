"""A short TD3 run on the emulated Cortex-M7 (qemu-m7) through `train-on-device`'s code:
upload, train (progress over NMB/1), policy back, run directory; the heap high-water
mark stays under the profile's budget; a board reset mid-training is a clear error that
leaves no run directory behind. The training natmods (armv7emdp on qemu-m7, xtensawin on
qemu-xtensa) train like the firmware's built-in kernels.

QEMU comes from neuromotor.boards.testing.BoardPool (the boards' test fixture): it
builds a missing firmware, runs -icount shift=0 on a pty, and always stops exactly
the QEMU it started.
"""

import json
import shutil
import threading

import numpy as np
import pytest

from neuromotor.training import run_policy, rundir
from neuromotor.policy.policy_file import decode
from neuromotor.boards.ondevice import PROFILES, BoardResetError, train_on_device


@pytest.fixture(scope="module")
def m7():
    if not shutil.which("qemu-system-arm"):
        pytest.skip("qemu-system-arm is not installed (make system)")
    from neuromotor.boards.testing import BoardPool
    pool = BoardPool(build=True)
    try:
        yield pool, pool.get("qemu-m7")
    finally:
        pool.close()


def test_short_run_on_qemu_m7(m7, tmp_path):
    pool, _ = m7
    board = pool.get("qemu-m7")  # a reset test may have restarted it
    run_dir = tmp_path / "run"
    lines = []
    s = train_on_device(board.port, "small", 300, seed=1, run_dir=run_dir, every=100, eval_episodes=2,
                        progress=False, log=lines.append)
    od = s["on_device"]
    assert od["kernels"] in ("usermod", "natmod"), od  # native training kernels on the board
    assert od["updates"] == 300 - 100                   # one update per step after learning_starts
    assert 0 < od["heap_peak"] <= PROFILES["small"]["budget"], od
    assert np.isfinite(s["eval_return_mean"]) and -2000 < s["eval_return_mean"] < 0
    # progress arrived over serial, in order, with the fields the bar shows
    prog = json.loads((run_dir / "on_device.json").read_text())["progress"]
    assert [p["step"] for p in prog] == [100, 200, 300]
    assert all("mem_free" in p and "recent_return" in p for p in prog)
    # a normal run dir: load_policy_spec gives exactly the board's policy file
    spec = run_policy.load_policy_spec(run_dir)
    board_spec = decode((run_dir / "policy.nmp").read_bytes())
    for a, b in zip(spec.weights, board_spec.weights):
        assert np.array_equal(a, b)
    assert spec.sizes == [3, 32, 32, 1]
    assert json.loads((run_dir / rundir.SUMMARY).read_text())["steps"] == 300


def test_profile_too_large_is_refused(m7):
    """A profile bigger than the board's free heap is refused before training, with the numbers."""
    from neuromotor.boards.ondevice import TrainClient
    from neuromotor.boards.link.client import ServerError
    pool, _ = m7
    board = pool.get("qemu-m7")  # a reset test may have restarted it
    with TrainClient(board.port, timeout=30) as c:
        with pytest.raises(ServerError) as exc:
            # teensy41 plus a 3 MB replay: more than the 1 MiB heap
            c.request("train_custom", 64, 64, 100, 100000, 10, 0, timeout=60)
    msg = str(exc.value)
    assert "ProfileTooLarge" in msg and "bytes free" in msg, msg


def test_reset_during_training_is_a_clear_error(m7, tmp_path):
    pool, _ = m7
    board = pool.get("qemu-m7")
    from neuromotor.boards import emulated
    timer = threading.Timer(12.0, lambda: emulated.reset(board.instance))
    timer.start()
    try:
        with pytest.raises(BoardResetError) as exc:
            train_on_device(board.port, "small", 100000, seed=2, run_dir=tmp_path / "run", every=100,
                            progress=False, log=lambda *a: None, upload=False)
    finally:
        timer.cancel()
    msg = str(exc.value)
    assert "reset" in msg and "train-on-device again" in msg, msg
    # the run cannot be resumed (critics and replay stayed on the board): nothing of it is kept, as the error says
    assert "nothing of this run was kept" in msg, msg
    assert not (tmp_path / "run").exists()
    pool.restart("qemu-m7")


def test_natmod_on_the_board_equals_builtin(m7):
    """The armv7emdp training natmod, uploaded by train-on-device, trains exactly like the
    user C module built into the firmware (the path for stock firmware on real boards)."""
    pool, _ = m7
    _natmod_equals_builtin(pool.get("qemu-m7"), "armv7emdp")  # a reset test may have restarted it


def test_xtensawin_natmod_on_the_board_equals_builtin():
    """The same on qemu-xtensa (the ESP32's ABI): the xtensawin training natmod that
    make natmods builds with clang-22 against the firmware's built-in nm_train."""
    if not shutil.which("qemu-system-xtensa"):
        pytest.fail("qemu-system-xtensa is not installed (make system)")
    from neuromotor.boards.testing import BoardPool
    pool = BoardPool(build=True)
    try:
        _natmod_equals_builtin(pool.get("qemu-xtensa"), "xtensawin")
    finally:
        pool.close()


def _natmod_equals_builtin(board, arch):
    from neuromotor.boards.deploy.core import Deployer
    from neuromotor.boards.ondevice import upload_trainer
    upload_trainer(board.port, log=lambda *a: None)
    d = Deployer(board.port, timeout=30)
    try:
        out, err = d.t.exec_raw(
            "import nm_td3, nm_train\n"
            "try:\n"
            "    import nm_train_natmod\n"
            "except ImportError as e:\n"
            "    print('NO-NATMOD', e)\n"
            "else:\n"
            "    res = []\n"
            "    for K in (nm_train, nm_train_natmod):\n"
            "        t = nm_td3.Trainer('small', seed=5, kernels_=K)\n"
            "        t.train(110)\n"
            "        res.append(list(t.actor.params) + list(t.critics[0].params) + list(t.critics[1].params))\n"
            "    print('DIFF', max(abs(a - b) for a, b in zip(res[0], res[1])), len(res[0]))\n", timeout=600)
    finally:
        d.close()
    text = out.decode()
    assert not err, err.decode()
    if "NO-NATMOD" in text:
        pytest.skip(f"no {arch} training natmod on the board ({text.strip()}): run `make natmods`")
    diff, n = text.split("DIFF", 1)[1].split()
    assert int(n) > 3000
    assert float(diff) <= 1e-5, text

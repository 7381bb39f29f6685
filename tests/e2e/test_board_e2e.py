"""Deploy, run, bench, HIL and fault injection on emulated boards, end to end.

Real QEMU boards on a pty, the real mpremote (deploy, board_exec) and pyserial
(NMB/1 client). Each test starts by making the policy it expects the active one
(`ensure_deployed`, a no-op when it already is), so any test runs alone.
"""

import hashlib
import json
import os
import signal

import numpy as np
import pytest

from neuromotor.boards.link import LinkClient, ProtocolError

from .helpers import (board_exec, board_listdir, board_reset, board_sha256, ensure_deployed, last_json, nm,
                      sigkill, start_paused)

pytestmark = [pytest.mark.qemu, pytest.mark.slow]


def sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def board_actions(port, obs, backend="auto"):
    with LinkClient(port) as c:
        meta = c.load("/policy.nmp", backend)
        acts = np.stack([c.act(o)[0] for o in obs])
    return meta, acts


def test_dry_run_writes_nothing(arm_board, policies):
    before = board_listdir(arm_board.port)
    res = nm("deploy", policies["A"][1], "--port", arm_board.port, "--dry-run", check=True)
    assert "dry run: nothing written" in res.stdout
    assert "/policy.nmp" in res.stdout and ".mpy" in res.stdout
    assert board_listdir(arm_board.port) == before


def test_deploy_and_run_matches_numpy(board, policies):
    spec, path = policies["A"]
    res = nm("deploy", path, "--port", board.port, "--json", check=True)
    info = last_json(res.stdout)
    from neuromotor.boards import load_board
    assert info["arch"] == load_board(board.name).natmod_arch
    assert info["backend"] == "native"
    assert board_sha256(board.port, "/policy.nmp") == sha(path)
    names = board_listdir(board.port)
    assert "nm_deploy.lock" not in names and not [n for n in names if n.endswith(".nmtmp")]
    # our firmware has the kernels built in, so by default the natmod is not copied ...
    assert "firmware has nm_kernels" in res.stdout and "nm_kernels_natmod.mpy" in res.stdout.split("firmware has")[1]
    assert "nm_kernels_natmod.mpy" not in board_listdir(board.port, "/lib")
    # ... and --natmod always copies the one for the board's arch, which then runs
    res = nm("deploy", path, "--port", board.port, "--natmod", "always", check=True)
    assert f"natmods/{info['arch']}/nm_kernels_natmod.mpy" in res.stdout
    assert "uploaded /lib/nm_kernels_natmod.mpy.nmtmp" in res.stdout and "uploaded /policy" not in res.stdout
    out = board_exec(board.port, "import nm_kernels_natmod as k\nfrom neuromotor_rt import Policy\n"
                     "from array import array\np = Policy.load('/policy.nmp', backend='native', kernels=k)\n"
                     "print('ACT', list(p(array('f', [0.5, -0.25, 1.5]))))")
    got = float(out.split("ACT [")[1].split("]")[0])
    assert got == pytest.approx(float(spec.forward(np.float32([0.5, -0.25, 1.5]))[0]), rel=1e-5, abs=1e-6)
    # deploying the same thing again moves nothing but still checks every file
    res = nm("deploy", path, "--port", board.port, "--natmod", "always", check=True)
    assert "committed 0 new file(s)" in res.stdout and "uploaded" not in res.stdout
    obs = np.random.default_rng(0).normal(0, 2, (24, spec.obs_dim)).astype(np.float32)
    ref = spec.forward(obs)
    for backend in ("native", "python"):
        meta, acts = board_actions(board.port, obs, backend)
        assert meta["backend"] == backend and meta["sizes"] == spec.sizes
        np.testing.assert_allclose(acts, ref, rtol=1e-5, atol=1e-5)


def test_bench_plausible(board, policies, tmp_path):
    ensure_deployed(board.port, policies["A"][1])
    res = nm("bench", "--port", board.port, "-n", "200", "--out", tmp_path, "--json", check=True)
    summary = last_json(res.stdout)
    b = summary["backends"]
    assert set(b) >= {"native", "python"}
    assert "instruction-count" in res.stdout
    # every backend timed the deployed policy (3-32-32-1: 1,152 multiply-adds); how fast they
    # are is benchmarks/board_inference.py's business
    full = json.loads((tmp_path / "bench.json").read_text())["results"][0]["backends"]
    assert set(full) == set(b)
    for name, s in full.items():
        assert s["macs"] == 3 * 32 + 32 * 32 + 32 and s["sizes"] == [3, 32, 32, 1] and s["n"] > 0, name
    assert (tmp_path / "bench.png").stat().st_size > 0


def test_hil_equals_host_eval(board, policies):
    spec, path = policies["A"]
    ensure_deployed(board.port, path)
    res = nm("hil", path, "--port", board.port, "--episodes", "2", "--steps", "100", "--json", check=True)
    r = last_json(res.stdout)
    assert r["returns_match"] is True
    assert r["return_mean"] == pytest.approx(r["host_return_mean"], rel=1e-4, abs=1e-3)
    assert r["steps"] == 200
    assert r["link"]["retries"] == 0


def test_hil_refuses_other_policy(arm_board, policies):
    ensure_deployed(arm_board.port, policies["A"][1])
    res = nm("hil", policies["B"][1], "--port", arm_board.port, "--episodes", "1", "--steps", "5")
    assert res.returncode == 2
    assert "deploy this run first" in res.stderr


def test_sigkill_mid_upload_keeps_previous_policy(arm_board, policies):
    (spec_a, path_a), (spec_b, path_b) = policies["A"], policies["B"]
    ensure_deployed(arm_board.port, path_a)
    # the deploying process dies after the first chunk of the new policy reached the board
    p, out = start_paused("deploy", path_b, "--port", arm_board.port, stage="upload")
    assert "unchanged /lib/nm_bench.mpy" in out      # only the policy differs from A's deploy
    sigkill(p)
    # next command: a clear error, not garbage
    res = nm("bench", "--port", arm_board.port, "-n", "20")
    assert res.returncode == 2
    assert "interrupted" in res.stderr and "deploy" in res.stderr
    # the active policy was never touched
    assert board_sha256(arm_board.port, "/policy.nmp") == sha(path_a)
    obs = np.random.default_rng(1).normal(0, 1, (4, 3)).astype(np.float32)
    _, acts = board_actions(arm_board.port, obs)
    np.testing.assert_allclose(acts, spec_a.forward(obs), rtol=1e-5, atol=1e-5)
    # a fresh deploy cleans up and succeeds
    res = nm("deploy", path_b, "--port", arm_board.port, check=True)
    assert "cleaning up an earlier interrupted deploy" in res.stdout
    assert board_sha256(arm_board.port, "/policy.nmp") == sha(path_b)
    assert not [n for n in board_listdir(arm_board.port) if n.endswith(".nmtmp") or n.endswith(".lock")]
    _, acts = board_actions(arm_board.port, obs)
    np.testing.assert_allclose(acts, spec_b.forward(obs), rtol=1e-5, atol=1e-5)


def test_sigkill_mid_transfer_no_pause(arm_board, policies):
    """No pause hook: kill while bytes of the new policy are on the wire (the serial line
    drops mid raw-paste); the board is left inside a half-received command."""
    import subprocess
    import time
    from .helpers import REPO, nm_cmd
    (spec_a, path_a), (spec_b, path_b) = policies["A"], policies["B"]
    ensure_deployed(arm_board.port, path_b)
    p = subprocess.Popen(nm_cmd("deploy", path_a, "--port", arm_board.port), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, cwd=REPO,
                         env=dict(os.environ, PYTHONUNBUFFERED="1"))
    seen = ""
    while "uploading /policy.nmp.nmtmp" not in seen:
        line = p.stdout.readline()
        assert line, seen
        seen += line
    time.sleep(0.05)                   # the first chunk is on the wire; the commit is chunks away
    sigkill(p)
    res = nm("hil", path_b, "--port", arm_board.port, "--episodes", "1", "--steps", "5")
    assert res.returncode == 2 and "interrupted" in res.stderr, (seen, res.stdout, res.stderr)
    assert board_sha256(arm_board.port, "/policy.nmp") == sha(path_b)
    nm("deploy", path_a, "--port", arm_board.port, check=True)
    assert board_sha256(arm_board.port, "/policy.nmp") == sha(path_a)


def test_board_reset_mid_deploy_boots_previous_policy(arm_board, policies):
    (spec_b, path_b), (spec_a, path_a) = policies["B"], policies["A"]
    ensure_deployed(arm_board.port, path_b)
    # every new file is on the board under its temporary name, nothing renamed yet
    p, out = start_paused("deploy", path_a, "--port", arm_board.port, stage="commit")
    assert "uploaded /policy.nmp.nmtmp" in out
    sigkill(p)
    # reset the board: a soft reset (a QEMU restart would lose the RAM filesystem, and
    # machine.reset() on the qemu port exits QEMU); then look at what it boots with
    board_reset(arm_board.port)
    out = board_exec(arm_board.port, "from neuromotor_rt import Policy\np = Policy.load('/policy.nmp')\n"
                     "print('BACKEND', p.backend)")
    assert "BACKEND" in out
    assert board_sha256(arm_board.port, "/policy.nmp") == sha(path_b)
    assert "policy.nmp.nmtmp" in board_listdir(arm_board.port)
    obs = np.random.default_rng(2).normal(0, 1, (4, 3)).astype(np.float32)
    res = nm("hil", path_b, "--port", arm_board.port, "--episodes", "1", "--steps", "5")
    assert res.returncode == 2 and "interrupted" in res.stderr
    res = nm("deploy", path_a, "--port", arm_board.port, check=True)
    _, acts = board_actions(arm_board.port, obs)
    np.testing.assert_allclose(acts, spec_a.forward(obs), rtol=1e-5, atol=1e-5)


def test_garbage_on_the_line(arm_board, policies):
    spec, path = policies["A"]
    ensure_deployed(arm_board.port, path)
    obs = np.float32([0.5, -0.5, 1.0])
    with LinkClient(arm_board.port, timeout=5) as c:
        c.load()
        # junk from the board: banner-like text, a stale reply, lines with bad checksums
        assert c.request("noise", 3) == "clean"
        assert c.stats["bad_lines"] >= 3 and c.stats["stale"] >= 1
        # junk towards the board without a newline: the request after it still gets through
        c.ser.write(b"\xfe\xff garbage without newline ")
        a, _, _ = c.act(obs)
        np.testing.assert_allclose(a, spec.forward(obs), rtol=1e-5, atol=1e-5)
        # a garbled request (bad checksum): the board says so, the client resyncs and retries
        c.ser.write(b"@nm 999 act 00 ~0000\n")
        retries = c.stats["retries"]
        c.ser.write(b"noise line\n")
        a, _, _ = c.act(obs)
        np.testing.assert_allclose(a, spec.forward(obs), rtol=1e-5, atol=1e-5)
        assert c.stats["retries"] >= retries
        # Ctrl-C kills the server: a clear error, not a hang
        c.ser.write(b"\x03")
        with pytest.raises(ProtocolError, match="stopped"):
            c.request("hello", timeout=5, retries=1)
    # and the next session starts cleanly
    with LinkClient(arm_board.port, timeout=5) as c:
        assert c.hello()["proto"] == 1


def test_board_resets_during_upload(arm_board, policies):
    (spec_a, path_a), (spec_b, path_b) = policies["A"], policies["B"]
    ensure_deployed(arm_board.port, path_a)
    # the deploying process stays alive; the board soft-resets under it mid-upload
    res = nm("deploy", path_b, "--port", arm_board.port, env={"NEUROMOTOR_DEPLOY_PAUSE": "reset-upload"})
    assert res.returncode == 2
    assert "reset during the deploy" in res.stderr
    assert board_sha256(arm_board.port, "/policy.nmp") == sha(path_a)
    obs = np.random.default_rng(3).normal(0, 1, (4, 3)).astype(np.float32)
    res = nm("deploy", path_a, "--port", arm_board.port, check=True)
    assert "cleaning up an earlier interrupted deploy" in res.stdout
    _, acts = board_actions(arm_board.port, obs)
    np.testing.assert_allclose(acts, spec_a.forward(obs), rtol=1e-5, atol=1e-5)


def test_a_garbled_upload_is_sent_again(arm_board, policies):
    (spec_a, path_a), (spec_b, path_b) = policies["A"], policies["B"]
    ensure_deployed(arm_board.port, path_a)
    res = nm("deploy", path_b, "--port", arm_board.port, env={"NEUROMOTOR_DEPLOY_PAUSE": "garble-upload"},
             check=True)
    assert "/policy.nmp.nmtmp arrived corrupted" in res.stdout and "uploading it again" in res.stdout
    assert board_sha256(arm_board.port, "/policy.nmp") == sha(path_b)
    obs = np.random.default_rng(4).normal(0, 1, (4, 3)).astype(np.float32)
    _, acts = board_actions(arm_board.port, obs)
    np.testing.assert_allclose(acts, spec_b.forward(obs), rtol=1e-5, atol=1e-5)


def test_hardware_reset_mid_upload(arm_board, policies):
    (spec_a, path_a), (spec_b, path_b) = policies["A"], policies["B"]
    ensure_deployed(arm_board.port, path_a)
    p, out = start_paused("deploy", path_b, "--port", arm_board.port, stage="upload")
    arm_board.reset()                      # QMP system_reset: the MCU reboots, RAM (and littlefs) kept
    os.kill(p.pid, signal.SIGUSR1)     # the deploy carries on against a board that rebooted
    rest, _ = p.communicate(timeout=120)
    assert p.returncode == 2
    assert "run deploy again" in rest and "Traceback" not in rest
    assert board_sha256(arm_board.port, "/policy.nmp") == sha(path_a)
    obs = np.random.default_rng(4).normal(0, 1, (4, 3)).astype(np.float32)
    _, acts = board_actions(arm_board.port, obs)
    np.testing.assert_allclose(acts, spec_a.forward(obs), rtol=1e-5, atol=1e-5)
    nm("deploy", path_a, "--port", arm_board.port, check=True)


def test_port_auto_finds_the_running_board(arm_board, policies):
    from neuromotor import boards
    running = boards.detect()
    if len(running) != 1:
        # other boards (another session's) are visible: auto must refuse and name them
        res = nm("deploy", policies["A"][1], "--port", "auto", "--dry-run")
        assert res.returncode == 2 and "several boards" in res.stderr and arm_board.port in res.stderr
        return
    res = nm("deploy", policies["A"][1], "--port", "auto", "--dry-run", check=True)
    assert f"-> {arm_board.port}" in res.stdout


def test_mip_install_from_local_package_json(board, tmp_path):
    if board.name != "qemu-m7":
        pytest.skip("one board is enough for mip")
    from .helpers import REPO
    import subprocess
    import sys
    from pathlib import Path
    mpremote = str(Path(sys.executable).parent / "mpremote")
    res = subprocess.run([mpremote, "connect", board.port, "mip", "install", "--target", "/miptest",
                          str(REPO / "device" / "package.json")], capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stdout + res.stderr
    out = board_exec(board.port, "import sys\nsys.path.insert(0, '/miptest')\n"
                     "import neuromotor_rt, nm_bench\nprint('FILES', neuromotor_rt.__file__, nm_bench.__file__)")
    assert "/miptest/neuromotor_rt.py" in out and "/miptest/nm_bench.py" in out


def test_timeout_then_resync(arm_board, policies):
    """The board goes silent (QEMU stopped with SIGSTOP): a clear timeout error; once it runs
    again, the same session resynchronises and drops the late replies."""
    spec, path = policies["A"]
    ensure_deployed(arm_board.port, path)
    obs = np.float32([0.1, 0.2, -0.3])
    with LinkClient(arm_board.port, timeout=5) as c:
        c.load()
        os.kill(arm_board.pid, signal.SIGSTOP)
        try:
            with pytest.raises(ProtocolError, match="no valid reply to 'act'.*no answer|no valid reply to 'act'.*no reply"):
                c.request("act", obs.tobytes().hex(), timeout=1.0, retries=1)
        finally:
            os.kill(arm_board.pid, signal.SIGCONT)
        a, _, _ = c.act(obs)
        np.testing.assert_allclose(a, spec.forward(obs), rtol=1e-5, atol=1e-5)
        assert c.stats["resyncs"] >= 1

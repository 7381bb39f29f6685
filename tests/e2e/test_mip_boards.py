"""The mip index `make natmods` writes, installed on emulated boards: served by a real HTTP
server on 127.0.0.1, installed by the real `mpremote mip install --index` and by `neuromotor
deploy --index`, the policy then run on the installed natmod and checked against NumPy.
Hostile indexes (a corrupted .mpy, a natmod for another arch, a missing file) are refused
with one line, exit 2, and the board's previous install still runs its policy.
"""

import functools
import hashlib
import http.server
import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from neuromotor.boards import load_board
from neuromotor.boards.mip.layout import VERSION, file_path, package_path
from neuromotor.paths import cache_dir

from .helpers import board_exec, board_listdir, board_sha256, last_json, nm, started_board

pytestmark = [pytest.mark.qemu, pytest.mark.slow]

# Emulated boards that install from the index, one natmod arch each.
MIP_BOARDS = ["qemu-m4f", "qemu-rv32", "qemu-xtensa"]
# A natmod the board must refuse: armv7m (soft-float ABI) is the one MicroPython itself would
# load on an armv7emsp board; for the others any other arch.
WRONG_ARCH = {"armv7emsp": "armv7m"}
MPREMOTE = str(Path(sys.executable).parent / "mpremote")


@pytest.fixture(scope="module", params=MIP_BOARDS)
def board(request):
    system = load_board(request.param).qemu["system"]
    if not shutil.which(system):
        pytest.skip(f"{system} is not installed (make system)")
    with started_board(request.param, tag="mip") as b:
        yield b


def _pkg(root, name):
    return json.loads((root / package_path(6, name)).read_text())


def _hostile(good: Path, root: Path, arch: str) -> None:
    """root/<case>: copies of the good index, each broken in one way for `arch`."""
    name = f"neuromotor-{arch}"
    kernels = dict(_pkg(good, name)["hashes"])["nm_kernels_natmod.mpy"]
    corrupt = root / "corrupt"
    shutil.copytree(good, corrupt)
    f = corrupt / file_path(kernels)
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0x40
    f.write_bytes(bytes(data))
    wrong = root / "wrongarch"
    shutil.copytree(good, wrong)
    other = dict(_pkg(good, f"neuromotor-{WRONG_ARCH.get(arch, 'x64')}")["hashes"])["nm_kernels_natmod.mpy"]
    pkg = _pkg(good, name)
    pkg["hashes"] = [[t, other if t == "nm_kernels_natmod.mpy" else h] for t, h in pkg["hashes"]]
    for version in ("latest", VERSION):
        (wrong / package_path(6, name, version)).write_text(json.dumps(pkg))
    missing = root / "missing"
    shutil.copytree(good, missing)
    (missing / file_path(dict(_pkg(good, "neuromotor")["hashes"])["neuromotor_rt.mpy"])).unlink()


@pytest.fixture(scope="module")
def served(board, tmp_path_factory):
    """(URL of the good index, arch): `make natmods`' index and its hostile copies over HTTP."""
    arch = load_board(board.name).natmod_arch
    built = cache_dir() / "mip"
    if not (built / package_path(6, f"neuromotor-{arch}")).is_file():
        pytest.skip(f"no mip index with {arch} in {built}: run `make natmods`")
    root = tmp_path_factory.mktemp("served")
    shutil.copytree(built, root / "good")
    _hostile(root / "good", root, arch)
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", arch
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def native_actions(port, obs) -> np.ndarray:
    """The policy at /policy.nmp run by the natmod nm_kernels_natmod from /lib (not the
    kernels built into our firmware) on each observation."""
    rows = [list(map(float, o)) for o in obs]
    out = board_exec(port, "import nm_kernels_natmod as k\nfrom neuromotor_rt import Policy\nfrom array import array\n"
                     "p = Policy.load('/policy.nmp', backend='native', kernels=k)\n"
                     f"print('FROM', k.__file__)\nfor o in {rows!r}:\n    print('ACT', list(p(array('f', o))))")
    assert "FROM /lib/nm_kernels_natmod.mpy" in out, out
    return np.array([json.loads(line[4:]) for line in out.splitlines() if line.startswith("ACT ")], np.float32)


def _obs(spec, seed):
    return np.random.default_rng(seed).normal(0, 2, (6, spec.obs_dim)).astype(np.float32)


def test_mpremote_mip_install_then_policy_runs_natively(board, served, policies):
    url, arch = served
    res = subprocess.run([MPREMOTE, "connect", board.port, "mip", "install", "--index", f"{url}/good",
                          f"neuromotor-{arch}"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Installing: /lib/nm_kernels_natmod.mpy" in res.stdout and "Installing: /lib/neuromotor_rt.mpy" in res.stdout
    natmod = cache_dir() / "natmods" / arch / "nm_kernels_natmod.mpy"
    assert board_sha256(board.port, "/lib/nm_kernels_natmod.mpy") == hashlib.sha256(natmod.read_bytes()).hexdigest()
    spec, path = policies["A"]
    subprocess.run([MPREMOTE, "connect", board.port, "fs", "cp", str(path), ":/policy.nmp"], check=True,
                   capture_output=True, timeout=120)
    obs = _obs(spec, 0)
    np.testing.assert_allclose(native_actions(board.port, obs), spec.forward(obs), rtol=1e-5, atol=1e-5)


def test_deploy_from_index_then_policy_runs_natively(board, served, policies):
    url, arch = served
    spec, path = policies["B"]
    res = nm("deploy", path, "--port", board.port, "--index", f"{url}/good", "--natmod", "always", "--json",
             check=True)
    assert f"<- {url}/good neuromotor-{arch}" in res.stdout and f"<- {url}/good neuromotor\n" in res.stdout
    info = last_json(res.stdout)
    assert info["arch"] == arch and info["backend"] == "native"
    names = board_listdir(board.port)
    assert "nm_deploy.lock" not in names and not [n for n in names if n.endswith(".nmtmp")]
    obs = _obs(spec, 1)
    np.testing.assert_allclose(native_actions(board.port, obs), spec.forward(obs), rtol=1e-5, atol=1e-5)


HOSTILE = {"corrupt": "nm_kernels_natmod.mpy is corrupted",
           "wrongarch": "nm_kernels_natmod.mpy is built for ",
           "missing": "neuromotor lists neuromotor_rt.mpy but "}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_index_refused_and_previous_install_runs(board, served, policies, case):
    url, arch = served
    spec, path = policies["A"]
    nm("deploy", path, "--port", board.port, "--index", f"{url}/good", "--natmod", "always", check=True)
    before = board_listdir(board.port), board_listdir(board.port, "/lib")
    lib_hash = board_sha256(board.port, "/lib/nm_kernels_natmod.mpy")
    res = nm("deploy", policies["B"][1], "--port", board.port, "--index", f"{url}/{case}", "--natmod", "always")
    assert res.returncode == 2, res.stdout + res.stderr
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("neuromotor: error: ") and HOSTILE[case] in err[0], res.stderr
    assert "nothing was written" in err[0] and "uploading" not in res.stdout
    if case == "wrongarch":
        assert f"the board is {arch}" in err[0]
    assert (board_listdir(board.port), board_listdir(board.port, "/lib")) == before
    assert board_sha256(board.port, "/lib/nm_kernels_natmod.mpy") == lib_hash
    obs = _obs(spec, 2)
    np.testing.assert_allclose(native_actions(board.port, obs), spec.forward(obs), rtol=1e-5, atol=1e-5)

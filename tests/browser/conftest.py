"""Fixtures for the browser board (MicroPython's webassembly port, `make firmware BOARD=browser`).

`browser_build`     directory holding micropython.mjs and micropython.wasm
                    ($NEUROMOTOR_CACHE/firmware/browser); tests skip if it is missing.
`node_micropython`  boards/browser/micropython-node.mjs: that build under Node with the unix
                    port's command line, so the unix port's device tests run on it unchanged.
The device tests' helpers are imported from tests/device and tests/ondevice.
"""

import shutil
import sys
from pathlib import Path

import pytest

from neuromotor.paths import cache_dir

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
for p in (TESTS, TESTS / "device"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

NODE_RUNNER = REPO / "boards" / "browser" / "micropython-node.mjs"


@pytest.fixture(scope="session")
def browser_build() -> Path:
    path = cache_dir() / "firmware" / "browser"
    if not (path / "micropython.mjs").exists():
        pytest.skip(f"browser build missing ({path}): run `make firmware BOARD=browser`")
    return path.resolve()


@pytest.fixture(scope="session")
def node_micropython(browser_build) -> Path:
    if shutil.which("node") is None:
        pytest.fail("node is missing: run device/port/setup_system.sh")
    return NODE_RUNNER

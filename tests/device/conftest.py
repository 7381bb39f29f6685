"""Fixtures for tests on the real unix MicroPython build.

`micropython`    path of the unix binary with our kernels built in
                 ($NEUROMOTOR_MICROPYTHON, else $NEUROMOTOR_CACHE/bin/micropython,
                 as left by `make firmware BOARD=unix`); tests skip if absent.
`natmod_dir`     $NEUROMOTOR_CACHE/natmods (one folder per arch, from `make natmods`).
`natmod_x64_dir` the folder holding nm_kernels_natmod.mpy for x64.
`run_mp`         run a script on a micropython binary in a subprocess.
`make_spec`      build a random PolicySpec for given layer sizes.
`board_pool`     BoardPool of the emulated boards for the session (boards built if missing,
                 started once, stopped at the end).
"""

import contextlib
import os
from pathlib import Path

import pytest
from mp_helpers import random_spec, run_script

from neuromotor.boards.testing import BoardPool
from neuromotor.paths import cache_dir

NATMOD_NAME = "nm_kernels_natmod.mpy"


def _micropython_path() -> Path:
    env = os.environ.get("NEUROMOTOR_MICROPYTHON")
    return Path(env) if env else cache_dir() / "bin" / "micropython"


@pytest.fixture(scope="session")
def micropython() -> Path:
    path = _micropython_path()
    if not path.exists():
        pytest.skip(f"unix MicroPython not built ({path} missing): run `make firmware BOARD=unix`")
    return path.resolve()


@pytest.fixture(scope="session")
def natmod_dir() -> Path:
    path = cache_dir() / "natmods"
    if not path.is_dir():
        pytest.skip(f"natmods not built ({path} missing): run `make natmods`")
    return path


@pytest.fixture(scope="session")
def natmod_x64_dir(natmod_dir) -> Path:
    path = natmod_dir / "x64"
    if not (path / NATMOD_NAME).exists():
        pytest.skip(f"x64 natmod not built ({path / NATMOD_NAME} missing): run `make natmods`")
    return path


@pytest.fixture(scope="session")
def run_mp(micropython):
    def run(script, **kw):
        return run_script(micropython, script, **kw)
    return run


@pytest.fixture(scope="session")
def make_spec():
    return random_spec


@pytest.fixture(scope="session")
def board_pool():
    with contextlib.closing(BoardPool(build=True)) as pool:
        yield pool

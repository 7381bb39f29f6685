"""Fixtures for tests on the real unix MicroPython build.

`micropython`    path of the unix binary with our kernels built in
                 ($NEUROMOTOR_MICROPYTHON, else $NEUROMOTOR_CACHE/bin/micropython,
                 as left by `make firmware BOARD=unix`); tests skip if absent.
`natmod_dir`     $NEUROMOTOR_CACHE/natmods (one folder per arch, from `make natmods`).
`natmod_x64_dir` the folder holding nm_kernels_natmod.mpy for x64.
`run_mp`         run a script on a micropython binary in a subprocess.
`make_spec`      build a random PolicySpec for given layer sizes.
"""

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from neuromotor.paths import cache_dir
from neuromotor.policy import PolicySpec

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


class MicroPythonError(AssertionError):
    pass


def run_script(binary, script: str, timeout: float = 120, check: bool = True, cwd=None):
    """Run `script` (passed with -c) on a MicroPython binary; return the CompletedProcess.
    With check, a non-zero exit raises with the script's output."""
    proc = subprocess.run([str(binary), "-X", "heapsize=64M", "-c", script], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd)
    if check and proc.returncode != 0:
        raise MicroPythonError(f"micropython exited with {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\n"
                               f"stderr:\n{proc.stderr[-3000:]}")
    return proc


@pytest.fixture(scope="session")
def run_mp(micropython):
    def run(script, **kw):
        return run_script(micropython, script, **kw)
    return run


def random_spec(sizes, seed=0, activations=None) -> PolicySpec:
    rng = np.random.default_rng(seed)
    n = len(sizes) - 1
    acts = activations or ["relu"] * (n - 1) + ["tanh"]
    weights = [(rng.standard_normal((b, a)) / np.sqrt(a)).astype(np.float32) for a, b in zip(sizes[:-1], sizes[1:])]
    biases = [(0.1 * rng.standard_normal(b)).astype(np.float32) for b in sizes[1:]]
    return PolicySpec(weights, biases, acts,
                      obs_mean=rng.standard_normal(sizes[0]).astype(np.float32),
                      obs_std=(0.5 + rng.random(sizes[0])).astype(np.float32),
                      action_scale=(1.0 + rng.random(sizes[-1])).astype(np.float32),
                      action_offset=(0.1 * rng.standard_normal(sizes[-1])).astype(np.float32),
                      meta={"test": "random"})


@pytest.fixture(scope="session")
def make_spec():
    return random_spec

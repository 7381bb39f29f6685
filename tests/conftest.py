"""Shared fixtures for the host tests: the CLI in-process and as a real subprocess, a short
trained run, and a snapshot of a directory tree (to show a command changed nothing)."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from neuromotor.cli import main
from tree_snapshot import tree_state


@pytest.fixture
def runs_root(tmp_path, monkeypatch):
    """An empty runs directory that `neuromotor` uses by default."""
    root = tmp_path / "runs"
    root.mkdir()
    monkeypatch.setenv("NEUROMOTOR_RUNS", str(root))
    return root


@pytest.fixture
def cli(capsys):
    """cli(*args) -> (exit status, stdout, stderr) of `neuromotor args...`, run in this process."""
    def run(*args):
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err
    return run


@pytest.fixture
def neuromotor_process():
    """neuromotor_process(*args) -> Popen of `neuromotor args...` (for tests that kill it)."""
    def spawn(*args, **kwargs) -> subprocess.Popen:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        return subprocess.Popen([sys.executable, "-m", "neuromotor", *map(str, args)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)
    return spawn


FAST = ["--set", "batch_size=16", "--set", "eval_episodes=1", "--set", "eval_every=50", "--quiet"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A run directory of 50 pendulum steps, made once per test module (copy it to change it)."""
    run_dir = tmp_path_factory.mktemp("trained") / "run"
    assert main(["train", "pendulum", "--steps", "50", "--run-dir", str(run_dir), *FAST]) == 0
    return run_dir


@pytest.fixture
def run_copy(trained, tmp_path):
    dst = tmp_path / "run"
    shutil.copytree(trained, dst)
    return dst


@pytest.fixture
def snapshot():
    """snapshot(root) -> tree_state(root)."""
    return tree_state


def _step_alike(a, b, steps: int) -> list:
    """Advance two algorithms `steps` steps side by side and check that every state array, every
    finished episode's return and every reported scalar agree exactly; the episodes' returns."""
    for _ in range(steps):
        a.advance()
        b.advance()
    sa, sb = a.state_dict(), b.state_dict()
    for key in sa:
        np.testing.assert_array_equal(sa[key], sb[key], err_msg=key)
    returns = a.pop_episode_returns()
    assert returns == b.pop_episode_returns() != [[]] * len(returns)
    for tag, v in a.scalars().items():
        np.testing.assert_array_equal(v, b.scalars()[tag], err_msg=tag)
    return returns


@pytest.fixture
def step_alike():
    """step_alike(a, b, steps) -> episode returns, after checking that a and b stayed identical."""
    return _step_alike

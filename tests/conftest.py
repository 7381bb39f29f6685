"""Shared fixtures for the host tests: the CLI in-process and as a real subprocess."""

import os
import subprocess
import sys

import pytest

from neuromotor.cli import main


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

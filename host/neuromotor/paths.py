"""Where things live: the repository, the build cache, the run directories."""

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DEVICE_DIR = REPO_ROOT / "device"
BOARDS_DIR = REPO_ROOT / "boards"


def cache_dir() -> Path:
    """Build cache outside the repository (MicroPython source, firmware, natmods)."""
    return Path(os.environ.get("NEUROMOTOR_CACHE", Path.home() / ".cache" / "neuromotor"))


def runs_dir() -> Path:
    return Path(os.environ.get("NEUROMOTOR_RUNS", "runs"))

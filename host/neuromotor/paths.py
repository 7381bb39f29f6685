"""Where things live: the files the package reads of the source tree, the build cache, the
run directories.

In a checkout (an editable install) SOURCE_ROOT is the checkout. An installed wheel carries
what the package reads (device/lib, device/native/include, device/baremetal/pio_template,
boards/, and the prebuilt natmods) in neuromotor/data, and SOURCE_ROOT is that folder; what
only a checkout can do (building firmware, the cycle model's plugin) says so when asked.
"""

import os
from pathlib import Path

PACKAGE_DATA = Path(__file__).resolve().parent / "data"
INSTALLED = (PACKAGE_DATA / "device" / "lib").is_dir()
SOURCE_ROOT = PACKAGE_DATA if INSTALLED else Path(__file__).resolve().parents[2]
DEVICE_DIR = SOURCE_ROOT / "device"
BOARDS_DIR = SOURCE_ROOT / "boards"


def require_checkout(what: str) -> None:
    """UserError when running from an installed package: `what` builds from the source tree."""
    if INSTALLED:
        from neuromotor.errors import UserError

        raise UserError(f"{what} builds from neuromotor's source tree, which an installed package does not carry: "
                        "run it in a checkout (the firmware and natmods it builds land in the shared build cache)")


def cache_dir() -> Path:
    """Build cache outside the repository (MicroPython source, firmware, natmods)."""
    return Path(os.environ.get("NEUROMOTOR_CACHE", Path.home() / ".cache" / "neuromotor"))


def natmods_dir() -> Path:
    """The native modules (<arch>/*.mpy): the wheel's own, else what `make natmods` built."""
    return PACKAGE_DATA / "natmods" if INSTALLED else cache_dir() / "natmods"


def runs_dir() -> Path:
    return Path(os.environ.get("NEUROMOTOR_RUNS", "runs"))


STUDENT_FILE = "student.nmp"  # a distillation's policy, in its run directory
DISTIL_CONFIG = "distil.json"  # a distillation's options and env, in its run directory


def no_policy_source(shown: str, path) -> str:
    """What to say of `path` (shown as `shown`) when it is neither a run directory nor a policy
    file: a distillation's directory is neither, and names the policy it holds."""
    student = Path(path) / STUDENT_FILE
    if student.is_file():
        return f"{shown}: a distillation's directory, not a training run: its policy is {student}"
    return f"{shown}: no such run directory or policy file"

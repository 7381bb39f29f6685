"""Checks of command-line values shared by the commands, each a UserError naming the option.

Commands call them before any work: before a port is opened, a board started, a
run directory created or a checkpoint loaded.
"""

import argparse
import math
import os
import posixpath
import re
from pathlib import Path
from urllib.parse import urlsplit

from neuromotor import api
from neuromotor.errors import UserError
from neuromotor.limits import MAX_COUNT, MAX_SEED

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
_BOARD_PATH = re.compile(r"(/[A-Za-z0-9_][A-Za-z0-9_.-]*)+\Z")


def int_range(option: str, value: int, lo: int, hi: int = MAX_COUNT) -> int:
    if not lo <= value <= hi:
        raise UserError(f"{option} must be from {lo} to {hi}, got {value}")
    return value


def positive_float(option: str, value: float) -> float:
    if not (math.isfinite(value) and value > 0):
        raise UserError(f"{option} must be a positive number, got {value}")
    return value


def seed(option: str, value: int, count: int = 1) -> int:
    """A seed from which `count` consecutive seeds are used."""
    return int_range(option, value, 0, MAX_SEED - (count - 1))


def nonempty_path(text: str) -> Path:
    """argparse type for paths: '' would silently mean the current directory."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path")
    return Path(text)


def source(option: str, path: str) -> Path:
    """A run directory (with its config.json), one of a run's states (RUN/best.npz), a
    distillation's directory (its student) or a policy file that reads as one."""
    p = Path(path)
    if not path or not (p.is_file() or (p / "config.json").is_file()):
        if path and p.is_dir() and not os.path.lexists(p / "config.json"):
            try:
                api.load_policy(p)
                return p
            except UserError as exc:
                raise UserError(f"{option} {exc}") from None
        raise UserError(f"{option} {path!r}: no such run directory or policy file")
    if p.is_file():
        api.load_policy(p)  # a UserError (not a policy, corrupted) before any board is involved
    return p


def name(option: str, value: str) -> str:
    """An instance or board name: letters, digits, '_', '.', '-'; no paths."""
    if not _NAME.match(value or ""):
        raise UserError(f"{option} {value!r} is not a name (letters, digits, _ . - ; not starting with . or -)")
    return value


def board_name(option: str, value: str) -> str:
    name(option, value)
    known = api.board_names()
    if value not in known:
        raise UserError(f"{option}: unknown board {value!r}; known: {', '.join(sorted(known))}")
    return value


def board_path(option: str, value: str) -> str:
    """An absolute file path on the board's filesystem, without '..', spaces or a trailing '/'."""
    if not _BOARD_PATH.match(value or "") or posixpath.normpath(value) != value or \
            any(part in (".", "..") for part in value.split("/")):
        raise UserError(f"{option} {value!r} must be an absolute file path on the board, e.g. /policy.nmp")
    return value


def mip_index(option: str, value: str) -> str:
    """A mip index: an http(s) URL naming a host, or a folder holding one (its package/)."""
    if value.startswith(("http://", "https://")) and urlsplit(value).hostname:
        return value
    if not value.startswith(("http:", "https:")) and value and (Path(value) / "package").is_dir():
        return value
    raise UserError(f"{option} {value!r} is not a mip index: give an http(s) URL or a folder with a package/ "
                    "folder in it (`make natmods` writes one to $NEUROMOTOR_CACHE/mip)")


def env_name(option: str, value: str, kwargs: dict = None) -> str:
    try:
        api.env_factory(value, kwargs)
    except UserError as exc:
        raise UserError(f"{option}: {exc}") from None
    return value


def env_override(env, env_kwargs_text, why: str = "") -> dict | None:
    """--env and --env-kwargs of a command that takes its env from elsewhere unless told: the
    parsed kwargs (None without --env-kwargs), once the env they name builds with them."""
    env_kwargs = None
    if env_kwargs_text is not None:
        if env is None:
            raise UserError(f"--env-kwargs goes with --env{why}")
        env_kwargs = api.parse_kwargs("--env-kwargs", env_kwargs_text)
    if env is not None:
        env_name("--env", env, env_kwargs)
    return env_kwargs


def elf_file(option: str, path: str) -> Path:
    p = Path(path)
    try:
        with open(p, "rb") as f:
            magic = f.read(4)
    except IsADirectoryError:
        raise UserError(f"{option} {path!r} is a directory, not a firmware ELF") from None
    except OSError as exc:
        raise UserError(f"{option} {path!r}: {exc.strerror}") from None
    if not p.is_file() or magic != b"\x7fELF":
        raise UserError(f"{option} {path!r} is not an ELF file (build one with `neuromotor board build`)")
    return p

"""Read neuromotor's packages for one board from a mip index (an http(s) URL or a folder)
and check every file on the host before any of it goes near the board: its SHA-256 against
the package's, and its .mpy header (magic, .mpy version, architecture) against the board's."""

import hashlib
import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from neuromotor.boards.mip.layout import (RUNTIME, file_path, is_hash, is_target, mpy_header, natmod_package,
                                          package_path)
from neuromotor.errors import UserError

MAX_FILE = 4 << 20      # far beyond any package file (the largest natmod is ~40 KB)
TIMEOUT = 30


class BadIndex(UserError):
    """The index cannot be read, or what it holds is not fit for the board."""


class _Missing(Exception):
    pass


@dataclass
class Fetched:
    """The checked files of the packages one board gets, and why it gets no more."""
    runtime: dict = field(default_factory=dict)    # {name: bytes}: package `neuromotor`
    natmods: dict = field(default_factory=dict)    # {name: bytes}: package `neuromotor-<arch>`
    package: str = RUNTIME                          # what was asked for
    notes: list = field(default_factory=list)


def is_url(index: str) -> bool:
    return index.startswith(("http://", "https://"))


def read(index: str, rel: str) -> bytes:
    """The bytes of `rel` under the index; _Missing if it is not there."""
    if is_url(index):
        url = f"{index.rstrip('/')}/{rel}"
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT) as r:
                data = r.read(MAX_FILE + 1)
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                raise _Missing(url) from None
            raise BadIndex(f"index {index}: HTTP {exc.code} for {url}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise BadIndex(f"index {index}: cannot read {url}: {getattr(exc, 'reason', exc)}") from None
    else:
        path = Path(index) / rel
        if not (Path(index) / "package").is_dir():
            raise BadIndex(f"index {index}: not a mip index (give an http(s) URL or a folder with a package/ "
                           "folder in it)")
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_FILE + 1)
        except FileNotFoundError:
            raise _Missing(str(path)) from None
    if len(data) > MAX_FILE:
        raise BadIndex(f"index {index}: {rel} is larger than {MAX_FILE} bytes")
    return data


def package(index: str, mpy_version, name: str) -> dict:
    """The package json of `name` for .mpy version `mpy_version`, checked for shape."""
    rel = package_path(mpy_version, name)
    try:
        pkg = json.loads(read(index, rel))  # _Missing passes through
    except ValueError:
        raise BadIndex(f"index {index}: {rel} is not JSON") from None
    hashes = pkg.get("hashes") if isinstance(pkg, dict) else None
    if (not isinstance(hashes, list) or not all(isinstance(h, list) and len(h) == 2 and is_target(h[0])
                                                and is_hash(h[1]) for h in hashes)):
        raise BadIndex(f"index {index}: {rel} is not a package of .mpy files with their sha256 "
                          '("hashes": [["name.mpy", "<64 hex digits>"], ...])')
    return pkg


def files(index: str, name: str, pkg: dict, board: dict, natmod: bool) -> dict:
    """{target name: bytes} of a package, each checked: present, SHA-256, .mpy header."""
    out = {}
    for target, digest in pkg["hashes"]:
        try:
            data = read(index, file_path(digest))
        except _Missing as exc:
            raise BadIndex(f"index {index}: {name} lists {target} but {exc} is missing; nothing was written") \
                from None
        got = hashlib.sha256(data).hexdigest()
        if got != digest:
            raise BadIndex(f"index {index}: {name}'s {target} is corrupted (sha256 {got[:16]}..., the package "
                              f"says {digest[:16]}...); nothing was written")
        check_mpy(index, name, target, data, board, natmod)
        out[target] = data
    return out


def check_mpy(index, name, target, data, board, natmod) -> None:
    head = mpy_header(data)
    where = f"index {index}: {name}'s {target}"
    if head is None:
        raise BadIndex(f"{where} is not a .mpy file (no 'M' header); nothing was written")
    version, sub, arch = head
    if version != board["mpy_version"]:
        raise BadIndex(f"{where} is .mpy version {version}, the board loads version {board['mpy_version']}; "
                          "nothing was written")
    if natmod:
        if arch != board["arch"]:
            raise BadIndex(f"{where} is built for {arch or 'no architecture'}, the board is {board['arch']}; "
                              "nothing was written")
        if sub != board["mpy_sub"]:
            raise BadIndex(f"{where} is .mpy sub-version {sub}, the board's native code needs {board['mpy_sub']}; "
                              "nothing was written")
    elif arch not in (None, board["arch"]):
        raise BadIndex(f"{where} is built for {arch}, the board is {board['arch'] or 'without native code'}; "
                          "nothing was written")


def fetch(index: str, board: dict) -> Fetched:
    """Every file the board gets from the index, checked: `neuromotor-<arch>` and the runtime
    it depends on, or the runtime alone (with a note saying why) when the index has no
    natmods for the board's architecture or the board runs no native code."""
    if board.get("impl") != "micropython" or board.get("mpy_version") is None:
        raise BadIndex(f"the board runs {board.get('impl')} without MicroPython's .mpy version in "
                          "sys.implementation._mpy; an index serves MicroPython: deploy without --index")
    mpy, arch = board["mpy_version"], board["arch"]
    got = Fetched()
    if arch is None:
        got.notes.append("this board has no native code emitter: installing the runtime alone (python or "
                         "ulab backend)")
    else:
        got.package = natmod_package(arch)
        try:
            pkg = package(index, mpy, got.package)
        except _Missing:
            got.notes.append(f"index has no {got.package} for .mpy version {mpy}: installing the runtime alone; "
                             "unless the firmware has the kernels built in, it uses the ulab or python backend")
        else:
            deps = [d[0] for d in pkg.get("deps", ()) if isinstance(d, list) and d]
            if deps != [RUNTIME]:
                raise BadIndex(f"index {index}: {got.package} depends on {deps}, expected [{RUNTIME!r}]")
            got.natmods = files(index, got.package, pkg, board, natmod=True)
    try:
        runtime = package(index, mpy, RUNTIME)
    except _Missing as exc:
        raise BadIndex(f"index {index} has no package {RUNTIME} for .mpy version {mpy} ({exc} is missing); "
                          "nothing was written") from None
    got.runtime = files(index, RUNTIME, runtime, board, natmod=False)
    return got

"""Names and paths inside a mip index, and what a .mpy file's header says."""

import re

from neuromotor.version import __version__

RUNTIME = "neuromotor"
VERSION = __version__
MPY_MAGIC = ord("M")

# sys.implementation._mpy >> 10, and a .mpy header's byte 2 >> 2 (MicroPython docs, "MicroPython .mpy files")
MPY_ARCHS = [None, "x86", "x64", "armv6", "armv6m", "armv7m", "armv7em", "armv7emsp",
             "armv7emdp", "xtensa", "xtensawin", "rv32imc"]

_HASH = re.compile(r"[0-9a-f]{64}\Z")
_TARGET = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\.mpy\Z")


def natmod_package(arch: str) -> str:
    """The package holding the native kernels built for `arch`."""
    return f"{RUNTIME}-{arch}"


def package_path(mpy_version, name: str, version: str = "latest") -> str:
    return f"package/{mpy_version}/{name}/{version}.json"


def file_path(sha256: str) -> str:
    return f"file/{sha256[:2]}/{sha256}"


def is_hash(text) -> bool:
    return isinstance(text, str) and bool(_HASH.match(text))


def is_target(text) -> bool:
    """A file name a package may install: one .mpy, no folders (they land in the board's lib)."""
    return isinstance(text, str) and bool(_TARGET.match(text))


def mpy_header(data: bytes):
    """(version, sub-version, arch name or None) of a .mpy file, or None if it is not one.
    Byte 2 holds the arch (MPY_ARCHS) above a 2-bit sub-version."""
    if len(data) < 4 or data[0] != MPY_MAGIC:
        return None
    arch = data[2] >> 2
    return data[1], data[2] & 3, MPY_ARCHS[arch] if arch < len(MPY_ARCHS) else f"arch{arch}"

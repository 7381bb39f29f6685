"""Board descriptors: boards/<name>/board.toml, loaded.

A descriptor says what a board is (MCU, core, clock, memory), which MicroPython
port and stock board it runs, which natmod architecture its .mpy files need, how
to find it on USB (VID:PID) and talk to it (serial settings), and, for emulated
boards, the QEMU command line. `validate.validate_board` checks one for consistency.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

from neuromotor.errors import UserError
from neuromotor.paths import BOARDS_DIR

# .mpy native architectures MicroPython 1.25 knows (mpy-cross -march / natmod ARCH).
NATMOD_ARCHS = ("x86", "x64", "armv6", "armv6m", "armv7m", "armv7em", "armv7emsp", "armv7emdp",
                "xtensa", "xtensawin", "rv32imc")

# Which natmod architectures are right for a core. Soft-float natmods (armv6m/armv7m)
# load on hard-float firmware but pass floats through the wrong ABI, so a core with
# an FPU only lists the hard-float architectures.
CORE_ARCHS = {
    "cortex-m0": ("armv6m",),
    "cortex-m0+": ("armv6m",),
    "cortex-m3": ("armv7m",),
    "cortex-m4": ("armv7em", "armv7m"),
    "cortex-m4f": ("armv7emsp",),
    "cortex-m7": ("armv7emdp", "armv7emsp"),
    "cortex-m33": ("armv7emsp",),
    "xtensa-lx106": ("xtensa",),
    "xtensa-lx6": ("xtensawin",),
    "xtensa-lx7": ("xtensawin",),
    "rv32imc": ("rv32imc",),
    "rv32imac": ("rv32imc",),
}

USB_ID_RE = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{4}$")


def _entry(key: str, kind: type, doc: str | None = None) -> property:
    """A descriptor's value of `key` (kind(), "" or {}, when it has none)."""
    return property(lambda self: self.data.get(key, kind()), doc=doc)


@dataclass
class BoardDescriptor:
    """One board descriptor (boards/<name>/board.toml)."""

    name: str
    path: Path
    data: dict = field(repr=False)

    kind = _entry("kind", str)
    description = _entry("description", str)
    mcu = _entry("mcu", dict)
    micropython = _entry("micropython", dict)
    serial = _entry("serial", dict)
    qemu = _entry("qemu", dict)
    firmware = _entry("firmware", dict,
                      "The custom-firmware section of a real board (board files, manifest, user C modules).")

    @property
    def emulated(self) -> bool:
        return self.kind == "emulated"

    @property
    def natmod_arch(self) -> str:
        return self.micropython.get("natmod_arch", "")

    @property
    def usb_ids(self) -> list:
        """[(vid, pid)] as integers."""
        out = []
        for s in self.data.get("usb", {}).get("ids", []):
            if isinstance(s, str) and USB_ID_RE.match(s.lower()):
                vid, pid = s.lower().split(":")
                out.append((int(vid, 16), int(pid, 16)))
        return out


def board_names(boards_dir: Path = BOARDS_DIR) -> list:
    """Names of all folders under boards/ that hold a board.toml, sorted."""
    return sorted(p.parent.name for p in Path(boards_dir).glob("*/board.toml"))


def load_board(name: str, boards_dir: Path = BOARDS_DIR) -> BoardDescriptor:
    path = Path(boards_dir) / name
    toml = path / "board.toml"
    if not toml.is_file():
        known = ", ".join(board_names(boards_dir)) or "none"
        raise UserError(f"unknown board {name!r} (known boards: {known})")
    try:
        data = tomllib.loads(toml.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{toml}: not valid TOML: {exc}") from None
    return BoardDescriptor(name=name, path=path, data=data)


def list_boards(boards_dir: Path = BOARDS_DIR) -> list:
    return [load_board(n, boards_dir) for n in board_names(boards_dir)]


def arch_ok_for_core(core: str, arch: str) -> bool:
    return arch in CORE_ARCHS.get(core, ())

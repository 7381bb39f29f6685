"""Every policy file format, export and import, in one table: `neuromotor export --format` and
`neuromotor import --format` take their choices, help and output from it.

A format names its handler as "module:function" (imported only when used, so `neuromotor
--help` stays fast) or as the function itself. An export handler is `write(spec, path)`
(after `check(path)` for a directory format, else after the usual file target checks); an
import handler is `read(path) -> neuromotor.policy.importers.network.Network`.
`register_format` adds a format; nothing else needs to change for the command line to offer it.
"""

import importlib
import os
from dataclasses import dataclass
from typing import Callable, Union

from neuromotor.errors import UserError

EXPORT, IMPORT = "export", "import"


@dataclass(frozen=True)
class PolicyFormat:
    """A policy file format: its name, direction ("export" or "import"), a one-phrase help, its
    handler ("module:function" or a function; export: `write(spec, path)`, import:
    `read(path) -> Network`), the suffixes that choose it, and for export whether it writes a
    directory (checked first by `check`), holds int8 policies, holds recurrent (version 4)
    ones, and the line printed after writing (`summary(path, spec)`; default: the file's
    format, dtype, network and size)."""

    name: str
    direction: str                       # EXPORT or IMPORT
    help: str                            # one phrase, for --help
    handler: Union[str, Callable]        # "module:function" or the function
    suffixes: tuple = ()                 # file names that choose this format when --format is not given
    directory: bool = False              # export: the output is a directory, checked by `check`
    check: Union[str, Callable, None] = None
    int8: bool = False                   # export: can hold an int8 policy
    recurrent: bool = False              # export: can hold GRU layers, sigmoid, fast_tanh (file version 4)
    summary: Union[Callable, None] = None  # export: (path, spec) -> the line printed after writing

    def describe(self) -> str:
        """"name: help (default for *.suffix)", as --help lists it."""
        default = f" (default for {', '.join('*' + s for s in self.suffixes)})" if self.suffixes else ""
        return f"{self.name}: {self.help}{default}"


def resolve(target):
    """A handler given as "module:function", imported; a callable as is."""
    if callable(target):
        return target
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


FORMATS: dict = {}


def register_format(fmt: PolicyFormat) -> PolicyFormat:
    """Add (or replace) a policy format; `neuromotor export`/`import --format` offer it from then on."""
    if fmt.direction not in (EXPORT, IMPORT):
        raise ValueError(f"direction must be {EXPORT!r} or {IMPORT!r}, got {fmt.direction!r}")
    FORMATS[(fmt.direction, fmt.name)] = fmt
    return fmt


def policy_formats(direction: str) -> list:
    """The PolicyFormats of one direction ("export" or "import"), in the order registered."""
    return [f for (d, _), f in FORMATS.items() if d == direction]


def policy_format(direction: str, name: "str | None", path) -> PolicyFormat:
    """The format called `name`, or (None) the one `path`'s suffix chooses: for export, nmp when
    none does; for import, a UserError."""
    names = [f.name for f in policy_formats(direction)]
    if name is not None:
        fmt = FORMATS.get((direction, name))
        if fmt is None:
            raise UserError(f"{direction} format must be one of {', '.join(names)}, got {name!r}")
        return fmt
    text = os.fspath(path).lower()
    for (d, _), fmt in FORMATS.items():
        if d == direction and any(text.endswith(s) for s in fmt.suffixes):
            return fmt
    if direction == EXPORT:
        return FORMATS[(EXPORT, "nmp")]
    raise UserError(f"{os.fspath(path)}: cannot tell its format from the name; give --format "
                    f"({', '.join(names)})")


def _platformio_summary(path, spec) -> str:
    return (f"wrote the PlatformIO project {path} (network {' -> '.join(str(s) for s in spec.sizes)}; "
            "environments teensy41, esp32, esp32c3, stm32f405, stm32h743)")


register_format(PolicyFormat("nmp", EXPORT, "the policy file boards load (docs/policy-format.md)",
                      "neuromotor.policy.policy_file:write_policy", (".nmp",), int8=True, recurrent=True))
register_format(PolicyFormat("c-header", EXPORT, "a C header for bare-metal C (dense and GRU layers, float32 "
                      "or int8)", "neuromotor.policy.c_header:write_c_header", (".h",), int8=True, recurrent=True))
register_format(PolicyFormat("platformio", EXPORT, "-o is a directory that gets a PlatformIO project for the real "
                      "boards around the C header (float32)",
                      "neuromotor.policy.platformio:write_platformio_project", directory=True, recurrent=True,
                      check="neuromotor.policy.platformio:check_project_dir", summary=_platformio_summary))
register_format(PolicyFormat("onnx", IMPORT, "an ONNX graph of an actor (Stable-Baselines3, CleanRL, PyTorch)",
                      "neuromotor.policy.importers.onnx_graph:read", (".onnx",)))
register_format(PolicyFormat("rltools-h5", IMPORT, "an RLtools HDF5 checkpoint (RAPTOR's foundation policy)",
                      "neuromotor.policy.importers.rltools_h5:read", (".h5", ".hdf5")))

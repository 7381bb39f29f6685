"""Name -> class tables whose entries are imported only when chosen.

Lazy imports keep `neuromotor --help` fast and let the MuJoCo envs live
behind an optional extra.
"""

import importlib

from neuromotor.errors import UserError


def lookup(table: dict, kind: str, name: str):
    """The class `table[name]` names as "module:Class"; an unknown name is a UserError."""
    if not isinstance(name, str) or name not in table:
        raise UserError(f"unknown {kind} {name!r}; known: {', '.join(sorted(table))}")
    module, cls = table[name].split(":")
    return getattr(importlib.import_module(module), cls)

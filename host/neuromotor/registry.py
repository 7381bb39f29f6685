"""Name -> class tables whose entries are imported only when chosen, and the user's own
classes named "module:attr".

Lazy imports keep `neuromotor --help` fast and let the MuJoCo envs live
behind an optional extra.
"""

import difflib
import importlib
import os
import sys

from neuromotor.errors import UserError


def lookup(table: dict, kind: str, name: str):
    """The class `table[name]` names as "module:Class"; an unknown name is a UserError."""
    if not isinstance(name, str) or name not in table:
        close = difflib.get_close_matches(name, table, n=1) if isinstance(name, str) else []
        hint = f"; did you mean {close[0]}?" if close else ""
        raise UserError(f"unknown {kind} {name!r}{hint}; known: {', '.join(sorted(table))}")
    module, cls = table[name].split(":")
    return getattr(importlib.import_module(module), cls)


def plugin_parts(name: str, kind: str, example: str = "mypackage.module:MyClass") -> tuple:
    """(module, attr) of a user's "module:attr", with the working directory importable beside
    the installed packages."""
    module, _, attr = name.partition(":")
    if not module or not attr:
        raise UserError(f"{kind} {name!r}: give module:attr, e.g. {example}")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    return module, attr


def plugin(name: str, kind: str):
    """The attribute a user's "module:attr" names, the module imported from the working directory
    or the installed packages; anything that cannot be imported is a UserError."""
    module, attr = plugin_parts(name, kind)
    try:
        obj = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception as exc:  # an import error, a missing name, or any error the module raises importing
        raise UserError(f"{kind} {name!r}: cannot import it ({type(exc).__name__}: {exc})") from None
    return obj

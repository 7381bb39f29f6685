"""neuromotor: reinforcement learning for microcontrollers, from Python.

The names below are the Python API (neuromotor.api); the `neuromotor` command is built on
them. They are imported on first use, so `import neuromotor` (and the command) start fast.
"""

from typing import TYPE_CHECKING

from neuromotor.api import __all__ as _api_names
from neuromotor.version import __version__

__all__ = [*_api_names, "__version__"]

if TYPE_CHECKING:
    from neuromotor.api import *  # noqa: F401,F403


def __getattr__(name: str):
    if name in __all__:
        from neuromotor import api

        value = getattr(api, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'neuromotor' has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__))

"""The package's version: what pyproject.toml builds, `neuromotor --version` prints and the
board runtime's mip packages are published under."""

__version__ = "0.1.0"

"""What the benchmark scripts share: where results go, how they are written, the
multiply-add count of a layout, and pictures (through neuromotor.training.plotting).

The scripts run as `python benchmarks/<name>.py`, so this folder is on sys.path
and `import benchutil` needs no path editing; neuromotor comes from the venv.
"""

import json
from pathlib import Path

from neuromotor.training.plotting import plt, save_png
from neuromotor.safe_write import atomic_write

RESULTS = Path(__file__).resolve().parent / "results"

__all__ = ["RESULTS", "macs", "plt", "save_png", "write_json"]


def write_json(path, doc) -> Path:
    """`doc` as indented JSON, atomically (a killed run never leaves half a file), folders made."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write(path, json.dumps(doc, indent=2) + "\n")


def macs(sizes) -> int:
    """Multiply-adds of one forward pass through dense layers of these widths, e.g. [13, 64, 64, 4]."""
    return sum(a * b for a, b in zip(sizes, sizes[1:]))

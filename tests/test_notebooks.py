"""The tutorial notebooks: stored without outputs, and each runs top to bottom in a real Jupyter
kernel (nbclient + ipykernel) in a directory of its own."""

import json
import re
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from neuromotor import boards
from neuromotor.paths import cache_dir

TUTORIALS = Path(__file__).resolve().parents[1] / "docs" / "tutorials"
NOTEBOOKS = ["quickstart", "own_environment", "emulated_board", "inside_the_library"]
TIMEOUT = 300  # per cell


def execute(nb, cwd: Path):
    NotebookClient(nb, timeout=TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


def outputs(nb, kind: str) -> list:
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if kind in o.get("data", {})]


def text_of(nb) -> str:
    return "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "")
                   for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_every_tutorial_is_stored_without_outputs():
    found = sorted(p.stem for p in TUTORIALS.glob("*.ipynb"))
    assert found == sorted(NOTEBOOKS)
    for name in NOTEBOOKS:
        nb = json.loads((TUTORIALS / f"{name}.ipynb").read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [] and cell["execution_count"] is None, f"{name}: strip its outputs"


def _needs(*paths):
    for p in paths:
        if not p.exists():
            pytest.fail(f"{p} is missing: build it first (make firmware natmods emulated)")


def _python_boards() -> set:
    """Emulated boards started from Python (instance <board>-py<pid>, see neuromotor.start_board)."""
    return {b.instance for b in boards.running() if re.search(r"-py\d+$", b.instance)}


@pytest.mark.device
def test_quickstart(tmp_path):
    _needs(cache_dir() / "bin" / "micropython")
    nb = execute(nbformat.read(TUTORIALS / "quickstart.ipynb", as_version=4), tmp_path)
    assert (tmp_path / "runs" / "quickstart" / "pendulum.nmp").is_file()
    assert len(outputs(nb, "image/png")) >= 3  # learning curve, swing-up frames, NumPy vs MicroPython
    assert "backend on MicroPython: native" in text_of(nb)


def test_own_environment(tmp_path):
    nb = execute(nbformat.read(TUTORIALS / "own_environment.ipynb", as_version=4), tmp_path)
    assert (tmp_path / "runs" / "point_mass" / "point_mass.nmp").is_file()
    assert json.loads((tmp_path / "runs" / "point_mass" / "config.json").read_text())["env"] == "point_mass:PointMass"
    assert outputs(nb, "image/png")


def test_inside_the_library(tmp_path):
    nb = execute(nbformat.read(TUTORIALS / "inside_the_library.ipynb", as_version=4), tmp_path)
    assert outputs(nb, "image/png")
    assert "finite differences agree" in text_of(nb)


@pytest.mark.qemu
@pytest.mark.slow
def test_emulated_board(tmp_path):
    from neuromotor.boards import firmware_path, load_board
    _needs(firmware_path(load_board("qemu-m7")))
    before = _python_boards()
    try:
        nb = execute(nbformat.read(TUTORIALS / "emulated_board.ipynb", as_version=4), tmp_path)
        assert (tmp_path / "runs" / "bench" / "bench.png").is_file()
        assert "agree within float32 tolerance: yes" in text_of(nb)
        assert len(outputs(nb, "image/png")) >= 1
        assert _python_boards() == before  # its last cell stopped the board
    finally:
        for instance in _python_boards() - before:
            boards.stop(instance)


@pytest.mark.qemu
def test_a_board_started_in_a_notebook_stops_when_a_cell_fails(tmp_path):
    """The kernel's end stops the board even when the cell that would have stopped it never runs."""
    from neuromotor.boards import firmware_path, load_board
    _needs(firmware_path(load_board("qemu-m4f")))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import neuromotor\nboard = neuromotor.start_board('qemu-m4f')\n"
                                          "print('PID', board.record.pid, board.record.instance)"),
                nbformat.v4.new_code_cell("raise RuntimeError('a cell fails')"),
                nbformat.v4.new_code_cell("board.stop()")]
    with pytest.raises(CellExecutionError, match="a cell fails"):
        execute(nb, tmp_path)
    pid, instance = nb.cells[0].outputs[0]["text"].split()[1:3]
    try:
        deadline = time.monotonic() + 10
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not Path(f"/proc/{pid}").exists()
        assert instance not in {b.instance for b in boards.running()}
    finally:
        boards.stop(instance)


"""RAPTOR's foundation policy on every emulated board: imported from the installed
`foundation-policy` package at test time (the repository holds no weights), deployed by
`neuromotor deploy`, its checkpoint's own example replayed by each backend on the board, flown
in the loop by `neuromotor hil` against the host's steps, and timed by `neuromotor bench`."""

import json
import sys

import pytest

from neuromotor.paths import SOURCE_ROOT

from .helpers import ensure_deployed, nm, recurrent_hil

pytest.importorskip("h5py")
pytest.importorskip("foundation_policy")
sys.path.append(str(SOURCE_ROOT / "benchmarks"))  # after everything else: its scripts shadow nothing
import raptor_boards  # noqa: E402

pytestmark = [pytest.mark.qemu, pytest.mark.slow]


@pytest.fixture(scope="module")
def raptor(tmp_path_factory):
    return raptor_boards.build(tmp_path_factory.mktemp("raptor"))


def test_the_example_is_replayed_by_every_backend(board, raptor):
    raptor_boards.upload(board.port, raptor)
    rows = {r["backend"]: r for r in raptor_boards.board_rows(board.name, board.port, raptor, log=lambda *_: None)}
    assert raptor_boards.natmod_path(board.name).exists(), "no natmod for this board: run `make natmods`"
    assert len(rows) == 4, list(rows)
    for name, r in rows.items():
        assert r["steps"] == 1000, name
        tol = 1e-4 if name == "python" else 1e-5
        assert r["max_abs_diff"] <= tol, (name, r["max_abs_diff"])
        assert r["instructions_per_step"] > 0, name


def test_hil_agrees_with_the_host_step_by_step(board, raptor):
    ensure_deployed(board.port, raptor["policy"])
    r = recurrent_hil(board.port, raptor["policy"], raptor_boards.ENV_KWARGS, episodes=2, steps=100, seed=7)
    assert r["steps"] == 200
    assert len(set(r["returns"])) == 2  # two different starts, each flown from the initial state


def test_bench_says_which_loops_raptor_fits(board, raptor, tmp_path):
    ensure_deployed(board.port, raptor["policy"])
    res = nm("bench", "--port", board.port, "-n", "100", "--out", tmp_path, "--json", check=True)
    header = [line for line in res.stdout.splitlines() if "control loop" in line]
    assert header and "one step (GRU state update included)" in header[0], res.stdout
    assert "predicted from instruction counts" in header[0] and "not measured" in header[0], header
    saved = json.loads((tmp_path / "bench.json").read_text())["results"][0]
    assert saved["predicted_for"] in ("a Teensy 4.1 (Cortex-M7)", "an ESP32 (Xtensa LX6)")  # the board assumed
    full = saved["backends"]
    assert full["native"]["recurrent"] is True and full["native"]["macs"] == 22 * 16 + 3 * 16 * 32 + 16 * 4
    native = [line for line in res.stdout.splitlines() if line.strip().startswith("native") and "fastest loop" in line]
    # RAPTOR's 400 Hz loop: the firmware's kernels take a few thousand instructions per step
    assert native and "400 Hz fits" in native[0], res.stdout

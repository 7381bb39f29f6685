"""`neuromotor bench` with several --port: two emulated boards compared in one table."""

import shutil

import pytest

from .helpers import last_json, make_spec, nm, started_board, write_spec

pytestmark = [pytest.mark.qemu, pytest.mark.slow]


@pytest.fixture(scope="module")
def two_boards():
    if not shutil.which("qemu-system-arm"):
        pytest.skip("qemu-system-arm is not installed (make system)")
    with started_board("qemu-m4f", "side") as a, started_board("qemu-m7", "side") as b:
        yield [a, b]


def test_bench_two_boards_side_by_side(two_boards, tmp_path):
    policy = write_spec(make_spec(5, sizes=(3, 16, 16, 1)), tmp_path / "p.nmp")
    # a fresh board has no bench server yet: a clear message, not a hang
    res = nm("bench", "--port", two_boards[0].port, "-n", "20")
    assert res.returncode == 2
    assert "nm_bench" in res.stderr and "neuromotor deploy" in res.stderr
    for b in two_boards:
        nm("deploy", policy, "--port", b.port, check=True)
    # --port auto must refuse: there are two boards
    res = nm("bench", "--port", "auto", "-n", "20")
    assert res.returncode == 2 and "several boards" in res.stderr
    res = nm("bench", "--port", two_boards[0].port, "--port", two_boards[1].port, "-n", "100",
             "--backend", "native", "--out", tmp_path, "--json", check=True)
    summary = last_json(res.stdout)
    assert [b["board"] for b in summary["boards"]] == ["qemu-m4f", "qemu-m7"]
    for b in summary["boards"]:
        assert b["emulated"] and list(b["backends"]) == ["native"]
    assert res.stdout.count("instruction-count time") == 2
    assert (tmp_path / "bench.png").stat().st_size > 0

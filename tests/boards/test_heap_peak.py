"""The GC heap's high-water mark on the emulated boards (module nm_heap).

gc.mem_alloc() only says what the heap holds when it is asked; a buffer made and
dropped between two calls never shows. The emulated boards' firmware is built from
MicroPython with device/port/patches/gc-peak-tracking.patch and
MICROPY_GC_PEAK_TRACKING: the allocator counts the blocks in use and keeps their
maximum, which nm_heap (device/port/nm_heap.c) and nm_link.HeapWatch read.

The teensy41 training profile is checked on qemu-m7 rebuilt with a 900 KiB heap
(boards/qemu-common/qemu-m7_heap900k) through train-on-device: the run must finish in
that heap, and the peak the trainer reports must stay under the profile's budget. The
esp32 profile likewise on qemu-xtensa (the ESP32's ABI) with the ESP32's 110 KiB heap
(boards/qemu-common/qemu-xtensa_heap110k).
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

from neuromotor.paths import cache_dir

REPO = Path(__file__).resolve().parents[2]

# The counter against gc's own scan of the allocation table after every kind of
# allocation change: alloc, free by collection, in-place grow (realloc), shrink,
# move; then the mark of a buffer that was made and freed between two looks.
COUNTER = r"""
import gc, nm_heap
ok = []
def same(what):
    ok.append((what, nm_heap.used(), gc.mem_alloc()))
gc.collect()
same("start")
base = nm_heap.reset_peak()
b = bytearray(200000)
same("alloc")
del b
gc.collect()
same("collect")
after_free = gc.mem_alloc() - base
l = []
for i in range(3000):
    l.append(i)
same("list grows")
ba = bytearray(100)
for i in range(40):
    ba.extend(bytes(96))
same("bytearray grows")
s = "x"
for i in range(12):
    s = s + s
same("strings")
d = {}
for i in range(300):
    d[i] = i
same("dict grows")
del l, ba, s, d
gc.collect()
same("end")
bad = [x for x in ok if x[1] != x[2]]
print("RESULT " + repr({"bad": bad, "n": len(ok), "peak": nm_heap.peak() - base, "live_after_free": after_free}))
"""

# Garbage without and with a HeapWatch threshold: float objects are heap objects on
# these boards, so the loop leaves ~16 B of garbage per iteration.
WATCH = r"""
import gc, nm_link
def churn():
    x = 0.0
    for i in range(4000):
        x = x + 0.5
w = nm_link.HeapWatch()
churn()
free_running = w.peak()
w.close()
before = gc.threshold()
w = nm_link.HeapWatch(nm_link.HEAP_GC_THRESHOLD)
churn()
bounded = w.peak()
w.close()
print("RESULT " + repr({"available": w.available, "free_running": free_running, "bounded": bounded,
                        "threshold_restored": gc.threshold() == before}))
"""

def _result(out):
    lines = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
    assert lines, out[-2000:]
    import ast
    return ast.literal_eval(lines[-1][len("RESULT "):])


def _run(mpremote, port, script, tmp_path, timeout=120):
    path = tmp_path / "script.py"
    path.write_text(script)
    return _result(mpremote(port, "run", str(path), timeout=timeout))


def _need_nm_heap(mpremote, port):
    out = mpremote(port, "exec", "try:\n import nm_heap; print('HAS', 1)\nexcept ImportError:\n print('HAS', 0)")
    if "HAS 1" not in out:
        pytest.fail("the qemu-m7 firmware has no nm_heap (built before heap tracking): "
                    "rebuild it with `make firmware BOARD=qemu-m7`")


def test_counter_equals_gc_and_keeps_the_peak(qemu_m7, mpremote, tmp_path):
    _need_nm_heap(mpremote, qemu_m7.port)
    r = _run(mpremote, qemu_m7.port, COUNTER, tmp_path)
    assert r["bad"] == [] and r["n"] == 8, r
    # the 200000-byte buffer is gone from the live heap but not from the mark
    assert r["live_after_free"] < 2000, r
    assert r["peak"] >= 200000 > r["live_after_free"], r


def test_heap_watch_threshold_bounds_garbage(qemu_m7, mpremote, tmp_path):
    _need_nm_heap(mpremote, qemu_m7.port)
    # at the root, which comes before /lib on sys.path: this source, not an older upload
    mpremote(qemu_m7.port, "cp", str(REPO / "device" / "lib" / "nm_link.py"), ":nm_link.py")
    try:
        r = _run(mpremote, qemu_m7.port, WATCH, tmp_path)
    finally:
        mpremote(qemu_m7.port, "rm", ":nm_link.py", check=False)
    assert r["available"] and r["threshold_restored"], r
    # 4000 floats of garbage: ~64 KB while nothing collects, a few KB with the threshold
    assert r["free_running"] > 40000, r
    assert 0 < r["bounded"] <= 3 * 4096, r


def _build(mk, variant):
    board_dir = REPO / "boards" / "qemu-common" / variant
    cmd = ["make", "-C", str(REPO / "device" / "port"), "-f", mk, f"BOARD={variant}", f"BOARD_DIR={board_dir}",
           "JOBS=2"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    assert res.returncode == 0, f"{' '.join(cmd)} failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    elf = cache_dir() / "firmware" / f"{variant}.elf"
    assert elf.exists(), res.stdout[-2000:]
    return elf


def _build_900k():
    return _build("qemu.mk", "qemu-m7_heap900k")


@pytest.mark.slow
def test_teensy41_profile_trains_in_900k_heap(mpremote, tmp_path):
    """train-on-device with the teensy41 profile on qemu-m7 with a 900 KiB heap: the run
    finishes, and the peak the board reports (the trainer's, above the heap before it)
    covers its buffers and fits the profile's budget and the board's heap."""
    import shutil
    if not shutil.which("qemu-system-arm"):
        pytest.skip("qemu-system-arm is not installed (make system)")
    from neuromotor.boards import emulated
    from neuromotor.boards.ondevice import PROFILES, train_on_device

    elf = _build_900k()
    board = emulated.start("qemu-m7", instance=f"qemu-m7-heap900k-pytest-{os.getpid()}", firmware=elf,
                           die_with_parent=True)
    try:
        out = mpremote(board.port, "exec", "import gc; gc.collect(); print('TOTAL', gc.mem_free() + gc.mem_alloc())")
        total = int(out.split("TOTAL")[1].split()[0])
        run_dir = tmp_path / "run"
        s = train_on_device(board.port, "teensy41", 300, seed=0, run_dir=run_dir, every=100, eval_episodes=1,
                            progress=False, log=lambda *_: None)
    finally:
        emulated.stop(board.instance)
    od = s["on_device"]
    print(json.dumps({"total": total, **{k: od[k] for k in ("heap_base", "heap_setup", "heap_peak",
                                                           "heap_live_peak", "heap_gc_threshold")}}))
    # the board really has the 900 KiB heap (less the allocation table), not 1 MiB
    assert 880_000 < total <= 900 * 1024, total
    assert od["updates"] == 200 and od["heap_gc_threshold"] == 4096, od
    # the mark covers at least the buffers that stay allocated, and fits the budget and the heap
    assert od["heap_setup"] <= od["heap_peak"] <= PROFILES["teensy41"]["budget"], od
    assert od["heap_base"] + od["heap_peak"] <= total, od
    # progress reports the mark so far: it never falls, and the final one is the largest
    prog = json.loads((run_dir / "on_device.json").read_text())["progress"]
    peaks = [p["heap_peak"] for p in prog]
    assert len(peaks) == 3 and peaks == sorted(peaks) and peaks[-1] <= od["heap_peak"], prog


@pytest.mark.slow
def test_bench_reports_heap_peaks(qemu_m7, mpremote, tmp_path):
    """nm_bench's hello, load and bench replies carry the counted peaks: loading a
    policy needs more heap than the loaded policy keeps; a native inference allocates
    nothing, the python backend's garbage stays within the watch's threshold."""
    import sys

    import numpy as np

    from neuromotor.policy import write_policy
    from neuromotor.boards.link.client import LinkClient
    from neuromotor.policy.spec import PolicySpec

    _need_nm_heap(mpremote, qemu_m7.port)
    rng = np.random.default_rng(0)
    sizes = (3, 32, 32, 1)
    spec = PolicySpec([rng.normal(0, 0.3, (sizes[i + 1], sizes[i])) for i in range(3)],
                      [rng.normal(0, 0.1, sizes[i + 1]) for i in range(3)], ["relu", "relu", "tanh"],
                      np.zeros(3), np.ones(3), np.full(1, 2.0), np.zeros(1), meta={"env": "pendulum"})
    policy = tmp_path / "p.nmp"
    write_policy(spec, policy)
    res = subprocess.run([sys.executable, "-m", "neuromotor", "deploy", str(policy), "--port", qemu_m7.port],
                         capture_output=True, text=True, timeout=600, cwd=REPO)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    with LinkClient(qemu_m7.port, timeout=30) as c:
        assert c.info["heap_peak_counted"] is True, c.info
        out = {}
        for backend in ("native", "python"):
            meta = c.load("/policy.nmp", backend)
            r = c.bench(50)
            out[backend] = (meta["load_heap_peak"], r["heap_peak"], r["alloc_per_call"])
    print(json.dumps(out))
    # loading reads and checks the file: more than nothing, less than the whole heap
    for backend, (load_peak, run_peak, alloc) in out.items():
        assert 0 < load_peak < 200_000, out
    assert out["native"][1] == 0 and out["native"][2] == 0, out
    assert 0 < out["python"][1] <= 3 * 4096, out
    # and `neuromotor bench` passes them on
    res = subprocess.run([sys.executable, "-m", "neuromotor", "bench", "--port", qemu_m7.port, "-n", "20",
                          "--backend", "native", "--out", str(tmp_path / "bench")],
                         capture_output=True, text=True, timeout=600, cwd=REPO)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    native = json.loads((tmp_path / "bench" / "bench.json").read_text())["results"][0]["backends"]["native"]
    assert native["heap_peak"] == 0 and 0 < native["load_heap_peak"] < 200_000, native


@pytest.mark.slow
def test_esp32_profile_trains_in_110k_heap_on_xtensa(mpremote, tmp_path):
    """train-on-device with the esp32 profile on qemu-xtensa with the ESP32's 110 KiB heap:
    the trainer's modules and the run fit, and the peak stays under the profile's budget."""
    import shutil
    if not shutil.which("qemu-system-xtensa"):
        pytest.fail("qemu-system-xtensa is not installed (make system)")
    from neuromotor.boards import emulated
    from neuromotor.boards.ondevice import PROFILES, train_on_device

    elf = _build("qemu_xtensa.mk", "qemu-xtensa_heap110k")
    board = emulated.start("qemu-xtensa", instance=f"qemu-xtensa-heap110k-pytest-{os.getpid()}", firmware=elf,
                           die_with_parent=True)
    try:
        out = mpremote(board.port, "exec", "import gc; gc.collect(); print('TOTAL', gc.mem_free() + gc.mem_alloc())")
        total = int(out.split("TOTAL")[1].split()[0])
        s = train_on_device(board.port, "esp32", 300, seed=0, run_dir=tmp_path / "run", every=100, eval_episodes=1,
                            progress=False, log=lambda *_: None)
    finally:
        emulated.stop(board.instance)
    od = s["on_device"]
    assert 105_000 < total <= 110 * 1024, total
    assert od["updates"] == 200 and od["heap_setup"] <= od["heap_peak"] <= PROFILES["esp32"]["budget"], od
    assert od["heap_base"] + od["heap_peak"] <= total, od

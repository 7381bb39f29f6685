"""The cycle model (device/timing/nm_cycles.c, a QEMU TCG plugin): exact cycle counts for
the TRM microbenchmarks, bare-metal and MicroPython figures with predictions per real board."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from neuromotor.boards import cycles as cyc
from neuromotor.boards import load_board
from neuromotor.errors import UserError

pytestmark = [pytest.mark.qemu]


def _need(*tools):
    for tool in tools:
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed (make system)")


@pytest.mark.parametrize("core,column", [("cortex-m4", 1), ("cortex-m7", 2)])
def test_microbenchmarks_exact(core, column):
    _need("arm-none-eabi-gcc", "qemu-system-arm", "cc")
    got = cyc.run_microbench(core)
    want = {row[0]: row[column] for row in cyc.MICROBENCHMARKS}
    assert got == want


def test_microbenchmarks_exact_rv32():
    _need("riscv64-unknown-elf-gcc", "qemu-system-riscv32", "cc")
    got = cyc.run_microbench("rv32imc")
    assert got == {name: want for name, want, _ in cyc.MICROBENCHMARKS_RV32}


def test_every_emulated_board_names_a_model_and_real_boards():
    for name in ("qemu-m4f", "qemu-m7", "qemu-rv32"):
        t = cyc.timing_of(name)
        assert t["core"] in cyc.CORES.values()
        for real, hz, ws in cyc.real_boards(name):
            assert cyc.timing_of(real)["core"] == t["core"]
            assert hz == load_board(real).mcu["clock_hz"] and ws == 0
    assert [r[0] for r in cyc.real_boards("qemu-m7")] == ["teensy41", "stm32h743"]
    with pytest.raises(UserError, match="no cycle model"):
        cyc.timing_of("esp32")


def test_predict_adds_wait_states_per_beat(monkeypatch):
    monkeypatch.setattr(cyc, "real_boards", lambda name: [("slow", 100_000_000, 3), ("fast", 200_000_000, 0)])
    p = cyc.predict("qemu-m4f", 1000.0, beats=10.0, macs=100)
    assert p["slow"]["cycles"] == 1030.0 and p["slow"]["us"] == pytest.approx(10.3)
    assert p["fast"]["cycles"] == 1000.0 and p["fast"]["us"] == pytest.approx(5.0)
    assert p["fast"]["cycles_per_mac"] == 10.0


def test_flash_parameters_are_the_documented_ones():
    # RM0090: 5 wait states at 168 MHz, 128-bit reads, ART data cache 8 x 128 bits;
    # RM0433/DS12110: 4 wait states at ACLK = CPU/2 up to 240 MHz, 32-byte L1 lines, 16 KB D-cache;
    # Teensy 4.1: constant data in DTCM, no flash term.
    assert cyc.flash_of("stm32f405") == {"wait_states": 5, "clock_divider": 1, "line_bytes": 16, "cache_bytes": 128}
    assert cyc.flash_of("stm32h743") == {"wait_states": 4, "clock_divider": 2, "line_bytes": 32,
                                         "cache_bytes": 16384}
    assert cyc.flash_of("teensy41") is None


def test_flash_stream_adds_a_line_fill_per_missed_line():
    weights = 4 * (13 * 64 + 64 + 64 * 64 + 64 + 64 * 4 + 4)  # 21 264 bytes
    f405, h743 = cyc.flash_of("stm32f405"), cyc.flash_of("stm32h743")
    assert cyc.stream_cycles(f405, weights) == 1329 * 5          # 16-byte lines, +5 cycles each
    assert cyc.stream_cycles(h743, weights) == 665 * (5 * 2 - 1)  # 32-byte lines, 5 AXI cycles
    assert cyc.stream_cycles(f405, 128) == 0 and cyc.stream_cycles(h743, 16384) == 0  # cached
    assert cyc.stream_cycles(None, weights) == 0
    p = cyc.predict("qemu-m7", 1000.0, macs=100, flash_bytes=weights)
    assert p["teensy41"]["cycles"] == 1000.0 and p["stm32h743"]["cycles"] == 1000.0 + 665 * 9
    assert p["stm32h743"]["us"] == pytest.approx((1000 + 665 * 9) / 480)
    p = cyc.predict("qemu-m4f", 1000.0, flash_bytes=weights)
    assert p["stm32f405"]["cycles"] == 1000.0 + 1329 * 5 and p["stm32f405"]["flash_cycles"] == 1329 * 5
    assert cyc.predict("qemu-m4f", 1000.0)["stm32f405"]["cycles"] == 1000.0  # weights in RAM


def test_heap_behind_a_cache_adds_line_fills_on_the_stm32h743():
    # MicroPython's heap: AXI SRAM (0 wait states at CPU/2) behind the 16 KB D-cache on the
    # STM32H743; zero-wait SRAM on the STM32F405; cached OCRAM on the Teensy 4.1
    assert cyc.cached_memory("stm32h743", "heap") == {"wait_states": 0, "clock_divider": 2, "line_bytes": 32,
                                                      "cache_bytes": 16384}
    assert cyc.cached_memory("stm32f405", "heap") is None and cyc.cached_memory("teensy41", "heap") is None
    p = cyc.predict("qemu-m7", 1000.0, heap_bytes=21264)
    assert p["stm32h743"]["cycles"] == 1000.0 + 665 and p["stm32h743"]["heap_cycles"] == 665
    assert p["teensy41"]["cycles"] == 1000.0
    assert cyc.predict("qemu-m7", 1000.0, heap_bytes=16384)["stm32h743"]["cycles"] == 1000.0
    assert cyc.predict("qemu-m4f", 1000.0, heap_bytes=21264)["stm32f405"]["cycles"] == 1000.0


def test_bad_flash_table_is_one_clear_error(monkeypatch):
    monkeypatch.setattr(cyc, "timing_of", lambda name: {"core": "cortex-m4", "flash": {"wait_states": 5}})
    with pytest.raises(UserError, match=r"\[timing.flash\] needs non-negative integers"):
        cyc.flash_of("stm32f405")
    monkeypatch.setattr(cyc, "timing_of", lambda name: {"core": "cortex-m7", "heap": {
        "wait_states": 0, "clock_divider": 0, "line_bytes": 32, "cache_bytes": 16384}})
    with pytest.raises(UserError, match=r"\[timing.heap\] needs"):
        cyc.cached_memory("stm32h743", "heap")


def test_generic_builds_are_the_documented_ones():
    """[timing.generic]: how each paper board's firmware built and ran the generic pass."""
    t = cyc.generic_build_of("teensy41")  # Teensyduino's default "Faster", strict aliasing
    assert (t["opt"], t["cflags"], t["buffers"], t["output"], t["weights"]) == (
        "-O2", ["-fsingle-precision-constant"], "local", "local", "data")
    h = cyc.generic_build_of("stm32h743")  # PX4: MinSizeRel and px4_add_common_flags
    assert (h["opt"], h["buffers"], h["output"], h["weights"]) == ("-Os", "object", "caller", "data")
    assert {"-fno-strict-aliasing", "-fno-math-errno", "-fno-signed-zeros", "-fno-trapping-math",
            "-freciprocal-math"} <= set(h["cflags"])
    f = cyc.generic_build_of("stm32f405")  # the Crazyflie fork's in-tree Kbuild build
    assert (f["opt"], f["buffers"], f["output"], f["weights"]) == ("-Os", "local", "caller", "flash")
    assert "-fno-strict-aliasing" in f["cflags"]
    assert h["extra"][0] == "-Os" and h["extra"][-2:] == ["-DNM_GENERIC_BUFFERS=2", "-DNM_GENERIC_OUTPUT=0"]
    assert t["extra"][-2:] == ["-DNM_GENERIC_BUFFERS=1", "-DNM_GENERIC_OUTPUT=1"]
    assert cyc.generic_build_of("esp32c3") is None
    # where the weights are read from: const arrays in flash; initialised data in the
    # STM32H743's AXI SRAM behind its D-cache (PX4's linker script); DTCM on the Teensy
    assert cyc.generic_weights_memory("stm32f405", f) == cyc.flash_of("stm32f405")
    assert cyc.generic_weights_memory("stm32h743", h) == {"wait_states": 0, "clock_divider": 2, "line_bytes": 32,
                                                          "cache_bytes": 16384}
    assert cyc.generic_weights_memory("teensy41", t) is None
    assert cyc.generic_weights_memory("stm32h743", None) == cyc.flash_of("stm32h743")


@pytest.mark.parametrize("table,match", [
    ({"opt": "-O4", "buffers": "local", "output": "local", "weights": "data"}, "opt must be one of"),
    ({"opt": "-O2", "cflags": ["-O3"], "buffers": "local", "output": "local", "weights": "data"},
     "cflags must be a list of -f options"),
    ({"opt": "-O2", "cflags": "-fno-strict-aliasing", "buffers": "local", "output": "local", "weights": "data"},
     "cflags must be a list"),
    ({"opt": "-O2", "cflags": ["-fno-x; rm -rf ~"], "buffers": "local", "output": "local", "weights": "data"},
     "cflags must be"),
    ({"opt": "-O2", "buffers": "heap", "output": "local", "weights": "data"}, "buffers must be one of"),
    ({"opt": "-O2", "buffers": "local", "output": "object", "weights": "data"}, "output must be one of"),
    ({"opt": "-O2", "buffers": "local", "output": "local", "weights": "rom"}, "weights must be one of"),
    ({"opt": "-O2", "buffers": "local", "output": "local", "weights": "data", "lto": True}, "has unknown keys lto"),
])
def test_bad_generic_table_is_one_clear_error(monkeypatch, table, match):
    monkeypatch.setattr(cyc, "timing_of", lambda name: {"core": "cortex-m7", "generic": table})
    with pytest.raises(UserError, match=r"boards/teensy41/board.toml: \[timing.generic\] " + match) as exc:
        cyc.generic_build_of("teensy41")
    assert "\n" not in str(exc.value)


def test_generic_builds_change_what_the_compiler_may_keep_in_registers():
    """The same generic pass built per [timing.generic]: buffers the compiler can see are
    its own keep the running sum in a register (the Teensy sketch), buffers held in an
    object under -fno-strict-aliasing reload the pointers after every store (PX4)."""
    _need("arm-none-eabi-gcc", "qemu-system-arm", "cc")
    from neuromotor.boards.baremetal import run_baremetal
    plain = run_baremetal("qemu-m7", sizes=(13, 64, 64, 4), repeat=20)["generic"]
    teensy = run_baremetal("qemu-m7", sizes=(13, 64, 64, 4), repeat=20,
                           generic=cyc.generic_build_of("teensy41"))["generic"]
    px4 = run_baremetal("qemu-m7", sizes=(13, 64, 64, 4), repeat=20,
                        generic=cyc.generic_build_of("stm32h743"))["generic"]
    assert max(plain["max_abs_err"], teensy["max_abs_err"], px4["max_abs_err"]) <= 1e-5
    assert teensy["cycles"] < 0.7 * plain["cycles"]
    assert px4["cycles"] > 1.5 * plain["cycles"] and px4["instructions"] > 2 * plain["instructions"]


def test_counter_file_is_checked(tmp_path):
    bad = tmp_path / "x.cycles"
    bad.write_bytes(b"not counters" * 10)
    with pytest.raises(UserError, match="not a cycle-counter file"):
        cyc.read_counters(bad)
    with pytest.raises(UserError, match="cannot read"):
        cyc.read_counters(tmp_path / "missing")


def test_plugin_refuses_unknown_arguments_and_wrong_target(tmp_path):
    _need("qemu-system-arm", "cc")
    so = cyc.build_plugin()
    for arg, msg in (("core=z80", "unknown argument"), ("core=rv32imc", "does not match"),
                     ("mark=0xzz", "bad mark")):
        res = subprocess.run(["qemu-system-arm", "-machine", "mps2-an500", "-nographic", "-monitor", "none",
                              "-serial", "none", "-plugin", f"{so},{arg}", "-kernel", "/dev/null"],
                             capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        assert res.returncode != 0 and msg in res.stderr, (arg, res.stderr)


@pytest.mark.parametrize("board,real,mhz,flash", [("qemu-m4f", "stm32f405", 168, 1329 * 5),
                                                  ("qemu-m7", "teensy41", 600, 0)])
def test_baremetal_cycles_and_generic(board, real, mhz, flash):
    _need("arm-none-eabi-gcc", "qemu-system-arm", "cc")
    from neuromotor.boards.baremetal import run_baremetal
    r = run_baremetal(board, sizes=(13, 64, 64, 4), repeat=50)
    # the plugin counts what QEMU executes: the CMSDK timer (40 instructions a tick, the
    # timing loop's few instructions per call not subtracted) agrees
    assert 0 <= r["instructions_timer"] - r["instructions_per_inference"] <= 20
    assert r["cycles_per_inference"] > 0.5 * r["instructions_per_inference"]
    p = r["predicted"][real]
    assert p["us"] == pytest.approx(r["cycles_per_inference"] / mhz)
    g = r["generic"]
    assert g["max_abs_err"] <= 1e-5
    # the generic nested loops are slower than the fused kernel in cycles, on both cores
    assert g["cycles"] > 1.5 * r["cycles_per_inference"]
    # its const weights are read from flash on the STM32F405 (in DTCM on the Teensy)
    assert g["const_bytes"] == 21264
    assert g["predicted"][real]["us"] == pytest.approx((g["cycles"] + flash) / mhz)
    # the sum lives in the output buffer: a load of each operand and a store per multiply-add
    assert g["instructions_per_mac"] > 4


def test_bench_reports_modelled_cycles(tmp_path):
    """A board started with the cycle model: bench reports cycles, cycles per MAC and µs at
    each real board's clock beside the instruction counts."""
    _need("qemu-system-arm", "cc")
    from neuromotor import boards
    from neuromotor.boards.bench import bench_port, json_summary, table
    from neuromotor.boards.deploy import deploy
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from board_inference import make_policy
    make_policy(tmp_path / "p.nmp")
    instance = "qemu-m7-cycles-test"
    try:
        b = boards.start("qemu-m7", instance=instance, build=True, die_with_parent=True, cycles=True)
    except UserError as exc:
        pytest.skip(f"qemu-m7 firmware: {exc}")
    try:
        counters = Path(b.extra["cycles"]["counters"])
        assert counters.exists()
        deploy(b.port, str(tmp_path / "p.nmp"), log=lambda s: None)
        r = bench_port(b.port, n=60, backends=["native"], log=lambda s: None)
    finally:
        boards.stop(instance)
    assert not counters.exists()
    s = r["backends"]["native"]
    assert r["cycle_model"] is True
    assert s["cycles"] == pytest.approx(s["instructions"] * s["cycles_per_instruction"])
    assert 0.8 < s["cycles_per_instruction"] < 4
    assert set(s["predicted_boards"]) == {"teensy41", "stm32h743"}
    assert s["predicted_boards"]["stm32h743"]["us"] == pytest.approx(s["cycles"] / 480)
    assert "cycle model" in table([r]) and "teensy41" in table([r])
    j = json_summary([r])["backends"]["native"]
    assert j["cycles_per_mac"] == s["cycles_per_mac"] and set(j["predicted_boards_us"]) == {"teensy41", "stm32h743"}


def test_validation_rows_use_the_papers_clocks_and_each_boards_generic_build(monkeypatch):
    """benchmarks/cycle_validation.py: each board's prediction is its own generic build's core
    cycles plus the memory term of where its weights were (flash for the Crazyflie's const
    checkpoint, AXI SRAM for PX4's .data, DTCM on the Teensy), at the clock the paper's board
    ran at (PixRacer Pro 460 MHz, not 480)."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import cycle_validation as cv

    def run(cycles, fused):
        return {"macs": 5184, "cycles_per_inference": fused, "generic": {"cycles": cycles, "const_bytes": 21264}}
    runs = {"stm32f405": run(60000.0, 19806.0), "stm32h743": run(66000.0, 10234.0),
            "teensy41": run(23000.0, 10234.0)}
    plain = {"qemu-m4f": run(65000.0, 19806.0), "qemu-m7": run(38000.0, 10234.0)}
    rows = {r["board"]: r for r in cv.rows_from(runs, plain)}
    assert list(rows) == ["stm32f405", "stm32h743", "teensy41"]
    f4, h7, t = rows["stm32f405"], rows["stm32h743"], rows["teensy41"]
    assert (f4["emulated"], h7["emulated"], t["emulated"]) == ("qemu-m4f", "qemu-m7", "qemu-m7")
    assert f4["memory_cycles"] == 1329 * 5 and f4["predicted_us"] == pytest.approx((60000 + 1329 * 5) / 168)
    assert h7["clock_mhz"] == 460 and h7["memory_cycles"] == 665 and h7["measured_us"] == 133
    assert h7["predicted_us"] == pytest.approx((66000 + 665) / 460)
    assert h7["plain_o3_us"] == pytest.approx((38000 + 665 * 9) / 460)
    assert t["memory_cycles"] == 0 and t["error"] == pytest.approx(23000 / 600 / 64 - 1)
    assert t["plain_o3_us"] == pytest.approx(38000 / 600)
    assert h7["within_target"] is True and t["within_target"] is False
    assert h7["build"]["opt"] == "-Os" and t["build"]["opt"] == "-O2"
    assert "1 of 3 boards" in cv.table(list(rows.values()))[-1]

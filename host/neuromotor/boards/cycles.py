"""Cycle-approximate timing of emulated boards: the nm_cycles QEMU plugin.

device/timing/nm_cycles.c classifies every translated instruction and sums cycles from
one core's timing tables (docs/timing-model.md). Its counters live in a small file the
plugin maps into memory, so they can be read while the guest runs:

    from neuromotor.boards import cycles
    args, counters = cycles.qemu_args("qemu-m7")       # add to the QEMU command line
    ... run ...
    c = cycles.read_counters(counters)                  # {"insns", "cycles", "beats", "marks"}
    cycles.predict("qemu-m7", c["cycles"], c["beats"])  # per real board: cycles and µs at its clock

The emulated board's [timing] table names its core model and the real boards it stands
for (qemu-m7: teensy41 and stm32h743); each real board's [timing] table gives its data
wait states, its flash and MicroPython's heap when they sit behind a cache
([timing.flash], [timing.heap]), and [mcu] clock_hz its clock.
"""

from __future__ import annotations

import math
import os
import re
import struct
import subprocess
from pathlib import Path

from neuromotor.errors import UserError
from neuromotor.paths import SOURCE_ROOT, cache_dir, require_checkout

from .descriptor import load_board

TIMING_DIR = SOURCE_ROOT / "device" / "timing"
MAGIC = b"NMCYC1\0\0"
MAX_MARKS = 64
_HEAD = struct.Struct("<8s5Q")
CORES = {4: "cortex-m4", 7: "cortex-m7", 32: "rv32imc"}

# Cycles the Cortex-M4 TRM (r0p1, Table 3-1 and the FPU instruction table) states for the
# sequences in device/timing/microbench.S, in order; P (pipeline refill, 1..3 in the TRM)
# is the model's 2. The Cortex-M7 column is the documented model's own rules (the M7 TRM
# publishes no instruction timings): pairs, latencies and the static branch predictor;
# the ISB after each sequence waits for its results, so latencies count to the end.
MICROBENCHMARKS = [
    # name, cortex-m4, cortex-m7, why
    ("alu_dep", 8, 8, "8 dependent ADDs: 1 each; M7 cannot pair a dependent pair"),
    ("alu_indep", 8, 4, "8 independent ADDs: 1 each; M7 issues two ALU ops per cycle"),
    ("ldr3", 4, 4, "LDR 2, then neighbouring loads pipeline at 1; M7: one load per cycle, the last ready 2 later"),
    ("ldr_dep", 4, 4, "the second address is the first result: no pipelining (2+2); M7: load-use latency 2, twice"),
    ("str_imm3", 3, 3, "STR Rx,[Ry,#imm] is always one cycle"),
    ("ldm8", 9, 4, "LDM 1+N; M7: 64 bits per cycle"),
    ("push_pop5", 12, 6, "PUSH 1+N and POP 1+N (no PC)"),
    ("vldm8", 9, 4, "VLDM.32 1+N; M7: 64 bits per cycle"),
    ("vldr2", 3, 3, "VLDR 2, the neighbouring VLDR pipelines at 1; M7: one per cycle, latency 2"),
    ("vfma_indep", 12, 6, "VFMA 3 each; M7: one FP operation per cycle, the last ready 3 later"),
    ("vfma_chain", 12, 12, "VFMA 3 each; M7: latency 3 on the accumulator"),
    ("vmla_indep", 12, 6, "VMLA 3 each"),
    ("vadd_indep", 4, 6, "VADD 1 each; M7: latency 3"),
    ("vdiv", 14, 14, "VDIV.F32 14"),
    ("mul_mla", 2, 3, "MUL 1, MLA 1; M7: one multiply pipe, latency 2"),
    ("sdiv", 12, 12, "SDIV 2..12: the model charges the bound"),
    ("ldr_vfma", 5, 4, "VLDR 2 + VFMA 3; M7: VLDR and VFMA do not pair, VFMA latency 3"),
    ("b_taken", 3, 1, "B 1+P; M7: a direct branch predicted by the BTAC costs its issue slot"),
    ("bne_not_taken", 3, 2, "MOVS, CMP, not-taken B<cond> 1; M7: CMP and the branch pair"),
    ("beq_taken", 5, 8, "MOVS, CMP, taken B<cond> 1+P; M7: a taken forward branch is mispredicted (+6)"),
    ("loop_aligned", 61, 37, "BL 1+P, MOVS 1, 8 x (VFMA 3, SUBS 1, BNE 1), 7 taken +P, BX LR 1+P; "
     "M7: the accumulator chain 8 x 3, the loop exit mispredicted, the return"),
    ("loop_split", 61, 37, "the same loop across a page boundary (two translated blocks): the same cycles"),
]

# device/timing/microbench-rv32.S under the rv32imc model (its own rules: no vendor table).
MICROBENCHMARKS_RV32 = [
    ("alu4", 4, "four ALU operations, 1 each"),
    ("load_use", 3, "LW 1 + a use of its result right after: 1 + 1 stall"),
    ("load_nouse", 2, "LW and an independent ADDI"),
    ("mul_div", 18, "MUL 1, DIV 17"),
    ("branch_taken", 3, "a taken branch: 1 + 2 refill"),
    ("branch_not_taken", 1, "a branch that falls through"),
    ("compressed", 4, "C.LW, C.ADDI of its result (+1 stall), C.LI"),
]


def plugin_path() -> Path:
    return cache_dir() / "timing" / "libnm_cycles.so"


def build_plugin() -> Path:
    """Build (or bring up to date) the plugin in the cache; return its path."""
    require_checkout("the cycle model's QEMU plugin")
    res = subprocess.run(["make", "-s", "-C", str(TIMING_DIR), "plugin", f"NEUROMOTOR_CACHE={cache_dir()}"],
                         capture_output=True, text=True)
    if res.returncode != 0:
        raise UserError(f"building the cycle-model plugin failed:\n{res.stdout}{res.stderr}")
    return plugin_path()


def timing_of(board_name: str) -> dict:
    """The [timing] table of a board descriptor (core, models, data_wait_states)."""
    t = load_board(board_name).data.get("timing")
    if not t or "core" not in t:
        raise UserError(f"{board_name} has no cycle model ([timing] core in boards/{board_name}/board.toml)")
    return t


def plugin_arg(core: str, counters: Path | None = None, mark: int | None = None) -> str:
    parts = [str(build_plugin()), f"core={core}"]
    if counters is not None:
        parts.append(f"out={counters}")
    if mark is not None:
        parts.append(f"mark={mark:#x}")
    for p in parts:
        if "," in p:
            raise UserError(f"a path for the cycle-model plugin contains a comma: {p}")
    return ",".join(parts)


def qemu_args(board_name: str, counters: Path | None = None, mark: int | None = None) -> tuple[list, Path]:
    """Extra QEMU arguments that load the plugin for this emulated board, and the counters file."""
    core = timing_of(board_name)["core"]
    if counters is None:
        counters = cache_dir() / "boards" / f"{board_name}.cycles"
    counters.parent.mkdir(parents=True, exist_ok=True)
    return ["-plugin", plugin_arg(core, counters, mark)], counters


def read_counters(path) -> dict:
    """The plugin's counters: insns, cycles, beats (32-bit data transfers), marks."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read the cycle counters {path}: {exc.strerror}") from None
    if len(raw) < _HEAD.size or raw[:8] != MAGIC:
        raise UserError(f"{path} is not a cycle-counter file of the nm_cycles plugin")
    _, core, insns, cycles_, beats, n_marks = _HEAD.unpack_from(raw)
    n_marks = min(n_marks, MAX_MARKS)
    marks = [struct.unpack_from("<3Q", raw, _HEAD.size + 24 * i) for i in range(n_marks)]
    return {"core": CORES.get(core, str(core)), "insns": insns, "cycles": cycles_, "beats": beats,
            "marks": [{"insns": m[0], "cycles": m[1], "beats": m[2]} for m in marks]}


def real_boards(board_name: str) -> list:
    """[(name, clock_hz, data_wait_states)] for the real boards an emulated board's model stands for."""
    out = []
    for name in timing_of(board_name).get("models", []):
        rb = load_board(name)
        t = timing_of(name)
        out.append((name, int(rb.mcu["clock_hz"]), int(t.get("data_wait_states", 0))))
    return out


CACHED_KEYS = ("wait_states", "clock_divider", "line_bytes", "cache_bytes")


def cached_memory(name: str, where: str) -> dict | None:
    """A real board's [timing.flash], [timing.heap] or [timing.data] table, or None (zero-wait memory).

    flash: where a C program's const data lives; heap: where MicroPython's heap (a
    deployed policy's arrays) lives; data: where a C program's initialised non-const data
    (.data) lives. Each has all of CACHED_KEYS as non-negative integers.
    """
    f = timing_of(name).get(where)
    if f is None:
        return None
    bad = [k for k in CACHED_KEYS if not isinstance(f.get(k), int) or isinstance(f.get(k), bool) or f[k] < 0]
    if bad or f["line_bytes"] == 0 or f["clock_divider"] == 0:
        raise UserError(f"boards/{name}/board.toml: [timing.{where}] needs non-negative integers "
                        f"{', '.join(CACHED_KEYS)} (line_bytes and clock_divider above 0)")
    return f


def flash_of(name: str) -> dict | None:
    return cached_memory(name, "flash")


# [timing.generic]: how the firmware a published generic figure was measured in built and
# ran the generic forward pass (device/baremetal/nm_generic.c, docs/timing-model.md).
GENERIC_OPT = ("-O0", "-O1", "-O2", "-O3", "-Os", "-Og")
GENERIC_BUFFERS = {"caller": 0, "local": 1, "object": 2}  # NM_GENERIC_BUFFERS
GENERIC_OUTPUT = {"caller": 0, "local": 1}  # NM_GENERIC_OUTPUT
GENERIC_WEIGHTS = ("flash", "data")  # const arrays ([timing.flash]) or initialised data ([timing.data])
GENERIC_KEYS = ("opt", "cflags", "buffers", "output", "weights")
_CFLAG = re.compile(r"-f[a-z0-9][a-z0-9-]*(=[a-z0-9-]+)?\Z")


def generic_build_of(name: str) -> dict | None:
    """A real board's [timing.generic] table checked, with the make flags it stands for, or None.

    opt: the firmware's optimisation level; cflags: its other code-generation options
    (-f... only); buffers/output: where the benchmark keeps the hidden layers' buffers and
    the output (see nm_generic.c); weights: const ("flash") or initialised data ("data").
    """
    g = timing_of(name).get("generic")
    if g is None:
        return None
    where = f"boards/{name}/board.toml: [timing.generic]"
    unknown = sorted(set(g) - set(GENERIC_KEYS))
    if unknown:
        raise UserError(f"{where} has unknown keys {', '.join(unknown)} (known: {', '.join(GENERIC_KEYS)})")
    if g.get("opt") not in GENERIC_OPT:
        raise UserError(f"{where} opt must be one of {', '.join(GENERIC_OPT)}, not {g.get('opt')!r}")
    cflags = g.get("cflags", [])
    if not isinstance(cflags, list) or not all(isinstance(f, str) and _CFLAG.match(f) for f in cflags):
        raise UserError(f"{where} cflags must be a list of -f options (e.g. \"-fno-strict-aliasing\"), "
                        f"not {cflags!r}")
    for key, known in (("buffers", GENERIC_BUFFERS), ("output", GENERIC_OUTPUT), ("weights", GENERIC_WEIGHTS)):
        if g.get(key) not in known:
            raise UserError(f"{where} {key} must be one of {', '.join(known)}, not {g.get(key)!r}")
    extra = [g["opt"], *cflags, f"-DNM_GENERIC_BUFFERS={GENERIC_BUFFERS[g['buffers']]}",
             f"-DNM_GENERIC_OUTPUT={GENERIC_OUTPUT[g['output']]}"]
    return {**{k: g.get(k) for k in GENERIC_KEYS}, "cflags": list(cflags), "extra": extra}


def generic_weights_memory(name: str, build: dict | None) -> dict | None:
    """The cached memory a generic build's weights are read from (None: zero-wait)."""
    if build is None or build["weights"] == "flash":
        return flash_of(name)
    return cached_memory(name, "data")


def stream_cycles(mem: dict | None, nbytes: int) -> int:
    """Cycles a call adds by reading nbytes once, in order, from memory behind a cache.

    A read takes wait_states + 1 cycles of the memory's clock (clock_divider CPU cycles
    each) until its first word arrives and fills one line; the core model already counts
    one cycle for the load. Data that fits the cache stays there from one call to the
    next (no misses); a larger stream misses on every line, every call.
    """
    if not mem or nbytes <= mem["cache_bytes"]:
        return 0
    lines = math.ceil(nbytes / mem["line_bytes"])
    return lines * ((mem["wait_states"] + 1) * mem["clock_divider"] - 1)


def predict(board_name: str, cycles: float, beats: float = 0.0, macs: int | None = None,
            flash_bytes: int = 0, heap_bytes: int = 0) -> dict:
    """Per real board: cycles with its memory system, cycles per multiply-add, µs at its clock.

    flash_bytes: constant data compiled into the program (a generic library's weights)
    that one call reads from flash; heap_bytes: a policy's arrays in MicroPython's heap
    that one call reads. 0 for data in zero-wait RAM (the bare-metal program's arrays).
    """
    out = {}
    for name, hz, ws in real_boards(board_name):
        flash = stream_cycles(flash_of(name), flash_bytes) if flash_bytes else 0
        heap = stream_cycles(cached_memory(name, "heap"), heap_bytes) if heap_bytes else 0
        c = cycles + ws * beats + flash + heap
        out[name] = {"cycles": c, "clock_mhz": hz / 1e6, "us": c / hz * 1e6, "flash_cycles": flash,
                     "heap_cycles": heap, "cycles_per_mac": c / macs if macs else None}
    return out


def symbol_address(elf, name: str, nm: str = "arm-none-eabi-nm") -> int:
    res = subprocess.run([nm, str(elf)], capture_output=True, text=True)
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == name:
            return int(parts[0], 16) & ~1
    raise UserError(f"{elf} has no symbol {name}")


def run_marked(elf, machine: str, core: str, system: str = "qemu-system-arm", timeout: float = 120,
               nm: str = "arm-none-eabi-nm") -> tuple[dict, str]:
    """Run a bare-metal ELF under the plugin with marks at nm_mark; return (counters, output)."""
    mark = symbol_address(elf, "nm_mark", nm)
    tmp = cache_dir() / "timing" / f"run-{os.getpid()}.cycles"
    tmp.parent.mkdir(parents=True, exist_ok=True)
    cmd = [system, "-machine", machine, "-nographic", "-monitor", "none", "-serial", "none", "-semihosting",
           "-icount", "shift=0", "-plugin", plugin_arg(core, tmp, mark), "-kernel", str(elf)]
    if machine == "virt":
        cmd[3:3] = ["-bios", "none"]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        if res.returncode != 0:
            raise UserError(f"{elf} under the cycle model failed (exit {res.returncode}): "
                            f"{(res.stdout + res.stderr)[-500:]}")
        return read_counters(tmp), res.stdout + res.stderr
    except subprocess.TimeoutExpired:
        raise UserError(f"{elf} did not finish within {timeout} s under the cycle model") from None
    finally:
        tmp.unlink(missing_ok=True)


def run_microbench(core: str) -> dict:
    """Cycles of each microbenchmark (device/timing/microbench*.S) under the model of `core`."""
    setups = {"cortex-m4": ("mps2-an386", "qemu-system-arm", "arm-none-eabi-nm", MICROBENCHMARKS),
              "cortex-m7": ("mps2-an500", "qemu-system-arm", "arm-none-eabi-nm", MICROBENCHMARKS),
              "rv32imc": ("virt", "qemu-system-riscv32", "riscv64-unknown-elf-nm", MICROBENCHMARKS_RV32)}
    if core not in setups:
        raise UserError(f"microbenchmarks run on {', '.join(setups)}, not {core}")
    machine, system, nm, table = setups[core]
    res = subprocess.run(["make", "-s", "-C", str(TIMING_DIR), "microbench", f"NEUROMOTOR_CACHE={cache_dir()}"],
                         capture_output=True, text=True)
    if res.returncode != 0:
        raise UserError(f"building the microbenchmarks failed:\n{res.stdout}{res.stderr}")
    c, _ = run_marked(cache_dir() / "timing" / f"microbench-{core}.elf", machine, core, system=system, nm=nm)
    m = [x["cycles"] for x in c["marks"]]
    deltas = [b - a for a, b in zip(m, m[1:])]
    if len(deltas) != len(table) + 1:
        raise UserError(f"microbench: {len(deltas)} marked regions, expected {len(table) + 1}")
    base = deltas[0]
    return {name: d - base for (name, *_), d in zip(table, deltas[1:])}

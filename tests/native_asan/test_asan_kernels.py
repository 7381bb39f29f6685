"""The C kernels fuzzed on their own, under AddressSanitizer and UndefinedBehaviorSanitizer.

asan_kernels.c draws random shapes from a seeded generator and calls the inference
kernels (nm_kernels.h: nm_dense, nm_dense_batch, nm_mlp, nm_pack_layer, nm_clamp,
nm_crc32, the size helpers) and the training kernels (nm_train.h: GEMM tiles at odd
shapes and strides, forward with its tape, backward, Adam, Polyak averaging, the TD3
steps, SAC's squashed Gaussian sample and its backward (bit for bit against the scalar
path), replay push and gather, the random streams, export packing). Each buffer is
its own malloc of exactly the size the size helpers or the kernel's contract give,
so an access one element past the end (or before the start) lands in a redzone.
Results are compared with double-precision references and the padding between
strided rows must stay untouched, so an access to the wrong element inside a
buffer fails too. Two builds run: the x86-64 one (SSE2 tiles; inference on the
scalar, SSE2 and AVX2 paths this CPU has) and a portable one without SSE or AVX
(the scalar tiles the Cortex-M boards run, software square root, Newton division).

What each tool covers:

- valgrind memcheck on the unix MicroPython (tests/device/test_fuzz.py) runs the
  real module: the Python-facing argument checks and the kernels behind them, fed
  junk values from Python. It reports accesses outside the blocks malloc handed
  out: past the end of the whole GC heap, into freed C memory. It cannot see an
  overrun from one object into the next inside MicroPython's heap (one malloc'd
  block, all of it addressable), nor overruns of stack or static arrays.
- ASan + UBSan on this harness see every out-of-bounds read or write of a kernel
  on a heap buffer, to the element, plus undefined behaviour (misaligned loads,
  shifts, signed overflow, out-of-range float-to-int casts, ...). They do not run
  the MicroPython glue (that is the fuzz test's part), the Cortex-M inline
  assembly (NM_VLDM) or any ARM build (x86-64 only here), nor reads of
  uninitialised memory (MemorySanitizer is clang's). They hold the kernels to the
  sizes the size helpers compute, so a helper and a kernel that agree on a wrong
  size would both need the reference comparison to fail.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SOURCE = HERE / "asan_kernels.c"
INCLUDES = [f"-I{REPO / 'device' / 'native' / 'include'}"]
SANITIZE = ["-fsanitize=address,undefined,float-cast-overflow", "-fno-sanitize-recover=all"]
BUILDS = {
    "x86-64": [],
    "portable": ["-U__SSE2__", "-DNM_NO_AVX2", "-DNM_NO_FDIV"],
}
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:halt_on_error=1",
           UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
SEEDS = [1, 2, 3]
CASES = 20000


def _compile(out: Path, extra) -> Path:
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed (make system)")
    cmd = ["gcc", "-std=c99", "-g", "-O1", "-fno-omit-frame-pointer", "-ffp-contract=off", "-Wall",
           "-Wextra", *SANITIZE, *extra, *INCLUDES, str(SOURCE), "-o", str(out), "-lm"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr[-4000:]}"
    return out


def _run(binary, seed, cases=CASES):
    return subprocess.run([str(binary), str(seed), str(cases)], capture_output=True, text=True,
                          timeout=600, env=ENV)


def _cpu_isas():
    """nm_kernels' instruction-set paths on this x86-64 CPU: scalar, SSE2, AVX2 with FMA."""
    info = Path("/proc/cpuinfo")
    flags = set(info.read_text().split()) if info.exists() else set()
    return [1, 2] + ([3] if {"avx2", "fma"} <= flags else [])


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    d = tmp_path_factory.mktemp("asan")
    built = {}

    def get(name, extra=()):
        if name not in built:
            built[name] = _compile(d / name, list(extra))
        return built[name]
    return get


@pytest.mark.parametrize("build", sorted(BUILDS))
@pytest.mark.parametrize("seed", SEEDS)
def test_kernels_clean_under_asan_and_ubsan(harness, build, seed):
    res = _run(harness(build, BUILDS[build]), seed)
    assert res.returncode == 0, f"seed {seed}:\n{res.stdout[-3000:]}\n{res.stderr[-6000:]}"
    assert "runtime error" not in res.stderr, res.stderr[-6000:]
    words = res.stdout.split()
    assert words[:2] == ["ok", str(CASES)] and int(words[2]) > 100 * CASES, res.stdout
    # every inference path this machine has was exercised (the portable build has only scalar)
    assert [int(w) for w in words[4:]] == ([1] if build == "portable" else _cpu_isas()), res.stdout


def test_avx2_pair_loads_are_aligned(harness):
    """nm_avx_pair() loads two floats that are only 4-byte aligned: through an
    unaligned 8-byte load, never a double pointer (undefined behaviour)."""
    res = _run(harness("x86-64-align"), SEEDS[0], 2000)
    assert res.returncode == 0 and "runtime error" not in res.stderr, res.stderr[-3000:]


def test_harness_catches_one_float_past_the_end(harness):
    """A dense output buffer one float short: ASan must stop the run at the kernel's write."""
    res = _run(harness("short", ["-fno-sanitize=alignment", "-DNM_ASAN_SHORT_BUFFER"]), SEEDS[0], 200)
    assert res.returncode != 0, res.stdout
    assert "heap-buffer-overflow" in res.stderr and "WRITE of size" in res.stderr, res.stderr[-3000:]
    assert "nm_dense" in res.stderr, res.stderr[-3000:]

"""The ARMv7E-M float kernel's multiply-add form: on FPv4-SP builds (Cortex-M4F) a
vmul then a vadd per multiply-add (VFMA costs 3 cycles there, VMUL and VADD 1 each),
on a double-precision FPU (Cortex-M7) the fused vfma; -DNM_SPLIT_MAC overrides."""

import shutil
import subprocess
from pathlib import Path

import pytest

from neuromotor.boards.baremetal import run_baremetal

pytestmark = [pytest.mark.qemu]

INCLUDE = Path(__file__).resolve().parents[2] / "device" / "native" / "include"
STM32F405_GOAL_CYCLES = 146.5 * 168  # half of RLtools' measured optimised time, at 168 MHz


@pytest.fixture(autouse=True)
def _tools():
    for tool in ("arm-none-eabi-gcc", "qemu-system-arm"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed (make system)")


def test_m4f_split_is_faster_and_equals_the_plain_c_loops():
    r = run_baremetal("qemu-m4f", sizes=(13, 64, 64, 4), acts=["relu", "relu", "identity"], repeat=20)
    # each product rounded, then added in input order: exactly the naive C reference
    assert r["max_abs_err"] == 0.0
    assert r["cycles_per_inference"] <= STM32F405_GOAL_CYCLES


def test_m7_keeps_the_fused_kernel():
    r = run_baremetal("qemu-m7", sizes=(13, 64, 64, 4), acts=["relu", "relu", "identity"], repeat=20)
    assert r["max_abs_err"] <= 1e-5
    assert r["cycles_per_inference"] < 12_000  # the split form costs ~15,400 on the M7


@pytest.mark.parametrize("flags, op", [
    (["-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16"], "vmul.f32"),
    (["-mcpu=cortex-m7", "-mfpu=fpv5-d16"], "vfma.f32"),
    (["-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16", "-DNM_SPLIT_MAC=0"], "vfma.f32"),
    (["-mcpu=cortex-m7", "-mfpu=fpv5-d16", "-DNM_SPLIT_MAC=1"], "vmul.f32"),
])
def test_gating(tmp_path, flags, op):
    src = tmp_path / "t.c"
    src.write_text('#include "nm_kernels.h"\n'
                   "void f(float *y, const float *x, const float *w, size_t n) { nm_block4_vldm(y, x, w, n, 1); }\n")
    asm = subprocess.run(["arm-none-eabi-gcc", "-std=c99", "-O2", "-ffp-contract=off", "-mthumb",
                          "-mfloat-abi=hard", *flags, f"-I{INCLUDE}", "-S", "-o", "-", str(src)],
                         check=True, capture_output=True, text=True).stdout
    other = "vfma.f32" if op == "vmul.f32" else "vmul.f32"
    assert asm.count(op) == 9 and other not in asm  # 8 per two inputs + the odd input's one

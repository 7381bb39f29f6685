"""A Cortex-M0 (armv6m: no FPU, no DSP extension; QEMU microbit) runs the policy kernels
bare metal: the float forward pass agrees with the host's NumPy reference, the int8 one
is bit-exact, and the instructions per multiply-add are counted exactly (cycle-model
plugin marks)."""

import re
import shutil

import numpy as np
import pytest
from test_xtensa_baremetal import check_against_host, natmod_opt, policy_case

from neuromotor.boards import policy_baremetal as pb
from neuromotor.paths import DEVICE_DIR


@pytest.fixture(scope="module")
def case():
    for tool in ("arm-none-eabi-gcc", "qemu-system-arm"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} is not installed: run device/port/setup_system.sh")
    return policy_case()


@pytest.fixture(scope="module")
def m0_run(case):
    spec, qp, obs = case
    return pb.run_policy("armv6m", spec, qp, obs)


def test_armv6m_forward_passes_match_the_host(case, m0_run):
    check_against_host(m0_run, *case)


def test_armv6m_float_bits_equal_xtensa_soft_float(case, m0_run):
    """Both cores have only IEEE soft float (libgcc's), so the same operations in the same
    order give the same bits."""
    spec, qp, obs = case
    xt = pb.run_policy("xtensa", spec, qp, obs)
    np.testing.assert_array_equal(m0_run["float"].view(np.uint32), xt["float"].view(np.uint32))


def test_armv6m_instruction_counts(m0_run):
    ipm = m0_run["instructions_per_mac"]
    print(f"armv6m (Cortex-M0) instructions per multiply-add: float {ipm['float']:.1f}, int8 {ipm['int8']:.1f}")
    assert m0_run["macs"] == 13 * 64 + 64 * 64 + 64 * 4
    # soft float: __aeabi_fmul and __aeabi_fadd per multiply-add
    assert 100 < ipm["float"] < 250
    # the Thumb-1 int8 block kernel (4.25 per multiply-add; the portable C one, whose
    # LDRSB has no immediate offset on ARMv6-M, gives 12.1 in all) with the requantisation
    # and, at the edges, the input quantisation (a soft-float subtraction and multiplication
    # per input, rounded from the float's bits: 10.1 with a division per input and float
    # rounding) and the float output
    assert ipm["int8"] < 9
    assert ipm["float"] / ipm["int8"] > 10


def test_armv6m_program_compiles_the_kernels_as_the_natmod():
    """The counts stand for the armv6m natmod: its -O level and dynruntime.mk's -mcpu."""
    flags = re.search(r"^CFLAGS := (.*?)(?<!\\)$", (DEVICE_DIR / "baremetal" / "armv6m" / "Makefile").read_text(),
                      re.M | re.S).group(1).split()
    assert natmod_opt() in flags and "-mcpu=cortex-m0" in flags and "-ffp-contract=off" in flags

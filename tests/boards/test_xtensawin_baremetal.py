"""The ESP32's ABI (windowed registers, single-precision FPU) runs the policy kernels
bare metal on QEMU's de233_fpu core, compiled as the xtensawin natmods are (clang-22,
the ISA options the ESP32, ESP32-S3 and de233_fpu share): the float forward pass of a
13->64->64->4 policy agrees with the host's NumPy reference, the int8 one is bit-exact.
"""

import shutil

import pytest

from neuromotor.boards import policy_baremetal as pb
from test_xtensa_baremetal import check_against_host, policy_case


@pytest.fixture(scope="module")
def case():
    for tool in ("clang-22", "llvm-mc-22", "xtensa-lx106-elf-ld", "qemu-system-xtensa"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} is not installed: run device/port/setup_system.sh")
    return policy_case()


@pytest.fixture(scope="module")
def run(case):
    spec, qp, obs = case
    return pb.run_policy("xtensawin", spec, qp, obs)


def test_xtensawin_forward_passes_match_the_host(case, run):
    check_against_host(run, *case)


def test_xtensawin_instruction_counts(run):
    # CCOUNT at the sim core's 40 MHz, one instruction per ns under -icount shift=0
    assert run["instructions_per_tick"] == pytest.approx(25.0, abs=25.0 / 800 * 1.01)
    assert run["macs"] == 13 * 64 + 64 * 64 + 64 * 4
    ipm = run["instructions_per_mac"]
    print(f"xtensawin (de233_fpu) instructions per multiply-add: float {ipm['float']:.2f}, int8 {ipm['int8']:.2f}")
    # hardware float (lsi, mul.s, add.s per multiply-add, no soft-float calls) ...
    assert 2.0 <= ipm["float"] < 6
    # ... and int8 through mull, well under the lx106's soft-float
    assert 2.0 <= ipm["int8"] < 10

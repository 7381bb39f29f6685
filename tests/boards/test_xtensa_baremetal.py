"""The ESP8266's core (Xtensa LX106, QEMU sim machine) runs the policy kernels bare metal:
the float forward pass of a 13->64->64->4 policy agrees with the host's NumPy reference,
the int8 one is bit-exact, and a payload nm_q8_check refuses stops the program.

`policy_case`, and `installed_case` (it after the tools' check), are also the case of the other
bare-metal tests (tests/boards/test_armv6m_baremetal.py, tests/boards/test_xtensawin_baremetal.py).
"""

import re
import shutil

import numpy as np
import pytest

from neuromotor.boards import policy_baremetal as pb
from neuromotor.errors import UserError
from neuromotor.paths import DEVICE_DIR

SIZES = (13, 64, 64, 4)


def policy_case():
    return pb.td3_shaped_case(SIZES)


def installed_case(*tools):
    """policy_case, once the core's compiler and emulator are found: a missing one fails the
    test, since device/port/setup_system.sh installs them all."""
    for tool in tools:
        if not shutil.which(tool):
            pytest.fail(f"{tool} is not installed: run device/port/setup_system.sh")
    return policy_case()


def check_against_host(r, spec, qp, obs):
    """The core's actions against the NumPy references: int8 bit for bit, float to float32 rounding."""
    want_q = qp.forward(obs)
    assert r["int8"].shape == want_q.shape
    np.testing.assert_array_equal(r["int8"].view(np.uint32), want_q.view(np.uint32))
    want_f = spec.forward(obs)
    np.testing.assert_allclose(r["float"], want_f, rtol=1e-5, atol=1e-6)
    # the two are different computations, and the actions are not all at a limit
    assert np.abs(r["float"] - r["int8"]).max() > 0
    assert (np.abs(r["float"]) < 2.0).mean() > 0.5


@pytest.fixture(scope="module")
def case():
    return installed_case("xtensa-lx106-elf-gcc", "qemu-system-xtensa")


@pytest.fixture(scope="module")
def xtensa_run(case):
    return pb.run_policy("xtensa", *case)


def test_xtensa_forward_passes_match_the_host(case, xtensa_run):
    check_against_host(xtensa_run, *case)


def test_xtensa_instruction_counts(xtensa_run):
    r = xtensa_run
    # CCOUNT runs at the sim core's 40 MHz, one instruction per ns under -icount shift=0:
    # a straight line of 20000 instructions is 800 ticks, to one tick
    assert r["instructions_per_tick"] == pytest.approx(25.0, abs=25.0 / 800 * 1.01)
    assert r["macs"] == 13 * 64 + 64 * 64 + 64 * 4
    ipm = r["instructions_per_mac"]
    print(f"xtensa lx106 instructions per multiply-add: float {ipm['float']:.1f}, int8 {ipm['int8']:.1f}")
    # soft float: a call to __mulsf3 and one to __addsf3 per multiply-add
    assert 40 < ipm["float"] < 120
    # int8 under the natmod's -mforce-l32 (every byte load is a 32-bit load and a shift)
    assert ipm["int8"] < 30
    assert ipm["float"] / ipm["int8"] > 2.5


def test_xtensa_refuses_an_int8_payload_the_check_refuses(case):
    """The host refuses such a payload first; here it reaches the device's nm_q8_check."""
    spec, qp, obs = policy_case()
    qp.mults[0] = qp.mults[0].copy()
    qp.mults[0][5] = 0  # a multiplier of 0: nm_q8_check's NM_Q8_BAD_MULT
    with pytest.raises(UserError, match="multiplier"):
        qp.validate()
    qp.validate = lambda: None
    with pytest.raises(UserError, match="int8 payload is not deployable"):
        pb.run_policy("xtensa", spec, qp, obs[:1])


def natmod_opt() -> str:
    """The -O level the kernels' natmod (and user C module) is built with."""
    text = (DEVICE_DIR / "native" / "nm_kernels" / "Makefile").read_text()
    return re.search(r"^CFLAGS_EXTRA \+= (-O\w+)$", text, re.M).group(1)


def test_xtensa_program_compiles_the_kernels_as_the_natmod():
    """The counts stand for the xtensa natmod: its -O level and dynruntime.mk's -mforce-l32
    (natmod code and constants may sit in IRAM, which has only 32-bit loads)."""
    flags = re.search(r"^CFLAGS := (.*?)(?<!\\)$", (DEVICE_DIR / "baremetal" / "xtensa" / "Makefile").read_text(),
                      re.M | re.S).group(1).split()
    assert natmod_opt() in flags and "-mforce-l32" in flags and "-ffp-contract=off" in flags

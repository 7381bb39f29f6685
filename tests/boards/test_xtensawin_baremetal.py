"""The ESP32's ABI (windowed registers, single-precision FPU) runs the policy kernels
bare metal on QEMU's de233_fpu core, compiled as the xtensawin natmods are (clang-22,
the ISA options the ESP32, ESP32-S3 and de233_fpu share), both ways: the dense layers in
assembly (device/native/xtensawin/, what the natmods build) and in C (XT_ASM=0). The
float forward pass of a 13->64->64->4 policy agrees with the host's NumPy reference, the
int8 one is bit-exact; so do a small policy whose widths exercise the assembly's edges
(odd input counts, a partial last block, padded int8 rows and inputs).
"""

import dataclasses
import re
import subprocess

import numpy as np
import pytest

from neuromotor.boards import policy_baremetal as pb
from neuromotor.policy.quantize import quantize
from neuromotor.policy.spec import PolicySpec
from test_xtensa_baremetal import check_against_host, installed_case


def edge_case(seed: int = 1, n_obs: int = 6):
    """A 7->10->5->3 policy (relu, identity, tanh): 7 inputs (a remainder after groups of
    4 and an odd pair), 10 and 5 outputs (partial blocks), an identity hidden layer, and
    int8 requantisation both with a shift and without (shift 0)."""
    sizes = (7, 10, 5, 3)
    rng = np.random.default_rng(seed)
    weights = [(rng.standard_normal((b, a)) / np.sqrt(a)).astype(np.float32) for a, b in zip(sizes, sizes[1:])]
    biases = [(0.1 * rng.standard_normal(b)).astype(np.float32) for b in sizes[1:]]
    spec = PolicySpec(weights=weights, biases=biases, activations=["relu", "identity", "tanh"],
                      obs_mean=np.zeros(7, np.float32), obs_std=np.ones(7, np.float32),
                      action_scale=np.ones(3, np.float32), action_offset=np.zeros(3, np.float32),
                      action_low=np.full(3, -1.0, np.float32), action_high=np.full(3, 1.0, np.float32))
    calib = rng.standard_normal((256, 7)).astype(np.float32)
    obs = rng.standard_normal((n_obs, 7)).astype(np.float32)
    qp = quantize(spec, calib)
    # the first hidden layer at shift 0 (the requantisation without the rounding shift),
    # the same scale in its multipliers
    assert qp.shifts[0] > 0
    qp = dataclasses.replace(qp, mults=[qp.mults[0] >> qp.shifts[0], *qp.mults[1:]], shifts=[0, *qp.shifts[1:]])
    return spec, qp, obs


@pytest.fixture(scope="module")
def case():
    return installed_case("clang-22", "llvm-mc-22", "xtensa-lx106-elf-ld", "qemu-system-xtensa")


@pytest.fixture(scope="module", params=[1, 0], ids=["assembly", "c"])
def run(request, case):
    return pb.run_policy("xtensawin", *case, make_vars={"XT_ASM": request.param})


def test_xtensawin_forward_passes_match_the_host(case, run):
    check_against_host(run, *case)


@pytest.mark.parametrize("xt_asm", [1, 0], ids=["assembly", "c"])
def test_xtensawin_edge_widths_match_the_host(case, xt_asm):
    spec, qp, obs = edge_case()
    r = pb.run_policy("xtensawin", spec, qp, obs, make_vars={"XT_ASM": xt_asm})
    np.testing.assert_array_equal(r["int8"].view(np.uint32), qp.forward(obs).view(np.uint32))
    np.testing.assert_allclose(r["float"], spec.forward(obs), rtol=1e-5, atol=1e-6)
    assert np.abs(r["float"]).max() > 0.05


def test_xtensawin_loop_bodies_start_on_a_fetch_boundary(case, run):
    """The LOOP option needs a loop body's first instruction not to cross an instruction
    fetch boundary; llvm-mc does not pad for it (the .S files do): each loop instruction
    (3 bytes) of the linked program ends on a 4-byte boundary."""
    mattr = "+windowed,+density,+loop,+nsa,+minmax,+sext,+clamps,+mul16,+mul32,+div32,+mac16,+bool,+fp"
    out = subprocess.run(["llvm-objdump-22", "-d", f"--mattr={mattr}", run["elf"]],
                         capture_output=True, text=True, check=True).stdout
    loops = [int(m.group(1), 16) for m in re.finditer(r"^\s*([0-9a-f]+):\s+(?:[0-9a-f]{2} )+\s+loop\w*\s", out, re.M)]
    if run["elf"].endswith("-c.elf"):
        assert loops == []  # clang emits no zero-overhead loops
    else:
        assert len(loops) >= 6 and all((a + 3) % 4 == 0 for a in loops), [hex(a) for a in loops]


def test_xtensawin_instruction_counts(case):
    spec, qp, obs = case
    asm, c = (pb.run_policy("xtensawin", spec, qp, obs, make_vars={"XT_ASM": v}) for v in (1, 0))
    for r in (asm, c):
        # CCOUNT at the sim core's 40 MHz, one instruction per ns under -icount shift=0
        assert r["instructions_per_tick"] == pytest.approx(25.0, abs=25.0 / 800 * 1.01)
        assert r["macs"] == 13 * 64 + 64 * 64 + 64 * 4
    ipm, ipm_c = asm["instructions_per_mac"], c["instructions_per_mac"]
    print(f"xtensawin (de233_fpu) instructions per multiply-add: float {ipm_c['float']:.2f} (C) "
          f"{ipm['float']:.2f} (assembly), int8 {ipm_c['int8']:.2f} (C) {ipm['int8']:.2f} (assembly)")
    # C: lsi, mul.s, add.s per multiply-add; int8 through mull and a 64-bit multiply call
    assert 3.0 <= ipm_c["float"] < 6 and 4.0 <= ipm_c["int8"] < 10
    # assembly: a weight load and a madd.s each (2.0), plus inputs, biases, activations
    assert 2.0 <= ipm["float"] < 3.0
    # one MAC16 instruction per multiply-add (its ldinc the loads), plus requantisation
    assert 1.0 <= ipm["int8"] < 3.0

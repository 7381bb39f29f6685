"""A Cortex-M0 (armv6m: no FPU, no DSP extension; QEMU microbit) runs the policy kernels
bare metal: the float forward pass agrees with the host's NumPy reference, the int8 one
is bit-exact, and the instructions per multiply-add are counted exactly (cycle-model
plugin marks)."""

import re

import numpy as np
import pytest
from test_xtensa_baremetal import check_against_host, installed_case, natmod_opt

from neuromotor.boards import policy_baremetal as pb
from neuromotor.policy.quantize import quantize
from neuromotor.paths import DEVICE_DIR
from neuromotor.policy.spec import PolicySpec


@pytest.fixture(scope="module")
def case():
    return installed_case("arm-none-eabi-gcc", "qemu-system-arm")


@pytest.fixture(scope="module")
def m0_run(case):
    return pb.run_policy("armv6m", *case)


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
    print(f"armv6m (Cortex-M0) instructions per multiply-add: float {ipm['float']:.1f}, int8 {ipm['int8']:.2f}")
    assert m0_run["macs"] == 13 * 64 + 64 * 64 + 64 * 4
    # soft float: __aeabi_fmul and __aeabi_fadd per multiply-add
    assert 100 < ipm["float"] < 250
    # 5.94: the Thumb-1 int8 block kernel (4.2 per multiply-add in the hidden layers and
    # 0.2 in the last; the portable C one, whose LDRSB has no immediate offset on ARMv6-M,
    # gives 12.1 in all), the requantisation in two 16-bit products per row (0.5), block
    # and layer overhead (0.3), the input's float32 subtraction and multiplication in
    # integers (0.53) and the integer tanh output (0.25); 8.8 with libgcc's soft float at
    # the input and nm_tanhf per action
    assert ipm["int8"] <= 6.0
    assert ipm["float"] / ipm["int8"] > 25


def test_armv6m_program_compiles_the_kernels_as_the_natmod():
    """The counts stand for the armv6m natmod: its -O level and dynruntime.mk's -mcpu."""
    flags = re.search(r"^CFLAGS := (.*?)(?<!\\)$", (DEVICE_DIR / "baremetal" / "armv6m" / "Makefile").read_text(),
                      re.M | re.S).group(1).split()
    assert natmod_opt() in flags and "-mcpu=cortex-m0" in flags and "-ffp-contract=off" in flags


def _shaped_case(sizes, acts, seed):
    rng = np.random.default_rng(seed)
    ws = [(rng.standard_normal((b, a)) / np.sqrt(a)).astype(np.float32) for a, b in zip(sizes, sizes[1:])]
    bs = [(0.1 * rng.standard_normal(b)).astype(np.float32) for b in sizes[1:]]
    n, a = sizes[0], sizes[-1]
    spec = PolicySpec(weights=ws, biases=bs, activations=acts,
                      obs_mean=(0.2 * rng.standard_normal(n)).astype(np.float32),
                      obs_std=rng.uniform(0.5, 2.0, n).astype(np.float32), action_scale=np.full(a, 2.0, np.float32),
                      action_offset=np.zeros(a, np.float32), action_low=np.full(a, -2.0, np.float32),
                      action_high=np.full(a, 2.0, np.float32))
    obs = spec.obs_mean + spec.obs_std * rng.standard_normal((264, n)).astype(np.float32)
    return spec, quantize(spec, obs[:256]), obs[256:].astype(np.float32)


@pytest.mark.parametrize("sizes,acts", [
    ([5, 7, 3], ["relu", "tanh"]),                      # 1 group + one input; 7 rows
    ([9, 10, 6, 2], ["identity", "relu", "identity"]),  # 2 groups + one input; 10 and 6 inputs (3 groups, odd)
    ([1, 4], ["tanh"]),                                 # the one input alone
    ([16, 8, 3], ["relu", "relu"]),                     # 4 groups (even), no padding
])
def test_armv6m_int8_kernel_shapes_and_multipliers_are_bit_exact(case, sizes, acts):
    """Every path of the Thumb-1 kernel: odd and even group counts, a last group of one
    real input, none, and multipliers with low 16 bits (blocks that take the C
    requantisation) beside the exporter's."""
    spec, qp, obs = _shaped_case(sizes, acts, seed=len(sizes) * 100 + sizes[0])
    if len(qp.mults):
        assert all(((m >= 1 << 27) <= (m & 0xFFFF == 0)).all() for m in qp.mults)   # the exporter's rounding
        qp.mults[0][1::3] += 12345                 # some blocks with a multiplier not a multiple of 2^16
        qp.validate()
    r = pb.run_policy("armv6m", spec, qp, obs)
    np.testing.assert_array_equal(r["int8"].view(np.uint32), qp.forward(obs).view(np.uint32))
    assert np.abs(r["int8"] - spec.forward(obs)).max() < 0.2

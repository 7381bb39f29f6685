"""int8 policies on the host: quantisation, the version-3 file (dtype int8) and its
validation, the export command's accuracy check, the C header."""

import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from neuromotor.cli import main
from neuromotor.errors import UserError
from neuromotor.policy import (PolicyFormatError, PolicyValueError, QuantizedPolicy, TruncatedPolicyError, decode,
                               encode, quantize, read_policy, render_c_header)
from neuromotor.policy.quantize import (AMAX, MAX_IN, QMAX, deq_q16, int_dense, net_bytes, pack_qnet, quantize_input,
                                        requantize, tanh_q15, tanh_table)
from neuromotor.policy.spec import InvalidPolicyError, PolicySpec

sys.path.insert(0, str(Path(__file__).parent / "device"))
from mp_helpers import random_spec  # noqa: E402

INCLUDE = Path(__file__).resolve().parents[1] / "device" / "native" / "include"
FAST = ["--set", "batch_size=16", "--set", "eval_episodes=1", "--set", "eval_every=50", "--quiet"]


def limited(sizes, seed=0, acts=None) -> PolicySpec:
    spec = random_spec(list(sizes), seed=seed, activations=acts)
    a = sizes[-1]
    spec.action_low, spec.action_high = -np.full(a, 3, np.float32), np.full(a, 3, np.float32)
    spec.validate()
    return spec


def qpolicy(sizes=(13, 64, 64, 4), seed=0, acts=None):
    spec = limited(sizes, seed, acts)
    obs = np.random.default_rng(seed + 1).normal(0, 1.5, (400, sizes[0])).astype(np.float32)
    return spec, quantize(spec, obs[:200]), obs[200:]


def test_int8_file_round_trips_as_version_3_and_float_stays_version_2():
    spec, qp, obs = qpolicy((5, 7, 3), acts=["identity", "identity"])
    data = encode(qp)
    assert struct.unpack_from("<H", data, 4)[0] == 3
    assert data[16 + 2 * 3 + 2] == 1                       # dtype byte after the activation codes
    assert len(data) == 28 + net_bytes(qp.sizes) + 8 * 3 + 4   # header 16 + 2*3 + 2 + 1, padded
    back = decode(data)
    assert isinstance(back, QuantizedPolicy) and back.dtype == "int8"
    assert pack_qnet(back) == pack_qnet(qp) and encode(back) == data
    assert np.array_equal(back.forward(obs), qp.forward(obs))
    assert struct.unpack_from("<H", encode(spec), 4)[0] == 2


def test_int8_forward_is_close_to_float_and_weights_are_4x_smaller():
    spec, qp, obs = qpolicy()
    err = np.abs(qp.forward(obs) - spec.forward(obs))
    assert err.mean() < 0.02 * 6 and err.max() < 0.2 * 6    # 6 = action range
    assert len(encode(qp)) < 0.32 * len(encode(spec))   # int8 weights; int32 bias and multiplier per row


def test_requantize_rounds_half_up_and_saturates():
    acc = np.array([0, 3, -3, 1 << 30, -(1 << 30), 12, -12], np.int64)
    mult = np.full(7, 1 << 30, np.int64)                      # x 1/4 (rounded), then >> 1 (rounded half up)
    # 3: 3/4 -> 1, 1/2 -> 1; -3: -3/4 -> -1, -1/2 -> 0; 12: 3, 3/2 -> 2; -12: -3, -3/2 -> -1
    assert requantize(acc, mult, 1, relu=False).tolist() == [0, 1, 0, 32767, -32768, 2, -1]   # int16 activations
    assert requantize(acc, mult, 1, relu=True).tolist() == [0, 1, 0, 32767, 0, 2, 0]


TANH_PROGRAM = r"""
#include <stdio.h>
#include "nm_int8.h"
int main(int argc, char **argv) {
    FILE *f = fopen(argv[1], "rb");
    int32_t acc;
    float deq;
    while (fread(&acc, 4, 1, f) == 1 && fread(&deq, 4, 1, f) == 1) {
        union { float f; uint32_t u; } y = { nm_q8_q15_f32(nm_q8_tanh_q15(nm_q8_deq_q16(acc, deq))) };
        printf("%u\n", (unsigned)y.u);
    }
    printf("table");
    for (int i = 0; i < 385; i++) {
        printf(" %d", nm_q8_tanh_table[i]);
    }
    printf("\n");
    return 0;
}
"""


@pytest.mark.parametrize("mulhr16", [0, 1])
def test_integer_tanh_output_is_bit_exact_in_c_and_numpy_and_close_to_tanh(tmp_path, mulhr16):
    """The tanh output stage (acc * deq in Q16 from deq's bits, the interpolated table, the
    float32 built from bits) for accumulators and scales of every magnitude, the shift
    edges (deq exponents 77..141 take every right and left shift) and saturation."""
    if not shutil.which("gcc"):
        pytest.fail("gcc is needed (make system installs it)")
    rng = np.random.default_rng(5)
    edges = np.array([0, 1, -1, 1 << 20, -(1 << 20), 2**31 - 1, -2**31], np.int64)
    deq_edges = np.concatenate([np.ldexp(np.float32(1), np.arange(-50, 15)).astype(np.float32),
                                np.array([1e-45, 1e-38, 3e38, 1.17549435e-38], np.float32)])
    acc = np.concatenate([np.repeat(edges, len(deq_edges)), rng.integers(-2**31, 2**31, 20000)])
    deq = np.concatenate([np.tile(deq_edges, len(edges)),
                          np.exp(rng.uniform(np.log(1e-12), np.log(1e-2), 20000)).astype(np.float32)])
    acc[len(edges) * len(deq_edges):] >>= rng.integers(0, 31, 20000)   # accumulators of every magnitude
    pairs = np.empty(len(acc), [("acc", "<i4"), ("deq", "<f4")])
    pairs["acc"], pairs["deq"] = acc, deq
    (tmp_path / "in.bin").write_bytes(pairs.tobytes())
    (tmp_path / "main.c").write_text(TANH_PROGRAM)
    subprocess.run(["gcc", "-O2", "-std=c99", "-Wall", "-Werror", "-ffp-contract=off", "-fsanitize=undefined",
                    "-fno-sanitize-recover", f"-DNM_Q8_MULHR16={mulhr16}", f"-I{INCLUDE}", "-o", str(tmp_path / "t"),
                    str(tmp_path / "main.c")], check=True, capture_output=True)
    out = subprocess.run([str(tmp_path / "t"), str(tmp_path / "in.bin")], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert [int(v) for v in out[-1].split()[1:]] == tanh_table().tolist()
    got = np.array(out[:-1], np.uint64).astype(np.uint32).view(np.float32)
    ref = (tanh_q15(deq_q16(acc, deq)).astype(np.float32) / np.float32(32768))
    np.testing.assert_array_equal(got.view(np.uint32), ref.view(np.uint32))
    exact = np.tanh(acc.astype(np.float64) * deq.astype(np.float64))
    assert np.abs(got - exact).max() < 6e-5
    assert (got == 1).sum() > 100 and (got == -1).sum() > 100 and (np.abs(got) < 0.5).sum() > 1000


def test_int8_layers_wider_than_512_inputs_are_refused():
    spec = limited((3, 513, 2), acts=["relu", "tanh"])
    with pytest.raises(InvalidPolicyError, match="at most 512 inputs, this one 513"):
        quantize(spec, np.ones((4, 3), np.float32))


def test_quantize_refuses_hidden_tanh_and_a_spec_without_limits():
    spec = limited((3, 4, 2), acts=["tanh", "tanh"])
    with pytest.raises(InvalidPolicyError, match="layer 0 is tanh"):
        quantize(spec, np.zeros((4, 3), np.float32))
    with pytest.raises(InvalidPolicyError, match="action limits"):
        quantize(random_spec([3, 4, 2]), np.zeros((4, 3), np.float32))


def _qnet_offsets(qp):
    """Byte offsets (in the file) of some qnet fields of a 3-layer policy."""
    s0, (n_in, n1, n2, n3) = qp.obs_dim, qp.sizes
    pad = lambda n: -(-n // 4) * 4  # noqa: E731
    hlen = (16 + 2 * 4 + 3 + 1 + 3) & ~3
    l0 = hlen + 8 * s0
    l0_bias = l0 + pad(n1) * pad(n_in)
    l1 = l0_bias + 8 * pad(n1) + 4
    l2 = l1 + pad(n2) * pad(n1) + 8 * pad(n2) + 4
    l2_deq = l2 + pad(n3) * pad(n2) + 4 * pad(n3)
    return dict(mean=hlen, in_mul=hlen + 4 * s0, bias0=l0_bias, mult0=l0_bias + 4 * pad(n1),
                shift0=l0_bias + 8 * pad(n1), deq=l2_deq)


def _patch(data: bytes, offset: int, fmt: str, value) -> bytes:
    body = bytearray(data[:-4])
    struct.pack_into(fmt, body, offset, value)
    return bytes(body) + struct.pack("<I", zlib.crc32(body))


BAD = [
    ("in_mul", "<f", 0.0, r"in_mul .* must be positive, got 0 at index 0"),
    ("in_mul", "<f", float("nan"), r"non-finite values: in_mul\[0\]"),
    ("mean", "<f", float("inf"), "non-finite values: obs_mean"),
    ("deq", "<f", 0.0, r"deq\[0\] must be positive"),
    ("deq", "<f", float("nan"), "non-finite values: deq"),
    ("mult0", "<i", 0, r"layer 0: requantisation multiplier\[0\] outside"),
    ("mult0", "<i", -5, r"layer 0: requantisation multiplier\[0\] outside"),
    ("shift0", "<i", 32, "layer 0: requantisation shift 32 outside 0..31"),
    ("shift0", "<i", -1, "layer 0: requantisation shift -1 outside"),
    ("bias0", "<i", (1 << 24) + 1, r"layer 0: bias\[0\] outside -2\^24\.\.2\^24"),
]


@pytest.mark.parametrize("field,fmt,value,text", BAD)
def test_bad_int8_values_are_refused_in_one_line(tmp_path, field, fmt, value, text):
    _, qp, _ = qpolicy((6, 5, 7, 2))
    data = _patch(encode(qp), _qnet_offsets(qp)[field], fmt, value)
    with pytest.raises(PolicyValueError, match=text) as info:
        decode(data)
    assert "\n" not in str(info.value) and isinstance(info.value, UserError)
    (tmp_path / "bad.nmp").write_bytes(data)
    code, _, err = _cli("export", str(tmp_path / "bad.nmp"), "-o", str(tmp_path / "out.nmp"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and not (tmp_path / "out.nmp").exists()


def test_wrong_dtype_code_truncation_and_crc_are_refused():
    _, qp, _ = qpolicy((6, 5, 7, 2))
    data = encode(qp)
    with pytest.raises(PolicyFormatError, match="unknown dtype code 2"):
        decode(_patch(data, 16 + 2 * 4 + 3, "<B", 2))
    with pytest.raises(TruncatedPolicyError):
        decode(data[:-9])
    with pytest.raises(PolicyFormatError, match="checksum"):
        decode(data[:40] + bytes([data[40] ^ 1]) + data[41:])
    with pytest.raises(PolicyFormatError, match=r"payload words .*int8\), expected"):
        decode(_retag(data))


def _retag(data: bytes) -> bytes:
    """An int8 file whose payload length field claims one word more."""
    n = struct.unpack_from("<I", data, 12)[0]
    body = bytearray(data[:-4]) + bytes(4)
    struct.pack_into("<I", body, 12, n + 1)
    return bytes(body) + struct.pack("<I", zlib.crc32(body))


def test_c_header_int8_compiles_and_reproduces_the_host_action(tmp_path):
    if not shutil.which("gcc"):
        pytest.fail("gcc is needed (make system installs it)")
    _, qp, obs = qpolicy((13, 64, 64, 4))
    (tmp_path / "policy.h").write_text(render_c_header(qp, example_obs=obs[0]))
    (tmp_path / "main.c").write_text("""
#include <stdio.h>
#include <string.h>
#include "nm_int8.h"
#include "policy.h"
int main(void) {
    float a[NM_POLICY_ACT_DIM], bad[NM_POLICY_OBS_DIM];
    int st = nm_policy_forward(a, nm_policy_example_obs);
    int same = memcmp(a, nm_policy_example_action, sizeof a) == 0;
    memcpy(bad, nm_policy_example_obs, sizeof bad);
    bad[2] = 0.0f / 0.0f;
    int st_bad = nm_policy_forward(a, bad);
    printf("%d %d %d %g\\n", st, same, st_bad, a[0]);
    return 0;
}
""")
    subprocess.run(["gcc", "-O2", "-std=c99", "-ffp-contract=off", f"-I{INCLUDE}", "-o", str(tmp_path / "t"),
                    str(tmp_path / "main.c")], check=True, capture_output=True)
    out = subprocess.run([str(tmp_path / "t")], capture_output=True, text=True, check=True).stdout.split()
    assert out[:3] == ["0", "1", "-1"] and float(out[3]) == 0.0   # NaN obs: the limits' midpoint


def _cli(*args):
    import contextlib
    import io
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as e:
            code = e.code
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def pendulum_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("q") / "run"
    assert main(["train", "pendulum", "--steps", "50", "--run-dir", str(run_dir), *FAST]) == 0
    return run_dir


def test_export_shows_the_fine_tune_as_a_progress_bar(pendulum_run, tmp_path, capsys):
    import neuromotor
    from neuromotor.policy import QuantizationError
    for progress in (True, False):
        with pytest.raises(QuantizationError):  # a contract no policy keeps: all 5 steps run
            neuromotor.export(pendulum_run, tmp_path / "p8.nmp", quantize="int8", max_error=1e-9,
                              finetune_steps=5, calibration=300, heldout=300, progress=progress)
        err = capsys.readouterr().err
        assert ("int8 fine-tune" in err and "5/5" in err) == progress
    assert not (tmp_path / "p8.nmp").exists()


def test_export_quantize_reports_accuracy_and_refuses_past_max_error(pendulum_run, tmp_path):
    import json
    out = tmp_path / "p8.nmp"
    code, stdout, _ = _cli("export", str(pendulum_run), "-o", str(out), "--quantize", "int8",
                           "--calibration", "300", "--heldout", "300", "--json")
    assert code == 0
    rep = json.loads(stdout.strip().splitlines()[-1])
    assert rep["dtype"] == "int8" and rep["heldout_obs"] == 300
    assert rep["calibration_obs"] == 4 * 300   # 8 episodes, 64 episode starts, both perturbed
    assert 0 < rep["max_error_frac"] <= 0.02 and rep["mean_error"] <= rep["max_error"]
    assert "max action error" in stdout
    qp = read_policy(out)
    assert isinstance(qp, QuantizedPolicy)
    assert rep["finetune_steps"] >= rep["finetune_kept_step"] >= 0 and "fine-tuned" in stdout
    strict = tmp_path / "strict.nmp"
    code, _, err = _cli("export", str(pendulum_run), "-o", str(strict), "--quantize", "int8", "--calibration", "300",
                        "--heldout", "300", "--max-error", "1e-7", "--finetune-steps", "5")
    assert code == 2 and "int8 policy refused: max action error" in err and "held-out" in err
    assert "after error-compensated rounding and 5 fine-tuning steps (plain rounding: " in err
    assert len(err.strip().splitlines()) == 1 and not strict.exists()
    code, stdout, _ = _cli("export", str(pendulum_run), "-o", str(tmp_path / "p8.h"), "--quantize", "int8",
                           "--calibration", "300", "--heldout", "300")
    assert code == 0 and "nm_q8_mlp" in (tmp_path / "p8.h").read_text()
    code, _, err = _cli("export", str(pendulum_run), "-o", str(tmp_path / "x.nmp"), "--max-error", "0.1")
    assert code == 2 and "--quantize int8 only" in err
    code, _, err = _cli("export", str(pendulum_run), "-o", str(tmp_path / "x.nmp"), "--finetune-steps", "3")
    assert code == 2 and "--finetune-steps applies to --quantize int8 only" in err
    code, _, err = _cli("export", str(out), "-o", str(tmp_path / "proj"), "--format", "platformio")
    assert code == 2 and "float32 policies; this one is int8" in err
    code, _, _ = _cli("export", str(out), "-o", str(tmp_path / "copy.nmp"))      # an int8 file converts as is
    assert code == 0 and (tmp_path / "copy.nmp").read_bytes() == out.read_bytes()


def test_input_rounding_is_exact_half_away_from_zero_in_c_and_numpy(tmp_path):
    """float32 t + 0.5f would round 0.49999997 up to 1 first; the kernels round t's bits."""
    if not shutil.which("gcc"):
        pytest.fail("gcc is needed (make system installs it)")
    f32 = np.float32
    edges = [0.0, -0.0, 1e-45, np.nextafter(f32(0.5), f32(0)), 0.5, 1.5, 2.5, -0.5, -2.5,
             np.nextafter(f32(-0.5), f32(0)), 8388607.5, 32766.5, np.nextafter(f32(32767.5), f32(0)),
             32767.5, -32767.5, 65536.0, 3e38, np.inf, -np.inf]
    t = np.concatenate([np.array(edges, f32), np.random.default_rng(3).uniform(-40000, 40000, 2000).astype(f32)])
    (tmp_path / "t.bin").write_bytes(t.tobytes())
    (tmp_path / "main.c").write_text("""
#include <stdio.h>
#include "nm_int8.h"
int main(int argc, char **argv) {
    FILE *f = fopen(argv[1], "rb");
    float t;
    while (fread(&t, 4, 1, f) == 1) {
        printf("%d\\n", (int)nm_q8_round_f32(t));
    }
    return 0;
}
""")
    subprocess.run(["gcc", "-O2", "-std=c99", "-ffp-contract=off", f"-I{INCLUDE}", "-o", str(tmp_path / "t"),
                    str(tmp_path / "main.c")], check=True, capture_output=True)
    got = np.array(subprocess.run([str(tmp_path / "t"), str(tmp_path / "t.bin")], capture_output=True, text=True,
                                  check=True).stdout.split(), np.int64)
    ref = quantize_input(t, f32(0), f32(1))
    np.testing.assert_array_equal(got, ref)
    exact = np.clip(np.sign(t.astype(np.float64)) * np.floor(np.abs(t.astype(np.float64)) + 0.5), -AMAX, AMAX)
    np.testing.assert_array_equal(ref, exact)
    assert list(ref[:10]) == [0, 0, 0, 0, 1, 2, 3, -1, -3, 0]


def test_integer_layers_in_float64_are_exact_at_the_extremes():
    """int_dense adds in float64 (BLAS): exact while every sum stays below 2^53, which the
    widest layer's largest products and bias keep far from."""
    rng = np.random.default_rng(11)
    x = rng.choice([-AMAX - 1, AMAX, -AMAX, 0, 1], (50, MAX_IN)).astype(np.int64)
    x[0], x[1] = -AMAX - 1, AMAX
    w = rng.choice([-QMAX, QMAX, -1, 0], (9, MAX_IN)).astype(np.int8)
    w[0], w[1] = -QMAX, QMAX
    b = rng.integers(-(1 << 24), (1 << 24) + 1, 9)
    exact = x @ w.T.astype(np.int64) + b
    np.testing.assert_array_equal(int_dense(x, w, b), exact)
    assert np.abs(exact).max() > 127 * 32767 * MAX_IN - (1 << 25)


def _tuned_run(tmp_path_factory, name, args):
    run_dir = tmp_path_factory.mktemp(name) / "run"
    assert main(["train", *args, "--run-dir", str(run_dir), "--quiet"]) == 0
    return run_dir


@pytest.fixture(scope="module")
def td3_seed2_run(tmp_path_factory):
    """The README's example: a TD3 pendulum run whose plain int8 rounding misses the contract."""
    return _tuned_run(tmp_path_factory, "td3s2", ["pendulum", "--algo", "td3", "--steps", "10000", "--seed", "2"])


def test_td3_seed2_exports_within_the_default_contract_deterministically(td3_seed2_run, tmp_path):
    import json
    reports, files = [], []
    for i in range(2):
        out = tmp_path / f"p{i}.nmp"
        code, stdout, err = _cli("export", str(td3_seed2_run), "-o", str(out), "--quantize", "int8", "--json")
        assert code == 0, err
        reports.append({k: v for k, v in json.loads(stdout.strip().splitlines()[-1]).items() if k != "output"})
        files.append(out.read_bytes())
    rep = reports[0]
    assert rep["max_error_frac"] <= 0.02 < rep["max_error_frac_before"]   # plain rounding refused it
    assert rep["mean_error_frac"] < rep["mean_error_frac_before"]
    assert rep["calibration_obs"] == 8000 and rep["heldout_obs"] == 2000 and rep["finetune_steps"] >= 1
    assert "fine-tuned" in stdout and "max action error" in stdout
    assert files[0] == files[1] and reports[0] == reports[1]               # the fine-tune is deterministic


def test_fine_tuned_policy_runs_bit_exactly_as_stored_in_numpy_and_c(td3_seed2_run, tmp_path):
    """The tuned integers are an ordinary int8 file: the NumPy reference of the file read back
    gives the tuned policy's actions bit for bit, and so does the C kernel (nm_q8_mlp) from
    its header."""
    from neuromotor.policy import quantize_tuned, rollout_observations, calibration_observations
    from neuromotor.training.run_policy import load_spec
    if not shutil.which("gcc"):
        pytest.fail("gcc is needed (make system installs it)")
    spec = load_spec(str(td3_seed2_run))
    qp, info = quantize_tuned(spec, calibration_observations(spec, 300, 0), steps=10)
    assert info["steps"] == 10 and info["max_error_frac"] <= info["max_error_frac_start"]
    obs = rollout_observations(spec, 200, 7)
    back = decode(encode(qp))
    assert np.array_equal(back.forward(obs), qp.forward(obs))
    assert all(np.array_equal(a, b) for a, b in zip(back.hidden(obs), qp.hidden(obs)))
    (tmp_path / "policy.h").write_text(render_c_header(back, example_obs=obs[17]))
    (tmp_path / "main.c").write_text("""
#include <string.h>
#include "nm_int8.h"
#include "policy.h"
int main(void) {
    float a[NM_POLICY_ACT_DIM];
    return nm_policy_forward(a, nm_policy_example_obs) != 0 || memcmp(a, nm_policy_example_action, sizeof a) != 0;
}
""")
    subprocess.run(["gcc", "-O2", "-std=c99", "-ffp-contract=off", f"-I{INCLUDE}", "-o", str(tmp_path / "t"),
                    str(tmp_path / "main.c")], check=True, capture_output=True)
    assert subprocess.run([str(tmp_path / "t")]).returncode == 0
    assert "nm_policy_example_action" in (tmp_path / "policy.h").read_text()


def test_a_policy_int8_cannot_follow_is_refused_in_one_line(tmp_path):
    """A float policy whose output row mixes one weight of 40 with weights of 0.15: at the
    row's int8 step (40/127) the small ones are 0 or 0.31, and no rounding or fine-tune of
    them comes within 2% of its actions (about 10% off after both)."""
    from neuromotor.policy import write_policy
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((8, 3)).astype(np.float32)
    w0[0] *= 0.02                     # unit 0: nearly constant, its large weight sets the step
    spec = PolicySpec([w0, np.float32([[40] + [0.15, -0.15] * 3 + [0.15]])], [np.full(8, 0.5), np.float32([-20])],
                      ["relu", "tanh"], obs_mean=np.zeros(3), obs_std=np.ones(3), action_scale=np.float32([2]),
                      action_offset=np.zeros(1), action_low=np.float32([-2]), action_high=np.float32([2]))
    write_policy(spec, tmp_path / "mixed.nmp")
    out = tmp_path / "mixed8.nmp"
    code, _, err = _cli("export", str(tmp_path / "mixed.nmp"), "-o", str(out), "--quantize", "int8",
                        "--calibration", "300", "--heldout", "300", "--finetune-steps", "20")
    assert code == 2 and len(err.strip().splitlines()) == 1 and not out.exists()
    assert "int8 policy refused: max action error" in err and "exceeds --max-error 2.00%" in err
    assert "20 fine-tuning steps (plain rounding: " in err


HOVER = Path(__file__).parent / "data" / "quadrotor_hover.nmp"  # see tests/data/README.md


def test_an_int8_quadrotor_policy_is_judged_on_its_flights():
    from neuromotor.policy import QuantizationError, quantize_checked

    spec = read_policy(HOVER)
    _, report = quantize_checked(spec, calibration=500, heldout=500, env_name="quadrotor")
    assert report["contract"] == "success" and report["success_episodes"] == 100
    assert report["float_success"] >= 0.9 and report["int8_success"] >= report["float_success"] - 0.02
    # activation ranges from a handful of observations saturate in flight: the drones stop hovering
    with pytest.raises(QuantizationError, match=r"succeeds in \d+% of 100 held-out episodes, the float policy in"):
        quantize_checked(spec, calibration=1, heldout=10, finetune_steps=0, env_name="quadrotor")
    # a --max-error asks for the action contract instead
    _, report = quantize_checked(spec, calibration=500, heldout=500, max_error=1.0, env_name="quadrotor")
    assert report["contract"] == "action" and "int8_success" not in report

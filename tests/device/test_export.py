"""Host side of the policy file and the C header: round trips, the distinct
errors, atomic writes, the CLI, action limits (version 2), non-finite values
refused, and the C header compiled with gcc against nm_kernels.h and checked
against its own example pair and the host's clamp."""

import dataclasses
import shutil
import struct
import subprocess

import numpy as np
import pytest
from mp_helpers import clamped_spec, patched, random_spec

from neuromotor.cli import main
from neuromotor.policy import (BadMagicError, ChecksumError, PolicyFormatError, PolicyValueError,
                               TruncatedPolicyError, UnsupportedVersionError, decode, encode, pack_layer,
                               read_policy, render_c_header, unpack_layer, write_policy)
from neuromotor.errors import UserError
from neuromotor.policy.policy_file import header_size, net_size
from neuromotor.paths import DEVICE_DIR
from neuromotor.policy.spec import InvalidPolicyError, clamp

KERNEL_INCLUDES = [f"-I{DEVICE_DIR / 'native' / 'include'}"]


def test_round_trip_is_exact(tmp_path):
    spec = random_spec([27, 256, 256, 8], seed=2)
    path = write_policy(spec, tmp_path / "p.nmp")
    back = read_policy(path)
    assert back.sizes == spec.sizes and back.activations == spec.activations
    for a, b in zip(spec.weights + spec.biases, back.weights + back.biases):
        assert np.array_equal(a, b)
    for name in ("obs_mean", "obs_std", "action_scale", "action_offset"):
        assert np.array_equal(getattr(spec, name), getattr(back, name))
    assert encode(back) == path.read_bytes()
    assert not [p for p in tmp_path.iterdir() if p.name != "p.nmp"], "temporary file left behind"


def test_block_layout():
    w = np.arange(15, dtype=np.float32).reshape(5, 3)   # 5 outputs, 3 inputs
    b = np.array([10, 20, 30, 40, 50], np.float32)
    flat = pack_layer(w, b)
    assert flat.size == 2 * 4 * (3 + 1)
    # block 0: biases of rows 0-3, then input 0 of rows 0-3, ...
    assert list(flat[:8]) == [10, 20, 30, 40, 0, 3, 6, 9]
    # block 1: row 4 and three zero rows
    assert list(flat[16:24]) == [50, 0, 0, 0, 12, 0, 0, 0]
    w2, b2 = unpack_layer(flat, 3, 5)
    assert np.array_equal(w, w2) and np.array_equal(b, b2)


@pytest.mark.parametrize("mutate,exc,text", [
    (lambda d: d[:-1], TruncatedPolicyError, "truncated policy file"),
    (lambda d: d[:10], TruncatedPolicyError, "header needs 16"),
    (lambda d: b"", TruncatedPolicyError, "not even a magic number"),
    (lambda d: b"GIF8" + d[4:], BadMagicError, "not a neuromotor policy file"),
    (lambda d: d[:4] + (5).to_bytes(2, "little") + d[6:], UnsupportedVersionError, "format version 5"),
    (lambda d: d[:-8] + bytes([d[-8] ^ 0x40]) + d[-7:], ChecksumError, "checksum mismatch"),
    (lambda d: d + b"\0", PolicyFormatError, "trailing data"),
])
def test_host_errors_are_distinct(mutate, exc, text):
    data = mutate(encode(random_spec([3, 8, 1])))
    with pytest.raises(exc, match=text) as info:
        decode(data)
    assert isinstance(info.value, UserError)  # the CLI prints it cleanly


def test_each_error_class_is_its_own():
    classes = [TruncatedPolicyError, BadMagicError, UnsupportedVersionError, ChecksumError]
    for a in classes:
        for b in classes:
            assert (a is b) == issubclass(a, b)


def test_cli_export_converts_and_reports_errors(tmp_path, capsys):
    spec = random_spec([13, 64, 64, 4], seed=3)
    src = write_policy(spec, tmp_path / "src.nmp")
    assert main(["export", str(src), "-o", str(tmp_path / "copy.nmp")]) == 0
    assert (tmp_path / "copy.nmp").read_bytes() == src.read_bytes()
    assert main(["export", str(src), "--format", "c-header", "-o", str(tmp_path / "policy.h")]) == 0
    assert "nm_policy_net" in (tmp_path / "policy.h").read_text()
    (tmp_path / "bad.nmp").write_bytes(b"NMPL")
    assert main(["export", str(tmp_path / "bad.nmp"), "-o", str(tmp_path / "x.nmp")]) == 2
    assert "truncated policy file" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "missing"), "-o", str(tmp_path / "x.nmp")]) == 2
    assert not (tmp_path / "x.nmp").exists()


def test_cli_export_from_run_directory(tmp_path):
    from neuromotor.training import run_policy

    main(["train", "pendulum", "--algo", "td3", "--steps", "300", "--seed", "0",
          "--run-dir", str(tmp_path / "run"), "--force"])
    assert main(["export", str(tmp_path / "run"), "-o", str(tmp_path / "p.nmp")]) == 0
    spec = run_policy.load_policy_spec(tmp_path / "run")
    back = read_policy(tmp_path / "p.nmp")
    obs = np.random.default_rng(0).standard_normal((20, spec.obs_dim)).astype(np.float32)
    assert np.array_equal(spec.forward(obs), back.forward(obs))


C_MAIN = r"""
#include <math.h>
#include <stdio.h>
#include "nm_kernels.h"
#include "policy.h"
int main(void) {
    float action[NM_POLICY_ACT_DIM];
    nm_policy_forward(action, nm_policy_example_obs);
    double worst = 0;
    for (int i = 0; i < NM_POLICY_ACT_DIM; i++) {
        double ref = nm_policy_example_action[i];
        double err = fabs(action[i] - ref) / (fabs(ref) > 1 ? fabs(ref) : 1);
        if (err > worst) worst = err;
        printf("%.9g %.9g\n", action[i], ref);
    }
    printf("worst %g\n", worst);
    return worst <= 1e-5 ? 0 : 1;
}
"""


@pytest.mark.parametrize("sizes,acts", [([13, 64, 64, 4], None), ([5, 7, 3], ["tanh", "identity"])])
@pytest.mark.parametrize("flags", [["-O2"], ["-O2", "-DNM_NO_AVX2", "-DNM_NO_FDIV"]])
def test_c_header_compiles_and_reproduces_example(tmp_path, sizes, acts, flags):
    if not shutil.which("gcc"):
        pytest.skip("gcc not installed")
    spec = random_spec(sizes, seed=4, activations=acts)
    (tmp_path / "policy.h").write_text(render_c_header(spec))
    (tmp_path / "main.c").write_text(C_MAIN)
    exe = tmp_path / "check"
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Werror", "-ffp-contract=off", *flags, *KERNEL_INCLUDES,
                    f"-I{tmp_path}", str(tmp_path / "main.c"), "-o", str(exe), "-lm"], check=True)
    proc = subprocess.run([str(exe)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_c_header_holds_the_same_network():
    spec = random_spec([3, 64, 64, 1], seed=5)
    text = render_c_header(spec)
    body = text.split("nm_policy_net[NM_POLICY_NET_FLOATS] = {")[1].split("};")[0]
    values = np.array([float(v.strip().rstrip("f")) for v in body.replace("\n", " ").split(",") if v.strip()], np.float32)
    net = np.frombuffer(encode(spec)[header_size(3):-4], "<f4")
    assert np.array_equal(values, net)
    assert "static const uint16_t nm_policy_layout[8] = { 3, 3, 64, 64, 1, 1, 1, 2 };" in text


def test_limits_round_trip_as_version_2_and_version_1_has_no_clamp(tmp_path):
    spec = clamped_spec()
    data = encode(spec)
    assert struct.unpack_from("<H", data, 4)[0] == 2
    n = struct.unpack_from("<I", data, 12)[0]
    assert n == net_size(spec.sizes) + 2 * spec.act_dim
    back = decode(data)
    assert np.array_equal(back.action_low, spec.action_low) and np.array_equal(back.action_high, spec.action_high)
    assert encode(back) == data
    plain = random_spec([3, 8, 2])
    v1 = encode(plain)
    assert struct.unpack_from("<H", v1, 4)[0] == 1
    assert not decode(v1).has_limits and encode(decode(v1)) == v1


def test_forward_clamps_to_limits_and_nan_becomes_midpoint():
    spec = clamped_spec()
    obs = np.random.default_rng(0).normal(0, 3, (500, spec.obs_dim)).astype(np.float32)
    raw = dataclasses.replace(spec, action_low=None, action_high=None).forward(obs)
    got = spec(obs)
    assert (raw < spec.action_low).any() and (raw > spec.action_high).any()  # the clamp has work to do
    assert np.array_equal(got, np.clip(raw, spec.action_low, spec.action_high))
    lo, hi = np.float32([-1, -0.25, 3e38]), np.float32([1, 2, 3.4e38])
    y = clamp(np.float32([np.nan, np.nan, np.nan]), lo, hi)
    assert y.tolist() == np.float32([0, 0.875, 0.5 * 3e38 + 0.5 * 3.4e38]).tolist()
    assert np.isfinite(y).all()  # lo/2 + hi/2: no overflow where lo + hi would
    assert clamp(np.float32([np.inf, -np.inf, 7]), lo, hi).tolist() == [1, -0.25, lo[2]]
    with pytest.raises(ValueError, match="non-finite"):
        spec(np.full(spec.obs_dim, np.nan, np.float32))


@pytest.mark.parametrize("where,value,text", [
    ("weight", float("nan"), "layer 0 weights"),
    ("offset", float("inf"), "action_offset"),
    ("mean", float("-inf"), "obs_mean"),
    ("std", 0.0, "obs_std must be positive"),
    ("std", -1.0, "obs_std must be positive"),
    ("low", float("nan"), "action_low"),
    ("high", -5.0, "low -1 > high -5"),
])
def test_reader_refuses_non_finite_and_non_positive_values(tmp_path, where, value, text):
    spec = clamped_spec()
    s0, sl, n = spec.obs_dim, spec.act_dim, net_size(spec.sizes)
    index = {"weight": 2 * s0 + 4, "offset": n - sl, "mean": 0, "std": s0, "low": n, "high": n + sl}[where]
    data = patched(encode(spec), index, value)
    with pytest.raises(PolicyValueError, match=text) as info:
        decode(data)
    assert isinstance(info.value, PolicyFormatError) and isinstance(info.value, UserError)
    (tmp_path / "bad.nmp").write_bytes(data)
    with pytest.raises(PolicyValueError):
        read_policy(tmp_path / "bad.nmp")


def test_writer_refuses_non_finite_spec_and_writes_nothing(tmp_path):
    spec = clamped_spec()
    with pytest.raises(InvalidPolicyError, match="non-finite"):
        dataclasses.replace(spec, action_offset=np.float32([0, np.inf, 0]))
    spec.weights[1][0, 0] = np.nan  # a spec changed after construction is checked again
    for write in (write_policy, lambda s, p: p.write_text(render_c_header(s))):
        with pytest.raises(InvalidPolicyError, match="layer 1 weights .1 NaN"):
            write(spec, tmp_path / "out")
    assert not list(tmp_path.iterdir())


def _train_pendulum(run, algo="td3"):
    args = ["train", "pendulum", "--algo", algo, "--seed", "0", "--run-dir", str(run), "--force", "--quiet"]
    args += ["--steps", "300"] if algo == "td3" else ["--steps", "400", "--set", "num_envs=2", "--set",
                                                      "num_steps=100", "--set", "minibatch_size=100"]
    assert main(args) == 0


def test_export_of_nan_checkpoint_is_refused_and_writes_nothing(tmp_path, capsys):
    run = tmp_path / "run"
    _train_pendulum(run)
    ckpt = run / "checkpoint.npz"
    with np.load(ckpt) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["actor"] = arrays["actor"].copy()
    arrays["actor"].reshape(-1)[3] = np.nan
    np.savez(ckpt, **arrays)
    (tmp_path / "old.nmp").write_bytes(b"keep me")
    capsys.readouterr()
    for out in ("old.nmp", "new.nmp", "new.h"):
        assert main(["export", str(run), "-o", str(tmp_path / out)]) == 2
        err = capsys.readouterr().err
        assert "non-finite" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert (tmp_path / "old.nmp").read_bytes() == b"keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.nmp", "run"]


@pytest.mark.parametrize("algo", ["td3", "ppo"])
def test_exported_policy_carries_the_env_bounds(tmp_path, algo):
    from neuromotor.training import run_policy
    run = tmp_path / "run"
    _train_pendulum(run, algo)
    assert main(["export", str(run), "-o", str(tmp_path / "p.nmp")]) == 0
    back = read_policy(tmp_path / "p.nmp")
    assert back.action_low.tolist() == [-2.0] and back.action_high.tolist() == [2.0]
    # PPO's output layer is an unbounded identity: blown up, its actions still stay in bounds.
    loud = dataclasses.replace(back, weights=back.weights[:-1] + [1e4 * back.weights[-1]])
    obs = np.random.default_rng(1).normal(0, 1, (200, 3)).astype(np.float32)
    acts = loud(obs)
    assert np.abs(acts).max() == 2.0
    assert np.array_equal(run_policy.load_policy_spec(run)(obs), back(obs))


CLAMP_MAIN = r"""
#include <stdio.h>
#include "nm_kernels.h"
#include "policy.h"
int main(void) {
    float obs[NM_POLICY_OBS_DIM], action[NM_POLICY_ACT_DIM];
    for (;;) {
        for (int i = 0; i < NM_POLICY_OBS_DIM; i++) {
            if (scanf("%f", &obs[i]) != 1) {
                return 0;
            }
        }
        printf("%d", nm_policy_forward(action, obs));
        for (int i = 0; i < NM_POLICY_ACT_DIM; i++) {
            printf(" %.9g", action[i]);
        }
        printf("\n");
    }
}
"""


def test_c_header_clamps_like_the_host(tmp_path):
    if not shutil.which("gcc"):
        pytest.skip("gcc not installed")
    spec = clamped_spec()
    text = render_c_header(spec)
    assert "static const float nm_policy_clamp[2 * NM_POLICY_ACT_DIM] = {" in text
    (tmp_path / "policy.h").write_text(text)
    (tmp_path / "main.c").write_text(CLAMP_MAIN)
    exe = tmp_path / "clamp"
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Werror", "-ffp-contract=off", "-O2", *KERNEL_INCLUDES,
                    f"-I{tmp_path}", str(tmp_path / "main.c"), "-o", str(exe)], check=True)
    obs = np.random.default_rng(2).normal(0, 3, (300, spec.obs_dim)).astype(np.float32)
    lines = [" ".join(f"{v:.9g}" for v in o) for o in obs] + ["nan 0 0 0 0", "0 inf 0 0 0", "1e30 -1e30 1e30 0 0"]
    proc = subprocess.run([str(exe)], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    rows = [line.split() for line in proc.stdout.splitlines()]
    status = [int(r[0]) for r in rows]
    got = np.array([[float(v) for v in r[1:]] for r in rows], np.float32)
    assert status == [0] * 300 + [-1, -1, 0]
    ref = spec(obs)
    assert (ref == spec.action_low).any() and (ref == spec.action_high).any()
    np.testing.assert_allclose(got[:300], ref, rtol=1e-5, atol=1e-5)
    assert np.array_equal(got[300], [0, 0, 0.875]) and np.array_equal(got[301], [0, 0, 0.875])
    assert np.all(got[302] >= spec.action_low) and np.all(got[302] <= spec.action_high)

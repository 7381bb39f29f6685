"""Host side of the policy file and the C header: round trips, the four
distinct errors, atomic writes, the CLI, and the C header compiled with gcc
against nm_kernels.h and checked against its own example pair."""

import shutil
import subprocess

import numpy as np
import pytest
from mp_helpers import random_spec

from neuromotor.cli import main
from neuromotor.export import (BadMagicError, ChecksumError, PolicyFormatError, TruncatedPolicyError,
                               UnsupportedVersionError, decode, encode, pack_layer, read_policy,
                               render_c_header, unpack_layer, write_policy)
from neuromotor.errors import UserError
from neuromotor.export.policy_file import header_size
from neuromotor.paths import DEVICE_DIR


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
    (lambda d: d[:4] + (2).to_bytes(2, "little") + d[6:], UnsupportedVersionError, "format version 2"),
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
    runs = pytest.importorskip("neuromotor.runs", reason="neuromotor.runs (host training runs) not available yet")
    if not hasattr(runs, "load_policy_spec"):
        pytest.skip("neuromotor.runs.load_policy_spec not available yet")
    main(["train", "pendulum", "--algo", "td3", "--steps", "300", "--seed", "0",
          "--run-dir", str(tmp_path / "run"), "--force"])
    assert main(["export", str(tmp_path / "run"), "-o", str(tmp_path / "p.nmp")]) == 0
    spec = runs.load_policy_spec(tmp_path / "run")
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
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Werror", "-ffp-contract=off", *flags, f"-I{DEVICE_DIR / 'native'}",
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

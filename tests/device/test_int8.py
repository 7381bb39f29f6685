"""int8 policies on the unix MicroPython build (user C module, x64 natmod, plain Python):
bit-exact with the host's NumPy reference, every bad file refused in one line, every
kernel argument checked."""

import struct
import zlib

import numpy as np
import pytest
from mp_helpers import random_spec

from neuromotor.policy import encode, quantize

pytestmark = pytest.mark.device

CASES = [  # sizes, activations
    ([13, 64, 64, 4], ["relu", "relu", "tanh"]),
    ([5, 7, 3], ["identity", "identity"]),
    ([6, 9, 10, 2], ["relu", "identity", "relu"]),
    ([1, 1], ["tanh"]),
]


def int8_policy(sizes, acts, seed=0, n_obs=60):
    spec = random_spec(list(sizes), seed=seed, activations=acts)
    a = sizes[-1]
    spec.action_low, spec.action_high = -np.full(a, 2.5, np.float32), np.full(a, 2.5, np.float32)
    rng = np.random.default_rng(seed + 7)
    obs = rng.normal(0, 1.5, (200 + n_obs, sizes[0])).astype(np.float32)
    obs[-1] *= 1000  # far outside the calibration range: saturates
    return quantize(spec, obs[:200]), obs[200:]


def run_policy_script(run_mp, path, obs, backend, natmod_dir=None):
    pre = "k = None\n"
    if natmod_dir:
        pre = f"import sys\nsys.path.insert(0, {str(natmod_dir)!r})\nimport nm_kernels_natmod as k\n"
    script = pre + f"""
from array import array
from neuromotor_rt import Policy
p = Policy.load({str(path)!r}, backend={backend!r}, kernels=k)
rows = {obs.tolist()!r}
res = []
for r in rows:
    res.append(list(p(array('f', r))))
same = list(p(rows[0])) == res[0] and list(p(tuple(rows[0]))) == res[0]
print(p.dtype, p.backend, same, getattr(p, 'kernels', None) and p.kernels.HOME)
print(res)
"""
    lines = run_mp(script).stdout.splitlines()
    return lines[0].split(), np.array(eval(lines[1]), np.float32)


@pytest.mark.parametrize("sizes,acts", CASES)
def test_native_int8_is_bit_exact_with_numpy(run_mp, tmp_path, sizes, acts):
    qp, obs = int8_policy(sizes, acts)
    (tmp_path / "p.nmp").write_bytes(encode(qp))
    head, got = run_policy_script(run_mp, tmp_path / "p.nmp", obs, "native")
    assert head == ["int8", "native", "True", "usermod"]
    assert np.array_equal(got, qp.forward(obs))


def test_natmod_and_python_backends_agree(run_mp, natmod_x64_dir, tmp_path):
    qp, obs = int8_policy(*CASES[0], seed=3)
    (tmp_path / "p.nmp").write_bytes(encode(qp))
    ref = qp.forward(obs)
    head, got = run_policy_script(run_mp, tmp_path / "p.nmp", obs, "native", natmod_x64_dir)
    assert head == ["int8", "native", "True", "natmod"]
    assert np.array_equal(got, ref)
    head, got = run_policy_script(run_mp, tmp_path / "p.nmp", obs, "python")
    assert head[:3] == ["int8", "python", "True"]
    # integer layers exact; tanh is math's, not the kernels' table (within 6e-5 of it)
    assert np.abs(got - ref).max() <= (6e-5 + 2e-7) * 2.5


def _patch(data, offset, fmt, value):
    body = bytearray(data[:-4])
    struct.pack_into(fmt, body, offset, value)
    return bytes(body) + struct.pack("<I", zlib.crc32(body))


def test_device_refuses_every_bad_int8_file_in_one_line(run_mp, tmp_path):
    qp, _ = int8_policy([6, 5, 7, 2], ["relu", "relu", "tanh"])
    good = encode(qp)
    hlen, s0 = 28, 6
    in_mul, mult0 = hlen + 4 * s0, hlen + 8 * s0 + 8 * 8 + 4 * 8
    shift0, deq = mult0 + 4 * 8, len(good) - 4 - 8 * 2 - 8 * 2 - 4 * 4
    files = {
        "scale0": _patch(good, in_mul, "<f", 0.0),
        "nan": _patch(good, in_mul, "<f", float("nan")),
        "deq0": _patch(good, deq, "<f", 0.0),
        "dtype": _patch(good, 16 + 2 * 4 + 3, "<B", 7),
        "mult": _patch(good, mult0, "<i", -3),
        "shift": _patch(good, shift0, "<i", 40),
        "truncated": good[:-5],
        "crc": good[:-1] + bytes([good[-1] ^ 0xFF]),
        "good": good,
    }
    for name, data in files.items():
        (tmp_path / f"{name}.nmp").write_bytes(data)
    script = f"""
from neuromotor_rt import Policy
for name in {list(files)!r}:
    try:
        p = Policy.load({str(tmp_path)!r} + '/' + name + '.nmp')
        print(name, '|', 'ok', p.dtype)
    except Exception as e:
        print(name, '|', type(e).__name__, '|', e)
"""
    out = dict(line.split(" | ", 1) for line in run_mp(script).stdout.splitlines())
    assert out["good"] == "ok int8"
    assert out["scale0"].startswith("PolicyValueError | in_mul (input multiplier) must be positive")
    assert out["nan"] == "PolicyValueError | policy has non-finite values: in_mul[0]"
    assert out["deq0"].startswith("PolicyValueError | output scale deq[0] must be positive")
    assert out["dtype"] == "PolicyFileError | unknown dtype code 7 (0 float32, 1 int8)"
    assert out["mult"] == "PolicyValueError | layer 0: requantisation multiplier[0] outside 1..2^31-1"
    assert out["shift"] == "PolicyValueError | layer 0: requantisation shift 40 outside 0..31"
    assert out["truncated"].startswith("TruncatedPolicyError | truncated policy file")
    assert out["crc"].startswith("ChecksumError")


def test_kernel_checks_every_int8_argument(run_mp):
    qp, obs = int8_policy([6, 5, 7, 2], ["relu", "relu", "tanh"])
    from neuromotor.policy.quantize import pack_qnet
    q = pack_qnet(qp)
    script = f"""
from array import array
import nm_kernels as k
q = array('b', bytes.fromhex({q.hex()!r}))
lay = array('H', [3, 6, 5, 7, 2, 1, 1, 2])
out = array('f', [0, 0]); x = array('f', {obs[0].tolist()!r})
scr = array('f', [0] * k.scratch_size(lay, 1))
print(k.net_size(lay, 1), len(q), k.scratch_size(lay, 1))
def t(f):
    try:
        f(); print('ok')
    except Exception as e:
        print(type(e).__name__, e)
t(lambda: k.mlp(out, x, q, lay, scr))
t(lambda: k.mlp(out, x, q[:-1], lay, scr))
t(lambda: k.mlp(out, x, memoryview(q)[1:], lay, scr))
t(lambda: k.mlp(out, x, q, lay, array('f', [0] * (len(scr) - 1))))
t(lambda: k.mlp(out, x, q, array('H', [3, 6, 5, 7, 2, 2, 1, 2]), scr))
t(lambda: k.mlp(out, x, array('B', bytes(len(q))), lay, scr))
t(lambda: k.Forward(out, q, lay, q, x))
bad = array('b', q); bad[{6 * 4}:{6 * 4 + 4}] = array('b', bytes(4))
t(lambda: k.mlp(out, x, bad, lay, scr))
t(lambda: k.Forward(out, bad, lay, scr, array('f', [0] * 6)))
x[2] = float('nan')
t(lambda: k.mlp(out, x, q, lay, scr))
"""
    lines = run_mp(script).stdout.splitlines()
    from neuromotor.policy.quantize import net_bytes
    assert lines[0].split()[:2] == [str(net_bytes(qp.sizes))] * 2
    assert lines[1:] == [
        "ok",
        f"ValueError net (int8): expected {len(q)} bytes, got {len(q) - 1}",
        f"ValueError net (int8): expected {len(q)} bytes, got {len(q) - 1}",
        f"ValueError scratch: expected >= {lines[0].split()[2]} floats, got {int(lines[0].split()[2]) - 1}",
        "ValueError net (int8): layer 0 index 0: an int8 hidden layer must be identity or relu",
        "TypeError net: expected array('f'), got typecode 'B'",
        "TypeError scratch: expected array('f'), got typecode 'b'",
        "ValueError net (int8): index 0: in_mul (input multiplier) must be positive",
        "ValueError net (int8): index 0: in_mul (input multiplier) must be positive",
        "ValueError obs[2] is not finite",
    ]


def test_misaligned_int8_net_is_refused(run_mp):
    qp, obs = int8_policy([3, 4, 1], ["relu", "tanh"])
    from neuromotor.policy.quantize import pack_qnet
    q = pack_qnet(qp)
    script = f"""
from array import array
import nm_kernels as k
buf = array('b', bytes(1) + bytes.fromhex({q.hex()!r}) + bytes(3))
lay = array('H', [2, 3, 4, 1, 1, 2])
try:
    k.mlp(array('f', [0]), array('f', [0, 0, 0]), memoryview(buf)[1:1 + {len(q)}], lay, array('f', [0] * 64))
except ValueError as e:
    print(e)
"""
    assert run_mp(script).stdout.strip() == "net (int8): must be 4-byte aligned"


def test_ulab_backend_is_refused_for_int8(run_mp, tmp_path):
    qp, _ = int8_policy([3, 4, 1], ["relu", "tanh"])
    (tmp_path / "p.nmp").write_bytes(encode(qp))
    out = run_mp(f"""
from neuromotor_rt import Policy
try:
    Policy.load({str(tmp_path / 'p.nmp')!r}, backend='ulab')
except ImportError as e:
    print(type(e).__name__, e)
""").stdout.strip()
    assert out == "BackendUnavailableError ulab backend runs float32 policies only; this policy is int8"

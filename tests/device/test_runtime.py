"""Device runtime on the real unix MicroPython build: every backend against the
host NumPy reference (PolicySpec.forward), the two native builds against each
other, policy-file errors (non-finite values included), action limits applied
by every backend, and allocation-free native inference."""

import dataclasses
import os

import numpy as np
import pytest

from neuromotor.policy import encode, write_policy
from neuromotor.policy.policy_file import net_size
from neuromotor.policy.spec import PolicySpec

from mp_helpers import ATTEMPT, clamped_spec, native_loop_script, patched, random_spec, run_script

NETS = {
    "3-64-64-1": [3, 64, 64, 1],
    "13-64-64-4": [13, 64, 64, 4],
    "27-256-256-8": [27, 256, 256, 8],
}
N_OBS = 1000
RTOL = 1e-5

AGREE = """
import sys
from array import array
sys.path.append({natmod_dir!r})
import neuromotor_rt as rt
kernels = None
if {kind!r} == 'natmod':
    import nm_kernels_natmod as kernels
    assert kernels.HOME == 'natmod'
elif {kind!r} == 'usermod':
    import nm_kernels as kernels
    assert kernels.HOME == 'usermod'
if kernels is not None and {isa!r} != 'auto':
    kernels.isa({isa!r})
n, d, a = {n}, {d}, {a}
obs = array('f', range(n * d))
with open({obs_path!r}, 'rb') as f:
    assert f.readinto(obs) == 4 * n * d
p = rt.Policy.load({policy!r}, backend={backend!r}, kernels=kernels)
assert p.backend == {backend!r}, p.backend
out = array('f', range(n * a))
x = array('f', range(d))
for i in range(n):
    for j in range(d):
        x[j] = obs[i * d + j]
    y = p(x)
    for j in range(a):
        out[i * a + j] = y[j]
with open({out_path!r}, 'wb') as f:
    f.write(out)
print('isa', kernels.isa() if kernels else '-')
"""


def run_policy(binary, spec, obs, tmp_path, kind, natmod_dir="", isa="auto", tag=""):
    """The device's actions for obs (one per row), with the policy written by the host."""
    policy = tmp_path / f"policy{tag}.nmp"
    write_policy(spec, policy)
    obs_path, out_path = tmp_path / f"obs{tag}.f32", tmp_path / f"out-{kind}-{isa}{tag}.f32"
    obs.astype("<f4").tofile(obs_path)
    backend = "python" if kind == "python" else ("ulab" if kind == "ulab" else "native")
    script = AGREE.format(natmod_dir=str(natmod_dir), kind=kind, isa=isa, n=len(obs), d=spec.obs_dim,
                          a=spec.act_dim, obs_path=str(obs_path), policy=str(policy), backend=backend,
                          out_path=str(out_path))
    proc = run_script(binary, script, timeout=600)
    return np.fromfile(out_path, dtype="<f4").reshape(len(obs), spec.act_dim), proc.stdout


def random_obs(spec, n=N_OBS, seed=1):
    rng = np.random.default_rng(seed)
    return (spec.obs_mean + 2 * spec.obs_std * rng.standard_normal((n, spec.obs_dim))).astype(np.float32)


def assert_agrees(dev, ref, what):
    """Relative agreement: every element within RTOL of the reference, measured
    against the larger of its own magnitude and the output's typical scale (so
    outputs that cross zero are not held to an absolute 1e-12)."""
    scale = np.maximum(np.maximum(np.abs(ref), np.abs(ref).mean(axis=0)), np.abs(ref).mean())
    rel = np.abs(dev.astype(np.float64) - ref) / scale
    assert np.all(np.isfinite(dev)), what
    assert rel.max() <= RTOL, f"{what}: max relative error {rel.max():.3g} > {RTOL} at {np.unravel_index(rel.argmax(), rel.shape)}"


@pytest.mark.device
@pytest.mark.parametrize("net", list(NETS))
@pytest.mark.parametrize("kind", ["usermod", "natmod", "python"])
def test_backend_agrees_with_numpy(micropython, natmod_x64_dir, tmp_path, net, kind):
    spec = random_spec(NETS[net], seed=len(net))
    obs = random_obs(spec)
    dev, _ = run_policy(micropython, spec, obs, tmp_path, kind, natmod_x64_dir)
    assert_agrees(dev, spec.forward(obs), f"{kind} {net}")


@pytest.mark.device
@pytest.mark.parametrize("isa", ["scalar", "sse2", "avx2"])
def test_every_kernel_path_agrees_and_both_builds_identical(micropython, natmod_x64_dir, tmp_path, isa):
    # Odd sizes exercise partial blocks and odd input counts; every activation.
    spec = random_spec([5, 7, 18, 3], seed=3, activations=["tanh", "identity", "relu"])
    big = random_spec([13, 64, 64, 4], seed=4)
    for tag, s in (("odd", spec), ("paper", big)):
        obs = random_obs(s, n=300)
        try:
            user, out = run_policy(micropython, s, obs, tmp_path, "usermod", natmod_x64_dir, isa, tag)
        except AssertionError as exc:
            if "not available here" in str(exc):
                pytest.skip(f"this CPU has no {isa}")
            raise
        assert f"isa {isa}" in out
        nat, _ = run_policy(micropython, s, obs, tmp_path, "natmod", natmod_x64_dir, isa, tag)
        assert_agrees(user, s.forward(obs), f"usermod {isa} {tag}")
        assert np.array_equal(user.view(np.uint32), nat.view(np.uint32)), f"{isa} {tag}: builds differ"


@pytest.mark.device
@pytest.mark.parametrize("net", list(NETS))
def test_native_builds_agree_exactly(micropython, natmod_x64_dir, tmp_path, net):
    spec = random_spec(NETS[net], seed=7)
    obs = random_obs(spec, seed=8)
    user, out_u = run_policy(micropython, spec, obs, tmp_path, "usermod", natmod_x64_dir)
    nat, out_n = run_policy(micropython, spec, obs, tmp_path, "natmod", natmod_x64_dir)
    assert out_u.split()[-1] == out_n.split()[-1]  # same instruction-set path
    assert np.array_equal(user.view(np.uint32), nat.view(np.uint32))


@pytest.mark.device
def test_ulab_backend_agrees_with_numpy(tmp_path):
    binary = os.environ.get("NEUROMOTOR_MICROPYTHON_ULAB")
    if not binary:
        pytest.skip("no ulab-enabled micropython: set NEUROMOTOR_MICROPYTHON_ULAB=/path/to/micropython "
                    "(build one with `make firmware BOARD=unix ULAB_DIR=<micropython-ulab checkout>`)")
    for net, sizes in NETS.items():
        spec = random_spec(sizes, seed=11)
        obs = random_obs(spec, n=200)
        dev, _ = run_policy(binary, spec, obs, tmp_path, "ulab", tag=net)
        assert_agrees(dev, spec.forward(obs), f"ulab {net}")


@pytest.mark.device
def test_auto_backend_prefers_native_and_forced_missing_backend_is_clear(run_mp, tmp_path):
    policy = tmp_path / "p.nmp"
    write_policy(random_spec([3, 8, 1]), policy)
    proc = run_mp(f"""
import neuromotor_rt as rt
p = rt.Policy.load({str(policy)!r})
print('auto', p.backend, rt.available_backends())
try:
    rt.Policy.load({str(policy)!r}, backend='ulab')
except rt.BackendUnavailableError as e:
    print('ulab-missing', e)
try:
    rt.Policy.load({str(policy)!r}, backend='gpu')
except ValueError as e:
    print('bad-name', e)
""")
    lines = proc.stdout.splitlines()
    assert lines[0] == "auto native ['native', 'python']"
    assert lines[1].startswith("ulab-missing ulab backend unavailable: this firmware has no ulab module")
    assert lines[2].startswith("bad-name unknown backend 'gpu'")


@pytest.mark.device
@pytest.mark.parametrize("kind", ["usermod", "natmod"])
def test_native_inference_does_not_allocate(run_mp, natmod_x64_dir, tmp_path, kind):
    policy = tmp_path / "p.nmp"
    write_policy(random_spec([13, 64, 64, 4]), policy)
    kernels = "nm_kernels" if kind == "usermod" else "nm_kernels_natmod"
    proc = run_mp(native_loop_script(natmod_x64_dir, kernels, policy, 13) + """
before = after = 0  # globals exist before measuring (a new global would allocate)
gc.collect()
gc.disable()
before = gc.mem_alloc()
a = run(1000)
after = gc.mem_alloc()
gc.enable()
print(before, after, a is p.out)
""")
    before, after, same = proc.stdout.split()
    assert int(after) == int(before), f"native inference allocated {int(after) - int(before)} bytes over 1000 calls"
    assert same == "True"


FILE_ERRORS = """
import neuromotor_rt as rt
for name in {names!r}:
    try:
        rt.Policy.load(name)
        print('LOADED', name)
    except rt.PolicyFileError as e:
        print(type(e).__name__, '|', e)
"""


def corrupt_files(spec, tmp_path):
    from neuromotor.policy import encode
    good = encode(spec)
    files = {
        "good": good,
        "truncated": good[:-10],
        "magic": b"XXXX" + good[4:],
        "version": good[:4] + (99).to_bytes(2, "little") + good[6:],
        "crc": good[:100] + bytes([good[100] ^ 0x01]) + good[101:],
        "empty": b"",
    }
    paths = {}
    for name, data in files.items():
        paths[name] = tmp_path / f"{name}.nmp"
        paths[name].write_bytes(data)
    return paths


@pytest.mark.device
def test_device_file_errors_are_distinct_and_clear(run_mp, tmp_path):
    paths = corrupt_files(random_spec([13, 64, 64, 4]), tmp_path)
    names = ["truncated", "magic", "version", "crc", "empty", "good"]
    proc = run_mp(FILE_ERRORS.format(names=[str(paths[n]) for n in names]))
    lines = dict(zip(names, proc.stdout.splitlines()))
    assert lines["truncated"].startswith("TruncatedPolicyError | truncated policy file")
    assert lines["magic"].startswith("BadMagicError | not a neuromotor policy file: magic b'XXXX'")
    assert lines["version"].startswith("UnsupportedVersionError | policy file format version 99, this runtime reads versions 1 to 4")
    assert lines["crc"].startswith("ChecksumError | policy file checksum mismatch")
    assert lines["empty"].startswith("TruncatedPolicyError")
    assert lines["good"].startswith("LOADED")


@pytest.mark.device
def test_device_writes_files_the_host_reads(run_mp, tmp_path):
    from neuromotor.policy import read_policy
    spec = random_spec([4, 9, 2], seed=5, activations=["tanh", "identity"])
    src, dst = tmp_path / "src.nmp", tmp_path / "dst.nmp"
    write_policy(spec, src)
    run_mp(f"""
import neuromotor_rt as rt
s, a, net, clamp = rt.read_policy({str(src)!r})
assert clamp is None
rt.write_policy({str(dst)!r}, s, a, net)
""")
    assert dst.read_bytes() == src.read_bytes()
    back = read_policy(dst)
    assert back.activations == ["tanh", "identity"]
    np.testing.assert_array_equal(back.weights[0], spec.weights[0])


@pytest.mark.device
@pytest.mark.parametrize("kind", ["nm_kernels", "nm_kernels_natmod"])
def test_layer_kernels_match_numpy(micropython, natmod_x64_dir, tmp_path, kind):
    """dense, dense_batch and pack (row-major to block-4) against NumPy."""
    rng = np.random.default_rng(12)
    n_in, n_out, batch = 19, 37, 5
    w = rng.standard_normal((n_out, n_in)).astype(np.float32)
    b = rng.standard_normal(n_out).astype(np.float32)
    x = rng.standard_normal((batch, n_in)).astype(np.float32)
    for name, arr in (("w", w), ("b", b), ("x", x)):
        arr.astype("<f4").tofile(tmp_path / f"{name}.f32")
    proc = run_script(micropython, f"""
import sys
from array import array
sys.path.append({str(natmod_x64_dir)!r})
import {kind} as k
def load(name, n):
    a = array('f', range(n))
    with open({str(tmp_path)!r} + '/' + name + '.f32', 'rb') as f:
        f.readinto(a)
    return a
w, b, x = load('w', {n_out * n_in}), load('b', {n_out}), load('x', {batch * n_in})
packed = array('f', range(k.layer_size({n_in}, {n_out})))
k.pack(packed, w, b, {n_in}, {n_out})
for act in (k.IDENTITY, k.RELU, k.TANH):
    out = array('f', range({batch * n_out}))
    k.dense_batch(out, x, packed, {n_in}, {n_out}, act)
    one = array('f', range({n_out}))
    k.dense(one, memoryview(x)[:{n_in}], packed, act)
    print(list(out))
    print(list(one))
""")
    lines = proc.stdout.splitlines()
    z = x @ w.T + b
    for i, ref in enumerate([z, np.maximum(z, 0), np.tanh(z)]):
        got = np.array(eval(lines[2 * i]), np.float32).reshape(batch, n_out)
        one = np.array(eval(lines[2 * i + 1]), np.float32)
        assert_agrees(got, ref, f"dense_batch act {i}")
        assert np.array_equal(one, got[0])


@pytest.mark.device
def test_native_errors_name_expected_and_given(run_mp):
    proc = run_mp(ATTEMPT + """
from array import array
import nm_kernels as k
lay = array('H', [2, 3, 8, 2, 1, 0])
n = k.net_size(lay)
attempt(k.mlp, array('f', [0, 0]), array('f', [0, 0, 0]), array('f', range(n - 1)), lay, array('f', range(16)))
attempt(k.mlp, array('f', [0, 0]), array('d', [0, 0, 0]), array('f', range(n)), lay, array('f', range(16)))
attempt(k.mlp, array('f', [0, 0]), array('f', [0, 0, 0]), array('f', range(n)), lay, array('f', range(3)))
attempt(k.mlp, array('f', [0, 0]), array('f', [0, 0, 0]), array('f', range(n)), array('H', [2, 3, 8, 2, 1, 9]), array('f', range(16)))
attempt(k.dense, array('f', range(4)), array('f', range(3)), array('f', range(16)), 5)
s = array('f', range(16))
attempt(k.mlp, array('f', [0, 0]), memoryview(s)[:3], array('f', range(n)), lay, s)
attempt(k.mlp, array('f', [0, 0]), array('f', [0, 0, 0]), array('f', range(n)), lay, array('f', range(16)))
""")
    lines = proc.stdout.splitlines()
    n = 2 * 3 + 2 * 2 + 2 * 4 * 4 + 1 * 4 * 9
    assert lines[0] == f"ValueError net: expected {n} floats, got {n - 1}"
    assert lines[1] == "TypeError x: expected array('f'), got typecode 'd'"
    assert lines[2] == "ValueError scratch: expected >= 16 floats, got 3"
    assert lines[3] == "ValueError layout: layer 1 code 9 is neither a dense activation 0..4 nor a GRU (16, activation 0)"
    assert lines[4] == "ValueError act: expected <= 4, got 5"
    assert lines[5] == "ValueError scratch must not overlap x"
    assert lines[6] == "ok"


@pytest.mark.device
def test_forced_native_without_kernels_is_clear(run_mp, tmp_path):
    policy = tmp_path / "p.nmp"
    write_policy(random_spec([3, 8, 1]), policy)
    proc = run_mp(f"""
import neuromotor_rt as rt
rt.NATIVE_MODULES = ('nm_kernels_absent',)
try:
    rt.Policy.load({str(policy)!r}, backend='native')
except rt.BackendUnavailableError as e:
    print(e)
print(rt.Policy.load({str(policy)!r}).backend)
""")
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("native backend unavailable: no built-in nm_kernels and no loadable nm_kernels_natmod.mpy")
    assert lines[1] == "python"


def runtime_under_cpython(monkeypatch):
    """neuromotor_rt and its modules (device/lib) imported afresh by CPython; sys.path and
    sys.modules are restored after the test."""
    import importlib
    import sys

    from neuromotor.paths import DEVICE_DIR
    monkeypatch.syspath_prepend(str(DEVICE_DIR / "lib"))
    for name in list(sys.modules):
        if name == "neuromotor_rt" or name.startswith("nm_rt_"):
            monkeypatch.delitem(sys.modules, name)
    rt = importlib.import_module("neuromotor_rt")
    assert rt.__file__ == str(DEVICE_DIR / "lib" / "neuromotor_rt.py")
    return rt


def test_runtime_imports_without_micropython_modules(tmp_path, monkeypatch):
    """CircuitPython has neither `micropython` nor `machine`: the runtime must
    import and run its python backend without them (checked under CPython)."""
    import sys

    assert "micropython" not in sys.modules
    rt = runtime_under_cpython(monkeypatch)
    policy = tmp_path / "p.nmp"
    spec = random_spec([5, 16, 2], seed=3)
    write_policy(spec, policy)
    p = rt.Policy.load(str(policy))
    assert p.backend == "python"
    obs = random_obs(spec, n=20)
    got = np.array([list(p(o.tolist())) for o in obs], np.float32)
    assert_agrees(got, spec.forward(obs), "python backend under CPython")
    with pytest.raises(rt.BackendUnavailableError, match="ulab backend unavailable"):
        rt.Policy.load(str(policy), backend="ulab")


@pytest.mark.device
def test_native_policy_on_kernels_without_forward(run_mp, tmp_path):
    """Kernels that offer only mlp and scratch_size (no Forward type) run through the
    Python-called native policy (nm_rt_native), with the same bits as Forward's."""
    policy = tmp_path / "p.nmp"
    write_policy(clamped_spec(), policy)
    proc = run_mp(f"""
from array import array
import nm_kernels
import neuromotor_rt as rt
class Bare:
    pass
k = Bare()
k.mlp, k.scratch_size = nm_kernels.mlp, nm_kernels.scratch_size
p = rt.Policy.load({str(policy)!r}, backend='native', kernels=k)
q = rt.Policy.load({str(policy)!r}, backend='native', kernels=nm_kernels)
print(type(p).__name__, p.backend, isinstance(p, nm_kernels.Forward), isinstance(q, nm_kernels.Forward))
same = True
for i in range(50):
    obs = [0.37 * ((i * 7 + j * 3) % 11) - 1.8 for j in range(p.obs_dim)]
    same = same and list(p(obs)) == list(q(array('f', obs))) == list(p(array('f', obs)))
print(same)
""")
    assert proc.stdout.splitlines() == ["NativePolicy native False True", "True"]


@pytest.mark.device
@pytest.mark.parametrize("kind", ["nm_kernels", "nm_kernels_natmod"])
def test_native_policy_is_a_forward_and_takes_lists(run_mp, natmod_x64_dir, tmp_path, kind):
    policy = tmp_path / "p.nmp"
    write_policy(random_spec([5, 16, 3], seed=2), policy)
    proc = run_mp(f"""
import sys
from array import array
sys.path.append({str(natmod_x64_dir)!r})
import {kind} as k
import neuromotor_rt as rt
p = rt.Policy.load({str(policy)!r}, backend='native', kernels=k)
a = list(p(array('f', [0.5, -1, 2, 0, 3])))
print(isinstance(p, k.Forward), isinstance(p, rt.Policy), p.backend)
print(a == list(p([0.5, -1, 2, 0, 3])) == list(p((0.5, -1, 2, 0, 3))))
for bad in ([1, 2], 'abcde', array('d', [0] * 5), array('f', [0] * 6)):
    try:
        p(bad)
    except (TypeError, ValueError) as e:
        print(type(e).__name__)
""")
    lines = proc.stdout.splitlines()
    assert lines[0] == "True True native"
    assert lines[1] == "True"
    assert lines[2:] == ["ValueError", "TypeError", "TypeError", "ValueError"]


@pytest.mark.device
def test_device_refuses_non_finite_and_non_positive_values(run_mp, tmp_path):
    spec = clamped_spec()
    s0, sl, n = spec.obs_dim, spec.act_dim, net_size(spec.sizes)
    good = encode(spec)
    cases = {
        "nan-weight": (good, 2 * s0 + 4, float("nan"), "non-finite values: layer 0 float 4 is nan"),
        "inf-offset": (good, n - sl + 1, float("inf"), "non-finite values: action_offset[1] is inf"),
        "zero-std": (good, s0 + 2, 0.0, "obs_std must be positive, got 0.0 at index 2"),
        "negative-std": (good, s0, -1.0, "obs_std must be positive, got -1.0 at index 0"),
        "nan-low": (good, n, float("nan"), "non-finite values: action limits of dimension 0"),
        "inverted": (good, n + sl, -5.0, "action limits of dimension 0: low -1.0 > high -5.0"),
        "v1-inf-mean": (encode(random_spec([3, 8, 1])), 1, float("-inf"), "non-finite values: obs_mean[1] is -inf"),
    }
    paths = []
    for name, (data, index, value, _) in cases.items():
        paths.append(str(tmp_path / f"{name}.nmp"))
        (tmp_path / f"{name}.nmp").write_bytes(patched(data, index, value))
    proc = run_mp(FILE_ERRORS.format(names=paths))
    for line, (name, (_, _, _, text)) in zip(proc.stdout.splitlines(), cases.items()):
        kind, message = line.split(" | ")
        assert kind == "PolicyValueError" and message.startswith(f"policy has {text}" if "non-finite" in text
                                                                   else text), (name, line)
    assert len(proc.stdout.splitlines()) == len(cases)


CLAMP_BACKENDS = ["usermod", "natmod", "python", "ulab"]


@pytest.mark.device
@pytest.mark.parametrize("kind", CLAMP_BACKENDS)
def test_ppo_policy_is_clamped_on_every_backend(micropython, natmod_x64_dir, tmp_path, kind):
    binary = micropython
    if kind == "ulab":
        binary = os.environ.get("NEUROMOTOR_MICROPYTHON_ULAB")
        if not binary:
            pytest.skip("no ulab-enabled micropython: set NEUROMOTOR_MICROPYTHON_ULAB")
    spec = clamped_spec()
    obs = random_obs(spec, n=300)
    raw = dataclasses.replace(spec, action_low=None, action_high=None).forward(obs)
    ref = spec(obs)
    far = (raw < spec.action_low - 1e-3) | (raw > spec.action_high + 1e-3)
    assert (raw < spec.action_low - 1e-3).any() and (raw > spec.action_high + 1e-3).any()
    dev, _ = run_policy(binary, spec, obs, tmp_path, kind, natmod_x64_dir)
    assert np.array_equal(dev[far], ref[far]), "actions beyond the limits must end exactly on them"
    assert np.all(dev >= spec.action_low) and np.all(dev <= spec.action_high)
    assert_agrees(dev, ref, f"{kind} clamped")


def overflow_spec():
    """2 -> 2 -> 1, identity: obs (x, x) gives hidden (+big, -big) and output big - big,
    which is inf - inf = NaN once big overflows the float type."""
    return PolicySpec([np.float32([[1e10, 1e10], [-1e10, -1e10]]), np.float32([[1, 1]])],
                      [np.zeros(2), np.zeros(1)], ["identity", "identity"], obs_mean=np.zeros(2),
                      obs_std=np.ones(2), action_scale=np.ones(1), action_offset=np.zeros(1),
                      action_low=np.float32([-0.5]), action_high=np.float32([2.0]))


@pytest.mark.device
def test_nan_action_becomes_midpoint_and_non_finite_obs_is_refused(run_mp, natmod_x64_dir, tmp_path):
    spec = overflow_spec()
    assert spec(np.float32([3e38, 3e38])).tolist() == [0.75]  # the host reference does the same
    policy = tmp_path / "p.nmp"
    write_policy(spec, policy)
    proc = run_mp(f"""
import sys
from array import array
sys.path.append({str(natmod_x64_dir)!r})
import neuromotor_rt as rt
import nm_kernels, nm_kernels_natmod
# float32 overflows at 3e38 * 1e10; the python backend computes in double here, so it
# needs 1e300 to reach inf - inf.
for name, k, big in (('usermod', nm_kernels, 3e38), ('natmod', nm_kernels_natmod, 3e38), ('python', None, 1e300)):
    p = rt.Policy.load({str(policy)!r}, backend='python' if k is None else 'native', kernels=k)
    print(name, list(p([big, big])), list(p([1.0, 2.0])))
    for bad in ([float('nan'), 0.0], array('f', [0.0, float('inf')]), (float('-inf'), 1.0)):
        try:
            p(bad)
            print(name, 'ACCEPTED', bad)
        except ValueError as e:
            print(name, 'ValueError', e)
import nm_rt_python
print('store', list(nm_rt_python.store(array('f', [9, 9, 9]), [float('nan'), 5.0, -5.0], array('f', [-1, 0, 1, 1, 2, 3]))))
""")
    lines = proc.stdout.splitlines()
    for i, name in enumerate(("usermod", "natmod", "python")):
        assert lines[4 * i] == f"{name} [0.75] [0.0]"
        assert lines[4 * i + 1:4 * i + 4] == [f"{name} ValueError obs[0] is not finite",
                                              f"{name} ValueError obs[1] is not finite",
                                              f"{name} ValueError obs[0] is not finite"]
    assert lines[12] == "store [0.0, 2.0, 1.0]"


@pytest.mark.device
def test_device_write_policy_keeps_limits_and_refuses_bad_targets(run_mp, tmp_path):
    from neuromotor.policy import read_policy
    spec = clamped_spec()
    src, dst = tmp_path / "src.nmp", tmp_path / "dst.nmp"
    write_policy(spec, src)
    fifo, folder = tmp_path / "fifo", tmp_path / "folder"
    os.mkfifo(fifo)
    folder.mkdir()
    proc = run_mp(f"""
from array import array
import neuromotor_rt as rt
s, a, net, clamp = rt.read_policy({str(src)!r})
print(list(clamp))
rt.write_policy({str(dst)!r}, s, a, net, clamp)
for target in ({str(fifo)!r}, {str(folder)!r}):
    try:
        rt.write_policy(target, s, a, net, clamp)
        print('WROTE', target)
    except ValueError as e:
        print(type(e).__name__, e)
bad = array('f', net)
bad[3] = float('nan')
for n, c in ((bad, clamp), (net, array('f', [1, 1, 1, 0, 0, 0])), (net, array('f', [0, 0]))):
    try:
        rt.write_policy({str(tmp_path / "bad.nmp")!r}, s, a, n, c)
        print('WROTE bad')
    except rt.PolicyValueError as e:
        print('PolicyValueError', e)
""")
    lines = proc.stdout.splitlines()
    assert lines[0] == "[-1.0, -1.0, -0.25, 1.0, 1.0, 2.0]"
    assert dst.read_bytes() == src.read_bytes()
    back = read_policy(dst)
    assert np.array_equal(back.action_low, spec.action_low) and np.array_equal(back.action_high, spec.action_high)
    assert lines[1] == f"ValueError cannot write {fifo}: not a regular file"
    assert lines[2] == f"ValueError cannot write {folder}: not a regular file"
    assert lines[3] == "PolicyValueError policy has non-finite values: obs_mean[3] is nan"
    assert lines[4] == "PolicyValueError action limits of dimension 0: low 1.0 > high 0.0"
    assert lines[5] == "PolicyValueError clamp has 2 floats, 3 actions need 6"
    assert os.path.exists(fifo) and not os.path.isfile(fifo) and folder.is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dst.nmp", "fifo", "folder", "src.nmp"]


def test_ulab_backend_logic_with_numpy_standing_in(tmp_path, monkeypatch):
    """No ulab build exists here (it is in no registry): run UlabPolicy under CPython with
    NumPy as `ulab.numpy` (the calls it makes exist in both) to check its unpacking, clamp
    and observation checks; the real ulab is covered by test_ulab_backend_agrees_with_numpy
    and the ulab case of test_ppo_policy_is_clamped_on_every_backend when one is given."""
    import sys
    import types

    fake = types.ModuleType("ulab")
    fake.numpy = np
    monkeypatch.setitem(sys.modules, "ulab", fake)
    rt = runtime_under_cpython(monkeypatch)
    spec = clamped_spec()
    policy = tmp_path / "p.nmp"
    write_policy(spec, policy)
    p = rt.Policy.load(str(policy), backend="ulab")
    assert p.backend == "ulab"
    obs = random_obs(spec, n=200)
    got = np.array([list(p(o.tolist())) for o in obs], np.float32)
    ref = spec(obs)
    raw = dataclasses.replace(spec, action_low=None, action_high=None).forward(obs)
    far = (raw < spec.action_low - 1e-3) | (raw > spec.action_high + 1e-3)
    assert far.any() and np.array_equal(got[far], ref[far])
    assert_agrees(got, ref, "ulab logic clamped")
    for bad in ([np.nan, 0, 0, 0, 0], [0, 0, np.inf, 0, 0]):
        with pytest.raises(ValueError, match=r"obs\[\d\] is not finite"):
            p(bad)
    with pytest.raises(ValueError, match="obs: expected 5 floats, got 4"):
        p([0, 0, 0, 0])

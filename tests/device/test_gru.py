"""Recurrent policies (format version 4) on the real unix MicroPython build: GRU layers
and the sigmoid and fast_tanh activations in every backend against a float32 NumPy
reference of the format's step, the state carried across calls and restored by reset(),
allocation-free native steps, and every malformed layout, state buffer or file refused.

The policy files are written here from the format's text (docs/policy-format.md), not
by the host's writer, so the device reader is checked against an independent encoder."""

import struct
import zlib

import numpy as np
import pytest

from mp_helpers import ATTEMPT, native_loop_script, run_script

GRU = 16
KINDS = ["nm_kernels", "nm_kernels_natmod"]


# ---------------------------------------------------------------------------
# The format, written from its description.

def pack_dense(w, b):
    """Block-4 layout of W (n_out x n_in) and b."""
    n_out, n_in = w.shape
    nb = -(-n_out // 4)
    blocks = np.zeros((nb, n_in + 1, 4), np.float32)
    wp = np.zeros((nb * 4, n_in), np.float32)
    wp[:n_out] = w
    bp = np.zeros(nb * 4, np.float32)
    bp[:n_out] = b
    for k in range(nb):
        blocks[k, 0] = bp[4 * k:4 * k + 4]
        blocks[k, 1:] = wp[4 * k:4 * k + 4].T
    return blocks.ravel()


def random_policy(sizes, codes, seed=0):
    """Random parameters of a dense/GRU stack: a dict the reference and the packer share."""
    rng = np.random.default_rng(seed)
    f32 = np.float32
    layers = []
    for i, code in enumerate(codes):
        n_in, n_out = sizes[i], sizes[i + 1]
        if code == GRU:
            layers.append(dict(
                wi=(rng.standard_normal((3 * n_out, n_in)) / np.sqrt(n_in)).astype(f32),
                bi=(0.2 * rng.standard_normal(3 * n_out)).astype(f32),
                wh=(rng.standard_normal((3 * n_out, n_out)) / np.sqrt(n_out)).astype(f32),
                bh=(0.2 * rng.standard_normal(3 * n_out)).astype(f32),
                h0=(0.5 * rng.standard_normal(n_out)).astype(f32)))
        else:
            layers.append(dict(w=(rng.standard_normal((n_out, n_in)) / np.sqrt(n_in)).astype(f32),
                               b=(0.1 * rng.standard_normal(n_out)).astype(f32)))
    a = sizes[-1]
    return dict(sizes=list(sizes), codes=list(codes), layers=layers,
                mean=rng.standard_normal(sizes[0]).astype(f32),
                std=(0.5 + rng.random(sizes[0])).astype(f32),
                scale=(1.0 + rng.random(a)).astype(f32), offset=(0.1 * rng.standard_normal(a)).astype(f32),
                low=np.full(a, -1.5, f32), high=np.full(a, 1.5, f32))


def pack_net(p):
    parts = [p["mean"], p["std"]]
    for code, lay in zip(p["codes"], p["layers"]):
        if code == GRU:
            parts += [pack_dense(lay["wi"], lay["bi"]), pack_dense(lay["wh"], lay["bh"]), lay["h0"]]
        else:
            parts.append(pack_dense(lay["w"], lay["b"]))
    parts += [p["scale"], p["offset"]]
    return np.concatenate(parts).astype(np.float32)


def encode_v4(p, version=4, dtype=0, codes=None):
    sizes, codes = p["sizes"], codes or p["codes"]
    n_layers = len(codes)
    payload = np.concatenate([pack_net(p), p["low"], p["high"]]).astype("<f4")
    hlen = (16 + 2 * (n_layers + 1) + n_layers + 1 + 3) & ~3
    head = struct.pack("<4sHHHHI", b"NMPL", version, hlen, n_layers, 0, payload.size)
    table = struct.pack("<%dH" % (n_layers + 1), *sizes) + bytes(codes) + bytes([dtype])
    body = head + table + bytes(hlen - 16 - len(table)) + payload.tobytes()
    return body + struct.pack("<I", zlib.crc32(body))


# ---------------------------------------------------------------------------
# The reference: the format's step in float32.

def sigmoid(x):
    with np.errstate(over="ignore"):
        return (np.float32(1) / (np.float32(1) + np.exp(-x))).astype(np.float32)


def activate(code, y):
    if code == 1:
        return np.maximum(y, np.float32(0))
    if code == 2:
        return np.tanh(y)
    if code == 3:
        return sigmoid(y)
    if code == 4:
        y = np.clip(y, np.float32(-3), np.float32(3))
        return y * (np.float32(27) + y * y) / (np.float32(27) + np.float32(9) * y * y)
    return y


def initial_state(p):
    return [lay["h0"].copy() for code, lay in zip(p["codes"], p["layers"]) if code == GRU]


def ref_step(p, obs, state):
    """(action, new state) of one step; state a list of per-GRU-layer float32 vectors."""
    x = ((obs.astype(np.float32) - p["mean"]) / p["std"]).astype(np.float32)
    new, g = [], 0
    for code, lay in zip(p["codes"], p["layers"]):
        if code == GRU:
            h, hd = state[g], lay["h0"].size
            gi = lay["wi"] @ x + lay["bi"]
            gh = lay["wh"] @ h + lay["bh"]
            r = sigmoid(gi[:hd] + gh[:hd])
            z = sigmoid(gi[hd:2 * hd] + gh[hd:2 * hd])
            n = np.tanh(gi[2 * hd:] + r * gh[2 * hd:])
            x = ((np.float32(1) - z) * n + z * h).astype(np.float32)
            new.append(x)
            g += 1
        else:
            x = activate(code, (lay["w"] @ x + lay["b"]).astype(np.float32))
    y = x * p["scale"] + p["offset"]
    return np.clip(y, p["low"], p["high"]).astype(np.float32), new


def ref_episodes(p, obs, episode_len):
    """Actions and concatenated states for obs (rows), the state reset every episode_len steps."""
    acts, states = [], []
    for t, o in enumerate(obs):
        if t % episode_len == 0:
            state = initial_state(p)
        a, state = ref_step(p, o, state)
        acts.append(a)
        states.append(np.concatenate(state) if state else np.zeros(0, np.float32))
    return np.array(acts), np.array(states)


# ---------------------------------------------------------------------------
# The device: a policy file stepped through episodes.

EPISODES = """
import sys
from array import array
sys.path.append({natmod_dir!r})
import neuromotor_rt as rt
kernels = None
if {kernels!r}:
    kernels = __import__({kernels!r})
p = rt.Policy.load({policy!r}, backend={backend!r}, kernels=kernels)
assert p.backend == {backend!r} and p.recurrent
h0 = list(p.state)
n, d, ep = {n}, {d}, {ep}
obs = array('f', range(n * d))
with open({obs_path!r}, 'rb') as f:
    assert f.readinto(obs) == 4 * n * d
x = array('f', range(d))
rows = array('f')
for t in range(n):
    if t % ep == 0:
        p.reset()
        assert list(p.state) == h0, 'reset did not restore h0'
    for j in range(d):
        x[j] = obs[t * d + j]
    rows.extend(p(x))
    rows.extend(p.state)
with open({out_path!r}, 'wb') as f:
    f.write(rows)
print('h0', h0)
"""

POLICIES = {
    # one GRU layer feeding a tanh head, a stack of two GRU layers with the new
    # activations around them, and a GRU as the last layer (its state is the output)
    "gru-head": ([5, 24, 3], [GRU, 2]),
    "stacked": ([6, 10, 12, 8, 2], [3, GRU, GRU, 4]),
    "gru-last": ([4, 9, 6], [1, GRU]),
}


def run_episodes(binary, p, tmp_path, backend, kernels="", natmod_dir="", episodes=3, ep=20, seed=3):
    """Three episodes of the same ep observations (the second one equal to the first)."""
    policy = tmp_path / "gru.nmp"
    policy.write_bytes(encode_v4(p))
    rng = np.random.default_rng(seed)
    one = (p["mean"] + 2 * p["std"] * rng.standard_normal((ep, p["sizes"][0]))).astype(np.float32)
    one[1] = one[0]
    obs = np.tile(one, (episodes, 1))
    n = len(obs)
    obs_path, out_path = tmp_path / "obs.f32", tmp_path / f"out-{backend}-{kernels}.f32"
    obs.astype("<f4").tofile(obs_path)
    proc = run_script(binary, EPISODES.format(natmod_dir=str(natmod_dir), kernels=kernels, policy=str(policy),
                                              backend=backend, n=n, d=p["sizes"][0], ep=ep,
                                              obs_path=str(obs_path), out_path=str(out_path)), timeout=300)
    a = p["sizes"][-1]
    rows = np.fromfile(out_path, "<f4").reshape(n, -1)
    h0 = eval(proc.stdout.split("h0 ", 1)[1].splitlines()[0])
    return obs, rows[:, :a], rows[:, a:], np.array(h0, np.float32)


def assert_close(dev, ref, tol, what):
    err = np.abs(dev.astype(np.float64) - ref) / np.maximum(1.0, np.abs(ref))
    assert err.max() <= tol, f"{what}: max relative error {err.max():.3g} at {np.unravel_index(err.argmax(), err.shape)}"


@pytest.mark.device
@pytest.mark.parametrize("name", sorted(POLICIES))
@pytest.mark.parametrize("backend,kernels,tol", [("native", "nm_kernels", 1e-5), ("native", "nm_kernels_natmod", 1e-5),
                                                 ("python", "", 1e-4)])
def test_gru_policy_steps_like_the_reference(micropython, natmod_x64_dir, tmp_path, name, backend, kernels, tol):
    p = random_policy(*POLICIES[name], seed=len(name))
    obs, acts, states, h0 = run_episodes(micropython, p, tmp_path, backend, kernels, natmod_x64_dir)
    ref_acts, ref_states = ref_episodes(p, obs, 20)
    assert np.array_equal(h0, np.concatenate(initial_state(p)))
    assert_close(states, ref_states, tol, f"{name} {backend} {kernels} state")
    assert_close(acts, ref_acts, tol, f"{name} {backend} {kernels} action")
    # The state carries: the same observation twice in a row gives two different actions;
    # reset() starts every episode from h0, so the episodes repeat exactly.
    assert np.abs(acts[1] - acts[0]).max() > 1e-3 and np.abs(states[1] - states[0]).max() > 1e-3
    assert acts[:20].tobytes() == acts[20:40].tobytes() == acts[40:].tobytes()


@pytest.mark.device
def test_usermod_and_natmod_give_the_same_bits(micropython, natmod_x64_dir, tmp_path):
    p = random_policy(*POLICIES["stacked"], seed=11)
    _, a_user, s_user, _ = run_episodes(micropython, p, tmp_path, "native", "nm_kernels", natmod_x64_dir)
    _, a_nat, s_nat, _ = run_episodes(micropython, p, tmp_path, "native", "nm_kernels_natmod", natmod_x64_dir)
    assert a_user.tobytes() == a_nat.tobytes() and s_user.tobytes() == s_nat.tobytes()


@pytest.mark.device
@pytest.mark.parametrize("kind", KINDS)
def test_native_gru_step_does_not_allocate(micropython, natmod_x64_dir, tmp_path, kind):
    p = random_policy([13, 64, 4], [GRU, 2], seed=5)
    policy = tmp_path / "gru.nmp"
    policy.write_bytes(encode_v4(p))
    proc = run_script(micropython, native_loop_script(natmod_x64_dir, kind, policy, 13) + """
def bare(n):
    i = 0
    while i < n:
        p.mlp(p.out, obs, p.net, p.layout, p.scratch, p.clamp, p.state)
        i += 1
s0 = list(p.state)
b0 = b1 = c0 = c1 = r0 = r1 = 0
gc.collect()
gc.disable()
b0 = gc.mem_alloc()
a = run(1000)
b1 = gc.mem_alloc()
c0 = gc.mem_alloc()
bare(1000)
c1 = gc.mem_alloc()
r0 = gc.mem_alloc()
p.reset()
r1 = gc.mem_alloc()
gc.enable()
print(b1 - b0, c1 - c0, r1 - r0, a is p.out, s0 != list(p.state))
""")
    call, bare, reset, same, moved = proc.stdout.split()
    assert (int(call), int(bare), int(reset)) == (0, 0, 0), proc.stdout
    assert same == "True" and moved == "True"


PRELUDE = ATTEMPT + """
import sys
from array import array
sys.path.append({natmod_dir!r})
import {kind} as k
lay = array('H', [2, 3, 5, 2, k.GRU, k.TANH])
net = array('f', range(k.net_size(lay)))
for i in range(len(net)):
    net[i] = 0.01 * (i % 7)
for i in range(3, 6):
    net[i] = 1.0                       # obs_std
scratch = array('f', range(k.scratch_size(lay)))
state = array('f', range(k.state_size(lay)))
out = array('f', [0, 0])
x = array('f', [0.5, -0.25, 1.0])
xbuf = array('f', [0, 0, 0])
"""


@pytest.mark.device
@pytest.mark.parametrize("kind", KINDS)
def test_sizes_of_a_recurrent_layout(micropython, natmod_x64_dir, kind):
    proc = run_script(micropython, PRELUDE.format(natmod_dir=str(natmod_x64_dir), kind=kind) + """
print(k.GRU, k.SIGMOID, k.FAST_TANH, k.net_size(lay), k.scratch_size(lay), k.state_size(lay))
print(k.state_size(array('H', [1, 3, 2, k.TANH])), k.scratch_size(array('H', [1, 3, 2, k.TANH])))
""")
    first, second = proc.stdout.splitlines()
    gru_floats = 4 * 4 * (3 + 1) + 4 * 4 * (5 + 1) + 5      # W_i (15 rows, 4 blocks), W_h, h0
    dense_floats = 1 * 4 * (5 + 1)
    assert first.split() == ["16", "3", "4", str(2 * 3 + gru_floats + dense_floats + 2 * 2),
                             str(2 * 5 + 6 * 5), "5"]
    assert second.split() == ["0", "6"]                     # an MLP: no state, scratch as before


@pytest.mark.device
@pytest.mark.parametrize("kind", KINDS)
def test_bad_state_and_layouts_are_refused(micropython, natmod_x64_dir, kind):
    proc = run_script(micropython, PRELUDE.format(natmod_dir=str(natmod_x64_dir), kind=kind) + """
attempt(k.mlp, out, x, net, lay, scratch)                                  # no state
attempt(k.mlp, out, x, net, lay, scratch, None, None)                      # None
attempt(k.mlp, out, x, net, lay, scratch, None, array('f', [0] * 4))       # short
attempt(k.mlp, out, x, net, lay, scratch, None, array('d', [0] * 5))       # not floats
attempt(k.mlp, out, x, net, lay, scratch, None, memoryview(scratch)[0:5])  # inside scratch
attempt(k.mlp, out, x, net, lay, scratch, None, memoryview(net)[10:15])    # inside the weights
attempt(k.mlp, out, x, net, lay, scratch, out, state)                      # clamp over out (a control)
attempt(k.Forward, out, net, lay, scratch, xbuf, None)                     # Forward without state
big = array('f', range(8))
attempt(k.Forward, out, net, lay, scratch, memoryview(big)[0:3], None, memoryview(big)[2:7])
attempt(k.mlp, out, x, net, array('H', [2, 3, 5, 2, k.GRU | k.TANH, k.TANH]), scratch, None, state)
attempt(k.mlp, out, x, net, array('H', [2, 3, 5, 2, 5, k.TANH]), scratch, None, state)
attempt(k.mlp, out, x, net, array('H', [2, 3, 5, 2, 32, k.TANH]), scratch, None, state)
attempt(k.mlp, out, x, array('b', range(k.net_size(lay, 1))), lay, scratch, None, state)  # int8 GRU
attempt(k.state_reset, memoryview(net)[0:5], net, lay)
attempt(k.mlp, out, x, net, lay, scratch, None, state)                     # all well
""")
    lines = proc.stdout.splitlines()
    assert lines[0] == "ValueError state: the layout has GRU layers, expected array('f') of 5 floats, got None"
    assert lines[1] == lines[0]
    assert lines[2] == "ValueError state: expected 5 floats, got 4"
    assert lines[3] == "TypeError state: expected array('f'), got typecode 'd'"
    assert lines[4] == "ValueError state must not overlap scratch"
    assert lines[5] == "ValueError state must not overlap net"
    assert lines[6].startswith("ValueError clamp")
    assert lines[7] == lines[0]
    assert lines[8] == "ValueError state must not overlap xbuf"
    for line, code in zip(lines[9:12], (18, 5, 32)):
        assert line == f"ValueError layout: layer 0 code {code} is neither a dense activation 0..4 nor a GRU (16, activation 0)"
    assert lines[12] == "TypeError state: expected array('h'), got typecode 'f'"  # an int8 net's state is int16
    assert lines[13] == "ValueError state must not overlap net"
    assert lines[14] == "ok"


@pytest.mark.device
def test_mlp_layout_refuses_a_non_empty_state(micropython, natmod_x64_dir):
    proc = run_script(micropython, """
from array import array
import nm_kernels as k
lay = array('H', [1, 3, 2, k.TANH])
net = array('f', [0, 0, 0, 1, 1, 1] + [0.1] * k.layer_size(3, 2) + [1, 1, 0, 0])
x, out, s = array('f', [1, 2, 3]), array('f', [0, 0]), array('f', range(6))
k.mlp(out, x, net, lay, s, None, array('f'))
print(list(out))
try:
    k.mlp(out, x, net, lay, s, None, array('f', [0]))
except ValueError as e:
    print(e)
""")
    first, second = proc.stdout.splitlines()
    assert eval(first) != [0.0, 0.0]
    assert second == "state: expected 0 floats, got 1"


@pytest.mark.device
def test_reader_refuses_malformed_version_4_files(micropython, tmp_path):
    p = random_policy(*POLICIES["gru-head"], seed=2)
    good = encode_v4(p)
    cases = {
        "good": good,
        "gru-with-activation": encode_v4(p, codes=[GRU | 2, 2]),
        "unknown-kind": encode_v4(p, codes=[32, 2]),
        "gru-in-version-3": encode_v4(p, version=3),
        "int8-in-version-4": encode_v4(p, dtype=1),
        "new-activation-in-version-3": encode_v4(random_policy([3, 4, 2], [3, 2]), version=3),
    }
    nan = bytearray(good[:-4])
    # h0[23] of the GRU layer: before the 24 -> 3 dense layer (100 floats) and 4 x 3 tail floats
    struct.pack_into("<f", nan, len(nan) - 4 * (12 + 100 + 1), float("nan"))
    cases["nan"] = bytes(nan) + struct.pack("<I", zlib.crc32(nan))
    paths = {}
    for name, data in cases.items():
        paths[name] = tmp_path / f"{name}.nmp"
        paths[name].write_bytes(data)
    proc = run_script(micropython, f"""
import neuromotor_rt as rt
for name, path in {sorted((k, str(v)) for k, v in paths.items())!r}:
    try:
        p = rt.Policy.load(path, backend='python')
        print(name, 'ok', p.recurrent, len(p.state), p)
    except rt.PolicyFileError as e:
        print(name, type(e).__name__, e)
""")
    out = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    assert out["good"] == "ok True 24 <Policy 5->24->3 gru,tanh backend=python>"
    assert out["gru-with-activation"].startswith("PolicyFileError corrupt policy header: sizes [5, 24, 3], layer codes [18, 2]")
    assert out["unknown-kind"].startswith("PolicyFileError corrupt policy header")
    assert out["gru-in-version-3"].startswith("PolicyFileError corrupt policy header")
    assert out["new-activation-in-version-3"].startswith("PolicyFileError corrupt policy header")
    # int8 with GRU layers is version 4 too: a float payload under dtype 1 has the wrong size
    assert out["int8-in-version-4"].startswith("PolicyFileError corrupt policy header") \
        and "(version 4, int8)" in out["int8-in-version-4"]
    assert out["nan"].startswith("PolicyValueError policy has non-finite values: layer 0 float 2255 is nan")


@pytest.mark.device
def test_device_writer_round_trips_a_recurrent_policy(micropython, tmp_path):
    p = random_policy(*POLICIES["stacked"], seed=9)
    src = tmp_path / "src.nmp"
    src.write_bytes(encode_v4(p))
    dst = tmp_path / "dst.nmp"
    proc = run_script(micropython, f"""
import neuromotor_rt as rt
sizes, acts, net, clamp = rt.read_policy({str(src)!r})
rt.write_policy({str(dst)!r}, sizes, acts, net, clamp)
try:
    rt.write_policy({str(dst) + '.x'!r}, sizes, acts, net, None)
except rt.PolicyValueError as e:
    print(e)
""")
    assert dst.read_bytes() == src.read_bytes()
    assert proc.stdout.startswith("a version-4 policy needs action limits")


@pytest.mark.device
@pytest.mark.parametrize("kind", KINDS)
def test_sigmoid_and_fast_tanh_layers_over_the_whole_range(micropython, natmod_x64_dir, kind):
    v = np.concatenate([np.linspace(-120, 120, 481), [-1e-6, 1e-6, 0.0, 3.0, -3.0, 2.9999]]).astype(np.float32)
    n = len(v)
    w = np.zeros((-(-n // 4), 2, 4), np.float32)  # one input x = 1: row r's weight is v[r], bias 0
    w.reshape(-1, 8)[:, 4:].flat[:n] = v
    proc = run_script(micropython, f"""
import sys, struct
from array import array
sys.path.append({str(natmod_x64_dir)!r})
import {kind} as k
w = array('f', {w.ravel().tolist()!r})
out = array('f', range({n}))
for act in (k.SIGMOID, k.FAST_TANH):
    k.dense(out, array('f', [1.0]), w, act)
    print(*struct.unpack('<{n}I', bytes(out)))
edge = array('f', [0, 0, 0, 0])
k.dense(edge, array('f', [1.0]), array('f', [0, 0, 0, 0, float('nan'), -1e30, 1e30, 0]), k.SIGMOID)
print(*struct.unpack('<4I', bytes(edge)))
""")
    sig, fast, edge = (np.array(line.split(), np.uint32).view(np.float32) for line in proc.stdout.splitlines())
    assert np.isnan(edge[0]) and edge[1:].tolist() == [0.0, 1.0, 0.5]  # NaN passes; no overflow
    want_sig = 1 / (1 + np.exp(-v.astype(np.float64)))
    assert np.abs(sig - want_sig).max() < 3e-7 and np.all((sig >= 0) & (sig <= 1))
    assert np.abs(sig[v > 0] / want_sig[v > 0] - 1).max() < 1e-6  # relative, where it is not tiny
    c = np.clip(v.astype(np.float64), -3, 3)
    want_fast = c * (27 + c * c) / (27 + 9 * c * c)
    assert np.abs(fast - want_fast).max() < 3e-7 and fast[v >= 3].min() == 1.0 and fast[v <= -3].max() == -1.0

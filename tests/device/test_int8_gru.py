"""int8 GRU layers (policy format version 4, dtype 1) in the kernels of the unix MicroPython
build, the user C module and the x64 natmod: stepped through episodes by mlp() and by a
Forward, every action and every state are the host NumPy reference's bits
(QuantizedPolicy.step); state_reset writes h0 in pair order; the sizes count the GRU
sections; every bad state, layout and GRU section is refused in one line; a step allocates
nothing. On the emulated boards (qemu) the same steps run through the other accumulation
paths: SMLAD (Cortex-M4F), Thumb-1 (the armv6m natmod) and the ESP32 core's MAC16 builds.

The qnets are written here from the format's text (docs/policy-format.md, "int8 GRU
layers") and checked against pack_qnet, so the kernels read what the format says."""

import shutil
import struct

import numpy as np
import pytest
from mp_helpers import ATTEMPT, run_script

from neuromotor.policy.gru_q8 import GruQ8
from neuromotor.policy.quantize import QuantizedPolicy, pack_qnet

pytestmark = pytest.mark.device

GRU = 16
ACTS = ("identity", "relu", "tanh")
KINDS = ["nm_kernels", "nm_kernels_natmod"]
F32 = np.float32


def pad4(n):
    return -(-n // 4) * 4


def slot(i):
    """Where value i of a vector sits in an int16 activation vector (pair order)."""
    return (i & ~3) | ((i & 1) << 1) | ((i >> 1) & 1)


# ---------------------------------------------------------------------------
# Policies: random integers at the scales calibration gives (inputs of about +-10^4 steps,
# gate pre-activations of a few units); "hot" ones push gates far past the +-256 clamp of
# their Q16 halves, put biases at +-2^24 and h0 at the ends of int16.

def _row_scale(rng, rows, n_in, spread=(0.5, 3.0)):
    """A per-row real scale for accumulators of n_in int8 weights times inputs of ~10^4."""
    return rng.uniform(*spread, rows) / (73.0 * 1e4 * np.sqrt(n_in))


def random_qpolicy(sizes, codes, seed=0, hot=False):
    rng = np.random.default_rng(seed)
    n = len(codes)
    weights, biases, mults, shifts, grus, kinds, acts = [], [], [], [], [], [], []
    deq = None
    for i, code in enumerate(codes):
        n_in, n_out = sizes[i], sizes[i + 1]
        if code == GRU:
            rows = 3 * n_out
            weights.append(rng.integers(-127, 128, (rows, n_in)))
            biases.append(rng.integers(-(1 << 22), 1 << 22, rows))
            deq_i, deq_h = _row_scale(rng, rows, n_in), _row_scale(rng, rows, n_out)
            bh = rng.integers(-(1 << 22), 1 << 22, rows)
            h0 = rng.integers(-32768, 32768, n_out)
            if hot:
                deq_i[::4] *= 400
                deq_h[1::3] *= 400
                biases[-1][0], bh[-1] = 1 << 24, -(1 << 24)
                h0[0], h0[-1] = -32768, 32767
            grus.append(GruQ8(deq_i=deq_i.astype(F32), wh=rng.integers(-127, 128, (rows, n_out)), bh=bh,
                              deq_h=deq_h.astype(F32), h0=h0))
            mults.append(None)
            shifts.append(0)
            kinds.append("gru")
            acts.append("identity")
            continue
        weights.append(rng.integers(-127, 128, (n_out, n_in)))
        biases.append(rng.integers(-(1 << 20), 1 << 20, n_out))
        grus.append(None)
        kinds.append("dense")
        acts.append(ACTS[code])
        m_real = _row_scale(rng, n_out, n_in, (0.5, 1.5)) * 1e4
        if i == n - 1:
            deq = m_real.astype(F32)
            break
        r = 0
        while m_real.max() * 2.0 ** (32 + r) < 2.0 ** 30:
            r += 1
        mults.append(np.minimum(np.round(m_real * 2.0 ** (32 + r)), 2**31 - 1).astype(np.int64))
        shifts.append(r)
    s0, a = sizes[0], sizes[-1]
    return QuantizedPolicy(weights=weights, biases=biases, mults=mults, shifts=shifts, deq=deq, activations=acts,
                           obs_mean=rng.standard_normal(s0).astype(F32),
                           in_mul=(8000 / (0.5 + rng.random(s0))).astype(F32),
                           action_scale=(1 + rng.random(a)).astype(F32),
                           action_offset=(0.1 * rng.standard_normal(a)).astype(F32),
                           action_low=np.full(a, -2.5, F32), action_high=np.full(a, 2.5, F32),
                           kinds=kinds, grus=grus)


# ---------------------------------------------------------------------------
# The qnet, from the format's text.

def pack_block(w):
    """int8 rows (out, in) in blocks of 4 rows and groups of 4 inputs, padding zero."""
    rows, cols = pad4(w.shape[0]), pad4(w.shape[1])
    wp = np.zeros((rows, cols), np.int8)
    wp[:w.shape[0], :w.shape[1]] = w
    return b"".join(wp[4 * k + r, 4 * g:4 * g + 4].tobytes()
                    for k in range(rows // 4) for g in range(cols // 4) for r in range(4))


def padded(v, n, dtype):
    out = np.zeros(n, dtype)
    out[:len(v)] = v
    return out.tobytes()


def qnet_of(qp):
    parts = [padded(qp.obs_mean, qp.obs_dim, "<f4"), padded(qp.in_mul, qp.obs_dim, "<f4")]
    n = len(qp.weights)
    for i, (w, b, g) in enumerate(zip(qp.weights, qp.biases, qp.grus)):
        rows = pad4(w.shape[0])
        if g is not None:
            parts += [pack_block(w), padded(b, rows, "<i4"), padded(g.deq_i, rows, "<f4"),
                      pack_block(g.wh), padded(g.bh, rows, "<i4"), padded(g.deq_h, rows, "<f4"),
                      padded(g.h0, pad4(g.hidden), "<i2")]
        elif i < n - 1:
            parts += [pack_block(w), padded(b, rows, "<i4"), padded(qp.mults[i], rows, "<i4"),
                      struct.pack("<i", qp.shifts[i])]
        else:
            parts += [pack_block(w), padded(b, rows, "<i4"), padded(qp.deq, rows, "<f4")]
    parts += [padded(qp.action_scale, qp.act_dim, "<f4"), padded(qp.action_offset, qp.act_dim, "<f4")]
    return b"".join(parts)


def layout_of(qp):
    codes = [GRU if k == "gru" else ACTS.index(a) for k, a in zip(qp.kinds, qp.activations)]
    return [len(codes)] + qp.sizes + codes


def device_state(qp, state):
    """A natural-order state (every GRU's hidden vector in layer order) as the kernels keep it:
    each vector padded to whole groups of 4 with zeros, in pair order."""
    out, at = [], 0
    for g in qp.grus:
        if g is not None:
            blk = np.zeros(pad4(g.hidden), np.int64)
            blk[[slot(i) for i in range(g.hidden)]] = state[at:at + g.hidden]
            out.append(blk)
            at += g.hidden
    return np.concatenate(out)


# ---------------------------------------------------------------------------
# Episodes on the device against the reference.

# The buffers of one policy, stepped by mlp() (state) and by a Forward (fstate); k the kernels.
BUFFERS = """
lay = array('H', {layout!r})
clamp = array('f', {clamp!r})
out = array('f', range({a}))
scratch = array('f', range(k.scratch_size(lay, 1)))
state = array('h', range(k.state_size(lay, 1)))
fstate = array('h', range(len(state)))
f = k.Forward(array('f', range({a})), q, lay, array('f', range(len(scratch))), array('f', range({d})), clamp,
              fstate)
"""

EPISODES = """
import sys
from array import array
sys.path.append({natmod_dir!r})
import {kind} as k
q = array('b', bytes.fromhex({qnet!r}))
""" + BUFFERS + """
with open({obs_path!r}, 'rb') as fh:
    rows = fh.read()
for t in range({n}):
    if t % {ep} == 0:
        k.state_reset(state, q, lay)
        k.state_reset(fstate, q, lay)
    x = array('f', rows[4 * {d} * t:4 * {d} * (t + 1)])
    k.mlp(out, x, q, lay, scratch, clamp, state)
    print(bytes(out).hex(), bytes(state).hex(), bytes(f(x)).hex(), bytes(fstate).hex())
"""

CASES = {
    # a GRU (5 inputs: a last group of one) under a tanh head; a relu layer, two stacked GRUs
    # (the second reads the first's state; hidden sizes 13 and 7) and an identity head;
    # a GRU of one input and one unit before relu layers; groups in fours throughout
    "gru-head": ([5, 24, 3], [GRU, 2]),
    "stacked": ([6, 10, 13, 7, 2], [1, GRU, GRU, 0]),
    "one-unit": ([1, 1, 2, 1], [GRU, 1, 1]),
    "wide": ([13, 64, 64, 4], [1, GRU, 2]),
}
EP = 15


def run_episodes(binary, natmod_dir, tmp_path, qp, kind, seed=1):
    """Two episodes of the same EP observations (the second one a copy of the first; in each,
    the second observation is the first again, the last one saturates the int16 inputs)."""
    rng = np.random.default_rng(seed)
    one = (qp.obs_mean + 9000 * rng.standard_normal((EP, qp.obs_dim)) / qp.in_mul).astype(F32)
    one[1] = one[0]
    one[-1] *= 1000
    obs = np.tile(one, (2, 1))
    obs_path = tmp_path / "obs.f32"
    obs.astype("<f4").tofile(obs_path)
    script = EPISODES.format(natmod_dir=str(natmod_dir), kind=kind, qnet=pack_qnet(qp).hex(), layout=layout_of(qp),
                             clamp=np.concatenate([qp.action_low, qp.action_high]).tolist(), a=qp.act_dim,
                             d=qp.obs_dim, obs_path=str(obs_path), n=len(obs), ep=EP)
    cols = [line.split() for line in run_script(binary, script, timeout=300).stdout.splitlines()]
    acts, states, f_acts, f_states = ([bytes.fromhex(c[j]) for c in cols] for j in range(4))
    return obs, acts, states, f_acts, f_states


def reference(qp, obs):
    acts, states = [], []
    for t, o in enumerate(obs):
        if t % EP == 0:
            state = qp.initial_state()
        a, state = qp.step(o, state)
        acts.append(a.astype("<f4").tobytes())
        states.append(device_state(qp, state).astype("<i2").tobytes())
    return acts, states


def test_qnet_written_from_the_format_is_pack_qnet():
    for name, (sizes, codes) in CASES.items():
        for hot in (False, True):
            qp = random_qpolicy(sizes, codes, seed=len(name), hot=hot)
            assert qnet_of(qp) == pack_qnet(qp), name


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name,hot", [(n, False) for n in CASES] + [("gru-head", True), ("stacked", True)])
def test_gru_steps_are_the_reference_bits(micropython, natmod_x64_dir, tmp_path, kind, name, hot):
    qp = random_qpolicy(*CASES[name], seed=len(name), hot=hot)
    obs, acts, states, f_acts, f_states = run_episodes(micropython, natmod_x64_dir, tmp_path, qp, kind)
    ref_acts, ref_states = reference(qp, obs)
    for t in range(len(obs)):
        assert (acts[t], states[t]) == (ref_acts[t], ref_states[t]), f"step {t}"
    assert f_acts == acts and f_states == states  # Forward keeps its own state, stepped alike
    # The state carries (the same observation twice gives two states) and state_reset
    # restarts an episode exactly.
    assert states[1] != states[0] and acts[EP:] == acts[:EP]
    if hot:  # gates saturated: some unit at an end of int16
        h = np.frombuffer(b"".join(states), "<i2")
        assert h.min() <= -32700 or h.max() >= 32700


@pytest.mark.parametrize("kind", KINDS)
def test_sizes_and_state_reset(micropython, natmod_x64_dir, kind):
    qps = [random_qpolicy(*CASES[name], seed=3) for name in sorted(CASES)]
    script = f"""
import sys
from array import array
sys.path.append({str(natmod_x64_dir)!r})
import {kind} as k
for lay, qnet in {[(layout_of(qp), pack_qnet(qp).hex()) for qp in qps]!r}:
    lay, q = array('H', lay), array('b', bytes.fromhex(qnet))
    state = array('h', [0x5555] * k.state_size(lay, 1))
    k.state_reset(state, q, lay)
    print(k.net_size(lay, 1), k.scratch_size(lay, 1), k.state_size(lay, 1), k.state_size(lay), bytes(state).hex())
"""
    lines = run_script(micropython, script).stdout.splitlines()
    for qp, line in zip(qps, lines):
        sizes, hidden = qp.sizes, [g.hidden for g in qp.grus if g is not None]
        net, scratch, state_q8, state_f, h = line.split()
        accs = max([pad4(sizes[-1])] + [2 * pad4(3 * hd) for hd in hidden])
        assert int(net) == len(pack_qnet(qp))
        assert int(scratch) == max(pad4(s) for s in sizes[:-1]) + accs   # two int16 vectors, int32 accumulators
        assert (int(state_q8), int(state_f)) == (sum(pad4(hd) for hd in hidden), sum(hidden))
        assert bytes.fromhex(h) == device_state(qp, qp.initial_state()).astype("<i2").tobytes()


# ---------------------------------------------------------------------------
# Refusals.

def _offsets(qp):
    """Byte offsets of layer 0's (a GRU's) bi, deqi, bh, deqh in the qnet."""
    rows, s0, hd = pad4(3 * qp.grus[0].hidden), qp.obs_dim, qp.grus[0].hidden
    bi = 8 * s0 + rows * pad4(s0)
    bh = bi + 8 * rows + rows * pad4(hd)
    return {"bi": bi, "deqi": bi + 4 * rows, "bh": bh, "deqh": bh + 4 * rows}


@pytest.mark.parametrize("kind", KINDS)
def test_bad_arguments_are_refused_in_one_line(micropython, natmod_x64_dir, kind):
    qp = random_qpolicy([3, 5, 2], [GRU, 2], seed=8)
    off = _offsets(qp)
    script = ATTEMPT + f"""
import sys, struct
from array import array
sys.path.append({str(natmod_x64_dir)!r})
import {kind} as k
q = array('b', bytes.fromhex({pack_qnet(qp).hex()!r}))
lay = array('H', {layout_of(qp)!r})
out, x, xbuf = array('f', [0, 0]), array('f', [0.5, -0.25, 1.0]), array('f', [0, 0, 0])
scratch = array('f', range(k.scratch_size(lay, 1)))
state = array('h', range(k.state_size(lay, 1)))
def patched(at, fmt, v):
    b = bytearray(bytes(q))
    struct.pack_into(fmt, b, at, v)
    return array('b', b)
attempt(k.mlp, out, x, q, lay, scratch)                                     # no state
attempt(k.mlp, out, x, q, lay, scratch, None, None)
attempt(k.mlp, out, x, q, lay, scratch, None, array('f', range(8)))         # floats
attempt(k.mlp, out, x, q, lay, scratch, None, array('h', range(5)))         # H, not padded to 8
big = array('h', range(9))
attempt(k.mlp, out, x, q, lay, scratch, None, memoryview(big)[1:])          # 2-byte aligned
attempt(k.Forward, out, q, lay, scratch, xbuf, None)                        # Forward without state
attempt(k.mlp, out, x, patched({off['bi']} + 8, '<i', (1 << 24) + 1), lay, scratch, None, state)
attempt(k.mlp, out, x, patched({off['bh']} + 56, '<i', -(1 << 24) - 1), lay, scratch, None, state)
attempt(k.mlp, out, x, patched({off['deqi']}, '<f', 0.0), lay, scratch, None, state)
attempt(k.mlp, out, x, patched({off['deqh']} + 56, '<f', float('nan')), lay, scratch, None, state)
attempt(k.Forward, out, patched({off['deqh']} + 4, '<f', -1.0), lay, scratch, xbuf, None, state)
edge = patched({off['bi']}, '<i', 1 << 24)                                  # the limits themselves,
edge[{off['bh']} + 4:{off['bh']} + 8] = array('b', struct.pack('<i', -(1 << 24)))
edge[{off['deqi']} + 60:{off['deqi']} + 64] = array('b', bytes(4))         # a padding row's deq 0
attempt(k.mlp, out, x, edge, lay, scratch, None, state)
last = array('H', [2, 3, 4, 5, k.RELU, k.GRU])                              # a GRU as the last layer
attempt(k.mlp, array('f', range(5)), x, array('b', bytes(k.net_size(last, 1))), last,
        array('f', range(k.scratch_size(last, 1))), None, array('h', range(k.state_size(last, 1))))
sig = array('H', [2, 3, 4, 2, k.SIGMOID, k.TANH])                           # no sigmoid in int8
attempt(k.mlp, out, x, array('b', bytes(k.net_size(sig, 1))), sig, array('f', range(k.scratch_size(sig, 1))))
wide = array('H', [2, 3, 513, 2, k.GRU, k.TANH])                            # 513 units
attempt(k.mlp, out, x, array('b', bytes(k.net_size(wide, 1))), wide, array('f', range(k.scratch_size(wide, 1))),
        None, array('h', range(k.state_size(wide, 1))))
attempt(k.state_reset, array('f', range(8)), q, lay)
attempt(k.state_reset, array('h', range(7)), q, lay)
attempt(k.state_reset, state, q[:-4], lay)
attempt(k.state_reset, state, q, lay)
attempt(k.mlp, out, x, q, lay, scratch, None, state)
"""
    lines = run_script(micropython, script).stdout.splitlines()
    none = "ValueError state: the layout has GRU layers, expected array('h') of 8 int16 values, got None"
    assert lines == [
        none,
        none,
        "TypeError state: expected array('h'), got typecode 'f'",
        "ValueError state: expected 8 int16 values, got 5",
        "ValueError state: must be 4-byte aligned",
        none,
        "ValueError net (int8): layer 0 index 2: GRU input bias (bi) outside -2^24..2^24",
        "ValueError net (int8): layer 0 index 14: GRU hidden bias (bh) outside -2^24..2^24",
        "ValueError net (int8): layer 0 index 0: GRU input scale (deqi) must be finite and positive",
        "ValueError net (int8): layer 0 index 14: GRU hidden scale (deqh) must be finite and positive",
        "ValueError net (int8): layer 0 index 1: GRU hidden scale (deqh) must be finite and positive",
        "ok",
        "ValueError net (int8): layer 1 index 0: the last layer must be dense, not a GRU",
        "ValueError net (int8): layer 0 index 0: an int8 layer is dense identity, relu or tanh, or a GRU",
        "ValueError net (int8): layer 1 index 513: more than 512 inputs (int32 accumulators could overflow)",
        "TypeError state: expected array('h'), got typecode 'f'",
        "ValueError state: expected 8 int16 values, got 7",
        f"ValueError net (int8): expected {len(pack_qnet(qp))} bytes, got {len(pack_qnet(qp)) - 4}",
        "ok",
        "ok",
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_a_step_allocates_nothing(micropython, natmod_x64_dir, kind):
    qp = random_qpolicy(*CASES["stacked"], seed=4)
    proc = run_script(micropython, f"""
import gc, sys
from array import array
sys.path.append({str(natmod_x64_dir)!r})
import {kind} as k
q = array('b', bytes.fromhex({pack_qnet(qp).hex()!r}))
lay = array('H', {layout_of(qp)!r})
out, x = array('f', [0, 0]), array('f', [0.1 * i for i in range({qp.obs_dim})])
scratch = array('f', range(k.scratch_size(lay, 1)))
state, fstate = array('h', range(k.state_size(lay, 1))), array('h', range(k.state_size(lay, 1)))
k.state_reset(state, q, lay)
k.state_reset(fstate, q, lay)
f = k.Forward(array('f', [0, 0]), q, lay, array('f', range(len(scratch))), array('f', range({qp.obs_dim})),
              None, fstate)
def run(n):
    i = 0
    while i < n:  # no range object: the loop itself must not allocate
        k.mlp(out, x, q, lay, scratch, None, state)
        f(x)
        i += 1
run(2)
s0 = bytes(state)
gc.collect()
gc.disable()
a0 = gc.mem_alloc()
run(500)
a1 = gc.mem_alloc()
gc.enable()
print(a1 - a0, bytes(state) != s0, bytes(state) == bytes(fstate))
""")
    assert proc.stdout.split() == ["0", "True", "True"]


# ---------------------------------------------------------------------------
# The other accumulation paths, on the emulated boards: the Cortex-M4F's firmware and
# armv7emsp natmod (SXTB16 + SMLAD layers), the armv6m natmod there (Thumb-1 blocks, the
# 16-bit nm_q8_mulhr), the ESP32 core's firmware and xtensawin natmod (MAC16 builds, whose
# Forward runs a GRU net unwidened).

BOARD_STEPS = """
from array import array
k = __import__({module!r})
q = array('b', {qnet!r})
""" + BUFFERS + """
k.state_reset(state, q, lay)
k.state_reset(fstate, q, lay)
for r in {rows!r}:
    x = array('f', r)
    k.mlp(out, x, q, lay, scratch, clamp, state)
    print(bytes(out).hex(), bytes(state).hex(), bytes(f(x)).hex(), bytes(fstate).hex())
"""


@pytest.mark.qemu
@pytest.mark.parametrize("board_name,arch", [("qemu-m4f", None), ("qemu-m4f", "armv7emsp"), ("qemu-m4f", "armv6m"),
                                             ("qemu-xtensa", None), ("qemu-xtensa", "xtensawin")])
def test_gru_steps_on_emulated_boards(board_pool, board_name, arch):
    from board_helpers import SYSTEM, mpremote

    from neuromotor.paths import cache_dir
    if not shutil.which(SYSTEM[board_name]):
        pytest.fail(f"{SYSTEM[board_name]} is not installed (make system)")
    mpy = cache_dir() / "natmods" / (arch or "") / "nm_kernels_natmod.mpy"
    if arch and not mpy.exists():
        pytest.fail(f"{mpy} missing: run `make natmods`")
    board = board_pool.get(board_name)
    module = f"nm_q8gru_{arch}" if arch else "nm_kernels"  # a natmod under its own name: none cached
    if arch:
        mpremote(board.port, "cp", str(mpy), f":{module}.mpy")
    try:
        for name, hot in (("stacked", True), ("wide", False)):
            qp = random_qpolicy(*CASES[name], seed=len(name), hot=hot)
            rng = np.random.default_rng(2)
            obs = (qp.obs_mean + 9000 * rng.standard_normal((6, qp.obs_dim)) / qp.in_mul).astype(F32)
            script = BOARD_STEPS.format(module=module, qnet=pack_qnet(qp), layout=layout_of(qp),
                                        clamp=np.concatenate([qp.action_low, qp.action_high]).tolist(),
                                        a=qp.act_dim, d=qp.obs_dim, rows=[o.astype("<f4").tobytes() for o in obs])
            got = [line.split() for line in mpremote(board.port, "exec", script).splitlines()]
            state = qp.initial_state()
            for t, o in enumerate(obs):
                a, state = qp.step(o, state)
                want = [a.astype("<f4").tobytes().hex(), device_state(qp, state).astype("<i2").tobytes().hex()]
                assert got[t] == want * 2, f"{name} step {t}"
    finally:
        if arch:
            mpremote(board.port, "fs", "rm", f":{module}.mpy")

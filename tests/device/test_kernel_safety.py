"""What the native kernels let through to a motor, in both homes (the built-in
`nm_kernels` and the x64 `nm_kernels_natmod`) on the unix build: the optional
action clamp (limits applied, NaN becomes the midpoint), clamp buffers checked
like every other buffer, non-finite observations refused before any
arithmetic, and Forward's copy-in buffer never aliasing the weights."""

import pytest
from mp_helpers import run_script

KINDS = ["nm_kernels", "nm_kernels_natmod"]

# A 2 -> 2 identity layer whose first output is 1e30 * x0 + 1e30 * x1 and whose
# second is x0: finite weights and observations, yet x = (1e30, -1e30) makes
# the first output inf - inf = NaN.
PRELUDE = """
import sys
from array import array
sys.path.append({natmod_dir!r})
import {kind} as k
lay = array('H', [1, 2, 2, 0])
layer = array('f', [0, 0, 0, 0, 1e30, 1, 0, 0, 1e30, 0, 0, 0])
net = array('f', [0, 0, 1, 1] + list(layer) + [1, 1, 0, 0])
assert len(net) == k.net_size(lay)
scratch = array('f', [0] * k.scratch_size(lay))
out = array('f', [0, 0])
def attempt(f, *a):
    try:
        r = f(*a)
        print('ok', list(r) if r is not None else list(out))
    except (TypeError, ValueError) as e:
        print(type(e).__name__, e)
"""


def run(micropython, natmod_dir, kind, body):
    proc = run_script(micropython, PRELUDE.format(natmod_dir=str(natmod_dir), kind=kind) + body)
    return proc.stdout.splitlines()


@pytest.mark.device
@pytest.mark.parametrize("kind", KINDS)
def test_clamp_limits_actions_and_turns_nan_into_the_midpoint(micropython, natmod_x64_dir, kind):
    lines = run(micropython, natmod_x64_dir, kind, """
lim = array('f', [-2, -1, 4, 3])    # out0 in [-2, 4] (midpoint 1), out1 in [-1, 3]
xbuf = array('f', [0, 0])
f = k.Forward(out, net, lay, scratch, xbuf, lim)
for x in ([1e30, -1e30], [-1e30, -1e30], [1e30, 1e30], [1e-30, 1e-30]):
    k.mlp(out, array('f', x), net, lay, scratch)
    raw = list(out)
    k.mlp(out, array('f', x), net, lay, scratch, lim)
    print([raw, list(out), list(f(x)), list(f(array('f', x)))])
k.mlp(out, array('f', [1e30, -1e30]), net, lay, scratch, None)
print(list(out))
""")
    nan = float("nan")
    raws, clamped = [], []
    for line in lines[:4]:
        raw, mlp, fwd_list, fwd_arr = eval(line.replace("nan", "NAN").replace("inf", "INF"),
                                           {"NAN": nan, "INF": float("inf")})
        assert mlp == fwd_list == fwd_arr  # every entry point clamps alike
        raws.append(raw)
        clamped.append(mlp)
    assert raws[0][0] != raws[0][0] and raws[0][1] > 1e29  # the crafted NaN and an out-of-range value
    assert clamped[0] == [1.0, 3.0]                          # NaN -> midpoint of [-2, 4]; 1e30 -> 3
    assert clamped[1] == [-2.0, -1.0]                        # -inf and -1e30 -> lower limits
    assert clamped[2] == [4.0, 3.0]                          # +inf -> upper limit
    assert clamped[3] == raws[3] and 1.9 < raws[3][0] < 2.1      # inside the limits: untouched
    unclamped = eval(lines[4].replace("nan", "None"))
    assert unclamped[0] is None and unclamped[1] > 1e29      # None: no clamp


@pytest.mark.device
@pytest.mark.parametrize("kind", KINDS)
def test_bad_clamp_buffers_are_refused(micropython, natmod_x64_dir, kind):
    lines = run(micropython, natmod_x64_dir, kind, """
x = array('f', [1, 2])
xbuf = array('f', [0, 0])
shared = array('f', [0] * 8)
for lim in (array('d', [-1, -1, 1, 1]), array('f', [-1, -1, 1]), array('f'), [-1, -1, 1, 1],
            array('f', [-1, float('nan'), 1, 1]), array('f', [-1, -1, 1, float('inf')]),
            array('f', [-1, 2, 1, 1])):
    attempt(k.mlp, out, x, net, lay, scratch, lim)
    attempt(k.Forward, out, net, lay, scratch, xbuf, lim)
# overlapping the buffers it could alias
attempt(k.mlp, memoryview(shared)[0:2], x, net, lay, scratch, memoryview(shared)[1:5])
attempt(k.mlp, out, x, net, lay, memoryview(shared)[0:4], memoryview(shared)[3:7])
attempt(k.Forward, out, net, lay, scratch, memoryview(shared)[0:2], memoryview(shared)[1:5])
wide = array('f', list(net) + [0, 0])
attempt(k.mlp, out, x, memoryview(wide)[0:20], lay, scratch, memoryview(wide)[18:22])
# limits made bad after construction are caught at the call, before anything runs
lim = array('f', [-1, -1, 1, 1])
f = k.Forward(out, net, lay, scratch, xbuf, lim)
lim[2] = float('nan')
out[0] = 7
attempt(f, [1, 2])
""")
    wanted = [
        "TypeError clamp: expected array('f'), got typecode 'd'",
        "ValueError clamp: expected 4 floats, got 3",
        "ValueError clamp: expected 4 floats, got 0",  # empty is refused, not taken as "no clamp"
        "TypeError",                                   # a list has no buffer
        "ValueError clamp[1] is not finite",
        "ValueError clamp[3] is not finite",
        "ValueError clamp[1] (lower limit) is above clamp[3] (upper limit)",
    ]
    for i, want in enumerate(wanted):  # mlp and Forward say the same
        for line in lines[2 * i:2 * i + 2]:
            assert line == want or want == "TypeError" and line.startswith("TypeError "), (i, line)
    assert lines[14:18] == [
        "ValueError clamp must not overlap out",
        "ValueError clamp must not overlap scratch",
        "ValueError clamp must not overlap xbuf",
        "ValueError clamp must not overlap net",
    ]
    assert lines[18] == "ValueError clamp[2] is not finite"


@pytest.mark.device
@pytest.mark.parametrize("kind", KINDS)
def test_non_finite_observations_are_refused_before_computing(micropython, natmod_x64_dir, kind):
    lines = run(micropython, natmod_x64_dir, kind, """
lay4 = array('H', [1, 4, 2, 0])
net4 = array('f', [0] * 4 + [1] * 4 + [0.5] * k.layer_size(4, 2) + [1, 1, 0, 0])
s4 = array('f', [0] * k.scratch_size(lay4))
f = k.Forward(out, net4, lay4, s4, array('f', [0] * 4))
for bad in (float('nan'), float('inf'), -float('inf')):
    obs = [0.5, -1.0, 2.0, bad]
    out[0] = out[1] = 7
    attempt(k.mlp, out, array('f', obs), net4, lay4, s4)
    attempt(f, array('f', obs))
    attempt(f, obs)
    attempt(f, tuple(obs))
print(list(out))
attempt(f, [float('nan'), 0, 0, 0])
print(list(f([0.5, -1.0, 2.0, 0.0])), list(f(array('f', [0.5, -1.0, 2.0, 0.0]))))
""")
    assert lines[:12] == ["ValueError obs[3] is not finite"] * 12
    assert lines[12] == "[7.0, 7.0]"  # nothing was computed
    assert lines[13] == "ValueError obs[0] is not finite"
    assert lines[14] == "[1.25, 1.25] [1.25, 1.25]"  # finite again: 0.5 + 0.5 * (0.5 - 1 + 2 + 0)


@pytest.mark.device
@pytest.mark.parametrize("kind", KINDS)
def test_forward_xbuf_may_not_alias_weights_or_other_buffers(micropython, natmod_x64_dir, kind):
    lines = run(micropython, natmod_x64_dir, kind, """
before = bytes(net)
attempt(k.Forward, out, net, lay, scratch, memoryview(net)[0:2])
attempt(k.Forward, out, net, lay, scratch, memoryview(net)[14:16])
attempt(k.Forward, out, net, lay, scratch, memoryview(scratch)[0:2])
attempt(k.Forward, out, net, lay, scratch, out)
attempt(k.Forward, out, net, lay, scratch, array('f', [0, 0, 0]))
attempt(k.Forward, out, net, lay, scratch, array('d', [0, 0]))
print(bytes(net) == before)
f = k.Forward(out, net, lay, scratch, array('f', [0, 0]))
print(f([2, 3])[1], bytes(net) == before)
""")
    assert lines[:6] == [
        "ValueError xbuf must not overlap net",
        "ValueError xbuf must not overlap net",
        "ValueError scratch must not overlap xbuf",
        "ValueError out must not overlap xbuf",
        "ValueError xbuf: expected 2 floats, got 3",
        "TypeError xbuf: expected array('f'), got typecode 'd'",
    ]
    assert lines[6] == "True"
    assert lines[7] == "2.0 True"  # a good xbuf still takes lists


@pytest.mark.device
def test_both_homes_clamp_bit_identically(micropython, natmod_x64_dir):
    script = """
import sys, random, binascii
from array import array
sys.path.append({natmod_dir!r})
import {kind} as k
random.seed(5)
lay = array('H', [2, 13, 64, 4, 1, 0])
net = array('f', [random.uniform(-2, 2) for _ in range(k.net_size(lay))])
for i in range(13, 26):
    net[i] = 0.5 + random.random()  # obs_std > 0
for i in range(len(net) - 8, len(net)):
    net[i] = 3.0 if i < len(net) - 4 else 0.0  # actions in [-3, 3]: beyond every limit
scratch = array('f', [0] * k.scratch_size(lay))
out = array('f', [0] * 4)
lim = array('f', [-0.5, -1, -1.5, -0.25, 0.5, 1, 1.5, 0.25])
f = k.Forward(out, net, lay, scratch, array('f', [0] * 13), lim)
h = []
for _ in range(200):
    x = [random.uniform(-3, 3) for _ in range(13)]
    f(x)
    h.append(binascii.hexlify(out))
    k.mlp(out, array('f', x), net, lay, scratch, lim)
    h.append(binascii.hexlify(out))
print(b''.join(h).decode())
"""
    outs = [run_script(micropython, script.format(natmod_dir=str(natmod_x64_dir), kind=kind)).stdout.strip()
            for kind in KINDS]
    assert len(outs[0]) == 400 * 32
    assert outs[0] == outs[1]
    # and the limits were reached in every dimension (the test exercises the clamp)
    import struct
    vals = struct.unpack(f"<{400 * 4}f", bytes.fromhex(outs[0]))
    for d, (lo, hi) in enumerate([(-0.5, 0.5), (-1, 1), (-1.5, 1.5), (-0.25, 0.25)]):
        col = vals[d::4]
        assert all(lo <= v <= hi for v in col)
        assert min(col) == lo and max(col) == hi, (d, min(col), max(col))

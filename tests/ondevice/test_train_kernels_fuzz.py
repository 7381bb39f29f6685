"""Fuzz every nm_train entry point on the unix build (user C module, and the x64 natmod
when built): random shapes, lengths, types and values give Python exceptions or
results, never a crash; plus exact checks of the error types and messages."""

import pytest

from neuromotor.paths import cache_dir

from .conftest import run_mp

FUZZ = r"""
import sys
from array import array
sys.path.append({natdir!r})
mod = __import__({module!r})
import random
random.seed({seed})
F = ('forward', 'backward', 'pack', 'adam', 'polyak', 'smooth', 'bellman', 'critic_grad', 'fill',
     'copy', 'seed', 'uniform', 'normal', 'randint', 'push', 'gather', 'sizes')
NARGS = {{'forward': 4, 'backward': 8, 'pack': 3, 'adam': 5, 'polyak': 3, 'smooth': 4, 'bellman': 6,
         'critic_grad': 5, 'fill': 2, 'copy': 5, 'seed': 2, 'uniform': 4, 'normal': 2, 'randint': 3,
         'push': 7, 'gather': 7, 'sizes': 2}}

def rand_layout():
    L = random.choice([0, 1, 2, 3, 40])
    sizes = [random.choice([0, 1, 2, 3, 4, 5, 64, 65535]) for _ in range(L + 1)]
    acts = [random.choice([0, 1, 2, 3, 99]) for _ in range(L)]
    v = [L] + sizes + acts
    if random.random() < 0.2:
        v = v[:random.randint(0, len(v))]
    return array(random.choice('HHHHf'), v)

def rand_arg():
    r = random.random()
    if r < 0.45:
        n = random.choice([0, 1, 3, 4, 7, 16, 100, 257, 1000, 5000])
        return array('f', [random.uniform(-3, 3) for _ in range(n)])
    if r < 0.55:
        return array('I', [random.randint(0, 3000) for _ in range(random.choice([0, 1, 4, 32, 100]))])
    if r < 0.62:
        return rand_layout()
    if r < 0.75:
        return random.choice([-5, -1, 0, 1, 3, 4, 32, 100, 2**31, 2**40, 2**70])
    if r < 0.82:
        return random.uniform(-2, 2)
    if r < 0.88:
        return None
    if r < 0.94:
        return bytearray(random.choice([0, 4, 16, 400]))
    return random.choice(['x', b'ab', (1, 2), [1.0, 2.0], array('d', [1.0] * 8), array('h', [1] * 8)])

counts = {{}}
for i in range({n}):
    name = random.choice(F)
    fn = getattr(mod, name)
    k = NARGS[name]
    if random.random() < 0.05:
        k += random.choice([-1, 1])
    args = [rand_arg() for _ in range(k)]
    try:
        fn(*args)
        res = 'ok'
    except (TypeError, ValueError, OverflowError) as e:
        res = type(e).__name__
    counts[res] = counts.get(res, 0) + 1
print('FUZZ', sorted(counts.items()))
"""

CHECKS = r"""
import sys
from array import array
sys.path.append({natdir!r})
T = __import__({module!r})
def err(f, *a):
    try:
        f(*a)
    except Exception as e:
        return '%s: %s' % (type(e).__name__, e)
    return 'no error'
L = array('H', [2, 3, 4, 1, 1, 0])
n, t, s = T.sizes(L, 5)
print('SIZES', n, t, s)
net = array('f', [0.1] * n)
x = array('f', [0.5] * 15)
tape = array('f', [0.0] * t)
print('E1', err(T.forward, net, L, x, array('f', [0.0] * (t - 1))))
print('E2', err(T.forward, net, L, array('d', [0.0] * 15), tape))
print('E3', err(T.forward, net, L, array('f', [0.0] * 14), tape))
print('E4', err(T.forward, net, array('H', [2, 3, 4, 1, 1, 7]), x, tape))
big = array('f', [0.0] * 40)
print('E5', err(T.forward, net, L, memoryview(big)[:15], memoryview(big)[14:39]))
print('E6', err(T.randint, array('f', [0.0] * 4), array('I', [0] * 3), 5))
print('E7', err(T.randint, array('I', [0] * 4), array('I', [0] * 3), 0))
print('E8', err(T.copy, net, 0, x, 10, 6))
print('E9', err(T.gather, array('f', [0.0] * 90), array('I', [3]), 3, array('f', [0.0] * 4), array('f', [0.0]), array('f', [0.0]), array('f', [0.0] * 3)))
T.forward(net, L, x, tape)
print('OUT', list(tape[-5:]))
"""


def _targets():
    out = [("nm_train", "")]
    natdir = cache_dir() / "natmods" / "x64"
    if (natdir / "nm_train_natmod.mpy").exists():
        out.append(("nm_train_natmod", str(natdir)))
    return out


@pytest.mark.parametrize("module,natdir", _targets())
def test_fuzz_only_python_exceptions(micropython_train, module, natdir):
    for seed in range(3):
        out = run_mp(micropython_train, FUZZ.format(module=module, natdir=natdir, seed=seed, n=1500), timeout=120)
        line = [ln for ln in out.splitlines() if ln.startswith("FUZZ")][-1]
        assert "TypeError" in line and "ValueError" in line, line  # the fuzzer reached the checks


@pytest.mark.parametrize("module,natdir", _targets())
def test_errors_name_expected_and_given(micropython_train, module, natdir):
    out = dict(ln.split(" ", 1) for ln in run_mp(micropython_train, CHECKS.format(module=module, natdir=natdir)).splitlines())
    assert out["SIZES"] == "21 25 52"  # (3+1)*4 + (4+1)*1 params; (4+1)*5 tape; 2*4*5 + 3*4 scratch
    assert out["E1"] == "ValueError: tape ((s1 + ... + sL) x batch): expected 25 floats, got 24"
    assert out["E2"].startswith("TypeError: x: expected array('f')")
    assert out["E3"].startswith("ValueError: x (s0 x batch, feature-major): expected a non-zero multiple of 3")
    assert out["E4"] == "ValueError: layout activation code: expected < 3, got 7"
    assert out["E5"] == "ValueError: tape must not overlap x"
    assert out["E6"].startswith("TypeError: rng state: expected array('I')")
    assert out["E7"] == "ValueError: n: expected >= 1, got 0"
    assert out["E8"] == "ValueError: n (floats in src after src_offset): expected <= 5, got 6"
    assert out["E9"] == "ValueError: idx entry: expected < 3 (rows stored), got 3"
    # 0.1-weights, inputs 0.5: hidden = relu(3 * 0.05 + 0.1) = 0.25 (x4), out = 4 * 0.025 + 0.1 = 0.2
    assert [round(float(v), 5) for v in out["OUT"].strip("[]").split(",")] == [0.2] * 5

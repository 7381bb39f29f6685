"""A replay of binary16 halves (the esp32 profile's): push rounds each float32 to the nearest
half as NumPy does (ties to even), except that values beyond 65504 saturate instead of
becoming infinite; gather gives back exactly NumPy's float16 -> float32. Checked for nm_train,
its natmod and the Python kernels, over every half and float32 values of every kind."""

import numpy as np
import pytest

from neuromotor.paths import cache_dir

from .conftest import run_mp

ROW_O = 100  # observation size of the rows the values travel in: rows of 2 * 100 + 1 + 2

SCRIPT = """
import sys
if {natdir!r}:
    sys.path.insert(0, {natdir!r})
from array import array
{kernels}
o = {o}
row = 2 * o + 3
vals = array('f', open({vals!r}, 'rb').read())
n = len(vals) // row
rep = array('H', range(n * row))
for p in range(n):
    v = vals[p * row:(p + 1) * row]
    K.push(rep, p, v[:o], v[o:o + 1], v[o + 1], v[o + 2], v[o + 3:])
open({pushed!r}, 'wb').write(rep)
halves = array('H', open({halves!r}, 'rb').read())
n = len(halves) // row
idx = array('I', range(n))
sa, r, nd, s2 = array('f', range((o + 1) * n)), array('f', range(n)), array('f', range(n)), array('f', range(o * n))
K.gather(halves, idx, n, sa, r, nd, s2)
f = open({gathered!r}, 'wb')
for a in (sa, r, nd, s2):
    f.write(a)
f.close()
print('DONE')
"""

KERNELS = {
    "nm_train": "import nm_train as K",
    "nm_train_natmod": "import nm_train_natmod as K",
    "python": "import nm_td3_py\nK = nm_td3_py.Kernels()",
}


def _targets():
    out = [("nm_train", ""), ("python", "")]
    natdir = cache_dir() / "natmods" / "x64"
    if (natdir / "nm_train_natmod.mpy").exists():
        out.append(("nm_train_natmod", str(natdir)))
    return out


def _float32_cases(rng) -> np.ndarray:
    """float32 values of every kind: random bit patterns, exact ties between neighbouring
    halves (normal and subnormal), the edges of the half range, zeros, infinities, NaN."""
    bits = rng.integers(0, 2**32, 6000, dtype=np.uint64).astype(np.uint32)
    vals = [bits.view(np.float32)]
    h = np.arange(0, 0x7BFF, dtype=np.uint16)
    lo, hi = h.view(np.float16).astype(np.float32), (h + 1).view(np.float16).astype(np.float32)
    ties = ((lo.astype(np.float64) + hi) / 2).astype(np.float32)  # exact: halves have 11 bits
    vals += [ties, -ties, rng.uniform(-20, 20, 3000).astype(np.float32)]
    vals.append(np.array([0.0, -0.0, 65504, 65519.99, 65520, 1e6, -1e6, 2.0**-24, 2.0**-25, 2.0**-25 * 1.0001,
                          5.96e-8, 6.1e-5, 6.104e-5, np.inf, -np.inf, np.nan], np.float32))
    v = np.concatenate(vals)
    row = 2 * ROW_O + 3
    return np.concatenate([v, np.zeros(-len(v) % row, np.float32)])


@pytest.mark.parametrize("module,natdir", _targets())
def test_half_replay_rounds_as_numpy_and_saturates(micropython_train, module, natdir, tmp_path):
    vals = _float32_cases(np.random.default_rng(7))
    row = 2 * ROW_O + 3
    halves = np.arange(0, 2**16, dtype=np.uint32).astype(np.uint16)
    halves = np.concatenate([halves, np.zeros(-len(halves) % row, np.uint16)])
    paths = {k: str(tmp_path / k) for k in ("vals", "pushed", "halves", "gathered")}
    vals.tofile(paths["vals"])
    halves.tofile(paths["halves"])
    out = run_mp(micropython_train, SCRIPT.format(o=ROW_O, natdir=natdir, kernels=KERNELS[module], **paths),
                 timeout=600, heap="16M")
    assert out.strip().endswith("DONE"), out

    pushed = np.fromfile(paths["pushed"], np.uint16)
    with np.errstate(over="ignore"):
        expected = vals.astype(np.float16)
    overflow = np.isfinite(vals) & ~np.isfinite(expected)
    assert overflow.sum() >= 2000  # the random bit patterns and the edges reach it
    expected[overflow] = np.copysign(np.float16(65504), vals[overflow])
    got = pushed.view(np.float16)
    nan = np.isnan(vals)
    assert np.array_equal(np.isnan(got), nan)
    mismatch = np.flatnonzero(got[~nan].view(np.uint16) != expected[~nan].view(np.uint16))
    assert mismatch.size == 0, [(float(vals[~nan][i]), hex(got[~nan].view(np.uint16)[i]),
                                 hex(expected[~nan].view(np.uint16)[i])) for i in mismatch[:5]]

    g = np.fromfile(paths["gathered"], np.float32)
    n = len(halves) // row
    sa, r, nd, s2 = np.split(g, [(ROW_O + 1) * n, (ROW_O + 2) * n, (ROW_O + 3) * n])
    rows = np.concatenate([sa.reshape(ROW_O + 1, n), r[None], nd[None], s2.reshape(ROW_O, n)]).T.reshape(-1)
    want = halves.view(np.float16).astype(np.float32)
    assert np.array_equal(np.isnan(rows), np.isnan(want))
    same = ~np.isnan(want)
    assert np.array_equal(rows[same].view(np.uint32), want[same].view(np.uint32))  # -0.0 and subnormals too

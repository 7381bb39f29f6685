"""Forward's call path on the unix build, in both homes: every call checks again what
can change between calls (a held buffer (out, net, scratch, clamp) moved or resized,
the clamp limits, the observation)."""

import pytest
from mp_helpers import run_script

pytestmark = pytest.mark.device

KINDS = ["nm_kernels", "nm_kernels_natmod"]

SCRIPT = """
import sys
from array import array
sys.path.append({natmod_dir!r})
import {kind} as k
lay = array('H', [1, 2, 2, 0])
# out0 = x0 + x1, out1 = x0
net = array('f', [0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0])
assert len(net) == k.net_size(lay)

def case(change, obs=(1, 2)):
    out, n, clamp = array('f', [0, 0]), array('f', net), array('f', [-5, -5, 5, 5])
    scratch = array('f', [0] * k.scratch_size(lay))
    f = k.Forward(out, n, lay, scratch, array('f', [0, 0]), clamp)
    f(array('f', [1, 2]))
    change(out, n, scratch, clamp)
    try:
        print('ok', list(f(obs if type(obs) is not tuple else array('f', obs))))
    except (TypeError, ValueError) as e:
        print(type(e).__name__, e)

def setitem(a, i, v):
    a[i] = v

case(lambda o, n, s, c: None)
case(lambda o, n, s, c: setitem(c, 1, float('nan')))
case(lambda o, n, s, c: setitem(c, 1, 9))
case(lambda o, n, s, c: None, (1, 2, 3))
case(lambda o, n, s, c: None, (7, 1))
case(lambda o, n, s, c: o.append(0))
case(lambda o, n, s, c: n.append(0))
case(lambda o, n, s, c: c.append(0))
case(lambda o, n, s, c: s.extend(array('f', [0] * 64)))
case(lambda o, n, s, c: None, memoryview(array('f', [1, 2])))
"""


@pytest.mark.parametrize("kind", KINDS)
def test_forward_rechecks_what_can_change_between_calls(micropython, natmod_x64_dir, kind):
    lines = run_script(micropython, SCRIPT.format(natmod_dir=str(natmod_x64_dir), kind=kind)).stdout.splitlines()
    assert lines == [
        "ok [3.0, 1.0]",
        "ValueError clamp[1] is not finite",                                  # limits read at every call
        "ValueError clamp[1] (lower limit) is above clamp[3] (upper limit)",
        "ValueError x: expected 2 floats, got 3",
        "ok [5.0, 5.0]",                                                      # clamped
        "ValueError out: expected 2 floats, got 3",                           # a held buffer resized:
        "ValueError net: expected 20 floats, got 21",                         # every check again
        "ValueError clamp: expected 4 floats, got 5",
        "ok [3.0, 1.0]",                                                      # scratch may be larger
        "ok [3.0, 1.0]",                                                      # any float buffer
    ]

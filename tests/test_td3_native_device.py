"""The host's native TD3 update (neuromotor.native._nm_host) is the board's arithmetic bit for bit:
one update of one agent, computed by the extension and, from the same numbers, by a
MicroPython script on the unix build calling nm_train's kernels in the same order (target
actor, smoothing, both target critics, Bellman targets, each critic's forward, gradient,
backward and Adam, the actor through critic 1, Polyak). Same header, same compiler flags,
same instruction-set path (both choose it by cpuid on this machine)."""

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from neuromotor.algos.td3 import TD3, Config
from neuromotor.algos.native_family import TrainFamily
from neuromotor.envs.pendulum import PendulumVec
from neuromotor.nn import MLP
from neuromotor.paths import cache_dir

_nm_host = pytest.importorskip("neuromotor.native._nm_host")

pytestmark = pytest.mark.device


def _micropython() -> Path:
    env = os.environ.get("NEUROMOTOR_MICROPYTHON")
    path = Path(env) if env else cache_dir() / "bin" / "micropython"
    if not path.exists():
        pytest.skip(f"unix MicroPython not built ({path} missing): run `make firmware BOARD=unix`")
    return path


SCRIPT = """
import nm_train as T
from array import array
d = {dir!r}
B, o, na, W = {B}, {o}, {na}, {width}
gamma, tau, pn, nc = {gamma!r}, {tau!r}, {pn!r}, {nc!r}

def load(name, tc='f'):
    with open(d + '/' + name + '.bin', 'rb') as f:
        return array(tc, f.read())

def z(n):
    return array('f', bytes(4 * n))

A, C = load('alayout', 'H'), load('clayout', 'H')
ap, at, am, av, ast = load('ap'), load('at'), load('am'), load('av'), load('ast')
cp = [load('cp0'), load('cp1')]
ct = [load('ct0'), load('ct1')]
cm = [load('cm0'), load('cm1')]
cv = [load('cv0'), load('cv1')]
cst = [load('cst'), load('cst')]
rows, noise = load('rows'), load('noise')
B2 = 2 * B

xn = z((na + o) * B2)
for c in range(2):
    for b in range(B):
        r0 = (c * B + b) * W
        for i in range(o):
            xn[(na + i) * B2 + c * B + b] = rows[r0 + na + o + 3 + i]
s = T.sizes(A, B2)
tape = z(s[1])
T.forward(at, A, xn[na * B2:], tape)
act = tape[len(tape) - na * B2:]
T.smooth(act, noise, pn, nc)
for i in range(na * B2):
    xn[i] = act[i]
qn = []
s = T.sizes(C, B2)
for c in range(2):
    tape = z(s[1])
    T.forward(ct[c], C, xn, tape)
    qn.append(tape[len(tape) - B2:])
s = T.sizes(C, B)
for c in range(2):
    xc, r, nd, y, dq = z((na + o) * B), z(B), z(B), z(B), z(B)
    for b in range(B):
        r0 = (c * B + b) * W
        for i in range(na + o):
            xc[i * B + b] = rows[r0 + i]
        r[b] = rows[r0 + na + o + 1]
        nd[b] = rows[r0 + na + o + 2]
    T.bellman(y, qn[0][c * B:(c + 1) * B], qn[1][c * B:(c + 1) * B], r, nd, gamma)
    tape = z(s[1])
    T.forward(cp[c], C, xc, tape)
    T.critic_grad(dq, tape[len(tape) - B:], y, 2 / B, None)
    g = z(s[0])
    T.backward(cp[c], C, xc, tape, dq, g, None, z(s[2]))
    T.adam(cp[c], g, cm[c], cv[c], cst[c])

xa = z((na + o) * B)
for b in range(B):
    r0 = (2 * B + b) * W
    for i in range(o):
        xa[(na + i) * B + b] = rows[r0 + na + i]
sa = T.sizes(A, B)
ain = xa[na * B:]
tape_a = z(sa[1])
T.forward(ap, A, ain, tape_a)
for i in range(na * B):
    xa[i] = tape_a[len(tape_a) - na * B + i]
tq = z(s[1])
T.forward(cp[0], C, xa, tq)
dq = z(B)
T.fill(dq, -1 / B)
dx = z((na + o) * B)
T.backward(cp[0], C, xa, tq, dq, None, dx, z(s[2]))
g = z(sa[0])
T.backward(ap, A, ain, tape_a, dx[:na * B], g, None, z(sa[2]))
T.adam(ap, g, am, av, ast)
T.polyak(at, ap, tau)
for c in range(2):
    T.polyak(ct[c], cp[c], tau)
with open(d + '/out.bin', 'wb') as f:
    for x in [ap, at, am, av] + cp + ct + cm + cv + [ast, cst[0]]:
        f.write(x)
print('ok')
"""


def _device_net(net, flat, member):
    """One member of a host family in the training layout: per layer W (in, out) row-major, then b."""
    layers = net.mlp.weights_and_biases(MLP.member(net.mlp.views(flat), member))
    return np.concatenate([np.concatenate([w.ravel(), b]) for w, b in layers]).astype(np.float32)


def _layout(net):
    sizes, acts = net.layout()
    return np.array([len(acts), *sizes, *acts], np.uint16)


def test_native_update_is_the_unix_builds_nm_train_bit_for_bit(tmp_path):
    mp = _micropython()
    cfg = Config(backend="native", learning_starts=50, buffer_size=400)
    algo = TD3(cfg, lambda n: PendulumVec(n), [11])
    for _ in range(180):  # trained networks, Adam moments and targets that differ from the online nets
        algo.advance()
    algo.sync_host()  # the host arrays, up to date
    rng = np.random.default_rng(1)
    B, o, na, W = cfg.batch_size, algo.obs_dim, algo.act_dim, algo.row.width
    idx = rng.integers(0, 1 << 32, (1, 3, B), np.uint32)
    noise = rng.standard_normal((1, 2, B, na), np.float32)
    a, c = algo.actor, algo.critic
    actor_st, critic_st = a.native_arrays()[5], c.native_arrays()[5]

    files = {
        "alayout": _layout(a), "clayout": _layout(c),
        "ap": _device_net(a, a.params, 0), "at": _device_net(a, a.target, 0),
        "am": _device_net(a, a.opt.m, 0), "av": _device_net(a, a.opt.v, 0), "ast": actor_st,
        "cst": critic_st,
        "rows": algo.replay.data[0][idx[0] % algo.replay.size].astype(np.float32),
        "noise": np.ascontiguousarray(noise[0].transpose(2, 0, 1)),  # feature-major (na, 2, B)
    }
    for k in range(2):
        for key, flat in (("cp", c.params), ("ct", c.target), ("cm", c.opt.m), ("cv", c.opt.v)):
            files[f"{key}{k}"] = _device_net(c, flat, (0, k))
    for name, arr in files.items():
        (tmp_path / f"{name}.bin").write_bytes(arr.tobytes())

    script = SCRIPT.format(dir=str(tmp_path), B=B, o=o, na=na, width=W, gamma=cfg.gamma, tau=cfg.tau,
                           pn=cfg.policy_noise, nc=cfg.noise_clip)
    proc = subprocess.run([str(mp), "-X", "heapsize=64M", "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout[-2000:] + proc.stderr[-2000:]

    fams = [TrainFamily(a), TrainFamily(c)]
    for fam in fams:
        fam.load()
    host_st = [fams[0].adam_state, fams[1].adam_state]
    np.testing.assert_array_equal(host_st[0], actor_st)
    nets = (fams[0].arrays(), fams[1].arrays(), a.layout(), c.layout(), np.zeros((1, 2), np.float32))
    _nm_host.td3_update(nets, algo.replay.data, algo.replay.size, idx, noise, True, False,
                        (cfg.gamma, cfg.tau, cfg.policy_noise, cfg.noise_clip),
                        np.zeros(_nm_host.td3_workspace(a.layout(), c.layout(), len(idx[0, 0]), 1), np.float32))
    for fam in fams:
        fam.store()
    host = [_device_net(a, f, 0) for f in (a.params, a.target, a.opt.m, a.opt.v)]
    for key in ("params", "target", "opt.m", "opt.v"):
        for k in range(2):
            flat = c.params if key == "params" else c.target if key == "target" else getattr(c.opt, key[4:])
            host.append(_device_net(c, flat, (0, k)))
    # the device writes critics grouped by kind: cp0 cp1 ct0 ct1 cm0 cm1 cv0 cv1
    names = ["actor", "actor target", "actor m", "actor v"] + [
        f"critic {k + 1} {part}" for part in ("params", "target", "m", "v") for k in range(2)]
    out = np.frombuffer((tmp_path / "out.bin").read_bytes(), np.float32)
    pos = 0
    for name, h in zip(names, host):
        dev = out[pos:pos + h.size]
        pos += h.size
        assert dev.tobytes() == h.tobytes(), (
            f"{name}: {np.count_nonzero(dev != h)} of {h.size} floats differ (max {np.max(np.abs(dev - h)):.3g}); "
            f"a unix build from before this tree's kernels? rebuild with `make firmware BOARD=unix`")
    np.testing.assert_array_equal(out[pos:pos + 6], host_st[0], err_msg="actor Adam state")
    np.testing.assert_array_equal(out[pos + 6:pos + 12], host_st[1], err_msg="critic Adam state")
    assert pos + 12 == out.size
    # the update moved every network
    assert not np.array_equal(files["ap"], host[0]) and not np.array_equal(files["cp0"], host[4])

"""One device TD3 update (nm_td3 + nm_train on the unix MicroPython build) equals the
host TD3 update (neuromotor.algos.td3) from the same weights, minibatch and noise.

The host seam: TD3._update_critics(batch, target_noise) and TD3._update_actor(batch)
and TD3._update_targets(), exactly the calls TD3.advance makes once learning has started.
"""

import numpy as np
import pytest

from neuromotor.algos.td3 import TD3, Config
from neuromotor.envs.pendulum import PendulumVec
from neuromotor.nn import MLP

from .conftest import run_mp

PROFILES = {"teensy41": ((64, 64), 100), "small": ((32, 32), 32)}


def _layers(net, flat, index):
    """[(W (in, out), b (out,)), ...] of one member, for both host MLP layouts
    (separate W and b views, or augmented matrices with weights_and_biases)."""
    member = MLP.member(net.views(flat), index)
    if hasattr(net, "weights_and_biases"):
        return net.weights_and_biases(member)
    return [(w, b.reshape(-1)) for w, b in member]


def _critic_input_perm(td3):
    """Host critic input row for each device input row [s0, s1, s2, a]."""
    o, a = td3.obs_dim, td3.act_dim
    if td3.row.width == o + a + 2 + o:          # host critic input [s, a]
        return list(range(o + a))
    return [a + i for i in range(o)] + list(range(a))   # host critic input [a, s]


def _host_batch(td3, rows):
    """Replay rows in the device layout [s, a, r, not_done, s'] -> the host's row layout."""
    o, a = td3.obs_dim, td3.act_dim
    if td3.row.width == o + a + 2 + o:
        return rows
    one = np.ones((len(rows), 1), np.float32)
    return np.concatenate([rows[:, o:o + a], rows[:, :o], one, rows[:, o + a:o + a + 2], rows[:, o + a + 2:], one], axis=1)


def _flatten(layers, perm=None):
    parts = []
    for i, (w, b) in enumerate(layers):
        w = np.asarray(w)
        if i == 0 and perm is not None:
            w = w[perm]
        parts += [w.ravel(), np.asarray(b).ravel()]
    return np.concatenate(parts).astype(np.float32)


def _critic_to_device(td3, flat):
    """Host critic vector (population (1, 2)) -> device [critic 1][critic 2], inputs [s; a]."""
    perm = _critic_input_perm(td3)
    return np.concatenate([_flatten(_layers(td3.critic.mlp, flat, (0, c)), perm) for c in range(2)])


def _actor_to_device(td3, flat):
    return _flatten(_layers(td3.actor.mlp, flat, 0))


DEVICE_SCRIPT = """
import nm_td3
from array import array
d = {dir!r}
def load(path, arr):
    with open(d + '/' + path, 'rb') as f:
        f.readinto(arr)
t = nm_td3.Trainer({profile!r}, seed=0, check_memory=False, critic_batches={nb}{kern})
for name in ('actor', 'actor_t', 'critic', 'critic_t'):
    load(name + '.bin', getattr(t, name))
n = {n_rows}
load('replay.bin', memoryview(t.replay)[:n * t.row])
t.stored = n
for k in range({steps}):
    load('idx%d.bin' % k, t.idx)
    load('noise%d.bin' % k, t.noise)
    t.update(actor=(k % 2 == 0), sample=False)
for name in ('actor', 'actor_t', 'critic', 'critic_t', 'critic_m', 'critic_v', 'actor_m'):
    with open(d + '/out_' + name + '.bin', 'wb') as f:
        f.write(getattr(t, name))
print('OK', t.updates, t.loss[0])
"""


def _run(micropython_train, tmp_path, profile, steps, python_kernels=False):
    hidden, B = PROFILES[profile]
    cfg = Config(actor_hidden=hidden, critic_hidden=hidden, batch_size=B)
    td3 = TD3(cfg, PendulumVec, [7])
    rng = np.random.default_rng(3)
    # targets differ from the online nets so that every network's role is checked
    for net, flat, members in ((td3.actor.mlp, td3.actor.target, [0]), (td3.critic.mlp, td3.critic.target, [(0, 0), (0, 1)])):
        for m in members:
            for w, b in _layers(net, flat, m):  # views: only the weights and biases change
                w += rng.normal(0, 0.02, w.shape).astype(np.float32)
                b += rng.normal(0, 0.02, b.shape).astype(np.float32)
    # the host draws one minibatch for both critics, or one per critic (RLtools)
    nb = 2 if td3._x_next.shape[-2] == 2 * B else 1
    n_rows = 500
    o = 3
    rows = np.zeros((n_rows, 9), np.float32)
    rows[:, :o] = rng.uniform(-1, 1, (n_rows, o)) * [1, 1, 8]
    rows[:, 3] = rng.uniform(-1, 1, n_rows)
    rows[:, 4] = rng.uniform(-16, 0, n_rows)
    rows[:, 5] = rng.integers(0, 2, n_rows)  # some terminal rows: not_done matters
    rows[:, 6:] = rng.uniform(-1, 1, (n_rows, o)) * [1, 1, 8]

    files = {"actor.bin": _actor_to_device(td3, td3.actor.params), "actor_t.bin": _actor_to_device(td3, td3.actor.target),
             "critic.bin": _critic_to_device(td3, td3.critic.params), "critic_t.bin": _critic_to_device(td3, td3.critic.target),
             "replay.bin": rows}
    for k in range(steps):
        idx = rng.integers(0, n_rows, (nb, B)).astype(np.uint32)
        noise = rng.standard_normal((nb, B, 1)).astype(np.float32)
        noise[:, 0] = 5.0  # beyond the noise clip
        files[f"idx{k}.bin"] = idx
        files[f"noise{k}.bin"] = noise
        # host: the same calls as TD3.advance
        batch = _host_batch(td3, rows)[idx if nb == 2 else idx[0]][None]
        td3._update_critics(batch, noise[None] if nb == 2 else noise[0][None])
        if k % 2 == 0:
            td3._update_actor(batch[:, 0] if nb == 2 else batch)
            td3._update_targets()
    for name, arr in files.items():
        (tmp_path / name).write_bytes(np.ascontiguousarray(arr).tobytes())
    kern = ", kernels_=nm_td3.PyKernels()" if python_kernels else ""
    out = run_mp(micropython_train, DEVICE_SCRIPT.format(dir=str(tmp_path), profile=profile, n_rows=n_rows,
                                                           steps=steps, kern=kern, nb=nb))
    assert out.split()[-3] == "OK" and out.split()[-2] == str(steps), out
    get = lambda name: np.fromfile(tmp_path / f"out_{name}.bin", np.float32)  # noqa: E731
    return td3, get


def _check(a, b, what):
    err = np.max(np.abs(a - b))
    assert a.shape == b.shape, what
    assert err <= 1e-4, f"{what}: max abs difference {err:.3g} > 1e-4"


@pytest.mark.parametrize("profile", ["teensy41", "small"])
def test_device_update_equals_host(micropython_train, tmp_path, profile):
    steps = 3  # actor + critic, critic only, actor + critic again (Adam t = 1, 2, 3)
    td3, get = _run(micropython_train, tmp_path, profile, steps)
    _check(get("actor"), _actor_to_device(td3, td3.actor.params), "actor after the updates")
    _check(get("actor_t"), _actor_to_device(td3, td3.actor.target), "target actor")
    _check(get("critic"), _critic_to_device(td3, td3.critic.params), "twin critics")
    _check(get("critic_t"), _critic_to_device(td3, td3.critic.target), "target critics")
    # Adam moments too (the update is not just close in parameters by accident)
    _check(get("critic_m"), _critic_to_device(td3, td3.critic.opt.m), "critic Adam m")
    hv = _critic_to_device(td3, td3.critic.opt.v)
    _check(get("critic_v") / hv.max(), hv / hv.max(), "critic Adam v (relative to its largest entry)")
    _check(get("actor_m"), _actor_to_device(td3, td3.actor.opt.m), "actor Adam m")
    # and the update did move the parameters well beyond the tolerance
    td3_0 = TD3(Config(actor_hidden=PROFILES[profile][0], critic_hidden=PROFILES[profile][0]), PendulumVec, [7])
    assert np.max(np.abs(get("actor") - _actor_to_device(td3_0, td3_0.actor.params))) > 1e-3


def test_python_fallback_equals_host(micropython_train, tmp_path):
    """The pure-Python kernels give the same update (tiny custom-size run: they are slow)."""
    td3, get = _run(micropython_train, tmp_path, "small", 1, python_kernels=True)
    _check(get("actor"), _actor_to_device(td3, td3.actor.params), "actor (python kernels)")
    _check(get("critic"), _critic_to_device(td3, td3.critic.params), "critics (python kernels)")


def test_natmod_kernels_equal_usermod(micropython_train, tmp_path):
    """The x64 natmod (nm_train_natmod.mpy) trains like the built-in module."""
    from neuromotor.paths import cache_dir
    natdir = cache_dir() / "natmods" / "x64"
    if not (natdir / "nm_train_natmod.mpy").exists():
        pytest.skip(f"x64 training natmod not built ({natdir}/nm_train_natmod.mpy missing): run `make natmods`")
    script = """
import sys
sys.path.append({natdir!r})
import nm_td3, nm_train, nm_train_natmod
res = []
for K in (nm_train, nm_train_natmod):
    t = nm_td3.Trainer('small', seed=3, kernels_=K)
    t.train(160)
    res.append(list(t.actor) + list(t.critic) + [t.evaluate(1)])
d = max(abs(a - b) for a, b in zip(res[0], res[1]))
print('DIFF', d, len(res[0]))
""".format(natdir=str(natdir))
    out = run_mp(micropython_train, script)
    line = [ln for ln in out.splitlines() if ln.startswith("DIFF")][-1].split()
    assert int(line[2]) > 3000
    assert float(line[1]) <= 1e-4, out

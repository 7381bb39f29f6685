"""The board's TD3 (device/lib/nm_td3.py, unix MicroPython build) trains like the host's
(neuromotor.algos.td3): compared step by step, every update at 1e-6.

Both sides run their own training loop unchanged: the host `TD3.advance()`, the board
`Trainer.step()`, each with its own pendulum (PendulumVec, nm_pendulum). They differ in
their random generators (NumPy's PCG64 on the host, xoshiro128+ on the board), so the
board is driven by the host's draws:

  * The host's Generator is wrapped in a recorder that passes every call through and keeps
    its result (the host computes exactly what it computes alone).
  * The draws are written, in the order the board consumes them, to a file; the board's
    Trainer takes them through its `rng` argument (ReplayRng below, with nm_td3.Rng's
    methods) instead of xoshiro128+:
      initial weights  the host's U(+-1/sqrt(fan_in)) draws, layer by layer (the critics'
                       first layer reordered from the host's inputs [a, s] to the board's [s; a])
      env resets       the host pendulum's state after each reset (theta, theta_dot)
      each step        the uniform warm-up action before learning_starts, the exploration
                       noise from then on; on update steps the raw 32-bit draws of the three
                       minibatches (critic 1, critic 2, actor; the board takes them modulo
                       the rows stored, as the host does) and the target policy noise of
                       both critic minibatches
    ReplayRng checks each draw's kind and length, so a board that consumed them in another
    order or at other steps fails with that message.

Lockstep: before each step the board's floats are set to the host's after the previous step
(each network, target and Adam moment vector, the replay row written last, the pendulum's
state and the observation); counters and schedules (step, replay position and fill, episode
length, Adam's bias corrections) are the board's own. So every step compares one update
from identical numbers. Left to run freely the two agree to about 1e-6 for some tens of
updates and then separate: float32 rounding (a different summation order) is amplified by
Adam's normalisation of near-zero gradients and by the pendulum's instability near upright.

Runs (RUNS): warm-up steps, then one update per step with the actor and the targets every
2nd, replay rings that wrap, an episode boundary (step 200) in the longest. After every
step:
  transition stored (s, a, r, not_done, s')   1e-6 relative (to max(1, |x|))
  each network's parameters and its target    1e-6 absolute (they differ by about 1e-7)
  Adam m                                      1e-6 of the vector's largest entry
  Adam v                                      1e-5 of its largest entry: the board's Adam
                                              state is float32, where 1 - beta2 is 1.3e-5
                                              off the host's (1.5e-6 seen)
At the end: steps, updates, draws used, episode returns (1e-5 relative: the board sums
in Python floats, the host float32 rewards in float64).
"""

import ast

import numpy as np
import pytest

from neuromotor.algos.td3 import TD3, Config
from neuromotor.envs.pendulum import PendulumVec
from neuromotor.nn import MLP

from .conftest import run_mp

# name: (hidden, batch, replay rows, learning_starts, steps, kernels)
RUNS = {
    "small": ((32, 32), 32, 100, 60, 260, "native"),
    "teensy41-nets": ((64, 64), 100, 100, 60, 140, "native"),
    "python-kernels": ((8, 8), 8, 30, 10, 70, "python"),
}
TOL = 1e-6
V_TOL = 1e-5
UNIFORM, NORMAL, RAW32 = 0, 1, 2
NET_NAMES = [f"{net} {part}" for net in ("actor", "critic 1", "critic 2")
             for part in ("parameters", "target", "Adam m", "Adam v")]


def _layers(net, flat, index):
    """[(W (in, out), b (out,)), ...] of one member of a host network family."""
    return net.mlp.weights_and_biases(MLP.member(net.mlp.views(flat), index))


def _device_layers(layers, first_rows=None):
    """Per layer the board's flat [W (in, out) row-major, b] (float32)."""
    out = []
    for i, (w, b) in enumerate(layers):
        w = np.asarray(w)
        if i == 0 and first_rows is not None:
            w = w[first_rows]
        out.append(np.concatenate([w.ravel(), np.asarray(b).ravel()]).astype(np.float32))
    return out


class Host:
    """The host's TD3 and the maps from its layouts to the board's."""

    def __init__(self, hidden, batch, replay, learning_starts, seed=11):
        self.cfg = Config(actor_hidden=hidden, critic_hidden=hidden, batch_size=batch, buffer_size=replay,
                          learning_starts=learning_starts)
        self.td3 = td3 = TD3(self.cfg, PendulumVec, [seed])
        # the host critic's input is the replay row's critic_input slice; the board's is [s; a]
        f = td3.row
        start = f.critic_input.start
        self.critic_rows = [i - start for sl in (f.obs, f.act) for i in range(sl.start, sl.stop)]

    def actor(self, flat):
        return _device_layers(_layers(self.td3.actor, flat, 0))

    def critic(self, flat, c):
        return _device_layers(_layers(self.td3.critic, flat, (0, c)), self.critic_rows)

    def nets(self):
        """Per network (actor, critic 1, critic 2): parameters, target, Adam m, Adam v, as the board holds them."""
        self.td3.sync_host()
        a, c = self.td3.actor, self.td3.critic
        out = [np.concatenate(self.actor(x)) for x in (a.params, a.target, a.opt.m, a.opt.v)]
        for k in (0, 1):
            out += [np.concatenate(self.critic(x, k)) for x in (c.params, c.target, c.opt.m, c.opt.v)]
        return out

    def last_row(self):
        """The transition stored last, in the board's row layout [s, a, r, not_done, s']."""
        td3, f = self.td3, self.td3.row
        row = td3.replay.data[0, (td3.replay.pos - 1) % self.cfg.buffer_size]
        return np.concatenate([row[f.obs], row[f.act], row[f.reward], row[f.not_done], row[f.next_obs]])

    def env_state(self):
        """What the board's step starts from beside the networks: pendulum state (float64), observation."""
        return self.td3.env.get_state()[0].astype(np.float64), self.td3.obs[0].astype(np.float32)


class Recorder:
    """A Generator stand-in that forwards every call and keeps what the draws returned."""

    def __init__(self, gen):
        self._gen = gen
        self.calls = []

    def __getattr__(self, name):
        attr = getattr(self._gen, name)
        if name not in ("standard_normal", "uniform", "integers"):
            return attr

        def call(*args, **kwargs):
            out = attr(*args, **kwargs)
            self.calls.append((name, np.array(out)))
            return out
        return call


def _block_draws(calls, batch, act_dim):
    """The per-step random block: exploration noise, warm-up actions, minibatch draws, target noise."""
    found = {}
    for name, out in calls:
        if name == "standard_normal" and out.ndim == 2:
            found.setdefault("explore", []).append(out)
        elif name == "standard_normal" and out.ndim == 4:
            found.setdefault("target_noise", []).append(out)
        elif name == "uniform" and out.ndim == 2:
            found.setdefault("warmup", []).append(out)
        elif name == "integers":
            found.setdefault("raw_idx", []).append(out)
    assert {k: len(v) for k, v in found.items()} == {"explore": 1, "target_noise": 1, "warmup": 1, "raw_idx": 1}, \
        "the host drew its randomness differently than this test expects: " + repr([(n, o.shape) for n, o in calls])
    d = {k: v[0] for k, v in found.items()}
    assert d["raw_idx"].shape[1:] == (3, batch) and d["target_noise"].shape[1:] == (2, batch, act_dim)
    return d


def _host_run(run):
    """The host's run -> (draws in the board's order, the lockstep inputs before each step,
    the transition and networks after each step, episode returns)."""
    hidden, batch, replay, learning_starts, steps, _ = run
    host = Host(hidden, batch, replay, learning_starts)
    td3 = host.td3
    draws = []  # (kind, values)

    def draw(kind, values, dtype):
        draws.append((kind, np.ascontiguousarray(values, dtype).ravel()))

    for layers in [host.actor(td3.actor.params), host.critic(td3.critic.params, 0), host.critic(td3.critic.params, 1)]:
        for layer in layers:
            draw(UNIFORM, layer, np.float32)
    for v in td3.env.get_state()[0]:
        draw(UNIFORM, [v], np.float32)
    rec = Recorder(td3.rngs[0])
    td3.rngs[0] = rec
    before = [(host.nets(), None, *host.env_state())]
    rows, nets, resets = [], [], []
    for k in range(steps):
        td3.advance()
        rows.append(host.last_row())
        nets.append(host.nets())
        before.append((nets[-1], rows[-1], *host.env_state()))
        resets.append(td3.env.get_state()[0].copy() if td3.episodes.ep_len[0] == 0 else None)
    block = _block_draws(rec.calls, batch, td3.act_dim)
    for k in range(steps):
        if k < learning_starts:
            draw(UNIFORM, block["warmup"][k], np.float32)
        else:
            draw(NORMAL, block["explore"][k], np.float32)
        if resets[k] is not None:
            for v in resets[k]:
                draw(UNIFORM, [v], np.float32)
        if k >= learning_starts:
            draw(RAW32, block["raw_idx"][k], np.uint32)
            # host (2, B, a) sample-major -> board per minibatch (a, B) feature-major
            draw(NORMAL, block["target_noise"][k].transpose(0, 2, 1), np.float32)
    return draws, before[:steps], np.array(rows), nets, td3.pop_episode_returns()[0], td3


def _lockstep_bytes(state):
    nets, row, env_state, obs = state
    return b"".join(x.tobytes() for x in nets) + (b"" if row is None else row.tobytes()) + env_state.tobytes() \
        + obs.tobytes()


DEVICE_SCRIPT = """
import nm_td3
from array import array
d = {dir!r}

class ReplayRng:
    # nm_td3.Rng's methods, answered from the host's recorded draws in order
    def __init__(self):
        with open(d + '/kinds.bin', 'rb') as f:
            self.kinds = array('H', f.read())
        self.f = open(d + '/draws.bin', 'rb')
        self.n = 0

    def _next(self, kind, out):
        k, n = self.kinds[2 * self.n], self.kinds[2 * self.n + 1]
        if k != kind or n != len(out):
            raise ValueError('draw %d: the board asks for kind %d x %d, the host drew kind %d x %d'
                             % (self.n, kind, len(out), k, n))
        self.n += 1
        self.f.readinto(out)

    def uniform(self, out, lo, hi):
        self._next({uniform}, out)
        slack = 1e-6 * max(abs(lo), abs(hi))
        for v in out:
            if not lo - slack <= v <= hi + slack:
                raise ValueError('draw %d: uniform %r outside [%r, %r]' % (self.n - 1, v, lo, hi))

    def normal(self, out):
        self._next({normal}, out)

    def randint(self, out, n):
        self._next({raw32}, out)
        for i in range(len(out)):
            out[i] = out[i] % n

rng = ReplayRng()
prof = {{'hidden': {hidden!r}, 'batch': {batch}, 'replay': {replay}}}
K = nm_td3.kernels({kernels!r})
t = nm_td3.Trainer(prof, check_memory=False, rng=rng, kernels_=K, learning_starts={learning_starts})
bufs = []
for net in [t.actor] + t.critics:
    bufs += [net.params, net.target, net.adam_m, net.adam_v]
lock = open(d + '/lockstep.bin', 'rb')
rows = memoryview(t.replay)
with open(d + '/board.bin', 'wb') as out:
    for k in range({steps}):
        for b in bufs:
            lock.readinto(b)
        if k:
            p = (t.pos - 1) % t.capacity
            lock.readinto(rows[p * t.row:(p + 1) * t.row])
        lock.readinto(t.env.state)
        lock.readinto(t.obs)
        t.step()
        p = (t.pos - 1) % t.capacity
        out.write(rows[p * t.row:(p + 1) * t.row])
        for b in bufs:
            out.write(b)
print('DONE', t.steps, t.updates, t.episodes, rng.n, len(rng.kinds) // 2, repr(t.returns))
"""


@pytest.fixture(scope="module", params=list(RUNS))
def compared(request, micropython_train, tmp_path_factory):
    name = request.param
    run = RUNS[name]
    hidden, batch, replay, learning_starts, steps, kernels = run
    draws, before, rows, nets, returns, td3 = _host_run(run)
    d = tmp_path_factory.mktemp(f"td3-{name}")
    (d / "kinds.bin").write_bytes(np.array([(k, len(v)) for k, v in draws], np.uint16).tobytes())
    (d / "draws.bin").write_bytes(b"".join(v.tobytes() for _, v in draws))
    (d / "lockstep.bin").write_bytes(b"".join(_lockstep_bytes(s) for s in before))
    out = run_mp(micropython_train, DEVICE_SCRIPT.format(
        dir=str(d), uniform=UNIFORM, normal=NORMAL, raw32=RAW32, hidden=hidden, batch=batch, replay=replay,
        kernels=kernels, learning_starts=learning_starts, steps=steps), timeout=900)
    done = [ln for ln in out.splitlines() if ln.startswith("DONE")]
    assert done, out
    words = done[-1].split(maxsplit=6)
    board = {"steps": int(words[1]), "updates": int(words[2]), "episodes": int(words[3]),
             "draws_used": int(words[4]), "draws": int(words[5]), "returns": ast.literal_eval(words[6])}
    sizes = [rows.shape[1]] + [x.size for x in nets[0]]
    raw = np.fromfile(d / "board.bin", np.float32)
    assert raw.size == steps * sum(sizes), "the board wrote another amount of output"
    parts = np.split(raw.reshape(steps, sum(sizes)), np.cumsum(sizes)[:-1], axis=1)
    return {"run": run, "td3": td3, "rows": rows, "returns": returns, "board": board,
            "board_rows": parts[0], "board_nets": parts[1:],
            "nets": [np.array([n[i] for n in nets]) for i in range(len(NET_NAMES))]}


def _worst(diff):
    """(value, step) of the largest entry of a (steps, n) difference."""
    per_step = diff.max(axis=1)
    k = int(per_step.argmax())
    return float(per_step[k]), k


def test_schedule_and_draws(compared):
    """The board consumed exactly the host's draws, updated as often, and ended the same episodes."""
    hidden, batch, replay, learning_starts, steps, _ = compared["run"]
    b = compared["board"]
    assert b["draws_used"] == b["draws"], "the board left some of the host's draws unused"
    assert b["steps"] == compared["td3"].steps == steps
    assert b["updates"] == steps - learning_starts >= 50
    assert steps > replay  # the ring wrapped
    assert len(b["returns"]) == len(compared["returns"]) == steps // 200
    np.testing.assert_allclose(b["returns"], compared["returns"], rtol=1e-5)


def test_every_transition_equals_host(compared):
    """Same observations, actions (warm-up and exploration noise), rewards and next observations."""
    host_rows, board_rows = compared["rows"], compared["board_rows"]
    err, k = _worst(np.abs(board_rows - host_rows) / np.maximum(1, np.abs(host_rows)))
    assert err <= TOL, f"step {k}: stored transition differs by {err:.3g} (relative) > {TOL}\n" \
                       f"board {board_rows[k]}\nhost  {host_rows[k]}"
    o, a = 3, 1
    assert np.ptp(host_rows[:, o:o + a]) > 1.0 and np.ptp(host_rows[:, o + a]) > 1.0  # actions and rewards vary


def test_every_update_equals_host(compared):
    """After every step, each network, target and Adam moment as the host's (moments relative
    to their largest entry), while training moved them far beyond the tolerance."""
    learning_starts = compared["run"][3]
    for name, h, b in zip(NET_NAMES, compared["nets"], compared["board_nets"]):
        moment = "Adam" in name
        scale = np.abs(h).max() if moment else 1.0
        tol = V_TOL if name.endswith("Adam v") else TOL
        err, k = _worst(np.abs(b - h) / scale)
        assert err <= tol, f"{name} differs by {err:.3g} > {tol} after step {k}"
        moved = np.abs(h[-1] - h[learning_starts - 1]).max() / scale
        assert moved > 100 * tol, f"{name} moved only {moved:.3g}"
        assert np.array_equal(h[learning_starts - 1], h[0]), f"{name} changed before learning_starts"


def test_delay_schedule(compared):
    """The critics learn at every step from learning_starts on, the actor and the targets at
    every 2nd (the steps the host updates them, and the board's copy agrees at each)."""
    learning_starts = compared["run"][3]
    changed = {name: np.abs(np.diff(h[learning_starts - 1:], axis=0)).max(axis=1) > 0
               for name, h in zip(NET_NAMES, compared["nets"])}
    every_2nd = [(learning_starts + i) % 2 == 0 for i in range(len(changed["actor parameters"]))]
    assert changed["critic 1 parameters"].all() and changed["critic 2 parameters"].all()
    for name in ("actor parameters", "actor target", "critic 1 target", "critic 2 target"):
        assert changed[name].tolist() == every_2nd, name


def test_natmod_kernels_equal_usermod(micropython_train):
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
    res.append(list(t.actor.params) + list(t.critics[0].params) + list(t.critics[1].params) + [t.evaluate(1)])
d = max(abs(a - b) for a, b in zip(res[0], res[1]))
print('DIFF', d, len(res[0]))
""".format(natdir=str(natdir))
    out = run_mp(micropython_train, script)
    line = [ln for ln in out.splitlines() if ln.startswith("DIFF")][-1].split()
    assert int(line[2]) > 3000
    assert float(line[1]) <= 1e-4, out

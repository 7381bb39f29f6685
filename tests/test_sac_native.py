"""SAC's native backend (neuromotor.native._nm_host's sac_update and sac_act) against the NumPy
reference: the same update, agents independent of each other, exact resume, and every bad
array refused with a ValueError before anything is written."""

import numpy as np
import pytest

from neuromotor.algos.sac import SAC, Config
from neuromotor.envs.pendulum import PendulumVec
from neuromotor.envs.quadrotor import QuadrotorVec
from neuromotor.nn.mlp import with_ones
from native_checks import alone_equals_inside_a_population, refuse_bad_cases, replay_and_env_cases, \
    round_trip_continues_exactly, update_errors

_nm_host = pytest.importorskip("neuromotor.native._nm_host")

KEYS = ["actor", "critic", "critic_target", "log_alpha", "actor_opt_m", "actor_opt_v", "critic_opt_m",
        "critic_opt_v", "alpha_opt_m", "alpha_opt_v", "replay"]  # replay: the transitions, native actions included

ACTOR = ("actor", "actor_opt_m", "actor_opt_v")  # what the actor's gradient reaches


def _sac(seeds, backend, **cfg):
    return SAC(Config(backend=backend, **cfg), lambda n: PendulumVec(n), seeds)


@pytest.mark.parametrize("isa, shared", [(0, False), (2, False), (0, True)],
                         ids=["best", "sse2", "best-shared_minibatch"])
def test_native_update_equals_numpy_over_1000_updates(isa, shared):
    """Every update from the same state (the native side is set to NumPy's before each step),
    1,000 updates, replay wrapping, episode boundaries. After each, relative to max(1, the
    vector's largest entry): the critics, their targets, log_alpha, the critics' and alpha's
    Adam moments and the replay within 1e-4 everywhere and 1e-6 for 99% of entries; the actor
    and its Adam moments within 1e-3 everywhere (the actor's weights 1e-4) and 1e-5 for 90%.
    Exact agreement is out of reach: the two sum in different orders (OpenBLAS's blocking against
    the kernels' chains; NumPy's pairwise means against running sums) and the kernels' exp, tanh
    and log (nm_math.h, nm_act.h: no libm) differ from NumPy's by an ulp or two. Most entries
    differ by float32 rounding; a few operations magnify it: a ReLU or min(Q1, Q2) on the other
    side of its switch, Adam's division by the root of a tiny second moment, and above all
    1 - tanh^2 of a saturated action, where an ulp of tanh is a percent of the derivative. The
    last reaches the actor's gradient only, hence its wider bounds (measured: 3.1e-4 worst, on one
    entry of the actor's Adam m; 5% of those entries past 1e-5 at some update; 1.8e-5 worst on
    the actor's weights, 1.1e-5 on the critics'). Run freely, the two separate after some tens
    of updates, as any two float32 summation orders do, so each update is compared from
    identical numbers. Either update scheme: three minibatches per step (RLtools') or one for
    both critics and the actor (shared_minibatch)."""
    updates = 1000 if isa == 0 else 200
    kw = dict(learning_starts=20, buffer_size=500, shared_minibatch=shared)
    tags = ("loss/critic", "loss/actor", "loss/alpha", "policy/entropy")
    worst, spread, ref, nat = update_errors(_sac, isa, KEYS, tags, updates, loose=ACTOR, **kw)
    assert ref.critic.opt.t == nat.critic.opt.t == nat.actor.opt.t == nat.alpha_opt.t == updates
    assert all(v <= (1e-3 if key in ACTOR[1:] else 1e-4) for key, v in worst.items()), worst
    assert all(v <= (0.1 if key in ACTOR else 0.01) for key, v in spread.items()), str(spread)
    # and the update did something on both sides
    fresh = _sac([0, 3], "numpy", **kw)
    assert np.max(np.abs(ref.critic.params - fresh.critic.params)) > 1e-3
    assert np.all(np.abs(nat.log_alpha - fresh.log_alpha) > 1e-3)


@pytest.mark.parametrize("shared", [False, True], ids=["rltools", "shared_minibatch"])
def test_agent_alone_equals_agent_inside_a_population(shared):
    alone_equals_inside_a_population(_sac, "native", shared)


@pytest.mark.parametrize("shared", [False, True], ids=["rltools", "shared_minibatch"])
def test_native_state_dict_round_trip_continues_exactly(shared):
    round_trip_continues_exactly(_sac, shared)


def test_native_act_samples_as_numpy_does():
    algo = _sac([0, 1, 2], "native", learning_starts=10, log_std_max=0.0)
    for _ in range(60):
        algo.advance()
    rng = np.random.default_rng(2)
    obs = rng.standard_normal((3, 3)).astype(np.float32)
    noise = np.array([[0.1], [50.0], [-50.0]], np.float32)  # the last two saturate tanh
    got = algo.native.act(obs, noise)
    algo.sync_host()
    out = algo.actor.mlp.forward(algo.actor.layers, with_ones(obs)[:, None])[:, 0]
    log_std = np.clip(out[:, 1:], algo.cfg.log_std_min, algo.cfg.log_std_max)
    want = np.tanh(out[:, :1] + np.exp(log_std) * noise)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    assert np.any(np.abs(got) > 0.9999) and np.any(np.abs(got) < 0.9)


def test_native_needs_float32():
    from neuromotor.errors import UserError
    with pytest.raises(UserError, match="float32"):
        SAC(Config(backend="native"), lambda n: PendulumVec(n), [0], dtype=np.float64)


# ----- bad arrays -----
def _call_args(algo):
    """The arguments of one update, as NativeSAC.update passes them."""
    P, B, a = algo.P, algo.cfg.batch_size, algo.act_dim
    rng = np.random.default_rng(0)
    actor, critic, alayout, clayout, losses = algo.native.nets
    return dict(actor=list(actor), critic=list(critic), alayout=alayout, clayout=clayout, losses=losses,
                alpha=list(algo.native.alpha), replay=algo.replay.data, size=algo.replay.size,
                idx=rng.integers(0, 1 << 32, (P, 3, B), np.uint32),
                next_noise=rng.standard_normal((P, 2, B, a), np.float32),
                actor_noise=rng.standard_normal((P, B, a), np.float32), work=algo.native.workspace,
                hyper=algo.native.hyper)


def _call(d):
    nets = (tuple(d["actor"]), tuple(d["critic"]), d["alayout"], d["clayout"], d["losses"])
    return _nm_host.sac_update(nets, tuple(d["alpha"]), d["replay"], d["size"], d["idx"], d["next_noise"],
                               d["actor_noise"], False, d["hyper"], d["work"])


def _bad_cases(d):
    actor, critic, alpha = d["actor"], d["critic"], d["alpha"]
    ro = critic[0].copy()
    ro.flags.writeable = False
    yield "float64 params", "actor", 0, actor[0].astype(np.float64), "float32"
    yield "non-contiguous", "actor", 0, np.zeros(2 * actor[0].size, np.float32)[::2], "C-contiguous"
    yield "read-only critic", "critic", 0, ro, "writable"
    yield "short", "critic", 3, critic[3][:-1], "axis 0"
    yield "grad overlaps m", "critic", 2, critic[3][:], "overlap"
    yield "log_alpha of 3 agents", "alpha", 0, np.zeros(3, np.float32), "axis 0"
    yield "log_alpha float64", "alpha", 0, alpha[0].astype(np.float64), "float32"
    yield "alpha grad is log_alpha", "alpha", 1, alpha[0], "overlap"
    yield "alpha adam state too short", "alpha", 4, np.zeros(5, np.float32), "axis 0"
    yield "int idx", "idx", None, d["idx"].astype(np.int64), "uint32"
    yield "idx of 2 minibatches", "idx", None, d["idx"][:, :2].copy(), "axis 1"
    yield "next_noise of another batch", "next_noise", None, d["next_noise"][:, :, :-1].copy(), "axis 2"
    yield "actor_noise float64", "actor_noise", None, d["actor_noise"].astype(np.float64), "float32"
    yield "actor_noise of 2 actions", "actor_noise", None, np.zeros(d["actor_noise"].shape[:2] + (2,), np.float32), \
        "axis 2"
    yield "replay row too wide", "replay", None, np.zeros(d["replay"].shape[:2] + (12,), np.float32), "axis 2"
    yield "replay_size 0", "size", None, 0, "replay_size"
    yield "replay_size over capacity", "size", None, d["replay"].shape[1] + 1, "replay_size"
    yield "actor of one output", "alayout", None, ((3, 64, 64, 1), (1, 1, 0)), "mean, log_std"
    yield "activation 3", "clayout", None, ((4, 64, 64, 1), (1, 1, 3)), "activations"
    yield "losses of 2 columns", "losses", None, np.zeros((2, 2), np.float32), "axis 1"
    yield "workspace too small", "work", None, d["work"][:-1], "workspace must hold"
    yield "workspace in the params", "work", None, actor[0], "workspace must hold|overlap"
    yield "workspace is the replay", "work", None, d["replay"].reshape(-1), "overlap"
    yield "hyper of 4", "hyper", None, d["hyper"][:4], "hyper"


def test_bad_arrays_are_value_errors_and_nothing_changes():
    algo = _sac([0, 1], "native", learning_starts=10, buffer_size=4000)
    for _ in range(30):
        algo.advance()
    good = _call_args(algo)

    def state():
        return [np.array(x) for x in (*good["actor"], *good["critic"], *good["alpha"], good["losses"])]
    before = state()
    assert refuse_bad_cases(good, _bad_cases(good), _call, state) == 24
    with pytest.raises(ValueError, match="tuple"):
        _call({**good, "alpha": good["alpha"][:4]})
    _call(good)  # and the good arguments do run
    after = state()
    assert not np.array_equal(before[0], after[0]) and not np.array_equal(before[12], after[12])


def test_native_act_checks_its_arrays():
    algo = _sac([0, 1, 2], "native", learning_starts=10)
    params, layout, work = algo.native.families[0].params, algo.actor.layout(), algo.native.workspace
    obs, noise, out = np.zeros((3, 3), np.float32), np.zeros((3, 1), np.float32), np.zeros((3, 1), np.float32)
    bad = [(params[:-1], obs, noise, out, work, "axis 0"), (params, obs.astype(np.float64), noise, out, work, "float32"),
           (params, obs[:, :2].copy(), noise, out, work, "axis 1"), (params, obs, noise[:2], out, work, "axis 0"),
           (params, obs, noise, noise, work, "overlap"), (params, obs, noise, out, work[:4], "workspace must hold"),
           (params, obs, noise, out, out.reshape(-1), "overlap|workspace must hold")]
    for p, o, n, a, w, message in bad:
        out[...] = 7
        with pytest.raises(ValueError, match=message):
            _nm_host.sac_act(p, layout, o, n, -20.0, 2.0, a, w)
        assert np.all(out == 7)
    _nm_host.sac_act(params, layout, obs, noise, -20.0, 2.0, out, work)
    assert np.all(np.abs(out) < 1)


# ----- the whole step in one call on the built-in pendulum -----
class _OtherPendulum(PendulumVec):
    """PendulumVec stepped in NumPy: SAC steps only the built-in class natively."""


@pytest.mark.parametrize("warmup", ["uniform", "policy"])
def test_native_step_equals_the_numpy_env_replay_and_episodes_bit_for_bit(warmup, step_alike):
    """sac_step (act, nm_pendulum.h, episode counting, replay store, update) against sac_act and
    sac_update around PendulumVec, AutoReset and Replay.store in NumPy: 1,300 steps, warm-up,
    episode ends (200) and an RNG block boundary (1,000); every state array equal."""
    kw = dict(learning_starts=50, warmup_actions=warmup)
    native = _sac([3, 7], "native", **kw)
    numpy_env = SAC(Config(backend="native", **kw), lambda n: _OtherPendulum(n), [3, 7])
    assert native.native.whole_step and not numpy_env.native.whole_step
    step_alike(native, numpy_env, 1300)


class _OtherQuadrotor(QuadrotorVec):
    """QuadrotorVec stepped through AutoReset: SAC steps only the built-in class in one call."""


QUAD_SMALL = dict(actor_hidden=(16, 16), critic_hidden=(16, 16), batch_size=16, learning_starts=50, episode_steps=60)


@pytest.mark.parametrize("warmup, start_draws", [("uniform", 2), ("policy", 1)])
def test_native_step_on_the_quadrotor_equals_the_python_loop_bit_for_bit(warmup, start_draws, step_alike):
    """sac_step on the quadrotor (act, nm_quadrotor.h with its model, mass and thrust per drone and
    action history, terminations, episode counting, replay store, update) against the same update
    around QuadrotorVec.step, AutoReset and Replay.store: 1,100 steps with crashes, time-outs (60)
    and restarts, randomised drones and an RNG block boundary (1,000); every state array equal."""
    kw = dict(QUAD_SMALL, warmup_actions=warmup, start_draws=start_draws)
    native = SAC(Config(backend="native", **kw), lambda n: QuadrotorVec(n, randomize=0.2), [3, 7])
    python = SAC(Config(backend="native", **kw), lambda n: _OtherQuadrotor(n, randomize=0.2), [3, 7])
    assert native.native.whole_step and not python.native.whole_step
    returns = step_alike(native, python, 1100)
    assert sum(map(len, returns)) > 2 * 1100 // 60 + 2  # more episodes than time-outs alone: drones crashed
    replay = native.replay.data[:, :1100]
    assert (replay[..., native.row.not_done] == 0).any()  # and crashes were stored as terminal


def _step(algo, **change):
    n = algo.native
    d = dict(nets=n.nets, alpha=n.alpha, replay=algo.replay.data, env=n.envs, block=algo._native_block, i=algo.steps,
             u=algo.steps, pos=algo.replay.pos, size=algo.replay.size, hyper=n.hyper, work=n.workspace)
    d.update(change)
    return _nm_host.sac_step(d["nets"], d["alpha"], d["replay"], d["env"], d["block"], d["i"], d["u"], d["pos"],
                             d["size"], False, True, False, d["hyper"], d["work"])


def test_native_step_refuses_bad_arrays_and_changes_nothing():
    algo = _sac([0, 1], "native", learning_starts=10)
    for _ in range(20):
        algo.advance()
    state, obs, ep_return, ep_len, max_steps = algo.native.envs
    block = algo._native_block
    cases = [
        *replay_and_env_cases(algo, algo.native.envs),
        ("obs is the workspace", {"env": (state, algo.native.workspace[:6].reshape(2, 3), ep_return, ep_len,
                                          max_steps)}, "overlap"),
        ("step past the block", {"i": len(block[0])}, "block"),
        ("update past the block", {"u": len(block[2])}, "block"),
        ("block of 4", {"block": block[:4]}, "block"),
        ("actor noise of another block", {"block": block[:4] + (block[4][:-1],)}, "axis 0"),
        ("small workspace", {"work": algo.native.workspace[:100]}, "workspace must hold"),
        ("hyper of strings", {"hyper": ("a",) * 7}, "float|must be real"),
    ]
    before = {k: np.array(v) for k, v in algo.state_dict().items()}
    train_before = [np.array(x) for x in (*algo.native.families[0].arrays(), *algo.native.families[1].arrays())]
    for label, change, message in cases:
        with pytest.raises((ValueError, TypeError), match=message):
            _step(algo, **change)
        after = (*algo.native.families[0].arrays(), *algo.native.families[1].arrays())
        for x, y in zip(train_before, after):
            np.testing.assert_array_equal(x, y, err_msg=label)
        for key in ("replay", "env_state", "log_alpha", "ep_len"):
            np.testing.assert_array_equal(algo.state_dict()[key], before[key], err_msg=label)
    assert _step(algo) == 0  # the good arguments do run
    assert not np.array_equal(train_before[0], algo.native.families[0].params)
    assert not np.array_equal(algo.env.state, before["env_state"])


def test_native_step_refuses_a_bad_quadrotor_and_changes_nothing():
    algo = SAC(Config(backend="native", **QUAD_SMALL), lambda n: QuadrotorVec(n), [0, 1])
    for _ in range(20):
        algo.advance()
    state, obs, ep_return, ep_len, max_steps, model, params, history, terminated = algo.native.envs
    ro = terminated.copy()
    ro.flags.writeable = False
    pendulum = SAC(Config(backend="native"), lambda n: PendulumVec(n), [0, 1])
    common = (state, obs, ep_return, ep_len, max_steps)
    cases = [
        ("a short model", {"env": common + (model[:-1], params, history, terminated)}, "model"),
        ("history longer than observed", {"env": common + (model, params, np.zeros((2, 5, 4)), terminated)},
         "history observes 42 numbers"),
        ("read-only terminated", {"env": common + (model, params, history, ro)}, "writable"),
        ("float32 params", {"env": common + (model, params.astype(np.float32), history, terminated)}, "float64"),
        ("six entries", {"env": common + (model,)}, "env must be"),
        ("the pendulum's networks", {"nets": pendulum.native.nets, "alpha": pendulum.native.alpha,
                                     "replay": pendulum.replay.data, "work": pendulum.native.workspace},
         "observes|obs|axis"),
    ]
    before = {k: np.array(v) for k, v in algo.state_dict().items()}
    for label, change, message in cases:
        with pytest.raises((ValueError, TypeError), match=message):
            _step(algo, **change)
        for key in ("replay", "env_state", "ep_len", "actor"):
            np.testing.assert_array_equal(algo.state_dict()[key], before[key], err_msg=label)
    _step(algo)  # the good arguments do run
    assert not np.array_equal(algo.env.state, before["env_state"][:, :17])

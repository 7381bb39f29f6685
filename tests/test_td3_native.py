"""TD3's native backend (neuromotor.native._nm_host, the training kernels of device/native/include)
against the NumPy reference: the same update, agents independent of each other, exact
resume, and every bad array refused with a ValueError before anything is written."""

import json

import numpy as np
import pytest

from neuromotor.algos.td3 import TD3, Config
from neuromotor.envs.pendulum import PendulumVec
from run_checks import kill_then_resume_equals_uninterrupted
from native_checks import alone_equals_inside_a_population, refuse_bad_cases, replay_and_env_cases, \
    round_trip_continues_exactly, update_errors

_nm_host = pytest.importorskip("neuromotor.native._nm_host")


def _td3(seeds, backend, **cfg):
    return TD3(Config(backend=backend, **cfg), lambda n: PendulumVec(n), seeds)


@pytest.mark.parametrize("isa, shared", [(0, False), (2, False), (0, True)],
                         ids=["best", "sse2", "best-shared_minibatch"])
def test_native_update_equals_numpy_over_1000_updates(isa, shared):
    """Every update from the same state (the native side is set to NumPy's before each step),
    1,000 updates (500 with the actor and targets), replay wrapping, episode boundaries:
    after each, every entry of every parameter, target and Adam moment vector within 1e-4
    (relative to max(1, the vector's largest entry)) and 98% of them within 1e-6.
    The two sum in different orders (OpenBLAS's blocking, the kernels' fused chains), so a few
    entries go further than rounding: 1 - tanh^2 of a saturated action (a few ulp of tanh
    become a percent of its derivative), a ReLU or min(Q1', Q2') on the other side of its
    switch, and Adam's division by the root of tiny second moments; 1e-5 is exceeded by a
    handful of entries in 1,000 updates (1.3e-5 on actor weights, 7e-5 on a critic's Adam m).
    Run freely, the two separate after some tens of updates, as any two float32 summation
    orders do, so each update is compared from identical numbers. Either update scheme: three
    minibatches per step (RLtools') or one for both critics and the actor (shared_minibatch)."""
    updates = 1000 if isa == 0 else 200
    keys = ["actor", "actor_target", "critic", "critic_target", "actor_opt_m", "actor_opt_v",
            "critic_opt_m", "critic_opt_v", "replay"]  # replay: the transitions, native actions included
    kw = dict(learning_starts=20, buffer_size=500, shared_minibatch=shared)
    worst, spread, ref, nat = update_errors(_td3, isa, keys, ("loss/critic", "loss/actor"), updates, **kw)
    assert ref.critic.opt.t == nat.critic.opt.t == updates
    assert ref.actor.opt.t == nat.actor.opt.t == updates // 2
    assert all(v <= 1e-4 for v in worst.values()), worst
    assert all(v <= 0.02 for v in spread.values()), str(spread)
    # and the update did something on both sides
    assert np.max(np.abs(ref.critic.params - _td3([0, 3], "numpy", **kw).critic.params)) > 1e-3


@pytest.mark.parametrize("backend, shared", [("native", False), ("native", True), ("numpy", True)])
def test_agent_alone_equals_agent_inside_a_population(backend, shared):
    alone_equals_inside_a_population(_td3, backend, shared)


@pytest.mark.parametrize("shared", [False, True], ids=["rltools", "shared_minibatch"])
def test_native_state_dict_round_trip_continues_exactly(shared):
    round_trip_continues_exactly(_td3, shared)


@pytest.mark.slow
def test_native_sigkill_then_resume_equals_uninterrupted(tmp_path, cli, neuromotor_process):
    # Enough steps after the first checkpoint that the kill lands mid-run however fast training is.
    args = ["--steps", 3000, "--seeds", "3,8", "--set", "backend=native", "--set", "shards=1", "--set", "checkpoint_every=300",
            "--set", "eval_every=1500", "--set", "eval_episodes=1", "--quiet"]
    _, killed, _ = kill_then_resume_equals_uninterrupted(tmp_path, cli, neuromotor_process, args, 3000, 300)
    cfg = json.loads((killed / "config.json").read_text())
    assert cfg["algo_config"]["backend"] == "native"


def test_backend_choice_is_checked(tmp_path, cli):
    code, _, err = cli("train", "pendulum", "--steps", 10, "--run-dir", tmp_path / "r", "--set", "backend=torch")
    assert code == 2 and "backend must be one of native, numpy" in err and "Traceback" not in err


# ----- bad arrays -----
def _call_args(algo):
    """The arguments of one update, as NativeTD3.update passes them."""
    P, B, a = algo.P, algo.cfg.batch_size, algo.act_dim
    rng = np.random.default_rng(0)
    actor, critic, alayout, clayout, losses = algo.native.nets
    return dict(actor=list(actor), critic=list(critic), alayout=alayout, clayout=clayout, losses=losses,
                replay=algo.replay.data, size=algo.cfg.buffer_size, idx=rng.integers(0, 1 << 32, (P, 3, B), np.uint32),
                noise=rng.standard_normal((P, 2, B, a), np.float32), update=True, work=algo.native.workspace)


def _call(d):
    nets = (tuple(d["actor"]), tuple(d["critic"]), d["alayout"], d["clayout"], d["losses"])
    return _nm_host.td3_update(nets, d["replay"], d["size"], d["idx"], d["noise"], d["update"],
                               d.get("shared", False), (0.99, 0.005, 0.2, 0.5), d["work"])


def _bad_cases(d):
    actor, critic = d["actor"], d["critic"]
    ro = actor[0].copy()
    ro.flags.writeable = False
    strided = np.zeros(2 * actor[0].size, np.float32)[::2]
    yield "float64 params", "actor", 0, actor[0].astype(np.float64), "float32"
    yield "non-contiguous", "actor", 0, strided, "C-contiguous"
    yield "read-only", "actor", 0, ro, "writable"
    yield "short", "critic", 3, critic[3][:-1], "axis 0"
    yield "target is params", "actor", 1, actor[0], "overlap"
    yield "grad overlaps m", "critic", 2, critic[3][:], "overlap"
    yield "m inside the replay", "critic", 3, d["replay"].reshape(-1)[:critic[3].size], "overlap"
    yield "adam state too long", "actor", 5, np.zeros(7, np.float32), "axis 0"
    yield "list", "actor", 0, actor[0].tolist(), "float32"
    yield "int idx", "idx", None, d["idx"].astype(np.int64), "uint32"
    yield "idx of 2 minibatches", "idx", None, d["idx"][:, :2].copy(), "axis 1"
    yield "noise of float64", "noise", None, d["noise"].astype(np.float64), "float32"
    yield "noise of 2 actions", "noise", None, np.zeros(d["noise"].shape[:3] + (2,), np.float32), "axis 3"
    yield "replay row too wide", "replay", None, np.zeros(d["replay"].shape[:2] + (12,), np.float32), "axis 2"
    yield "replay transposed", "replay", None, d["replay"].transpose(1, 0, 2), "C-contiguous"
    yield "replay_size 0", "size", None, 0, "replay_size"
    yield "replay_size over capacity", "size", None, d["replay"].shape[1] + 1, "replay_size"
    yield "actor layout of 5 inputs", "alayout", None, ((5, 64, 64, 1), (1, 1, 2)), "critic_layout"
    yield "activation 3", "alayout", None, ((3, 64, 64, 1), (1, 1, 3)), "activations"
    yield "size 0", "clayout", None, ((4, 0, 64, 1), (1, 1, 0)), "layer sizes"
    yield "layers and activations disagree", "clayout", None, ((4, 64, 1), (1, 1, 0)), "one size more"
    yield "losses of one agent", "losses", None, np.zeros((1, 2), np.float32), "axis 0"
    yield "losses in the params", "losses", None, actor[0][:4].reshape(2, 2), "overlap"
    yield "workspace a float short", "work", None, d["work"][:-1], "workspace must hold"


def test_bad_arrays_are_value_errors_and_nothing_changes():
    algo = _td3([0, 1], "native", learning_starts=10, buffer_size=2000)
    for _ in range(30):
        algo.advance()
    good = _call_args(algo)
    before = [np.array(x) for x in (*good["actor"], *good["critic"])]
    assert refuse_bad_cases(good, _bad_cases(good), _call, lambda: (*good["actor"], *good["critic"]),
                            ValueError) == 24
    with pytest.raises(ValueError, match="tuple"):
        _call({**good, "actor": good["actor"][:5]})
    _call(good)  # and the good arguments do run
    assert not np.array_equal(before[0], good["actor"][0])


def test_native_shared_minibatch_learns_from_the_first_draws_only():
    """With shared_minibatch, the update reads idx[:, 0] and noise[:, 0] only; without it, the
    other minibatches' draws change what the critics and the actor learn."""
    algo = _td3([0, 1], "native", learning_starts=10, buffer_size=2000)
    for _ in range(30):
        algo.advance()
    good = _call_args(algo)
    start = [np.array(x) for x in (*good["actor"], *good["critic"])]
    other = dict(good, idx=good["idx"].copy(), noise=good["noise"].copy())
    other["idx"][:, 1:] = np.random.default_rng(1).integers(0, 1 << 32, other["idx"][:, 1:].shape, np.uint32)
    other["noise"][:, 1] = -other["noise"][:, 1]

    def after(d, shared):
        for x, y in zip(start, (*good["actor"], *good["critic"])):
            y[...] = x
        _call({**d, "shared": shared})
        return [np.array(x) for x in (*good["actor"], *good["critic"])]
    for a, b in zip(after(good, True), after(other, True)):
        np.testing.assert_array_equal(a, b)
    differ = [not np.array_equal(a, b) for a, b in zip(after(good, False), after(other, False))]
    assert differ[0] and differ[6]  # actor and critic parameters
    assert not np.array_equal(after(good, True)[6], after(good, False)[6])


def test_isa_paths():
    best = _nm_host.isa()
    assert best in (2, 3)
    try:
        assert _nm_host.isa(2) == 2
        with pytest.raises(ValueError, match="not available"):
            _nm_host.isa(best + 1)
    finally:
        assert _nm_host.isa(0) == best


def test_benchmark_ratios_are_per_backend(monkeypatch):
    from neuromotor.paths import SOURCE_ROOT
    monkeypatch.syspath_prepend(str(SOURCE_ROOT / "benchmarks"))
    import importlib
    td3 = importlib.import_module("td3_pendulum")

    def row(backend=None, peer=None, threads=1, wall=1.0, agents=1, shared=None):
        r = {"threads": threads, "wall_s": wall, "cpu_s": wall, "agents": agents, "wall_per_agent_s": wall / agents}
        return {**r, **({"backend": backend} if backend else {}), **({"peer": peer} if peer else {}),
                **({"shared_minibatch": shared} if shared is not None else {})}

    rows = {"neuromotor native, 1 agent, 1 thread": row("native", wall=2.0),
            "neuromotor numpy, 1 agent, 1 thread": row("numpy", wall=4.0),
            "neuromotor native, 4 agents, 2 threads": row("native", threads=2, wall=4.0, agents=4),
            "RLtools (C++, OpenBLAS), 1 thread": row(peer="rltools", wall=3.0),
            "RLtools (C++, OpenBLAS), 2 threads": row(peer="rltools", threads=2, wall=3.0)}
    ratios = td3.speedups(rows)
    assert ratios == {"rltools_over_neuromotor_single_1thread": {"wall": 1.5, "cpu": 1.5},
                      "rltools_over_neuromotor_numpy_single_1thread": {"wall": 0.75, "cpu": 0.75},
                      "rltools_over_neuromotor_per_agent_in_population_2thread": {"wall": 3.0, "cpu": 3.0}}
    # SB3 against the rows of its own update (shared_minibatch), and against RLtools' update beside;
    # RLtools against RLtools' update only
    rows.update({"neuromotor native shared_minibatch, 1 agent, 1 thread": row("native", wall=1.0, shared=True),
                 "stable-baselines3, 1 thread": row(peer="sb3", wall=40.0)})
    ratios = td3.speedups(rows)
    assert ratios["sb3_over_neuromotor_single_1thread"] == {"wall": 40.0, "cpu": 40.0}
    assert ratios["sb3_over_neuromotor_rltools_update_single_1thread"] == {"wall": 20.0, "cpu": 20.0}
    assert ratios["rltools_over_neuromotor_single_1thread"] == {"wall": 1.5, "cpu": 1.5}
    assert len(ratios) == 3 + 3


def test_native_act_equals_numpy_and_checks_its_arrays():
    algo = _td3([0, 1, 2], "native", learning_starts=10)
    for _ in range(60):
        algo.advance()
    rng = np.random.default_rng(2)
    obs = rng.standard_normal((3, 3)).astype(np.float32)
    noise = np.array([[0.1], [5.0], [-5.0]], np.float32)  # the last two clip at +-1
    out = np.empty((3, 1), np.float32)
    layout = algo.actor.layout()
    params = algo.native.families[0].params  # the training layout
    algo.sync_host()
    work = algo.native.workspace
    _nm_host.act(params, layout, obs, noise, 0.5, out, work)
    from neuromotor.nn.mlp import with_ones
    ref = algo.actor.mlp.forward(algo.actor.layers, with_ones(obs)[:, None])[:, 0] + noise * np.float32(0.5)
    np.testing.assert_allclose(out, np.clip(ref, -1, 1), atol=1e-6)
    assert np.any(np.abs(out) == 1) and np.any(np.abs(out) < 1)
    bad = [(params[:-1], obs, noise, out, "axis 0"), (params, obs.astype(np.float64), noise, out,
           "float32"), (params, obs[:, :2].copy(), noise, out, "axis 1"),
           (params, obs, noise[:2], out, "axis 0"), (params, obs, noise, np.empty((3, 2), np.float32)[:, ::2], "C-contiguous"),
           (params, obs, noise, noise, "overlap"), (params, obs, noise, np.empty((3, 1)), "float32")]
    for params, o, n, a, message in bad:
        before = np.array(out)
        with pytest.raises(ValueError, match=message):
            _nm_host.act(params, layout, o, n, 0.1, a, work)
        np.testing.assert_array_equal(out, before)
    tape = sum(layout[0][1:])  # one sample's activations
    shared = np.zeros(tape + 3, np.float32)
    for w, o, message in ((work[:tape - 1], out, "workspace must hold"), (shared, shared[:3].reshape(3, 1), "overlap"),
                          (work.astype(np.float64), out, "float32")):
        before = np.array(o)
        with pytest.raises(ValueError, match=message):
            _nm_host.act(params, layout, obs, noise, 0.1, o, w)
        np.testing.assert_array_equal(o, before)


# ----- the whole step in one call on the built-in pendulum -----
class _OtherPendulum(PendulumVec):
    """PendulumVec stepped in NumPy: TD3 steps only the built-in class natively."""


def test_native_step_equals_the_numpy_env_replay_and_episodes_bit_for_bit(step_alike):
    """td3_step (act, nm_pendulum.h, episode counting, replay store, update) against the same
    native update around PendulumVec, AutoReset and Replay.store in NumPy: 1,300 steps, warm-up,
    episode ends (200) and an RNG block boundary (1,000); every state array equal."""
    native = _td3([3, 7], "native", learning_starts=50)
    numpy_env = TD3(Config(backend="native", learning_starts=50), lambda n: _OtherPendulum(n), [3, 7])
    assert native.native.whole_step and not numpy_env.native.whole_step

    def other_gravity(n):
        env = PendulumVec(n)
        env.g = 9.8
        return env
    assert not TD3(Config(backend="native"), other_gravity, [0]).native.whole_step  # not the compiled-in dynamics
    step_alike(native, numpy_env, 1300)


def test_native_step_on_the_quadrotor_equals_the_python_loop_bit_for_bit(step_alike):
    """td3_step on the quadrotor against the same native update around QuadrotorVec.step,
    AutoReset and Replay.store: crashes, time-outs and restarts; every state array equal."""
    from neuromotor.envs.quadrotor import QuadrotorVec

    class OtherQuadrotor(QuadrotorVec):
        """stepped through AutoReset: TD3 steps only the built-in class in one call"""

    kw = dict(actor_hidden=(16, 16), critic_hidden=(16, 16), batch_size=16, learning_starts=50, episode_steps=60)
    native = TD3(Config(backend="native", **kw), lambda n: QuadrotorVec(n, action_history=2), [3, 7])
    python = TD3(Config(backend="native", **kw), lambda n: OtherQuadrotor(n, action_history=2), [3, 7])
    assert native.native.whole_step and not python.native.whole_step
    returns = step_alike(native, python, 1100)
    assert sum(map(len, returns)) > 2 * 1100 // 60 + 2  # drones crashed as well as timed out


def _step_args(algo):
    nets, env = algo.native.nets, algo.native.envs
    return dict(nets=nets, replay=algo.replay.data, env=env, block=algo._native_block, i=0, u=0, pos=0, size=0,
                hyper=algo.native.hyper, work=algo.native.workspace)


def _step(d):
    return _nm_host.td3_step(d["nets"], d["replay"], d["env"], d["block"], d["i"], d["u"], d["pos"], d["size"], False,
                             True, True, False, d["hyper"], d["work"])


def test_native_step_refuses_bad_arrays_and_changes_nothing():
    algo = _td3([0, 1], "native", learning_starts=10)
    for _ in range(20):
        algo.advance()
    good = _step_args(algo)
    good.update(pos=algo.replay.pos, size=algo.replay.size, i=algo.steps)
    state, obs, ep_return, ep_len, max_steps = good["env"]
    cases = [
        *replay_and_env_cases(algo, good["env"]),
        ("obs inside the replay", {"env": (state, algo.replay.data[0, :2, :3], ep_return, ep_len, max_steps)},
         "C-contiguous|overlap"),
        ("step past the block", {"i": len(good["block"][0])}, "block"),
        ("update past the block", {"u": len(good["block"][2])}, "block"),
        ("block of 3", {"block": good["block"][:3]}, "block"),
        ("hyper of strings", {"hyper": ("a",) * 7}, "float|must be real"),
        ("workspace a float short", {"work": good["work"][:-1]}, "workspace must hold"),
    ]
    before = {k: np.array(v) for k, v in algo.state_dict().items()}
    train_before = [np.array(x) for x in algo.native.families[1].arrays()]
    for label, change, message in cases:
        with pytest.raises((ValueError, TypeError), match=message):
            _step({**good, **change})
        for x, y in zip(train_before, algo.native.families[1].arrays()):
            np.testing.assert_array_equal(x, y, err_msg=label)
        assert np.array_equal(algo.replay.data, before["replay"]) and np.array_equal(algo.env.state, before["env_state"]), label
    assert _step(good) == 0  # the good arguments do run
    assert not np.array_equal(train_before[0], algo.native.families[1].params)


def test_native_pendulum_is_pendulumvec_bit_for_bit_with_clipped_torques():
    """nm_pendulum.h against PendulumVec from far-out states (angles of many turns, the speed
    limit) with torques beyond +-2 (action scale 3): state, observation and reward equal."""
    P, steps = 16, 300
    algo = _td3(list(range(P)), "native", learning_starts=10 ** 6)
    rng = np.random.default_rng(5)
    start = np.stack([rng.uniform(-40, 40, P), rng.uniform(-8, 8, P)], axis=1)
    algo.env.set_state(start)
    ref = PendulumVec(P)
    ref.set_state(start)
    obs = algo.native.envs[1]
    obs[...] = ref._observe()
    uniform = rng.uniform(-1, 1, (steps, P, 1)).astype(np.float32)
    explore, idx, noise = np.zeros((steps, P, 1), np.float32), np.zeros((steps, P, 3, 1), np.uint32), np.zeros(
        (steps, P, 2, 1, 1), np.float32)
    hyper = algo.native.hyper[:5] + (3.0, 0.0)
    at_speed_limit = 0
    for i in range(steps):
        pos = i % algo.replay.capacity
        _nm_host.td3_step(algo.native.nets, algo.replay.data, algo.native.envs, (explore, uniform, idx, noise), i,
                          i, pos, min(i, algo.replay.capacity), True, False, False, False, hyper, algo.native.workspace)
        want_obs, want_reward, _ = ref.step(uniform[i] * np.float32(3.0))
        np.testing.assert_array_equal(algo.env.state, ref.state)
        np.testing.assert_array_equal(obs, want_obs)
        np.testing.assert_array_equal(algo.replay.data[:, pos, algo.row.reward][:, 0], want_reward)
        at_speed_limit += int(np.sum(np.abs(ref.state[:, 1]) == 8))
    assert np.any(np.abs(uniform * 3) > 2) and at_speed_limit  # both clips were taken


def test_tanh_is_the_same_bits_on_every_instruction_set_path():
    """The AVX2 tanh (8 lanes) rounds as the scalar nm_tanhf: a 16 -> 16 tanh layer with identity
    weights acts on 4096 inputs (tiny, saturating, beyond 9, signed zeros) on each path."""
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0, 3, 2000), rng.normal(0, 1e-3, 1000), rng.uniform(-12, 12, 1000),
                        [0.0, -0.0, 9.0, -9.0, 8.9999995, 1e-30, -1e-30, 20.0] * 12]).astype(np.float32)
    members = len(x) // 16
    params = np.tile(np.concatenate([np.eye(16, dtype=np.float32).ravel(), np.zeros(16, np.float32)]), members)
    layout = ((16, 16), (2,))
    obs, noise = x.reshape(members, 16), np.zeros((members, 16), np.float32)
    best, outs = _nm_host.isa(), {}
    try:
        for isa in (1, 2, best):
            _nm_host.isa(isa)
            out = np.empty_like(obs)
            _nm_host.act(params, layout, obs, noise, 0.0, out, np.zeros(32, np.float32))
            outs[isa] = out
    finally:
        _nm_host.isa(best)
    for isa, out in outs.items():
        np.testing.assert_array_equal(out.view(np.uint32), outs[1].view(np.uint32), err_msg=f"path {isa}")
    np.testing.assert_allclose(outs[best], np.tanh(obs.astype(np.float64)), rtol=3e-7, atol=1e-37)

"""What tests/test_td3_native.py and tests/test_sac_native.py hold each native backend to, once:
the update against the NumPy reference from the same numbers, one agent alone against the same
agent inside a population, an exact resume, and bad arrays refused before anything changes.
Each function takes `make(seeds, backend, **cfg)`, the algorithm's constructor on the pendulum."""

import numpy as np
import pytest

_nm_host = pytest.importorskip("neuromotor.native._nm_host")


def sync(dst, src):
    """dst continues from src's numbers: networks, targets, Adam (alpha's too), replay, envs."""
    for key, arr in src._arrays().items():
        dst._arrays()[key][...] = arr
    for opt in ("actor", "critic"):
        getattr(dst, opt).opt.t = getattr(src, opt).opt.t
    if hasattr(src, "alpha_opt"):
        dst.alpha_opt.t = src.alpha_opt.t
    dst.env.set_state(src.env.get_state())
    dst.obs = np.array(src.obs)
    dst.native.load()


def update_errors(make, isa, keys, tags, updates, loose=(), **kw):
    """Every update from the same state (the native side set to NumPy's before each step), on
    instruction-set path isa: the largest error of each of `keys` relative to max(1, the vector's
    largest entry), and the share of its entries past 1e-6 (1e-5 for the `loose` keys); the
    losses `tags` within 1e-3. Returns (worst, spread, ref, nat)."""
    best = _nm_host.isa()
    worst, spread = {}, {}
    try:
        _nm_host.isa(isa)
        ref, nat = make([0, 3], "numpy", **kw), make([0, 3], "native", **kw)
        assert nat.native and not ref.native
        for _ in range(kw["learning_starts"] + updates):
            sync(nat, ref)
            ref.advance()
            nat.advance()
            for key in keys:
                a, b = ref._arrays()[key], nat._arrays()[key]
                err = np.abs(a - b) / max(1.0, float(np.max(np.abs(a))))
                worst[key] = max(worst.get(key, 0.0), float(err.max()))
                spread[key] = max(spread.get(key, 0.0), float(np.mean(err > (1e-5 if key in loose else 1e-6))))
            # the losses TensorBoard shows, from the same numbers
            want, got = ref.scalars(), nat.scalars()
            assert want.keys() == got.keys()
            for tag in set(tags) & want.keys():
                np.testing.assert_allclose(got[tag], want[tag], rtol=1e-3, atol=1e-5, err_msg=tag)
    finally:
        _nm_host.isa(best)
    return worst, spread, ref, nat


def agent_arrays(algo, k):
    """Agent k's networks, targets, Adam moments and replay (SAC's alpha too), in the host's layout."""
    algo.sync_host()  # the native backend trains a copy in the kernels' layout
    out = {"replay": algo.replay.data[k]}
    if hasattr(algo, "log_alpha"):
        out.update(log_alpha=algo.log_alpha[k], alpha_m=algo.alpha_opt.m[k])
    for name, net in (("actor", algo.actor), ("critic", algo.critic)):
        for part, flat in (("", net.params), ("_target", net.target), ("_m", net.opt.m), ("_v", net.opt.v)):
            if flat is not None:
                for i, layer in enumerate(net.mlp.views(flat)):
                    out[f"{name}{part}{i}"] = np.array(layer[k])
    return out


def alone_equals_inside_a_population(make, backend, shared):
    alone = make([5], backend, learning_starts=50, shared_minibatch=shared)
    population = make([2, 5, 9], backend, learning_starts=50, shared_minibatch=shared)
    for _ in range(260):  # an episode boundary (200), actor and target updates
        alone.advance()
        population.advance()
    a, b = agent_arrays(alone, 0), agent_arrays(population, 1)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    assert not np.array_equal(agent_arrays(population, 0)["actor0"], a["actor0"])


def round_trip_continues_exactly(make, shared):
    a = make([4, 6], "native", learning_starts=50, shared_minibatch=shared)
    for _ in range(170):
        a.advance()
    saved = {k: np.array(v) for k, v in a.state_dict().items()}
    for _ in range(90):
        a.advance()
    b = make([4, 6], "native", learning_starts=50, shared_minibatch=shared)
    b.load_state_dict(saved)
    for _ in range(90):
        b.advance()
    for key, value in a.state_dict().items():
        np.testing.assert_array_equal(value, b.state_dict()[key], err_msg=key)
    for tag, value in a.scalars().items():
        np.testing.assert_array_equal(value, b.scalars()[tag], err_msg=tag)


def refuse_bad_cases(good, cases, call, state, errors=(ValueError, TypeError)):
    """Each case (label, where, i, value, message) put into a copy of the good arguments (at
    index i of a list argument, or in place of it when i is None) raises one of `errors`
    matching message, and state() stays as it was. Returns how many were checked."""
    before = state()
    checked = 0
    for label, where, i, value, message in cases:
        d = {k: (list(v) if isinstance(v, list) else v) for k, v in good.items()}
        if i is None:
            d[where] = value
        else:
            d[where][i] = value
        with pytest.raises(errors, match=message):
            call(d)
        for x, y in zip(before, state()):
            np.testing.assert_array_equal(x, y, err_msg=label)
        checked += 1
    return checked


def replay_and_env_cases(algo, env) -> list:
    """(label, change, message): the bad replay and env arguments both algorithms' whole-step
    calls refuse, for `env` (state, obs, ep_return, ep_len, max_steps) and algo's replay."""
    state, obs, ep_return, ep_len, max_steps = env
    ro = algo.replay.data.copy()
    ro.flags.writeable = False
    return [
        ("read-only replay", {"replay": ro}, "writable"),
        ("pos past the ring", {"pos": algo.replay.capacity}, "pos"),
        ("negative size", {"size": -1}, "replay_size"),
        ("float32 state", {"env": (state.astype(np.float32), obs, ep_return, ep_len, max_steps)}, "float64"),
        ("int32 episode lengths", {"env": (state, obs, ep_return, ep_len.astype(np.int32), max_steps)}, "int64"),
        ("obs of 1 agent", {"env": (state, obs[:1].copy(), ep_return, ep_len, max_steps)}, "axis 0"),
    ]

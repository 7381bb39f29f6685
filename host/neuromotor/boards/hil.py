"""Hardware in the loop: the host simulates, the board acts, over NMB/1.

The host steps the run's environment (one env per episode, env i seeded with
seed + i): a built-in one, or the gymnasium env (id or module:attr, with its
env_kwargs) the run was trained on, from its config.json. It sends every observation to the board as float32 bytes
and applies the board's float32 action. The same episodes are then run with
the host's NumPy forward of the same policy (PolicySpec.forward): the returns
must agree to float32 tolerance.

The board must hold this policy: hil loads the path the last deploy wrote (its
manifest, /nm_deploy.json) and refuses when the manifest's SHA-256 is not that
of this source's policy file. Every action of every step is also compared, in
every dimension, with the host's forward of the same observation.

A recurrent policy (GRU layers) carries a hidden state from step to step, and
the board holds one: its episodes run one after the other (env i still seeded
with seed + i), each starting with the board's `reset` and the host's initial
state, on both sides; the host compares each board action with its own step from
the same observation and state.
"""

import hashlib
import time
from pathlib import Path

import numpy as np

from neuromotor import reading
from neuromotor.errors import UserError
from neuromotor.policy.policy_file import POLICY_LIMIT, encode
from neuromotor.policy.spec import env_for
from neuromotor.envs.episodes import episode_returns
from neuromotor.training.run_policy import load_spec
from neuromotor.boards.link import LinkClient

RTOL = 1e-3     # on returns: the two runs differ only by float32 summation order
ACTION_RTOL = 1e-3  # on each action, relative to 1 + |host action|


def check_actions(out, ref, port, t) -> float:
    """The largest relative difference of the board's actions `out` from the host's `ref`;
    a UserError when any element (NaN included) is off by more than ACTION_RTOL."""
    rel = np.abs(out - ref) / (1.0 + np.abs(ref))
    bad = ~(rel <= ACTION_RTOL)
    if bad.any():
        env, dim = (int(i) for i in np.argwhere(bad)[0])
        raise UserError(f"{port}: the board's action {dim} differs from this policy's at step {t} of episode "
                        f"{env} ({out[env, dim]!r} vs {ref[env, dim]!r}); deploy this run first")
    return float(rel.max()) if rel.size else 0.0


def deployed_policy(port, info, data: bytes) -> str:
    """The policy path the last deploy wrote, once its hash is that of `data` (this source's file)."""
    from neuromotor.boards.bench import check_deploy_state, deployed_path
    check_deploy_state(port, info)
    manifest = info.get("deploy")
    if not isinstance(manifest, dict) or not manifest.get("policy_sha256"):
        return deployed_path(info)  # deployed by hand: the actions are still compared
    want = hashlib.sha256(data).hexdigest()
    if manifest["policy_sha256"] != want:
        raise UserError(f"{port}: the board holds policy sha256 {manifest['policy_sha256'][:16]}... "
                        f"(deployed from {manifest.get('source', '?')}), this one is {want[:16]}...; "
                        "deploy this run first")
    return deployed_path(info)


def rollout(factory, episodes, seed, act_fn, steps=None):
    env = factory(episodes)
    try:
        rngs = [np.random.default_rng(seed + i) for i in range(episodes)]
        obs = env.reset(rngs)
        return episode_returns(env, obs, lambda o, t: act_fn(o, t).astype(np.float32),
                               steps or env.max_episode_steps)
    finally:
        if hasattr(env, "close"):
            env.close()


def rollouts(factory, episodes, seed, act_fn, steps, one_by_one):
    """rollout's returns; one_by_one: episode i alone (env seeded with seed + i), for a policy
    that keeps one state."""
    if not one_by_one:
        return rollout(factory, episodes, seed, act_fn, steps)
    return np.concatenate([rollout(factory, 1, seed + i, act_fn, steps) for i in range(episodes)])


def run_hil(port, source, episodes=3, seed=0, env_name=None, steps=None, timeout=10.0, log=print,
            env_kwargs=None):
    spec = load_spec(source)
    env_name, factory = env_for(spec, env_name, env_kwargs)
    recurrent = spec.recurrent

    def host_act(obs, t):
        if t == 0:
            spec.reset()  # an episode starts from the initial state
        return spec.forward(obs)

    host_returns = rollouts(factory, episodes, seed, host_act, steps, recurrent)
    rtts, dev_us, max_diff = [], [], [0.0]
    # What deploy put on the board: the policy file itself, or this run's policy, encoded from
    # the spec already loaded (the checkpoint is read once).
    data = reading.read_bytes(source, "policy file", POLICY_LIMIT) if Path(source).is_file() else encode(spec)
    with LinkClient(port, timeout=timeout) as c:
        meta = c.load(deployed_policy(port, c.info, data), "auto")
        if meta.get("obs_dim") != spec.obs_dim or meta.get("act_dim") != spec.act_dim:
            raise UserError(f"{port}: the board's policy is {meta.get('sizes')}, this run's is {spec.sizes}; "
                            "deploy this run first")
        log(f"hil: {env_name}, {episodes} episode(s), board backend {meta.get('backend')} on {port}")

        state = [None]  # the host's state of the board's episode

        def board_act(obs, t):
            out = np.empty((obs.shape[0], spec.act_dim), np.float32)
            if recurrent:
                if t == 0:
                    c.request("reset")
                    state[0] = spec.initial_state()
                ref, state[0] = spec.step(obs, state[0])
            else:
                ref = spec.forward(obs)
            for i in range(obs.shape[0]):
                a, us, rtt = c.act(obs[i])
                if a.shape != (spec.act_dim,):
                    raise UserError(f"{port}: board answered {a.shape[0]} actions, expected {spec.act_dim}")
                out[i] = a
                rtts.append(rtt / 1000.0)
                dev_us.append(us)
            max_diff[0] = max(max_diff[0], check_actions(out, ref, port, t))
            return out

        t0 = time.monotonic()
        hil_returns = rollouts(factory, episodes, seed, board_act, steps, recurrent)
        wall = time.monotonic() - t0
        link = dict(c.stats)
        backend = meta.get("backend")
    r = np.asarray(rtts)
    tol = RTOL * max(1.0, float(np.max(np.abs(host_returns))))
    return {
        "port": port, "env": env_name, "episodes": episodes, "seed": seed, "backend": backend,
        "recurrent": recurrent,
        "returns": hil_returns.tolist(), "host_returns": host_returns.tolist(),
        "return_mean": float(hil_returns.mean()), "host_return_mean": float(host_returns.mean()),
        "max_return_diff": float(np.max(np.abs(hil_returns - host_returns))),
        "returns_match": bool(np.all(np.abs(hil_returns - host_returns) <= tol)),
        "max_action_rel_diff": max_diff[0],
        "steps": int(r.size), "wall_s": wall,
        "rtt_median_us": float(np.median(r)), "rtt_p90_us": float(np.percentile(r, 90)),
        "rtt_p99_us": float(np.percentile(r, 99)), "rtt_min_us": float(r.min()), "rtt_max_us": float(r.max()),
        "device_median_us": float(np.median(dev_us)), "link": link,
    }


def report(res) -> str:
    lines = [
        f"returns on the board ({res['backend']}): {', '.join(f'{x:.2f}' for x in res['returns'])}  "
        f"mean {res['return_mean']:.3f}",
        f"returns on the host (NumPy):   {', '.join(f'{x:.2f}' for x in res['host_returns'])}  "
        f"mean {res['host_return_mean']:.3f}",
        f"agree within float32 tolerance: {'yes' if res['returns_match'] else 'NO'} "
        f"(max |diff| {res['max_return_diff']:.2e}, max action rel. diff {res['max_action_rel_diff']:.2e})",
        f"round trip over serial ({res['steps']} steps): median {res['rtt_median_us']:.0f} µs, "
        f"p90 {res['rtt_p90_us']:.0f}, p99 {res['rtt_p99_us']:.0f}, min {res['rtt_min_us']:.0f}, "
        f"max {res['rtt_max_us']:.0f} µs; on-board compute median {res['device_median_us']:.0f} µs (board clock)",
    ]
    return "\n".join(lines)

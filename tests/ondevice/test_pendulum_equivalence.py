"""The board's pendulum (device/lib/nm_pendulum.py on the unix MicroPython build) equals the
host's PendulumVec step by step: observation after each reset and step, reward, and how
episodes end (never terminated, cut at max_episode_steps). Several episodes from the host's
reset draws, with torques inside, at and beyond the limits (clipped on both sides).

The unix build computes in doubles, like the host, so they agree to float32 rounding of the
same double (1e-6 relative to max(1, |x|); a board with single-precision floats computes
each step in float32 instead)."""

import json

import numpy as np

from neuromotor.envs.pendulum import PendulumVec

from .conftest import run_mp

EPISODES = 5
TOL = 1e-6

DEVICE_SCRIPT = """
import json
from array import array
from nm_pendulum import Pendulum
d = {dir!r}
with open(d + '/resets.bin', 'rb') as f:
    resets = array('d', f.read())
with open(d + '/torques.bin', 'rb') as f:
    torques = array('f', f.read())
draws = []

def uniform(lo, hi):
    draws.append([lo, hi])
    return resets[len(draws) - 1]

p = Pendulum()
out = []
for e in range({episodes}):
    obs = list(p.reset(uniform))
    steps = []
    for k in range(p.max_episode_steps):
        r = p.step(torques[e * p.max_episode_steps + k])
        steps.append(list(p.obs) + [r])
    out.append([obs, steps])
print(json.dumps({{'episodes': out, 'draws': draws, 'max_episode_steps': p.max_episode_steps,
                  'obs_dim': p.obs_dim, 'act_dim': p.act_dim, 'max_torque': p.action_scale}}))
"""


def test_pendulum_equals_host_step_by_step(micropython_train, tmp_path):
    rng = np.random.default_rng(5)
    env = PendulumVec(1)
    T = env.max_episode_steps
    # a square wave near the swing's resonance (about 32 steps) pumps it over the top and up to
    # the speed limit; plus noise, torques beyond the limits, at them and zero
    k = np.arange(T)
    phase = rng.uniform(0, 2 * np.pi, (EPISODES, 1))
    torques = (2.5 * np.sign(np.sin(2 * np.pi * k / 32 + phase)) + rng.normal(0, 0.5, (EPISODES, T)))
    torques = torques.astype(np.float32)
    torques[:, :3] = [[2.0, -2.0, 0.0]]
    resets, host = [], []
    for e in range(EPISODES):
        obs = env.reset([rng])[0]
        resets += list(env.get_state()[0])
        steps = []
        for k in range(T):
            o, r, terminated = env.step(torques[e, k:k + 1, None])
            assert not terminated[0]  # Pendulum-v1 never terminates; episodes end by time only
            steps.append(np.concatenate([o[0], r]))
        host.append((obs, np.array(steps)))
    (tmp_path / "resets.bin").write_bytes(np.array(resets, np.float64).tobytes())
    (tmp_path / "torques.bin").write_bytes(torques.tobytes())
    out = run_mp(micropython_train, DEVICE_SCRIPT.format(dir=str(tmp_path), episodes=EPISODES))
    board = json.loads(out.strip().splitlines()[-1])

    assert (board["max_episode_steps"], board["obs_dim"], board["act_dim"]) == (T, env.obs_dim, env.act_dim)
    assert board["max_torque"] == env.max_torque == env.action_high[0] == -env.action_low[0]
    # the reset draws: theta in [-pi, pi], theta_dot in [-1, 1], as the host's
    assert board["draws"] == [[-np.pi, np.pi], [-1.0, 1.0]] * EPISODES
    for e, ((h_obs, h_steps), (b_obs, b_steps)) in enumerate(zip(host, board["episodes"])):
        b_obs, b_steps = np.array(b_obs), np.array(b_steps)
        assert np.abs(b_obs - h_obs).max() <= TOL, f"episode {e}: reset observation"
        err = np.abs(b_steps - h_steps) / np.maximum(1, np.abs(h_steps))
        k = int(err.max(axis=1).argmax())
        assert err.max() <= TOL, (f"episode {e}, step {k}: board {b_steps[k]} host {h_steps[k]} "
                                  "(cos theta, sin theta, theta_dot, reward)")
        assert np.ptp(h_steps[:, 3]) > 5  # the episode went somewhere
    speeds = np.concatenate([np.abs(h[1][:, 2]) for h in host])
    assert speeds.max() == env.max_speed  # the speed limit was hit

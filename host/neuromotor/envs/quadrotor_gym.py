"""The quadrotor as a gymnasium env, `neuromotor/Quadrotor-v0`, so Stable-Baselines3 and
others train on the very model `neuromotor train quadrotor` does.

Importing this module registers the id; `gymnasium.make(
"neuromotor.envs.quadrotor_gym:neuromotor/Quadrotor-v0")` imports it on the way. A reset
seeded with s starts where the built-in env's agent with the generator default_rng(s) does.
"""

import gymnasium
import numpy as np

from neuromotor.envs.quadrotor import ACTION_HISTORY, DEFAULT_REWARD, POSITION_SCALE, ROTOR_SPEEDS, QuadrotorVec

ID = "neuromotor/Quadrotor-v0"


class QuadrotorEnv(gymnasium.Env):
    """One QuadrotorVec env behind gymnasium's API (time limit: the registration's)."""

    metadata = {"render_modes": []}

    def __init__(self, action_history: int = ACTION_HISTORY, randomize: float = 0.0, reward: str = DEFAULT_REWARD,
                 rotor_speeds: bool = ROTOR_SPEEDS, position_scale: float = POSITION_SCALE):
        self._vec = QuadrotorVec(1, action_history, randomize, reward, rotor_speeds, position_scale)
        self.observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (self._vec.obs_dim,), np.float32)
        self.action_space = gymnasium.spaces.Box(-1.0, 1.0, (QuadrotorVec.act_dim,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self._vec.reset([self.np_random])[0], {}

    def step(self, action):
        obs, reward, terminated = self._vec.step(np.asarray(action, np.float64).reshape(1, -1))
        return obs[0], float(reward[0]), bool(terminated[0]), False, {}


if ID not in gymnasium.registry:
    gymnasium.register(ID, entry_point=QuadrotorEnv, max_episode_steps=QuadrotorVec.max_episode_steps)

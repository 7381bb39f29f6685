"""Pendulum-v1, vectorised: gymnasium's dynamics, reward and reset, for N envs at once.

The state (theta, theta_dot) is float64 exactly as in gymnasium, so trajectories
agree with `gymnasium.make("Pendulum-v1")` to float32 precision; observations
are float32 (cos theta, sin theta, theta_dot). With `observe_velocity=False` they are
(cos theta, sin theta) only: the velocity is hidden, a partially observed task that a policy
with memory (a GRU) can still swing up.
"""

import numpy as np

from neuromotor.errors import UserError


class PendulumVec:
    obs_dim = 3
    act_dim = 1
    max_episode_steps = 200
    gym_id, gym_kwargs = "Pendulum-v1", {}  # the gymnasium env it equals (`eval --gymnasium`)
    env_kwargs = ("observe_velocity",)  # what `--env-kwargs` may set
    max_speed = 8.0
    max_torque = 2.0
    dt = 0.05
    g = 10.0
    m = 1.0
    l = 1.0  # noqa: E741  (gymnasium's name)

    def __init__(self, num_envs: int, observe_velocity: bool = True):
        if not isinstance(observe_velocity, bool):
            raise UserError(f"pendulum: observe_velocity must be true or false, got {observe_velocity!r}")
        self.num_envs = num_envs
        self.obs_dim = 3 if observe_velocity else 2
        self.action_low = np.full(1, -self.max_torque, np.float32)
        self.action_high = np.full(1, self.max_torque, np.float32)
        self.state = np.zeros((num_envs, 2))
        self._never = np.zeros(num_envs, bool)  # Pendulum-v1 never terminates, it only truncates
        self._never.flags.writeable = False

    def _observe(self) -> np.ndarray:
        th = self.state[:, 0]
        obs = np.empty((self.num_envs, self.obs_dim), np.float32)
        np.cos(th, out=obs[:, 0])
        np.sin(th, out=obs[:, 1])
        if self.obs_dim == 3:
            obs[:, 2] = self.state[:, 1]
        return obs

    def reset(self, rngs, mask=None) -> np.ndarray:
        high = np.array([np.pi, 1.0])
        for i in range(self.num_envs) if mask is None else np.flatnonzero(mask):
            self.state[i] = rngs[i].uniform(low=-high, high=high)
        return self._observe()

    def step(self, actions):
        th, thdot = self.state[:, 0], self.state[:, 1]
        # gymnasium clips the float32 action, then computes in float64.
        # (np.minimum/np.maximum: np.clip's Python-level checks cost more than the math here)
        u = np.minimum(np.maximum(actions[:, 0], -self.max_torque), self.max_torque).astype(np.float64)
        norm_th = (th + np.pi) % (2 * np.pi) - np.pi
        costs = norm_th**2 + 0.1 * thdot**2 + 0.001 * u**2
        newthdot = thdot + (3 * self.g / (2 * self.l) * np.sin(th) + 3.0 / (self.m * self.l**2) * u) * self.dt
        newthdot = np.minimum(np.maximum(newthdot, -self.max_speed), self.max_speed)
        self.state[:, 0] = th + newthdot * self.dt
        self.state[:, 1] = newthdot
        reward = np.negative(costs, out=np.empty(self.num_envs, np.float32))
        return self._observe(), reward, self._never

    def get_state(self) -> np.ndarray:
        return self.state.copy()

    def set_state(self, state) -> None:
        self.state[...] = state

    @staticmethod
    def draw(ax, state_row) -> None:
        """The rod as gymnasium draws it: upright is theta = 0, counter-clockwise positive.
        The first call on an axis creates the artists, later calls move them (fast GIFs)."""
        th = state_row[0]
        xs, ys = [0, -np.sin(th)], [0, np.cos(th)]
        rods = [line for line in ax.lines if line.get_gid() == "rod"]
        if rods:
            rods[0].set_data(xs, ys)
            return
        ax.plot(xs, ys, lw=8, color="#cc4c4c", solid_capstyle="round", gid="rod")
        ax.plot([0], [0], "ko", ms=6)
        ax.set_xlim(-1.2, 1.2)
        ax.set_ylim(-1.2, 1.2)
        ax.set_aspect("equal")
        ax.axis("off")

"""Quadrotors other than the published Crazyflie, and delayed sensing: what `drones` and
`obs_delay` (neuromotor.envs.quadrotor) make.

Each drone has its own model array (inertia, rotor positions, motor time constant) and its own
mass and thrust coefficient; its block of envs steps in one native call (or NumPy's step).
It is a subclass so that code which steps the published QuadrotorVec itself, with one model
for every drone and no delay (the native SAC/TD3 whole step), steps this one through `step`.
"""

import numpy as np

from neuromotor.envs import quadrotor as q
from neuromotor.envs.quadrotor import QuadrotorVec
from neuromotor.errors import UserError

SENSED = 18  # observation columns a delay applies to: position, rotation, velocity, angular velocity
MAX_OBS_DELAY = 100
MAX_DRONES = 4096
DRONE_FACTORS = ("mass", "thrust", "inertia", "arm", "motor_time_constant")
DRONE_FACTOR_RANGE = (0.25, 4.0)
# the published Crazyflie's: its four rotors at full speed lift 2.25 times its weight
THRUST_TO_WEIGHT = 4 * q.THRUST_PER_RPM2 * q.RPM_MAX ** 2 / (q.MASS * q.GRAVITY)


def check_drones(drones) -> list:
    """The `drones` option as a list of dicts with every factor (UserError naming the first problem)."""
    if not isinstance(drones, list) or not 1 <= len(drones) <= MAX_DRONES:
        raise UserError(f"quadrotor: drones must be a list of 1 to {MAX_DRONES} dicts of factors, got {drones!r}")
    lo, hi = DRONE_FACTOR_RANGE
    out = []
    for k, drone in enumerate(drones):
        if not isinstance(drone, dict) or set(drone) - set(DRONE_FACTORS):
            raise UserError(f"quadrotor: drone {k} must be a dict of factors named {', '.join(DRONE_FACTORS)}, "
                            f"got {drone!r}")
        for name, value in drone.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
                raise UserError(f"quadrotor: drone {k}'s {name} must be a factor from {lo:g} to {hi:g}, got {value!r}")
        out.append({name: float(drone.get(name, 1.0)) for name in DRONE_FACTORS})
    return out


class QuadrotorDronesVec(QuadrotorVec):
    """`QuadrotorDronesVec(n, ..., drones=None, obs_delay=0)`: QuadrotorVec's arguments and these two."""

    def __init__(self, num_envs: int, *args, drones=None, obs_delay: int = 0, **kwargs):
        if isinstance(obs_delay, bool) or not isinstance(obs_delay, int) or not 0 <= obs_delay <= MAX_OBS_DELAY:
            raise UserError(f"quadrotor: obs_delay must be an integer from 0 to {MAX_OBS_DELAY}, got {obs_delay!r}")
        self.drones = None if drones is None else check_drones(drones)
        self.obs_delay = obs_delay
        super().__init__(num_envs, *args, **kwargs)
        drones = self.drones or [dict.fromkeys(DRONE_FACTORS, 1.0)]
        k = len(drones)
        owner = np.arange(num_envs) * k // num_envs  # env i flies drone owner[i]
        self.blocks = [(int(a), int(b)) for a, b in
                       zip(np.searchsorted(owner, np.arange(k)), np.searchsorted(owner, np.arange(k), "right"))]
        self.physics = [dict(inertia=q.INERTIA * d["inertia"], rotor_positions=q.ROTOR_POSITIONS * d["arm"],
                             motor_time_constant=q.MOTOR_TIME_CONSTANT * d["motor_time_constant"]) for d in drones]
        self.models = [q.model(self.reward, self.rotor_speeds, self.position_scale, **p) for p in self.physics]
        self.model = self.models[0]
        self.base_params[...] = [(q.MASS * drones[i]["mass"], q.THRUST_PER_RPM2 * drones[i]["thrust"]) for i in owner]
        self.params[...] = self.base_params
        # the last obs_delay + 1 sensed observations, oldest (the one observed) first
        self.sensed = np.zeros((num_envs, self.obs_delay + 1, SENSED), np.float32)

    def _delayed(self, obs: np.ndarray, fresh=None) -> np.ndarray:
        """obs with its sensed columns as of obs_delay steps ago; `fresh` rows (reset envs) have
        only their current state to remember, all others move on one step (fresh None)."""
        if fresh is None:
            self.sensed[:, :-1] = self.sensed[:, 1:]
            self.sensed[:, -1] = obs[:, :SENSED]
        else:
            self.sensed[fresh] = obs[fresh, None, :SENSED]
        obs[:, :SENSED] = self.sensed[:, 0]
        return obs

    def reset(self, rngs, mask=None, draws: int = 1) -> np.ndarray:
        obs = super().reset(rngs, mask, draws)
        return self._delayed(obs, np.ones(self.num_envs, bool) if mask is None else np.asarray(mask, bool))

    def step(self, actions):
        actions = np.ascontiguousarray(actions, np.float64)
        q._check_finite(actions, "motor command")
        if q._nm_host is None or actions.shape != (self.num_envs, 4):
            obs, reward, terminated = self.step_numpy(actions)
        else:
            n = self.num_envs
            obs, reward, terminated = np.empty((n, self.obs_dim), np.float32), np.empty(n, np.float32), np.empty(n, bool)
            for m, (a, b) in zip(self.models, self.blocks):
                q._nm_host.quadrotor_step(m, self.state[a:b], self.params[a:b], actions[a:b], self.history[a:b],
                                          obs[a:b], reward[a:b], terminated[a:b])
        return self._delayed(obs), reward, terminated

    def _integrate(self, actions: np.ndarray) -> None:
        for p, (a, b) in zip(self.physics, self.blocks):
            self.state[a:b] = q.rk4_step(self.state[a:b], q.rpm_of(actions[a:b]), mass=self.params[a:b, :1],
                                         thrust_per_rpm2=self.params[a:b, 1:], **p)

    def get_state(self) -> np.ndarray:
        return np.concatenate([super().get_state(), self.sensed.reshape(self.num_envs, -1)], 1)

    def set_state(self, state) -> None:
        state = np.asarray(state)
        cut = state.shape[1] - self.sensed[0].size
        super().set_state(state[:, :cut])
        self.sensed[...] = state[:, cut:].reshape(self.sensed.shape)

"""A Crazyflie 2.x quadrotor learning to hover, vectorised: the model, reward, initial states
and termination of "Learning to Fly in Seconds" (Eschmann, Albani, Loianno 2023, arXiv
2311.13081).

Parameters are the published ones of the authors' simulator (arplaboratory/learning-to-fly,
include/learning_to_fly/simulator/parameters/: dynamics/crazy_flie.h, reward_functions/
default.h, init/default.h, termination/default.h):

- mass 0.027 kg, gravity 9.81 m/s^2, J = diag(3.85e-6, 3.85e-6, 5.9675e-6) kg m^2;
- four rotors in an X at (+-0.028, +-0.028, 0) m (front-right, back-right, back-left,
  front-left), each pushing T = 3.16e-10 rpm^2 N along body z and twisting the body about z
  by 0.005964552 T N m with signs (-1, +1, -1, +1);
- first-order motors, time constant 0.15 s, 0 to 21,702 rpm; an action a in [-1, 1] asks
  for (a + 1) / 2 * 21,702 rpm;
- RK4 at 100 Hz, episodes of 500 steps (5 s).

Frames: world and body are x forward, y left, z up (FLU); the quaternion is (w, x, y, z),
body to world; the angular velocity is in the body frame.

Observation (22 + 4 * action_history numbers, 38 by default): position error to the target (the
origin) in units of 0.1 m (`position_scale` 10 per metre: the success radius is 1; the paper
observes metres, 1), the rotation matrix (row-major), linear velocity (world), angular velocity (body), the
four rotor speeds as commands (-1 stopped, 1 full speed), and the last action_history actions,
oldest first (at a reset: the action of the initial rotor speed; 4 by default, the paper has 32).
The paper observes no rotor speed (`rotor_speeds=False`: 18 + 4 * action_history numbers); its
32 actions stand in for them, since a rotor lags its command by 0.15 s. Observed, the state is
whole with a short history: with SAC's quadrotor preset, seeds 0-3 parked their drones 1.5-3
times closer to the target (median 0.03-0.05 m against 0.07-0.09 m) and crashed from 3 of 400
starts against 6 (benchmarks/quadrotor.py's starts). Scaled up, the position error moves the networks' first
layers as strongly as the attitude does from the start: in metres, some policies kept every drone
still at 0.07-0.28 m from the target. A Crazyflie measures no rotor speed, but under this first-order model
its flight code knows them from its own commands (the same low-pass filter, from half speed).

Domain randomisation (`randomize` r > 0, off by default): at each reset an env's mass and its
rotors' thrust coefficient are scaled by factors drawn uniformly from [1 - r, 1 + r] (from the
agent's own generator), so a policy learns to hover drones that differ from the nominal one.

Other drones (`drones`, a list of K dicts of factors of the Crazyflie's `mass`, `thrust`
coefficient, `inertia`, `arm` length and `motor_time_constant`, each 1 if not given): the envs
are cut into K contiguous equal blocks, block k flying drone k (a population's agents own
contiguous envs, so agent k of K flies drone k), with `randomize` drawn around each drone's own
mass and thrust. Delayed sensing (`obs_delay` k steps): the position, rotation and velocities
observed are those of k steps ago (at a reset, the initial state's); the rotor speeds and the
actions, which the flight code knows from its own commands, are current. Either option steps
the drones through envs.quadrotor_drones.QuadrotorDronesVec, one native call per drone.

Reward: 2 - cost / 2. `reward="initial"` is the paper's first-stage cost 5 |p|^2 + 5 (1 - q_w^2)
+ 0.01 |v|^2 + 0.01 |a - a_hover|^2; `reward="target"` the weights its curriculum ends at,
40 |p|^2 + 5 (1 - q_w^2) + |v|^2 + |a - a_hover|^2, which pay for hovering on the target rather
than anywhere in the box; `reward="distance"` adds 2 |p| to the first stage's cost, a pull
toward the target that does not fade near it. `reward="hover"` (the default) is the target's
position, orientation and velocity weights with the first stage's action weight plus 2 |p|,
floored at 0 (L2F's `non_negative` switch): the drone learns the target's damped, centred hover
from the start, and the floor keeps a crash (rewards end at 0) from ever paying more than flying
on where the cost is high. An episode ends when the drone leaves the 1.2 m cube around the target.
An episode that ends in the box within 0.1 m of the target and below 0.2 m/s is a success
(`success()`, which training's evaluations report).
Initial states: one in ten at rest on the target, upright; the others anywhere within 0.2 m
of it and tilted by up to 90 degrees. All of them move at up to 1 m/s and turn at up to
1 rad/s on each axis, rotors at half speed. Training may start from the hardest of several
draws (`reset(..., draws=k)`, training's `start_draws`; `start_difficulty` ranks them).
"""

from typing import NamedTuple

import numpy as np

from neuromotor.errors import UserError

from neuromotor.native import _nm_host  # None in a checkout without the built extension: NumPy steps

MASS = 0.027
GRAVITY = 9.81
INERTIA = np.array([3.85e-6, 3.85e-6, 5.9675e-6])
ROTOR_POSITIONS = np.array([[0.028, -0.028, 0.0], [-0.028, -0.028, 0.0], [-0.028, 0.028, 0.0], [0.028, 0.028, 0.0]])
THRUST_PER_RPM2 = 3.16e-10
TORQUE_PER_THRUST = 0.005964552
YAW_SIGNS = np.array([-1.0, 1.0, -1.0, 1.0])
MOTOR_TIME_CONSTANT = 0.15
RPM_MAX = 21702.0
DT = 0.01
# the paper has 32; with 32 or none, SAC's quadrotor preset crashed every drone of seed 0 after
# 150k steps, with 4 it hovers
ACTION_HISTORY = 4
ROTOR_SPEEDS = True  # observed (see the module)
POSITION_SCALE = 10.0  # per metre, in the observation (see the module)

HOVER_RPM = np.sqrt(MASS * GRAVITY / 4 / THRUST_PER_RPM2)
HOVER_ACTION = 2 * HOVER_RPM / RPM_MAX - 1  # 0.334, the reward's reference action

class Reward(NamedTuple):
    """Weights of the cost position |p|^2 + orientation (1 - q_w^2) + velocity |v|^2 + action
    |a - a_hover|^2 + distance |p|; the reward is REWARD_CONSTANT - REWARD_SCALE * cost, or
    0 where that is negative if non_negative (L2F's Squared reward has the same switch)."""
    position: float
    orientation: float
    velocity: float
    action: float
    distance: float = 0.0
    non_negative: bool = False


# "initial": the first stage of the paper's curriculum, "target" the weights it raises them to
# (reward_functions/default.h: reward_squared_position_only_torque and ..._curriculum_target).
# "distance": the initial weights plus 2 |p|, whose pull toward the target does not fade near it
# as the squared term's does. "hover": see the module; with SAC's quadrotor preset it hovers on
# the target (benchmarks/quadrotor.py), where "initial" parks drones 0.2-0.3 m off, "distance"
# leaves them circling it at 0.3-0.6 m/s and "target" unfloored teaches them to crash.
REWARDS = {"initial": Reward(5.0, 5.0, 0.01, 0.01), "target": Reward(40.0, 5.0, 1.0, 1.0),
           "distance": Reward(5.0, 5.0, 0.01, 0.01, distance=2.0),
           "hover": Reward(40.0, 5.0, 1.0, 0.01, distance=2.0, non_negative=True)}
DEFAULT_REWARD = "hover"
REWARD_SCALE, REWARD_CONSTANT = 0.5, 2.0
POSITION_LIMIT = 0.6  # m, on each axis
# A hover succeeds when the episode's last state is this close to the target and this slow
# (and the drone never left the box).
SUCCESS_DISTANCE, SUCCESS_SPEED = 0.1, 0.2  # m, m/s
# initial states
GUIDANCE = 0.1
INIT_POSITION, INIT_ANGLE, INIT_VELOCITY, INIT_ANGULAR_VELOCITY = 0.2, np.pi / 2, 1.0, 1.0

# state columns
P, Q, V, W, RPM = slice(0, 3), slice(3, 7), slice(7, 10), slice(10, 13), slice(13, 17)
STATE = 17



def model(reward: Reward = REWARDS["initial"], rotor_speeds: bool = ROTOR_SPEEDS,
          position_scale: float = POSITION_SCALE, inertia=INERTIA, rotor_positions=ROTOR_POSITIONS,
          motor_time_constant: float = MOTOR_TIME_CONSTANT) -> np.ndarray:
    """The numbers the native step reads, in the order of its nm_quad_model
    (device/native/nm_host/nm_quadrotor.h), with the reward weights `reward`, observing the
    rotor speeds or not, and the position error times `position_scale` (of the Crazyflie, unless
    another drone's inertia, rotor positions and motor time constant are given)."""
    return np.array([GRAVITY, *inertia, *rotor_positions[:, 0], *rotor_positions[:, 1], TORQUE_PER_THRUST,
                     *YAW_SIGNS, motor_time_constant, RPM_MAX, DT, *reward, REWARD_SCALE, REWARD_CONSTANT,
                     HOVER_ACTION, POSITION_LIMIT, float(rotor_speeds), float(position_scale)], np.float64)


def rotation_matrices(q: np.ndarray) -> np.ndarray:
    """(n, 3, 3) body-to-world rotations of unit quaternions q (n, 4) in (w, x, y, z)."""
    w, x, y, z = q.T
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


def derivative(state: np.ndarray, rpm_command: np.ndarray, mass=MASS, thrust_per_rpm2=THRUST_PER_RPM2,
               inertia=INERTIA, rotor_positions=ROTOR_POSITIONS, motor_time_constant=MOTOR_TIME_CONSTANT) -> np.ndarray:
    """d state / dt of rigid bodies (n, 17) with rotors commanded to rpm_command (n, 4); `mass`
    and `thrust_per_rpm2` are the published values, or one per body (n, 1); the inertia, rotor
    positions and motor time constant are the Crazyflie's unless given."""
    q, v, w, rpm = state[:, Q], state[:, V], state[:, W], state[:, RPM]
    thrust = thrust_per_rpm2 * rpm * rpm                                   # (n, 4) N along body z
    force_body = np.zeros_like(v)
    force_body[:, 2] = thrust.sum(1)
    acceleration = np.einsum("nij,nj->ni", rotation_matrices(q), force_body) / mass
    acceleration[:, 2] -= GRAVITY
    # r x (0, 0, T) = (r_y T, -r_x T, 0), and the rotors' drag about z
    torque = np.stack([thrust @ rotor_positions[:, 1], -(thrust @ rotor_positions[:, 0]),
                       TORQUE_PER_THRUST * (thrust @ YAW_SIGNS)], -1)
    angular_acceleration = (torque - np.cross(w, w * inertia)) / inertia
    qw, qx, qy, qz = q.T
    wx, wy, wz = w.T
    q_dot = 0.5 * np.stack([-qx * wx - qy * wy - qz * wz, qw * wx + qy * wz - qz * wy,
                            qw * wy - qx * wz + qz * wx, qw * wz + qx * wy - qy * wx], -1)
    rpm_dot = (rpm_command - rpm) / motor_time_constant
    return np.concatenate([v, q_dot, acceleration, angular_acceleration, rpm_dot], 1)


def rk4_step(state: np.ndarray, rpm_command: np.ndarray, dt: float = DT, **params) -> np.ndarray:
    """One RK4 step, then the rotor speeds clamped to their range and the quaternion renormalised;
    `params` (mass, thrust_per_rpm2, ...) go to `derivative`."""
    k1 = derivative(state, rpm_command, **params)
    k2 = derivative(state + dt / 2 * k1, rpm_command, **params)
    k3 = derivative(state + dt / 2 * k2, rpm_command, **params)
    k4 = derivative(state + dt * k3, rpm_command, **params)
    out = state + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    np.clip(out[:, RPM], 0.0, RPM_MAX, out=out[:, RPM])
    out[:, Q] /= np.linalg.norm(out[:, Q], axis=1, keepdims=True)
    return out


def rpm_of(actions: np.ndarray) -> np.ndarray:
    return (np.clip(actions, -1.0, 1.0) + 1) / 2 * RPM_MAX


MAX_ACTION_HISTORY = 1024
MAX_RANDOMIZE = 0.5
MAX_POSITION_SCALE = 1000.0


def _check_finite(values: np.ndarray, what: str) -> None:
    if not np.isfinite(values).all():
        index = tuple(int(i) for i in np.argwhere(~np.isfinite(values))[0])
        raise UserError(f"quadrotor: {what} {index} is {float(values[index])!r}: it must be a finite number")


class QuadrotorVec:
    """`QuadrotorVec(n, action_history=4, randomize=0.0, reward="hover", rotor_speeds=True,
    position_scale=10.0)`: n quadrotors (see the module); `drones` and `obs_delay` make a
    QuadrotorDronesVec (envs.env_class chooses it)."""

    obs_dim = 22 + 4 * ACTION_HISTORY  # with the default action history and rotor speeds
    act_dim = 4
    env_kwargs = ("action_history", "randomize", "reward", "rotor_speeds", "position_scale",  # what `--env-kwargs` may set
                  "drones", "obs_delay")  # these two: QuadrotorDronesVec
    variant = ("drones", "obs_delay"), "neuromotor.envs.quadrotor_drones:QuadrotorDronesVec"
    ranks_starts = True  # reset takes draws (training's start_draws)
    max_episode_steps = 500
    gym_id, gym_kwargs = "neuromotor.envs.quadrotor_gym:neuromotor/Quadrotor-v0", {}  # `eval --gymnasium`
    action_low = np.full(4, -1.0, np.float32)
    action_high = np.full(4, 1.0, np.float32)

    def __init__(self, num_envs: int, action_history: int = ACTION_HISTORY, randomize: float = 0.0,
                 reward: str = DEFAULT_REWARD, rotor_speeds: bool = ROTOR_SPEEDS,
                 position_scale: float = POSITION_SCALE):
        if isinstance(action_history, bool) or not isinstance(action_history, int) \
                or not 0 <= action_history <= MAX_ACTION_HISTORY:
            raise UserError(f"quadrotor: action_history must be an integer from 0 to {MAX_ACTION_HISTORY}, "
                            f"got {action_history!r}")
        if isinstance(randomize, bool) or not isinstance(randomize, (int, float)) \
                or not 0 <= randomize <= MAX_RANDOMIZE:
            raise UserError(f"quadrotor: randomize must be a number from 0 to {MAX_RANDOMIZE}, got {randomize!r}")
        if not isinstance(reward, str) or reward not in REWARDS:
            raise UserError(f"quadrotor: reward must be one of {', '.join(REWARDS)}, got {reward!r}")
        if not isinstance(rotor_speeds, bool):
            raise UserError(f"quadrotor: rotor_speeds must be true or false, got {rotor_speeds!r}")
        if isinstance(position_scale, bool) or not isinstance(position_scale, (int, float)) \
                or not 0 < position_scale <= MAX_POSITION_SCALE:
            raise UserError(f"quadrotor: position_scale must be a number above 0 and at most {MAX_POSITION_SCALE:g}, "
                            f"got {position_scale!r}")
        self.num_envs = num_envs
        self.reward = REWARDS[reward]
        self.rotor_speeds = rotor_speeds
        self.position_scale = float(position_scale)
        self.model = model(self.reward, rotor_speeds, self.position_scale)
        self.obs_dim = 18 + 4 * rotor_speeds + 4 * action_history
        self.randomize = float(randomize)
        self.state = np.zeros((num_envs, STATE))
        self.state[:, 3] = 1.0
        self.history = np.zeros((num_envs, action_history, 4))
        # per env: mass and thrust coefficient (the published ones unless randomised)
        self.params = np.tile([MASS, THRUST_PER_RPM2], (num_envs, 1))
        self.base_params = self.params.copy()  # what `randomize` scales

    def _observe(self) -> np.ndarray:
        s = self.state
        rotors = [2 * s[:, RPM] / RPM_MAX - 1] if self.rotor_speeds else []
        return np.concatenate([s[:, P] * self.position_scale, rotation_matrices(s[:, Q]).reshape(-1, 9), s[:, V], s[:, W], *rotors,
                               self.history.reshape(self.num_envs, -1)], 1).astype(np.float32)

    def reset(self, rngs, mask=None, draws: int = 1) -> np.ndarray:
        """Restart the drones where mask is True (all if None), each from an initial state drawn
        from its generator; with `draws` > 1 (training's start_draws), from the hardest of that
        many (start_difficulty)."""
        for i in range(self.num_envs) if mask is None else np.flatnonzero(mask):
            rng = rngs[i]
            s = _initial_state(rng)
            for _ in range(draws - 1):
                other = _initial_state(rng)
                if start_difficulty(other) > start_difficulty(s):
                    s = other
            if self.randomize:
                self.params[i] = self.base_params[i] * rng.uniform(1 - self.randomize, 1 + self.randomize, 2)
            self.state[i] = s
            self.history[i] = 0.0  # the action of half speed
        return self._observe()

    def step(self, actions):
        """(obs, reward, terminated) after one step of every drone under actions (n, 4): motor
        commands in [-1, 1] (beyond it they saturate: clipped); a NaN or infinite command is
        refused before anything moves. The native step where the extension is built, else
        step_numpy (its reference)."""
        actions = np.ascontiguousarray(actions, np.float64)
        _check_finite(actions, "motor command")
        if _nm_host is None or actions.shape != (self.num_envs, 4):
            return self.step_numpy(actions)
        n = self.num_envs
        obs, reward, terminated = np.empty((n, self.obs_dim), np.float32), np.empty(n, np.float32), np.empty(n, bool)
        _nm_host.quadrotor_step(self.model, self.state, self.params, actions, self.history, obs, reward, terminated)
        return obs, reward, terminated

    def step_numpy(self, actions):
        """step in NumPy: the reference the native step is tested against."""
        actions = np.asarray(actions, np.float64)
        self._integrate(actions)
        if self.history.shape[1]:
            self.history[:, :-1] = self.history[:, 1:]
            self.history[:, -1] = np.clip(actions, -1.0, 1.0)
        s = self.state
        w = self.reward
        p2 = (s[:, P] ** 2).sum(1)
        cost = (w.position * p2 + w.orientation * (1 - s[:, 3] ** 2) + w.velocity * (s[:, V] ** 2).sum(1)
                + w.action * ((np.clip(actions, -1.0, 1.0) - HOVER_ACTION) ** 2).sum(1) + w.distance * np.sqrt(p2))
        reward = REWARD_CONSTANT - REWARD_SCALE * cost
        if w.non_negative:
            reward = np.maximum(reward, 0.0)
        reward = reward.astype(np.float32)
        terminated = (np.abs(s[:, P]) > POSITION_LIMIT).any(1) | ~np.isfinite(s).all(1)
        return self._observe(), reward, terminated

    def _integrate(self, actions: np.ndarray) -> None:
        if self.randomize:
            self.state = rk4_step(self.state, rpm_of(actions), mass=self.params[:, :1],
                                  thrust_per_rpm2=self.params[:, 1:])
        else:
            self.state = rk4_step(self.state, rpm_of(actions))

    def success(self) -> np.ndarray:
        """Per drone: would an episode ending now count as a hovering success (near and slow)?"""
        s = self.state
        # a drone spun up until its integration overflowed ends there (terminated, non-finite): no success, no warning
        with np.errstate(over="ignore", invalid="ignore"):
            return (np.linalg.norm(s[:, P], axis=1) < SUCCESS_DISTANCE) & (np.linalg.norm(s[:, V], axis=1) < SUCCESS_SPEED)

    def get_state(self) -> np.ndarray:
        return np.concatenate([self.state, self.history.reshape(self.num_envs, -1), self.params], 1)

    def set_state(self, state) -> None:
        _check_finite(state, "state entry")
        self.state[...] = state[:, :STATE]
        self.history[...] = state[:, STATE:-2].reshape(self.history.shape)
        if self.randomize:  # else every drone is the published one, whatever the state says
            self.params[...] = state[:, -2:]

    draw_projection = "3d"

    @staticmethod
    def draw(ax, state_row) -> None:
        """The drone in 3-D (arms drawn four times their length) and the path it has flown;
        the first call on an axis creates the artists, later calls move them (fast GIFs)."""
        p = state_row[P]
        R = rotation_matrices(state_row[None, Q])[0]
        rotors = p + ROTOR_POSITIONS * 4 @ R.T
        arms = [line for line in ax.lines if line.get_gid() in ("arm", "path")]
        if arms:
            arm0, arm1, path = arms
            arm0.set_data_3d(*rotors[[0, 2]].T)
            arm1.set_data_3d(*rotors[[1, 3]].T)
            xs, ys, zs = (np.append(c, v) for c, v in zip(path.get_data_3d(), p))
            path.set_data_3d(xs, ys, zs)
            return
        ax.plot(*rotors[[0, 2]].T, lw=3, color="#4c72b0", gid="arm")
        ax.plot(*rotors[[1, 3]].T, lw=3, color="#cc4c4c", gid="arm")
        ax.plot([p[0]], [p[1]], [p[2]], lw=1, color="0.5", gid="path")
        ax.scatter([0], [0], [0], marker="+", color="k")
        for set_lim in (ax.set_xlim, ax.set_ylim, ax.set_zlim):
            set_lim(-POSITION_LIMIT, POSITION_LIMIT)
        ax.set_xlabel("x", fontsize=7)
        ax.set_ylabel("y", fontsize=7)
        ax.set_zlabel("z", fontsize=7)
        ax.tick_params(labelsize=6)

    plot_rows = 2

    @staticmethod
    def plot_episode(axes, states, title: str = "") -> None:
        """Position and attitude (roll, pitch, yaw) over the episode, on two matplotlib axes."""
        t = np.arange(len(states)) * DT
        w, x, y, z = states[:, Q].T
        roll = np.degrees(np.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y)))
        pitch = np.degrees(np.arcsin(np.clip(2 * (w * y - z * x), -1, 1)))
        yaw = np.degrees(np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)))
        top, bottom = axes
        for k, name in enumerate("xyz"):
            top.plot(t, states[:, k], label=name)
        top.set_ylabel("position error (m)")
        top.set_title(title)
        for series, name in ((roll, "roll"), (pitch, "pitch"), (yaw, "yaw")):
            bottom.plot(t, series, label=name)
        bottom.set_ylabel("attitude (degrees)")
        bottom.set_xlabel("time (s)")
        for ax in (top, bottom):
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8, loc="upper right")


def _initial_state(rng) -> np.ndarray:
    """One draw of the initial-state distribution (see the module)."""
    s = np.zeros(STATE)
    s[3] = 1.0
    if rng.uniform() >= GUIDANCE:
        s[P] = rng.uniform(-INIT_POSITION, INIT_POSITION, 3)
        s[Q] = _random_tilt(rng, INIT_ANGLE)
    s[V] = rng.uniform(-INIT_VELOCITY, INIT_VELOCITY, 3)
    s[W] = rng.uniform(-INIT_ANGULAR_VELOCITY, INIT_ANGULAR_VELOCITY, 3)
    s[RPM] = RPM_MAX / 2
    return s


def start_difficulty(s: np.ndarray) -> float:
    """How hard an initial state is to recover from: its tilt (1 - q_w^2: 0 upright, 0.5 at 90
    degrees), half its speed (m/s) and its largest offset from the target (m). The starts the
    policies crashed from are tilted by 75-85 degrees and move at about 1 m/s."""
    return float((1 - s[3] ** 2) + np.linalg.norm(s[V]) / 2 + np.abs(s[P]).max())


def _random_tilt(rng, max_angle: float) -> np.ndarray:
    """A uniformly random orientation whose rotation angle is at most max_angle (rejection)."""
    while True:
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        q *= np.sign(q[0]) or 1.0
        if 2 * np.arccos(min(q[0], 1.0)) <= max_angle:
            return q

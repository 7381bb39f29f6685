# nm_pendulum: gymnasium's Pendulum-v1 for the board, one environment, float32.
#
# The same dynamics, reward and reset as the host's neuromotor.envs.PendulumVec
# (which is exactly gymnasium's), written in the same order of operations. The
# state is kept as doubles, like gymnasium's; a board computes with its own float
# (single precision on most MCU ports, double on the unix build, where episodes
# equal the host's step for step). Observations are float32, as on the host.
import math
from array import array

MAX_SPEED = 8.0
MAX_TORQUE = 2.0
DT = 0.05
G = 10.0
M = 1.0
L = 1.0
MAX_EPISODE_STEPS = 200
OBS_DIM = 3
ACT_DIM = 1
PI = math.pi
TWO_PI = 2.0 * math.pi


class Pendulum:
    obs_dim = OBS_DIM
    act_dim = ACT_DIM
    max_episode_steps = MAX_EPISODE_STEPS
    action_scale = MAX_TORQUE   # actions in [-1, 1] map to torque = 2 a
    action_offset = 0.0
    action_low = -MAX_TORQUE
    action_high = MAX_TORQUE

    def __init__(self):
        self.state = array("d", [0.0, 0.0])  # theta, theta_dot
        self.obs = array("f", [1.0, 0.0, 0.0])

    def _observe(self):
        th = self.state[0]
        o = self.obs
        o[0] = math.cos(th)
        o[1] = math.sin(th)
        o[2] = self.state[1]
        return o

    def set_state(self, theta, theta_dot):
        self.state[0] = theta
        self.state[1] = theta_dot
        return self._observe()

    def reset(self, uniform):
        """uniform(lo, hi) -> one random float (the trainer's RNG)."""
        return self.set_state(uniform(-PI, PI), uniform(-1.0, 1.0))

    def step(self, torque):
        """Apply a torque (clipped to +-2); returns the reward. self.obs is updated in place."""
        st = self.state
        th = st[0]
        thdot = st[1]
        u = torque
        if u > MAX_TORQUE:
            u = MAX_TORQUE
        elif u < -MAX_TORQUE:
            u = -MAX_TORQUE
        norm_th = (th + PI) % TWO_PI - PI
        cost = norm_th * norm_th + 0.1 * (thdot * thdot) + 0.001 * (u * u)
        newthdot = thdot + (3.0 * G / (2.0 * L) * math.sin(th) + 3.0 / (M * L * L) * u) * DT
        if newthdot > MAX_SPEED:
            newthdot = MAX_SPEED
        elif newthdot < -MAX_SPEED:
            newthdot = -MAX_SPEED
        st[0] = th + newthdot * DT
        st[1] = newthdot
        self._observe()
        return -cost

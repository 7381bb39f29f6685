"""Batched MuJoCo locomotion: Ant-v5, HalfCheetah-v5 and Hopper-v5 for N envs at once.

One `MjModel` (loaded from the XML gymnasium ships) and one `MjData` per env.
`step` hands contiguous slices of the envs to a thread pool; `mujoco.mj_step`
releases the GIL, so the slices simulate in parallel. Each worker copies the
few arrays the task needs into preallocated float64 buffers, and the main
thread computes observations, rewards and terminations for all envs at once
with NumPy.

Everything that defines the task is gymnasium v5's, term by term (see
gymnasium/envs/mujoco/{ant,half_cheetah,hopper}_v5.py): `frame_skip` substeps
of `mj_step` then `mj_rnePostConstraint` (for the contact forces), the
forward velocity from the main body (Ant) or root x (HalfCheetah, Hopper)
before and after, healthy rewards, control and contact costs, healthy ranges
and reset noise. Given the same qpos/qvel and actions, trajectories equal
gymnasium's to float64 rounding; observations and rewards are handed out as
float32.

`ant` observes 27 numbers (`include_cfrc_ext_in_observation=False`, as the
RLtools paper's Ant-v4), so its policies are the 27->256->256->8 networks that
fit a microcontroller; the contact cost stays in the reward, as in Ant-v5.
`gym_id` and `gym_kwargs` name the gymnasium env that matches each class.

Episodes follow the registry contract in `neuromotor.envs`: `step` returns
obs, reward and terminated, and never resets or truncates; after a terminal
step the env keeps its final state. `neuromotor.envs.autoreset.AutoReset`
adds truncation at `max_episode_steps` (1000, gymnasium's TimeLimit) and
gymnasium's same-step auto-reset, returning obs, reward, terminated, truncated
and the final observations; the algorithms train through it.
"""

import importlib.util
import os
import re
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from neuromotor.errors import UserError

INSTALL_HINT = "pip install 'neuromotor[mujoco]'"


def _import_mujoco():
    try:
        import mujoco
    except ImportError:
        raise UserError(f"the MuJoCo environments need the mujoco extra: {INSTALL_HINT}") from None
    return mujoco


def _asset(xml: str) -> str:
    # Find gymnasium's bundled models without importing gymnasium (slow, and not needed here).
    spec = importlib.util.find_spec("gymnasium")
    if spec is None or not spec.submodule_search_locations:
        raise UserError(f"the MuJoCo environments use gymnasium's model files: {INSTALL_HINT}")
    path = os.path.join(spec.submodule_search_locations[0], "envs", "mujoco", "assets", xml)
    if not os.path.exists(path):
        raise UserError(f"{path} is missing; reinstall with {INSTALL_HINT}")
    return path


def _load_model(mujoco, path: str):
    """The compiled model of `path`, without MuJoCo's deprecation warning file.

    half_cheetah.xml uses the compiler attribute `settotalmass`, which MuJoCo 4
    deprecates with a warning that it writes to MUJOCO_LOG.TXT in the current
    directory. Compiling without it and scaling afterwards, as the warning
    advises, gives the same model (masses, inertias and derived constants).
    """
    with open(path) as f:
        xml = f.read()
    found = re.search(r'\ssettotalmass="([^"]+)"', xml)
    if not found:
        return mujoco.MjModel.from_xml_path(path)
    model = mujoco.MjModel.from_xml_string(xml.replace(found.group(0), ""))
    mujoco.mj_setTotalmass(model, float(found.group(1)))
    mujoco.mj_setConst(model, mujoco.MjData(model))
    return model


def max_threads() -> int:
    """Cores this process may run on: the `--threads auto` value and the upper bound."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


THREADS_ENV = "NEUROMOTOR_MUJOCO_THREADS"


def set_default_threads(value) -> None:
    """The threads of envs built without an explicit count (`--threads`); validated now.
    Kept in the environment, which population shard processes receive (neuromotor.training.parallel)."""
    os.environ[THREADS_ENV] = str(parse_threads(value))


def parse_threads(value) -> int:
    """'auto' or an int in [1, cores]; anything else is a UserError."""
    top = max_threads()
    if value in (None, "auto"):
        return top
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise UserError(f"--threads must be 'auto' or an integer, not {value!r}") from None
    if not 1 <= n <= top:
        raise UserError(f"--threads {n} is out of range: this machine allows 1..{top}")
    return n


class MujocoVec:
    # On the class as well as on instances: export and hardware-in-the-loop check a
    # policy against the factory before they build (and pay for) any env.
    obs_dim: int
    act_dim: int
    xml: str
    frame_skip: int
    gym_id: str
    gym_kwargs: dict = {}
    max_episode_steps = 1000
    reset_noise_scale: float
    forward_reward_weight = 1.0
    ctrl_cost_weight: float
    terminate_when_unhealthy = False

    def __init__(self, num_envs: int, threads=None):
        mujoco = self._mujoco = _import_mujoco()
        self.num_envs = num_envs
        self.threads = min(parse_threads(os.environ.get(THREADS_ENV, "auto") if threads is None else threads), num_envs)
        self.model = _load_model(mujoco, _asset(self.xml))
        self.datas = [mujoco.MjData(self.model) for _ in range(num_envs)]
        m = self.model
        self.nq, self.nv = m.nq, m.nv
        # gymnasium's init_qpos/init_qvel: the state of a fresh MjData.
        self.init_qpos = self.datas[0].qpos.copy()
        self.init_qvel = self.datas[0].qvel.copy()
        self.dt = m.opt.timestep * self.frame_skip
        if m.nu != self.act_dim:
            raise RuntimeError(f"{self.xml}: {m.nu} actuators, expected {self.act_dim}")
        self.action_low = m.actuator_ctrlrange[:, 0].astype(np.float32)
        self.action_high = m.actuator_ctrlrange[:, 1].astype(np.float32)
        # Filled by the workers, read by the vectorised task code below.
        self.qpos = np.zeros((num_envs, self.nq))
        self.qvel = np.zeros((num_envs, self.nv))
        self.xy = np.zeros((num_envs, 2))        # _xy after the last step or reset
        self.x_before = np.zeros((num_envs, 2))
        self.cfrc_ext = np.zeros((num_envs, m.nbody, 6))
        bounds = np.linspace(0, num_envs, self.threads + 1).astype(int)
        self._slices = [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
        self._pool = ThreadPoolExecutor(self.threads) if self.threads > 1 else None
        self._actions = None
        self._state_spec = mujoco.mjtState.mjSTATE_INTEGRATION
        self._state_size = mujoco.mj_stateSize(m, self._state_spec)
        if self._observe().shape[1] != self.obs_dim:
            raise RuntimeError(f"{type(self).__name__} observes {self._observe().shape[1]} numbers, "
                               f"expected {self.obs_dim}")

    # --- what differs between tasks ---------------------------------------
    def _xy(self, d) -> np.ndarray:
        """The position the forward velocity is measured from."""
        return d.qpos[:2]

    def _copy_extra(self, i, d) -> None:
        """Per-env arrays beyond qpos/qvel the task needs (called in a worker)."""

    def _observe(self) -> np.ndarray:
        raise NotImplementedError

    def _healthy(self) -> np.ndarray:
        return np.ones(self.num_envs, bool)

    def _reward(self, x_velocity, actions, healthy) -> np.ndarray:
        ctrl_cost = self.ctrl_cost_weight * np.sum(np.square(actions), axis=1)
        return self.forward_reward_weight * x_velocity - ctrl_cost

    def _reset_qvel(self, rng) -> np.ndarray:
        return self.init_qvel + self.reset_noise_scale * rng.standard_normal(self.nv)

    # --- simulation -------------------------------------------------------
    def _copy_out(self, i, d) -> None:
        self.xy[i] = self._xy(d)
        self.qpos[i] = d.qpos
        self.qvel[i] = d.qvel
        self._copy_extra(i, d)

    def _work(self, sl: slice) -> None:
        mj = self._mujoco
        for i in range(sl.start, sl.stop):
            d = self.datas[i]
            # gymnasium reads the main body's position before stepping; that is
            # the value recorded after this env's previous step or reset.
            self.x_before[i] = self.xy[i]
            d.ctrl[:] = self._actions[i]
            mj.mj_step(self.model, d, nstep=self.frame_skip)
            # cfrc_ext is only computed on request (gymnasium does the same).
            mj.mj_rnePostConstraint(self.model, d)
            self._copy_out(i, d)

    def step(self, actions):
        """Advance every env by one control step (`frame_skip` substeps).

        actions: (num_envs, act_dim), used as given (MuJoCo clamps ctrl to its
        range, the control cost sees the unclamped action, as in gymnasium).
        Returns obs (num_envs, obs_dim) float32, reward (num_envs,) float32,
        terminated (num_envs,) bool. No reset, no truncation.
        """
        self._actions = np.asarray(actions, dtype=np.float32)
        if self._pool is None:
            self._work(slice(0, self.num_envs))
        else:
            # list() re-raises a worker's exception here.
            list(self._pool.map(self._work, self._slices))
        x_velocity = (self.xy - self.x_before)[:, 0] / self.dt
        healthy = self._healthy()
        reward = self._reward(x_velocity, self._actions, healthy)
        terminated = ~healthy if self.terminate_when_unhealthy else np.zeros(self.num_envs, bool)
        return self._observe(), reward.astype(np.float32), terminated

    def set_qpos_qvel(self, i, qpos, qvel) -> None:
        """gymnasium's reset of env i: mj_resetData (zeroes warm starts and time),
        then its set_state (qpos, qvel, mj_forward)."""
        mj = self._mujoco
        d = self.datas[i]
        mj.mj_resetData(self.model, d)
        d.qpos[:] = qpos
        d.qvel[:] = qvel
        mj.mj_forward(self.model, d)
        self._copy_out(i, d)

    def reset(self, rngs, mask=None) -> np.ndarray:
        """(Re)start the envs where mask is True with gymnasium's reset noise from rngs[i].

        The draws are gymnasium's, in its order, so `reset(seed=s)` of the
        gymnasium env and rngs[i] = np.random.default_rng(s) give the same state.
        """
        lo, hi = -self.reset_noise_scale, self.reset_noise_scale
        for i in range(self.num_envs) if mask is None else np.flatnonzero(mask):
            qpos = self.init_qpos + rngs[i].uniform(low=lo, high=hi, size=self.nq)
            self.set_qpos_qvel(i, qpos, self._reset_qvel(rngs[i]))
        return self._observe()

    def get_state(self) -> np.ndarray:
        """(num_envs, k) float64: MuJoCo's integration state (qpos, qvel, warm
        start, time, ...) and the recorded main-body position, so a checkpoint
        continues bit-exactly."""
        out = np.zeros((self.num_envs, self._state_size + 2))
        for i, d in enumerate(self.datas):
            self._mujoco.mj_getState(self.model, d, out[i, :-2], self._state_spec)
        out[:, -2:] = self.xy
        return out

    def set_state(self, state) -> None:
        mj = self._mujoco
        state = np.asarray(state, dtype=np.float64)
        if state.shape != (self.num_envs, self._state_size + 2):
            raise ValueError(f"state has shape {state.shape}, expected {(self.num_envs, self._state_size + 2)}")
        for i, d in enumerate(self.datas):
            mj.mj_setState(self.model, d, np.ascontiguousarray(state[i, :-2]), self._state_spec)
            mj.mj_forward(self.model, d)  # derived quantities (xpos, contacts) for the new state
            mj.mj_rnePostConstraint(self.model, d)
            self._copy_out(i, d)
        self.xy[...] = state[:, -2:]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None


class AntVec(MujocoVec):
    obs_dim = 27
    act_dim = 8
    xml = "ant.xml"
    frame_skip = 5
    gym_id = "Ant-v5"
    gym_kwargs = {"include_cfrc_ext_in_observation": False}
    include_cfrc_ext_in_observation = False
    reset_noise_scale = 0.1
    ctrl_cost_weight = 0.5
    contact_cost_weight = 5e-4
    healthy_reward = 1.0
    healthy_z_range = (0.2, 1.0)
    contact_force_range = (-1.0, 1.0)
    terminate_when_unhealthy = True
    main_body = 1

    def _xy(self, d):
        return d.xpos[self.main_body, :2]

    def _copy_extra(self, i, d):
        self.cfrc_ext[i] = d.cfrc_ext

    def _contact_forces(self):
        return np.clip(self.cfrc_ext, *self.contact_force_range)

    def _observe(self):
        parts = [self.qpos[:, 2:], self.qvel]
        if self.include_cfrc_ext_in_observation:
            parts.append(self._contact_forces()[:, 1:].reshape(self.num_envs, -1))
        return np.concatenate(parts, axis=1).astype(np.float32)

    def _healthy(self):
        lo, hi = self.healthy_z_range
        finite = np.isfinite(self.qpos).all(axis=1) & np.isfinite(self.qvel).all(axis=1)
        z = self.qpos[:, 2]
        return finite & (lo <= z) & (z <= hi)

    def _reward(self, x_velocity, actions, healthy):
        contact_cost = self.contact_cost_weight * np.sum(np.square(self._contact_forces()), axis=(1, 2))
        return super()._reward(x_velocity, actions, healthy) + self.healthy_reward * healthy - contact_cost


class AntFullVec(AntVec):
    """Ant-v5 with its default 105-number observation (contact forces included)."""
    obs_dim = 105
    gym_kwargs = {}
    include_cfrc_ext_in_observation = True


class HalfCheetahVec(MujocoVec):
    obs_dim = 17
    act_dim = 6
    xml = "half_cheetah.xml"
    frame_skip = 5
    gym_id = "HalfCheetah-v5"
    reset_noise_scale = 0.1
    ctrl_cost_weight = 0.1

    def _observe(self):
        return np.concatenate([self.qpos[:, 1:], self.qvel], axis=1).astype(np.float32)


class HopperVec(MujocoVec):
    obs_dim = 11
    act_dim = 3
    xml = "hopper.xml"
    frame_skip = 4
    gym_id = "Hopper-v5"
    reset_noise_scale = 5e-3
    ctrl_cost_weight = 1e-3
    healthy_reward = 1.0
    healthy_state_range = (-100.0, 100.0)
    healthy_z_range = (0.7, float("inf"))
    healthy_angle_range = (-0.2, 0.2)
    terminate_when_unhealthy = True

    def _reset_qvel(self, rng):
        lo, hi = -self.reset_noise_scale, self.reset_noise_scale
        return self.init_qvel + rng.uniform(low=lo, high=hi, size=self.nv)

    def _observe(self):
        return np.concatenate([self.qpos[:, 1:], np.clip(self.qvel, -10, 10)], axis=1).astype(np.float32)

    def _healthy(self):
        state = np.concatenate([self.qpos, self.qvel], axis=1)[:, 2:]
        z, angle = self.qpos[:, 1], self.qpos[:, 2]
        (s_lo, s_hi), (z_lo, z_hi), (a_lo, a_hi) = (
            self.healthy_state_range, self.healthy_z_range, self.healthy_angle_range)
        return (np.all((s_lo < state) & (state < s_hi), axis=1)
                & (z_lo < z) & (z < z_hi) & (a_lo < angle) & (angle < a_hi))

    def _reward(self, x_velocity, actions, healthy):
        return super()._reward(x_velocity, actions, healthy) + self.healthy_reward * healthy


def gymnasium_returns(env_cls, act, num_agents: int, episodes: int, seed: int) -> np.ndarray:
    """(num_agents, episodes) returns of a deterministic policy in gymnasium's own env.

    act: obs (num_agents, episodes, obs_dim) -> actions, e.g. an algorithm's `act`.
    Episode e of every agent starts from gymnasium's `reset(seed=seed + e)`, so
    agents are compared on the same initial states; an episode ends when
    gymnasium says so (termination, or its TimeLimit at max_episode_steps).
    """
    if not hasattr(env_cls, "gym_id"):
        raise UserError(f"{env_cls.__name__} has no gymnasium counterpart to evaluate in")
    try:
        import gymnasium as gym
    except ImportError:
        raise UserError(f"evaluating in gymnasium needs the mujoco extra: {INSTALL_HINT}") from None
    _import_mujoco()
    envs = [[gym.make(env_cls.gym_id, **env_cls.gym_kwargs) for _ in range(episodes)] for _ in range(num_agents)]
    obs = np.array([[env.reset(seed=seed + e)[0] for e, env in enumerate(row)] for row in envs], np.float32)
    returns = np.zeros((num_agents, episodes))
    alive = np.ones((num_agents, episodes), bool)
    while alive.any():
        actions = act(obs)
        for k, e in zip(*np.nonzero(alive)):
            o, r, terminated, truncated, _ = envs[k][e].step(actions[k, e])
            obs[k, e] = o
            returns[k, e] += r
            alive[k, e] = not (terminated or truncated)
    for row in envs:
        for env in row:
            env.close()
    return returns

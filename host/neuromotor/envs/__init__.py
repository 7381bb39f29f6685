"""Environment registry: name -> "module:Class" of a vectorised environment.

Adding an environment is one entry in ENVS. Entries are imported lazily so that
`neuromotor train pendulum` never pays for importing MuJoCo.

A vectorised environment class is constructed as `Class(num_envs)` and provides:
  num_envs, obs_dim, act_dim, max_episode_steps        ints
  action_low, action_high                              float32 (act_dim,)
  reset(rngs, mask=None) -> obs (num_envs, obs_dim) float32
      (re)starts the envs where mask is True (all if None); env i draws its
      initial state from rngs[i], a numpy Generator, so each agent of a
      population owns its stream.
  step(actions) -> obs, reward (num_envs,), terminated (num_envs,) bool
      actions are in env units (float32 (num_envs, act_dim)); no auto-reset:
      the caller sees the final observation and decides when to reset.
      Truncation is the caller's job too (episode length vs max_episode_steps).
  get_state() / set_state(state)                       arrays, for checkpoints
Optional: draw(ax, state_row) to render one env's state with matplotlib (GIFs).

Training steps envs through neuromotor.envs.autoreset.AutoReset, which adds
truncation, gymnasium's same-step auto-reset and episode returns.
"""

from neuromotor.registry import lookup

ENVS = {
    "pendulum": "neuromotor.envs.pendulum:PendulumVec",
    # gymnasium v5 MuJoCo tasks (need the mujoco extra); `ant` observes 27 numbers like the paper's Ant-v4.
    "ant": "neuromotor.envs.mujoco_vec:AntVec",
    "ant-full": "neuromotor.envs.mujoco_vec:AntFullVec",
    "halfcheetah": "neuromotor.envs.mujoco_vec:HalfCheetahVec",
    "hopper": "neuromotor.envs.mujoco_vec:HopperVec",
}


def env_class(name: str):
    return lookup(ENVS, "environment", name)


def make_env(name: str, num_envs: int):
    return env_class(name)(num_envs)

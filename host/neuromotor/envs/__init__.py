"""Environments: the built-in vectorised envs by name, and any gymnasium env.

`env_class(name, kwargs, vector)` is what every command builds envs from:
  - a built-in name (ENVS: name -> "module:Class", imported lazily so that
    `neuromotor train pendulum` never pays for importing MuJoCo);
  - a registered gymnasium id (`Pendulum-v1`, `InvertedPendulum-v5`, ...) or
    `module:attr` (a gymnasium.Env subclass or a function returning an env,
    importable from the working directory or the installed packages), with
    `kwargs` passed to gymnasium.make / the factory and `vector` "sync" or
    "async" (see neuromotor.envs.gymnasium_vec). A run records the three in
    config.json ("env", "env_kwargs", "vector").
Either way the result is called as `factory(num_envs)` and gives a vectorised
env with this protocol:
  num_envs, obs_dim, act_dim, max_episode_steps        ints
  action_low, action_high                              float32 (act_dim,), finite
  reset(rngs, mask=None) -> obs (num_envs, obs_dim) float32
      (re)starts the envs where mask is True (all if None); env i draws its
      initial state from rngs[i], a numpy Generator, so each agent of a
      population owns its stream.
  step(actions) -> obs, reward (num_envs,) float32, terminated (num_envs,) bool
      actions are in env units (float32 (num_envs, act_dim)); no auto-reset:
      the caller sees the final observation and decides when to reset.
      Truncation at max_episode_steps is the caller's job too.
  truncated (optional)                                 (num_envs,) bool
      envs whose episode the env itself cut short (a time limit) at the last
      step; stepping such an env again without a reset restarts it.
  ranks_starts (optional, default False)               bool
      reset also takes draws=k: each env starts from the hardest of k initial
      states (training's start_draws; the quadrotor).
  restorable (optional, default True)                  bool
  get_state() / set_state(state)                       arrays, for checkpoints
      An env with restorable False cannot be snapshotted: on resume its
      episodes in flight restart (AutoReset.restore).
Optional: draw(ax, state_row) to render one env's state with matplotlib (GIFs).
A built-in env class may take keyword arguments, named in its `env_kwargs` attribute;
given any, `env_class` returns the factory envs.configured.Configured.
The factory (class or GymEnv) has obs_dim, act_dim, action_low/high and
max_episode_steps too, for memory estimates and evaluators.

Algorithms step envs through neuromotor.envs.autoreset.AutoReset, which adds
truncation, gymnasium's same-step auto-reset and episode returns; on resume they
restore the env and their next observations with `AutoReset.restore(env_state,
obs)`, never with env.set_state directly.
"""

import json

from neuromotor.errors import UserError
from neuromotor.registry import lookup

ENVS = {
    "pendulum": "neuromotor.envs.pendulum:PendulumVec",
    "quadrotor": "neuromotor.envs.quadrotor:QuadrotorVec",  # a Crazyflie learning to hover (L2F's model)
    # gymnasium v5 MuJoCo tasks (need the mujoco extra); `ant` observes 27 numbers like the paper's Ant-v4.
    "ant": "neuromotor.envs.mujoco_vec:AntVec",
    "ant-full": "neuromotor.envs.mujoco_vec:AntFullVec",
    "halfcheetah": "neuromotor.envs.mujoco_vec:HalfCheetahVec",
    "hopper": "neuromotor.envs.mujoco_vec:HopperVec",
}

# The algorithm `train` uses on an env when none is named: TD3 (the paper's) unless listed here.
DEFAULT_ALGOS = {"quadrotor": "sac"}  # SAC hovers it (benchmarks/quadrotor.py); TD3 with L2F's settings did not
# A user's own env (module:attr) gets SAC: its entropy-tuned exploration needs no scale fitted to the
# env, where TD3's fixed action noise and the pendulum's settings left a point mass worse than untrained.
USER_ENV_ALGO = "sac"


def default_algo(name) -> str:
    if not isinstance(name, str):
        return "td3"
    if name in DEFAULT_ALGOS:
        return DEFAULT_ALGOS[name]
    return USER_ENV_ALGO if ":" in name else "td3"


# gymnasium's MuJoCo tasks, any version (HalfCheetah-v5, ...): algorithms give them
# their MuJoCo defaults, as they do the built-in MuJoCo envs.
GYM_MUJOCO = {"Ant", "HalfCheetah", "Hopper", "Humanoid", "HumanoidStandup", "InvertedDoublePendulum",
              "InvertedPendulum", "Pusher", "Reacher", "Swimmer", "Walker2d"}

_probed = {}  # a gymnasium env is made once per process to read its spaces


def is_mujoco(name: str) -> bool:
    """A built-in MuJoCo env or one of gymnasium's MuJoCo tasks."""
    return (name in ENVS and "mujoco" in ENVS[name]) or name.partition("-v")[0] in GYM_MUJOCO


def env_class(name: str, kwargs: dict = None, vector: str = "sync"):
    """The env factory for a built-in name, a gymnasium id or module:attr (UserError if none)."""
    if not isinstance(name, str) or not name:
        raise UserError(f"an environment is a name, a gymnasium id or module:attr, got {name!r}")
    if name in ENVS:
        cls = lookup(ENVS, "environment", name)
        if not kwargs:
            return cls
        allowed = getattr(cls, "env_kwargs", ())
        unknown = sorted(set(kwargs) - set(allowed))
        if unknown:
            raise UserError(f"the built-in environment {name!r} takes "
                            + (f"the env_kwargs {', '.join(allowed)}" if allowed else "no env_kwargs")
                            + f" (got {', '.join(unknown)})")
        variant = getattr(cls, "variant", None)  # (its own kwargs, "module:Class"): a subclass takes them
        if variant is not None and set(kwargs) & set(variant[0]):
            cls = lookup({name: variant[1]}, "environment", name)
        from neuromotor.envs.configured import Configured

        return Configured(cls, kwargs)
    from neuromotor.envs.gymnasium_vec import GymEnv

    key = (name, json.dumps(kwargs or {}, sort_keys=True, default=repr), vector)
    if key not in _probed:
        _probed[key] = GymEnv.probe(name, kwargs or {}, vector, builtin=tuple(ENVS))
    return _probed[key]


def make_env(name: str, num_envs: int, kwargs: dict = None):
    return env_class(name, kwargs)(num_envs)

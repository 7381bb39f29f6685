"""Algorithm registry: name -> "module:Class". Adding an algorithm is one entry in ALGOS.

An algorithm class trains a population of independent agents in lockstep
(agent k is seeded with seeds[k] and owns its RNG stream) and provides:

  Config                      dataclass of its hyperparameters (defaults = paper config)
  __init__(cfg, env_factory, seeds)
                              env_factory(num_envs) builds a vectorised env (see
                              neuromotor.envs); the algorithm decides how many envs
                              each agent gets and lays them out agent-major.
  seeds                       the list it was given (one agent per seed)
  steps                       env steps taken per agent so far
  advance()                   one iteration (TD3, SAC: one env step + updates; PPO: one
                              rollout + epochs); increases `steps`
  act(obs)                    deterministic actions in env units, obs (P, E, obs_dim)
  pop_episode_returns()       per agent, the training-episode returns finished
                              since the last call (for progress and metrics)
  policy_spec(agent)          the deployable deterministic actor (neuromotor.policy.spec)
  state_dict() / load_state_dict(arrays)
                              everything needed to continue bit-exactly, as a flat
                              dict of numpy arrays (no pickles): parameters,
                              optimiser state, buffers, RNG states, env state, step

The trainer never sees an algorithm directly: neuromotor.training.runs.build wraps it in
neuromotor.training.parallel.Sharded, which splits a population into shards stepped in
parallel worker processes and presents the same interface.
"""

from dataclasses import replace

from neuromotor.errors import UserError
from neuromotor.registry import lookup

ALGOS = {
    "td3": "neuromotor.algos.td3:TD3",
    "ppo": "neuromotor.algos.ppo:PPO",
    "sac": "neuromotor.algos.sac:SAC",
}


def algo_class(name: str):
    return lookup(ALGOS, "algorithm", name)


def named_config(configs: dict, algo: str, env_name: str, preset: str | None, mujoco: str):
    """(Config, RunConfig settings), copies of configs[preset]; without a preset, the env's own
    (a config named after it), `mujoco` for the other MuJoCo tasks and "pendulum" for every other env."""
    from neuromotor.envs import is_mujoco

    name = preset or (env_name if env_name in configs else mujoco if is_mujoco(env_name) else "pendulum")
    if name not in configs:
        raise UserError(f"unknown {algo} preset {name!r}; known: {', '.join(configs)}")
    cfg, run = configs[name]
    return replace(cfg), dict(run)

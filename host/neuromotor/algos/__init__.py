"""Algorithm registry: name -> "module:Class". Adding an algorithm is one module and one entry
in ALGOS; an algorithm outside the package is named "module:Class" instead (`--algo
mymodule:MyAlgo`, imported from the working directory or the installed packages), and a
run records that name.

An algorithm module declares everything about its algorithm on the class; nothing else
in the package names it. The class trains a population of independent agents in
lockstep (agent k is seeded with seeds[k] and owns its RNG stream) and provides:

  Config                      dataclass of its hyperparameters (defaults = paper config), with
                              RULES ({field: rule}, see neuromotor.rules: every field has one)
                              and optionally check(), the rules that tie its fields together
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
  policy_state(cfg, env, agents), policy_from_state(cfg, env, state, agent)
                              (classmethods) the checkpoint arrays a policy is made of, and
                              the policy made from them: how export reads a run's policy
                              without building the algorithm
  state_dict() / load_state_dict(arrays)
                              everything needed to continue bit-exactly, as a flat
                              dict of numpy arrays (no pickles): parameters,
                              optimiser state, buffers, RNG states, env state, step
Optional:
  defaults(env_name, preset)  (Config, RunConfig settings) of a named preset, else the env's
                              (named_config below); without it, Config() and no presets
  memory_parts(cfg, obs_dim, act_dim, agents)
                              ({part: bytes}, training envs) of what a population allocates,
                              checked against free memory before it is (neuromotor.training.memory)
  scalars()                   per-agent numbers for TensorBoard (neuromotor.training.tensorboard)
  begin_episodes(envs)        a recurrent actor: the next act() calls step `envs` envs per agent,
                              each from the actor's initial state (evaluation calls it at every start)
A compiled backend lives beside its algorithm (td3_native.py over native_family.py and
neuromotor.native) and is chosen by a Config field (`backend`).

The trainer never sees an algorithm directly: neuromotor.training.runs.build wraps it in
neuromotor.training.parallel.Sharded, which splits a population into shards stepped in
parallel worker processes and presents the same interface.
"""

import dataclasses
from dataclasses import replace

from neuromotor.errors import UserError
from neuromotor.registry import lookup, plugin

ALGOS = {
    "td3": "neuromotor.algos.td3:TD3",
    "ppo": "neuromotor.algos.ppo:PPO",
    "sac": "neuromotor.algos.sac:SAC",
    "td3-gru": "neuromotor.algos.td3_gru:RecurrentTD3",
    "sac-gru": "neuromotor.algos.sac_gru:RecurrentSAC",
}


def algo_class(name: str):
    """The class of a registered algorithm, or of a user's "module:Class"."""
    if not (isinstance(name, str) and name not in ALGOS and ":" in name):
        return lookup(ALGOS, "algorithm", name)
    cls = plugin(name, "algorithm")
    if not (isinstance(cls, type) and dataclasses.is_dataclass(getattr(cls, "Config", None))):
        raise UserError(f"algorithm {name!r} is not an algorithm class: it needs a Config dataclass "
                        "(see neuromotor.algos)")
    return cls


def named_config(configs: dict, algo: str, env_name: str, preset: str | None, mujoco: str):
    """(Config, RunConfig settings), copies of configs[preset]; without a preset, the env's own
    (a config named after it), `mujoco` for the other MuJoCo tasks and "pendulum" for every other env."""
    from neuromotor.envs import is_mujoco

    name = preset or (env_name if env_name in configs else mujoco if is_mujoco(env_name) else "pendulum")
    if name not in configs:
        raise UserError(f"unknown {algo} preset {name!r}; known: {', '.join(configs)}")
    cfg, run = configs[name]
    return replace(cfg), dict(run)

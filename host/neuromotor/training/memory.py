"""How much memory a run will take, checked before anything is allocated.

The estimate counts the large arrays each algorithm allocates (replay buffers,
rollout storage, networks with their targets/gradients/optimiser state, per-batch
workspaces, pre-drawn random numbers) plus the environments for training and
evaluation. It is a lower bound within tens of percent, meant to catch a run
that cannot fit (a population of 100,000 agents, a billion-row replay buffer)
with numbers the user can act on, not to predict the resident size.
"""

import os

from neuromotor.errors import UserError
from neuromotor.training.evaluation import EVAL_MAX_ENVS

F32 = 4
MUJOCO_ENV_BYTES = 256 * 1024   # one MjData with its buffers (Ant: ~200 KB)
SMALL_ENV_BYTES = 256           # a closed-form env's state and observation
HEADROOM = 0.8                  # of the available memory, for all the estimate leaves out


def _net_params(sizes) -> int:
    return sum((a + 1) * b for a, b in zip(sizes[:-1], sizes[1:]))


def _workspace_row(sizes) -> int:
    """Bytes of one batch row of a forward/backward workspace (outputs, input grads, relu zeros)."""
    return 3 * F32 * sum(n + 1 for n in sizes)


def td3_parts(cfg, obs_dim, act_dim, agents) -> dict:
    from neuromotor.algos.offpolicy import RNG_BLOCK, ReplayRow, block_updates

    actor = [obs_dim, *cfg.actor_hidden, act_dim]
    critic = [obs_dim + act_dim, *cfg.critic_hidden, 1]
    B = cfg.batch_size
    return {
        "replay buffers": agents * cfg.buffer_size * ReplayRow(obs_dim, act_dim).width * F32,
        # parameters, target, gradient, two Adam moments, one scratch copy
        "networks": agents * 6 * F32 * (_net_params(actor) + 2 * _net_params(critic)),
        "batch workspaces": agents * B * (3 * _workspace_row(actor) + 7 * _workspace_row(critic)
                                          + 12 * F32 * (obs_dim + act_dim + 1)),
        "pre-drawn random numbers": agents * F32 * (block_updates(cfg.update_every) * (3 * B + 2 * B * act_dim)
                                                    + RNG_BLOCK * 2 * act_dim),
    }, agents


def ppo_parts(cfg, obs_dim, act_dim, agents) -> dict:
    actor = [obs_dim, *cfg.actor_hidden, act_dim]
    critic = [obs_dim, *cfg.critic_hidden, 1]
    rows = cfg.num_envs * cfg.num_steps
    return {
        # normalised obs, actions, means, log-probs, values, rewards, dones, float64 raw obs
        "rollout storage": agents * rows * ((obs_dim + 1) * F32 + 2 * act_dim * F32 + 3 * F32 + 1 + 8 * obs_dim),
        # exploration noise, advantages, returns, the minibatch permutation, float64 obs statistics
        "update temporaries": agents * rows * (act_dim * F32 + 2 * F32 + 8 + 16 * obs_dim),
        "networks": agents * 5 * F32 * (_net_params(actor) + _net_params(critic) + act_dim),
        "batch workspaces": agents * (cfg.minibatch_size + cfg.num_envs)
                            * (_workspace_row(actor) + _workspace_row(critic)),
    }, agents * cfg.num_envs


def sac_parts(cfg, obs_dim, act_dim, agents) -> dict:
    from neuromotor.algos.offpolicy import RNG_BLOCK, ReplayRow, block_updates

    actor = [obs_dim, *cfg.actor_hidden, 2 * act_dim]
    critic = [obs_dim + act_dim, *cfg.critic_hidden, 1]
    B = cfg.batch_size
    return {
        "replay buffers": agents * cfg.buffer_size * ReplayRow(obs_dim, act_dim).width * F32,
        # actor: parameters, gradient, two Adam moments; critics also a target and a scratch copy
        "networks": agents * F32 * (4 * _net_params(actor) + 12 * _net_params(critic)),
        "batch workspaces": agents * B * (3 * _workspace_row(actor) + 6 * _workspace_row(critic)
                                          + 12 * F32 * (obs_dim + act_dim + 1)),
        "pre-drawn random numbers": agents * F32 * (block_updates(cfg.update_every) * (3 * B + 3 * B * act_dim)
                                                    + RNG_BLOCK * 2 * act_dim),
    }, agents


ESTIMATES = {"td3": td3_parts, "ppo": ppo_parts, "sac": sac_parts}


def estimate(algo: str, algo_cfg, run_cfg, env_cls, agents: int) -> dict:
    """{part: bytes} of a run, without allocating any of it."""
    probe = env_cls(1)
    parts, train_envs = ESTIMATES[algo](algo_cfg, probe.obs_dim, probe.act_dim, agents)
    eval_envs = agents * min(run_cfg.eval_episodes, max(1, EVAL_MAX_ENVS // agents))
    per_env = MUJOCO_ENV_BYTES if hasattr(probe, "model") else SMALL_ENV_BYTES
    parts["environments"] = (train_envs + eval_envs) * per_env
    return parts


def available() -> int:
    """Bytes this process may still allocate: the smaller of MemAvailable and the cgroup's headroom."""
    limits = []
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    limits.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
        with open("/sys/fs/cgroup/memory.current") as f:
            current = int(f.read())
        if limit != "max":
            limits.append(int(limit) - current)
    except (OSError, ValueError):
        pass
    if not limits:  # not Linux: physical memory is the best bound there is
        try:
            limits.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        except (ValueError, OSError, AttributeError):
            return 1 << 62
    return max(0, min(limits))


def gb(n: int) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB"


def check(algo: str, algo_cfg, run_cfg, env_cls, agents: int) -> None:
    """UserError, with the numbers, when a run would not fit in the memory available now."""
    parts = estimate(algo, algo_cfg, run_cfg, env_cls, agents)
    need, free = sum(parts.values()), available()
    if need > HEADROOM * free:
        biggest = sorted(parts.items(), key=lambda kv: -kv[1])[:3]
        raise UserError(f"this run needs about {gb(need)} of memory ({', '.join(f'{k} {gb(v)}' for k, v in biggest)}"
                        f" for {agents} agent(s)) but {gb(free)} is available; use fewer seeds or smaller "
                        "buffers, batches or networks")

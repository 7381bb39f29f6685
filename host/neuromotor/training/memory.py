"""How much memory a run will take, checked before anything is allocated.

The estimate counts the large arrays each algorithm allocates (its `memory_parts`:
replay buffers, rollout storage, networks with their targets/gradients/optimiser
state, per-batch workspaces, pre-drawn random numbers) plus the environments for
training and evaluation. It is a lower bound within tens of percent, meant to catch
a run that cannot fit (a population of 100,000 agents, a billion-row replay buffer)
with numbers the user can act on, not to predict the resident size.
"""

import os

from neuromotor.errors import UserError
from neuromotor.training import address_space
from neuromotor.training.evaluation import EVAL_MAX_ENVS

MUJOCO_ENV_BYTES = 256 * 1024   # one MjData with its buffers (Ant: ~200 KB)
SMALL_ENV_BYTES = 256           # a closed-form env's state and observation
HEADROOM = 0.8                  # of the available memory, for all the estimate leaves out


def estimate(algo_cls, algo_cfg, run_cfg, env_cls, agents: int) -> dict:
    """{part: bytes} of a run of the algorithm class `algo_cls`, without allocating any of it: the
    algorithm's own parts (its `memory_parts`; none for an algorithm without one) and the environments."""
    probe = env_cls(1)
    if hasattr(algo_cls, "memory_parts"):
        parts, train_envs = algo_cls.memory_parts(algo_cfg, probe.obs_dim, probe.act_dim, agents)
    else:
        parts, train_envs = {}, agents
    eval_envs = agents * min(run_cfg.eval_episodes, max(1, EVAL_MAX_ENVS // agents))
    per_env = MUJOCO_ENV_BYTES if hasattr(probe, "model") else SMALL_ENV_BYTES
    parts["environments"] = (train_envs + eval_envs) * per_env
    return parts


def available() -> int:
    """Bytes this process may still allocate: the smallest of MemAvailable, the cgroup's headroom
    and the address space left under RLIMIT_AS."""
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
    mappable = address_space.left()  # ulimit -v: a bound of its own, however much is free
    if mappable is not None:
        limits.append(mappable)
    if not limits:  # not Linux: physical memory is the best bound there is
        try:
            limits.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        except (ValueError, OSError, AttributeError):
            return 1 << 62
    return max(0, min(limits))


def gb(n: int) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB"


def check(algo_cls, algo_cfg, run_cfg, env_cls, agents: int) -> None:
    """UserError, with the numbers, when a run would not fit in the memory available now."""
    parts = estimate(algo_cls, algo_cfg, run_cfg, env_cls, agents)
    need, free = sum(parts.values()), available()
    if need > HEADROOM * free:
        biggest = sorted(parts.items(), key=lambda kv: -kv[1])[:3]
        raise UserError(f"this run needs about {gb(need)} of memory ({', '.join(f'{k} {gb(v)}' for k, v in biggest)}"
                        f" for {agents} agent(s)) but {gb(free)} is available; use fewer seeds or smaller "
                        "buffers, batches or networks")

"""Training through the gymnasium adapter on Pendulum-v1 vs gymnasium's own vector env: env steps/s.

    .venv/bin/python benchmarks/gym_adapter.py                  # 16 envs, 20,000 env steps per row
    .venv/bin/python benchmarks/gym_adapter.py --envs 64 --steps 50000

Rows, all with the same number of Pendulum-v1 copies (--envs) in one process of
one BLAS thread, timed after construction and the first reset:

  gymnasium SyncVectorEnv, random actions   the reference: gymnasium stepping alone
  adapter, random actions                   GymVec + AutoReset: what the adapter adds
  PPO training via the adapter              num_envs = --envs (one agent), the pendulum
                                            preset otherwise: acting, stepping, updates
  TD3 training via the adapter              a population of --envs agents, one env each
  PPO / TD3 on the built-in `pendulum`      the same training on the NumPy-vectorised env

The ratio that matters is PPO training via the adapter over gymnasium's random
stepping (training should keep at least half of gymnasium's own stepping rate).
No adapter can beat 1 / (1 + gymnasium's rate / PPO's rate on the built-in env):
training pays gymnasium's stepping and the algorithm's own work per step; the
table prints that bound beside the ratio.
Each row runs --repeat times, the rows taking turns (so that a change in the
machine's load falls on all of them alike); the median counts. Every row is
timed in wall time and in the process's CPU time: on a machine other processes
share, the wall-time rates depend on how much of a core each row got, while the
CPU-time rates count the work alone, so their ratio is the one to compare with
an idle machine's. The 1-minute load average is read before and after: above
--idle-load the results are marked "shared machine". Prints a table, writes
benchmarks/results/gym_adapter.json.
"""

import argparse
import os
import platform
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_limits

from benchutil import RESULTS, write_json
from neuromotor.training import config
from neuromotor.algos.ppo import PPO
from neuromotor.algos.td3 import TD3
from neuromotor.algos.td3 import Config as TD3Config
from neuromotor.envs import env_class
from neuromotor.envs.autoreset import AutoReset


class Clock:
    """Wall and CPU time of the timed part of a row."""

    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu

    def rates(self, env_steps):
        return env_steps / self.wall, env_steps / self.cpu


def _step_rates(step, actions, n, steps):
    """Env steps per wall and CPU second of `step` over at least `steps` steps of n envs,
    cycling through `actions`."""
    iters = -(-steps // n)
    with Clock() as clock:
        for i in range(iters):
            step(actions[i % len(actions)])
    return clock.rates(iters * n)


def gymnasium_random(n, steps):
    import gymnasium
    from gymnasium.vector import AutoresetMode, SyncVectorEnv

    vec = SyncVectorEnv([lambda: gymnasium.make("Pendulum-v1")] * n, autoreset_mode=AutoresetMode.SAME_STEP)
    vec.reset(seed=0)
    vec.action_space.seed(0)
    actions = [vec.action_space.sample() for _ in range(64)]
    rates = _step_rates(vec.step, actions, n, steps)
    vec.close()
    return rates


def adapter_random(n, steps):
    env = env_class("Pendulum-v1")(n)
    rng = np.random.default_rng(0)
    episodes = AutoReset(env, [np.random.default_rng(s) for s in range(n)])
    episodes.reset()
    actions = [rng.uniform(-2, 2, (n, 1)).astype(np.float32) for _ in range(64)]
    rates = _step_rates(episodes.step, actions, n, steps)
    env.close()
    return rates


def ppo_training(env_name, n, steps):
    cfg, _ = PPO.defaults("pendulum")
    cfg.num_envs = n
    cfg.minibatch_size = n * cfg.num_steps // 4  # the preset's four minibatches per epoch
    config.validate(cfg)
    algo = PPO(cfg, env_class(env_name), [0])
    per_iter = n * cfg.num_steps
    iters = max(1, -(-steps // per_iter))
    with Clock() as clock:
        for _ in range(iters):
            algo.advance()
    return clock.rates(iters * per_iter)


def td3_training(env_name, n, steps):
    cfg = TD3Config(learning_starts=100)
    algo = TD3(cfg, env_class(env_name), list(range(n)))
    for _ in range(cfg.learning_starts):  # warm-up steps (no updates) are not what training costs
        algo.advance()
    iters = max(1, -(-steps // n))
    with Clock() as clock:
        for _ in range(iters):
            algo.advance()
    return clock.rates(iters * n)


ROWS = [
    ("gymnasium SyncVectorEnv, random actions", "gymnasium_random", lambda n, s: gymnasium_random(n, s)),
    ("adapter, random actions", "adapter_random", lambda n, s: adapter_random(n, s)),
    ("PPO training via the adapter", "ppo_adapter", lambda n, s: ppo_training("Pendulum-v1", n, s)),
    ("PPO training on built-in pendulum", "ppo_builtin", lambda n, s: ppo_training("pendulum", n, s)),
    ("TD3 training via the adapter", "td3_adapter", lambda n, s: td3_training("Pendulum-v1", n, s)),
    ("TD3 training on built-in pendulum", "td3_builtin", lambda n, s: td3_training("pendulum", n, s)),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--envs", type=int, default=16, help="Pendulum-v1 copies in every row (default 16)")
    ap.add_argument("--steps", type=int, default=20_000, help="env steps per row (default 20000)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--idle-load", type=float, default=0.5,
                    help="1-minute load average above which the machine counts as shared (default 0.5)")
    ap.add_argument("--out", default=str(RESULTS / "gym_adapter.json"))
    args = ap.parse_args()

    load_before = os.getloadavg()[0]
    runs = {key: [] for _, key, _ in ROWS}
    with threadpool_limits(1, "blas"):
        for _ in range(args.repeat):
            for _, key, fn in ROWS:
                runs[key].append(fn(args.envs, args.steps))
    load_after = os.getloadavg()[0]
    shared = max(load_before, load_after) > args.idle_load
    results = {key: {"label": label, "env_steps_per_s": statistics.median(w for w, _ in runs[key]),
                     "env_steps_per_cpu_s": statistics.median(c for _, c in runs[key]),
                     "runs_wall": [w for w, _ in runs[key]], "runs_cpu": [c for _, c in runs[key]]}
               for label, key, _ in ROWS}
    base = results["gymnasium_random"]["env_steps_per_s"]
    base_cpu = results["gymnasium_random"]["env_steps_per_cpu_s"]
    for r in results.values():
        r["over_gymnasium_random"] = r["env_steps_per_s"] / base
        r["over_gymnasium_random_cpu"] = r["env_steps_per_cpu_s"] / base_cpu

    note = "shared machine: other processes were running, these rates are not the machine's" if shared else "idle"
    print(f"Pendulum-v1, {args.envs} envs, {args.steps} env steps per row, median of {args.repeat}, "
          f"one process, one BLAS thread; load average {load_before:.2f} -> {load_after:.2f} ({note})")
    print(f"{'row':<44} {'env steps/s':>12} {'x gymnasium':>12} {'per CPU s':>12} {'x gymnasium':>12}")
    for r in results.values():
        print(f"{r['label']:<44} {r['env_steps_per_s']:>12.0f} {r['over_gymnasium_random']:>12.2f} "
              f"{r['env_steps_per_cpu_s']:>12.0f} {r['over_gymnasium_random_cpu']:>12.2f}")
    target = results["ppo_adapter"]["over_gymnasium_random"]
    target_cpu = results["ppo_adapter"]["over_gymnasium_random_cpu"]
    # Training via any adapter pays gymnasium's stepping plus the algorithm's own work per step
    # (what it costs on the built-in env, whose stepping is nearly free): the best it can keep.
    bound = 1 / (1 + base / results["ppo_builtin"]["env_steps_per_s"])
    bound_cpu = 1 / (1 + base_cpu / results["ppo_builtin"]["env_steps_per_cpu_s"])
    print(f"PPO training via the adapter keeps {target:.2f}x of gymnasium's random stepping in wall time, "
          f"{target_cpu:.2f}x in CPU time (target >= 0.5); gymnasium's stepping plus PPO's own work per step "
          f"allow at most {bound:.2f}x (wall), {bound_cpu:.2f}x (CPU)")
    doc = {"envs": args.envs, "steps": args.steps, "repeat": args.repeat, "machine": platform.platform(),
           "cpus": os.cpu_count(), "load_average_before": load_before, "load_average_after": load_after,
           "shared_machine": shared, "rows": results, "ppo_adapter_over_gymnasium_random": target,
           "ppo_adapter_over_gymnasium_random_cpu": target_cpu,
           "ppo_over_gymnasium_random_bound": bound, "ppo_over_gymnasium_random_bound_cpu": bound_cpu}
    print(f"wrote {write_json(args.out, doc)}")


if __name__ == "__main__":
    main()

"""TD3 on Pendulum-v1, the RLtools paper configuration, 10k steps: how fast, and does it solve it.

    .venv/bin/python benchmarks/td3_pendulum.py                   # one agent, BLAS with 1 and 2 threads
    .venv/bin/python benchmarks/td3_pendulum.py --seeds 16        # + a population of 16 in one process
    .venv/bin/python benchmarks/td3_pendulum.py --compare sb3     # + Stable-Baselines3 TD3 (run `make compare` first)
    .venv/bin/python benchmarks/td3_pendulum.py --rltools ~/rltools/build/td3_bench   # + your build of RLtools

--rltools takes a binary you built yourself from an RLtools checkout: its own
paper benchmark, src/rl/environments/pendulum/td3/cpu/benchmark.cpp, with its
OpenBLAS backend (e.g. g++ -std=c++17 -O3 -ffast-math -march=native
-I<checkout>/include -DRL_TOOLS_BACKEND_ENABLE_OPENBLAS ... -lopenblas). It trains
exactly 10,000 steps without evaluation; it is run with one BLAS thread, three
times, and the median counts. Nothing of RLtools ships with neuromotor.

Everything is measured in the same run (the machine may be shared, so only
ratios within one run mean something). Training time excludes evaluation; the
final return is the mean of 10 deterministic episodes. Prints a table, writes
benchmarks/results/td3_pendulum.json and .png.
"""

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from neuromotor.algos.td3 import TD3, Config
from neuromotor.envs import env_class
from neuromotor.evaluation import Evaluator
from neuromotor.parallel import Sharded

RESULTS = Path(__file__).resolve().parent / "results"
SOLVED = -200.0


def ours(seeds, steps, shards, blas_threads):
    env = env_class("pendulum")
    with threadpool_limits(blas_threads, "blas"):
        algo = Sharded(TD3, Config(), env, seeds, shards)
        t0, c0 = time.perf_counter(), algo.process_time()
        algo.advance(until=steps)
        wall, cpu = time.perf_counter() - t0, algo.process_time() - c0
    returns = Evaluator(env, seeds, 10).run(algo, steps).mean(axis=1)
    algo.close()
    return {"agents": len(seeds), "shards": shards, "blas_threads": blas_threads, "steps": steps,
            "wall_s": wall, "cpu_s": cpu, "steps_per_s": steps * len(seeds) / wall,
            "wall_per_agent_s": wall / len(seeds), "agents_per_minute": 60 * len(seeds) / wall,
            "returns": returns.tolist(), "return_mean": float(returns.mean()),
            "solved": int((returns >= SOLVED).sum())}


def sb3(seed, steps):
    try:
        import gymnasium as gym
        import torch
        from stable_baselines3 import TD3 as SB3TD3
        from stable_baselines3.common.evaluation import evaluate_policy
        from stable_baselines3.common.noise import NormalActionNoise
    except ImportError:
        sys.exit("--compare sb3 needs stable-baselines3 and torch: run `make compare` first")
    torch.set_num_threads(1)
    env = gym.make("Pendulum-v1")
    # Same configuration; SB3 works in [-1, 1] internally like we do, so the noise scales match.
    model = SB3TD3("MlpPolicy", env, learning_rate=1e-3, buffer_size=10_000, learning_starts=100,
                   batch_size=100, tau=0.005, gamma=0.99, train_freq=1, gradient_steps=1, policy_delay=2,
                   action_noise=NormalActionNoise(np.zeros(1), 0.1 * np.ones(1)),
                   target_policy_noise=0.2, target_noise_clip=0.5,
                   policy_kwargs=dict(net_arch=[64, 64]), seed=seed, device="cpu", verbose=0)
    t0, c0 = time.perf_counter(), time.process_time()
    model.learn(total_timesteps=steps)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    env.reset(seed=10_000 + seed)
    mean, _ = evaluate_policy(model, env, n_eval_episodes=10, deterministic=True)
    return {"agents": 1, "steps": steps, "wall_s": wall, "cpu_s": cpu, "steps_per_s": steps / wall,
            "return_mean": float(mean), "solved": int(mean >= SOLVED), "torch": torch.__version__}


def rltools(binary: Path, runs: int = 3):
    """Wall and CPU seconds of a user-built RLtools pendulum TD3 benchmark (median of runs)."""
    if not os.access(binary, os.X_OK):
        sys.exit(f"--rltools {binary}: not an executable file")
    times = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run([str(binary)], check=True, stdout=subprocess.DEVNULL,
                       env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append((wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime))
    wall, cpu = (statistics.median(x) for x in zip(*times))
    return {"agents": 1, "steps": 10_000, "wall_s": wall, "cpu_s": cpu, "steps_per_s": 10_000 / wall,
            "runs": [{"wall_s": w, "cpu_s": c} for w, c in times], "binary": str(binary),
            "return_mean": None, "solved": None}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seeds", type=int, default=0, help="also train a population of N agents in one process")
    p.add_argument("--shards", type=int, default=os.cpu_count(), help="population shards (threads)")
    p.add_argument("--blas-threads", default="1,2", help="BLAS thread counts to try for the single agent")
    p.add_argument("--compare", choices=["sb3"], help="also train Stable-Baselines3 TD3")
    p.add_argument("--rltools", type=Path, metavar="BINARY", help="also time your build of RLtools' TD3 benchmark")
    p.add_argument("--out", type=Path, default=RESULTS / "td3_pendulum")
    args = p.parse_args()

    rows = {}
    for t in [int(x) for x in args.blas_threads.split(",")]:
        rows[f"neuromotor 1 agent, BLAS {t} thread(s)"] = ours([args.seed], args.steps, 1, t)
    if args.seeds:
        rows[f"neuromotor {args.seeds} agents, {args.shards} shards"] = ours(
            list(range(args.seeds)), args.steps, min(args.shards, args.seeds), 1)
    if args.compare == "sb3":
        rows["stable-baselines3 TD3, torch 1 thread"] = sb3(args.seed, args.steps)
    if args.rltools:
        if args.steps != 10_000:
            sys.exit("--rltools: RLtools' benchmark trains 10,000 steps; leave --steps at 10000")
        rows["RLtools (C++, OpenBLAS 1 thread)"] = rltools(args.rltools)

    best_single = min((r for k, r in rows.items() if k.startswith("neuromotor 1 agent")), key=lambda r: r["wall_s"])
    print(f"\nTD3 Pendulum-v1, {args.steps} steps, paper configuration; "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    print(f"{'':42} {'wall s':>8} {'cpu s':>8} {'steps/s':>9} {'s/agent':>8} {'agents/min':>10} {'return':>8} {'solved':>7}")
    for name, r in rows.items():
        print(f"{name:42} {r['wall_s']:8.2f} {r['cpu_s']:8.2f} {r['steps_per_s']:9.0f} "
              f"{r['wall_s'] / r['agents']:8.2f} {60 * r['agents'] / r['wall_s']:10.1f} "
              + (f"{r['return_mean']:8.1f} {r['solved']:>4}/{r['agents']}" if r["solved"] is not None else f"{'-':>8} {'-':>7}"))
    # Speed-ups of neuromotor over each peer in this run (below 1: the peer is faster). Per agent
    # in the population, peer time / our time per agent is the agents-per-minute yardstick.
    ratios = {}
    pop = rows.get(f"neuromotor {args.seeds} agents, {args.shards} shards")
    for label, key, peer in (("SB3", "sb3", rows.get("stable-baselines3 TD3, torch 1 thread")),
                             ("RLtools", "rltools", rows.get("RLtools (C++, OpenBLAS 1 thread)"))):
        if peer is None:
            continue
        # CPU time too: on a shared machine wall time mostly measures the neighbours.
        single = ratios[f"{key}_over_neuromotor_single"] = peer["wall_s"] / best_single["wall_s"]
        single_cpu = ratios[f"{key}_over_neuromotor_single_cpu"] = peer["cpu_s"] / best_single["cpu_s"]
        print(f"speed-up over {label} (single agent): {single:.2f}x wall, {single_cpu:.2f}x CPU time")
        if pop:
            per_agent = ratios[f"{key}_over_neuromotor_per_agent_in_population"] = \
                peer["wall_s"] / pop["wall_per_agent_s"]
            per_agent_cpu = ratios[f"{key}_over_neuromotor_per_agent_in_population_cpu"] = \
                peer["cpu_s"] * pop["agents"] / pop["cpu_s"]
            print(f"speed-up over {label} (per agent, population; = agents/min ratio): "
                  f"{per_agent:.2f}x wall, {per_agent_cpu:.2f}x CPU time")

    args.out.parent.mkdir(parents=True, exist_ok=True)
    doc = {"benchmark": "td3_pendulum", "command": " ".join(sys.argv), "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
           "cpus": os.cpu_count(), "load_avg_1min": os.getloadavg()[0], "numpy": np.__version__,
           "results": rows, "ratios": ratios}
    args.out.with_suffix(".json").write_text(json.dumps(doc, indent=2) + "\n")
    plot(rows, args.out.with_suffix(".png"), args.steps)
    print(f"wrote {args.out.with_suffix('.json')} and {args.out.with_suffix('.png')}")


def plot(rows, path, steps):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(rows)
    per_agent = [rows[n]["wall_s"] / rows[n]["agents"] for n in names]
    fig, ax = plt.subplots(figsize=(8, 0.6 * len(names) + 1.5))
    bars = ax.barh(names, per_agent, color=["#3b7dd8" if n.startswith("neuromotor") else "#999999" for n in names])
    ax.bar_label(bars, [f"{v:.2f} s" for v in per_agent], padding=3)
    ax.invert_yaxis()
    ax.set_xlabel(f"wall seconds per agent for {steps} TD3 steps (lower is better)")
    ax.set_title("TD3 on Pendulum-v1, RLtools paper configuration")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()

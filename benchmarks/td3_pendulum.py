"""TD3 on Pendulum-v1, the RLtools paper configuration, 10k steps: how fast, and does it solve it.

    .venv/bin/python benchmarks/td3_pendulum.py                   # one agent, 1 and 2 threads, both backends
    .venv/bin/python benchmarks/td3_pendulum.py --seeds 16        # + a population of 16 (one process per shard)
    .venv/bin/python benchmarks/td3_pendulum.py --compare sb3     # + Stable-Baselines3 TD3 (run `make compare` first)
                                                                  #   and our rows with SB3's update beside
    .venv/bin/python benchmarks/td3_pendulum.py --rltools ~/rltools/build/td3_bench   # + your build of RLtools

Every row says how many threads it may use (BLAS threads for neuromotor and
RLtools, torch threads for SB3; a population uses one process of one thread
per shard), and every peer runs at each thread count of --threads. Speed-ups
are only taken between rows with the same thread count.

neuromotor runs once per TD3 backend of --backends: `native` (the compiled
kernels: acting, the pendulum, the replay store and the update of the whole
population in one call per step) and `numpy` (the reference). Ratios against the
native rows are named ..._over_neuromotor_..., against the NumPy rows
..._over_neuromotor_numpy_....

neuromotor also runs once per update scheme of --schemes (default: `rltools`,
and `rltools,shared` with --compare sb3):
  rltools   the default, RLtools' update: each critic learns from its own minibatch
            and the actor from a third (the rows without a scheme in their name)
  shared    `shared_minibatch = true`, SB3's update: both critics and the actor learn
            from one minibatch per step (rows "neuromotor <backend> shared_minibatch")
Every peer is compared with the rows of its own update, the same work per step:
SB3 with the shared rows (the headline against SB3, ..._over_neuromotor_...) and
RLtools with the rltools rows. The ratio of SB3 to the rltools rows is shown too,
named ..._rltools_update_... (ours doing more work per step than SB3's).

--rltools takes a binary you built yourself from an RLtools checkout: its own
paper benchmark, src/rl/environments/pendulum/td3/cpu/benchmark.cpp, with its
OpenBLAS backend (e.g. g++ -std=c++17 -O3 -ffast-math -march=native
-I<checkout>/include -DRL_TOOLS_BACKEND_ENABLE_OPENBLAS ... -lopenblas). It trains
exactly 10,000 steps without evaluation. It runs 5 times per thread count and the
median counts. Its time is the training time it reports itself ("Time: <s>s", from
after its allocation and initialisation to the last step); a binary that reports
none is timed from outside, less the median start-up of the same binary started
as a no-op (the dynamic loader only, LD_TRACE_LOADED_OBJECTS=1). The JSON says
which ("time_source"). Nothing of RLtools ships with neuromotor.

Everything is measured in the same run (the machine may be shared, so only
ratios within one run mean something). Training time excludes evaluation; the
final return is the mean of 10 deterministic episodes. Prints a table, writes
benchmarks/results/td3_pendulum.json and .png.
"""

import argparse
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from benchutil import RESULTS, plt, save_png, write_json
from neuromotor.algos.td3 import TD3, Config
from neuromotor.native import _nm_host
from neuromotor.envs import env_class
from neuromotor.training.evaluation import Evaluator
from neuromotor.training.parallel import Sharded

SOLVED = -200.0
RLTOOLS_STEPS = 10_000
RLTOOLS_TIME = re.compile(r"^Time: ([0-9.]+) ?s$", re.M)


def ours(seeds, steps, shards, blas_threads, backend, shared=False):
    env = env_class("pendulum")
    with threadpool_limits(blas_threads, "blas"):
        algo = Sharded(TD3, Config(backend=backend, shared_minibatch=shared), env, seeds, shards)
        t0, c0 = time.perf_counter(), algo.process_time()
        algo.advance(until=steps)
        wall, cpu = time.perf_counter() - t0, algo.process_time() - c0
    returns = Evaluator(env, seeds, 10).run(algo, steps).mean(axis=1)
    algo.close()
    return {"agents": len(seeds), "backend": backend, "shared_minibatch": shared, "shards": shards, "threads": shards * blas_threads, "steps": steps,
            "wall_s": wall, "cpu_s": cpu, "steps_per_s": steps * len(seeds) / wall,
            "wall_per_agent_s": wall / len(seeds), "agents_per_minute": 60 * len(seeds) / wall,
            "returns": returns.tolist(), "return_mean": float(returns.mean()),
            "solved": int((returns >= SOLVED).sum())}


def sb3(seed, steps, threads):
    try:
        import gymnasium as gym
        import torch
        from stable_baselines3 import TD3 as SB3TD3
        from stable_baselines3.common.evaluation import evaluate_policy
        from stable_baselines3.common.monitor import Monitor
        from stable_baselines3.common.noise import NormalActionNoise
    except ImportError:
        sys.exit("--compare sb3 needs stable-baselines3 and torch: run `make compare` first")
    torch.set_num_threads(threads)
    env = Monitor(gym.make("Pendulum-v1"))  # episode returns as evaluate_policy expects them
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
    return {"agents": 1, "threads": threads, "steps": steps, "wall_s": wall, "cpu_s": cpu, "steps_per_s": steps / wall,
            "return_mean": float(mean), "solved": int(mean >= SOLVED), "torch": torch.__version__}


def _blas_env(threads: int) -> dict:
    return dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
                MKL_NUM_THREADS=str(threads))


def _dynamically_linked(binary: Path) -> bool:
    """True when the ELF names a program interpreter (the dynamic loader)."""
    from elftools.elf.elffile import ELFFile
    from elftools.common.exceptions import ELFError
    try:
        with open(binary, "rb") as f:
            return any(seg["p_type"] == "PT_INTERP" for seg in ELFFile(f).iter_segments())
    except ELFError:
        return False


def startup_s(binary: Path, runs: int) -> float:
    """Median wall seconds of starting the binary without running it: the dynamic loader maps
    it and its libraries, lists them and exits (what ldd does); 0 for a static binary."""
    if not _dynamically_linked(binary):
        return 0.0
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([str(binary)], check=True, stdout=subprocess.DEVNULL,
                       env=dict(os.environ, LD_TRACE_LOADED_OBJECTS="1"))
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def rltools(binary: Path, threads: int, runs: int = 5):
    """Training seconds of a user-built RLtools pendulum TD3 benchmark (median of runs): the time it
    reports itself, or else wall time less the binary's start-up."""
    if not os.access(binary, os.X_OK):
        sys.exit(f"--rltools {binary}: not an executable file")
    measured = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run([str(binary)], check=True, capture_output=True, text=True, env=_blas_env(threads))
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        reported = RLTOOLS_TIME.findall(proc.stdout + proc.stderr)
        measured.append({"process_wall_s": wall, "reported_s": float(reported[-1]) if reported else None,
                         "cpu_s": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime})
    if all(m["reported_s"] is not None for m in measured):
        source, startup = "reported by the binary", None
        times = [m["reported_s"] for m in measured]
    else:
        startup = startup_s(binary, runs)
        source = "wall time less start-up (LD_TRACE_LOADED_OBJECTS)" if startup else \
            "wall time (not dynamically linked: no start-up to subtract)"
        times = [m["process_wall_s"] - startup for m in measured]
    wall = statistics.median(times)
    cpu = statistics.median(m["cpu_s"] for m in measured)  # of the whole process, start-up included
    return {"agents": 1, "threads": threads, "steps": RLTOOLS_STEPS, "wall_s": wall, "cpu_s": cpu,
            "steps_per_s": RLTOOLS_STEPS / wall, "time_source": source, "startup_s": startup, "runs": measured,
            "binary": str(binary), "return_mean": None, "solved": None}


# The update scheme (shared_minibatch) each peer runs: the rows of ours it is compared with.
PEER_SHARED = {"sb3": True, "rltools": False}


def speedups(rows: dict) -> dict:
    """Peer time / neuromotor time, only between rows with the same thread count (above 1:
    neuromotor is faster). Per agent of a population, the peer's one agent against the
    population's time per agent (the agents-per-minute ratio). Each backend and update scheme
    of ours has its own ratios (rows without a backend are the native one, without
    shared_minibatch RLtools' update). A peer is compared with the rows of its own update
    (PEER_SHARED); SB3 also with RLtools' update, as ..._rltools_update_...."""
    out = {}
    mine = {k: r for k, r in rows.items() if k.startswith("neuromotor")}
    groups = dict.fromkeys((r.get("backend", "native"), r.get("shared_minibatch", False)) for r in mine.values())
    for backend, shared in groups:
        tag = "neuromotor" if backend == "native" else f"neuromotor_{backend}"
        of_group = [r for r in mine.values()
                    if (r.get("backend", "native"), r.get("shared_minibatch", False)) == (backend, shared)]
        ours = {r["threads"]: r for r in of_group if r["agents"] == 1}
        pops = [r for r in of_group if r["agents"] > 1]
        for name, peer in rows.items():
            if name in mine:
                continue
            key, t = peer["peer"], peer["threads"]
            if shared == PEER_SHARED[key]:
                pair = f"{key}_over_{tag}"
            elif key == "sb3":  # SB3 against RLtools' update too: more work per step on our side
                pair = f"{key}_over_{tag}_rltools_update"
            else:
                continue
            if t in ours:
                out[f"{pair}_single_{t}thread"] = {
                    "wall": peer["wall_s"] / ours[t]["wall_s"], "cpu": peer["cpu_s"] / ours[t]["cpu_s"]}
            for pop in pops:
                if pop["threads"] == t:
                    out[f"{pair}_per_agent_in_population_{t}thread"] = {
                        "wall": peer["wall_s"] / pop["wall_per_agent_s"],
                        "cpu": peer["cpu_s"] * pop["agents"] / pop["cpu_s"]}
    return out


def _threads(n: int) -> str:
    return f"{n} thread{'s' if n != 1 else ''}"


def _scheme(backend: str, scheme: str) -> str:
    return f"{backend} shared_minibatch" if scheme == "shared" else backend


def _update(ratio_key: str) -> str:
    """Which of our updates a ratio's rows ran, against the peer's."""
    if "_rltools_update_" in ratio_key:
        return "our rows with RLtools' update: more work per step than SB3's"
    return "the same update on both sides"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seeds", type=int, default=0, help="also train a population of N agents")
    p.add_argument("--shards", type=int, default=os.cpu_count(), help="population shards (one process of one "
                   "thread each)")
    p.add_argument("--threads", default="1,2", help="thread counts every single-agent row runs at")
    p.add_argument("--backends", default="native,numpy" if _nm_host else "numpy",
                   help="TD3 backends to time, in this order (native: the compiled kernels; numpy: the reference)")
    p.add_argument("--compare", choices=["sb3"], help="also train Stable-Baselines3 TD3")
    p.add_argument("--schemes", help="our update schemes, in this order: rltools (the default, one minibatch per "
                   "critic and one for the actor), shared (shared_minibatch: SB3's one minibatch per step); "
                   "default rltools, and rltools,shared with --compare sb3")
    p.add_argument("--rltools", type=Path, metavar="BINARY", help="also time your build of RLtools' TD3 benchmark")
    p.add_argument("--out", type=Path, default=RESULTS / "td3_pendulum")
    args = p.parse_args()
    if args.rltools and args.steps != RLTOOLS_STEPS:
        sys.exit(f"--rltools: RLtools' benchmark trains {RLTOOLS_STEPS} steps; leave --steps at {RLTOOLS_STEPS}")
    thread_counts = [int(x) for x in args.threads.split(",")]
    backends = args.backends.split(",")
    schemes = (args.schemes or ("rltools,shared" if args.compare == "sb3" else "rltools")).split(",")
    for s in schemes:
        if s not in ("rltools", "shared"):
            sys.exit(f"--schemes: {s!r} is not rltools or shared")
    for b in backends:
        if b not in ("native", "numpy"):
            sys.exit(f"--backends: {b!r} is not native or numpy")
        if b == "native" and _nm_host is None:
            sys.exit("--backends native: the compiled extension is missing (pip install -e .)")

    rows = {}
    for b in backends:
        for t in thread_counts:
            for s in schemes:
                rows[f"neuromotor {_scheme(b, s)}, 1 agent, {_threads(t)}"] = ours(
                    [args.seed], args.steps, 1, t, b, s == "shared")
        if args.seeds:
            shards = min(args.shards, args.seeds)
            for s in schemes:
                rows[f"neuromotor {_scheme(b, s)}, {args.seeds} agents, {_threads(shards)}"] = ours(
                    list(range(args.seeds)), args.steps, shards, 1, b, s == "shared")
    for t in thread_counts:
        if args.compare == "sb3":
            rows[f"stable-baselines3, {_threads(t)}"] = {"peer": "sb3", **sb3(args.seed, args.steps, t)}
        if args.rltools:
            rows[f"RLtools (C++, OpenBLAS), {_threads(t)}"] = {"peer": "rltools", **rltools(args.rltools, t)}

    print(f"\nTD3 Pendulum-v1, {args.steps} steps, paper configuration; "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    width = max(map(len, rows))
    print(f"{'':{width}} {'threads':>7} {'wall s':>8} {'cpu s':>8} {'steps/s':>9} {'s/agent':>8} {'agents/min':>10} "
          f"{'return':>8} {'solved':>7}")
    for name, r in rows.items():
        print(f"{name:{width}} {r['threads']:>7} {r['wall_s']:8.2f} {r['cpu_s']:8.2f} {r['steps_per_s']:9.0f} "
              f"{r['wall_s'] / r['agents']:8.2f} {60 * r['agents'] / r['wall_s']:10.1f} "
              + (f"{r['return_mean']:8.1f} {r['solved']:>4}/{r['agents']}" if r["solved"] is not None else f"{'-':>8} {'-':>7}"))
    for name, r in rows.items():
        if r.get("time_source"):
            print(f"{name}: time {r['time_source']}")
    ratios = speedups(rows)
    # CPU time too: on a shared machine wall time mostly measures the neighbours.
    for key, v in ratios.items():
        print(f"{key}: {v['wall']:.2f}x wall, {v['cpu']:.2f}x CPU time ({_update(key)})")

    doc = {"benchmark": "td3_pendulum", "command": " ".join(sys.argv), "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
           "cpus": os.cpu_count(), "load_avg_1min": os.getloadavg()[0], "numpy": np.__version__,
           "results": rows, "ratios": ratios}
    write_json(args.out.with_suffix(".json"), doc)
    plot(rows, args.out.with_suffix(".png"), args.steps)
    print(f"wrote {args.out.with_suffix('.json')} and {args.out.with_suffix('.png')}")


def plot(rows, path, steps):
    names = list(rows)
    per_agent = [rows[n]["wall_s"] / rows[n]["agents"] for n in names]
    fig, ax = plt.subplots(figsize=(8, 0.6 * len(names) + 1.5))
    bars = ax.barh(names, per_agent, color=["#3b7dd8" if n.startswith("neuromotor") else "#999999" for n in names])
    ax.bar_label(bars, [f"{v:.2f} s" for v in per_agent], padding=3)
    ax.invert_yaxis()
    ax.set_xlabel(f"wall seconds per agent for {steps} TD3 steps (lower is better)")
    ax.set_title("TD3 on Pendulum-v1, RLtools paper configuration")
    save_png(fig, path)


if __name__ == "__main__":
    main()

"""SAC against Stable-Baselines3 SAC: same hyperparameters, steps, seeds and thread count per row,
both evaluated in gymnasium.

    .venv/bin/python benchmarks/sac.py                                   # Pendulum-v1, 10k steps, 10 seeds
    .venv/bin/python benchmarks/sac.py --phases inverted,halfcheetah     # the 100k-step MuJoCo phases, 3 seeds
    .venv/bin/python benchmarks/sac.py --phases pendulum --seeds 3       # fewer seeds
    .venv/bin/python benchmarks/sac.py --phases halfcheetah --seeds 1 --steps 5000 --learning-starts 1000
                                                                         # a short look at the time per update

Phases (each one table row per trainer, and per neuromotor update scheme):
  pendulum     Pendulum-v1, 10,000 steps, neuromotor's default SAC config (RLtools' pendulum SAC);
               solved = mean deterministic return >= -200.
  inverted     InvertedPendulum-v5, 100,000 steps, the `mujoco` preset.
  halfcheetah  HalfCheetah-v5, 100,000 steps, the `mujoco` preset.

SB3 gets the same hyperparameters (net_arch, batch, replay, warm-up steps with uniform random
actions, learning rates, gamma, tau, automatic entropy coefficient starting at the same value,
target entropy -|A|, one gradient step per env step). neuromotor runs four times:
  neuromotor           `shared_minibatch = true`: both critics and the actor learn from one
                       minibatch per gradient step, as in SB3: the same update, the headline row
  neuromotor-rltools   the default, RLtools' scheme: one minibatch per critic and one for the
                       actor (three times the gradient work per update)
each with the native backend (the compiled update, the default) and, as the rows ending in
-numpy, the NumPy one (the `backend` column); the native rows' speed-up over the NumPy rows of
the same scheme is printed below the table. --rows picks some of them. --learning-starts changes the warm-up of every trainer alike.
Run `make compare` first (torch CPU wheel and stable-baselines3).

neuromotor trains on the built-in twin of the gymnasium env where there is one (`pendulum`,
`halfcheetah`: the same dynamics, vectorised in NumPy/MuJoCo), else on the gymnasium env through
neuromotor's adapter (`--train-env gym` forces the adapter everywhere). Both trainers are then
evaluated by the same loop on `gymnasium.make(id)`: 10 deterministic episodes, env seeded
10,000 + seed. Seeds alternate between the trainers so that a change in machine load hits both.

Each row runs at --threads (BLAS for neuromotor; torch and BLAS for SB3). Training time
excludes evaluation; CPU time is reported too because on a shared machine wall time mostly
measures the neighbours. "ms/update" and "cpu ms/u" are the wall and CPU time of a step after the
warm-up (one env step and one gradient step) in milliseconds. Prints a table, writes benchmarks/results/sac.json.
"""

import argparse
import dataclasses
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from benchutil import RESULTS, write_json
from neuromotor.algos.sac import SAC
from neuromotor.envs import ENVS, env_class

SOLVED_PENDULUM = -200.0
EVAL_EPISODES = 10
PHASES = {
    "pendulum": {"gym_id": "Pendulum-v1", "builtin": "pendulum", "steps": 10_000, "seeds": 10, "preset": "pendulum"},
    "inverted": {"gym_id": "InvertedPendulum-v5", "builtin": None, "steps": 100_000, "seeds": 3, "preset": "mujoco"},
    "halfcheetah": {"gym_id": "HalfCheetah-v5", "builtin": "halfcheetah", "steps": 100_000, "seeds": 3,
                    "preset": "mujoco"},
}


def gym_returns(policy, gym_id: str, seed: int, episodes: int = EVAL_EPISODES) -> np.ndarray:
    """Returns of `episodes` episodes of policy(obs) -> action on gymnasium.make(gym_id)."""
    import gymnasium as gym

    env = gym.make(gym_id)
    out = []
    obs, _ = env.reset(seed=10_000 + seed)
    for _ in range(episodes):
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(policy(obs))
            total += float(reward)
            done = terminated or truncated
        out.append(total)
        obs, _ = env.reset()
    env.close()
    return np.array(out)


# Table rows: neuromotor's two update schemes on both backends, and SB3 (the first is the headline).
ROWS = {"neuromotor": {"shared_minibatch": True, "backend": "native"},
        "neuromotor-numpy": {"shared_minibatch": True, "backend": "numpy"},
        "neuromotor-rltools": {"shared_minibatch": False, "backend": "native"},
        "neuromotor-rltools-numpy": {"shared_minibatch": False, "backend": "numpy"}, "sb3": None}


def phase_config(phase: dict, learning_starts=None, **overrides):
    """The phase's SAC config, with the benchmark's changes (the same for every trainer)."""
    cfg, _ = SAC.defaults(phase["builtin"] or phase["gym_id"], phase["preset"])
    if learning_starts is not None:
        overrides["learning_starts"] = learning_starts
    return dataclasses.replace(cfg, **overrides)


def per_update_ms(total: float, warmup: float, steps: int, learning_starts: int):
    """Milliseconds (wall or CPU) per step after the warm-up (an env step and a gradient step),
    None without one."""
    updates = steps - learning_starts
    return 1e3 * (total - warmup) / updates if updates > 0 else None


def ours(phase: dict, seed: int, steps: int, threads: int, train_env: str, cfg) -> dict:
    name = phase["builtin"] if train_env == "builtin" and phase["builtin"] in ENVS else phase["gym_id"]
    with threadpool_limits(threads):
        algo = SAC(cfg, env_class(name), [seed])
        t0, c0 = time.perf_counter(), time.process_time()
        warmup = min(steps, cfg.learning_starts)
        for _ in range(warmup):
            algo.advance()
        t_warm, c_warm = time.perf_counter() - t0, time.process_time() - c0
        for _ in range(steps - warmup):
            algo.advance()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        returns = gym_returns(lambda obs: algo.act(np.asarray(obs, np.float32)[None, None])[0, 0],
                              phase["gym_id"], seed)
    return {"seed": seed, "trained_on": name, "wall_s": wall, "cpu_s": cpu, "returns": returns.tolist(),
            "return_mean": float(returns.mean()), "updates": algo.critic.opt.t,
            "per_update_ms": per_update_ms(wall, t_warm, steps, cfg.learning_starts),
            "per_update_cpu_ms": per_update_ms(cpu, c_warm, steps, cfg.learning_starts)}


def sb3_settings(cfg) -> dict:
    """SB3 SAC's keyword arguments for neuromotor's SAC config (the same hyperparameters)."""
    if cfg.actor_hidden != cfg.critic_hidden or not cfg.actor_lr == cfg.critic_lr == cfg.alpha_lr:
        sys.exit("SB3's SAC has one net_arch and one learning rate; this config needs several")
    if cfg.warmup_actions != "uniform" or cfg.activation != "relu" or (cfg.log_std_min, cfg.log_std_max) != (-20, 2):
        sys.exit("SB3's SAC warms up with uniform actions, uses ReLU and clips log-std to [-20, 2]")
    return dict(learning_rate=cfg.actor_lr, buffer_size=cfg.buffer_size, learning_starts=cfg.learning_starts,
                batch_size=cfg.batch_size, tau=cfg.tau, gamma=cfg.gamma, train_freq=1, gradient_steps=1,
                ent_coef=f"auto_{cfg.init_alpha}", target_entropy="auto",
                policy_kwargs=dict(net_arch=list(cfg.actor_hidden), activation_fn="relu"))


def sb3(phase: dict, seed: int, steps: int, threads: int, cfg) -> dict:
    try:
        import gymnasium as gym
        import torch
        from stable_baselines3 import SAC as SB3SAC
        from stable_baselines3.common.callbacks import BaseCallback
    except ImportError:
        sys.exit("the SB3 rows need stable-baselines3 and torch: run `make compare` first")

    class WarmupClock(BaseCallback):
        """The wall and CPU time at which the warm-up ends (learning_starts env steps taken)."""

        warm = None

        def _on_step(self):
            if self.warm is None and self.num_timesteps >= cfg.learning_starts:
                self.warm = time.perf_counter(), time.process_time()
            return True

    settings = sb3_settings(cfg)
    settings["policy_kwargs"]["activation_fn"] = torch.nn.ReLU
    torch.set_num_threads(threads)
    env = gym.make(phase["gym_id"])
    with threadpool_limits(threads):
        model = SB3SAC("MlpPolicy", env, **settings, seed=seed, device="cpu", verbose=0)
        clock = WarmupClock()
        t0, c0 = time.perf_counter(), time.process_time()
        model.learn(total_timesteps=steps, callback=clock)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        returns = gym_returns(lambda obs: model.predict(obs, deterministic=True)[0], phase["gym_id"], seed)
    env.close()
    t_warm, c_warm = (clock.warm[0] - t0, clock.warm[1] - c0) if clock.warm is not None else (wall, cpu)
    return {"seed": seed, "trained_on": phase["gym_id"], "wall_s": wall, "cpu_s": cpu, "returns": returns.tolist(),
            "return_mean": float(returns.mean()), "torch": torch.__version__, "updates": int(model._n_updates),
            "per_update_ms": per_update_ms(wall, t_warm, steps, cfg.learning_starts),
            "per_update_cpu_ms": per_update_ms(cpu, c_warm, steps, cfg.learning_starts)}


def summary(runs: list, solved_at) -> dict:
    means = [r["return_mean"] for r in runs]
    per_update = [r["per_update_ms"] for r in runs if r.get("per_update_ms") is not None]
    per_update_cpu = [r["per_update_cpu_ms"] for r in runs if r.get("per_update_cpu_ms") is not None]
    out = {"seeds": [r["seed"] for r in runs], "wall_s_mean": statistics.mean(r["wall_s"] for r in runs),
           "cpu_s_mean": statistics.mean(r["cpu_s"] for r in runs), "return_mean": statistics.mean(means),
           "return_min": min(means), "return_max": max(means),
           "per_update_ms_mean": statistics.mean(per_update) if per_update else None,
           "per_update_cpu_ms_mean": statistics.mean(per_update_cpu) if per_update_cpu else None}
    if solved_at is not None:
        out["solved"] = sum(m >= solved_at for m in means)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--phases", default="pendulum", help=f"comma-separated, from {', '.join(PHASES)} (or all)")
    p.add_argument("--seeds", type=int, help="seeds 0..N-1 (default: 10 for pendulum, 3 for the 100k phases)")
    p.add_argument("--steps", type=int, help="env steps per run (default: the phase's)")
    p.add_argument("--threads", type=int, default=1, help="threads of every row (default 1)")
    p.add_argument("--train-env", choices=["builtin", "gym"], default="builtin",
                   help="neuromotor trains on the built-in twin where there is one (default) or on the gymnasium env")
    p.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated, from {', '.join(ROWS)} (default all)")
    p.add_argument("--no-sb3", action="store_true", help="neuromotor rows only")
    p.add_argument("--learning-starts", type=int, help="warm-up env steps of every trainer (default: the preset's)")
    p.add_argument("--out", type=Path, default=RESULTS / "sac.json")
    args = p.parse_args()
    names = list(PHASES) if args.phases == "all" else [n.strip() for n in args.phases.split(",")]
    unknown = [n for n in names if n not in PHASES]
    if unknown:
        sys.exit(f"--phases: unknown {', '.join(unknown)}; known: {', '.join(PHASES)}, all")
    rows = [r.strip() for r in args.rows.split(",") if not (args.no_sb3 and r.strip() == "sb3")]
    if not rows or any(r not in ROWS for r in rows):
        sys.exit(f"--rows: give some of {', '.join(ROWS)}")
    if args.learning_starts is not None and args.learning_starts < 0:
        sys.exit("--learning-starts must be >= 0")

    load0 = os.getloadavg()
    doc = {"benchmark": "sac", "command": " ".join(sys.argv), "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
           "cpus": os.cpu_count(), "load_avg_1min_start": load0[0], "threads": args.threads,
           "numpy": np.__version__, "phases": {}}
    for name in names:
        phase = PHASES[name]
        steps = args.steps or phase["steps"]
        seeds = list(range(args.seeds or phase["seeds"]))
        runs = {row: [] for row in rows}
        configs = {row: phase_config(phase, args.learning_starts, **(ROWS[row] or {})) for row in rows}
        for seed in seeds:
            for row in rows:
                if row == "sb3":
                    runs[row].append(sb3(phase, seed, steps, args.threads, configs[row]))
                else:
                    runs[row].append(ours(phase, seed, steps, args.threads, args.train_env, configs[row]))
                print(f"{name} seed {seed}: {row:24} {runs[row][-1]['return_mean']:8.1f} "
                      f"in {runs[row][-1]['wall_s']:.1f} s", flush=True)
        solved_at = SOLVED_PENDULUM if name == "pendulum" else None
        result = {"gym_id": phase["gym_id"], "steps": steps, "preset": phase["preset"],
                  "learning_starts": configs[rows[0]].learning_starts,
                  "rows": {k: {"summary": summary(v, solved_at), "runs": v,
                               "config": dataclasses.asdict(configs[k])} for k, v in runs.items()}}
        if "sb3" in runs:
            sb3_s = result["rows"]["sb3"]["summary"]
            for row in (r for r in rows if r != "sb3"):
                ours_s = result["rows"][row]["summary"]
                versus = {"wall": sb3_s["wall_s_mean"] / ours_s["wall_s_mean"],
                          "cpu": sb3_s["cpu_s_mean"] / ours_s["cpu_s_mean"]}
                if ours_s["per_update_ms_mean"] and sb3_s["per_update_ms_mean"]:
                    versus["per_update"] = sb3_s["per_update_ms_mean"] / ours_s["per_update_ms_mean"]
                    versus["per_update_cpu"] = sb3_s["per_update_cpu_ms_mean"] / ours_s["per_update_cpu_ms_mean"]
                result.setdefault("sb3_over", {})[row] = versus
                result.setdefault("return_at_least_sb3_per_seed", {})[row] = [
                    a["return_mean"] >= b["return_mean"] for a, b in zip(runs[row], runs["sb3"])]
        for row in rows:
            if row + "-numpy" in runs:
                native, numpy_ = result["rows"][row]["summary"], result["rows"][row + "-numpy"]["summary"]
                result.setdefault("numpy_over_native", {})[row] = {
                    "wall": numpy_["wall_s_mean"] / native["wall_s_mean"], "cpu": numpy_["cpu_s_mean"] / native["cpu_s_mean"]}
        doc["phases"][name] = result
    doc["load_avg_1min_end"] = os.getloadavg()[0]

    print(f"\nSAC vs SB3 SAC, {args.threads} thread(s) per row; {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, load {load0[0]:.1f} at start, {doc['load_avg_1min_end']:.1f} at end")
    print(f"{'phase':22} {'trainer':24} {'backend':7} {'steps':>7} {'seeds':>5} {'wall s':>8} {'cpu s':>8} {'ms/update':>9} "
          f"{'cpu ms/u':>9} {'return':>9} {'min':>9} {'max':>9} {'solved':>7}")
    for name, result in doc["phases"].items():
        for trainer, row in result["rows"].items():
            s = row["summary"]
            solved = f"{s['solved']}/{len(s['seeds'])}" if "solved" in s else "-"
            per_update = " ".join(f"{s[k]:9.2f}" if s[k] is not None else f"{'-':>9}"
                                  for k in ("per_update_ms_mean", "per_update_cpu_ms_mean"))
            backend = row["config"].get("backend", "-") if trainer != "sb3" else "torch"
            print(f"{result['gym_id']:22} {trainer:24} {backend:7} {result['steps']:>7} {len(s['seeds']):>5} "
                  f"{s['wall_s_mean']:8.2f} {s['cpu_s_mean']:8.2f} {per_update} {s['return_mean']:9.1f} "
                  f"{s['return_min']:9.1f} {s['return_max']:9.1f} {solved:>7}")
        for trainer, r in result.get("numpy_over_native", {}).items():
            print(f"{result['gym_id']}: {trainer}-numpy time / {trainer} time (native backend) {r['wall']:.2f}x wall, "
                  f"{r['cpu']:.2f}x CPU")
        for trainer, r in result.get("sb3_over", {}).items():
            wins = result["return_at_least_sb3_per_seed"][trainer]
            same = " (the same update as SB3's)" if ROWS[trainer]["shared_minibatch"] else " (RLtools' update)"
            per_update = (f", {r['per_update']:.2f}x wall and {r['per_update_cpu']:.2f}x CPU per update"
                          if "per_update" in r else "")
            print(f"{result['gym_id']}: SB3 time / {trainer} time{same} {r['wall']:.2f}x wall, {r['cpu']:.2f}x CPU"
                  f"{per_update}; return >= SB3's on {sum(wins)}/{len(wins)} seeds")
    print("(wall/cpu s: mean per seed, training only; ms/update, cpu ms/u: wall and CPU time per step after the warm-up; "
          "return: mean over seeds of 10 deterministic episodes)")
    write_json(args.out, doc)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

"""PPO on Ant-v5: training throughput against raw MuJoCo and Stable-Baselines3, and returns.

    .venv/bin/python benchmarks/ppo_ant.py                        # throughput + 1.2M-step learning, 3 seeds
    .venv/bin/python benchmarks/ppo_ant.py --phases throughput --json  # throughput only
    .venv/bin/python benchmarks/ppo_ant.py --phases sb3-learn     # + SB3 learning, compared with the above
    .venv/bin/python benchmarks/ppo_ant.py --env-steps 10240000   # the paper's full schedule

The phases (--phases) run one after the other, with the same number of threads:

throughput
  raw_sps    env steps/s of bare `mj_step` (frame_skip substeps) on 64 Ant
             models in a thread pool, random actions: the simulator's ceiling.
  train_sps  env steps/s of whole PPO training (rollout with the policy, GAE,
             4 epochs of minibatch updates) with the paper's Ant config, after
             one warm-up iteration.
  sb3_matched_sps  the same for Stable-Baselines3 PPO on gymnasium's Ant-v5 with
             the same work per step: 8 envs (DummyVecEnv) x 512 steps per rollout,
             minibatches of 2048, 4 epochs, [256, 256] ReLU, torch on CPU; after
             one warm-up iteration, over whole iterations. train_over_sb3_matched
             is the headline ratio.
  sb3_defaults_sps  the same network with SB3's own defaults (8 x 2048 steps per
             rollout, minibatches of 64, 10 epochs: more updates per env step,
             so not the same work), shown beside it.
  Both need `make compare` (null without it). Raw and training are measured in
  alternating rounds and summed, so that a change of load on a shared machine
  affects both alike; SB3 runs with torch using 1 and --threads threads, and the
  faster counts (never more threads than neuromotor had).

learn
  every seed learns for --env-steps (one population in lockstep), evaluated
  deterministically in neuromotor's env every --eval-every steps and at the end
  in gymnasium's own Ant-v5 (--episodes per seed): return_mean is the mean over
  seeds of that final gymnasium return.

sb3-learn
  SB3 PPO learns for --env-steps on each of the same seeds (seed=s), one after
  the other on 1 torch thread, evaluated in gymnasium's Ant-v5 from the same
  initial states along the way and at the end, once per --sb3-variants:
    defaults  as sb3_defaults_sps (SB3's defaults, [256, 256] ReLU, 8 envs):
              sb3_returns, sb3_return_mean
    rl_zoo3   rl-zoo3's PPO hyperparameters for Ant, read at run time from the
              installed rl_zoo3 package (its hyperparams/ppo.yml; the entry used
              is in sb3_zoo_entry), with its VecNormalize: sb3_zoo_returns, ...
  With neuromotor's learning in the JSON for the same seeds and step count,
  neuromotor_above_sb3[_zoo]_every_seed is the verdict against each.

JSON (rewritten as learning goes, so a kill loses little) and neuromotor's
learning-curve PNG go to --out, where the results of phases not run are kept
from an earlier run; with --json the last line printed is the JSON summary.
"""

import argparse
import json
import os
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

import numpy as np

from benchutil import RESULTS, plt, save_png, write_json
from neuromotor.algos.ppo import PPO
from neuromotor.training.config import parse_seeds
from neuromotor.envs.mujoco_vec import AntVec, gymnasium_returns, parse_threads
from neuromotor.training.evaluation import Evaluator


def raw_steps(threads: int, num_envs: int, seconds: float):
    """(env steps, seconds) of bare mj_step on the Ant model, num_envs models split over threads."""
    env = AntVec(num_envs, threads=1)  # only for its model, data and reset
    mujoco, model, datas = env._mujoco, env.model, env.datas
    env.reset([np.random.default_rng(i) for i in range(num_envs)])
    rng = np.random.default_rng(0)
    actions = rng.uniform(-1, 1, (256, num_envs, env.act_dim))
    bounds = np.linspace(0, num_envs, threads + 1).astype(int)
    chunks = [range(a, b) for a, b in zip(bounds[:-1], bounds[1:])]

    def work(chunk, act):
        for i in chunk:
            datas[i].ctrl[:] = act[i]
            mujoco.mj_step(model, datas[i], nstep=env.frame_skip)

    pool = ThreadPoolExecutor(threads)
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for act in actions:
            list(pool.map(work, chunks, [act] * threads))
            steps += num_envs
        # Keep the models in the regime training sees: restart the ones that fell over.
        fallen = [i for i, d in enumerate(datas) if not 0.2 <= d.qpos[2] <= 1.0]
        for i in fallen:
            env.set_qpos_qvel(i, env.init_qpos, env.init_qvel)
    seconds = time.perf_counter() - t0
    pool.shutdown()
    return steps, seconds


def train_steps(algo, iterations: int):
    """(env steps, seconds) of whole PPO iterations."""
    t0 = time.perf_counter()
    for _ in range(iterations):
        algo.advance()
    return iterations * algo.E * algo.T, time.perf_counter() - t0


# Stable-Baselines3 PPO on 8 envs with [256, 256] ReLU: with the paper's sizes (8 x 512 steps per
# rollout, minibatches of 2048, 4 epochs: the same work per env step as neuromotor's), and with
# SB3's own defaults (8 x 2048, minibatches of 64, 10 epochs).
SB3_SETTINGS = {"matched": {"n_steps": 512, "batch_size": 2048, "n_epochs": 4}, "defaults": {}}
SB3_VARIANTS = ("defaults", "rl_zoo3")  # learning runs
ZOO_PREFIX = {"defaults": "sb3_", "rl_zoo3": "sb3_zoo_"}  # their keys in the JSON


def zoo_hyperparams() -> tuple:
    """(entry, hyperparameters) of rl-zoo3's PPO for Ant, from the installed package's
    hyperparams/ppo.yml: the entry for our Ant version, else the newest Ant-vN it has."""
    try:
        import rl_zoo3
        import yaml
    except ImportError:
        raise SystemExit("rl_zoo3 not installed: make compare") from None
    table = yaml.safe_load((Path(rl_zoo3.__file__).parent / "hyperparams" / "ppo.yml").read_text())
    ants = sorted((k for k in table if re.fullmatch(r"Ant-v\d+", k)), key=lambda k: int(k[5:]))
    if not ants:
        raise SystemExit(f"rl_zoo3 {rl_zoo3.__version__}: no Ant entry in hyperparams/ppo.yml")
    entry = AntVec.gym_id if AntVec.gym_id in ants else ants[-1]
    return f"rl_zoo3 {rl_zoo3.__version__} ppo.yml {entry}", dict(table[entry])


def zoo_settings(hp: dict, torch) -> tuple:
    """(n_envs, VecNormalize kwargs or None, PPO kwargs) from an rl-zoo3 entry, translated the
    way rl-zoo3 does it: n_timesteps gives way to --env-steps, strings of Python become objects,
    lin_<x> a linear schedule, and VecNormalize discounts rewards with the entry's gamma."""
    from rl_zoo3.utils import linear_schedule
    hp = dict(hp)
    hp.pop("n_timesteps", None)
    if hp.pop("policy", "MlpPolicy") != "MlpPolicy":
        raise SystemExit("rl_zoo3's Ant entry does not use MlpPolicy")
    n_envs = hp.pop("n_envs", 1)
    normalize = hp.pop("normalize", False)
    if isinstance(normalize, str):
        normalize = eval(normalize, {"dict": dict})  # rl-zoo3's own file, as rl-zoo3 reads it
    normalize = (dict(normalize) if isinstance(normalize, dict) else {}) if normalize else None
    if normalize is not None and "gamma" in hp:
        normalize["gamma"] = hp["gamma"]
    if isinstance(hp.get("policy_kwargs"), str):
        hp["policy_kwargs"] = eval(hp["policy_kwargs"], {"dict": dict, "nn": torch.nn})
    for key in ("learning_rate", "clip_range"):
        if isinstance(hp.get(key), str) and hp[key].startswith("lin_"):
            hp[key] = linear_schedule(float(hp[key][4:]))
    return n_envs, normalize, hp


def sb3_model(variant: str, seed: int, torch_threads: int):
    """SB3 PPO (torch on CPU) on gymnasium's Ant-v5 in a DummyVecEnv; None without SB3.

    "matched" and "defaults" (SB3_SETTINGS): 8 envs, [256, 256] ReLU. "rl_zoo3": rl-zoo3's
    Ant entry as rl-zoo3 runs it (its number of envs, network and VecNormalize)."""
    try:
        import gymnasium as gym
        import torch
        from stable_baselines3 import PPO as SB3PPO
        from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize
    except ImportError:
        return None
    if variant == "rl_zoo3":
        n_envs, normalize, kwargs = zoo_settings(zoo_hyperparams()[1], torch)
    else:
        n_envs, normalize = 8, None
        kwargs = {**SB3_SETTINGS[variant], "policy_kwargs": {"net_arch": [256, 256], "activation_fn": torch.nn.ReLU}}
    # Before the weights are drawn: their orthogonal init differs in the last bits with the
    # thread count, so a seed would learn differently on another machine or after another seed.
    torch.set_num_threads(torch_threads)
    venv = DummyVecEnv([lambda: gym.make(AntVec.gym_id, **AntVec.gym_kwargs) for _ in range(n_envs)])
    if normalize is not None:
        venv = VecNormalize(venv, **normalize)
    return SB3PPO("MlpPolicy", venv, device="cpu", seed=seed, verbose=0, **kwargs)


def sb3_sps(variant: str, torch_threads: int, steps: int):
    """Env steps/s of whole SB3 PPO iterations (collection and update) after one warm-up iteration."""
    model = sb3_model(variant, 0, torch_threads)
    if model is None:
        return None
    rollout = model.n_envs * model.n_steps
    model.learn(rollout)  # warm-up: torch's first calls, first-touch memory, the envs' first resets
    steps = -(-steps // rollout) * rollout
    t0 = time.perf_counter()
    model.learn(steps, reset_num_timesteps=False)
    return steps / (time.perf_counter() - t0)


def sb3_act(model):
    """`act` for gymnasium_returns: SB3's deterministic actions (observations normalised with the
    frozen VecNormalize statistics when the model trained with them), clipped as SB3 acts."""
    vecnorm = model.get_vec_normalize_env()

    def act(obs):
        flat = obs.reshape(-1, obs.shape[-1])
        if vecnorm is not None:
            flat = vecnorm.normalize_obs(flat)
        actions, _ = model.predict(flat, deterministic=True)
        return actions.reshape(*obs.shape[:-1], -1)
    return act


def sb3_learn(variant, seed, env_steps, eval_every, episodes, on_progress):
    """One seed of one SB3 variant for env_steps (whole rollouts), evaluated like neuromotor's.

    Evaluations are deterministic episodes in gymnasium's Ant-v5 from the same
    initial states as neuromotor's final evaluation: at the start of the first
    rollout after each multiple of eval_every, i.e. of a policy updated on all the
    steps it is labelled with, and at the end. They only read the policy (no
    sampling), so training is the same with or without them; their time is left
    out of train_s and train_cpu_s. on_progress(run) gets the run after each one.
    """
    model = sb3_model(variant, seed, 1)  # small minibatches gain little from more threads
    if model is None:
        raise SystemExit("stable-baselines3/torch not installed: make compare")
    from stable_baselines3.common.callbacks import BaseCallback
    run = {"variant": variant, "seed": seed, "curve": [], "train_s": 0.0, "train_cpu_s": 0.0, "eval_s": 0.0}
    last = [time.perf_counter(), time.process_time()]

    def evaluate():
        now = time.perf_counter(), time.process_time()
        run["train_s"] += now[0] - last[0]
        run["train_cpu_s"] += now[1] - last[1]
        returns = gymnasium_returns(AntVec, sb3_act(model), 1, episodes, seed=10_000)[0]
        run["curve"].append({"step": model.num_timesteps, "return": round(float(returns.mean()), 1),
                             "train_s": round(run["train_s"], 1)})
        last[:] = time.perf_counter(), time.process_time()
        run["eval_s"] += last[0] - now[0]
        print(f"  SB3 {variant} seed {seed}  step {model.num_timesteps:>9}  eval return {returns.mean():8.1f}  "
              f"{run['train_s']:7.1f} s training ({run['train_cpu_s']:.1f} s CPU)", file=sys.stderr, flush=True)
        on_progress(run)
        return returns

    class Curve(BaseCallback):
        def _on_rollout_start(self):
            n, rollout = model.num_timesteps, model.n_envs * model.n_steps
            if n // eval_every > (n - rollout) // eval_every:  # a multiple in the last rollout (or step 0)
                evaluate()

        def _on_step(self):
            return True  # SB3 stops learning on a false return

    model.learn(env_steps, callback=Curve())
    returns = evaluate()
    run["final_step"], run["return"] = model.num_timesteps, round(float(returns.mean()), 1)
    run["episode_returns"] = [round(float(x), 1) for x in returns]
    for key in ("train_s", "train_cpu_s", "eval_s"):
        run[key] = round(run[key], 1)
    return run


def learn(seeds, threads, env_steps, eval_every, episodes, out_json, partial):
    """Learning curves of all seeds (one population), evaluated on the way and at the end."""
    cfg = PPO.defaults("ant")[0]
    algo = PPO(cfg, lambda n: AntVec(n, threads=threads), seeds)
    evaluator = Evaluator(lambda n: AntVec(n, threads=threads), seeds, episodes)
    curve = []
    train_time = 0.0

    def evaluate():
        returns = evaluator.run(algo, algo.steps)
        curve.append({"step": algo.steps, "returns": returns.mean(axis=1).tolist(), "train_s": round(train_time, 1)})
        partial["curve"] = curve
        write_json(out_json, partial)  # progress survives a kill
        lr = algo.info.get("lr", algo.lr)  # the adaptive learning rates, per seed
        print(f"  step {algo.steps:>9}  eval return {returns.mean():8.1f}  "
              f"({', '.join(f'{r:.0f}' for r in returns.mean(axis=1))})  actor lr "
              f"{', '.join(f'{x:.1e}' for x in lr)}  {train_time:7.1f} s training", file=sys.stderr, flush=True)

    evaluate()
    while algo.steps < env_steps:
        before = algo.steps
        t0 = time.perf_counter()
        algo.advance()
        train_time += time.perf_counter() - t0
        if algo.steps // eval_every > before // eval_every or algo.steps >= env_steps:
            evaluate()
    gym = gymnasium_returns(AntVec, algo.act, len(seeds), episodes, seed=10_000)
    return curve, gym, algo.steps * len(seeds) / train_time


def plot(curve, path, title, episodes):
    steps = np.array([c["step"] for c in curve])
    r = np.array([c["returns"] for c in curve])
    fig, ax = plt.subplots(figsize=(6, 4))
    for k in range(r.shape[1]):
        ax.plot(steps, r[:, k], lw=0.8, alpha=0.5)
    ax.plot(steps, r.mean(1), lw=2, color="k", label="mean over seeds")
    ax.fill_between(steps, r.mean(1) - r.std(1), r.mean(1) + r.std(1), color="k", alpha=0.1)
    ax.axhline(3000, ls="--", color="tab:red", lw=1, label="target 3000")
    ax.set_xlabel("env steps per seed")
    ax.set_ylabel(f"deterministic return ({episodes} episodes)")
    ax.set_title(title)
    ax.legend()
    save_png(fig, path, dpi=120)


def throughput(threads: int, args) -> dict:
    """Summary keys of the throughput phase: raw mj_step, neuromotor PPO and SB3 PPO training, env steps/s."""
    print(f"threads {threads}; measuring raw mj_step, PPO training and SB3 throughput ...", file=sys.stderr)
    algo = PPO(PPO.defaults("ant")[0], lambda n: AntVec(n, threads=threads), [0])
    algo.advance()  # warm-up: workspaces, first-touch memory
    raw_n = raw_s = train_n = train_s = 0
    for _ in range(args.rounds):
        n, s = raw_steps(threads, 64, args.raw_seconds)
        raw_n, raw_s = raw_n + n, raw_s + s
        n, s = train_steps(algo, args.train_iterations)
        train_n, train_s = train_n + n, train_s + s
    raw, train = raw_n / raw_s, train_n / train_s
    sb3_runs = {f"{name}_torch{t}": sb3_sps(name, t, args.sb3_steps)
                for name in SB3_SETTINGS for t in sorted({1, threads})} if args.sb3_steps else {}
    if None in sb3_runs.values():
        print("stable-baselines3/torch not installed (make compare): SB3 figures are null", file=sys.stderr)
    best = {name: max((v for k, v in sb3_runs.items() if k.startswith(name + "_") and v), default=None)
            for name in SB3_SETTINGS}
    matched, defaults = best["matched"], best["defaults"]

    def ratio(x, digits=2):
        return None if x is None else round(x, digits)

    print(f"{'raw mj_step':>14} {raw:10.0f} env-steps/s")
    print(f"{'PPO training':>14} {train:10.0f} env-steps/s  = {train / raw:.2f} x raw")
    for label, x in (("SB3 matched", matched), ("SB3 defaults", defaults)):
        if x is not None:
            print(f"{label:>14} {x:10.0f} env-steps/s  = {x / raw:.2f} x raw; neuromotor = {train / x:.1f} x")
    if matched is not None:
        print(f"neuromotor / SB3 PPO, same hyperparameters, warmed up, {threads} thread(s) at most: "
              f"{train / matched:.1f} x")
    return {
        "threads": threads, "cpu_count": os.cpu_count(), "load_avg_1min": os.getloadavg()[0],
        "raw_sps": round(raw, 1), "train_sps": round(train, 1), "train_over_raw": round(train / raw, 3),
        "sb3_matched_sps": ratio(matched, 1),
        "train_over_sb3_matched": None if matched is None else round(train / matched, 2),
        "sb3_defaults_sps": ratio(defaults, 1),
        "train_over_sb3_defaults": None if defaults is None else round(train / defaults, 2),
        "sb3_runs": {k: ratio(v, 1) for k, v in sb3_runs.items()},
    }


def compare(summary: dict) -> dict:
    """neuromotor against each SB3 variant, only when both learned on the same seeds to the same step count."""
    out = {}
    nm = summary.get("returns_gymnasium")
    for variant, prefix in ZOO_PREFIX.items():
        tag = prefix.rstrip("_")
        sb3 = summary.get(prefix + "returns")
        if (not nm or not sb3 or summary.get("seeds") != summary.get(prefix + "seeds") or len(nm) != len(sb3)
                or summary.get("final_step") != summary.get(prefix + "final_step")):
            out.update({f"neuromotor_over_{tag}": None, f"neuromotor_above_{tag}_every_seed": None})
            continue
        mean = summary[prefix + "return_mean"]
        out[f"neuromotor_over_{tag}"] = round(summary["return_mean"] / mean, 2) if mean > 0 else None
        out[f"neuromotor_above_{tag}_every_seed"] = all(a > b for a, b in zip(nm, sb3))
    return out


def print_returns(summary: dict):
    """Final gymnasium returns per seed of whichever of neuromotor and the SB3 variants learned, and the verdicts."""
    sources = [("neuromotor", "seeds", "returns_gymnasium", "final_step")] + [
        (f"SB3 {variant}", prefix + "seeds", prefix + "returns", prefix + "final_step")
        for variant, prefix in ZOO_PREFIX.items()]
    columns = [(name, dict(zip(summary[seeds], summary[returns])), summary[step])
               for name, seeds, returns, step in sources if summary.get(returns)]
    seeds = sorted({s for _, returns, _ in columns for s in returns})
    print(f"{'seed':>6}" + "".join(f" {name:>12}" for name, _, _ in columns) + "   gymnasium Ant-v5 returns")
    for s in seeds:
        print(f"{s:>6}" + "".join(f" {r[s]:>12.1f}" if s in r else f" {'-':>12}" for _, r, _ in columns))
    print(f"{'mean':>6}" + "".join(f" {np.mean(list(r.values())):>12.1f}" for _, r, _ in columns))
    print(f"{'steps':>6}" + "".join(f" {step:>12}" for _, _, step in columns))
    if summary.get("sb3_zoo_entry"):
        print(f"SB3 rl_zoo3: {summary['sb3_zoo_entry']}")
    for variant, prefix in ZOO_PREFIX.items():
        tag = prefix.rstrip("_")
        if summary.get(f"neuromotor_above_{tag}_every_seed") is not None:
            verdict = "above" if summary[f"neuromotor_above_{tag}_every_seed"] else "NOT above"
            print(f"neuromotor {verdict} SB3 {variant} on every seed; mean ratio {summary[f'neuromotor_over_{tag}']}")
        elif summary.get("returns_gymnasium") and summary.get(prefix + "returns"):
            print(f"no verdict against SB3 {variant}: not learned on the same seeds to the same step count")


PHASES = ("throughput", "learn", "sb3-learn")


def sb3_learn_all(variant, seeds, args, summary, out_json):
    """Every seed of one SB3 variant, one after the other; its keys in summary carry ZOO_PREFIX[variant]."""
    k = ZOO_PREFIX[variant]
    print(f"SB3 {variant} learning: {len(seeds)} seeds x {args.env_steps} env steps, one after the other ...",
          file=sys.stderr)
    runs = []
    summary.update({k + "env_steps": args.env_steps, k + "seeds": seeds, k + "returns": [], k + "return_mean": None,
                    k + "return_std_over_seeds": None, k + "final_step": None, k + "learn_runs": runs})
    if variant == "rl_zoo3":
        summary["sb3_zoo_entry"] = zoo_hyperparams()[0]

    def progress(run):  # each evaluation of each seed survives a kill
        summary[k + "learn_runs"] = runs + [run]
        write_json(out_json, summary)

    for s in seeds:
        runs.append(sb3_learn(variant, s, args.env_steps, args.eval_every, args.episodes, progress))
        summary.update({k + "returns": [r["return"] for r in runs], k + "learn_runs": runs,
                        k + "final_step": runs[-1]["final_step"]})
        write_json(out_json, summary)
    returns = np.array(summary[k + "returns"])
    summary.update({k + "return_mean": round(float(returns.mean()), 1),
                    k + "return_std_over_seeds": round(float(returns.std()), 1)})


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--phases", default="throughput,learn",
                   help="comma-separated, run in the order throughput (raw mj_step, neuromotor and SB3 "
                        "training env steps/s), learn (neuromotor PPO, all seeds in lockstep), sb3-learn "
                        "(SB3 PPO per --sb3-variants, one seed after the other, 1 torch thread). The results of "
                        "phases not run are kept from the JSON already in --out, so phases can run separately "
                        "(default throughput,learn)")
    p.add_argument("--env-steps", type=int, default=1_228_800, help="learning steps per seed, learn and sb3-learn")
    p.add_argument("--seeds", default="0,1,2", help="learning seeds (default 0,1,2)")
    p.add_argument("--threads", default="auto", help="auto (all cores) or 1..cores")
    p.add_argument("--rounds", type=int, default=3, help="alternating raw/training measurement rounds")
    p.add_argument("--train-iterations", type=int, default=4, help="PPO iterations (4096 steps) per round")
    p.add_argument("--raw-seconds", type=float, default=4.0, help="raw mj_step seconds per round")
    p.add_argument("--sb3-steps", type=int, default=16384, help="SB3 throughput budget after the warm-up "
                                                                  "iteration, rounded up to whole iterations (0: skip)")
    p.add_argument("--sb3-variants", default=",".join(SB3_VARIANTS),
                   help=f"SB3 learning runs of sb3-learn (default {','.join(SB3_VARIANTS)})")
    p.add_argument("--eval-every", type=int, default=102_400, help="evaluation interval in env steps")
    p.add_argument("--episodes", type=int, default=10, help="episodes per evaluation")
    p.add_argument("--out", type=Path, default=RESULTS, help="output directory")
    p.add_argument("--json", action="store_true", help="print the JSON summary as the last line")
    args = p.parse_args(argv)
    phases = args.phases.split(",")
    if not set(phases) <= set(PHASES):
        p.error(f"--phases: choose from {', '.join(PHASES)}")
    if args.env_steps <= 0 and {"learn", "sb3-learn"} & set(phases):
        p.error("--env-steps must be positive for learn and sb3-learn")
    variants = args.sb3_variants.split(",")
    if not set(variants) <= set(SB3_VARIANTS):
        p.error(f"--sb3-variants: choose from {', '.join(SB3_VARIANTS)}")
    threads = parse_threads(args.threads)
    seeds = parse_seeds(args.seeds)
    args.out.mkdir(parents=True, exist_ok=True)
    out_json, out_png = args.out / "ppo_ant.json", args.out / "ppo_ant.png"
    summary = json.loads(out_json.read_text()) if out_json.exists() else {}
    summary["config"] = asdict(PPO.defaults("ant")[0])

    if "throughput" in phases:
        summary.update(throughput(threads, args))

    if "learn" in phases:
        print(f"learning: {len(seeds)} seeds x {args.env_steps} env steps ...", file=sys.stderr)
        summary.update(env_steps=args.env_steps, seeds=seeds, return_mean=None, returns_gymnasium=None,
                       final_step=None)  # a partial file must not pair the new curve with old returns
        curve, gym, learn_sps = learn(seeds, threads, args.env_steps, args.eval_every, args.episodes,
                                      out_json, summary)
        summary.update(
            return_mean=round(float(gym.mean()), 1), return_std_over_seeds=round(float(gym.mean(1).std()), 1),
            returns_gymnasium=[round(float(x), 1) for x in gym.mean(1)],
            final_step=curve[-1]["step"], learn_sps_all_seeds=round(learn_sps, 1), curve=curve)
        plot(curve, out_png, f"neuromotor PPO, Ant-v5 (27 obs), {len(seeds)} seeds", args.episodes)
        print(f"neuromotor curve {out_png}")

    if "sb3-learn" in phases:
        for variant in variants:
            sb3_learn_all(variant, seeds, args, summary, out_json)

    summary.update(compare(summary))
    if {"learn", "sb3-learn"} & set(phases):
        print_returns(summary)
    write_json(out_json, summary)
    print(f"wrote {out_json}")
    if args.json:
        print(json.dumps({k: v for k, v in summary.items()
                          if k not in ("curve", "config", "sb3_learn_runs", "sb3_zoo_learn_runs")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

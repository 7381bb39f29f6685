"""The training loop shared by every algorithm: progress, evaluation, metrics, checkpoints.

It only calls the algorithm interface (see neuromotor.algos), so TD3 and PPO
share it. Evaluations happen when the step count crosses a multiple of
eval_every and at the end; checkpoints when it crosses checkpoint_every and at
the end.
"""

import time
from collections import deque
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from neuromotor import checkpoint, plotting, runs
from neuromotor.envs import env_class
from neuromotor.evaluation import Evaluator

RECENT_EPISODES = 10  # window of the "recent return" on the progress bar


def train(run_dir: Path, cfg: dict, algo, progress: bool = True) -> dict:
    run_cfg, seeds = cfg["run"], cfg["seeds"]
    evaluator = Evaluator(env_class(cfg["env"]), seeds, run_cfg.eval_episodes)
    recent = [deque(maxlen=RECENT_EPISODES) for _ in seeds]
    t0 = time.perf_counter()
    cpu0 = algo.process_time()

    def evaluate():
        returns = evaluator.run(algo, algo.steps)
        records = [{
            "step": algo.steps, "agent": k, "seed": seed,
            "eval_return_mean": float(returns[k].mean()), "eval_return_std": float(returns[k].std()),
            "train_return": float(np.mean(recent[k])) if recent[k] else None,
            "wall_s": round(time.perf_counter() - t0, 3),
        } for k, seed in enumerate(seeds)]
        runs.append_metrics(run_dir, records)
        return returns

    if algo.steps == 0:
        evaluate()
    # One BLAS thread: these matrices are too small to split, and OpenBLAS's spinning
    # threads made a single agent up to 15x slower on a busy 2-core machine (shards
    # are how a population uses the cores).
    with threadpool_limits(1, "blas"):
        returns = _loop(algo, run_cfg, evaluate, recent, run_dir, progress, f"{cfg['algo']} {cfg['env']} x{len(seeds)}")
    wall, cpu = time.perf_counter() - t0, algo.process_time() - cpu0
    if returns is None:  # resumed a run that had already finished
        returns = evaluator.run(algo, algo.steps)

    metrics = runs.read_metrics(run_dir)
    plotting.learning_curve(metrics, run_dir / runs.CURVE, f"{cfg['algo']} on {cfg['env']}")
    # eval_return_std: over episodes for one agent, over the agents' means for a population.
    summary = {
        "steps": algo.steps, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
        "eval_return_mean": float(returns.mean(axis=1).mean()),
        "eval_return_std": float(returns.mean(axis=1).std() if len(seeds) > 1 else returns.std()),
        "run_dir": str(run_dir),
        "agents": [{"seed": s, "eval_return_mean": float(returns[k].mean()),
                    "eval_return_std": float(returns[k].std())} for k, s in enumerate(seeds)],
    }
    runs.write_summary(run_dir, summary)
    return summary


def _loop(algo, run_cfg, evaluate, recent, run_dir, progress, desc):
    """Advance to run_cfg.steps, evaluating and checkpointing on the way; the last returns."""
    bar = tqdm(total=run_cfg.steps, initial=algo.steps, unit="step", disable=not progress,
               dynamic_ncols=True, desc=desc)
    returns = None
    shown = algo.steps
    every = run_cfg.checkpoint_every
    while algo.steps < run_cfg.steps:
        before = algo.steps
        # run up to the next evaluation, checkpoint or progress update in one go
        stops = [run_cfg.steps, (before // run_cfg.eval_every + 1) * run_cfg.eval_every]
        stops += [(before // every + 1) * every] if every else []
        stops += [shown + 100] if progress else []
        algo.advance(until=min(stops))
        for k, finished in enumerate(algo.pop_episode_returns()):
            recent[k].extend(finished)
        done = algo.steps >= run_cfg.steps
        if done or algo.steps // run_cfg.eval_every > before // run_cfg.eval_every:
            returns = evaluate()
        if done or (every and algo.steps // every > before // every):
            checkpoint.save(run_dir / runs.CHECKPOINT, algo.state_dict())
        if progress and (done or algo.steps - shown >= 100):
            bar.update(algo.steps - shown)
            shown = algo.steps
            if any(recent):
                bar.set_postfix_str(f"recent return {np.mean([np.mean(r) for r in recent if r]):.0f}")
    bar.close()
    return returns

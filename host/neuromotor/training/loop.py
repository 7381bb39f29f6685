"""The training loop shared by every algorithm: progress, evaluation, metrics, checkpoints.

It only calls the algorithm interface (see neuromotor.algos), so TD3 and PPO
share it. Evaluations happen when the step count crosses a multiple of
eval_every and at the end; checkpoints when it crosses checkpoint_every and at
the end. On an env that judges success, an evaluation that beats every earlier one (the
agents' mean success, then their mean return) also saves its state as the run's best.npz.

Before each of those stops the algorithm's state (parameters, optimiser
moments, buffers) is checked for NaN and inf: a diverged run stops with a
UserError (exit 2) before it is evaluated or checkpointed, so the last good
checkpoint is never overwritten and no NaN reaches metrics.jsonl,
summary.json or `--json` output.
"""

import time
from collections import deque
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm  # a widget in notebooks, text in a terminal

from neuromotor.training import checkpoint, config, plotting, runs
from neuromotor.training.tensorboard import RunBoard
from neuromotor.errors import UserError
from neuromotor.training.evaluation import Evaluator

RECENT_EPISODES = 10  # window of the "recent return" on the progress bar


def train(run_dir: Path, spec: config.RunSpec, algo, progress: bool = True) -> dict:
    run_cfg, seeds = spec.run, spec.seeds
    evaluator = Evaluator(spec.env_factory(), seeds, run_cfg.eval_episodes)
    recent = [deque(maxlen=RECENT_EPISODES) for _ in seeds]
    t0 = time.perf_counter()
    cpu0 = algo.process_time()
    board = RunBoard(run_dir, seeds, algo.steps)

    def save_best(state):
        # only what a policy is read from (the actor, seeds, steps, identity): no replay buffer
        if not policy_keys:
            policy_keys.update(runs.policy_keys(spec))
        checkpoint.save(run_dir / runs.BEST, {k: v for k, v in state.items() if k.startswith(checkpoint.IDENTITY_PREFIX)
                                              or k.rpartition(".")[2] in policy_keys})

    policy_keys = set()

    def evaluate():
        returns = _finite_returns(evaluator.run(algo, algo.steps), algo.steps)
        board.evaluation(returns, algo.steps, algo, spec.algo_config)
        records = [{
            "step": algo.steps, "agent": k, "seed": seed,
            "eval_return_mean": float(returns[k].mean()), "eval_return_std": float(returns[k].std()),
            **_success(evaluator.success, k),
            "train_return": float(np.mean(recent[k])) if recent[k] else None,
            "wall_s": round(time.perf_counter() - t0, 3),
        } for k, seed in enumerate(seeds)]
        runs.append_metrics(run_dir, records)
        return returns, evaluator.success

    try:
        if algo.steps == 0:
            _, success = evaluate()
            if success is not None:
                save_best(algo.state_dict())
        # One BLAS thread: these matrices are too small to split, and OpenBLAS's spinning
        # threads made a single agent up to 15x slower on a busy 2-core machine (shards
        # are how a population uses the cores).
        with threadpool_limits(1, "blas"):
            returns = _loop(algo, run_cfg, evaluate, save_best, recent, run_dir, progress,
                            f"{spec.algo} {spec.env} x{len(seeds)}", board)
    finally:
        board.close()
    wall, cpu = time.perf_counter() - t0, algo.process_time() - cpu0
    if returns is None:  # resumed a run that had already finished
        returns = _finite_returns(evaluator.run(algo, algo.steps), algo.steps)

    metrics = runs.read_metrics(run_dir)
    found = _best_evaluation(metrics) if (run_dir / runs.BEST).exists() else None
    plotting.learning_curve(metrics, run_dir / runs.CURVE, f"{spec.algo} on {spec.env}")
    # eval_return_std: over episodes for one agent, over the agents' means for a population.
    summary = {
        "policy": _run_policy(run_dir, found, algo.steps, returns, evaluator.success),
        "steps": algo.steps, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
        "eval_return_mean": float(returns.mean(axis=1).mean()),
        "eval_return_std": float(returns.mean(axis=1).std() if len(seeds) > 1 else returns.std()),
        **({} if evaluator.success is None else {"eval_success": float(evaluator.success.mean())}),
        **({} if found is None else {"best": {"step": found[1], "eval_success": found[0][0],
                                              "eval_return_mean": found[0][1], "checkpoint": runs.BEST}}),
        "run_dir": str(run_dir),
        "agents": [{"seed": s, "eval_return_mean": float(returns[k].mean()),
                    "eval_return_std": float(returns[k].std()), **_success(evaluator.success, k)}
                   for k, s in enumerate(seeds)],
    }
    runs.write_summary(run_dir, summary)
    return summary


def _run_policy(run_dir: Path, found, steps: int, returns: np.ndarray, success) -> dict:
    """What export, deploy, hil and eval take from the run: its best evaluation's state where the
    env judges success, else the last state; with the evaluation that scored it."""
    if found is not None:
        (rate, mean), step = found
        return {"path": str(run_dir / runs.BEST), "step": step, "eval_success": rate, "eval_return_mean": mean}
    return {"path": str(run_dir / runs.CHECKPOINT), "step": steps,
            **({} if success is None else {"eval_success": float(success.mean())}),
            "eval_return_mean": float(returns.mean(axis=1).mean())}


def _success(success, agent: int) -> dict:
    """{"eval_success": the agent's share of successful evaluation episodes} for envs that judge
    success (the quadrotor's hover), else {}."""
    return {} if success is None else {"eval_success": float(success[agent].mean())}


def _best_evaluation(metrics: list):
    """((mean success, mean return), step) of the best evaluation in `metrics`, the first of equals;
    None where no evaluation judged success."""
    by_step = {}
    for r in metrics:
        if "eval_success" in r:
            by_step.setdefault(r["step"], []).append((r["eval_success"], r["eval_return_mean"]))
    scored = [(tuple(float(x) for x in np.mean(v, axis=0)), -step) for step, v in by_step.items()]
    if not scored:
        return None
    score, neg_step = max(scored)
    return score, -neg_step


def _loop(algo, run_cfg, evaluate, save_best, recent, run_dir, progress, desc, board):
    """Advance to run_cfg.steps, evaluating and checkpointing on the way; the last returns."""
    bar = tqdm(total=run_cfg.steps, initial=algo.steps, unit="step", disable=not progress,
               dynamic_ncols=True, desc=desc)
    returns = None
    found = _best_evaluation(runs.read_metrics(run_dir)) if (run_dir / runs.BEST).exists() else None
    best = found[0] if found else None
    shown = algo.steps
    judged = ""  # the last evaluation's success, on envs that judge one
    every = run_cfg.checkpoint_every
    saved_at = algo.steps if (run_dir / runs.CHECKPOINT).exists() else None
    try:
        while algo.steps < run_cfg.steps:
            before = algo.steps
            # run up to the next evaluation, checkpoint or progress update in one go
            stops = [run_cfg.steps, (before // run_cfg.eval_every + 1) * run_cfg.eval_every]
            stops += [(before // every + 1) * every] if every else []
            stops += [shown + 100] if progress else []
            # Overflow warnings would bury the one-line error _refuse_non_finite gives.
            with np.errstate(over="ignore", invalid="ignore"):
                algo.advance(until=min(stops))
            finished = algo.pop_episode_returns()
            for k, returns_k in enumerate(finished):
                recent[k].extend(returns_k)
            if any(finished):
                board.episodes(finished, algo.steps)
            done = algo.steps >= run_cfg.steps
            due_eval = done or algo.steps // run_cfg.eval_every > before // run_cfg.eval_every
            due_save = done or (every and algo.steps // every > before // every)
            if due_eval or due_save:
                # Evaluation only acts (no training state changes), so this state is also what gets saved.
                state = algo.state_dict()
                _refuse_non_finite(state, algo.steps, run_dir, saved_at)
            if due_eval:
                returns, success = evaluate()
                if success is not None:
                    judged = f"eval success {success.mean():.0%}"
                score = None if success is None else (float(success.mean()), float(returns.mean()))
                if score is not None and (best is None or score > best):
                    save_best(state)
                    best = score
            if due_save:
                checkpoint.save(run_dir / runs.CHECKPOINT, state)
                saved_at = algo.steps
            if progress and (done or algo.steps - shown >= 100):
                bar.update(algo.steps - shown)
                shown = algo.steps
                shown_recent = (f"recent return {np.mean([np.mean(r) for r in recent if r]):.0f}"
                                if any(recent) else "")
                bar.set_postfix_str(", ".join(t for t in (shown_recent, judged) if t))
    finally:
        bar.close()
    return returns


def _refuse_non_finite(state: dict, step: int, run_dir: Path, saved_at) -> None:
    """UserError if any floating-point array of the state holds NaN or inf."""
    bad = sorted({key.split(".", 1)[-1] for key, v in state.items()  # shard prefixes: "shard0.actor"
                  if np.asarray(v).dtype.kind in "fc" and not np.isfinite(v).all()})
    if not bad:
        return
    kept = (f"the last good checkpoint (step {saved_at}) is kept in {run_dir / runs.CHECKPOINT}"
            if saved_at is not None else "no checkpoint had been written yet")
    raise UserError(f"training diverged by step {step}: NaN or inf in {', '.join(bad)}; stopped before "
                    f"evaluating or saving it; {kept}. Lower the learning rates (--set actor_lr=..., "
                    "critic_lr=...) and train a new run.")


def _finite_returns(returns: np.ndarray, step: int) -> np.ndarray:
    if not np.isfinite(returns).all():
        raise UserError(f"evaluation at step {step} returned NaN or inf episode returns; the environment "
                        "produced non-finite rewards")
    return returns

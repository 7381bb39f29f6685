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

import numpy as np
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm  # a widget in notebooks, text in a terminal

from neuromotor.training import config
from neuromotor.training.rundir import CHECKPOINT, RunDir
from neuromotor.errors import UserError
from neuromotor.training.evaluation import Evaluator

RECENT_EPISODES = 10  # window of the "recent return" on the progress bar


def train(run: RunDir, spec: config.RunSpec, algo, progress: bool = True) -> dict:
    seeds = spec.seeds
    evaluator = Evaluator(spec.env_factory(), seeds, spec.run.eval_episodes)
    recent = [deque(maxlen=RECENT_EPISODES) for _ in seeds]
    t0 = time.perf_counter()
    cpu0 = algo.process_time()

    def evaluate():
        returns = _finite_returns(evaluator.run(algo, algo.steps), algo.steps)
        run.evaluated(algo, spec, returns, evaluator.success, recent, t0)
        return returns, evaluator.success

    with run.training(seeds, algo.steps):
        if algo.steps == 0:
            _, success = evaluate()
            if success is not None:
                run.save_best(spec, algo.state_dict())
        # One BLAS thread: these matrices are too small to split, and OpenBLAS's spinning
        # threads made a single agent up to 15x slower on a busy 2-core machine (shards
        # are how a population uses the cores).
        with threadpool_limits(1, "blas"):
            returns = _loop(algo, spec, evaluate, recent, run, progress)
    wall, cpu = time.perf_counter() - t0, algo.process_time() - cpu0
    if returns is None:  # resumed a run that had already finished
        returns = _finite_returns(evaluator.run(algo, algo.steps), algo.steps)
    return run.finish(spec, algo.steps, returns, evaluator.success, wall, cpu)


def _loop(algo, spec, evaluate, recent, run, progress):
    """Advance to the run's steps, evaluating and checkpointing on the way; the last returns."""
    run_cfg = spec.run
    bar = tqdm(total=run_cfg.steps, initial=algo.steps, unit="step", disable=not progress,
               dynamic_ncols=True, desc=f"{spec.algo} {spec.env} x{len(spec.seeds)}")
    returns = None
    found = run.best()
    best = found[0] if found else None
    shown = algo.steps
    judged = ""  # the last evaluation's success, on envs that judge one
    every = run_cfg.checkpoint_every
    saved_at = run.saved_at(algo.steps)
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
                run.episodes(finished, algo.steps)
            done = algo.steps >= run_cfg.steps
            due_eval = done or algo.steps // run_cfg.eval_every > before // run_cfg.eval_every
            due_save = done or (every and algo.steps // every > before // every)
            if due_eval or due_save:
                # Evaluation only acts (no training state changes), so this state is also what gets saved.
                state = algo.state_dict()
                _refuse_non_finite(state, algo.steps, run.path, saved_at)
            if due_eval:
                returns, success = evaluate()
                if success is not None:
                    judged = f"eval success {success.mean():.0%}"
                score = None if success is None else (float(success.mean()), float(returns.mean()))
                if score is not None and (best is None or score > best):
                    run.save_best(spec, state)
                    best = score
            if due_save:
                run.save(state)
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


def _refuse_non_finite(state: dict, step: int, run_dir, saved_at) -> None:
    """UserError if any floating-point array of the state holds NaN or inf."""
    bad = sorted({key.split(".", 1)[-1] for key, v in state.items()  # shard prefixes: "shard0.actor"
                  if np.asarray(v).dtype.kind in "fc" and not np.isfinite(v).all()})
    if not bad:
        return
    kept = (f"the last good checkpoint (step {saved_at}) is kept in {run_dir / CHECKPOINT}"
            if saved_at is not None else "no checkpoint had been written yet")
    raise UserError(f"training diverged by step {step}: NaN or inf in {', '.join(bad)}; stopped before "
                    f"evaluating or saving it; {kept}. Lower the learning rates (--set actor_lr=..., "
                    "critic_lr=...) and train a new run.")


def _finite_returns(returns: np.ndarray, step: int) -> np.ndarray:
    if not np.isfinite(returns).all():
        raise UserError(f"evaluation at step {step} returned NaN or inf episode returns; the environment "
                        "produced non-finite rewards")
    return returns

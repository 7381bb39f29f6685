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

Every file of the run is written through its RunDir; the loop only decides when.
"""

import time
from collections import deque

import numpy as np
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm  # a widget in notebooks, text in a terminal

from neuromotor import interrupts
from neuromotor.training import config
from neuromotor.training.rundir import RunDir
from neuromotor.training.evaluation import Evaluator

RECENT_EPISODES = 10  # window of the "recent return" on the progress bar


def train(run: RunDir, spec: config.RunSpec, algo, progress: bool = True) -> dict:
    """Advance `algo` to the run's steps, evaluating and checkpointing into `run` on the way;
    the run's summary."""
    run_cfg = spec.run
    evaluator = Evaluator(spec.env_factory(), spec.seeds, run_cfg.eval_episodes)
    recent = [deque(maxlen=RECENT_EPISODES) for _ in spec.seeds]
    t0 = time.perf_counter()
    cpu0 = algo.process_time()

    def evaluate(record: bool = True):
        returns = evaluator.run_finite(algo, algo.steps)
        if record:
            run.evaluated(algo, spec, returns, evaluator.success, recent, t0)
        return returns, evaluator.success

    returns = None
    judged = ""  # the last evaluation's success, on envs that judge one
    every = run_cfg.checkpoint_every
    with run.training(spec.seeds, algo.steps):
        if algo.steps == 0:
            _, success = evaluate()
            if success is not None:
                run.save_best(spec, algo.state_dict())
        found = run.best()
        best = found[0] if found else None
        shown = algo.steps
        # One BLAS thread: these matrices are too small to split, and OpenBLAS's spinning
        # threads made a single agent up to 15x slower on a busy 2-core machine (shards
        # are how a population uses the cores).
        with threadpool_limits(1, "blas"), tqdm(
                total=run_cfg.steps, initial=algo.steps, unit="step", disable=not progress, dynamic_ncols=True,
                desc=f"{spec.algo} {spec.env} x{len(spec.seeds)}") as bar:
            while algo.steps < run_cfg.steps:
                before = algo.steps
                # run up to the next evaluation, checkpoint or progress update in one go
                stops = [run_cfg.steps, (before // run_cfg.eval_every + 1) * run_cfg.eval_every]
                stops += [(before // every + 1) * every] if every else []
                stops += [shown + 100] if progress else []
                # Overflow warnings would bury the one-line error refuse_diverged gives.
                with np.errstate(over="ignore", invalid="ignore"):
                    algo.advance(until=min(stops))
                interrupts.check()
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
                    run.refuse_diverged(state, algo.steps)
                if due_eval:
                    returns, success = evaluate()
                    if success is not None:
                        judged = f"eval success {success.mean():.0%}"
                    score = None if success is None else (float(success.mean()), float(returns.mean()))
                    if score is not None and (best is None or score > best):
                        run.save_best(spec, state)
                        best = score
                if due_save:
                    run.save(state, algo.steps)
                if progress and (done or algo.steps - shown >= 100):
                    bar.update(algo.steps - shown)
                    shown = algo.steps
                    shown_recent = (f"recent return {np.mean([np.mean(r) for r in recent if r]):.0f}"
                                    if any(recent) else "")
                    bar.set_postfix_str(", ".join(t for t in (shown_recent, judged) if t))
    wall, cpu = time.perf_counter() - t0, algo.process_time() - cpu0
    if returns is None:  # resumed a run that had already finished
        returns, _ = evaluate(record=False)
    return run.finish(spec, algo.steps, returns, evaluator.success, wall, cpu)

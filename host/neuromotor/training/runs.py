"""A run's algorithm: built for a new run (once its memory estimate fits), or rebuilt from a
run directory's config.json and checkpoint to resume or evaluate it; and the runs under a
root, listed. The run directory's files are neuromotor.training.rundir's.
"""

import dataclasses
import json
import os
from pathlib import Path

from neuromotor.training import checkpoint, config, memory
from neuromotor.algos import algo_class
from neuromotor.envs.gymnasium_vec import check_vector
from neuromotor import reading
from neuromotor.errors import UserError
from neuromotor.training.parallel import Sharded
from neuromotor.paths import runs_dir
from neuromotor.training.rundir import BEST, CHECKPOINT, CONFIG, policy_keys, read_config, read_metrics


def build(spec: config.RunSpec):
    """A fresh algorithm (in spec.run.shards shards) for a run, once its memory estimate fits
    in what is available."""
    run_identity = identity(spec)
    algo_cls = algo_class(spec.algo)
    env = spec.env_factory()
    # the estimate builds one env: in this process, never a worker of its own
    probe = dataclasses.replace(spec, vector="sync").env_factory()
    memory.check(algo_cls, spec.algo_config, spec.run, probe, len(spec.seeds))
    return Sharded(algo_cls, spec.algo_config, env, spec.seeds, spec.run.shards or 1, identity=run_identity)


def identity(spec: config.RunSpec) -> dict:
    """What a checkpoint says it belongs to (its "run.<key>" arrays)."""
    out = {"env": spec.env, "algo": spec.algo}
    if spec.env_kwargs:
        out["env_kwargs"] = json.dumps(spec.env_kwargs, sort_keys=True)
    return out


def load(run_dir, vector: str = None):
    """(RunSpec, algorithm restored from the run's checkpoint), once the checkpoint agrees with config.json;
    `vector` steps a gymnasium env's copies another way than config.json says (same numbers)."""
    spec = read_config(run_dir)
    if vector is not None:
        spec.vector = check_vector(vector)
    algo = build(spec)
    path = Path(run_dir) / CHECKPOINT
    try:
        arrays = checkpoint.load(path, algo.state_dict())
        seeds = [int(s) for k in sorted(arrays, key=_shard_order) if k.rpartition(".")[2] == "seeds"
                 for s in arrays[k]]
        if seeds != spec.seeds:
            raise UserError(f"checkpoint {path} holds agents with seeds {short(seeds)}, but {CONFIG} says "
                            f"{short(spec.seeds)}")
        algo.load_state_dict(arrays)
    except BaseException:
        algo.close()
        raise
    return spec, algo


def _shard_order(key: str):
    shard, dot, _ = key.partition(".")
    return int(shard[5:]) if dot and shard.startswith("shard") and shard[5:].isdigit() else -1



def load_best_policy(run_dir, spec, algo) -> bool:
    """Where the run keeps best.npz, put its agents' actors (and its step) into `algo`, restored
    from the checkpoint, so that evaluating `algo` evaluates the run's policy. False elsewhere."""
    path = Path(run_dir) / BEST
    if not os.path.lexists(path):
        return False
    keys = policy_keys(spec)
    state = algo.state_dict()
    algo.load_state_dict({**state, **checkpoint.load(path, {k: v for k, v in state.items()
                                                            if k.rpartition(".")[2] in keys})})
    return True


def short(seeds: list) -> str:
    text = str(seeds)
    return text if len(text) <= 60 else text[:57] + "...]"



def list_runs(root=None) -> list:
    """One row per run directory under root: name, env, algo, seeds, steps, final return."""
    if root is not None and not Path(root).is_dir():
        raise UserError(f"{root} is not a directory of runs")
    root = Path(root or runs_dir())
    rows = []
    for d in sorted(p for p in root.glob("*") if (p / CONFIG).is_file()):
        try:
            doc = reading.read_json(d / CONFIG, "run config", limit=reading.MIB)
        except UserError:  # not a run's config: skipped, as an unreadable one
            continue
        try:
            metrics = [r for r in read_metrics(d) if isinstance(r.get("eval_return_mean"), (int, float))]
        except UserError:  # listed without results rather than stopping the listing
            metrics = []
        last = max((r["step"] for r in metrics), default=None)
        final = [r["eval_return_mean"] for r in metrics if r["step"] == last]
        seeds = doc.get("seeds")
        rows.append({
            "run": d.name, "env": str(doc.get("env", "?")), "algo": str(doc.get("algo", "?")),
            "seeds": seeds if isinstance(seeds, list) else [], "steps": last,
            "eval_return_mean": sum(final) / len(final) if final else None,
            "path": str(d),
        })
    return rows


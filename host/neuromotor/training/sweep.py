"""Hyperparameter sweeps: configurations x seeds, each shard of agents a normal run directory.

    runs/sweep-<time>/
      sweep.json        the plan (env, algo, configurations, seeds, units) and, once done, the results
      c<i>-s<seed>/     one run directory per unit: configuration i, a shard of the seeds stacked in
                        one algorithm instance (the first seed names it), trained by the same code as
                        `neuromotor train` and resumable like any run
      returns.png       final evaluation return per configuration, seeds as a spread
      .lock             flock'd by the process running the sweep: one at a time (see driving)

Every unit's config.json is written before any training, so the plan is on disk: a sweep
whose driver died continues with `sweep --resume DIR`, which trains the units without a
summary.json (from their last checkpoint when they have one). A unit that a backend runs
again after its worker died does the same, so no agent is trained twice to completion and
every agent computes the same numbers however the sweep was run or interrupted.

Backends: "local" runs units in forkserver worker processes of this machine (as population
shards do); "ray" runs each unit as a Ray task (see neuromotor.training.sweep_ray).
"""

import contextlib
import json
import math
import os
import time
from pathlib import Path

import numpy as np

from neuromotor.training import config, rundir, runs
from neuromotor import reading
from neuromotor.errors import UserError
from neuromotor.paths import runs_dir
from neuromotor.safe_write import atomic_write

PLAN = "sweep.json"
PLOT = "returns.png"
DISTRIBUTIONS = ("uniform", "loguniform")
MAX_CONFIGS = 100_000


def split_values(text: str) -> list:
    """'1e-3,3e-4' -> ['1e-3', '3e-4']; commas inside [...] stay (actor_hidden=[64,64],[256,256])."""
    out, depth, part = [], 0, ""
    for ch in text:
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            out.append(part)
            part = ""
        else:
            part += ch
    return out + [part]


def parse_grid(items) -> list:
    """['actor_lr=1e-3,3e-4', 'batch_size=100'] -> [(key, [value texts])], keys distinct."""
    axes = []
    for item in items or ():
        key, eq, text = item.partition("=")
        key = key.strip()
        values = [v.strip() for v in split_values(text)] if eq else []
        if not key or not values or not all(values):
            raise UserError(f"--grid expects key=value[,value...], got {item!r}")
        if len(set(values)) != len(values):
            raise UserError(f"--grid {item!r} repeats a value")
        axes.append((key, values))
    return axes


def parse_random(items) -> list:
    """['actor_lr=loguniform:1e-4:1e-2'] -> [(key, distribution, low, high)]."""
    out = []
    for item in items or ():
        key, eq, text = item.partition("=")
        dist, *bounds = text.split(":")
        try:
            lo, hi = (float(b) for b in bounds)
        except ValueError:
            lo = hi = math.nan
        if not eq or not key.strip() or dist not in DISTRIBUTIONS or not (math.isfinite(lo) and math.isfinite(hi)):
            raise UserError(f"--random expects key=DIST:LOW:HIGH with DIST one of {', '.join(DISTRIBUTIONS)} "
                            f"and finite bounds, got {item!r}")
        if not lo < hi or (dist == "loguniform" and lo <= 0):
            raise UserError(f"--random {item!r}: need LOW < HIGH" + (", both > 0" if dist == "loguniform" else ""))
        out.append((key.strip(), dist, lo, hi))
    return out


def _setting_text(key: str, value, default) -> str:
    if isinstance(default, int) and not isinstance(default, bool):
        value = int(round(value))
    return f"{key}={value!r}"


def configurations(grid: list, random: list, n: int, sample_seed: int, defaults: dict) -> list:
    """The sweep's configurations as lists of `--set` texts: the grid's cross product, each point
    with n random draws (numpy's PCG64 seeded by sample_seed, so a sweep is reproducible)."""
    keys = [k for k, _ in grid] + [k for k, *_ in random]
    dup = next((k for k in keys if keys.count(k) > 1), None)
    if dup is not None:
        raise UserError(f"{dup!r} is swept twice (one --grid or --random per key)")
    points = [[]]
    for key, values in grid:
        points = [p + [f"{key}={v}"] for p in points for v in values]
        if len(points) > MAX_CONFIGS:
            raise UserError(f"the grid has more than {MAX_CONFIGS} configurations")
    if not random:
        return points
    if len(points) * n > MAX_CONFIGS:
        raise UserError(f"{len(points)} grid points x -n {n} is more than {MAX_CONFIGS} configurations")
    rng = np.random.default_rng(sample_seed)
    draws = []
    for _ in range(n):
        draw = []
        for key, dist, lo, hi in random:
            if key not in defaults:
                raise UserError(f"unknown setting {key!r}; known: {', '.join(sorted(defaults))}")
            u = rng.uniform(lo, hi) if dist == "uniform" else math.exp(rng.uniform(math.log(lo), math.log(hi)))
            draw.append(_setting_text(key, float(u), defaults[key]))
        draws.append(draw)
    return [p + d for p in points for d in draws]


def plan(args) -> dict:
    """Every unit's config (through `train`'s own config path, so --grid values meet the same
    rules as --set), checked before anything is written."""
    from neuromotor.algos import algo_class
    from neuromotor.training.session import new_config

    if not args.env:
        raise UserError("sweep needs an environment (e.g. `neuromotor sweep pendulum --grid ...`) or --resume DIR")
    if args.n is not None and not args.random:
        raise UserError("-n draws --random samples; give --random key=DIST:LOW:HIGH")
    seeds = config.parse_seeds(args.seeds)
    algo_cls = algo_class(args.algo)
    algo_default = algo_cls.defaults(args.env, args.preset)[0] if hasattr(algo_cls, "defaults") else algo_cls.Config()
    defaults = {**config.to_dict(config.RunConfig()), **config.to_dict(algo_default)}
    sets = configurations(parse_grid(args.grid), parse_random(args.random), args.n or 1, args.sample_seed, defaults)
    if len(sets) * len(seeds) > config.MAX_AGENTS:
        raise UserError(f"{len(sets)} configurations x {len(seeds)} seeds is more than {config.MAX_AGENTS} agents")
    shards = args.shards or min(len(seeds), os.cpu_count() or 1)
    if not 1 <= shards <= len(seeds):
        raise UserError(f"--shards must be from 1 to the number of seeds ({len(seeds)}), got {args.shards}")
    bounds = np.linspace(0, len(seeds), shards + 1).round().astype(int)
    configs, units = [], []
    for i, extra in enumerate(sets):
        settings = config.parse_set(extra)
        for a, b in zip(bounds[:-1], bounds[1:]):
            spec = new_config(args.env, args.algo, preset=args.preset, config_file=args.config,
                             settings=list(args.set or []) + extra, steps=args.steps, shards=1,
                             seeds=",".join(map(str, seeds[a:b])), quiet=True)
            units.append({"name": f"c{i}-s{seeds[a]}", "config": i, "seeds": seeds[a:b], "spec": spec})
        configs.append(settings)
    return {"env": args.env, "algo": args.algo, "seeds": seeds, "configs": configs, "units": units}


def create(sweep_dir, the_plan: dict, backend: str) -> Path:
    """Write every unit's config.json, then sweep.json (whose presence makes DIR resumable)."""
    if sweep_dir is None:
        sweep_dir = _new_sweep_dir()
    else:
        sweep_dir = Path(sweep_dir)
        if sweep_dir.exists() and (not sweep_dir.is_dir() or any(sweep_dir.iterdir())):
            raise UserError(f"{sweep_dir} exists and is not an empty directory; give a new --dir, or "
                            "--resume it if it is an interrupted sweep")
        rundir.make_dir(sweep_dir)
    for unit in the_plan["units"]:
        run_dir = sweep_dir / unit["name"]
        rundir.make_dir(run_dir)
        rundir.write_config(run_dir, unit.pop("spec"))
    write_plan(sweep_dir, {**the_plan, "backend": backend})
    return sweep_dir


def _new_sweep_dir() -> Path:
    return rundir.claim_dir(Path(runs_dir()), f"sweep-{time.strftime('%Y%m%d-%H%M%S')}", "sweep")


def write_plan(sweep_dir: Path, doc: dict) -> None:
    atomic_write(sweep_dir / PLAN, json.dumps(doc, indent=2) + "\n")


def read_plan(sweep_dir) -> dict:
    path = Path(sweep_dir) / PLAN
    if not os.path.lexists(path):
        raise UserError(f"{sweep_dir} is not a sweep directory (no {PLAN})")
    doc = reading.read_json(path, "sweep plan")
    try:
        units, configs, backend = doc["units"], doc["configs"], doc["backend"]
        if not (isinstance(configs, list) and all(isinstance(c, dict) for c in configs)):
            raise ValueError("configs must be tables of settings")
        if not isinstance(backend, str):
            raise ValueError("backend must be a name")
        if not (isinstance(doc["env"], str) and isinstance(doc["algo"], str)):
            raise ValueError("env and algo must be names")
        if not (isinstance(units, list) and units and all(
                isinstance(u, dict) and isinstance(u["name"], str) and "/" not in u["name"]
                and "\0" not in u["name"] and u["name"] not in ("", ".", "..") and isinstance(u["config"], int)
                and not isinstance(u["config"], bool) and 0 <= u["config"] < len(configs) for u in units)):
            raise ValueError("bad unit")
        if len({u["name"] for u in units}) != len(units):
            raise ValueError("two units share a run directory")
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{path} is corrupted ({type(exc).__name__}: {exc})") from None
    return doc


@contextlib.contextmanager
def driving(sweep_dir: Path):
    """Hold the sweep's lock (an flock on sweep_dir/.lock, gone with the process) while it
    runs: a second driver is refused before it takes any unit's lock, which would make the
    first fail on that unit."""
    with rundir.hold_lock(sweep_dir, f"sweep {sweep_dir} is being run"):
        yield


def read_summary(run_dir) -> dict:
    """A finished unit's summary.json, or a UserError saying how to train the unit again."""
    path = Path(run_dir) / rundir.SUMMARY
    doc = reading.read_json(path, "summary", limit=reading.MIB)
    agents = doc.get("agents")
    if not (isinstance(agents, list) and agents and all(
            isinstance(a, dict) and isinstance(a.get("seed"), int)
            and isinstance(a.get("eval_return_mean"), (int, float)) and not isinstance(a["eval_return_mean"], bool)
            for a in agents)):
        raise UserError(f"{path} is damaged (no list of agents with seed and eval_return_mean): "
                        "remove it to train that unit again")
    return doc


def run_unit(run_dir) -> dict:
    """Train one unit to the end and return its summary: a finished unit is read back, one with
    a checkpoint resumes from it (as `train --resume`), any other starts afresh."""
    from neuromotor.training import session
    from neuromotor.training.tensorboard import remove_event_files

    run_dir = Path(run_dir)
    if os.path.lexists(run_dir / rundir.SUMMARY):
        return read_summary(run_dir)
    with rundir.locked(run_dir):
        if (run_dir / rundir.CHECKPOINT).is_file():
            spec, algo = session.resume(run_dir)
        else:
            # records of an attempt killed before its first checkpoint would be repeated
            (run_dir / rundir.METRICS).unlink(missing_ok=True)
            remove_event_files(run_dir)
            spec = rundir.read_config(run_dir)
            algo = runs.build(spec)
        return session.train(run_dir, spec, algo, progress=False)


def run_local(sweep_dir: Path, units: list, workers: int) -> dict:
    """Units in worker processes (forkserver, as population shards), at most `workers` at a time.
    A worker ends with its parent, the forkserver, which ends with this process (however it
    ends), so a killed sweep leaves no unit training on."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from neuromotor.lifeline import die_with_parent
    from neuromotor.training.parallel import _mp_context

    context = _mp_context()
    context.set_forkserver_preload(["numpy", "neuromotor._forkserver_lifeline"])
    todo = [u["name"] for u in units]
    others = set(multiprocessing.active_children())
    pool = ProcessPoolExecutor(max_workers=max(1, min(workers, len(todo))), mp_context=context,
                               initializer=die_with_parent)
    try:
        futures = [pool.submit(run_unit, str(sweep_dir / n)) for n in todo]
        return {n: f.result() for n, f in zip(todo, futures)}
    except BrokenProcessPool:
        raise UserError(f"a sweep worker process died; `neuromotor sweep --resume {sweep_dir}` continues "
                        "from the units' last checkpoints") from None
    except KeyboardInterrupt:  # shutting down would wait for the units in training to finish
        for worker in set(multiprocessing.active_children()) - others:
            worker.terminate()
        raise
    finally:
        pool.shutdown(cancel_futures=True)  # one unit failed: the others are not started


def results(sweep_dir: Path, doc: dict, summaries: dict, wall_s: float) -> dict:
    """The sweep's outcome: one trial per (configuration, seed), per-configuration statistics."""
    trials, per_config = [], [[] for _ in doc["configs"]]
    for unit in doc["units"]:
        for agent in summaries[unit["name"]]["agents"]:
            trials.append({"seed": agent["seed"], "config": doc["configs"][unit["config"]],
                           "eval_return_mean": agent["eval_return_mean"], "run_dir": str(sweep_dir / unit["name"])})
            per_config[unit["config"]].append(agent["eval_return_mean"])
    configs = [{"config": c, "eval_return_mean": float(np.mean(r)), "eval_return_std": float(np.std(r)),
                "eval_returns": r} for c, r in zip(doc["configs"], per_config)]
    agents = len(trials)
    return {"trials": trials, "configs": configs, "wall_s": round(wall_s, 3), "agents": agents,
            "agents_per_min": round(agents / wall_s * 60, 3) if wall_s > 0 else None,
            "backend": doc["backend"], "sweep_dir": str(sweep_dir)}


def label(settings: dict) -> str:
    return " ".join(f"{k}={_short(v)}" for k, v in settings.items()) or "(defaults)"


def _short(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def finish(sweep_dir: Path, doc: dict, summaries: dict, wall_s: float) -> dict:
    from neuromotor.training import plotting

    out = results(sweep_dir, doc, summaries, wall_s)
    write_plan(sweep_dir, {**doc, "results": out})
    plotting.sweep_returns([(label(c["config"]), c["eval_returns"]) for c in out["configs"]],
                           sweep_dir / PLOT, f"{doc['algo']} on {doc['env']}: final return per configuration")
    return out

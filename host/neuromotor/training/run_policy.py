"""A run's deployable policy, read from its checkpoint without building the algorithm.

Only the arrays the actor is made of (and the seeds and step count) are read from
checkpoint.npz, each checked against the shapes config.json implies before its data is
read; the algorithm's `policy_from_state` turns them into the PolicySpec that training
itself would export. No population, replay buffer or shard process is made.
"""

import os
from pathlib import Path

from neuromotor import reading
from neuromotor.algos import algo_class
from neuromotor.envs import env_class
from neuromotor.errors import UserError
from neuromotor.paths import DISTIL_CONFIG, STUDENT_FILE, no_policy_source
from neuromotor.policy.policy_file import read_policy
from neuromotor.policy.spec import PolicySpec
from neuromotor.training import checkpoint, rundir, runs
from neuromotor.training.parallel import identity_arrays, shard_bounds, shard_prefix


def load_policy_spec(run_dir, agent: int = 0, state_file: str = rundir.CHECKPOINT) -> PolicySpec:
    """Agent `agent`'s actor of the run in `run_dir` (from its checkpoint, or from `state_file`:
    rundir.BEST), as a deployable policy."""
    run = rundir.read_config(run_dir)
    seeds = run.seeds
    if not 0 <= agent < len(seeds):
        raise UserError(f"agent {agent} out of range: {run_dir} has {len(seeds)} agent(s)")
    algo = algo_class(run.algo)
    env = env_class(run.env, run.env_kwargs, "sync")(1)
    try:
        bounds = shard_bounds(len(seeds), run.run.shards or 1)
        prefix, index = shard_prefix(bounds, agent)
        shard = bounds.index(agent - index)
        template = algo.policy_state(run.algo_config, env, bounds[shard + 1] - bounds[shard])
        path = Path(run_dir) / state_file
        if state_file == rundir.BEST and not os.path.lexists(path):
            raise UserError(f"{path}: no such file (a run keeps {rundir.BEST} only on an env that judges "
                            f"success, such as the quadrotor)")
        arrays = checkpoint.load(path, {**{prefix + k: v for k, v in template.items()},
                                        **identity_arrays(runs.identity(run))})
        state = {k: arrays[prefix + k] for k in template}
        held, said = [int(s) for s in state["seeds"]], seeds[bounds[shard]:bounds[shard + 1]]
        if held != said:
            raise UserError(f"checkpoint {path} holds agents with seeds {runs.short(held)}, but {rundir.CONFIG} "
                            f"says {runs.short(said)}")
        spec = algo.policy_from_state(run.algo_config, env, state, index)
    finally:
        close = getattr(env, "close", None)
        if close:
            close()
    spec.meta.update(env=run.env, run_dir=str(run_dir))
    if run.env_kwargs:
        spec.meta["env_kwargs"] = run.env_kwargs
    return spec


def load_student(distil_dir: Path) -> PolicySpec:
    """A distillation's student, knowing the env it flies: the distillation's env with the
    student's observation (from its summary) and the drones it was trained on, the teachers'
    (from its config). What int8 export calibrates and checks it on."""
    spec = read_policy(distil_dir / STUDENT_FILE)
    summary = reading.read_json(distil_dir / rundir.SUMMARY, "distillation summary")
    config = reading.read_json(distil_dir / DISTIL_CONFIG, "distillation config")
    if not isinstance(config.get("env"), str) or not isinstance(summary.get("student_env_kwargs"), dict) \
            or not isinstance(config.get("drones"), list):
        raise UserError(f"{distil_dir}: {DISTIL_CONFIG} and {rundir.SUMMARY} do not name the student's env")
    spec.meta.update(env=config["env"], env_kwargs={**summary["student_env_kwargs"], "drones": config["drones"]},
                     run_dir=str(distil_dir))
    return spec


def is_distillation(path) -> bool:
    """Whether `path` is a distillation's directory (which stands for its student)."""
    path = Path(path)
    return path.is_dir() and not (path / rundir.CONFIG).is_file() and all(
        (path / name).is_file() for name in (STUDENT_FILE, DISTIL_CONFIG, rundir.SUMMARY))


def load_spec(source, agent: int = 0) -> PolicySpec:
    """The policy of a run directory (agent `agent`'s actor: the best evaluation's where the run
    keeps best.npz, else the last), of one of a run's states (RUN/checkpoint.npz: the last,
    RUN/best.npz), of a distillation's directory (its student) or of a policy file (validated)."""
    path = Path(source)
    if path.name in (rundir.CHECKPOINT, rundir.BEST) and (path.parent / rundir.CONFIG).is_file():
        return load_policy_spec(path.parent, agent=agent, state_file=path.name)
    if path.is_file():
        return read_policy(path)
    if is_distillation(path):
        if agent:
            raise UserError(f"agent {agent} out of range: a distillation has one student")
        return load_student(path)
    if not path.is_dir() or ((path / STUDENT_FILE).is_file() and not (path / rundir.CONFIG).is_file()):
        raise UserError(no_policy_source(str(source), path))
    best = os.path.lexists(path / rundir.BEST)
    return load_policy_spec(path, agent=agent, state_file=rundir.BEST if best else rundir.CHECKPOINT)

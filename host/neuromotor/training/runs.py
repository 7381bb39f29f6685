"""Run directories: what a training run leaves behind, and how to get a policy back.

    runs/<name>/
      config.json         env (built-in name, gymnasium id or module:attr), env_kwargs, vector,
                          algo, seeds, run settings, algorithm hyperparameters
      metrics.jsonl       one JSON object per agent per evaluation
                          {step, agent, seed, eval_return_mean, eval_return_std, train_return, wall_s}
      checkpoint.npz      latest full training state (see neuromotor.training.checkpoint)
      learning_curve.png  evaluation return vs steps, one line per agent
      summary.json        the final result (what `train --json` prints)
      .lock               flock'd by the process training into the run: one trainer at a time
      events.out.tfevents.*, agent<k>/events.out.tfevents.*
                          TensorBoard event files (see neuromotor.training.tensorboard)

`load(run_dir)` rebuilds the algorithm from config.json and its checkpoint (to resume
or evaluate); neuromotor.training.run_policy reads one agent's policy without it.
"""

import contextlib
import fcntl
import itertools
import json
import os
import re
import time
from pathlib import Path

from neuromotor.training import checkpoint, config, memory
from neuromotor.algos import algo_class
from neuromotor.envs import env_class
from neuromotor.envs.gymnasium_vec import check_vector
from neuromotor import reading
from neuromotor.errors import UserError
from neuromotor.training.parallel import Sharded
from neuromotor.paths import runs_dir
from neuromotor.safe_write import append_text, atomic_write, open_own

CONFIG, METRICS, CHECKPOINT, CURVE, SUMMARY = (
    "config.json", "metrics.jsonl", "checkpoint.npz", "learning_curve.png", "summary.json")
# On an env that judges success: the checkpoint of the evaluation with the highest success
# (the agents' mean; then the highest return), since a run's last state need not be its best.
# There it is the run's policy (export, deploy, hil, eval); checkpoint.npz holds the last.
BEST = "best.npz"
OWN_FILES = (CONFIG, METRICS, CHECKPOINT, CURVE, SUMMARY, BEST)
LOCK = ".lock"  # held by the process training into the run (see locked)
# Written into a run by train-on-device: the policy exactly as the board wrote it, and the
# record that marks the run as trained on the board. Stale once the run is replaced.
BOARD_POLICY, ON_DEVICE = "policy.nmp", "on_device.json"
ADDED_FILES = (BOARD_POLICY, ON_DEVICE)


def own_paths(run_dir) -> list:
    """The files of a run no other command may replace: what training wrote, the lock, the
    on-device record and, in a run trained on the board, the policy file the board wrote.
    A host-trained run's policy.nmp is the export's natural home, so it is not among them."""
    run_dir = Path(run_dir)
    names = OWN_FILES + (LOCK, ON_DEVICE)
    if (run_dir / ON_DEVICE).is_file():
        names += (BOARD_POLICY,)
    return [run_dir / name for name in names]


def check_own_files(run_dir) -> None:
    """UserError if a file of the run is anything but a regular file (a symlink, a FIFO, a
    directory), or its metrics cannot be read back: found before anything is written."""
    for path in own_paths(run_dir):
        if os.path.islink(path):
            raise UserError(f"refusing to use {path}: it is a symbolic link, and neuromotor writes its own "
                            "files only as regular files")
        if os.path.lexists(path) and not path.is_file():
            raise UserError(f"refusing to use {path}: it is not a regular file")
    read_metrics(run_dir)


def refuse_resume(run_dir) -> None:
    """UserError for a run trained on the board (train-on-device): resuming it on the host
    would continue from untrained critics and an empty replay buffer."""
    if (Path(run_dir) / ON_DEVICE).is_file():
        raise UserError(f"{run_dir} was trained on the board (train-on-device): its critics and replay "
                        "buffer never left the board, so it cannot be resumed; run train-on-device again")


def default_name(env: str, algo: str, seeds: list) -> str:
    tag = f"s{seeds[0]}" if len(seeds) == 1 else f"s{seeds[0]}-{seeds[-1]}x{len(seeds)}"
    env, algo = (re.sub(r"[^A-Za-z0-9._-]+", "_", name) for name in (env, algo))  # "ns/Env-v0", module:attr
    return f"{env}-{algo}-{tag}-{time.strftime('%Y%m%d-%H%M%S')}"


def new_run_dir(env: str, algo: str, seeds: list, root=None) -> Path:
    """A new, empty directory under the runs root, named after the run and the time."""
    return claim_dir(Path(root or runs_dir()), default_name(env, algo, seeds), "run")


def claim_dir(root: Path, base: str, what: str) -> Path:
    """root/base, or root/base-2, -3, ... when taken. Creating the directory is what claims
    the name, so two commands started in the same second never share one."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        for n in itertools.count(1):
            path = root / (base if n == 1 else f"{base}-{n}")
            try:
                path.mkdir()
                return path
            except FileExistsError:
                continue
    except OSError as exc:
        raise UserError(f"cannot create a {what} directory in {root}: {exc.strerror}") from None


def make_dir(run_dir: Path) -> None:
    """Create run_dir (and its parents), or say in one line why it cannot be."""
    if run_dir.exists() and not run_dir.is_dir():
        raise UserError(f"{run_dir} exists and is not a directory")
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create run directory {run_dir}: {exc.strerror}") from None


def check_replaceable(run_dir: Path, force: bool) -> None:
    """UserError unless run_dir is new, empty, or (with --force) may be replaced."""
    try:
        _check_replaceable(Path(run_dir), force)
    except OSError as exc:  # a name the file system refuses (too long, ...): before anything is made
        raise UserError(f"cannot use run directory {str(run_dir)[:200]}: {exc.strerror}") from None


def _check_replaceable(run_dir: Path, force: bool) -> None:
    if run_dir.exists() and not run_dir.is_dir():
        raise UserError(f"{run_dir} exists and is not a directory")
    existing = next((p for p in run_dir.parents if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise UserError(f"cannot create run directory {run_dir}: {existing} is not a directory")
    if run_dir.is_dir() and any(p.name != LOCK for p in run_dir.iterdir()):
        if not (os.path.lexists(run_dir / CONFIG) or os.path.lexists(run_dir / ON_DEVICE)):
            raise UserError(f"{run_dir} is not empty and is not a run directory (no {CONFIG}): --force replaces "
                            "runs only; choose an empty or new directory")
        if not force:
            raise UserError(f"run directory {run_dir} already exists; use --force to overwrite it "
                            "or --resume to continue it")


def prepare(run_dir: Path, force: bool) -> None:
    """Make an empty run dir; an existing run is only replaced with --force."""
    check_replaceable(run_dir, force)
    make_dir(run_dir)
    if force:
        for name in OWN_FILES + ADDED_FILES:
            (run_dir / name).unlink(missing_ok=True)
        from neuromotor.training.tensorboard import remove_event_files
        remove_event_files(run_dir)


@contextlib.contextmanager
def undone_on_failure(run_dir: Path, made: bool = False):
    """For a command that makes run_dir: if it fails before its first checkpoint, the files it
    made there (and run_dir, if it made that too: `made` or new) go again, so a retry starts
    as the first try."""
    run_dir = Path(run_dir)
    made_dir = made or not run_dir.exists()
    before = set() if made_dir else set(os.listdir(run_dir))
    try:
        yield run_dir
    except BaseException:
        if run_dir.is_dir() and not os.path.lexists(run_dir / CHECKPOINT):
            for name in set(os.listdir(run_dir)) - before:
                with contextlib.suppress(OSError):
                    os.unlink(run_dir / name)  # files only: a directory of the user's is never removed
            if made_dir:
                with contextlib.suppress(OSError):
                    run_dir.rmdir()
        raise


@contextlib.contextmanager
def locked(run_dir: Path):
    """Hold the run directory's lock (an flock on run_dir/.lock) for the block: one trainer
    per run. The lock goes with the process, so a killed trainer never leaves it held."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UserError(f"{run_dir} is not a run directory")
    fd = open_own(run_dir / LOCK, os.O_RDWR)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            raise UserError(f"run directory {run_dir} is in use by another neuromotor process"
                            + (f" (pid {holder})" if holder.isdigit() else "")) from None
        if os.pread(fd, 32, 0).decode(errors="replace").strip() != str(os.getpid()):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield run_dir
    finally:
        os.close(fd)


def write_config(run_dir: Path, spec: "config.RunSpec") -> None:
    atomic_write(run_dir / CONFIG, json.dumps(spec.to_document(), indent=2) + "\n")


def write_summary(run_dir: Path, summary: dict) -> None:
    atomic_write(run_dir / SUMMARY, json.dumps(summary, indent=2) + "\n")


def read_config(run_dir) -> config.RunSpec:
    path = Path(run_dir) / CONFIG
    if not os.path.lexists(path):
        raise UserError(f"{run_dir} is not a run directory (no {CONFIG})")
    return config.RunSpec.from_document(reading.read_json(path, "run config", limit=reading.MIB), path)


def build(spec: config.RunSpec):
    """A fresh algorithm (in spec.run.shards shards) for a run, once its memory estimate fits
    in what is available."""
    env = spec.env_factory()
    # the estimate builds one env: in this process, never a worker of its own
    probe = env_class(spec.env, spec.env_kwargs, "sync")
    memory.check(spec.algo, spec.algo_config, spec.run, probe, len(spec.seeds))
    return Sharded(algo_class(spec.algo), spec.algo_config, env, spec.seeds, spec.run.shards or 1,
                   identity=identity(spec))


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


def policy_keys(spec) -> set:
    """The names of the state arrays a policy is read from (the actor, seeds, steps): best.npz
    holds these alone (and the run's identity), under each shard's prefix."""
    env = spec.env_factory()(1)
    try:
        return set(algo_class(spec.algo).policy_state(spec.algo_config, env, 1))
    finally:
        getattr(env, "close", lambda: None)()


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


def append_metrics(run_dir: Path, records: list) -> None:
    append_text(run_dir / METRICS, "".join(json.dumps(r) + "\n" for r in records))


METRICS_LIMIT = 512 * reading.MIB  # 64 agents evaluated every 1,000 steps for 100M steps: ~1 GB less


def read_metrics(run_dir) -> list:
    """The records of metrics.jsonl, each an object with an integer step; a line cut short by a
    kill ends them (everything after it is gone too). Any other line is a UserError."""
    path = Path(run_dir) / METRICS
    if not os.path.lexists(path):
        return []
    out = []
    for n, line in enumerate(reading.read_text(path, "metrics", METRICS_LIMIT).splitlines(), 1):
        try:
            record = reading.parse_json(line, f"{path} line {n}")
        except UserError:
            break
        if not (isinstance(record, dict) and isinstance(record.get("step"), int)
                and not isinstance(record.get("step"), bool)):
            raise UserError(f"{path} line {n} is not a metrics record (an object with an integer step)")
        out.append(record)
    return out


def truncate_metrics(run_dir: Path, step: int) -> None:
    """Keep the records up to `step` (a resumed run redoes what came after its checkpoint)."""
    keep = [r for r in read_metrics(run_dir) if r["step"] <= step]
    atomic_write(run_dir / METRICS, "".join(json.dumps(r) + "\n" for r in keep))


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

"""The run directory: what a training run leaves behind, and RunDir, the one writer of those
files through a run's phases.

    runs/<name>/
      config.json         env (built-in name, gymnasium id or module:attr), env_kwargs, vector,
                          algo, seeds, run settings, algorithm hyperparameters
      metrics.jsonl       one JSON object per agent per evaluation
                          {step, agent, seed, eval_return_mean, eval_return_std, train_return, wall_s}
      checkpoint.npz      latest full training state (see neuromotor.training.checkpoint)
      best.npz            on an env that judges success: the policy of the best evaluation
      learning_curve.png  evaluation return vs steps, one line per agent
      summary.json        the final result (what `train --json` prints)
      .lock               flock'd by the process training into the run: one trainer at a time
      events.out.tfevents.*, agent<k>_seed<s>/events.out.tfevents.*
                          TensorBoard event files (their scheme: neuromotor.training.tensorboard)

neuromotor.training.runs rebuilds a run's algorithm from config.json and its checkpoint;
neuromotor.training.run_policy reads one agent's policy without it.
"""

import contextlib
import fcntl
import itertools
import json
import math
import os
import re
import time
from pathlib import Path

import numpy as np

from neuromotor.training import checkpoint, config
from neuromotor.training.tensorboard import AGENT_DIR, EventFile, remove_event_files
from neuromotor.algos import algo_class
from neuromotor import reading
from neuromotor.errors import UserError
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
def hold_lock(directory: Path, in_use: str):
    """Hold an flock on directory/.lock for the block, this process's pid written in it so
    that a second holder is refused with whose it is: "<in_use> by another neuromotor
    process (pid N)". The lock goes with the process, so a killed holder never leaves it held."""
    fd = open_own(Path(directory) / LOCK, os.O_RDWR)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            raise UserError(f"{in_use} by another neuromotor process"
                            + (f" (pid {holder})" if holder.isdigit() else "")) from None
        if os.pread(fd, 32, 0).decode(errors="replace").strip() != str(os.getpid()):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def locked(run_dir: Path):
    """Hold the run directory's lock for the block: one trainer per run."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UserError(f"{run_dir} is not a run directory")
    with hold_lock(run_dir, f"run directory {run_dir} is in use"):
        yield run_dir


def write_config(run_dir: Path, spec: "config.RunSpec") -> None:
    atomic_write(run_dir / CONFIG, _json(spec.to_document()))


def write_summary(run_dir: Path, summary: dict) -> None:
    atomic_write(run_dir / SUMMARY, _json(summary))


def _json(doc: dict) -> str:
    return json.dumps(doc, indent=2) + "\n"


def read_config(run_dir) -> config.RunSpec:
    path = Path(run_dir) / CONFIG
    if not os.path.lexists(path):
        raise UserError(f"{run_dir} is not a run directory (no {CONFIG})")
    return config.RunSpec.from_document(reading.read_json(path, "run config", limit=reading.MIB), path)



def policy_keys(spec) -> set:
    """The names of the state arrays a policy is read from (the actor, seeds, steps): best.npz
    holds these alone (and the run's identity), under each shard's prefix."""
    env = spec.env_factory()(1)
    try:
        return set(algo_class(spec.algo).policy_state(spec.algo_config, env, 1))
    finally:
        getattr(env, "close", lambda: None)()



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



class RunDir:
    """A run directory through a run's phases: made (or replaced), locked and its config
    written (`create`; `held` for a run that goes on), then its TensorBoard events, metrics,
    checkpoints and best state while it trains (`training`), the learning curve and summary
    at its end (`finish`). Training writes the run's files through it alone."""

    def __init__(self, path):
        self.path = Path(path)
        self._board = None
        self._best_keys = set()  # the arrays best.npz holds, known once one is saved
        self._saved_at = None  # the step checkpoint.npz holds, where there is one

    @contextlib.contextmanager
    def training(self, seeds: list, step: int):
        """The block in which this run's training (a new run or one resumed at `step`) writes its
        files, its TensorBoard events from `step` on."""
        self._board = _Board(self.path, seeds, step)
        self._saved_at = step if (self.path / CHECKPOINT).exists() else None
        try:
            yield self
        finally:
            self._board.flush()

    def episodes(self, finished: list, step: int) -> None:
        """finished[k]: returns of agent k's training episodes that ended by `step`."""
        self._board.per_agent("train/episode_return", [np.mean(r) if len(r) else None for r in finished], step)

    def evaluated(self, algo, spec: config.RunSpec, returns: np.ndarray, success, recent: list, t0: float) -> None:
        """An evaluation at algo.steps: its returns (agents, episodes) and success on the board and in
        metrics.jsonl, beside each agent's recent training returns and the wall time since `t0`."""
        self._board.evaluation(returns, algo.steps, algo, spec.algo_config)
        append_metrics(self.path, [{
            "step": algo.steps, "agent": k, "seed": seed,
            "eval_return_mean": float(returns[k].mean()), "eval_return_std": float(returns[k].std()),
            **_success(success, k),
            "train_return": float(np.mean(recent[k])) if recent[k] else None,
            "wall_s": round(time.perf_counter() - t0, 3),
        } for k, seed in enumerate(spec.seeds)])

    def refuse_diverged(self, state: dict, step: int) -> None:
        """UserError if any floating-point array of the state at `step` holds NaN or inf: it is
        neither evaluated nor saved, and the last good checkpoint stays."""
        bad = sorted({key.split(".", 1)[-1] for key, v in state.items()  # shard prefixes: "shard0.actor"
                      if np.asarray(v).dtype.kind in "fc" and not np.isfinite(v).all()})
        if not bad:
            return
        kept = (f"the last good checkpoint (step {self._saved_at}) is kept in {self.path / CHECKPOINT}"
                if self._saved_at is not None else "no checkpoint had been written yet")
        raise UserError(f"training diverged by step {step}: NaN or inf in {', '.join(bad)}; stopped before "
                        f"evaluating or saving it; {kept}. Lower the learning rates (--set actor_lr=..., "
                        "critic_lr=...) and train a new run.")

    def save_best(self, spec: config.RunSpec, state: dict) -> None:
        # only what a policy is read from (the actor, seeds, steps, identity): no replay buffer
        if not self._best_keys:
            self._best_keys = policy_keys(spec)
        checkpoint.save(self.path / BEST, {k: v for k, v in state.items() if k.startswith(checkpoint.IDENTITY_PREFIX)
                          or k.rpartition(".")[2] in self._best_keys})

    def save(self, state: dict, step: int) -> None:
        """The whole state at `step` as the run's checkpoint."""
        checkpoint.save(self.path / CHECKPOINT, state)
        self._saved_at = step

    def best(self, metrics: "list | None" = None):
        """((mean success, mean return), step) of the evaluation best.npz holds; None without one."""
        if not (self.path / BEST).exists():
            return None
        return _best_evaluation(read_metrics(self.path) if metrics is None else metrics)

    def finish(self, spec: config.RunSpec, steps: int, returns: np.ndarray, success, wall: float, cpu: float) -> dict:
        """The learning curve and summary.json of a run trained to `steps`, its last evaluation's
        `returns` and `success`, in `wall` and `cpu` seconds; returns the summary."""
        from neuromotor.training import plotting  # matplotlib: only once a run is trained

        metrics = read_metrics(self.path)
        found = self.best(metrics)
        # eval_return_std: over episodes for one agent, over the agents' means for a population.
        summary = {
            "policy": self._policy(found, steps, returns, success),
            "steps": steps, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
            "eval_return_mean": float(returns.mean(axis=1).mean()),
            "eval_return_std": float(returns.mean(axis=1).std() if len(spec.seeds) > 1 else returns.std()),
            **({} if success is None else {"eval_success": float(success.mean())}),
            **({} if found is None else {"best": {"step": found[1], "eval_success": found[0][0],
                                                  "eval_return_mean": found[0][1], "checkpoint": BEST}}),
            "run_dir": str(self.path),
            "agents": [{"seed": s, "eval_return_mean": float(returns[k].mean()),
                        "eval_return_std": float(returns[k].std()), **_success(success, k)}
                       for k, s in enumerate(spec.seeds)],
        }
        plotting.learning_curve(metrics, self.path / CURVE, f"{spec.algo} on {spec.env}")
        atomic_write(self.path / SUMMARY, _json(summary))
        return summary

    def _policy(self, found, steps: int, returns: np.ndarray, success) -> dict:
        """What export, deploy, hil and eval take from the run: its best evaluation's state where the
        env judges success, else the last state; with the evaluation that scored it."""
        if found is not None:
            (rate, mean), step = found
            return {"path": str(self.path / BEST), "step": step, "eval_success": rate, "eval_return_mean": mean}
        return {"path": str(self.path / CHECKPOINT), "step": steps,
                **({} if success is None else {"eval_success": float(success.mean())}),
                "eval_return_mean": float(returns.mean(axis=1).mean())}


@contextlib.contextmanager
def create(spec: config.RunSpec, path=None, force: bool = False):
    """A new run's RunDir, locked for the block: named after the run under the runs root, or
    `path` (where a run is replaced only with `force`), emptied, its config written."""
    text = _json(spec.to_document())  # a config that cannot be written fails before --force empties anything
    if path is None:
        path = new_run_dir(spec.env, spec.algo, spec.seeds)
    else:
        path = Path(path)
        check_replaceable(path, force)  # before the lock file is made
        make_dir(path)
    run = RunDir(path)
    with locked(path):
        prepare(path, force)
        atomic_write(path / CONFIG, text)
        yield run


@contextlib.contextmanager
def held(path):
    """An existing run's RunDir, locked for the block."""
    path = Path(path)
    if not (path / CONFIG).is_file():
        raise UserError(f"{path}: not a run directory (no {CONFIG})")
    with locked(path):
        yield RunDir(path)


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


class _Board:
    """The TensorBoard event files of one training session of a run, in the scheme of
    neuromotor.training.tensorboard."""

    def __init__(self, run_dir: Path, seeds: list, start_step: int):
        try:
            from tensorboard.compat.proto.event_pb2 import Event, SessionLog
            from tensorboard.compat.proto.summary_pb2 import Summary
        except ImportError:
            raise UserError("training writes TensorBoard event files and needs the tensorboard package: "
                            "pip install tensorboard") from None
        self._Event, self._Summary = Event, Summary
        dirs = [run_dir] + ([run_dir / AGENT_DIR.format(k, s) for k, s in enumerate(seeds)] if len(seeds) > 1 else [])
        self._writers = [EventFile(d, Event(wall_time=time.time(), file_version="brain.Event:2")) for d in dirs]
        self.run, self.agents = self._writers[0], self._writers[1:] or self._writers
        if start_step:  # TensorBoard drops what earlier sessions wrote at this START's step and later
            for w in self._writers:
                w.add(Event(wall_time=time.time(), step=start_step + 1,
                            session_log=SessionLog(status=SessionLog.START)))
        self._clock = (start_step, time.perf_counter())

    def _scalar(self, writer, tag: str, value, step: int) -> None:
        if value is None or not math.isfinite(float(value)):
            return
        writer.add(self._Event(wall_time=time.time(), step=int(step), summary=self._Summary(
            value=[self._Summary.Value(tag=tag, simple_value=float(value))])))

    def per_agent(self, tag: str, values, step: int) -> None:
        """One value per agent (None or NaN: nothing written for that agent)."""
        for w, v in zip(self.agents, values):
            self._scalar(w, tag, v, step)

    def evaluation(self, returns: np.ndarray, step: int, algo, algo_cfg) -> None:
        """Evaluation returns (agents, episodes), the algorithm's scalars and the throughput."""
        self.per_agent("eval/return_mean", returns.mean(axis=1), step)
        self.per_agent("eval/return_std", returns.std(axis=1), step)
        for tag, values in _algo_scalars(algo, algo_cfg).items():
            self.per_agent(tag, np.broadcast_to(np.asarray(values, np.float64), (len(self.agents),)), step)
        last_step, last_time = self._clock
        now = time.perf_counter()
        if step > last_step and now > last_time:
            self._scalar(self.run, "perf/env_steps_per_s", (step - last_step) * len(self.agents) / (now - last_time),
                         step)
        self._clock = (step, now)
        self.flush()

    def flush(self) -> None:
        for w in self._writers:
            w.flush()


def _algo_scalars(algo, algo_cfg) -> dict:
    """{tag: per-agent values} from the algorithm's `scalars()`, else its config's learning rates."""
    out = algo.scalars() if hasattr(algo, "scalars") else {}
    if out:
        return out
    return {f"lr/{name[:-3]}": value for name, value in vars(algo_cfg).items()
            if name.endswith("_lr") and isinstance(value, (int, float)) and not isinstance(value, bool)}

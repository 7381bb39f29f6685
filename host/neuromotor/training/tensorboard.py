"""TensorBoard event files in every run directory: `tensorboard --logdir runs` shows them.

Written with the `tensorboard` package's event protobufs and record writer (no
TensorFlow or torch), one scalar scheme for every algorithm:

    run_dir/agent<k>_seed<s>/   one TensorBoard run per agent of a population
                                (a single agent writes these into run_dir itself)
      eval/return_mean, eval/return_std   deterministic evaluation (as metrics.jsonl)
      train/episode_return                mean return of the training episodes that
                                          finished since the previous point
      <the algorithm's scalars>           e.g. loss/critic, loss/actor, lr/actor,
                                          entropy/alpha: whatever `scalars()` gives
    run_dir/                    the run as a whole
      perf/env_steps_per_s                env steps of all agents per wall second
                                          since the previous evaluation

An algorithm may expose `scalars() -> {tag: array of one value per agent}` (the
latest loss values, learning rates, entropy coefficient, ...); without it the
learning rates of its config are written as lr/<name> (actor_lr: lr/actor).
x axis: env steps per agent. A resumed run starts each writer with a
SessionLog START just after its checkpoint step, so TensorBoard drops what a
killed session wrote after that step, as metrics.jsonl does.
"""

import itertools
import math
import os
import re
import socket
import time
from pathlib import Path

import numpy as np

from neuromotor.errors import UserError

EVENTS_GLOB = "events.out.tfevents.*"
_AGENT_DIR = re.compile(r"agent\d+_seed\d+")
_serial = itertools.count()


def agent_dir(k: int, seed: int) -> str:
    return f"agent{k}_seed{seed}"


def event_files(run_dir: Path) -> list:
    """The event files this module writes into run_dir (regular files only)."""
    run_dir = Path(run_dir)
    found = list(run_dir.glob(EVENTS_GLOB))
    for sub in run_dir.iterdir() if run_dir.is_dir() else ():
        if sub.is_dir() and not sub.is_symlink() and _AGENT_DIR.fullmatch(sub.name):
            found += sub.glob(EVENTS_GLOB)
    return [p for p in found if p.is_file() and not p.is_symlink()]


def remove_event_files(run_dir: Path) -> None:
    """Before a run directory is reused (--force): its old curves would mix with the new."""
    for p in event_files(run_dir):
        p.unlink(missing_ok=True)
    for sub in Path(run_dir).iterdir():
        if sub.is_dir() and not sub.is_symlink() and _AGENT_DIR.fullmatch(sub.name) and not any(sub.iterdir()):
            sub.rmdir()


class _EventFile:
    """One event file, appended to at each flush and closed in between: a population of any
    size needs neither a thread nor an open file per agent."""

    def __init__(self, directory: Path, first_event):
        directory.mkdir(exist_ok=True)
        name = f"{EVENTS_GLOB[:-1]}{int(time.time())}.{socket.gethostname()}.{os.getpid()}.{next(_serial):06d}"
        self.path = directory / name
        self._pending = [first_event.SerializeToString()]

    def add(self, event) -> None:
        self._pending.append(event.SerializeToString())

    def flush(self) -> None:
        if not self._pending:
            return
        from tensorboard.summary.writer.record_writer import RecordWriter

        # O_NOFOLLOW: only ever a regular file of its own, never through a link planted in the run
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "ab") as f:
            writer = RecordWriter(f)
            for data in self._pending:
                writer.write(data)
        self._pending = []


class RunBoard:
    """The event files of one training session of a run."""

    def __init__(self, run_dir: Path, seeds: list, start_step: int):
        try:
            from tensorboard.compat.proto.event_pb2 import Event, SessionLog
            from tensorboard.compat.proto.summary_pb2 import Summary
        except ImportError:
            raise UserError("training writes TensorBoard event files and needs the tensorboard package: "
                            "pip install tensorboard") from None
        self._Event, self._Summary = Event, Summary
        run_dir = Path(run_dir)
        dirs = [run_dir] + ([run_dir / agent_dir(k, s) for k, s in enumerate(seeds)] if len(seeds) > 1 else [])
        self._writers = [_EventFile(d, Event(wall_time=time.time(), file_version="brain.Event:2")) for d in dirs]
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

    def episodes(self, finished: list, step: int) -> None:
        """finished[k]: returns of agent k's training episodes that ended by `step`."""
        self.per_agent("train/episode_return", [np.mean(r) if len(r) else None for r in finished], step)

    def evaluation(self, returns: np.ndarray, step: int, algo, algo_cfg) -> None:
        """Evaluation returns (agents, episodes), the algorithm's scalars and the throughput."""
        self.per_agent("eval/return_mean", returns.mean(axis=1), step)
        self.per_agent("eval/return_std", returns.std(axis=1), step)
        for tag, values in algo_scalars(algo, algo_cfg).items():
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

    def close(self) -> None:
        self.flush()


def algo_scalars(algo, algo_cfg) -> dict:
    """{tag: per-agent values} from the algorithm's `scalars()`, else its config's learning rates."""
    out = algo.scalars() if hasattr(algo, "scalars") else {}
    if out:
        return out
    return {f"lr/{name[:-3]}": value for name, value in vars(algo_cfg).items()
            if name.endswith("_lr") and isinstance(value, (int, float)) and not isinstance(value, bool)}

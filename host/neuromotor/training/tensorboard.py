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

The run's RunDir writes these scalars (neuromotor.training.rundir), each file through an
EventFile; a run replaced with --force, or a sweep's unit trained again, first has its old
event files removed.
"""

import itertools
import os
import re
import socket
import time
from pathlib import Path

EVENTS_GLOB = "events.out.tfevents.*"
AGENT_DIR = "agent{}_seed{}"  # one TensorBoard run per agent of a population
_AGENT_DIR = re.compile(AGENT_DIR.format(r"\d+", r"\d+"))
_serial = itertools.count()


def event_files(run_dir: Path) -> list:
    """The event files RunDir writes into run_dir (regular files only)."""
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


class EventFile:
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

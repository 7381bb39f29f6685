"""The Ray backend of `neuromotor sweep`: one Ray task per unit (a shard of agents stacked in one
algorithm instance, as in a local population), on a local Ray or a cluster (`--address`).

A task whose worker process dies is retried by Ray (MAX_RETRIES); the retry resumes the unit
from its last checkpoint (neuromotor.training.sweep.run_unit), so it finishes with the numbers of an
undisturbed run. Units write their run directories in place when the node shares the head's
file system (one machine, or a shared mount); a node with its own disk sends the finished run
directory back and the driver writes it into the sweep directory on the head node.
"""

import os
import socket
from pathlib import Path

from neuromotor.training import rundir
from neuromotor.errors import UserError
from neuromotor.safe_write import atomic_write

MAX_RETRIES = 3
# Units exchange only paths and summaries: the object store needs little room, and a small
# one does not take a share of /dev/shm from everything else on the machine.
OBJECT_STORE_BYTES = 100 * 2**20


def _import_ray():
    try:
        import ray
    except ImportError:
        raise UserError("--backend ray needs Ray: pip install -e '.[ray]' (or pip install 'ray[default]>=2.9')") from None
    return ray


def check_available() -> None:
    _import_ray()


def _unit_task(run_dir: str, config_text: str, head: str):
    from neuromotor.training import sweep

    run_dir = Path(run_dir)
    if not (run_dir / rundir.CONFIG).is_file():  # a node with its own disk: the plan lives on the head
        rundir.make_dir(run_dir)
        atomic_write(run_dir / rundir.CONFIG, config_text)
    summary = sweep.run_unit(run_dir)
    files = None
    if socket.gethostname() != head:
        files = {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*"))
                 if p.is_file() and p.name != rundir.LOCK}
    return summary, files


def receive(run_dir: Path, summary: dict, files) -> dict:
    """A unit's result on the head: the files of a run directory trained on another node (None:
    the node wrote it in place) written into run_dir; the summary, naming run_dir."""
    for rel, data in (files or {}).items():
        target = run_dir / rel
        if ".." in Path(rel).parts or Path(rel).is_absolute():
            raise UserError(f"{run_dir.name}: a node sent a file outside its run directory ({rel!r})")
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, data)
    return {**summary, "run_dir": str(run_dir)} if files else summary


def run_ray(sweep_dir: Path, units: list, address: str = None) -> dict:
    """Run the units as Ray tasks; {unit name: summary}. Joins the cluster at `address`, else
    starts a local Ray on this machine's CPUs and stops it before returning."""
    ray = _import_ray()
    started = not ray.is_initialized()
    if started:
        where = ({"address": address} if address else
                 {"num_cpus": len(os.sched_getaffinity(0)), "object_store_memory": OBJECT_STORE_BYTES})
        try:
            ray.init(include_dashboard=False, log_to_driver=False, logging_level="warning", **where)
        except ConnectionError as exc:
            raise UserError(f"cannot join the Ray cluster at {address!r}: {exc}") from None
    refs = {}
    try:
        task = ray.remote(num_cpus=1, max_retries=MAX_RETRIES, retry_exceptions=False)(_unit_task)
        head = socket.gethostname()
        refs = {u["name"]: task.remote(str(sweep_dir / u["name"]), (sweep_dir / u["name"] / rundir.CONFIG).read_text(),
                                       head) for u in units}
        out = {}
        for name, ref in refs.items():
            try:
                summary, files = ray.get(ref)
            except ray.exceptions.RayTaskError as exc:
                if isinstance(exc.cause, UserError):
                    raise UserError(f"{name}: {exc.cause}") from None
                raise
            except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError):
                raise UserError(f"{name}: its Ray worker died {MAX_RETRIES + 1} times; `neuromotor sweep "
                                f"--resume {sweep_dir}` continues from its last checkpoint") from None
            out[name] = receive(sweep_dir / name, summary, files)
        return out
    except BaseException:
        for ref in refs.values():  # on a cluster that stays up, the other units stop too
            ray.cancel(ref, force=True)
        raise
    finally:
        if started:
            ray.shutdown()

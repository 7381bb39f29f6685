"""Distillation from Python: `distil` trains a population of quadrotor teachers, each on its own
drone, distils them into one GRU student and evaluates it on fresh drones
(neuromotor.training.distil); `neuromotor distil quadrotor` calls it."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from neuromotor.api._progress import show_progress
from neuromotor.errors import UserError
from neuromotor.paths import runs_dir as default_runs_dir
from neuromotor.training.config import parse_set
from neuromotor.training.rundir import claim_dir


def distil(env: str = "quadrotor", *, settings: "Mapping | Iterable[str] | None" = None,
           nominal: "str | os.PathLike | None" = None, run_dir: "str | os.PathLike | None" = None,
           force: bool = False, progress: "bool | None" = None) -> dict:
    """Distil quadrotor teachers into one recurrent student; the summary (RUN/summary.json).

    Args:
        env: ``"quadrotor"`` (the env whose drones can differ).
        settings: fields of training.distil.DistilConfig, a dict (``{"teachers": 4}``) or
            ``"KEY=VALUE"`` texts (teachers, teacher_steps, iterations, hidden, ...).
        nominal: a run directory or policy file evaluated beside the student on the fresh drones.
        run_dir: where the run is written (default ``runs/quadrotor-distil-<time>``): the teachers'
            run in RUN/teachers, the student in RUN/student.nmp.
        force: replace an earlier distillation in `run_dir`.
        progress: show progress bars; default: in a terminal or a notebook."""
    from neuromotor.training import distil as distillation
    from neuromotor.training.run_policy import load_spec

    if env != "quadrotor":
        raise UserError(f"distil trains quadrotor teachers on their own drones; got the environment {env!r}")
    if settings is None:
        values = {}
    elif isinstance(settings, Mapping):
        values = dict(settings)
    elif isinstance(settings, (str, bytes)) or not all(isinstance(t, str) for t in settings):
        raise UserError("settings must be a dict or a list of KEY=VALUE texts")
    else:
        values = parse_set(settings)
    cfg = distillation.make_config(values)
    nominal_spec = None if nominal is None else load_spec(nominal)
    if run_dir is None:  # claimed: two distillations started in the same second never share one
        run_dir = claim_dir(default_runs_dir(), f"quadrotor-distil-{time.strftime('%Y%m%d-%H%M%S')}", "distillation")
    return distillation.distil(Path(run_dir), cfg, nominal_spec, force, show_progress(progress))

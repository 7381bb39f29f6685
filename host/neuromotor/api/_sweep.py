"""Hyperparameter sweeps from Python: every configuration times every seed, on this machine or on Ray."""

import os
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from neuromotor.errors import UserError
from neuromotor.training import sweep as sweeps

BACKENDS = ("local", "ray")


@dataclass(frozen=True)
class SweepResult:
    """A finished sweep: `summary` is what `neuromotor sweep --json` prints (configs ranked by
    their mean evaluation return over seeds, agents, wall_s, backend, sweep_dir)."""

    summary: dict

    @property
    def sweep_dir(self) -> Path:
        """Where the sweep's runs, its plan (sweep.json) and its plot (returns.png) are."""
        return Path(self.summary["sweep_dir"])

    @property
    def table(self) -> str:
        """The configurations from best to worst, as `neuromotor sweep` prints them."""
        out = self.summary
        lines = [f"{'eval return':>12} {'std':>8} {'seeds':>6}  configuration"]
        for c in sorted(out["configs"], key=lambda c: -c["eval_return_mean"]):
            lines.append(f"{c['eval_return_mean']:>12.1f} {c['eval_return_std']:>8.1f} {len(c['eval_returns']):>6}  "
                         f"{sweeps.label(c['config'])}")
        lines.append(f"{out['agents']} agents in {out['wall_s']:.1f} s wall on {out['backend']}; "
                     f"sweep dir {out['sweep_dir']} ({sweeps.PLAN}, {sweeps.PLOT})")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table


def _check_backend(backend: str, address, workers) -> None:
    if backend not in BACKENDS:
        raise UserError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if address is not None:
        if backend != "ray":
            raise UserError("--address names a Ray cluster; it needs --backend ray")
        if not address.strip():
            raise UserError("--address needs auto or HOST:PORT")
    if workers is not None:
        if backend != "local":
            raise UserError("--workers is for --backend local (Ray schedules its own)")
        if not 1 <= workers <= 4096:
            raise UserError(f"--workers must be from 1 to 4096, got {workers}")
    if backend == "ray":
        from neuromotor.training.sweep_ray import check_available  # Ray: only for a Ray sweep

        check_available()


def _run(sweep_dir: Path, doc: dict, backend: str, address, workers) -> SweepResult:
    t0 = time.perf_counter()
    with sweeps.driving(sweep_dir):
        if backend == "ray":
            from neuromotor.training.sweep_ray import run_ray  # Ray: only for a Ray sweep

            summaries = run_ray(sweep_dir, doc["units"], address)
        else:
            summaries = sweeps.run_local(sweep_dir, doc["units"], workers or os.cpu_count() or 1)
        return SweepResult(sweeps.finish(sweep_dir, doc, summaries, time.perf_counter() - t0))


def sweep(env: str, algo: str = "td3", *, grid=(), random=(), n: "int | None" = None, settings=(),
          preset: "str | None" = None, config: "str | os.PathLike | None" = None, steps: "int | None" = None,
          shards: "int | None" = None, seeds: str = "0", sample_seed: int = 0,
          sweep_dir: "str | os.PathLike | None" = None, backend: str = "local", address: "str | None" = None,
          workers: "int | None" = None) -> SweepResult:
    """Train every configuration of `grid` ("KEY=V1,V2" texts, crossed) or `n` drawn from
    `random` ("KEY=log:LO:HI" ...) for every seed of `seeds`, and rank them. Every configuration
    is checked, and the plan written to `sweep_dir`, before training starts; an interrupted sweep
    finishes with resume_sweep."""
    _check_backend(backend, address, workers)
    if sample_seed < 0:
        raise UserError(f"--sample-seed must be 0 or more, got {sample_seed}")
    if n is not None and not 1 <= n <= sweeps.MAX_CONFIGS:
        raise UserError(f"-n must be from 1 to {sweeps.MAX_CONFIGS}, got {n}")
    request = SimpleNamespace(env=env, algo=algo, grid=list(grid or ()), random=list(random or ()), n=n,
                              set=list(settings or ()), preset=preset, config=config, steps=steps, shards=shards,
                              seeds=seeds, sample_seed=sample_seed)
    the_plan = sweeps.plan(request)  # every configuration checked before anything is written
    directory = sweeps.create(sweep_dir, the_plan, backend)
    return _run(directory, sweeps.read_plan(directory), backend, address, workers)


def resume_sweep(sweep_dir: "str | os.PathLike", *, backend: str = "local", address: "str | None" = None,
                 workers: "int | None" = None) -> SweepResult:
    """Finish an interrupted sweep: its unfinished units train on from their last checkpoints."""
    _check_backend(backend, address, workers)
    doc = {**sweeps.read_plan(sweep_dir), "backend": backend}
    return _run(Path(sweep_dir), doc, backend, address, workers)

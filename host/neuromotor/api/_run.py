"""A trained run, from Python: its config, metrics and policy; evaluate, render, export, train on."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm  # a widget in notebooks, text in a terminal

from neuromotor import reading
from neuromotor.api._board import Board, HilResult, as_board
from neuromotor.api._export import export
from neuromotor.api._progress import show_progress
from neuromotor.errors import UserError
from neuromotor.policy.spec import PolicySpec, env_for
from neuromotor.safe_write import check_target
from neuromotor.training import run_policy, rundir, runs, session
from neuromotor.training.config import check_seed
from neuromotor.training.evaluation import Evaluator, evaluate_spec


def _count(name: str, value, lo: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
        raise UserError(f"{name} must be an integer of at least {lo}, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class Evaluation:
    """Deterministic returns of every agent of a run (no exploration noise).

    `returns[k, e]` is agent k's return in episode e. `frames` is the number of rendered
    frames when a GIF was written (`render`), else None; `plot` the PNG of the episode over
    time written beside it, for environments that draw one (the quadrotor). `success[k, e]`
    says whether the episode met the env's success criterion, for envs that judge one (the
    quadrotor's hover), else None."""

    returns: np.ndarray
    seeds: list
    steps: int
    episodes: int
    wall_s: float
    run_dir: str
    render: "str | None" = None
    frames: "int | None" = None
    plot: "str | None" = None
    success: "np.ndarray | None" = None

    @property
    def mean(self) -> float:
        """The mean return over all agents and episodes."""
        return float(self.returns.mean(axis=1).mean())

    @property
    def std(self) -> float:
        """Over episodes for one agent, over the agents' mean returns for a population."""
        means = self.returns.mean(axis=1)
        return float(means.std() if len(self.seeds) > 1 else self.returns.std())

    def as_dict(self) -> dict:
        """What `neuromotor eval --json` prints: steps, wall_s, episodes, eval_return_mean/std,
        run_dir and one row per agent."""
        out = {
            "steps": self.steps, "wall_s": round(self.wall_s, 3), "episodes": self.episodes,
            "eval_return_mean": self.mean, "eval_return_std": self.std, "run_dir": self.run_dir,
            "agents": [{"seed": s, "eval_return_mean": float(self.returns[k].mean()),
                        "eval_return_std": float(self.returns[k].std())} for k, s in enumerate(self.seeds)],
        }
        if self.success is not None:
            out["success_rate"] = float(self.success.mean())
            for k, row in enumerate(out["agents"]):
                row["success_rate"] = float(self.success[k].mean())
        return out


def load_policy(source: "str | os.PathLike", agent: int = 0) -> PolicySpec:
    """The deployable policy of `source`: a run directory (agent `agent`'s actor: on an env that
    judges success its best evaluation's, ``RUN/best.npz``, else as trained to the end), one of a
    run's states (``RUN/checkpoint.npz``: the end; ``RUN/best.npz``) or a policy file (validated)."""
    return run_policy.load_spec(os.fspath(source), _count("agent", agent, 0))


def evaluate(run_dir, episodes: int = 10, seed: int = 12345, gymnasium: bool = False,
                 render=None, agent: int = 0, env: "str | None" = None, env_kwargs: "dict | None" = None,
                 progress: "bool | None" = None) -> Evaluation:
    """Evaluate every agent of the run in `run_dir` (see Run.evaluate), or the policy of a policy
    file (.nmp) in `env` (with `env_kwargs`; default pendulum): `episodes` episodes from initial
    states seeded by `seed`, a recurrent policy starting each from its initial state. `progress`:
    a progress bar over the rendered frames (default: in a terminal or a notebook)."""
    episodes = _count("episodes", episodes, 1)
    agent = _count("agent", agent, 0)
    check_seed(seed)
    if os.path.isfile(run_dir) or run_policy.is_distillation(run_dir):
        if gymnasium or render is not None:
            raise UserError("a policy file is evaluated in neuromotor's env, without rendering")
        return _evaluate_file(run_dir, episodes, seed, env, env_kwargs)
    if env is not None or env_kwargs is not None:
        raise UserError("--env goes with a policy file (a run evaluates in its own env)")
    if render is not None:
        render = os.fspath(render)
        if not render.endswith(".gif"):
            raise UserError(f"render writes a GIF; give a file name ending in .gif, not {render!r}")
        check_target(render, protected=rundir.own_paths(run_dir), follow=True)
    spec, algo = runs.load(run_dir)
    try:
        runs.load_best_policy(run_dir, spec, algo)  # the run's policy, as exported
        seeds = spec.seeds
        if not 0 <= agent < len(seeds):
            raise UserError(f"agent {agent} out of range: the run has {len(seeds)} agent(s)")
        env_cls = spec.env_factory()
        if render and not hasattr(env_cls, "draw"):
            raise UserError(f"environment {spec.env!r} cannot be rendered")
        plot = str(Path(render).with_suffix(".png")) if render and hasattr(env_cls, "plot_episode") else None
        if plot:
            check_target(plot, protected=rundir.own_paths(run_dir), follow=True)
        t0 = time.perf_counter()
        success = None
        if gymnasium:
            if render:
                raise UserError("render draws neuromotor's env; it does not combine with gymnasium evaluation")
            from neuromotor.envs.mujoco_vec import gymnasium_returns  # MuJoCo: only for gymnasium's own envs

            returns, states = gymnasium_returns(env_cls, algo.act, len(seeds), episodes, seed), None
        else:
            evaluator = Evaluator(env_cls, seeds, episodes)
            out = evaluator.run(algo, seed, record_env=agent * episodes if render else None)
            returns, states = out if render else (out, None)
            success = evaluator.success
        wall = time.perf_counter() - t0
        steps = algo.steps
    finally:
        algo.close()
    if render:
        from neuromotor.training.plotting import episode_gif, episode_plot  # matplotlib: only to render

        title = f"{spec.env} seed {seeds[agent]}"
        frames = tqdm(states, desc=f"rendering {render}", unit="frame", disable=not show_progress(progress))
        episode_gif(env_cls.draw, frames, render, title=title, projection=getattr(env_cls, "draw_projection", None))
        if plot:
            episode_plot(env_cls.plot_episode, env_cls.plot_rows, states, plot, title)
    return Evaluation(np.asarray(returns), list(seeds), steps, episodes, wall, str(run_dir), render,
                      len(states) if render else None, plot, success)


def _evaluate_file(path, episodes: int, seed: int, env, env_kwargs) -> Evaluation:
    spec = run_policy.load_spec(os.fspath(path))  # an int8 one flies as the host's integer reference
    if env is None and "env" in spec.meta:  # a distillation's student, on its own env
        env, env_kwargs = spec.meta["env"], spec.meta.get("env_kwargs") if env_kwargs is None else env_kwargs
    _, factory = env_for(spec, env or "pendulum", env_kwargs)
    t0 = time.perf_counter()
    returns, success = evaluate_spec(spec, factory, episodes, seed)
    return Evaluation(returns.reshape(1, -1), [seed], 0, episodes, time.perf_counter() - t0, os.fspath(path),
                      success=None if success is None else success.reshape(1, -1))


class Run:
    """A run directory: what `neuromotor.train` returns and `neuromotor.load_run` opens.

    Everything is read from the directory (config.json, metrics.jsonl, summary.json,
    checkpoint.npz), so a Run made in another process or by the command line is the same.
    A Run can stand wherever a path to the run directory is expected (``os.fspath(run)``)."""

    def __init__(self, path):
        self.path = Path(path)
        self._policies = {}
        self._summary = None  # what training just returned (also in summary.json)

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Run) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)

    def __fspath__(self) -> str:
        return str(self.path)

    @property
    def config(self) -> dict:
        """config.json as a dict: env, env_kwargs, vector, algo, seeds, run and algo_config."""
        rundir.read_config(self.path)  # refused in one line unless it is a whole, valid config
        return reading.read_json(self.path / rundir.CONFIG, "run config", limit=reading.MIB)

    @property
    def env(self) -> str:
        """The environment's name as recorded (built-in name, gymnasium id or module:attr)."""
        return self.config["env"]

    @property
    def algo(self) -> str:
        """The algorithm's name (td3, sac, ppo)."""
        return self.config["algo"]

    @property
    def seeds(self) -> list:
        """One seed per agent."""
        return list(self.config["seeds"])

    @property
    def curve_file(self) -> Path:
        """The learning curve PNG (evaluation return against steps, one line per agent)."""
        return self.path / rundir.CURVE

    @property
    def summary(self) -> "dict | None":
        """summary.json (final returns, steps, wall time), or None before training finished."""
        if self._summary is not None:
            return self._summary
        if not os.path.lexists(self.path / rundir.SUMMARY):
            return None
        return reading.read_json(self.path / rundir.SUMMARY, "summary", limit=reading.MIB)

    @property
    def metrics(self) -> list:
        """metrics.jsonl: one dict per agent per evaluation (step, agent, seed, eval_return_mean,
        eval_return_std, train_return, wall_s)."""
        return rundir.read_metrics(self.path)

    def learning_curve(self, agent: int = 0) -> "tuple[np.ndarray, np.ndarray]":
        """(steps, mean evaluation return) of one agent, in training order."""
        agent = _count("agent", agent, 0)
        rows = [r for r in self.metrics if r.get("agent") == agent]
        if not rows and agent >= len(self.seeds):
            raise UserError(f"agent {agent} out of range: the run has {len(self.seeds)} agent(s)")
        return (np.array([r["step"] for r in rows], dtype=np.int64),
                np.array([r["eval_return_mean"] for r in rows], dtype=np.float64))

    @property
    def policy(self) -> PolicySpec:
        """Agent 0's deterministic policy (on an env that judges success, its best evaluation's:
        best.npz): call it on observations to get actions (NumPy, float32, clamped to the action
        limits; a recurrent policy steps its own state: `reset()` it as each episode starts, or
        use `step(obs, state)`), or export it."""
        return self.policy_of(0)

    def policy_of(self, agent: int) -> PolicySpec:
        """The deterministic policy of agent `agent` (index into `seeds`)."""
        agent = _count("agent", agent, 0)
        if agent not in self._policies:
            self._policies[agent] = run_policy.load_spec(self.path, agent)
        return self._policies[agent]

    def evaluate(self, episodes: int = 10, *, seed: int = 12345, gymnasium: bool = False,
                 render: "str | os.PathLike | None" = None, agent: int = 0) -> Evaluation:
        """Run `episodes` deterministic episodes per agent from initial states seeded by `seed`
        (the run's policy: on an env that judges success, its best evaluation's).

        gymnasium: evaluate in gymnasium's own environment (MuJoCo tasks) instead of
        neuromotor's. render: also write the first episode of `agent` as a GIF to this path."""
        return evaluate(self.path, episodes, seed, gymnasium, render, agent)

    def render(self, path: "str | os.PathLike", *, agent: int = 0, seed: int = 12345) -> Path:
        """Render one deterministic episode of `agent` to a GIF at `path`; returns the path."""
        self.evaluate(1, seed=seed, render=path, agent=agent)
        return Path(path)

    def export(self, path: "str | os.PathLike", format: "str | None" = None, *, agent: int = 0,
               quantize: "str | None" = None, max_error: "float | None" = None,
               finetune_steps: "int | None" = None, progress: "bool | None" = None) -> Path:
        """Write agent `agent`'s policy to `path`: format "nmp" (the policy file boards load),
        "c-header" (bare-metal C) or "platformio" (a project directory); default: c-header for
        *.h, else nmp. Returns the path written.

        quantize="int8" writes integer weights and activations, calibrated on rollouts of the
        run's environment and fine-tuned there (`finetune_steps`, default 100; a recurrent
        policy's 300, through time) to act like the float policy; it is refused (a UserError with the figures) when its actions are
        further than `max_error` (default 0.02) of the action range from the float policy's.
        `progress`: a bar over the fine-tune (default: in a terminal or a notebook)."""
        return export(self.path, path, format, agent, quantize, max_error, finetune_steps=finetune_steps,
                      progress=progress)[0]

    def resume(self, steps: "int | None" = None, *, progress: "bool | None" = None) -> "Run":
        """Train on from the checkpoint, to `steps` in total (default: the configured steps)."""
        return resume(self.path, steps=steps, progress=progress)

    def deploy(self, port: "str | Board" = "auto", **options) -> dict:
        """Deploy agent 0's policy to a board (a port or a Board); see Board.deploy."""
        return as_board(port).deploy(self, **options)

    def hil(self, port: "str | Board" = "auto", **options) -> "HilResult":
        """Hardware in the loop on a board holding this run's policy; see Board.hil."""
        return as_board(port).hil(self, **options)


def load_run(path: "str | os.PathLike") -> Run:
    """Open an existing run directory (from `neuromotor.train` or `neuromotor train`); its config
    is checked now, so a missing or corrupted run fails here with a UserError."""
    path = Path(path)
    rundir.read_config(path)
    return Run(path)


def resume(run_dir: "str | os.PathLike", steps: "int | None" = None, vector: "str | None" = None,
           progress: "bool | None" = None) -> Run:
    """Continue the run in `run_dir` from its checkpoint, to `steps` in total if given."""
    with rundir.held(run_dir) as run:
        spec, algo = session.resume(run.path, vector=vector, steps=steps)
        summary = session.train(run, spec, algo, progress=show_progress(progress))
    return finished(run.path, summary)


def finished(run_dir, summary: dict) -> Run:
    """The Run of a run directory whose training just ended with `summary`."""
    run = Run(run_dir)
    run._summary = summary
    return run


def list_runs(root: "str | os.PathLike | None" = None) -> list:
    """One dict per run directory under `root` (default runs/): run, path, env, algo, seeds,
    steps and the final eval_return_mean (None while unfinished)."""
    return runs.list_runs(root)

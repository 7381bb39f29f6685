"""Distillation: a population of quadrotor teachers, each hovering its own drone, distilled into
one GRU student that flies them all (RAPTOR's recipe, arXiv 2509.11481, at a small scale).

1. Teachers: a base policy trains on the Crazyflie (SAC's quadrotor preset, `base_steps`: an
   ordinary run directory, RUN/base). K drones are drawn (mass, inertia, arm length and motor
   time constant, each a factor of the Crazyflie's uniform in [1 - r, 1 + r]; the thrust
   coefficient from a thrust-to-weight ratio uniform in [min, max]),
   and one SAC population starts from the base's networks and fine-tunes them for
   `teacher_steps` (the preset's decay and averaging scaled to them), agent k on drone k (the
   env's `drones` option): RUN/teachers, and each teacher's policy RUN/teacher-K.nmp.
2. DAgger: the student (Dense relu -> GRU -> Dense tanh, neuromotor.nn.recurrent) flies
   envs_per_teacher envs of every drone for rollout_steps steps; with probability beta
   (beta0 * beta_decay^iteration) a step executes the teacher's action instead of the
   student's. The teacher of each drone labels every step. The data of all iterations is kept,
   and the student is trained on windows of `window` steps drawn from it: each starts from the
   state the student had there when flying (or h0 where an episode starts), the first
   `burn_in` steps only warm the state, the rest are matched to the labels (mean squared
   error, BPTT, Adam, gradient norm clipped).
3. Evaluation: drones none of them trained on (fresh draws from the same ranges), from the
   task's starts; the student, every teacher on its own drone and, if given, one nominal policy.

The student observes RAPTOR's 22 numbers (STUDENT_ENV: position in metres, rotation matrix,
velocities, the last action; no rotor speed), the teachers the quadrotor's default 38: it must
infer the rotors' lag and the drone from its memory, and it flies where RAPTOR's policy does.

The run directory holds distil.json (the config and the drones), metrics.jsonl (one record
per iteration, its "step"), learning_curve.png, summary.json and the student as student.nmp (policy file
version 4).
"""

import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from neuromotor import interrupts, rules
from neuromotor.envs import env_class
from neuromotor.envs import quadrotor as q
from neuromotor.envs.quadrotor_drones import (DRONE_FACTOR_RANGE, DRONE_FACTORS, SENSED, THRUST_TO_WEIGHT,
                                              QuadrotorDronesVec)
from neuromotor.errors import UserError
from neuromotor.limits import MAX_START_DRAWS
from neuromotor.nn.optim import Adam
from neuromotor.nn.recurrent import RecurrentPolicyNet
from neuromotor.paths import DISTIL_CONFIG, STUDENT_FILE
from neuromotor.policy.policy_file import write_policy
from neuromotor.policy.spec import PolicySpec
from neuromotor.safe_write import atomic_write
from neuromotor.training import config, plotting, rundir, runs, session
from neuromotor.training.evaluation import evaluate_spec
from neuromotor.training.run_policy import load_policy_spec

CONFIG, STUDENT, BASE, TEACHERS = DISTIL_CONFIG, STUDENT_FILE, "base", "teachers"
OWN_FILES = (CONFIG, rundir.METRICS, rundir.CURVE, rundir.SUMMARY, STUDENT)
TEACHER_FILE = "teacher-{}.nmp"
EVAL_SEED = 10_000  # the task's held-out starts (benchmarks/quadrotor.py)
RANGED_FACTORS = tuple(name for name in DRONE_FACTORS if name != "thrust")  # thrust: from the ratio
SELECT_SEED = 20_000  # the starts the student of each iteration is judged from, on the teachers' drones
STUDENT_ENV = {"position_scale": 1, "rotor_speeds": False, "action_history": 1}


def student_obs(obs: np.ndarray) -> np.ndarray:
    """The student's observation (the quadrotor with STUDENT_ENV) of the teachers' (the default
    quadrotor's): position in metres, the rest of the sensed state, the last action."""
    return np.concatenate([obs[:, :3] / q.POSITION_SCALE, obs[:, 3:SENSED], obs[:, -4:]], 1)


@dataclass
class DistilConfig:
    teachers: int = 16
    # Teachers trained from scratch on their drones hovered from 47-100% of their starts after SAC's
    # 300k steps (one collapsed from 81% to 0% and back): fine-tuned from one base they start flying.
    base_steps: int = 300_000        # the base on the Crazyflie: the SAC quadrotor preset's
    teacher_steps: int = 100_000     # per teacher, fine-tuning the base on its drone
    teacher_eval_episodes: int = 100
    teacher_eval_every: int = 10_000  # the preset's; each teacher is kept from its best evaluation
    # per-teacher drone: each factor of the Crazyflie's uniform in [1 - r, 1 + r], and its
    # thrust-to-weight ratio (the Crazyflie's 2.25) uniform between these two, which set the thrust
    # coefficient. Teachers below 1.7 hovered from 0-69% of their starts (docs/distillation.md).
    min_thrust_to_weight: float = 1.7
    max_thrust_to_weight: float = 4.5
    mass: float = 0.15
    inertia: float = 0.3
    arm: float = 0.2
    motor_time_constant: float = 0.2
    dense: int = 64                  # student: Dense relu -> GRU -> Dense tanh
    hidden: int = 32
    iterations: int = 12
    envs_per_teacher: int = 16
    rollout_steps: int = 500
    # The student lost its drones out of the box in their first second from hard starts, and hovered
    # the others as precisely as its teachers: its episodes start from the hardest of start_draws
    # starts (the teachers' SAC preset's 3); 1: fresh drones 82% -> 87% (docs/distillation.md)
    start_draws: int = 3
    beta0: float = 1.0               # share of executed teacher actions in the first iteration
    beta_decay: float = 0.5
    window: int = 64
    burn_in: int = 16
    batch_windows: int = 64
    updates: int = 1800              # gradient steps per iteration
    lr: float = 1e-3
    lr_end: float = 1e-4             # the last iteration's rate: rates fall geometrically from lr
    max_grad_norm: float = 1.0
    # The student of each iteration flies the teachers' drones from select_episodes starts each
    # (SELECT_SEED, not the evaluation's): students of successive iterations differed by 20 points
    # there, and the best is kept.
    select_episodes: int = 64
    eval_drones: int = 100
    eval_episodes: int = 10          # per fresh drone
    seed: int = 0

    RULES = {
        **{name: rules.integer(1, 10**9) for name in (
            "teachers", "base_steps", "teacher_steps", "teacher_eval_episodes", "teacher_eval_every", "dense", "hidden",
            "iterations", "envs_per_teacher", "rollout_steps", "window", "batch_windows", "updates", "eval_drones",
            "select_episodes",
            "eval_episodes")},
        **{name: rules.number(0, 0.7) for name in RANGED_FACTORS},
        **{name: rules.number(1, 8, lo_open=True) for name in ("min_thrust_to_weight", "max_thrust_to_weight")},
        "burn_in": rules.integer(0, 10**9),
        "start_draws": rules.integer(1, MAX_START_DRAWS),
        "beta0": rules.number(0, 1), "beta_decay": rules.number(0, 1),
        "lr": rules.RATE, "lr_end": rules.RATE, "max_grad_norm": rules.number(0, lo_open=True),
        "seed": rules.integer(0, 2**32 - 1),
    }

    def check(self):
        if self.min_thrust_to_weight > self.max_thrust_to_weight:
            raise UserError(f"min_thrust_to_weight ({self.min_thrust_to_weight:g}) exceeds "
                            f"max_thrust_to_weight ({self.max_thrust_to_weight:g})")
        lo, hi = DRONE_FACTOR_RANGE
        if not lo <= self.min_thrust_to_weight / THRUST_TO_WEIGHT * (1 - self.mass) \
                <= self.max_thrust_to_weight / THRUST_TO_WEIGHT * (1 + self.mass) <= hi:
            raise UserError(f"the thrust-to-weight and mass ranges need thrust coefficients outside "
                            f"{lo:g}-{hi:g} times the Crazyflie's")
        if self.burn_in >= self.window:
            raise UserError(f"burn_in ({self.burn_in}) must be shorter than window ({self.window})")
        if self.window > self.rollout_steps:
            raise UserError(f"window ({self.window}) cannot exceed rollout_steps ({self.rollout_steps})")


def make_config(settings: dict) -> DistilConfig:
    cfg = DistilConfig()
    config.apply(settings, cfg)
    config.validate(cfg)
    return cfg


def draw_drones(cfg: DistilConfig, count: int, stream: int, spread: bool = False) -> list:
    """`count` drones as the env's `drones` option: each ranged factor and the thrust-to-weight
    ratio uniform in the config's ranges, the thrust coefficient the one giving that ratio at
    that mass. `spread`: a Latin hypercube (each range cut into `count` equal strata, one drone
    in each, the strata paired at random), so that the teachers span every range. A student
    of 8 teachers drawn independently, their ratios 1.72-2.55, hovered none of the fresh
    drones above 2.7, from any start."""
    rng = np.random.default_rng([cfg.seed, stream])
    columns = (*RANGED_FACTORS, "thrust_to_weight")
    if spread:
        strata = np.stack([rng.permutation(count) for _ in columns], 1)
        u = (strata + rng.uniform(size=strata.shape)) / count
    else:
        u = rng.uniform(size=(count, len(columns)))
    r = np.array([getattr(cfg, name) for name in RANGED_FACTORS])
    lo, hi = cfg.min_thrust_to_weight, cfg.max_thrust_to_weight
    drones = []
    for row in u:
        drone = dict(zip(RANGED_FACTORS, 1 - r + 2 * r * row[:-1]))
        drone["thrust"] = (lo + (hi - lo) * row[-1]) / THRUST_TO_WEIGHT * drone["mass"]
        drones.append({name: round(float(drone[name]), 4) for name in DRONE_FACTORS})
    return drones


def train_base(run_dir: Path, cfg: DistilConfig, progress: bool) -> dict:
    """The base's SAC run on the Crazyflie in run_dir (seed cfg.seed); its last state (a state_dict)."""
    settings = {"eval_every": min(cfg.teacher_eval_every, cfg.base_steps),
                "eval_episodes": cfg.teacher_eval_episodes, "checkpoint_every": 0}
    spec = session.new_config("quadrotor", "sac", settings=settings, steps=cfg.base_steps, shards=1,
                              seed=cfg.seed, quiet=True)
    algo = runs.build(spec)
    rundir.make_dir(run_dir)
    with rundir.locked(run_dir):
        rundir.prepare(run_dir, force=True)
        rundir.write_config(run_dir, spec)
        session.train(run_dir, spec, algo, progress=progress)
    _, algo = runs.load(run_dir)
    try:
        return algo.state_dict()
    finally:
        algo.close()


def train_teachers(run_dir: Path, cfg: DistilConfig, drones: list, base: dict, progress: bool) -> list:
    """The teachers' SAC run in run_dir (agent k on drone k, every agent starting from `base`,
    the base's state_dict); each one's best policy, also written beside run_dir as TEACHER_FILE.

    The run goes from evaluation to evaluation (every teacher_eval_every steps), each leg a
    resume of the last: an agent's policy swings from one evaluation to the next, and the
    run's best.npz is the step of the population's best mean, so each teacher is kept from
    its own best evaluation instead."""
    steps = cfg.teacher_steps
    every = min(cfg.teacher_eval_every, steps)
    settings = {"env_kwargs": {"drones": drones}, "lr_decay_start": steps // 2, "lr_decay_end": steps,
                "policy_average": min(30_000, steps // 10), "eval_every": every,
                "eval_episodes": cfg.teacher_eval_episodes, "checkpoint_every": 0}
    spec = session.new_config("quadrotor", "sac", settings=settings, steps=every, shards=1,
                              seeds=f"0-{cfg.teachers - 1}", quiet=True)
    algo = runs.build(spec)
    rundir.make_dir(run_dir)
    best, scores = [None] * cfg.teachers, [None] * cfg.teachers
    with rundir.locked(run_dir):
        rundir.prepare(run_dir, force=True)
        rundir.write_config(run_dir, spec)
        algo.start_from(base)
        session.train(run_dir, spec, algo, progress=progress)
        _keep_best(run_dir, best, scores)
        for end in [*range(2 * every, steps, every), *([steps] if steps > every else [])]:
            spec, algo = session.resume(run_dir, steps=end)
            session.train(run_dir, spec, algo, progress=progress)
            _keep_best(run_dir, best, scores)
    for k, teacher in enumerate(best):
        write_policy(teacher, run_dir.parent / TEACHER_FILE.format(k))
    return best


def _keep_best(run_dir: Path, best: list, scores: list) -> None:
    """Each agent's policy of the run's last state where its evaluation (success, then return)
    beats its earlier ones."""
    records = rundir.read_metrics(run_dir)
    last = max(r["step"] for r in records)
    for r in records:
        k = r["agent"]
        score = (r["eval_success"], r["eval_return_mean"])
        if r["step"] == last and (scores[k] is None or score > scores[k]):
            scores[k], best[k] = score, load_policy_spec(run_dir, k)


class Dataset:
    """Every iteration's rollouts, (T, envs, ...) arrays concatenated along the env axis."""

    def __init__(self):
        self.x = self.label = self.reset = self.state = None

    def add(self, x, label, reset, state):
        parts = (x, label, reset, state)
        if self.x is None:
            self.x, self.label, self.reset, self.state = parts
        else:
            self.x, self.label, self.reset, self.state = (np.concatenate([a, b], 1) for a, b in zip(
                (self.x, self.label, self.reset, self.state), parts))

    def windows(self, rng, count: int, length: int):
        """`count` windows of `length` steps. Every step is in at least as many windows as a step
        in the middle: a start is drawn from [1 - length, T - 1] and moved into the data. (Drawn
        from [0, T - length], the rollouts' first step, where their episodes start, would be in
        1/length of a middle step's windows.)"""
        T, n = self.reset.shape
        env = rng.integers(0, n, count)
        t = np.clip(rng.integers(1 - length, T, count), 0, T - length)[None] + np.arange(length)[:, None]
        return self.x[t, env], self.label[t, env], self.reset[t, env], self.state[t[0], env]


def rollout(net, norm, teachers, env, rngs, beta, rng, cfg: DistilConfig):
    """Fly the student (teacher actions executed with probability beta per step) for
    cfg.rollout_steps steps, each episode from the hardest of cfg.start_draws starts; the
    teachers' labels. Returns (normalised obs, labels, resets, student
    states) (T, N, ...) and the success share of the episodes that ended (None if none did)."""
    n = env.num_envs
    obs = env.reset(rngs, draws=cfg.start_draws)
    h = net.initial_state(n)
    xs, labels, resets, states = [], [], [], []
    reset = np.ones(n, bool)
    ep_len = np.zeros(n, int)
    ended = succeeded = 0
    for _ in range(cfg.rollout_steps):
        x = ((student_obs(obs) - norm[0]) / norm[1]).astype(np.float32)
        label = np.empty((n, 4), np.float32)
        for teacher, (a, b) in zip(teachers, env.blocks):
            label[a:b] = teacher.forward(obs[a:b])
        xs.append(x), labels.append(label), resets.append(reset), states.append(h)
        action, h = net.step(x, h)
        taught = rng.uniform(size=n) < beta
        obs, _, terminated = env.step(np.where(taught[:, None], label, action))
        ep_len += 1
        done = terminated | (ep_len >= env.max_episode_steps)
        reset = done
        if done.any():
            full = done & ~terminated
            ended += int(done.sum())
            succeeded += int((env.success() & full).sum())
            obs = env.reset(rngs, mask=done, draws=cfg.start_draws)
            h = np.where(done[:, None], net.p["h0"], h)
            ep_len[done] = 0
    stack = lambda a, dtype: np.array(a, dtype)  # noqa: E731
    data = (stack(xs, np.float32), stack(labels, np.float32), stack(resets, bool), stack(states, np.float32))
    return data, (succeeded / ended if ended else None)


def student_spec(net, norm, env, meta: dict) -> PolicySpec:
    p = net.p
    return PolicySpec(
        weights=[p["w1"], p["wi"], p["w2"]], biases=[p["b1"], p["bi"], p["b2"]],
        activations=["relu", "identity", "tanh"], kinds=["dense", "gru", "dense"],
        hidden_weights=[None, p["wh"], None], hidden_biases=[None, p["bh"], None],
        initial_hidden=[None, p["h0"], None], obs_mean=norm[0], obs_std=norm[1],
        action_scale=(env.action_high - env.action_low) / 2, action_offset=(env.action_high + env.action_low) / 2,
        action_low=env.action_low, action_high=env.action_high, meta=meta)


def dagger(run_dir: Path, cfg: DistilConfig, teachers: list, drones: list, progress: bool):
    """The trained student network (its iteration whose student flew the teachers' drones best),
    its observation normalisation (mean, std), the env and that iteration."""
    from tqdm.auto import tqdm

    env = QuadrotorDronesVec(cfg.teachers * cfg.envs_per_teacher, drones=drones)
    rng = np.random.default_rng([cfg.seed, 1])
    obs_dim = student_obs(np.zeros((1, env.obs_dim), np.float32)).shape[1]
    net = RecurrentPolicyNet(obs_dim, env.act_dim, cfg.dense, cfg.hidden, rng)
    opt = Adam(len(net.params), lr=cfg.lr)
    data = Dataset()
    # the student flies iteration 0 unnormalised (beta0 1: it is not flying); its data then sets the statistics
    norm = (np.zeros(obs_dim, np.float32), np.ones(obs_dim, np.float32))
    t0 = time.perf_counter()
    best = (-1.0, None, None)  # (success, params, iteration)
    bar = tqdm(total=cfg.iterations, unit="iteration", desc="distil quadrotor", disable=not progress)
    try:
        for it in range(cfg.iterations):
            beta = cfg.beta0 * cfg.beta_decay ** it
            opt.lr = cfg.lr * (cfg.lr_end / cfg.lr) ** (it / max(1, cfg.iterations - 1))
            rngs = [np.random.default_rng([cfg.seed, 2, it, i]) for i in range(env.num_envs)]
            part, success = rollout(net, norm, teachers, env, rngs, beta, rng, cfg)
            if it == 0:
                raw = part[0].reshape(-1, obs_dim)
                norm = (raw.mean(0).astype(np.float32), np.maximum(raw.std(0), 1e-2).astype(np.float32))
                part = ((part[0] - norm[0]) / norm[1],) + part[1:]
            data.add(*part)
            losses = [_update(net, opt, data, rng, cfg) for _ in range(cfg.updates)]
            interrupts.check()
            record = {"step": it, "beta": beta, "lr": opt.lr, "samples": int(data.reset.size),
                      "loss": float(np.mean(losses)), "rollout_success": success}
            if not np.isfinite(record["loss"]) or not np.isfinite(net.params).all():
                raise UserError(f"distillation diverged at iteration {it}: NaN or inf in the student; lower lr")
            flown = success_on(student_spec(net, norm, env, {}), drones, cfg.select_episodes, STUDENT_ENV, SELECT_SEED)
            record["select_success"] = float(flown.mean())
            if record["select_success"] > best[0]:
                best = (record["select_success"], net.params.copy(), it)
            record["wall_s"] = round(time.perf_counter() - t0, 3)
            rundir.append_metrics(run_dir, [record])
            bar.update(1)
            bar.set_postfix_str(f"loss {record['loss']:.4f}, flies {record['select_success']:.0%}")
    finally:
        bar.close()
    net.params[...] = best[1]
    return net, norm, env, best[2]


def _update(net, opt, data: Dataset, rng, cfg: DistilConfig) -> float:
    x, label, reset, h = data.windows(rng, cfg.batch_windows, cfg.window)
    h = np.where(reset[0][:, None], net.p["h0"], h)
    y, _, cache = net.forward(x, h, reset)
    # The burn-in warms a stored state up; from an episode's start on the state is exact, and
    # every step counts: else no episode's first burn_in steps, its hardest, would ever be learnt.
    counted = (np.arange(len(y)) >= cfg.burn_in)[:, None] | np.logical_or.accumulate(reset, axis=0)
    err = (y - label) * counted[..., None]
    size = int(counted.sum()) * y.shape[-1]
    d_y = 2 * err / size
    grad = net.backward(cache, d_y)
    norm = float(np.sqrt(np.dot(grad, grad)))
    if norm > cfg.max_grad_norm:
        grad *= np.float32(cfg.max_grad_norm / norm)
    opt.step(net.params, grad)
    return float((err * err).sum() / size)


def success_on(spec, drones: list, episodes: int, env_kwargs=None, seed: int = EVAL_SEED) -> np.ndarray:
    """(len(drones), episodes) success of `spec` flying each drone from the task's starts (drawn
    from `seed`), observing the quadrotor with `env_kwargs` (the student: STUDENT_ENV)."""
    factory = env_class("quadrotor", {**(env_kwargs or {}), "drones": drones})
    _, success = evaluate_spec(spec, factory, len(drones) * episodes, seed)
    return success.reshape(len(drones), episodes)


def evaluate(cfg: DistilConfig, student, base, teachers, drones, fresh, nominal=None) -> dict:
    """Success rows: per drone, their mean and the worst drone. "best teacher on fresh drones" is
    the teacher (its index: "teacher") whose mean over the fresh drones is highest."""
    fresh_of = [success_on(t, fresh, cfg.eval_episodes).mean(1) for t in teachers]
    best = int(np.argmax([v.mean() for v in fresh_of]))
    rows = {"student on fresh drones": success_on(student, fresh, cfg.eval_episodes, STUDENT_ENV).mean(1),
            "base policy on fresh drones": success_on(base, fresh, cfg.eval_episodes).mean(1),
            "best teacher on fresh drones": fresh_of[best],
            "student on the teachers' drones": success_on(student, drones, cfg.eval_episodes, STUDENT_ENV).mean(1),
            "each teacher on its own drone": np.array([success_on(t, [d], cfg.eval_episodes).mean()
                                                       for t, d in zip(teachers, drones)])}
    if nominal is not None:
        rows["nominal policy on fresh drones"] = success_on(nominal, fresh, cfg.eval_episodes).mean(1)
    out = {name: {"success_mean": float(v.mean()), "success_min": float(v.min()), "per_drone": v.round(4).tolist()}
           for name, v in rows.items()}
    out["best teacher on fresh drones"]["teacher"] = best
    out["best teacher on fresh drones"]["each_teacher_mean"] = [round(float(v.mean()), 4) for v in fresh_of]
    return out


def check_run_dir(run_dir: Path, force: bool) -> None:
    """UserError unless run_dir is new, empty or (with force) an earlier distillation."""
    if run_dir.exists() and not run_dir.is_dir():
        raise UserError(f"{run_dir} exists and is not a directory")
    if run_dir.is_dir() and any(run_dir.iterdir()):
        if not (run_dir / CONFIG).is_file():
            raise UserError(f"{run_dir} is not empty and holds no distillation ({CONFIG}); choose a new directory")
        if not force:
            raise UserError(f"{run_dir} already holds a distillation; use --force to replace it")


def distil(run_dir, cfg: DistilConfig, nominal=None, force: bool = False, progress: bool = True) -> dict:
    """Train the teachers, distil them, evaluate; the summary (also RUN/summary.json)."""
    run_dir = Path(run_dir)
    check_run_dir(run_dir, force)
    rundir.make_dir(run_dir)
    for path in [*(run_dir / name for name in OWN_FILES), *run_dir.glob(TEACHER_FILE.format("*"))]:
        path.unlink(missing_ok=True)
    drones, fresh = draw_drones(cfg, cfg.teachers, 0, spread=True), draw_drones(cfg, cfg.eval_drones, 1)
    atomic_write(run_dir / CONFIG, json.dumps({"env": "quadrotor", "config": dataclasses.asdict(cfg),
                                               "drones": drones, "fresh_drones": fresh}, indent=2) + "\n")
    t0, cpu = time.perf_counter(), [time.process_time()]

    def lap() -> float:
        cpu.append(time.process_time())
        return round(cpu[-1] - cpu[-2], 1)

    base_state = train_base(run_dir / BASE, cfg, progress)
    base = load_policy_spec(run_dir / BASE)
    phases = {"base": lap()}
    teachers = train_teachers(run_dir / TEACHERS, cfg, drones, base_state, progress)
    del base_state
    phases["teachers"] = lap()
    net, norm, env, iteration = dagger(run_dir, cfg, teachers, drones, progress)
    student = student_spec(net, norm, env, {"env": "quadrotor", "algo": "distil", "seed": cfg.seed,
                                            "step": iteration})
    write_policy(student, run_dir / STUDENT)
    metrics = rundir.read_metrics(run_dir)
    _plot(metrics, run_dir / rundir.CURVE)
    phases["dagger"] = lap()
    evaluation = evaluate(cfg, student, base, teachers, drones, fresh, nominal)
    phases["evaluation"] = lap()
    summary = {"evaluation": evaluation, "cpu_s_per_phase": phases, "cpu_s": round(cpu[-1] - cpu[0], 1),
               "wall_s": round(time.perf_counter() - t0, 1), "final_loss": metrics[-1]["loss"],
               "student_iteration": iteration,
               "student": str(run_dir / STUDENT), "base": str(run_dir / BASE), "teachers": str(run_dir / TEACHERS), "run_dir": str(run_dir),
               # a policy file holds no env: eval and hil need the student's, which is not the quadrotor's default
               "student_env_kwargs": dict(STUDENT_ENV)}
    atomic_write(run_dir / rundir.SUMMARY, json.dumps(summary, indent=2) + "\n")
    return summary


def _plot(metrics: list, path) -> None:
    fig, (top, bottom) = plotting.subplots(nrows=2, sharex=True, figsize=(7, 5))
    its = [r["step"] for r in metrics]
    top.semilogy(its, [r["loss"] for r in metrics], "o-")
    top.set_ylabel("imitation loss (MSE)")
    top.set_title("distillation into a GRU student")
    flown = [(r["step"], r["rollout_success"]) for r in metrics if r["rollout_success"] is not None]
    bottom.plot(its, [r["beta"] for r in metrics], "--", label="teacher share (beta)")
    if flown:
        bottom.plot(*zip(*flown), "o-", label="rollout success (beta's mixture)")
    bottom.plot(its, [r["select_success"] for r in metrics], "s-", label="student alone on the teachers' drones")
    bottom.set_xlabel("DAgger iteration")
    bottom.legend(fontsize=8)
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    plotting.save_png(fig, path)

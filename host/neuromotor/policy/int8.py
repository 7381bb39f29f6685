"""Exporting a run's policy as int8: calibration on the run's own env, error-compensating
rounding and a quantisation-aware fine-tune of the integers (the float policy stays as it
is), then the action error of the int8 policy against the float one on held-out
observations (different episodes), refused when it exceeds a fraction of the action range.
On an env that judges success (the quadrotor's hover) the contract is the task's instead: both
policies fly the same held-out episodes, and the int8 one may succeed at most MAX_SUCCESS_DROP
less often (a largest action error taken over tumbling states says little about whether the
drone still hovers).

A recurrent policy (GRU layers) is calibrated and fine-tuned along whole episodes, through
time (finetune_gru.py), each int8 state following its own inputs, and compared with the float
policy step by step along held-out episodes."""

import math

import numpy as np
from threadpoolctl import threadpool_limits

from neuromotor.envs.episodes import episode_outcomes
from neuromotor.errors import UserError
from neuromotor.policy.finetune import STEPS as FINETUNE_STEPS
from neuromotor.policy.finetune import finetune
from neuromotor.policy.finetune_gru import STEPS as RECURRENT_FINETUNE_STEPS
from neuromotor.policy.finetune_gru import finetune_recurrent
from neuromotor.policy.quantize import HEADROOM, QuantizedPolicy, calibrate, quantize
from neuromotor.policy.rounding import compensated
from neuromotor.policy.spec import PolicySpec, env_for

DEFAULT_MAX_ERROR = 0.02   # of each dimension's action range
HELDOUT_SEED_OFFSET = 1_000_003  # held-out episodes never share a seed with calibration ones
STARTS_SEED_OFFSET = 500_009     # nor with the calibration's episode starts
SUCCESS_SEED_OFFSET = 2_000_029  # nor do the episodes the success check flies
STARTS_ENVS = 64
SUCCESS_EPISODES = 100
MAX_SUCCESS_DROP = 0.02     # of the episodes
PERTURBATIONS = (0.05,)     # of each input's spread over the calibration observations


class QuantizationError(UserError):
    """The int8 policy's actions are further from the float policy's than allowed."""


def rollout_observations(spec: PolicySpec, n: int, seed: int, env_name=None, env_kwargs=None,
                         envs: int = 8) -> np.ndarray:
    """`n` observations the float policy meets acting in the run's env (episodes seeded
    seed, seed + 1, ...; only steps before an episode ends)."""
    if n < 1:
        raise UserError(f"the number of observations must be >= 1, got {n}")
    _, factory = env_for(spec, env_name, env_kwargs)
    env = factory(envs)
    out, count, episode = [], 0, 0
    try:
        while count < n:
            rngs = [np.random.default_rng(seed + episode + i) for i in range(envs)]
            episode += envs
            obs = env.reset(rngs)
            alive = np.ones(envs, bool)
            for _ in range(env.max_episode_steps):
                out.append(obs[alive])
                count += int(alive.sum())
                if count >= n:
                    break
                obs, _, terminated = env.step(spec.forward(obs))
                alive &= ~_ended(env, terminated)
                if not alive.any():
                    break
    finally:
        if hasattr(env, "close"):
            env.close()
    return np.concatenate(out)[:n].astype(np.float32)


def _ended(env, terminated) -> np.ndarray:
    """Which episodes the last step ended: terminated, or truncated where the env says."""
    limit = getattr(env, "truncated", None)
    return np.asarray(terminated, bool) | (False if limit is None else np.asarray(limit, bool))


def action_error(spec: PolicySpec, qp: QuantizedPolicy, obs: np.ndarray) -> dict:
    """Max and mean |int8 action - float action| on `obs`, in env units and as a fraction
    of each dimension's action range (high - low)."""
    return _error_report(spec, spec.forward(obs), qp.forward(obs))


def _error_report(spec: PolicySpec, a: np.ndarray, b: np.ndarray) -> dict:
    err = np.abs(a.astype(np.float64) - b.astype(np.float64))
    span = (spec.action_high - spec.action_low).astype(np.float64)
    frac = err / np.where(span > 0, span, 1.0)
    return {"max_error": float(err.max()), "mean_error": float(err.mean()),
            "max_error_frac": float(frac.max()), "mean_error_frac": float(frac.mean()),
            "worst_dim": int(np.unravel_index(frac.argmax(), frac.shape)[1]), "heldout_obs": int(len(a))}


def rollout_sequences(spec: PolicySpec, episodes: int, steps: int, seed: int, env_name=None,
                      env_kwargs=None) -> tuple:
    """(observations (T, episodes, obs_dim), alive (T, episodes)) of the float recurrent policy
    acting in the run's env for up to `steps` steps (episodes seeded seed, seed + 1, ...); an
    episode that has ended repeats its last observation."""
    _, factory = env_for(spec, env_name, env_kwargs)
    env = factory(episodes)
    seqs, alive_seq = [], []
    try:
        obs = env.reset([np.random.default_rng(seed + i) for i in range(episodes)])
        state, alive = spec.initial_state(), np.ones(episodes, bool)
        for _ in range(min(steps, env.max_episode_steps)):
            seqs.append(np.where(alive[:, None], obs, seqs[-1]) if seqs else np.asarray(obs))
            alive_seq.append(alive.copy())
            action, state = spec.step(seqs[-1], state)
            obs, _, terminated = env.step(action)
            alive &= ~_ended(env, terminated)
            if not alive.any():
                break
    finally:
        if hasattr(env, "close"):
            env.close()
    return np.stack(seqs).astype(np.float32), np.stack(alive_seq)


def sequence_error(spec: PolicySpec, qp: QuantizedPolicy, seqs: np.ndarray, alive: np.ndarray) -> dict:
    """action_error along episodes: each policy steps its own state from its initial one over
    the same observations; the steps where the episode is alive count."""
    sf, sq, a, b = spec.initial_state(), qp.initial_state(), [], []
    for obs, live in zip(seqs, alive):
        af, sf = spec.step(obs, sf)
        aq, sq = qp.step(obs, sq)
        a.append(af[live])
        b.append(aq[live])
    return _error_report(spec, np.concatenate(a), np.concatenate(b))


HELDOUT_EPISODES = 8         # held-out episodes of a recurrent policy
CALIBRATION_EPISODES = 128   # its calibration episodes: its largest errors are in a few of them


def quantize_recurrent(spec: PolicySpec, calibration: int, heldout: int, seed: int, env_name=None,
                       env_kwargs=None, finetune_steps: int = RECURRENT_FINETUNE_STEPS,
                       good_enough: float = 0.0, on_step=None) -> tuple:
    """(QuantizedPolicy, report) of a policy with GRU layers: fine-tuned through time (up to
    `finetune_steps` steps, fewer once the calibration episodes' largest error is at most
    `good_enough`) along CALIBRATION_EPISODES episodes of calibration / 16 steps each, measured
    along HELDOUT_EPISODES held-out episodes of `heldout` steps in all; the report gives the
    error of plain rounding too ("_before")."""
    seqs, alive = rollout_sequences(spec, CALIBRATION_EPISODES, math.ceil(calibration / 16), seed,
                                    env_name, env_kwargs)

    def error_of(qp):
        e = sequence_error(spec, qp, seqs, alive)
        return e["max_error_frac"], e["mean_error_frac"]

    with threadpool_limits(1, "blas"):
        qp, info = finetune_recurrent(spec, seqs, alive, error_of, finetune_steps, good_enough, on_step)
        held = rollout_sequences(spec, HELDOUT_EPISODES, math.ceil(heldout / HELDOUT_EPISODES),
                                 seed + HELDOUT_SEED_OFFSET, env_name, env_kwargs)
        before = sequence_error(spec, calibrate(spec, seqs, headroom=HEADROOM)[0], *held)
        error = sequence_error(spec, qp, *held)
    return qp, dict(error, calibration_obs=int(alive.sum()), rounding="through time" if info["best_step"] else "plain",
                    finetune_steps=info["steps"], finetune_kept_step=info["best_step"],
                    **{f"{k}_before": before[k] for k in ("max_error", "mean_error", "max_error_frac",
                                                           "mean_error_frac")})


def calibration_observations(spec: PolicySpec, n: int, seed: int, env_name=None, env_kwargs=None) -> np.ndarray:
    """What an int8 policy is calibrated and fine-tuned on: `n` rollout observations of 8
    episodes in parallel (as the held-out ones), `n` from the first steps of 64 other
    episodes, and all of these again perturbed by PERTURBATION of each input's spread
    (seeded): a policy is steepest at the decisions of an episode's start and between
    the states its episodes visit, where a few episodes give no observations."""
    obs = np.concatenate([rollout_observations(spec, n, seed, env_name, env_kwargs),
                          rollout_observations(spec, n, seed + STARTS_SEED_OFFSET, env_name, env_kwargs,
                                               envs=STARTS_ENVS)])
    rng = np.random.default_rng(seed)
    spread = obs.std(axis=0)
    return np.concatenate([obs] + [obs + (rng.standard_normal(obs.shape) * (p * spread)).astype(np.float32)
                                   for p in PERTURBATIONS])


def quantize_tuned(spec: PolicySpec, calib: np.ndarray, steps: int = FINETUNE_STEPS,
                   good_enough: float = 0.0, on_step=None) -> tuple:
    """(QuantizedPolicy, info): `spec`'s int8 policy on the calibration observations `calib`,
    its weights rounded with error compensation then fine-tuned up to `steps` steps (fewer once
    the largest error on `calib` is at most `good_enough` of the action range)."""
    # Its matrices are small: BLAS threads only wait on each other, the more on a busy machine.
    with threadpool_limits(1, "blas"):
        weights, biases, row_scales = compensated(spec, calib)
        return finetune(spec, calib, weights, biases, row_scales, steps, good_enough, on_step)


def quantize_measured(spec: PolicySpec, calibration: int = 2000, heldout: int = 2000, seed: int = 0,
                      max_error: float = DEFAULT_MAX_ERROR, env_name=None, env_kwargs=None,
                      finetune_steps: "int | None" = None, on_step=None):
    """(QuantizedPolicy, report): calibrated and fine-tuned (up to `finetune_steps` steps, None:
    FINETUNE_STEPS, or RECURRENT_FINETUNE_STEPS for a policy with GRU layers; fewer
    once the calibration set's largest error is a quarter of `max_error`) on the calibration
    observations of `calibration` rollout steps (calibration_observations), measured on
    `heldout` others; the report gives the error of plain rounding too ("_before": `quantize`
    on the `calibration` rollout observations alone). on_step(step, steps) follows the fine-tune."""
    if not 0 < max_error:
        raise UserError(f"--max-error must be > 0 (a fraction of the action range), got {max_error}")
    if spec.recurrent:
        qp, report = quantize_recurrent(spec, calibration, heldout, seed, env_name, env_kwargs,
                                        RECURRENT_FINETUNE_STEPS if finetune_steps is None else finetune_steps,
                                        max_error / 4, on_step)
        return qp, dict(report, max_error_allowed=max_error)
    calib = calibration_observations(spec, calibration, seed, env_name, env_kwargs)
    # A quarter of the allowed error on the calibration set leaves room for the held-out
    # episodes' states that calibration did not visit.
    qp, info = quantize_tuned(spec, calib, FINETUNE_STEPS if finetune_steps is None else finetune_steps,
                              max_error / 4, on_step)
    held = rollout_observations(spec, heldout, seed + HELDOUT_SEED_OFFSET, env_name, env_kwargs)
    before = action_error(spec, quantize(spec, calib[:calibration]), held)
    report = dict(action_error(spec, qp, held), calibration_obs=int(len(calib)), max_error_allowed=max_error,
                  finetune_steps=info["steps"], finetune_kept_step=info["best_step"], rounding="fitted",
                  **{f"{k}_before": before[k] for k in ("max_error", "mean_error", "max_error_frac",
                                                         "mean_error_frac")})
    return qp, report


def judges_success(spec: PolicySpec, env_name=None, env_kwargs=None) -> bool:
    """Does the policy's env say which episodes succeed (`success()`, e.g. the quadrotor)?"""
    _, factory = env_for(spec, env_name, env_kwargs)
    return callable(getattr(factory, "success", None))


def success_rates(spec: PolicySpec, qp: QuantizedPolicy, episodes: int, seed: int, env_name=None,
                  env_kwargs=None) -> dict:
    """The float and the int8 policy each fly `episodes` episodes of the run's env from the
    same starts (seeded seed, seed + 1, ...): their success rates."""
    _, factory = env_for(spec, env_name, env_kwargs)
    rates = {}
    for name, policy in (("float", spec), ("int8", qp)):
        env = factory(episodes)
        policy.reset()  # a recurrent policy starts each episode from its initial state
        try:
            obs = env.reset([np.random.default_rng(seed + k) for k in range(episodes)])
            _, success = episode_outcomes(env, obs, lambda o, t: policy.forward(o), env.max_episode_steps)
        finally:
            if hasattr(env, "close"):
                env.close()
        rates[f"{name}_success"] = float(success.mean())
    return dict(rates, success_episodes=episodes)


def quantize_checked(spec: PolicySpec, calibration: int = 2000, heldout: int = 2000, seed: int = 0,
                     max_error: "float | None" = None, env_name=None, env_kwargs=None,
                     finetune_steps: "int | None" = None, on_step=None):
    """quantize_measured, then the contract: with `max_error` None on an env that judges
    success, QuantizationError when the int8 policy's success rate over SUCCESS_EPISODES
    held-out episodes is more than MAX_SUCCESS_DROP below the float policy's; otherwise when the
    largest action error exceeds `max_error` (default DEFAULT_MAX_ERROR) of the action range.
    The report's "contract" says which ("success" or "action")."""
    on_success = max_error is None and judges_success(spec, env_name, env_kwargs)
    max_error = DEFAULT_MAX_ERROR if max_error is None else max_error
    if on_success and spec.recurrent and finetune_steps is None:
        # The fine-tune through time lowers the largest action error, which is not this contract:
        # plainly rounded, the distilled quadrotor students kept their success rates.
        finetune_steps = 0
    qp, report = quantize_measured(spec, calibration, heldout, seed, max_error, env_name, env_kwargs,
                                   finetune_steps, on_step)
    if on_success:
        report.update(success_rates(spec, qp, SUCCESS_EPISODES, seed + SUCCESS_SEED_OFFSET, env_name, env_kwargs),
                      contract="success", max_success_drop=MAX_SUCCESS_DROP)
        drop = report["float_success"] - report["int8_success"]
        if drop > MAX_SUCCESS_DROP + 1e-9:
            raise QuantizationError(
                f"int8 policy refused: it succeeds in {100 * report['int8_success']:.0f}% of {SUCCESS_EPISODES} "
                f"held-out episodes, the float policy in {100 * report['float_success']:.0f}% (at most "
                f"{100 * MAX_SUCCESS_DROP:.0f} points less allowed; max action error "
                f"{100 * report['max_error_frac']:.2f}% of the action range)")
        return qp, report
    report["contract"] = "action"
    if report["max_error_frac"] > max_error:
        raise QuantizationError(
            f"int8 policy refused: max action error {report['max_error']:.4g} "
            f"({100 * report['max_error_frac']:.2f}% of the action range, dimension {report['worst_dim']}) "
            f"exceeds --max-error {100 * max_error:.2f}% after {_fitting(report)}; "
            f"mean {report['mean_error']:.4g} ({100 * report['mean_error_frac']:.2f}%) on "
            f"{report['heldout_obs']} held-out observations")
    return qp, report


def _fitting(report: dict) -> str:
    if report["rounding"] == "plain":
        return "plain rounding"
    if report["rounding"] == "through time":
        return (f"{report['finetune_steps']} fine-tuning steps through time "
                f"(plain rounding: {100 * report['max_error_frac_before']:.2f}%)")
    return (f"error-compensated rounding and {report['finetune_steps']} fine-tuning steps "
            f"(plain rounding: {100 * report['max_error_frac_before']:.2f}%)")

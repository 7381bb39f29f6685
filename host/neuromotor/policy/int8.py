"""Exporting a run's policy as int8: calibration on the run's own env, then the action
error of the int8 policy against the float one on held-out observations (different
episodes), refused when it exceeds a fraction of the action range."""

import numpy as np

from neuromotor.errors import UserError
from neuromotor.policy.quantize import QuantizedPolicy, quantize
from neuromotor.policy.spec import PolicySpec, env_for

DEFAULT_MAX_ERROR = 0.02   # of each dimension's action range
HELDOUT_SEED_OFFSET = 1_000_003  # held-out episodes never share a seed with calibration ones


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
                alive &= ~np.asarray(terminated, bool)
                limit = getattr(env, "truncated", None)
                if limit is not None:
                    alive &= ~np.asarray(limit, bool)
                if not alive.any():
                    break
    finally:
        if hasattr(env, "close"):
            env.close()
    return np.concatenate(out)[:n].astype(np.float32)


def action_error(spec: PolicySpec, qp: QuantizedPolicy, obs: np.ndarray) -> dict:
    """Max and mean |int8 action - float action| on `obs`, in env units and as a fraction
    of each dimension's action range (high - low)."""
    a, b = spec.forward(obs).astype(np.float64), qp.forward(obs).astype(np.float64)
    err = np.abs(a - b)
    span = (spec.action_high - spec.action_low).astype(np.float64)
    frac = err / np.where(span > 0, span, 1.0)
    return {"max_error": float(err.max()), "mean_error": float(err.mean()),
            "max_error_frac": float(frac.max()), "mean_error_frac": float(frac.mean()),
            "worst_dim": int(np.unravel_index(frac.argmax(), frac.shape)[1]), "heldout_obs": int(len(obs))}


def quantize_checked(spec: PolicySpec, calibration: int = 2000, heldout: int = 2000, seed: int = 0,
                     max_error: float = DEFAULT_MAX_ERROR, env_name=None, env_kwargs=None):
    """(QuantizedPolicy, report): calibrated on `calibration` rollout observations, checked on
    `heldout` others. QuantizationError (with the numbers) when the largest error exceeds
    `max_error` of the action range."""
    if not 0 < max_error:
        raise UserError(f"--max-error must be > 0 (a fraction of the action range), got {max_error}")
    calib = rollout_observations(spec, calibration, seed, env_name, env_kwargs)
    qp = quantize(spec, calib)
    held = rollout_observations(spec, heldout, seed + HELDOUT_SEED_OFFSET, env_name, env_kwargs)
    report = dict(action_error(spec, qp, held), calibration_obs=int(len(calib)), max_error_allowed=max_error)
    if report["max_error_frac"] > max_error:
        raise QuantizationError(
            f"int8 policy refused: max action error {report['max_error']:.4g} "
            f"({100 * report['max_error_frac']:.2f}% of the action range, dimension {report['worst_dim']}) "
            f"exceeds --max-error {100 * max_error:.2f}%; mean {report['mean_error']:.4g} "
            f"({100 * report['mean_error_frac']:.2f}%) on {report['heldout_obs']} held-out observations")
    return qp, report

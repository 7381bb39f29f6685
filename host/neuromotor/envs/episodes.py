"""Running whole episodes of a vectorised env (see neuromotor.envs) under a policy: what
training's evaluations, the int8 export's success check and hardware-in-the-loop runs share."""

import numpy as np


def episode_returns(env, obs, act, steps: int) -> np.ndarray:
    """Each env's summed reward from `obs` on, acting `act(obs, t)`, until it terminates, the
    env's own time limit truncates it (a gymnasium env's `truncated`), or `steps` pass."""
    return episode_outcomes(env, obs, act, steps)[0]


def episode_outcomes(env, obs, act, steps: int):
    """(returns, success) of episode_returns' episodes. success: per env, for an env with a
    success criterion (`env.success()`, e.g. the quadrotor's hover), whether its episode ended
    without terminating in a state that meets it; None for other envs."""
    returns = np.zeros(len(obs))
    alive = np.ones(len(obs), bool)
    judge = getattr(env, "success", None)
    success = np.zeros(len(obs), bool) if callable(judge) else None
    for t in range(steps):
        # an ended episode's env steps on, and its state may diverge (a crashed drone spins up to
        # NaN): the policy sees zeros there, so its actions stay finite
        obs, reward, terminated = env.step(act(np.where(alive.reshape(-1, *[1] * (obs.ndim - 1)), obs, 0), t))
        returns += np.where(alive, reward, 0)
        alive &= ~terminated
        own_limit = getattr(env, "truncated", None)
        ends = (alive & own_limit if own_limit is not None else np.zeros_like(alive)) | (alive if t == steps - 1 else False)
        if success is not None and ends.any():
            success[ends] = np.asarray(judge(), bool)[ends]
        alive &= ~ends
        if not alive.any():
            break
    return returns, success

"""Deterministic evaluation (no exploration noise), every agent's episodes in one vectorised env.

The initial states come from a Generator seeded by (agent seed, training step),
so evaluating never touches the training RNG streams and a resumed run
evaluates exactly as an uninterrupted one.

At most EVAL_MAX_ENVS envs step at once: many episodes are run in chunks of
episodes per agent. Each agent's Generator is drawn from in episode order
across chunks, so a chunked evaluation starts from the same states.
"""

import numpy as np

from neuromotor.envs.episodes import episode_outcomes
from neuromotor.errors import UserError

EVAL_STREAM = 0xE7A1
EVAL_MAX_ENVS = 1024


class Evaluator:
    def __init__(self, env_factory, seeds, episodes: int):
        self.seeds, self.episodes = list(seeds), episodes
        self.chunk = max(1, min(episodes, EVAL_MAX_ENVS // len(self.seeds)))  # episodes per agent at once
        self._factory = env_factory
        self._envs = {}
        self.success = None  # (P, episodes) bool of the last run, for envs with a success criterion

    def _env(self, per_agent: int):
        if per_agent not in self._envs:
            self._envs[per_agent] = self._factory(len(self.seeds) * per_agent)
        return self._envs[per_agent]

    def run(self, algo, step: int, record_env: int = None):
        """Returns (P, episodes) float64 returns; with record_env (agent * episodes + episode),
        also the state trajectory of that episode. Sets self.success."""
        P, E = len(self.seeds), self.episodes
        rngs = [np.random.default_rng([seed, step, EVAL_STREAM]) for seed in self.seeds]
        returns = np.zeros((P, E))
        success = np.zeros((P, E), bool)
        states = None
        for start in range(0, E, self.chunk):
            n = min(self.chunk, E - start)
            record = None
            if record_env is not None and start <= record_env % E < start + n:
                record = record_env // E * n + record_env % E - start
            chunk_returns, chunk_success, chunk_states = self._run_chunk(algo, rngs, n, record)
            returns[:, start:start + n] = chunk_returns
            if chunk_success is None:
                success = None
            else:
                success[:, start:start + n] = chunk_success
            if record is not None:
                states = chunk_states
        self.success = success
        return (returns, states) if record_env is not None else returns

    def run_finite(self, algo, step: int) -> np.ndarray:
        """`run`'s returns, refused (UserError) where the env produced NaN or inf rewards: training
        records only finite evaluations."""
        returns = self.run(algo, step)
        if not np.isfinite(returns).all():
            raise UserError(f"evaluation at step {step} returned NaN or inf episode returns; the environment "
                            "produced non-finite rewards")
        return returns

    def _run_chunk(self, algo, rngs, n: int, record_env):
        P, env = len(self.seeds), self._env(n)
        obs = env.reset([rng for rng in rngs for _ in range(n)])
        states = []

        def act(obs, t):
            if record_env is not None:
                states.append(env.get_state()[record_env])
            return algo.act(obs.reshape(P, n, -1)).reshape(P * n, -1)

        begin = getattr(algo, "begin_episodes", None)
        if begin:  # a recurrent actor starts every env's episode from its initial state
            begin(n)
        returns, success = episode_outcomes(env, obs, act, env.max_episode_steps)
        return (returns.reshape(P, n), None if success is None else success.reshape(P, n),
                np.array(states) if record_env is not None else None)


def evaluate_spec(spec, env_factory, episodes: int, seed: int):
    """(returns (episodes,), success (episodes,) bool or None) of a deployable policy (a
    PolicySpec, e.g. a policy file's) acting deterministically, EVAL_MAX_ENVS episodes at once,
    their initial states drawn in episode order from one Generator seeded by `seed`. A recurrent
    policy keeps one state per env, each starting from the policy's initial state as its
    episode starts."""
    rng = np.random.default_rng([seed, EVAL_STREAM])
    returns, success = [], []
    for start in range(0, episodes, EVAL_MAX_ENVS):
        n = min(EVAL_MAX_ENVS, episodes - start)
        env = env_factory(n)
        try:
            obs = env.reset([rng] * n)
            state = np.tile(spec.initial_state(), (n, 1))

            def act(obs, t):
                nonlocal state
                action, state = spec.step(obs, state)
                return action

            chunk_returns, chunk_success = episode_outcomes(env, obs, act, env.max_episode_steps)
        finally:
            close = getattr(env, "close", None)
            if close:
                close()
        returns.append(chunk_returns)
        success = None if chunk_success is None else success + [chunk_success]
    return np.concatenate(returns), None if success is None else np.concatenate(success)

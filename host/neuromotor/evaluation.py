"""Deterministic evaluation (no exploration noise), every agent and episode in one vectorised env.

The initial states come from a Generator seeded by (agent seed, training step),
so evaluating never touches the training RNG streams and a resumed run
evaluates exactly as an uninterrupted one.
"""

import numpy as np

EVAL_STREAM = 0xE7A1


class Evaluator:
    def __init__(self, env_factory, seeds, episodes: int):
        self.seeds, self.episodes = list(seeds), episodes
        self.env = env_factory(len(self.seeds) * episodes)

    def run(self, algo, step: int, record_env: int = None):
        """Returns (P, episodes) float64 returns; with record_env, also the state trajectory of that env."""
        P, E, env = len(self.seeds), self.episodes, self.env
        rngs = []
        for seed in self.seeds:
            rng = np.random.default_rng([seed, step, EVAL_STREAM])
            rngs += [rng] * E
        obs = env.reset(rngs)
        returns = np.zeros(P * E)
        alive = np.ones(P * E, bool)
        states = []
        for _ in range(env.max_episode_steps):
            if record_env is not None:
                states.append(env.get_state()[record_env])
            action = algo.act(obs.reshape(P, E, -1)).reshape(P * E, -1)
            obs, reward, terminated = env.step(action)
            returns += np.where(alive, reward, 0)
            alive &= ~terminated
            if not alive.any():
                break
        returns = returns.reshape(P, E)
        return (returns, np.array(states)) if record_env is not None else returns

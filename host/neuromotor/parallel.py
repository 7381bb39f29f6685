"""A population split into shards that step in parallel threads.

Agents are independent, so a population of P agents can be cut into S
contiguous shards, each a full algorithm instance of its own, stepped in lockstep
by S threads (NumPy releases the GIL inside matmuls and ufunc loops). Agent k
computes exactly the same numbers in any shard layout. With one shard this is a
transparent wrapper. The shard count is part of the run config, because the
checkpoint holds one state per shard.
"""

from concurrent.futures import ThreadPoolExecutor

import numpy as np


class Sharded:
    def __init__(self, algo_cls, cfg, env_factory, seeds, shards: int):
        seeds = list(seeds)
        shards = max(1, min(shards, len(seeds)))
        bounds = np.linspace(0, len(seeds), shards + 1).round().astype(int)
        self.shards = [algo_cls(cfg, env_factory, seeds[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
        self.first_agent = list(bounds[:-1])
        self.seeds = seeds
        self._pool = ThreadPoolExecutor(shards) if shards > 1 else None

    @property
    def steps(self) -> int:
        return self.shards[0].steps

    def advance(self) -> None:
        if self._pool is None:
            self.shards[0].advance()
        else:
            for f in [self._pool.submit(s.advance) for s in self.shards]:
                f.result()

    def act(self, obs: np.ndarray) -> np.ndarray:
        return np.concatenate([s.act(obs[a:a + len(s.seeds)]) for s, a in zip(self.shards, self.first_agent)])

    def pop_episode_returns(self) -> list:
        return [r for s in self.shards for r in s.pop_episode_returns()]

    def policy_spec(self, agent: int):
        i = int(np.searchsorted(self.first_agent, agent, side="right")) - 1
        return self.shards[i].policy_spec(agent - self.first_agent[i])

    def state_dict(self) -> dict:
        if len(self.shards) == 1:
            return self.shards[0].state_dict()
        return {f"shard{i}.{k}": v for i, s in enumerate(self.shards) for k, v in s.state_dict().items()}

    def load_state_dict(self, arrays: dict) -> None:
        if len(self.shards) == 1:
            self.shards[0].load_state_dict(arrays)
            return
        for i, s in enumerate(self.shards):
            prefix = f"shard{i}."
            s.load_state_dict({k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)})

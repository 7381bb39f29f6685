"""Auto-reset over a registry env: where episodes end, restart and are counted.

A registry env (see neuromotor.envs) steps and never resets. Training wants
the opposite: every env always running, episodes cut at `max_steps` (default:
the env's `max_episode_steps`), and their returns reported.
`AutoReset(env, rngs, envs_per_agent, max_steps, start_draws)` does that,
with gymnasium's SAME_STEP auto-reset semantics (start_draws > 1: each episode
starts from the hardest of that many initial states, on an env that ranks them,
`env.ranks_starts`):

    obs, reward, terminated, truncated, final_obs = autoreset.step(actions)

  terminated[i]  env i's episode ended in a terminal state at this step
  truncated[i]   it reached max_steps without terminating (a time-out,
                 not a failure: bootstrap from final_obs[i])
  final_obs      the observation each env reached at this step (for ended
                 episodes their last observation; what a replay buffer stores)
  obs            what to act on next: final_obs, except that the envs whose
                 episode ended have already been reset (rngs[i] draws env i's
                 new initial state), so obs[i] starts its next episode

Returns of finished episodes are collected per agent (envs i*envs_per_agent ..
(i+1)*envs_per_agent - 1 belong to agent i) until `pop_episode_returns()`.
`ep_return` and `ep_len` (per env) are the running episodes, part of an
algorithm's checkpoint. `restore(env_state, obs)` puts them back on resume: an
env that can snapshot itself (`env.restorable`, the built-ins) continues its
episodes exactly; any other (a gymnasium env) restarts every episode in flight,
from generators derived from the agents' restored RNG states without drawing
from them, so the rest of each agent's stream is the uninterrupted run's.
"""

import numpy as np

from neuromotor.rng import rng_state_array


class AutoReset:
    def __init__(self, env, rngs, envs_per_agent: int = 1, max_steps: int = None, start_draws: int = 1):
        if len(rngs) != env.num_envs or env.num_envs % envs_per_agent:
            raise ValueError(f"{env.num_envs} envs need one Generator each and whole agents of {envs_per_agent}")
        if start_draws > 1 and not getattr(env, "ranks_starts", False):
            raise ValueError(f"start_draws {start_draws} needs an env that ranks its initial states")
        self.env, self.rngs, self.envs_per_agent = env, rngs, envs_per_agent
        self._draws = {"draws": start_draws} if start_draws > 1 else {}  # other envs' reset takes none
        self.max_steps = max_steps or env.max_episode_steps
        self.ep_return = np.zeros(env.num_envs)
        self.ep_len = np.zeros(env.num_envs, np.int64)
        self._finished = [[] for _ in range(env.num_envs // envs_per_agent)]

    def reset(self) -> np.ndarray:
        """Start a first episode in every env."""
        self.ep_return[...] = 0
        self.ep_len[...] = 0
        return self.env.reset(self.rngs, **self._draws)

    def step(self, actions):
        final_obs, reward, terminated = self.env.step(actions)
        self.ep_return += reward
        self.ep_len += 1
        truncated = self.ep_len >= self.max_steps
        own_limit = getattr(self.env, "truncated", None)  # a gymnasium env's own time limit
        if own_limit is not None:
            truncated |= own_limit
        np.greater(truncated, terminated, out=truncated)  # and not terminated
        done = terminated | truncated
        # (count_nonzero: a tenth of the cost of .any() at these sizes)
        obs = self.finish(done) if np.count_nonzero(done) else final_obs
        return obs, reward, terminated, truncated, final_obs

    def finish(self, done) -> np.ndarray:
        """The episodes of the envs in `done` ended at this step (for one who steps the env and
        counts ep_return and ep_len itself): record them, restart those envs; the observations
        to act on next."""
        for i in np.flatnonzero(done):
            self._finished[i // self.envs_per_agent].append(float(self.ep_return[i]))
        self.ep_return[done] = 0
        self.ep_len[done] = 0
        return self.env.reset(self.rngs, mask=done, **self._draws)

    def restore(self, env_state, obs) -> np.ndarray:
        """After a checkpoint's ep_return/ep_len and RNG states are back: the observations
        to act on next (`obs` from the checkpoint, or the restarted episodes' first ones)."""
        if getattr(self.env, "restorable", True):
            self.env.set_state(env_state)
            return obs
        self.ep_return[...] = 0
        self.ep_len[...] = 0
        fresh = {id(r): np.random.default_rng(rng_state_array(r)) for r in self.rngs}
        return self.env.reset([fresh[id(r)] for r in self.rngs])

    def pop_episode_returns(self) -> list:
        """Per agent, the returns of the episodes finished since the last call."""
        out, self._finished = self._finished, [[] for _ in self._finished]
        return out

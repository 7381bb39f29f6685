"""Recurrent TD3: TD3 (Fujimoto et al. 2018) with a GRU actor and GRU critics, for partially
observed tasks, in NumPy.

The actor reads observations, pi(o_1..o_t) = tanh(W2 GRU(relu(W1 o)) + b2), exactly the
layers a board runs (policy file version 4). Each critic reads the history of observations and
actions, Q(o_1, a_1, ..., o_t, a_t), so its state holds what the agent knows; its head is a
dense relu layer and a linear output.

Replay keeps transitions in order with a flag where each episode starts; a minibatch is
`batch_size` windows of `sequence_length` consecutive steps (R2D2's sequence replay, Kapturowski
et al. 2019). Every window starts from the states the online networks had when that step was
taken (R2D2's stored state; with stored_state=false, from the initial states), reset where an
episode starts inside it; the first `burn_in` steps only warm the states up and carry no loss.
The targets of every step of a window come from one more GRU step continued from the state
after that step (with its next observation), so a window needs one pass per network, not one
per step:

    a'_t = clip(pi'(o_1..o_t, o'_t) + clip(eps, -c, c), -1, 1)
    y_t  = r_t + gamma (1 - d_t) min_i Q'_i(o_1, a_1, ..., o_t, a_t, o'_t, a'_t)
    critic loss: mean over windows and steps past burn-in of (Q_i(o_1, a_1, ..., o_t, a_t) - y_t)^2
    actor loss:  -mean Q_1(o_1, a_1, ..., o_{t-1}, a_{t-1}, o_t, pi(o_1..o_t))

The actor's loss continues critic 1 from the state it had before step t (from the critic
update's own pass). The policy a run deploys and evaluates is the target actor, the Polyak
average of the online one: on the pendulum without its velocity it solved 9 seeds of 10 where
the online actor's last iterate solved 8 (docs/recurrent.md). Every array carries the population axis P (one agent per seed), critics
(P, 2); agent k's numbers come from its own Generator only, so it trains the same alone or
beside others.
"""

from dataclasses import dataclass

import numpy as np

from neuromotor import rules
from neuromotor.algos import named_config
from neuromotor.algos.footprint import F32_BYTES
from neuromotor.envs.autoreset import AutoReset
from neuromotor.errors import UserError
from neuromotor.limits import MAX_COUNT, MAX_STEPS
from neuromotor.nn import Adam, polyak
from neuromotor.nn.gru import time_flat
from neuromotor.nn.recurrent import RecurrentNet
from neuromotor.policy.spec import PolicySpec
from neuromotor.rng import rng_state_array, set_rng_state

F32 = np.float32


@dataclass
class SequenceConfig:
    """The networks and the sequence replay, shared by the recurrent algorithms (sac_gru.py too)."""
    dense: int = 64                 # the relu layer before each GRU
    hidden: int = 32                # GRU state size, actor and critics
    critic_head: int = 64           # the critics' relu layer after the GRU
    batch_size: int = 16            # windows per minibatch
    sequence_length: int = 10       # steps per window, burn-in included
    burn_in: int = 2                # steps that only warm the states up
    stored_state: bool = True       # windows start from the states the networks had when acting
    buffer_size: int = 30_000
    learning_starts: int = 1000     # uniform random actions, no updates, before this step

    RULES = {
        "dense": rules.integer(1, 4096),
        "hidden": rules.integer(1, 4096),
        "critic_head": rules.integer(1, 4096),
        "batch_size": rules.integer(1, MAX_COUNT),
        "sequence_length": rules.integer(2, 4096),
        "burn_in": rules.integer(0, 4096),
        "stored_state": rules.BOOL,
        "buffer_size": rules.integer(2, MAX_COUNT),
        "learning_starts": rules.integer(0, MAX_STEPS),
    }

    def check(self):
        if self.burn_in >= self.sequence_length:
            raise UserError(f"burn_in ({self.burn_in}) must be less than sequence_length ({self.sequence_length}): "
                            "the steps after burn-in carry the loss")
        if self.buffer_size < self.sequence_length:
            raise UserError(f"buffer_size ({self.buffer_size}) must hold a window of sequence_length "
                            f"({self.sequence_length}) steps")


@dataclass
class Config(SequenceConfig):
    exploration_noise: float = 0.1
    policy_noise: float = 0.2       # target policy smoothing
    noise_clip: float = 0.5
    gamma: float = 0.99
    tau: float = 0.005
    actor_lr: float = 1e-3
    critic_lr: float = 1e-3
    policy_delay: int = 2           # actor and targets updated every 2nd critic update
    update_every: int = 1           # one update per this many env steps
    episode_steps: int = 0          # training episodes time out after this many steps (0: the env's limit)

    RULES = {
        **SequenceConfig.RULES,
        "exploration_noise": rules.number(0),
        "policy_noise": rules.number(0),
        "noise_clip": rules.number(0),
        "gamma": rules.number(0, 1),
        "tau": rules.number(0, 1, lo_open=True),
        "actor_lr": rules.RATE,
        "critic_lr": rules.RATE,
        "policy_delay": rules.integer(1, MAX_COUNT),
        "update_every": rules.integer(1, MAX_COUNT),
        "episode_steps": rules.integer(0, MAX_STEPS),
    }


CONFIGS = {"pendulum": (Config(), {"steps": 30_000})}


class SequenceReplay:
    """Every agent's transitions in the order they happened, (P, capacity, ...) rings, with
    `first` marking the steps an episode starts at and the actor's and critics' states each
    step started from when it was taken."""

    STATES = ("actor_state", "critic_state")  # read at a window's first step only

    def __init__(self, pop: int, capacity: int, obs_dim: int, act_dim: int, hidden: int):
        self.capacity, self.pos, self.size = capacity, 0, 0
        self.obs = np.zeros((pop, capacity, obs_dim), F32)
        self.act = np.zeros((pop, capacity, act_dim), F32)
        self.reward = np.zeros((pop, capacity), F32)
        self.not_done = np.zeros((pop, capacity), F32)
        self.next_obs = np.zeros((pop, capacity, obs_dim), F32)
        self.first = np.zeros((pop, capacity), bool)
        self.actor_state = np.zeros((pop, capacity, hidden), F32)
        self.critic_state = np.zeros((pop, capacity, 2, hidden), F32)

    def arrays(self) -> dict:
        return {"obs": self.obs, "act": self.act, "reward": self.reward, "not_done": self.not_done,
                "next_obs": self.next_obs, "first": self.first, "actor_state": self.actor_state,
                "critic_state": self.critic_state}

    def store(self, obs, act, reward, terminated, next_obs, first, actor_state, critic_state) -> None:
        i = self.pos
        self.obs[:, i], self.act[:, i], self.reward[:, i] = obs, act, reward
        self.not_done[:, i], self.next_obs[:, i], self.first[:, i] = ~terminated, next_obs, first
        self.actor_state[:, i], self.critic_state[:, i] = actor_state, critic_state
        self.pos = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def windows(self, starts: np.ndarray, length: int) -> dict:
        """The windows beginning `starts` (P, B) steps after each ring's oldest step: every field
        as (length, P, B, ...), time first as the networks take it; the states at the first step,
        actor (P, B, H) and critics (P, 2, B, H)."""
        oldest = self.pos if self.size == self.capacity else 0
        P = starts.shape[0]
        rows = (oldest + starts[..., None] + np.arange(length)) % self.capacity       # (P, B, L)
        flat = rows + (np.arange(P) * self.capacity)[:, None, None]
        out = {}
        for name, a in self.arrays().items():
            index = flat[..., 0] if name in self.STATES else flat
            picked = a.reshape(P * self.capacity, *a.shape[2:])[index]               # (P, B, L, ...)
            out[name] = picked if name in self.STATES else np.moveaxis(picked, 2, 0)
        out["critic_state"] = np.swapaxes(out["critic_state"], 1, 2)
        return out


class RecurrentTD3:
    """Recurrent TD3 for a population of agents: ``RecurrentTD3(Config(...), env_factory, seeds)``
    (the interface of neuromotor.algos)."""

    Config = Config
    NAME = "td3-gru"  # in the policies it exports

    @staticmethod
    def defaults(env_name: str, preset: str | None = None):
        return named_config(CONFIGS, "td3-gru", env_name, preset, mujoco="pendulum")

    def __init__(self, cfg: Config, env_factory, seeds):
        self.cfg, self.seeds = cfg, list(seeds)
        self.P = P = len(self.seeds)
        self.env = env = env_factory(P)
        self.obs_dim, self.act_dim = o, a = env.obs_dim, env.act_dim
        self.act_scale = ((env.action_high - env.action_low) / 2).astype(F32)
        self.act_offset = ((env.action_high + env.action_low) / 2).astype(F32)
        self.rngs = [np.random.default_rng(s) for s in self.seeds]
        # each agent's actor, then its two critics, from its own stream
        self.actor = self.actor_net(cfg, o, a, P, lambda m: self.rngs[m[0]])
        self.critic = RecurrentNet(o + a, cfg.dense, cfg.hidden, [(cfg.critic_head, "relu"), (1, "identity")],
                                   lambda m: self.rngs[m[0]], pop=(P, 2))
        self.actor_target, self.critic_target = self.actor.params.copy(), self.critic.params.copy()
        self.actor_target_p = self.actor.views(self.actor_target)
        self.critic_target_p = self.critic.views(self.critic_target)
        self.critic1_p = {name: view[:, 0] for name, view in self.critic.p.items()}
        self.actor_opt = Adam(self.actor.params.size, lr=cfg.actor_lr)
        self.critic_opt = Adam(self.critic.params.size, lr=cfg.critic_lr)
        self._tmp_actor, self._tmp_critic = np.empty_like(self.actor_target), np.empty_like(self.critic_target)
        self.replay = SequenceReplay(P, cfg.buffer_size, o, a, cfg.hidden)

        self.steps = 0
        self.episodes = AutoReset(env, self.rngs, max_steps=cfg.episode_steps or env.max_episode_steps)
        self.obs = self.episodes.reset()
        self.first = np.ones(P, bool)                 # self.obs is an episode's first observation
        self.h = self.actor.initial_state(1)          # (P, 1, H): the acting state
        self.hc = self.critic.initial_state(1)        # (P, 2, 1, H): the critics' along the same steps
        self._eval_h = None
        self.losses = {}

    @staticmethod
    def actor_net(cfg: Config, obs_dim: int, act_dim: int, agents: int, rng_of=None) -> RecurrentNet:
        """pi in (-1, 1): Dense relu -> GRU -> Dense tanh, one per agent."""
        return RecurrentNet(obs_dim, cfg.dense, cfg.hidden, [(act_dim, "tanh")], rng_of, pop=(agents,))

    # ----- acting -----
    def _actor_step(self, obs: np.ndarray, h: np.ndarray, p: dict = None):
        y, h, _ = self.actor.forward(obs.astype(F32)[None], h, None, p)
        return y[0], h

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Deterministic actions in env units of obs (P, E, obs_dim), each env carrying its state
        from call to call since begin_episodes()."""
        if self._eval_h is None or self._eval_h.shape[1] != obs.shape[1]:
            self.begin_episodes(obs.shape[1])
        y, self._eval_h = self._actor_step(obs, self._eval_h, self.actor_target_p)
        return self._deterministic(y) * self.act_scale + self.act_offset

    def _deterministic(self, out: np.ndarray) -> np.ndarray:
        """The policy's action in (-1, 1) of the actor's output."""
        return out

    def _explore(self, out: np.ndarray, noise: np.ndarray) -> np.ndarray:
        """The action taken in training of the actor's output (P, act_dim), noise (P, act_dim) N(0, 1)."""
        return np.clip(out + noise * F32(self.cfg.exploration_noise), -1, 1)

    def begin_episodes(self, envs: int = 1) -> None:
        """Every env that act() steps starts an episode from the actor's initial state."""
        self._eval_h = np.repeat(self.actor_target_p["h0"][:, None], envs, axis=1)

    def advance(self):
        """One env step of every agent, then (from learning_starts on) one update."""
        cfg, P = self.cfg, self.P
        self.h = np.where(self.first[:, None, None], self.actor.p["h0"][:, None], self.h)
        self.hc = np.where(self.first[:, None, None, None], self.critic.p["h0"][:, :, None], self.hc)
        states = self.h[:, 0], self.hc[:, :, 0]
        out, self.h = self._actor_step(self.obs[:, None], self.h)
        noise = np.stack([r.standard_normal(self.act_dim) for r in self.rngs]).astype(F32)
        uniform = np.stack([r.uniform(-1, 1, self.act_dim) for r in self.rngs]).astype(F32)
        if self.steps < cfg.learning_starts:
            action = uniform
        else:
            action = self._explore(out[:, 0], noise)
        if cfg.stored_state:  # the critics' state follows the steps taken, for windows to start from
            _, self.hc, _ = self.critic.forward(np.concatenate([self.obs, action], -1)[None, :, None, None],
                                                self.hc)
        obs, reward, terminated, truncated, next_obs = self.episodes.step(action * self.act_scale + self.act_offset)
        self.replay.store(self.obs, action, reward, terminated, next_obs, self.first, *states)
        self.obs, self.first = obs, terminated | truncated
        self.steps += 1
        if self.steps >= max(cfg.learning_starts, cfg.sequence_length) and self.steps % cfg.update_every == 0:
            self._update()

    # ----- the update -----
    def _sample_windows(self):
        """A minibatch from every agent's replay: (the windows (L, P, B, ...) as SequenceReplay.windows,
        their critics' inputs [o, a] (L, P, 1, B, o + a), the next observations past burn-in
        (1, P, T B, o), the actor's and the critics' states to start from)."""
        cfg, K = self.cfg, self.cfg.burn_in
        starts = np.stack([r.integers(0, self.replay.size - cfg.sequence_length + 1, cfg.batch_size)
                           for r in self.rngs])
        w = self.replay.windows(starts, cfg.sequence_length)
        x = np.concatenate([w["obs"], w["act"]], -1)[:, :, None]
        next_obs = time_flat(w["next_obs"][K:])[None]
        if cfg.stored_state:  # every network starts where the online ones were when acting
            return w, x, next_obs, w["actor_state"], w["critic_state"]
        w["first"][0] = True  # or from its initial state
        return w, x, next_obs, None, None

    def _min_target_q(self, w, x, h_critic, next_obs, next_action) -> np.ndarray:
        """min_i Q'_i (P, T B, 1) of every step past burn-in continued one step with (o'_t, a'_t),
        each target critic from its state after step t of the windows x."""
        _, _, cache = self.critic.forward(x, h_critic, w["first"][:, :, None], self.critic_target_p)
        x_next = np.concatenate([next_obs, next_action], -1)[:, :, None]
        qf_next_target, _, _ = self.critic.forward(x_next, self.critic.states_after(cache, self.cfg.burn_in), None,
                                                   self.critic_target_p)
        return qf_next_target[0].min(axis=1)

    def _critic_update(self, w, x, h_critic, next_value):
        """Both critics regress on y = r + gamma (1 - d) next_value (P, T B, 1) over the steps past
        burn-in; returns the online critics' pass, for the actor's loss."""
        cfg, P, B, K = self.cfg, self.P, self.cfg.batch_size, self.cfg.burn_in
        T = cfg.sequence_length - K
        next_q_value = w["reward"][K:] + F32(cfg.gamma) * w["not_done"][K:] * np.moveaxis(next_value.reshape(P, T, B),
                                                                                           1, 0)
        qf_a_values, _, critic_cache = self.critic.forward(x, h_critic, w["first"][:, :, None])  # (L, P, 2, B, 1)
        error = qf_a_values[K:] - next_q_value[:, :, None, :, None]
        d_q = np.zeros_like(qf_a_values)
        d_q[K:] = error * F32(2 / (B * T))
        self.critic_opt.step(self.critic.params.reshape(-1), self.critic.backward(critic_cache, d_q).reshape(-1))
        self.losses["loss/critic"] = np.square(error).sum(axis=(0, 2, 3, 4), dtype=np.float64) / (B * T)
        return critic_cache

    def _update(self):
        cfg, P, B, L, K = self.cfg, self.P, self.cfg.batch_size, self.cfg.sequence_length, self.cfg.burn_in
        T = L - K                                                               # steps with a loss
        w, x, next_obs, h_actor, h_critic = self._sample_windows()
        target_noise = np.stack([r.standard_normal((T * B, self.act_dim)) for r in self.rngs]).astype(F32)
        obs, resets = w["obs"], w["first"]                                     # (L, P, B, ...)

        # Target policy smoothing, continuing the target actor one step from each step's state
        _, _, cache = self.actor.forward(obs, h_actor, resets, self.actor_target_p)
        next_action, _, _ = self.actor.forward(next_obs, self.actor.states_after(cache, K), None, self.actor_target_p)
        noise = np.clip(target_noise * F32(cfg.policy_noise), -cfg.noise_clip, cfg.noise_clip)
        next_action = np.clip(next_action + noise, -1, 1)

        # Clipped double Q-learning: y = r + gamma (1 - d) min(Q1', Q2'); both critics regress on it
        critic_cache = self._critic_update(w, x, h_critic, self._min_target_q(w, x, h_critic, next_obs, next_action))

        if self.steps // cfg.update_every % cfg.policy_delay:
            return
        # Deterministic policy gradient through critic 1, continued from its state before step t
        pi, _, actor_cache = self.actor.forward(obs, h_actor, resets)
        x_pi = np.concatenate([time_flat(obs[K:]), time_flat(pi[K:])], -1)[None]  # (1, P, T B, o + a)
        h_before = self.critic.states_before(critic_cache, K)[:, 0]             # critic 1's (P, T B, H)
        qf1_pi, _, cache = self.critic.forward(x_pi, h_before, None, self.critic1_p)
        d_x = self.critic.input_gradient(cache, np.full_like(qf1_pi, -1 / (B * T)))
        d_pi = np.zeros_like(pi)
        d_pi[K:] = np.moveaxis(d_x[0, ..., self.obs_dim:].reshape(P, T, B, self.act_dim), 1, 0)
        self.actor_opt.step(self.actor.params.reshape(-1), self.actor.backward(actor_cache, d_pi).reshape(-1))
        self.losses["loss/actor"] = -qf1_pi.mean(axis=(0, 2, 3), dtype=np.float64)
        polyak(self.actor_target, self.actor.params, cfg.tau, self._tmp_actor)
        polyak(self.critic_target, self.critic.params, cfg.tau, self._tmp_critic)

    # ----- reporting, export, checkpoints -----
    def pop_episode_returns(self):
        return self.episodes.pop_episode_returns()

    def scalars(self) -> dict:
        cfg, P = self.cfg, self.P
        return {"lr/actor": np.full(P, cfg.actor_lr), "lr/critic": np.full(P, cfg.critic_lr), **self.losses}

    @staticmethod
    def memory_parts(cfg: Config, obs_dim: int, act_dim: int, agents: int) -> tuple:
        """({part: bytes} of the arrays a population allocates, training envs): the replay, the
        networks (parameters, target, two Adam moments, gradient, scratch) and one update's
        activations (about ten arrays of each network's widest layer per window step)."""
        o, a, d, h = obs_dim, act_dim, cfg.dense, cfg.hidden
        actor = d * (o + 1) + 3 * h * (d + h + 2) + h + a * (h + 1)
        critic = d * (o + a + 1) + 3 * h * (d + h + 2) + h + cfg.critic_head * (h + 1) + cfg.critic_head + 1
        rows = cfg.batch_size * cfg.sequence_length
        return {
            "replay buffers": agents * cfg.buffer_size * (2 * o + a + 3) * F32_BYTES,
            "networks": agents * 6 * (actor + 2 * critic) * F32_BYTES,
            "batch workspaces": agents * rows * 10 * 3 * max(d, 3 * h, cfg.critic_head) * F32_BYTES,
        }, agents

    @classmethod
    def policy_state(cls, cfg: Config, env, agents: int) -> dict:
        return {"actor_target": cls.actor_net(cfg, env.obs_dim, env.act_dim, agents).params,
                "seeds": np.zeros(agents, np.int64), "steps": np.int64(0)}

    @classmethod
    def policy_from_state(cls, cfg: Config, env, state: dict, agent: int) -> PolicySpec:
        net = cls.actor_net(cfg, env.obs_dim, env.act_dim, len(state["seeds"]))
        p = {name: view[agent] for name, view in net.views(np.asarray(state["actor_target"], F32)).items()}
        act = slice(env.act_dim)  # the output's action rows (sac-gru's log-std rows follow them)
        return PolicySpec(
            weights=[p["w1"], p["wi"], p["w2"][act]], biases=[p["b1"], p["bi"], p["b2"][act]],
            activations=["relu", "identity", "tanh"], kinds=["dense", "gru", "dense"],
            hidden_weights=[None, p["wh"], None], hidden_biases=[None, p["bh"], None],
            initial_hidden=[None, p["h0"], None],
            obs_mean=np.zeros(env.obs_dim), obs_std=np.ones(env.obs_dim),
            action_scale=(env.action_high - env.action_low) / 2, action_offset=(env.action_high + env.action_low) / 2,
            action_low=env.action_low, action_high=env.action_high,
            meta={"algo": cls.NAME, "seed": int(state["seeds"][agent]), "step": int(state["steps"])})

    def policy_spec(self, agent: int) -> PolicySpec:
        state = {"actor_target": self.actor_target, "seeds": np.array(self.seeds, np.int64), "steps": self.steps}
        return self.policy_from_state(self.cfg, self.env, state, agent)

    def _arrays(self) -> dict:
        """The mutable arrays a checkpoint restores in place."""
        return {
            "actor": self.actor.params, "actor_target": self.actor_target,
            "critic": self.critic.params, "critic_target": self.critic_target,
            # Adam's moments per agent, as their parameters are laid out
            "actor_opt_m": self.actor_opt.m.reshape(self.actor.params.shape),
            "actor_opt_v": self.actor_opt.v.reshape(self.actor.params.shape),
            "critic_opt_m": self.critic_opt.m.reshape(self.critic.params.shape),
            "critic_opt_v": self.critic_opt.v.reshape(self.critic.params.shape),
            **{f"replay_{name}": a for name, a in self.replay.arrays().items()},
            "ep_return": self.episodes.ep_return, "ep_len": self.episodes.ep_len,
            "acting_state": self.h, "critic_acting_state": self.hc, "first": self.first,
        }

    def state_dict(self) -> dict:
        return {
            **self._arrays(), "steps": np.int64(self.steps), "seeds": np.array(self.seeds, np.int64),
            "actor_opt_t": np.int64(self.actor_opt.t), "critic_opt_t": np.int64(self.critic_opt.t),
            "replay_pos": np.int64(self.replay.pos), "replay_size": np.int64(self.replay.size),
            "rng": np.stack([rng_state_array(r) for r in self.rngs]),
            "env_state": self.env.get_state(), "obs": self.obs,
        }

    def load_state_dict(self, d: dict) -> None:
        for key, arr in self._arrays().items():
            arr[...] = d[key]
        self.steps = int(d["steps"])
        self.actor_opt.t, self.critic_opt.t = int(d["actor_opt_t"]), int(d["critic_opt_t"])
        self.replay.pos, self.replay.size = int(d["replay_pos"]), int(d["replay_size"])
        for r, st in zip(self.rngs, d["rng"]):
            set_rng_state(r, st)
        self.obs = self.episodes.restore(d["env_state"], np.array(d["obs"]))

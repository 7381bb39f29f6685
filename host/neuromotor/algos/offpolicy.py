"""What TD3 and SAC share: a network family with its training state, the replay ring,
and the population scaffolding around their update rules (OffPolicyAgents).

Both keep a population axis P in front of every array (one agent per seed), and
both sample minibatches from raw 32-bit draws taken modulo the rows stored, so
agent k's minibatches depend only on its own stream.
"""

from dataclasses import dataclass

import numpy as np

from neuromotor import rules
from neuromotor.algos.footprint import F32_BYTES, net_params, workspace_row
from neuromotor.envs.autoreset import AutoReset
from neuromotor.errors import UserError
from neuromotor.limits import MAX_COUNT, MAX_START_DRAWS, MAX_STEPS
from neuromotor.native import NATIVE_ERROR
from neuromotor.nn import F32, MLP, Adam, polyak
from neuromotor.policy.spec import PolicySpec
from neuromotor.rng import rng_state_array, set_rng_state

ACT_CODES = {"identity": 0, "relu": 1, "tanh": 2}  # nm_kernels.h's NM_ACT_*

# The rules of the settings TD3's and SAC's Configs share (neuromotor.rules).
RULES = {
    **rules.ACTOR_CRITIC,
    "batch_size": rules.integer(1, MAX_COUNT),
    "buffer_size": rules.integer(1, MAX_COUNT),
    "learning_starts": rules.integer(0, MAX_STEPS),
    "warmup_actions": rules.choice("uniform", "policy"),
    "tau": rules.number(0, 1, lo_open=True),
    "update_every": rules.integer(1, MAX_COUNT),
    "episode_steps": rules.integer(0, MAX_STEPS),
    "start_draws": rules.integer(1, MAX_START_DRAWS),
    "shared_minibatch": rules.BOOL,
    "backend": rules.choice("native", "numpy"),
}


@dataclass
class NetworkConfig:
    """The settings TD3's and SAC's Configs open with (their networks, minibatch and replay);
    each Config adds its own after them."""

    actor_hidden: tuple = (64, 64)
    critic_hidden: tuple = (64, 64)
    activation: str = "relu"
    batch_size: int = 100
    buffer_size: int = 10_000
    learning_starts: int = 100      # updates from this step on


def memory_parts(cfg, obs_dim: int, act_dim: int, agents: int, *, actor_out: int, actor_copies: int,
                 critic_rows: int, update_noises: int) -> tuple:
    """({part: bytes} of the arrays an off-policy population allocates, training envs): see
    neuromotor.training.memory. The algorithm's own figures: its actor's outputs, how many
    arrays of the actor's size it keeps (each critic keeps six: parameters, target, gradient,
    two Adam moments and a scratch copy), critic workspace rows per minibatch sample, and
    pre-drawn noise vectors per sample and update."""
    actor = [obs_dim, *cfg.actor_hidden, actor_out]
    critic = [obs_dim + act_dim, *cfg.critic_hidden, 1]
    B = cfg.batch_size
    return {
        "replay buffers": agents * cfg.buffer_size * ReplayRow(obs_dim, act_dim).width * F32_BYTES,
        "networks": agents * F32_BYTES * (actor_copies * net_params(actor) + 2 * 6 * net_params(critic)),
        "batch workspaces": agents * B * (3 * workspace_row(actor) + critic_rows * workspace_row(critic)
                                          + 12 * F32_BYTES * (obs_dim + act_dim + 1)),
        "pre-drawn random numbers": agents * F32_BYTES * (
            block_updates(cfg.update_every) * (3 * B + update_noises * B * act_dim) + RNG_BLOCK * 2 * act_dim),
    }, agents


class Net:
    """One network family and everything its training touches: the flat online
    parameters, their target copy (when the algorithm keeps one), the gradient, the
    optimiser, and per-layer views of each (see nn.mlp: one flat vector per family,
    layers are views into it)."""

    def __init__(self, sizes, activations, pop, lr, dtype=F32, target=True):
        self.mlp = MLP(sizes, activations, pop=pop, dtype=dtype)
        self.params, self.grad = self.mlp.zeros(), self.mlp.zeros()
        self.layers, self.grad_layers = self.mlp.views(self.params), self.mlp.views(self.grad)
        self.target = self.mlp.zeros() if target else None
        self.target_layers = self.mlp.views(self.target) if target else None
        self.opt = Adam(self.mlp.size, lr=lr)
        self._tmp = self.mlp.zeros() if target else None

    def step(self) -> None:
        """One Adam step along the gradient of the last backward pass."""
        self.opt.step(self.params, self.grad)

    def update_target(self, tau: float) -> None:
        """target <- tau * params + (1 - tau) * target"""
        polyak(self.target, self.params, tau, self._tmp)

    def native_arrays(self) -> tuple:
        """What the native update reads and writes, with Adam's float32 state (Adam.kernel_state)."""
        return self.params, self.target, self.grad, self.opt.m, self.opt.v, self.opt.kernel_state()

    def layout(self) -> tuple:
        return tuple(self.mlp.sizes), tuple(ACT_CODES[a] for a in self.mlp.activations)


def deployable(env, layers, activations, algo: str, seed: int, step: int) -> PolicySpec:
    """A policy acting in env units from actor layers [(W (in, out), b)] whose tanh output is in [-1, 1]."""
    scale = ((env.action_high - env.action_low) / 2).astype(F32)
    offset = ((env.action_high + env.action_low) / 2).astype(F32)
    return PolicySpec(
        weights=[w.T for w, _ in layers], biases=[b for _, b in layers], activations=activations,
        obs_mean=np.zeros(env.obs_dim), obs_std=np.ones(env.obs_dim),
        action_scale=scale, action_offset=offset, action_low=env.action_low, action_high=env.action_high,
        meta={"algo": algo, "seed": int(seed), "step": int(step)},
    )


class ReplayRow:
    """Where each field of a transition sits in a replay row, as slices of its last axis.

    A row is [act, obs, 1, reward, not_done, next_obs, 1]. The 1s are the networks'
    bias inputs (see nn.mlp), so the critic's input [act, obs, 1], the actor's input
    [obs, 1] and the target actor's input [next_obs, 1] are slices of a sampled
    minibatch rather than copies of it.
    """

    def __init__(self, obs_dim: int, act_dim: int):
        o, a = obs_dim, act_dim
        self.act = slice(0, a)
        self.obs = slice(a, a + o)
        self.reward = slice(a + o + 1, a + o + 2)
        self.not_done = slice(a + o + 2, a + o + 3)
        self.next_obs = slice(a + o + 3, a + 2 * o + 3)
        self.width = a + 2 * o + 4
        self.ones = [a + o, self.width - 1]
        self.critic_input = slice(0, a + o + 1)
        self.actor_input = slice(a, a + o + 1)
        self.next_actor_input = slice(a + o + 3, self.width)


class Replay:
    """Every agent's replay ring, stacked: `data` is (P, capacity, row width); the bias
    inputs are written once here."""

    def __init__(self, pop: int, capacity: int, obs_dim: int, act_dim: int, dtype=F32):
        self.row = ReplayRow(obs_dim, act_dim)
        self.capacity = capacity
        self.data = np.zeros((pop, capacity, self.row.width), dtype)
        self.data[..., self.row.ones] = 1
        self._flat = self.data.reshape(pop * capacity, self.row.width)
        self._agent_offset = (np.arange(pop) * capacity)[:, None, None]
        self.pos = 0
        self.size = 0

    def store(self, action, obs, reward, terminated, next_obs) -> None:
        """(s, a, r, not_done, s') of every agent into the next slot of its ring."""
        f, row = self.row, self.data[:, self.pos]
        row[:, f.act] = action
        row[:, f.obs] = obs
        row[:, f.reward] = reward[:, None]
        row[:, f.not_done] = ~terminated[:, None]
        row[:, f.next_obs] = next_obs
        self.pos = (self.pos + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, raw_idx: np.ndarray) -> np.ndarray:
        """The rows that raw 32-bit draws (P, ...) pick, each taken modulo the rows stored
        in its own agent's ring: (P, ..., row width), one gather for all minibatches."""
        return self._flat.take(raw_idx % self.size + self._agent_offset, axis=0)


RNG_BLOCK = 1000  # steps whose random numbers are drawn at once


def block_updates(update_every: int) -> int:
    """Rows of a block's update draws: every update_every-th step updates, so RNG_BLOCK steps
    hold at most this many updates (numbers drawn for steps that do not update would go unused)."""
    return -(-RNG_BLOCK // update_every)


class OffPolicyAgents:
    """The scaffolding TD3 and SAC share around their update rules: the population and its
    env, per-agent random streams drawn in blocks, acting in [-1, 1], and checkpoints.

    A subclass builds its networks and replay between `_setup` and `_start` (`_networks`
    and what its update adds), sets `native` (its native backend, or None), and names
    what it adds: `_draws(rng)` (one agent's random numbers for RNG_BLOCK steps: the acting
    noise of each step, the update's numbers of each update, `block_updates` of them),
    `_explore(out, noise)` (the acting actions from the actor's output),
    `_arrays()` (the arrays a checkpoint restores in place), `_optimizers()`, and its actor:
    `actor_mlp` and `policy_from_state` (the deployable policy of one agent); it may extend
    `_restored()` (called after a checkpoint was loaded)."""

    RNG_BLOCK = RNG_BLOCK

    def _setup(self, cfg, env_factory, seeds, dtype=F32) -> None:
        if cfg.warmup_actions not in ("uniform", "policy"):
            raise UserError(f"warmup_actions must be 'uniform' or 'policy', got {cfg.warmup_actions!r}")
        self.cfg, self.dtype = cfg, dtype
        self.seeds = list(seeds)
        self.P = len(self.seeds)
        self.env = env = env_factory(self.P)
        self.obs_dim, self.act_dim = env.obs_dim, env.act_dim
        # Actions live in [-1, 1] inside the algorithm, in env units only when stepping the env.
        self.act_scale = ((env.action_high - env.action_low) / 2).astype(F32)
        self.act_offset = ((env.action_high + env.action_low) / 2).astype(F32)
        self.rngs = [np.random.default_rng(s) for s in self.seeds]
        # Training may cut episodes shorter than the env's own limit (evaluation's): more starts
        # per step; a cut is a time-out, bootstrapped, never a terminal state.
        self.episode_steps = cfg.episode_steps or env.max_episode_steps

    @staticmethod
    def _check_backend(cfg) -> None:
        if cfg.backend == "native" and NATIVE_ERROR is not None:
            raise UserError(f"backend 'native' needs the compiled extension ({NATIVE_ERROR}): "
                            "reinstall with `pip install -e .`, or --set backend=numpy")

    def _networks(self, cfg, actor_target: bool) -> None:
        """The actor and the twin critics (one family of population shape (P, 2)), each agent's
        from its own stream, their targets, the replay, and the inputs and workspaces of the
        hot path both updates preallocate."""
        P, o, a, dtype = self.P, self.obs_dim, self.act_dim, self.dtype
        act = cfg.activation
        actor = self.actor_mlp(cfg, o, a, P)
        self.actor = Net(actor.sizes, actor.activations, (P,), cfg.actor_lr, dtype, target=actor_target)
        # The critics take [a, s] (this order lets replay rows hold both inputs contiguously).
        self.critic = Net([a + o, *cfg.critic_hidden, 1], [act] * len(cfg.critic_hidden) + ["identity"], (P, 2),
                          cfg.critic_lr, dtype)
        self._init_members(self.actor, self.critic)
        if actor_target:
            self.actor.target[...] = self.actor.params
        self.critic.target[...] = self.critic.params

        self.replay = Replay(P, cfg.buffer_size, o, a, dtype)
        self.row = self.replay.row

        # The target critics' input is copied per critic: gemm on a broadcast (stride 0) batch
        # is slower than the copy.
        B = cfg.batch_size
        M = 1 if cfg.shared_minibatch else 2                      # the critics' minibatches per update
        actor, critic = self.actor.mlp, self.critic.mlp
        self._obs1 = np.ones((P, 1, o + 1), dtype)               # acting: [s, 1]
        self._x_next = np.empty((P, 2, M * B, a + o + 1), dtype)  # target critics' input [a', s', 1], all minibatches
        self._x_critic = np.empty((P, 2, B, a + o + 1), dtype)   # critic c's input [a, s, 1] from its minibatch
        self._ws_act = actor.workspace((P, 1))
        self._ws_actor = actor.workspace((P, B))
        self._ws_actor2 = actor.workspace((P, M * B))
        self._ws_critic = critic.workspace((P, 2, B))
        self._ws_critic2 = critic.workspace((P, 2, M * B))

    def _start(self) -> None:
        self.steps = 0
        self._block = None
        self._block_rng = self._rng_states()
        self.episodes = AutoReset(self.env, self.rngs, max_steps=self.episode_steps,
                                  start_draws=self.cfg.start_draws)
        self.obs = self.episodes.reset()

    def _init_members(self, actor: Net, critic: Net) -> None:
        """Each agent's actor, then its two critics, from the agent's own stream."""
        for k, rng in enumerate(self.rngs):
            actor.mlp.init_member(actor.layers, k, rng)
            for c in range(2):
                critic.mlp.init_member(critic.layers, (k, c), rng)

    def _minibatches(self, raw_idx, noise) -> tuple:
        """(the critics' minibatches (P, M, B, row), the actor's (P, B, row), the critics' noise):
        three independent minibatches per agent, as in RLtools (one per critic, one for the
        actor), or with shared_minibatch one for all (the first of the draws)."""
        if self.cfg.shared_minibatch:
            batch = self.replay.sample(raw_idx[:, :1])
            return batch, batch[:, 0], noise[:, :1]
        batch = self.replay.sample(raw_idx)
        return batch[:, :2], batch[:, 2], noise

    def _targets_input(self, batch) -> tuple:
        """(P, M, B, rewards, not_dones, next observations (P, M B, obs + 1)) of the critics'
        minibatches `batch` (P, M, B, row)."""
        f = self.row
        P, M, B, _ = batch.shape
        return (P, M, B, batch[..., f.reward], batch[..., f.not_done],
                batch[..., f.next_actor_input].reshape(P, M * B, -1))

    def _act_and_store(self):
        """Step `steps` of every agent up to its update: None when the native call took the
        whole step (update included); else, once every agent acted and its transition went
        into the replay, the update's draws of this step. The action: uniform at random while
        warming up, else `_explore(actor output, acting noise)`."""
        cfg, i = self.cfg, self.steps % RNG_BLOCK
        if i == 0:
            self._draw_block()
        if self.native and self.native.whole_step:
            self._updated |= self.native.step(self._native_block, i)
            self.steps += 1
            return None
        j = self._update_row(i)
        explore, uniform = self._block[0][i], self._block[1][i]
        if self.steps < cfg.learning_starts and cfg.warmup_actions == "uniform":
            action = uniform
        elif self.native:
            action = self.native.act(self.obs, explore)
        else:
            self._obs1[:, 0, :-1] = self.obs
            action = self._explore(self.actor.mlp.forward(self.actor.layers, self._obs1, self._ws_act)[:, 0], explore)
        obs, reward, terminated, _, next_obs = self.episodes.step(action * self.act_scale + self.act_offset)

        self.replay.store(action, self.obs, reward, terminated, next_obs)
        self.obs = obs
        return [x[j] for x in self._block[2:]]

    def update_due(self) -> bool:
        """Whether this step updates: from learning_starts on, every update_every-th step."""
        cfg = self.cfg
        return self.steps >= cfg.learning_starts and (self.steps - cfg.learning_starts) % cfg.update_every == 0

    # ----- randomness, drawn per agent in blocks -----
    def _update_row(self, i: int) -> int:
        """The row of the block's update draws for step i of the block: each run of update_every
        steps holds one update at most."""
        return i // self.cfg.update_every

    def _rng_states(self) -> np.ndarray:
        return np.stack([rng_state_array(r) for r in self.rngs])

    def _draw_block(self) -> None:
        self._block_rng = self._rng_states()  # a checkpoint redraws the block from here
        parts = [self._draws(r) for r in self.rngs]
        # Stack agents on axis 1 so that step i of the block is one contiguous (P, ...) slice.
        self._block = [np.stack(x, axis=1) for x in zip(*parts)]
        self._native_block = tuple(self._block)

    def sync_host(self) -> None:
        """Bring the nn.mlp-layout arrays (actor.params, critic.target, the optimisers' m and v)
        up to date after native updates, which train a copy in the kernels' layout. act(),
        policy_spec() and state_dict() do this themselves; whoever writes those arrays calls
        load_state_dict() (or native.load()) so that training continues from them."""
        if self.native:
            self.native.sync_host()

    def _actor_params(self) -> np.ndarray:
        self.sync_host()
        return self.actor.params

    def _restored(self) -> None:
        if self.native:
            self.native.load()

    # ----- reporting, export, checkpoints -----
    def pop_episode_returns(self):
        return self.episodes.pop_episode_returns()

    @classmethod
    def policy_state(cls, cfg, env, agents: int) -> dict:
        """The checkpoint arrays a policy is read from (templates: shapes and dtypes), for a
        population of `agents`: what a run's policy is loaded from without building the algorithm."""
        return {"actor": cls.actor_mlp(cfg, env.obs_dim, env.act_dim, agents).zeros(),
                "seeds": np.zeros(agents, np.int64), "steps": np.int64(0)}

    def _policy_arrays(self) -> dict:
        """The arrays policy_from_state reads besides seeds and steps (policy_state's)."""
        return {"actor": self._actor_params()}

    def policy_spec(self, agent: int) -> PolicySpec:
        """Agent `agent`'s deployable policy, made exactly as from a checkpoint (policy_from_state)."""
        state = {**self._policy_arrays(), "seeds": np.array(self.seeds, np.int64), "steps": self.steps}
        return self.policy_from_state(self.cfg, self.env, state, agent)

    def state_dict(self) -> dict:
        return {
            **self._arrays(),
            "steps": np.int64(self.steps), "seeds": np.array(self.seeds, np.int64),
            **{f"{name}_opt_t": np.int64(opt.t) for name, opt in self._optimizers().items()},
            "replay_pos": np.int64(self.replay.pos), "replay_size": np.int64(self.replay.size),
            "rng": self._rng_states(), "rng_block_start": self._block_rng,
            "env_state": self.env.get_state(), "obs": self.obs,
        }

    def load_state_dict(self, d: dict) -> None:
        for key, arr in self._arrays().items():
            arr[...] = d[key]
        self.steps = int(d["steps"])
        for name, opt in self._optimizers().items():
            opt.t = int(d[f"{name}_opt_t"])
        self.replay.pos, self.replay.size = int(d["replay_pos"]), int(d["replay_size"])
        if self.steps % self.RNG_BLOCK:  # mid-block: redraw the block, then continue the streams
            for r, st in zip(self.rngs, d["rng_block_start"]):
                set_rng_state(r, st)
            self._draw_block()
        for r, st in zip(self.rngs, d["rng"]):
            set_rng_state(r, st)
        self.obs = self.episodes.restore(d["env_state"], np.array(d["obs"]))
        self._restored()

    def start_from(self, state: dict) -> None:
        """Every agent's networks (their targets, the policy average and SAC's temperature
        included) set to those of `state`, the state_dict of a one-agent run of the same
        networks: a population fine-tuned from one trained policy (distillation's teachers,
        each on its own drone). Optimisers, replay and random streams stay this run's own."""
        if len(state["seeds"]) != 1:
            raise UserError(f"a population starts from a one-agent run, not one of {len(state['seeds'])} agents")
        self.sync_host()
        families = {"actor": self.actor.mlp, "actor_target": self.actor.mlp, "policy_actor": self.actor.mlp,
                    "critic": self.critic.mlp, "critic_target": self.critic.mlp}
        for key, arr in self._arrays().items():
            if key in families:
                mlp = families[key]
                one = MLP(mlp.sizes, mlp.activations, (1,) + mlp.pop[1:], mlp.dtype)
                if np.shape(state[key]) != (one.size,):
                    raise UserError(f"{key}: the run to start from has other networks ({np.shape(state[key])} "
                                    f"parameters, these {one.size})")
                for mine, theirs in zip(mlp.views(arr), one.views(np.asarray(state[key], mlp.dtype))):
                    mine[...] = theirs
            elif key == "log_alpha":
                arr[...] = state[key]
        self._restored()

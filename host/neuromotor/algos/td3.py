"""TD3 (Fujimoto et al. 2018) for a population of agents, in NumPy.

Defaults are the RLtools paper's Pendulum configuration. Every array has a
leading population axis P (one agent per seed, one env per agent); the twin
critics are one network family with population shape (P, 2), so both critics
of every agent are evaluated by one batched matmul per layer.

Actions live in [-1, 1] inside the algorithm (tanh actor, noise, replay) and
are mapped to the env's bounds only when stepping the env, so the noise scales
are in units of the action range, as in the reference implementations.

Minibatches follow RLtools (rl/algorithms/td3 and the pendulum TD3 training loop
of the paper's code): every step each critic learns from its own minibatch with
its own target policy noise (its Bellman targets still use both target critics,
on that minibatch), and the actor from a third minibatch. The three are one
gather; the target nets evaluate both critic minibatches in one matmul per layer.
The other differences checked against RLtools: none in initialisation (PyTorch's
U(+-1/sqrt(fan_in))), noise units, Adam, polyak, observations, rewards or float32.
RLtools acts with the (untrained) policy plus noise before learning starts; the
default here is uniform random warm-up actions, as in the TD3 paper and CleanRL
(`warmup_actions` selects either).

`shared_minibatch = True` is Stable-Baselines3's (and CleanRL's) scheme instead of
RLtools': one minibatch per update, from which both critics (with one set of target
policy noise) and the actor learn, so the target nets evaluate one minibatch, not
two. The random streams advance alike either way (the shared minibatch takes the
first minibatch's draws).

Two backends compute the same update: `native` (the default where the compiled
extension neuromotor._nm_host imports) runs the whole population's update in one
call through the training kernels the boards use (device/native/include), with
the networks kept in the kernels' training layout between updates
(neuromotor.algos.td3_native); on the built-in pendulum the same call also acts,
steps the envs (nm_host/nm_pendulum.h, PendulumVec bit for bit) and stores the
transitions, so a training step of the whole population is one call. `numpy` is
the readable reference below, about 150 array operations per step.

Per agent, all randomness of a block of `RNG_BLOCK` steps is drawn at once from
the agent's own Generator (exploration noise, warm-up actions, replay indices,
target policy noise); env resets draw from the same Generator. So agent k's
numbers do not depend on which other agents train beside it.
"""

from dataclasses import dataclass

import numpy as np

from neuromotor.envs.autoreset import AutoReset
from neuromotor.envs.pendulum import PendulumVec
from neuromotor.errors import UserError
from neuromotor.algos.offpolicy import F32, Net, Replay
from neuromotor.algos.td3_native import TrainFamily
from neuromotor.nn import MLP
from neuromotor.nn.mlp import with_ones
from neuromotor.policy.spec import PolicySpec
from neuromotor.rng import rng_state_array, set_rng_state

try:
    from neuromotor import _nm_host
    _NATIVE_ERROR = None
except ImportError as exc:  # a source tree without the compiled extension
    _nm_host = None
    _NATIVE_ERROR = exc

RNG_BLOCK = 1000
# What nm_host/nm_pendulum.h compiles in: TD3 steps a PendulumVec natively only when it has these.
NATIVE_PENDULUM = {"max_speed": 8.0, "max_torque": 2.0, "dt": 0.05, "g": 10.0, "m": 1.0, "l": 1.0,
                   "obs_dim": 3, "act_dim": 1}


@dataclass
class Config:
    actor_hidden: tuple = (64, 64)
    critic_hidden: tuple = (64, 64)
    activation: str = "relu"
    batch_size: int = 100
    buffer_size: int = 10_000
    learning_starts: int = 100      # updates from this step on
    warmup_actions: str = "uniform"  # before learning_starts: "uniform" random, or "policy" (+ noise, as RLtools)
    exploration_noise: float = 0.1
    policy_noise: float = 0.2       # target policy smoothing
    noise_clip: float = 0.5
    gamma: float = 0.99
    tau: float = 0.005
    actor_lr: float = 1e-3
    critic_lr: float = 1e-3
    policy_delay: int = 2           # actor and targets updated every 2nd critic update
    shared_minibatch: bool = False  # one minibatch per update for the critics and the actor
    backend: str = "native" if _nm_host is not None else "numpy"  # the update's arithmetic: "native" or "numpy"


def _clip(x, bound, out):
    """np.clip(x, -bound, bound, out=out) without np.clip's Python-level overhead."""
    np.maximum(x, F32(-bound), out=out)
    return np.minimum(out, F32(bound), out=out)


class TD3:
    """TD3 for a population of agents: ``TD3(TD3.Config(...), env_factory, seeds)``.

    ``advance()`` takes one env step of every agent and one update, ``act(obs)`` gives
    deterministic actions, ``policy_spec(k)`` agent k's deployable policy; the whole
    interface is described in ``neuromotor.algos``."""

    Config = Config

    def __init__(self, cfg: Config, env_factory, seeds):
        if cfg.warmup_actions not in ("uniform", "policy"):
            raise UserError(f"warmup_actions must be 'uniform' or 'policy', got {cfg.warmup_actions!r}")
        if cfg.backend == "native" and _nm_host is None:
            raise UserError(f"backend 'native' needs the compiled extension ({_NATIVE_ERROR}): "
                            "reinstall with `pip install -e .`, or --set backend=numpy")
        self.cfg = cfg
        self.seeds = list(seeds)
        P = self.P = len(self.seeds)
        self.env = env = env_factory(P)
        self.obs_dim, self.act_dim = o, a = env.obs_dim, env.act_dim
        self.act_scale = ((env.action_high - env.action_low) / 2).astype(F32)
        self.act_offset = ((env.action_high + env.action_low) / 2).astype(F32)
        self.rngs = [np.random.default_rng(s) for s in self.seeds]

        act = cfg.activation
        self.actor = Net([o, *cfg.actor_hidden, a], [act] * len(cfg.actor_hidden) + ["tanh"], (P,), cfg.actor_lr)
        # The critics take [a, s] (this order lets replay rows hold both inputs contiguously).
        self.critic = Net([a + o, *cfg.critic_hidden, 1], [act] * len(cfg.critic_hidden) + ["identity"], (P, 2),
                          cfg.critic_lr)
        self.q1_layers = MLP.member(self.critic.layers, (slice(None), 0))  # critic 1 of every agent
        for k, rng in enumerate(self.rngs):
            self.actor.mlp.init_member(self.actor.layers, k, rng)
            for c in range(2):
                self.critic.mlp.init_member(self.critic.layers, (k, c), rng)
        self.actor.target[...] = self.actor.params
        self.critic.target[...] = self.critic.params

        self.replay = Replay(P, cfg.buffer_size, o, a)
        self.row = self.replay.row

        # Preallocated inputs and workspaces of the hot path. The target critics' input is
        # copied per critic: gemm on a broadcast (stride 0) batch is slower than the copy.
        B = cfg.batch_size
        M = 1 if cfg.shared_minibatch else 2                    # the critics' minibatches per update
        actor, critic = self.actor.mlp, self.critic.mlp
        self._obs1 = np.ones((P, 1, o + 1), F32)               # acting: [s, 1]
        self._x_next = np.empty((P, 2, M * B, a + o + 1), F32)  # target critics' input [a', s', 1], all minibatches
        self._x_critic = np.empty((P, 2, B, a + o + 1), F32)   # critic c's input [a, s, 1] from minibatch c
        self._x_actor = np.empty((P, B, a + o + 1), F32)       # critic 1's input for the actor loss [pi(s), s, 1]
        self._dq = np.empty((P, 2, B, 1), F32)
        self._dq_actor = np.empty((P, B, 1), F32)
        self._ws_act = actor.workspace((P, 1))
        self._ws_actor = actor.workspace((P, B))
        self._ws_actor2 = actor.workspace((P, M * B))
        self._ws_critic = critic.workspace((P, 2, B))
        self._ws_critic2 = critic.workspace((P, 2, M * B))
        self._ws_q1 = critic.workspace((P, B))

        self.steps = 0
        self._block = None
        self._block_rng = self._rng_states()
        self.episodes = AutoReset(env, self.rngs)
        self.obs = self.episodes.reset()
        self._q_actor = None    # the NumPy update's last Q1(s, pi(s)) (for the actor loss)
        self._updated = False   # an update ran in this process (losses to report)

        self._native = None
        # the whole step in one native call: the built-in pendulum, one env per agent
        self._native_env = (cfg.backend == "native" and type(env) is PendulumVec
                            and all(getattr(env, k) == v for k, v in NATIVE_PENDULUM.items()))
        self._native_setup()

    # ----- randomness, drawn per agent in blocks -----
    def _rng_states(self) -> np.ndarray:
        return np.stack([rng_state_array(r) for r in self.rngs])

    def _draw_block(self):
        self._block_rng = self._rng_states()  # a checkpoint redraws the block from here
        n, B, a = RNG_BLOCK, self.cfg.batch_size, self.act_dim
        parts = [(r.standard_normal((n, a), F32), r.uniform(-1, 1, (n, a)).astype(F32),
                  r.integers(0, 1 << 32, (n, 3, B), np.uint32), r.standard_normal((n, 2, B, a), F32)) for r in self.rngs]
        # Stack agents on axis 1 so that step i of the block is one contiguous (P, ...) slice.
        self._block = [np.stack(x, axis=1) for x in zip(*parts)]
        self._native_block = tuple(self._block)

    # ----- acting -----
    def act(self, obs: np.ndarray) -> np.ndarray:
        self.sync_host()
        return self.actor.mlp.forward(self.actor.layers, with_ones(obs.astype(F32))) * self.act_scale + self.act_offset

    def advance(self):
        """One env step of every agent, then (from learning_starts on) one TD3 update."""
        cfg, i = self.cfg, self.steps % RNG_BLOCK
        if i == 0:
            self._draw_block()
        if self._native_env:
            return self._advance_native(i)
        explore, uniform, raw_idx, target_noise = (x[i] for x in self._block)
        # Act: a = clip(pi(s) + eps, -1, 1), eps ~ N(0, sigma); uniform at random while warming up.
        if self.steps < cfg.learning_starts and cfg.warmup_actions == "uniform":
            action = uniform
        elif self._native:
            action = np.empty((self.P, self.act_dim), F32)
            _nm_host.act(self._native[0].params, self._native_nets[2], np.ascontiguousarray(self.obs, F32), explore,
                         cfg.exploration_noise, action)
        else:
            self._obs1[:, 0, :-1] = self.obs
            action = self.actor.mlp.forward(self.actor.layers, self._obs1, self._ws_act)[:, 0]
            action = action + explore * F32(cfg.exploration_noise)
            _clip(action, 1, out=action)
        obs, reward, terminated, _, next_obs = self.episodes.step(action * self.act_scale + self.act_offset)

        self.replay.store(action, self.obs, reward, terminated, next_obs)
        self.obs = obs

        if self.steps >= cfg.learning_starts:
            update_actor = self.steps % cfg.policy_delay == 0  # delayed policy updates
            if self._native:
                self._update_native(raw_idx, target_noise, update_actor)
            else:
                if cfg.shared_minibatch:
                    # One minibatch per agent for both critics and the actor (the first of the draws).
                    critic_batch = self.replay.sample(raw_idx[:, :1])
                    actor_batch, target_noise = critic_batch[:, 0], target_noise[:, :1]
                else:
                    # Three independent minibatches per agent, as in RLtools: one per critic, one for the actor.
                    batch = self.replay.sample(raw_idx)
                    critic_batch, actor_batch = batch[:, :2], batch[:, 2]
                self._update_critics(critic_batch, target_noise)
                if update_actor:
                    self._update_actor(actor_batch)
                    self._update_targets()
            self._updated = True
        self.steps += 1

    # ----- the native backend: the update (and on the pendulum the whole step) in one call -----
    def _native_setup(self):
        """(Re)load the training layout from the host arrays after they were written (a new
        algorithm, a checkpoint), and the arguments of the native calls."""
        if self.cfg.backend != "native":
            return
        if self._native is None:
            self._native = (TrainFamily(self.actor), TrainFamily(self.critic))
            self._losses = np.zeros((self.P, 2), F32)
        for fam in self._native:
            fam.load()
        self._host_stale = False
        cfg, (actor, critic) = self.cfg, self._native
        self._native_nets = (actor.arrays(), critic.arrays(), self.actor.layout(), self.critic.layout(), self._losses)
        self._native_hyper = (cfg.gamma, cfg.tau, cfg.policy_noise, cfg.noise_clip, cfg.exploration_noise,
                              float(self.act_scale[0]), float(self.act_offset[0]))
        if self._native_env:
            self.obs = np.array(self.obs, F32)  # the array the native step writes
            ep = self.episodes
            self._native_envs = (self.env.state, self.obs, ep.ep_return, ep.ep_len, self.env.max_episode_steps)

    def sync_host(self):
        """Bring the nn.mlp-layout arrays (actor.params, critic.target, the optimisers' m and v)
        up to date after native updates, which train a copy in the kernels' layout. act(),
        policy_spec() and state_dict() do this themselves; whoever writes those arrays calls
        load_state_dict() (or _native_setup()) so that training continues from them."""
        if self._native and self._host_stale:
            for fam in self._native:
                fam.store()
            self._host_stale = False

    def _advance_native(self, i):
        """One step of every agent on the built-in pendulum in one native call: the arithmetic of
        advance() with the NumPy update."""
        cfg, replay = self.cfg, self.replay
        learn = self.steps >= cfg.learning_starts
        uniform = not learn and cfg.warmup_actions == "uniform"
        update_actor = learn and self.steps % cfg.policy_delay == 0
        self.critic.opt.t += learn
        self.actor.opt.t += update_actor
        ended = _nm_host.td3_step(self._native_nets, replay.data, self._native_envs, self._native_block, i,
                                  replay.pos, replay.size, uniform, learn, update_actor, cfg.shared_minibatch,
                                  self._native_hyper)
        replay.pos = (replay.pos + 1) % replay.capacity
        replay.size = min(replay.size + 1, replay.capacity)
        if ended:
            self.obs[...] = self.episodes.finish(self.episodes.ep_len >= self.env.max_episode_steps)
        self._host_stale = True
        self._updated |= learn
        self.steps += 1

    def _update_native(self, raw_idx, target_noise, update_actor):
        """The critics' update, then (update_actor) the actor's and the targets', of every agent:
        the arithmetic of _update_critics, _update_actor and _update_targets."""
        self.critic.opt.t += 1
        self.actor.opt.t += update_actor
        _nm_host.td3_update(self._native_nets, self.replay.data, self.replay.size, raw_idx, target_noise,
                            update_actor, self.cfg.shared_minibatch, self._native_hyper[:4])
        self._host_stale = True

    # ----- the TD3 updates -----
    def _update_critics(self, batch, target_noise):
        """batch (P, 2, B, row): critic c learns from minibatch c, its Bellman targets from both
        target critics on that minibatch; target_noise (P, 2, B, a) likewise per minibatch.
        batch (P, 1, B, row) and target_noise (P, 1, B, a) (shared_minibatch): both critics
        learn from the one minibatch and the same targets."""
        cfg, f, a = self.cfg, self.row, self.act_dim
        actor, critic = self.actor, self.critic
        P, M, B, _ = batch.shape
        reward, not_done = batch[..., f.reward], batch[..., f.not_done]
        next_obs = batch[..., f.next_actor_input].reshape(P, M * B, -1)

        # Target policy smoothing: a' = clip(pi'(s') + clip(eps, -c, c), -1, 1)
        next_act = actor.mlp.forward(actor.target_layers, next_obs, self._ws_actor2)
        noise = target_noise.reshape(P, M * B, a) * F32(cfg.policy_noise)
        next_act += _clip(noise, cfg.noise_clip, out=noise)
        x_next = self._x_next
        _clip(next_act[:, None], 1, out=x_next[..., f.act])
        x_next[..., f.actor_input] = next_obs[:, None]

        # Clipped double Q-learning: y = r + gamma * not_done * min(Q1'(s', a'), Q2'(s', a'))
        q_next = critic.mlp.forward(critic.target_layers, x_next, self._ws_critic2)  # (P, 2, M B, 1)
        y = np.minimum(q_next[:, 0], q_next[:, 1]).reshape(P, M, B, 1)
        y *= not_done
        y *= F32(cfg.gamma)
        y += reward

        # Critic c regresses on its y: L = mean (Q1(s, a) - y1)^2 + mean (Q2(s, a) - y2)^2
        x = self._x_critic
        x[...] = batch[..., f.critic_input]
        q = critic.mlp.forward(critic.layers, x, self._ws_critic)  # (P, 2, B, 1)
        dq = self._dq
        np.subtract(q, y, out=dq)
        dq *= F32(2.0 / cfg.batch_size)
        critic.mlp.backward(critic.layers, self._ws_critic, dq, critic.grad_layers)
        critic.step()

    def _update_actor(self, batch):
        """batch (P, B, row): deterministic policy gradient, maximise Q1(s, pi(s)), i.e.
        minimise -mean Q1 (critic 1 only, as in the paper)."""
        f, actor, critic = self.row, self.actor, self.critic
        obs = batch[..., f.actor_input]
        x = self._x_actor
        x[..., f.actor_input] = obs
        x[..., f.act] = actor.mlp.forward(actor.layers, obs, self._ws_actor)
        self._q_actor = critic.mlp.forward(self.q1_layers, x, self._ws_q1)
        self._dq_actor.fill(-1.0 / self.cfg.batch_size)
        dx = critic.mlp.backward(self.q1_layers, self._ws_q1, self._dq_actor, None, need_dx=True)
        actor.mlp.backward(actor.layers, self._ws_actor, dx[..., f.act], actor.grad_layers)
        actor.step()

    def _update_targets(self):
        """Target networks trail the online ones: theta' <- tau * theta + (1 - tau) * theta'."""
        self.actor.update_target(self.cfg.tau)
        self.critic.update_target(self.cfg.tau)

    # ----- reporting, export, checkpoints -----
    def pop_episode_returns(self):
        return self.episodes.pop_episode_returns()

    def scalars(self) -> dict:
        """Per agent: the learning rates, and the last update's critic loss (the sum of both
        critics' mean squared Bellman errors) and actor loss (-mean Q1(s, pi(s)))."""
        cfg, P, B = self.cfg, self.P, self.cfg.batch_size
        out = {"lr/actor": np.full(P, cfg.actor_lr), "lr/critic": np.full(P, cfg.critic_lr)}
        if not self._updated:
            return out
        if self._native:
            critic, actor = self._losses[:, 0], self._losses[:, 1]
        else:
            err = self._dq.astype(np.float64) * (B / 2)  # dq = (Q - y) * 2 / B
            critic = np.square(err).mean(axis=(2, 3)).sum(axis=1)
            actor = -self._q_actor.mean(axis=(1, 2), dtype=np.float64) if self._q_actor is not None else None
        out["loss/critic"] = critic.astype(np.float64)
        if self.actor.opt.t and actor is not None:
            out["loss/actor"] = actor.astype(np.float64)
        return out

    def policy_spec(self, agent: int) -> PolicySpec:
        self.sync_host()
        layers = self.actor.mlp.weights_and_biases(MLP.member(self.actor.layers, agent))
        return PolicySpec(
            weights=[w.T for w, _ in layers], biases=[b for _, b in layers],
            activations=self.actor.mlp.activations,
            obs_mean=np.zeros(self.obs_dim), obs_std=np.ones(self.obs_dim),
            action_scale=self.act_scale, action_offset=self.act_offset,
            action_low=self.env.action_low, action_high=self.env.action_high,
            meta={"algo": "td3", "seed": self.seeds[agent], "step": self.steps},
        )

    def _arrays(self) -> dict:
        """The mutable arrays a checkpoint restores in place (after writing them: _native_setup)."""
        self.sync_host()
        return {
            "actor": self.actor.params, "actor_target": self.actor.target,
            "critic": self.critic.params, "critic_target": self.critic.target,
            "actor_opt_m": self.actor.opt.m, "actor_opt_v": self.actor.opt.v,
            "critic_opt_m": self.critic.opt.m, "critic_opt_v": self.critic.opt.v,
            "replay": self.replay.data, "ep_return": self.episodes.ep_return, "ep_len": self.episodes.ep_len,
        }

    def state_dict(self) -> dict:
        return {
            **self._arrays(),
            "steps": np.int64(self.steps), "seeds": np.array(self.seeds, np.int64),
            "actor_opt_t": np.int64(self.actor.opt.t), "critic_opt_t": np.int64(self.critic.opt.t),
            "replay_pos": np.int64(self.replay.pos), "replay_size": np.int64(self.replay.size),
            "rng": self._rng_states(), "rng_block_start": self._block_rng,
            "env_state": self.env.get_state(), "obs": self.obs,
        }

    def load_state_dict(self, d: dict) -> None:
        for key, arr in self._arrays().items():
            arr[...] = d[key]
        self.steps = int(d["steps"])
        self.actor.opt.t, self.critic.opt.t = int(d["actor_opt_t"]), int(d["critic_opt_t"])
        self.replay.pos, self.replay.size = int(d["replay_pos"]), int(d["replay_size"])
        if self.steps % RNG_BLOCK:  # mid-block: redraw the block, then continue the streams
            for r, st in zip(self.rngs, d["rng_block_start"]):
                set_rng_state(r, st)
            self._draw_block()
        for r, st in zip(self.rngs, d["rng"]):
            set_rng_state(r, st)
        self.obs = self.episodes.restore(d["env_state"], np.array(d["obs"]))
        self._native_setup()

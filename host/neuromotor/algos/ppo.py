"""PPO (Schulman et al. 2017) for a population of agents, in NumPy, CleanRL-style.

Defaults are the RLtools paper's Ant configuration (its Appendix G and its
Ant parameter file): 64 envs x 64 steps per iteration, 4 epochs of
minibatches of 2048, GAE(0.99, 0.95), clip 0.2, no entropy bonus, a Gaussian
policy with a learned state-independent log-std starting at log(0.5),
[256, 256] ReLU actor and critic with their own Adam optimisers (lr 1e-3),
observation normalisation with running statistics, and the adaptive learning
rate of Appendix G on the actor: after each minibatch's forward pass,
KL(pi_old || pi) above 2 * 0.008 divides the actor's learning rate by 1.5,
below 0.5 * 0.008 multiplies it by 1.5, clamped to [1e-6, 1e-2]. Those are
the two rl_games tricks the paper found to matter; nothing else is added.

Population: agent k owns `num_envs` envs (laid out agent-major), its networks
(population axis P), its learning rate, its observation statistics and its
Generator (action noise, minibatch order, env resets), so agent k's numbers do
not depend on which other agents train beside it.

Episodes: the env never resets itself. After each step the rollout truncates
episodes at `max_episode_steps`, resets finished envs, and for truncated (not
terminated) ones adds gamma * V(final observation) to the reward, so GAE can
cut every episode boundary and still bootstrap time-outs (rl_games'
value_bootstrap).
"""

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from threadpoolctl import ThreadpoolController

from neuromotor import rules
from neuromotor.algos import named_config
from neuromotor.algos.footprint import F32_BYTES, net_params, workspace_row
from neuromotor.envs.autoreset import AutoReset
from neuromotor.errors import UserError
from neuromotor.limits import MAX_COUNT
from neuromotor.nn import F32, MLP, Adam
from neuromotor.nn.mlp import with_ones
from neuromotor.policy.spec import PolicySpec
from neuromotor.rng import rng_state_array, set_rng_state

LOG_2PI = math.log(2 * math.pi)
BLAS = ThreadpoolController()


@dataclass
class Config:
    actor_hidden: tuple = (256, 256)
    critic_hidden: tuple = (256, 256)
    activation: str = "relu"
    num_envs: int = 64              # per agent
    num_steps: int = 64             # per env and iteration: 64 x 64 = 4096 env steps
    minibatch_size: int = 2048
    epochs: int = 4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_coef: float = 0.2
    ent_coef: float = 0.0
    init_std: float = 0.5
    normalize_advantage: bool = False
    normalize_obs: bool = True
    actor_lr: float = 1e-3          # initial value when adaptive_lr
    critic_lr: float = 1e-3
    adaptive_lr: bool = True        # Appendix G
    target_kl: float = 0.008
    lr_factor: float = 1.5
    lr_min: float = 1e-6
    lr_max: float = 1e-2

    RULES = {
        **rules.ACTOR_CRITIC,
        "num_envs": rules.integer(1, MAX_COUNT),
        "num_steps": rules.integer(1, MAX_COUNT),
        "minibatch_size": rules.integer(1, MAX_COUNT),
        "epochs": rules.integer(1, MAX_COUNT),
        "gae_lambda": rules.number(0, 1),
        "clip_coef": rules.number(0, lo_open=True),
        "ent_coef": rules.number(0),
        "init_std": rules.number(0, lo_open=True),
        "normalize_advantage": rules.BOOL,
        "normalize_obs": rules.BOOL,
        "adaptive_lr": rules.BOOL,
        "target_kl": rules.number(0, lo_open=True),
        "lr_factor": rules.number(1, lo_open=True),
        "lr_min": rules.RATE,
        "lr_max": rules.RATE,
    }

    def check(self):
        rollout = self.num_envs * self.num_steps
        if rollout % self.minibatch_size:
            raise UserError(f"a rollout's num_envs x num_steps ({self.num_envs} x {self.num_steps} "
                            f"= {rollout}) must be a multiple of minibatch_size ({self.minibatch_size})")
        if self.lr_min > self.lr_max:
            raise UserError(f"lr_min ({self.lr_min}) must not exceed lr_max ({self.lr_max})")


# Named configurations: hyperparameters, plus run settings (env steps per agent,
# evaluation and checkpoint intervals) for `neuromotor train`.
CONFIGS = {
    # The paper's Ant-v4 schedule: 2,500 iterations of 64 envs x 64 steps = 10.24M steps,
    # evaluated (10 deterministic episodes) every 100,000 steps.
    "ant-paper": (Config(), {"steps": 2500 * 64 * 64, "eval_every": 100_000, "checkpoint_every": 100_000}),
    # Pendulum swing-up: small networks, rollouts as long as an episode.
    "pendulum": (Config(actor_hidden=(64, 64), critic_hidden=(64, 64), num_envs=16, num_steps=200,
                        minibatch_size=800, epochs=10, gamma=0.95, init_std=1.0),
                 {"steps": 300_000, "eval_every": 20_000, "checkpoint_every": 20_000}),
}


def _batch_mean(x: np.ndarray, axis=1) -> np.ndarray:
    """x.mean(axis) of a float32 array as NumPy computes it (the float32 sum divided by the
    count), without the Python layers around it, which cost more than the arithmetic here."""
    total = np.add.reduce(x, axis)
    count = math.prod(x.shape[i] for i in ((axis,) if isinstance(axis, int) else axis))
    return np.true_divide(total, np.intp(count), out=total, casting="unsafe")


class PPO:
    """PPO for a population of agents: ``PPO(PPO.Config(...), env_factory, seeds)``.

    ``advance()`` runs one rollout of every agent and its update epochs, ``act(obs)``
    gives deterministic actions, ``policy_spec(k)`` agent k's deployable policy; the
    whole interface is described in ``neuromotor.algos``."""

    Config = Config

    @staticmethod
    def defaults(env_name: str, preset: str | None = None):
        """(Config, RunConfig settings): the named config `preset`, else this env's."""
        return named_config(CONFIGS, "ppo", env_name, preset, mujoco="ant-paper")

    def __init__(self, cfg: Config, env_factory, seeds):
        self.cfg = cfg
        self.seeds = list(seeds)
        P, E, T = self.P, self.E, self.T = len(self.seeds), cfg.num_envs, cfg.num_steps
        if min(E, T, cfg.minibatch_size, cfg.epochs) <= 0 or (E * T) % cfg.minibatch_size:
            raise UserError(f"PPO needs positive num_envs, num_steps, minibatch_size and epochs, and "
                            f"num_envs x num_steps ({E} x {T}) a multiple of minibatch_size ({cfg.minibatch_size})")
        self.env = env = env_factory(P * E)
        o, a = self.obs_dim, self.act_dim = env.obs_dim, env.act_dim
        self.low, self.high = env.action_low.astype(F32), env.action_high.astype(F32)
        self.rngs = [np.random.default_rng(s) for s in self.seeds]
        # env j of agent k draws its initial states from agent k's Generator
        self.episodes = AutoReset(env, [r for r in self.rngs for _ in range(E)], envs_per_agent=E)

        hidden = [cfg.activation]
        self.actor = self.actor_mlp(cfg, o, a, P)
        self.critic = MLP([o, *cfg.critic_hidden, 1], hidden * len(cfg.critic_hidden) + ["identity"], pop=(P,))
        # The actor's flat vector ends with the log-stds, so one Adam (and one adaptive lr) covers both.
        n = self.actor.size
        self.actor_p, self.actor_g = np.zeros(n + P * a, F32), np.zeros(n + P * a, F32)
        self.actor_v, self.actor_gv = self.actor.views(self.actor_p[:n]), self.actor.views(self.actor_g[:n])
        self.log_std, self.log_std_g = self.actor_p[n:].reshape(P, 1, a), self.actor_g[n:].reshape(P, 1, a)
        self.critic_p, self.critic_g = self.critic.zeros(), self.critic.zeros()
        self.critic_v, self.critic_gv = self.critic.views(self.critic_p), self.critic.views(self.critic_g)
        # With one action the actor and critic have the same layer shapes: the rollout runs them as
        # one stacked network (a copy of both, made per rollout). Its batched matmuls make the
        # same BLAS call per network as two passes would, in half the NumPy calls.
        self._joint = None
        if a == 1 and tuple(cfg.actor_hidden) == tuple(cfg.critic_hidden):
            self._joint = MLP([o, *cfg.actor_hidden, 1], hidden * len(cfg.actor_hidden) + ["identity"], pop=(2, P))
            self._joint_v = self._joint.views(self._joint.zeros())
        for k, rng in enumerate(self.rngs):
            self.actor.init_member(self.actor_v, k, rng)
            self.critic.init_member(self.critic_v, k, rng)
        # A small last actor layer starts the policy near mean 0 (CleanRL uses a 0.01 gain).
        self.actor.weights_and_biases(self.actor_v)[-1][0][...] *= F32(0.01)
        self.log_std[...] = math.log(cfg.init_std)
        self.actor_opt = Adam(self.actor_p.size, lr=cfg.actor_lr)
        self.critic_opt = Adam(self.critic.size, lr=cfg.critic_lr)
        self.lr = np.full(P, cfg.actor_lr, np.float64)  # per agent, adapted by KL
        # Which agent owns each element of the actor's flat vector (for per-agent lrs).
        owner = [np.repeat(np.arange(P), (hi - lo) // P) for lo, hi in zip(self.actor.offsets, self.actor.offsets[1:])]
        self._owner = np.concatenate(owner + [np.repeat(np.arange(P), a)])

        # Running observation statistics per agent (float64: Chan et al.'s parallel update).
        self.obs_mean = np.zeros((P, o))
        self.obs_var = np.ones((P, o))
        self.obs_count = np.zeros(P)

        # Rollout storage, (P, T, E, ...) so that (P, T*E, ...) is a free reshape.
        self.b_obs = np.zeros((P, T, E, o + 1), F32)     # normalised, with the MLP's trailing 1
        self.b_obs[..., o] = 1
        self._norm_tmp = np.empty((P, E, o))              # float64, as _normalize computes
        self.b_act = np.zeros((P, T, E, a), F32)
        self.b_logp = np.zeros((P, T, E), F32)
        self.b_mean = np.zeros((P, T, E, a), F32)        # for KL(pi_old || pi)
        self.b_val = np.zeros((P, T + 1, E), F32)
        self.b_rew = np.zeros((P, T, E), F32)
        self.b_done = np.zeros((P, T, E), bool)          # episode ended after step t
        self.b_raw = np.zeros((P, T, E, o))              # raw observations for the statistics

        self.steps = 0
        self.obs = self.episodes.reset().reshape(P, E, o)
        self._workspaces = {}
        # A second core (if the env may use one) for the critic's update.
        self._critic_pool = ThreadPoolExecutor(1) if getattr(env, "threads", 1) > 1 else None
        self.info = {}  # last iteration's diagnostics per agent: lr, kl, entropy, losses

    # ----- acting -----
    def _normalize(self, obs: np.ndarray) -> np.ndarray:
        """Network input for obs (P, E, obs_dim): normalised, with the MLP's trailing 1."""
        if self.cfg.normalize_obs:
            obs = (obs - self.obs_mean[:, None]) / self._obs_std()[:, None]
        return with_ones(obs.astype(F32))

    def _obs_std(self) -> np.ndarray:
        return np.sqrt(self.obs_var + 1e-8)  # as policy_from_state

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Deterministic actions (the Gaussian mean, clipped to the bounds), obs (P, E, obs_dim)."""
        return np.clip(self.actor.forward(self.actor_v, self._normalize(obs)), self.low, self.high)

    def _value(self, x: np.ndarray) -> np.ndarray:
        return self.critic.forward(self.critic_v, x, self._workspace(self.critic, x))[..., 0]

    def _workspace(self, net, x):
        """The network's preallocated buffers for inputs shaped like x (a few shapes per run)."""
        key = (id(net), x.shape)
        if key not in self._workspaces:
            self._workspaces[key] = net.workspace(x.shape[:-1])
        return self._workspaces[key]

    def advance(self):
        """One iteration: a rollout of num_steps in every env, then the PPO update."""
        # One BLAS thread: the cores go to our own threads (MuJoCo workers; actor and
        # critic updated side by side). BLAS threads on these small matrices only
        # wait on each other, and collapse when other processes share the machine.
        with BLAS.limit(limits=1, user_api="blas"):
            self._rollout()
            self._update()
        self.steps += self.E * self.T

    def _rollout(self):
        cfg, P, E, T, a, o = self.cfg, self.P, self.E, self.T, self.act_dim, self.obs_dim
        noise = np.stack([r.standard_normal((T, E, a), F32) for r in self.rngs])  # (P, T, E, a)
        std = np.exp(self.log_std)
        # a = mu + std * eps, so log pi(a) = -|eps|^2 / 2 - sum log std - a/2 log 2pi: known for the
        # whole rollout before it starts.
        logp_const = -self.log_std.sum(-1) - F32(0.5 * a * LOG_2PI)  # (P, 1)
        self.b_logp[...] = -0.5 * np.square(noise).sum(-1) + logp_const[:, :, None]
        # The statistics change only after the rollout: one mean and std for all its steps.
        obs_mean, obs_std = self.obs_mean[:, None], self._obs_std()[:, None]
        tmp = self._norm_tmp
        x = self.b_obs[:, 0]
        ws_actor, ws_critic = self._workspace(self.actor, x), self._workspace(self.critic, x)
        if self._joint is not None:
            for joint, actor, critic in zip(self._joint_v, self.actor_v, self.critic_v):
                joint[0], joint[1] = actor, critic
            ws_joint = self._workspace(self._joint, np.broadcast_to(x, (2, *x.shape)))
        for t in range(T):
            self.b_raw[:, t] = self.obs
            x = self.b_obs[:, t]  # _normalize's arithmetic, written in place (its trailing 1 is there)
            if cfg.normalize_obs:  # in float64, rounded to float32 once on the way out
                np.subtract(self.obs, obs_mean, out=tmp)
                np.divide(tmp, obs_std, out=x[..., :o], casting="same_kind")
            else:
                x[..., :o] = self.obs
            if self._joint is not None:
                out = self._joint.forward(self._joint_v, x[None], ws_joint)
                mean, self.b_val[:, t] = out[0], out[1, ..., 0]
            else:
                mean = self.actor.forward(self.actor_v, x, ws_actor)
                self.b_val[:, t] = self.critic.forward(self.critic_v, x, ws_critic)[..., 0]
            self.b_mean[:, t] = mean
            action = self.b_act[:, t]
            np.multiply(std, noise[:, t], out=action)
            action += mean
            # The env sees the action clipped to its bounds; the policy is scored on the sample.
            # (np.minimum/np.maximum: np.clip's Python-level checks cost more than the clamp)
            clipped = np.minimum(np.maximum(action, self.low), self.high)
            obs, reward, terminated, truncated, final_obs = self.episodes.step(clipped.reshape(P * E, a))
            reward, terminated, truncated = reward.reshape(P, E), terminated.reshape(P, E), truncated.reshape(P, E)
            if np.count_nonzero(truncated):  # (count_nonzero: a tenth of .any()'s cost here)
                # Time-out is not failure: bootstrap with the value of the final observation.
                value = self._value(self._normalize(final_obs.reshape(P, E, o)))
                reward = reward + F32(cfg.gamma) * truncated * value
            self.b_rew[:, t] = reward
            np.logical_or(terminated, truncated, out=self.b_done[:, t])
            self.obs = obs.reshape(P, E, o)
        self.b_val[:, T] = self._value(self._normalize(self.obs))
        if cfg.normalize_obs:
            self._update_obs_stats(self.b_raw.reshape(P, T * E, -1))

    def _update_obs_stats(self, x: np.ndarray) -> None:
        n = x.shape[1]
        mean, var = x.mean(1), x.var(1)
        total = self.obs_count + n
        delta = mean - self.obs_mean
        w = (n / total)[:, None]
        m2 = self.obs_var * self.obs_count[:, None] + var * n + delta**2 * self.obs_count[:, None] * w
        self.obs_mean += delta * w
        self.obs_var = m2 / total[:, None]
        self.obs_count = total

    def _gae(self):
        """Advantages A_t = sum_l (gamma lambda)^l delta_{t+l}, cut at episode ends."""
        cfg, T = self.cfg, self.T
        # Only the recursion runs step by step; the terms of every step are computed at once.
        alive = F32(1) - self.b_done
        delta = self.b_rew + F32(cfg.gamma) * self.b_val[:, 1:] * alive - self.b_val[:, :T]
        carry = F32(cfg.gamma * cfg.gae_lambda) * alive
        adv = np.empty_like(self.b_rew)
        last = np.zeros_like(self.b_rew[:, 0])
        for t in range(T - 1, -1, -1):
            np.multiply(carry[:, t], last, out=adv[:, t])
            adv[:, t] += delta[:, t]
            last = adv[:, t]
        return adv, adv + self.b_val[:, :T]

    def _update(self):
        cfg, P, N, a = self.cfg, self.P, self.E * self.T, self.act_dim
        adv, ret = (x.reshape(P * N) for x in self._gae())
        # Agent-major flat rows: a minibatch of every agent is one np.take per array (fancy
        # indexing with a row index per agent costs five times as much).
        obs, act = self.b_obs.reshape(P * N, -1), self.b_act.reshape(P * N, a)
        logp_old, mean_old = self.b_logp.reshape(P * N), self.b_mean.reshape(P * N, a)
        log_std_old = self.log_std.copy()
        B = cfg.minibatch_size
        first_row = np.arange(P)[:, None] * N
        kls, pg_losses, v_losses = [], [], []
        for _ in range(cfg.epochs):
            perm = np.stack([r.permutation(N) for r in self.rngs]) + first_row
            for s in range(0, N, B):
                idx = perm[:, s:s + B]
                x, adv_b = obs.take(idx, 0), adv.take(idx)
                if cfg.normalize_advantage:
                    adv_b = (adv_b - adv_b.mean(1, keepdims=True)) / (adv_b.std(1, keepdims=True) + F32(1e-8))

                # The critic's step does not depend on the actor's: with a spare core, run it beside it.
                ret_b = ret.take(idx)
                critic = self._critic_pool.submit(self._critic_step, x, ret_b) if self._critic_pool else None
                loss, kl = self._policy_grad(x, act.take(idx, 0), adv_b, logp_old.take(idx),
                                             mean_old.take(idx, 0), log_std_old)
                if cfg.adaptive_lr:
                    # Appendix G: a bang-bang controller on the actor's learning rate,
                    # driven by the KL of this minibatch before its gradient step.
                    self.lr = np.where(kl > 2 * cfg.target_kl, self.lr / cfg.lr_factor,
                                       np.where(kl < 0.5 * cfg.target_kl, self.lr * cfg.lr_factor, self.lr))
                    self.lr = np.minimum(np.maximum(self.lr, cfg.lr_min), cfg.lr_max)
                    self.actor_opt.lr = self._actor_lr()
                self.actor_opt.step(self.actor_p, self.actor_g)

                v_losses.append(critic.result() if critic else self._critic_step(x, ret_b))
                kls.append(kl)
                pg_losses.append(loss)
        self.info = {
            "lr": self.lr.copy(), "kl": np.mean(kls, 0), "policy_loss": np.mean(pg_losses, 0),
            "value_loss": np.mean(v_losses, 0),
            "entropy": self.log_std.sum((1, 2)) + 0.5 * a * (1 + LOG_2PI),
        }

    def _actor_lr(self):
        """Adam's step size per element of the actor's flat vector: its agent's lr. One agent's is
        a float32 scalar (the same arithmetic in Adam as a vector of it, without the gather)."""
        lr = self.lr.astype(F32)
        return lr[0] if self.P == 1 else lr[self._owner]

    def scalars(self) -> dict:
        """Per agent: learning rates and the last update's diagnostics (TensorBoard's scalars)."""
        out = {"lr/actor": self.lr.copy(), "lr/critic": np.full(self.P, self.cfg.critic_lr)}
        if self.info:
            out.update({"loss/actor": self.info["policy_loss"], "loss/critic": self.info["value_loss"],
                        "policy/kl": self.info["kl"], "policy/entropy": self.info["entropy"]})
        return out

    def _critic_step(self, x, ret):
        """One Adam step on L = mean (V(s) - R)^2, R the GAE return; returns L per agent."""
        ws = self._workspace(self.critic, x)
        v = self.critic.forward(self.critic_v, x, ws)
        dv = v - ret[..., None]
        loss = _batch_mean(np.square(dv), (1, 2))
        dv *= F32(2.0 / x.shape[1])
        self.critic.backward(self.critic_v, ws, dv, self.critic_gv)
        self.critic_opt.step(self.critic_p, self.critic_g)
        return loss

    def _policy_grad(self, x, act, adv, logp_old, mean_old, log_std_old):
        """Writes the gradient of the clipped surrogate (minus the entropy bonus) into
        actor_g and returns (loss, KL(pi_old || pi)), both per agent.

        L = -mean min(r A, clip(r, 1 - eps, 1 + eps) A) - ent_coef * entropy,
        r = pi(a | s) / pi_old(a | s).
        """
        cfg, B, a = self.cfg, x.shape[1], self.act_dim
        # (np.add.reduce is what .sum() calls, without its Python wrapper)
        add = np.add.reduce
        ws = self._workspace(self.actor, x)
        mean = self.actor.forward(self.actor_v, x, ws)
        std = np.exp(self.log_std)
        z = (act - mean) / std
        z2 = np.square(z)
        logp = -0.5 * add(z2, -1) - add(self.log_std, -1) - F32(0.5 * a * LOG_2PI)
        ratio = np.exp(logp - logp_old)
        clipped = np.minimum(np.maximum(ratio, 1 - cfg.clip_coef), 1 + cfg.clip_coef)
        entropy = add(self.log_std, (1, 2)) + 0.5 * a * (1 + LOG_2PI)
        loss = -_batch_mean(np.minimum(ratio * adv, clipped * adv)) - cfg.ent_coef * entropy
        # KL of diagonal Gaussians, summed over action dims, mean over the minibatch.
        std_old = np.exp(log_std_old)
        kl = _batch_mean(add(self.log_std - log_std_old
                             + (np.square(std_old) + np.square(mean_old - mean)) / (2 * np.square(std)) - 0.5, -1))
        # dL/dlogp = -A r / B where the unclipped term is the minimum, else 0.
        unclipped = np.where(adv >= 0, ratio <= 1 + cfg.clip_coef, ratio >= 1 - cfg.clip_coef)
        dlogp = (-adv * ratio * unclipped / B).astype(F32, copy=False)[..., None]
        # dlogp/dmu = z / std and dlogp/dlog_std = z^2 - 1; d entropy/dlog_std = 1.
        self.log_std_g[...] = add(dlogp * (z2 - 1), 1, keepdims=True) - F32(cfg.ent_coef)
        self.actor.backward(self.actor_v, ws, dlogp * z / std, self.actor_gv)
        return loss, kl

    # ----- reporting, export, checkpoints -----
    def pop_episode_returns(self):
        return self.episodes.pop_episode_returns()

    @staticmethod
    def memory_parts(cfg: Config, obs_dim: int, act_dim: int, agents: int) -> tuple:
        """({part: bytes} of the arrays a population allocates, training envs): see neuromotor.training.memory."""
        actor = [obs_dim, *cfg.actor_hidden, act_dim]
        critic = [obs_dim, *cfg.critic_hidden, 1]
        rows, f = cfg.num_envs * cfg.num_steps, F32_BYTES
        return {
            # normalised obs, actions, means, log-probs, values, rewards, dones, float64 raw obs
            "rollout storage": agents * rows * ((obs_dim + 1) * f + 2 * act_dim * f + 3 * f + 1 + 8 * obs_dim),
            # exploration noise, advantages, returns, the minibatch permutation, float64 obs statistics
            "update temporaries": agents * rows * (act_dim * f + 2 * f + 8 + 16 * obs_dim),
            "networks": agents * 5 * f * (net_params(actor) + net_params(critic) + act_dim),
            "batch workspaces": agents * (cfg.minibatch_size + cfg.num_envs)
                                * (workspace_row(actor) + workspace_row(critic)),
        }, agents * cfg.num_envs

    @staticmethod
    def actor_mlp(cfg: Config, obs_dim: int, act_dim: int, agents: int) -> MLP:
        """The Gaussian's mean of the normalised observation (its log-stds follow in the flat vector)."""
        return MLP([obs_dim, *cfg.actor_hidden, act_dim], [cfg.activation] * len(cfg.actor_hidden) + ["identity"],
                   pop=(agents,))

    @classmethod
    def policy_state(cls, cfg: Config, env, agents: int) -> dict:
        """The checkpoint arrays a policy is read from (templates: shapes and dtypes)."""
        n = cls.actor_mlp(cfg, env.obs_dim, env.act_dim, agents).size + agents * env.act_dim
        return {"actor": np.zeros(n, F32), "obs_mean": np.zeros((agents, env.obs_dim)),
                "obs_var": np.zeros((agents, env.obs_dim)), "seeds": np.zeros(agents, np.int64), "steps": np.int64(0)}

    def policy_spec(self, agent: int) -> PolicySpec:
        state = {"actor": self.actor_p, "obs_mean": self.obs_mean, "obs_var": self.obs_var,
                 "seeds": np.array(self.seeds, np.int64), "steps": self.steps}
        return self.policy_from_state(self.cfg, self.env, state, agent)

    @classmethod
    def policy_from_state(cls, cfg: Config, env, state: dict, agent: int) -> PolicySpec:
        """The deterministic policy: the Gaussian mean of the normalised observation,
        clamped to the env's action bounds as in training (the mean itself is unbounded)."""
        mlp = cls.actor_mlp(cfg, env.obs_dim, env.act_dim, len(state["seeds"]))
        layers = mlp.weights_and_biases(MLP.member(mlp.views(state["actor"][:mlp.size]), agent))
        normalize = cfg.normalize_obs
        return PolicySpec(
            weights=[w.T for w, _ in layers], biases=[b for _, b in layers],
            activations=mlp.activations,
            obs_mean=state["obs_mean"][agent] if normalize else np.zeros(env.obs_dim),
            obs_std=np.sqrt(state["obs_var"][agent] + 1e-8) if normalize else np.ones(env.obs_dim),
            action_scale=np.ones(env.act_dim), action_offset=np.zeros(env.act_dim),
            action_low=env.action_low.astype(F32), action_high=env.action_high.astype(F32),
            meta={"algo": "ppo", "seed": int(state["seeds"][agent]), "step": int(state["steps"])},
        )

    def _arrays(self) -> dict:
        """The mutable arrays a checkpoint restores in place."""
        return {
            "actor": self.actor_p, "critic": self.critic_p,
            "actor_opt_m": self.actor_opt.m, "actor_opt_v": self.actor_opt.v,
            "critic_opt_m": self.critic_opt.m, "critic_opt_v": self.critic_opt.v,
            "lr": self.lr, "obs_mean": self.obs_mean, "obs_var": self.obs_var, "obs_count": self.obs_count,
            "obs": self.obs, "ep_return": self.episodes.ep_return, "ep_len": self.episodes.ep_len,
        }

    def state_dict(self) -> dict:
        return {
            **{k: v.copy() for k, v in self._arrays().items()},
            "steps": np.int64(self.steps), "seeds": np.array(self.seeds, np.int64),
            "actor_opt_t": np.int64(self.actor_opt.t), "critic_opt_t": np.int64(self.critic_opt.t),
            "rng": np.stack([rng_state_array(r) for r in self.rngs]),
            "env_state": self.env.get_state(),
        }

    def load_state_dict(self, d: dict) -> None:
        for key, arr in self._arrays().items():
            arr[...] = d[key]
        self.steps = int(d["steps"])
        self.actor_opt.t, self.critic_opt.t = int(d["actor_opt_t"]), int(d["critic_opt_t"])
        self.actor_opt.lr = self._actor_lr()
        for r, st in zip(self.rngs, d["rng"]):
            set_rng_state(r, st)
        flat = self.obs.reshape(-1, self.obs_dim)
        self.obs[...] = self.episodes.restore(d["env_state"], flat).reshape(self.obs.shape)

"""Recurrent SAC: SAC (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications",
learned temperature) with a GRU actor and GRU critics, for partially observed tasks, in NumPy.

Everything but the losses is recurrent TD3's (td3_gru.py): the networks' layers, sequence replay
with stored states and burn-in, one-step continuations for the targets, populations and
checkpoints. The actor Dense relu -> GRU -> Dense identity outputs [mean, log_std] per action,
squashed as sac.TanhGaussian does; training acts with its samples, and the policy is
tanh(mean), the mean's rows of the same layers (policy file version 4). Per step t of a window,
with alpha = exp(log_alpha) before this update's:

    a'_t ~ pi(o_1..o_t, o'_t)                         the online actor, continued one step
    y_t  = r_t + gamma (1 - d_t) (min_i Q'_i(o_1, a_1, ..., o_t, a_t, o'_t, a'_t) - alpha log pi(a'_t|...))
    critic loss: mean over windows and steps past burn-in of (Q_i(o_1, a_1, ..., o_t, a_t) - y_t)^2
    actor loss:  mean alpha log pi(a~_t|...) - min_i Q_i(o_1, a_1, ..., o_{t-1}, a_{t-1}, o_t, a~_t),
                 a~_t = tanh(mean_t + std_t eps) reparameterised
    alpha loss:  -mean log_alpha (log pi(a~_t|...) - |A|)

The actor takes the smaller critic, as SAC's paper and sac.py do: one critic's errors
alone would be free to steer the policy toward actions it overrates. The critics are continued
from their states before step t of the critic update's own pass, as in recurrent TD3.

The policy a run deploys and evaluates is a Polyak average (tau) of the actor, kept where
recurrent TD3 keeps its target actor (only the policy reads it: the targets sample the online
actor). On the pendulum without its velocity the two did equally well (3 seeds of 3 solved,
mean -160.4 averaged, -160.5 online; docs/recurrent.md), so the average stays, as for td3-gru,
where it was the better one.
"""

import math
from dataclasses import dataclass

import numpy as np

from neuromotor import rules
from neuromotor.algos import named_config
from neuromotor.algos.sac import TanhGaussian
from neuromotor.algos.sac_config import ENTROPY_RULES, check_log_std
from neuromotor.algos.td3_gru import F32, RecurrentTD3, SequenceConfig
from neuromotor.limits import MAX_COUNT, MAX_STEPS
from neuromotor.nn import Adam, polyak
from neuromotor.nn.gru import time_flat
from neuromotor.nn.recurrent import RecurrentNet


@dataclass
class Config(SequenceConfig):
    """Recurrent TD3's networks and replay; SAC's pendulum rates (sac_config.Config)."""
    gamma: float = 0.99
    tau: float = 0.005
    actor_lr: float = 1e-3
    critic_lr: float = 1e-3
    alpha_lr: float = 1e-3
    init_alpha: float = 1.0         # entropy coefficient at step 0
    log_std_min: float = -20.0
    log_std_max: float = 2.0
    update_every: int = 1           # one update per this many env steps
    episode_steps: int = 0          # training episodes time out after this many steps (0: the env's limit)

    RULES = {
        **SequenceConfig.RULES,
        "gamma": rules.number(0, 1),
        "tau": rules.number(0, 1, lo_open=True),
        "actor_lr": rules.RATE,
        "critic_lr": rules.RATE,
        **ENTROPY_RULES,
        "update_every": rules.integer(1, MAX_COUNT),
        "episode_steps": rules.integer(0, MAX_STEPS),
    }

    def check(self):
        super().check()
        check_log_std(self)


CONFIGS = {"pendulum": (Config(), {"steps": 30_000})}


class RecurrentSAC(RecurrentTD3):
    """Recurrent SAC for a population of agents: ``RecurrentSAC(Config(...), env_factory, seeds)``
    (the interface of neuromotor.algos)."""

    Config = Config
    NAME = "sac-gru"

    @staticmethod
    def defaults(env_name: str, preset: str | None = None):
        return named_config(CONFIGS, "sac-gru", env_name, preset, mujoco="pendulum")

    def __init__(self, cfg: Config, env_factory, seeds):
        cfg.check()
        super().__init__(cfg, env_factory, seeds)
        self.target_entropy = -float(self.act_dim)
        self.log_alpha = np.full(self.P, math.log(cfg.init_alpha), F32)
        self.alpha_opt = Adam(self.P, lr=cfg.alpha_lr)

    @staticmethod
    def actor_net(cfg: Config, obs_dim: int, act_dim: int, agents: int, rng_of=None) -> RecurrentNet:
        """[mean, log_std]: Dense relu -> GRU -> Dense identity, one per agent."""
        return RecurrentNet(obs_dim, cfg.dense, cfg.hidden, [(2 * act_dim, "identity")], rng_of, pop=(agents,))

    @property
    def alpha(self) -> np.ndarray:
        return np.exp(self.log_alpha)

    def _squash(self, out: np.ndarray, eps: np.ndarray) -> TanhGaussian:
        return TanhGaussian(out, eps, self.cfg.log_std_min, self.cfg.log_std_max)

    def _deterministic(self, out: np.ndarray) -> np.ndarray:
        return np.tanh(out[..., :self.act_dim])

    def _explore(self, out: np.ndarray, noise: np.ndarray) -> np.ndarray:
        return self._squash(out, noise).action

    # ----- the update -----
    def _update(self):
        cfg, B, L, K = self.cfg, self.cfg.batch_size, self.cfg.sequence_length, self.cfg.burn_in
        T, a = L - K, self.act_dim                                             # steps with a loss
        w, x, next_obs, h_actor, h_critic = self._sample_windows()
        next_noise, actor_noise = (np.stack([r.standard_normal((T * B, a)) for r in self.rngs]).astype(F32)
                                   for _ in range(2))
        alpha = self.alpha[:, None, None]                                      # (P, 1, 1)

        # One pass of the actor serves both losses: it changes only after the critics do
        out, _, actor_cache = self.actor.forward(w["obs"], h_actor, w["first"])  # (L, P, B, 2a)

        # a' ~ pi from the online actor continued one step from its state after step t, then the soft
        # target y = r + gamma (1 - d) (min(Q1', Q2') - alpha log pi(a'))
        next_out, _, _ = self.actor.forward(next_obs, self.actor.states_after(actor_cache, K))
        next_pi = self._squash(next_out[0], next_noise)                        # (P, T B, ...)
        min_qf_next_target = self._min_target_q(w, x, h_critic, next_obs, next_pi.action[None])
        critic_cache = self._critic_update(w, x, h_critic, min_qf_next_target - alpha * next_pi.log_prob)

        # The actor, from the critics' states before each step past burn-in
        actor_loss, log_prob, d_out = self._actor_loss(w["obs"], out, self.critic.states_before(critic_cache, K),
                                                       actor_noise)
        self.actor_opt.step(self.actor.params.reshape(-1), self.actor.backward(actor_cache, d_out).reshape(-1))

        # The temperature follows the policy's entropy toward -|A|
        self.alpha_opt.step(self.log_alpha, (-(log_prob + self.target_entropy).mean(axis=(1, 2))).astype(F32))

        self.losses["loss/actor"] = actor_loss.astype(np.float64)
        self.losses["policy/entropy"] = -log_prob.mean(axis=(1, 2), dtype=np.float64)
        polyak(self.actor_target, self.actor.params, cfg.tau, self._tmp_actor)
        polyak(self.critic_target, self.critic.params, cfg.tau, self._tmp_critic)

    def _actor_loss(self, obs, out, h_critic, noise):
        """The actor's loss per agent, mean alpha log pi(a~) - min(Q1, Q2)(a~) over the steps past
        burn-in; log pi(a~) (P, T B, 1); and the loss's gradient by the actor's outputs out
        (L, P, B, 2a) of the windows obs (L, P, B, o), the critics continued one step from h_critic
        (P, 2, T B, H) with a~ = tanh(mean + std noise) (noise (P, T B, a))."""
        L, P, B, _ = obs.shape
        K, T, a = self.cfg.burn_in, L - self.cfg.burn_in, self.act_dim
        alpha = self.alpha[:, None, None]
        pi = self._squash(time_flat(out[K:]), noise)                           # (P, T B, ...)
        x_pi = np.concatenate([time_flat(obs[K:]), pi.action], -1)[None, :, None]  # (1, P, 1, T B, o + a)
        q_pi, _, cache = self.critic.forward(x_pi, h_critic)                  # (1, P, 2, T B, 1)
        first = q_pi[0, :, 0] <= q_pi[0, :, 1]                                 # the min's gradient reaches the smaller
        d_q = np.zeros_like(q_pi)
        d_q[0, :, 0], d_q[0, :, 1] = first * F32(-1 / (B * T)), ~first * F32(-1 / (B * T))
        d_action = self.critic.input_gradient(cache, d_q)[0, :, :, :, self.obs_dim:].sum(axis=1)
        d_flat = pi.backward(d_action, np.broadcast_to(alpha / F32(B * T), pi.log_prob.shape))
        d_out = np.zeros_like(out)
        d_out[K:] = np.moveaxis(d_flat.reshape(P, T, B, 2 * a), 1, 0)
        loss = (alpha * pi.log_prob - np.where(first, q_pi[0, :, 0], q_pi[0, :, 1])).mean(axis=(1, 2))
        return loss, pi.log_prob, d_out

    # ----- reporting, export, checkpoints -----
    def scalars(self) -> dict:
        return {**super().scalars(), "lr/alpha": np.full(self.P, self.cfg.alpha_lr),
                "entropy/alpha": self.alpha.astype(np.float64)}

    def _arrays(self) -> dict:
        return {**super()._arrays(), "log_alpha": self.log_alpha,
                "alpha_opt_m": self.alpha_opt.m, "alpha_opt_v": self.alpha_opt.v}

    def state_dict(self) -> dict:
        return {**super().state_dict(), "alpha_opt_t": np.int64(self.alpha_opt.t)}

    def load_state_dict(self, d: dict) -> None:
        super().load_state_dict(d)
        self.alpha_opt.t = int(d["alpha_opt_t"])

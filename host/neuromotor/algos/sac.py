"""SAC (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications": twin
critics, tanh-squashed Gaussian actor, automatic entropy tuning) for a population
of agents, in NumPy.

Layout as in td3.py: every array has a leading population axis P (one agent per
seed, one env per agent); the twin critics are one network family with population
shape (P, 2); replay rows are offpolicy.ReplayRow's [act, obs, 1, reward, not_done, next_obs, 1].
Actions live in [-1, 1] inside the algorithm and are mapped to the env's bounds
only when stepping the env.

The actor outputs [mean, log_std] per action dimension. A sample is

    u = mean + std * eps,  eps ~ N(0, 1),  std = exp(clip(log_std, log_std_min, log_std_max))
    a = tanh(u)
    log pi(a|s) = sum_j [ -eps_j^2 / 2 - log std_j - log(2 pi) / 2 - log(1 - a_j^2 + 1e-6) ]

(the last term is the tanh change of variables; the 1e-6 keeps it finite at |a| = 1,
as in RLtools and SB3). Per step, with alpha = exp(log_alpha):

    critic c:  y = r + gamma * not_done * (min_i Q'_i(s', a') - alpha log pi(a'|s')),  a' ~ pi(s')
               L_Q = 1/2 mean (Q_c(s, a) - y)^2
    actor:     L_pi = mean (alpha log pi(a~|s) - min_i Q_i(s, a~)),  a~ ~ pi(s) (reparameterised)
    alpha:     L_alpha = -mean log_alpha * (log pi(a~|s) + target_entropy),  target_entropy = -|A|
    targets:   Q'_i <- tau Q_i + (1 - tau) Q'_i

Minibatches follow RLtools' SAC loop by default: each critic learns from its own
minibatch with its own next-action samples, the actor (and alpha, from the same
samples) from a third; all three are one gather. `shared_minibatch = True` is
SB3's (and CleanRL's) loop instead: one minibatch per update, on which both
critics learn from one set of next-action samples and the actor and alpha learn
too. Either way the critics' targets and the actor use alpha before this step's
alpha update, and there is no actor target network.

Two backends compute the same update: `native` (the default where the compiled
extension neuromotor.native._nm_host imports) runs the whole population's update, and the
sampled actions, in one call each through the training kernels (device/native/include),
with the networks kept in the kernels' training layout between updates
(neuromotor.algos.sac_native); on the built-in pendulum and quadrotor one call also acts,
steps the envs (nm_host/nm_pendulum.h and nm_quadrotor.h, as PendulumVec and QuadrotorVec
step, bit for bit) and stores the transitions, so a training step of the whole population
is one call (episode restarts excepted). `numpy` is the readable reference below.

Per agent, all randomness of a block of RNG_BLOCK steps is drawn at once from the
agent's own Generator (acting noise and warm-up actions per step; replay indices, the
critics' and the actor's reparameterisation noise per update); env resets draw from the
same Generator. So agent k's numbers do not depend on which other agents train beside it.
"""

import math

import numpy as np

from neuromotor.algos import named_config, offpolicy
from neuromotor.algos.offpolicy import F32, OffPolicyAgents, block_updates, deployable
from neuromotor.algos.sac_config import CONFIGS, Config
from neuromotor.algos.sac_native import NativeSAC
from neuromotor.errors import UserError
from neuromotor.nn import MLP, Adam
from neuromotor.nn.mlp import with_ones
from neuromotor.policy.spec import PolicySpec

RNG_BLOCK = OffPolicyAgents.RNG_BLOCK
AVERAGE_EVERY = 100  # steps between updates of the policy's average weights
LOG_PROB_EPS = 1e-6
HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class TanhGaussian:
    """The squashed Gaussian sample of one forward pass of the actor, and its backward.

    out (..., 2a) = [mean, log_std] from the actor, eps (..., a) standard normal noise;
    gives action (..., a) in (-1, 1) and log_prob (..., 1)."""

    def __init__(self, out, eps, log_std_min, log_std_max):
        a = eps.shape[-1]
        mean, log_std = out[..., :a], out[..., a:]
        self.in_range = (log_std > log_std_min) & (log_std < log_std_max)  # clip passes the gradient here only
        log_std = np.clip(log_std, log_std_min, log_std_max)
        self.eps, self.std = eps, np.exp(log_std)
        self.action = np.tanh(mean + self.std * eps)
        self.one_minus_a2 = 1 - self.action * self.action
        self.log_prob = (-0.5 * eps * eps - log_std - HALF_LOG_2PI
                         - np.log(self.one_minus_a2 + LOG_PROB_EPS)).sum(-1, keepdims=True)

    def backward(self, d_action, d_log_prob):
        """dL/d[mean, log_std] from dL/daction (..., a) and dL/dlog_prob (..., 1)."""
        # d log_prob / du = 2 a (1 - a^2) / (1 - a^2 + 1e-6);  da / du = 1 - a^2
        d_u = d_action * self.one_minus_a2
        d_u += d_log_prob * (2 * self.action * self.one_minus_a2 / (self.one_minus_a2 + LOG_PROB_EPS))
        # du / dlog_std = std * eps;  d log_prob / dlog_std (direct) = -1
        a = d_u.shape[-1]
        d_out = np.empty(d_u.shape[:-1] + (2 * a,), d_u.dtype)
        d_out[..., :a] = d_u
        np.multiply(d_u * self.std * self.eps - d_log_prob, self.in_range, out=d_out[..., a:])
        return d_out


class SAC(OffPolicyAgents):
    """SAC for a population of agents: ``SAC(SAC.Config(...), env_factory, seeds)``.

    ``advance()`` takes one env step of every agent and one update, ``act(obs)`` gives
    deterministic actions (the mean, squashed), ``policy_spec(k)`` agent k's deployable
    policy; the whole interface is described in ``neuromotor.algos``."""

    Config = Config

    @staticmethod
    def defaults(env_name: str, preset: str | None = None):
        """(Config, RunConfig settings): the named config `preset`, else this env's."""
        return named_config(CONFIGS, "sac", env_name, preset, mujoco="mujoco")

    def __init__(self, cfg: Config, env_factory, seeds, dtype=F32):
        cfg.check()
        if cfg.lr_decay_end and not cfg.lr_decay_start < cfg.lr_decay_end:
            raise UserError(f"lr_decay_start ({cfg.lr_decay_start}) must be below lr_decay_end ({cfg.lr_decay_end})")
        self._check_backend(cfg)
        if cfg.backend == "native" and dtype != F32:
            raise UserError("backend 'native' trains in float32: --set backend=numpy for other dtypes")
        self._setup(cfg, env_factory, seeds, dtype)
        P, o, a, B = self.P, self.obs_dim, self.act_dim, cfg.batch_size
        self.target_entropy = -float(a)
        self._networks(cfg, actor_target=False)
        if cfg.policy_average:
            self.policy_actor = self.actor.params.copy()
            self._policy_layers = self.actor.mlp.views(self.policy_actor)
        self.log_alpha = np.full(P, math.log(cfg.init_alpha), dtype)
        self.alpha_opt = Adam(P, lr=cfg.alpha_lr)
        self._x_actor = np.empty((P, 2, B, a + o + 1), dtype)  # both critics' input [a~, s, 1] for the actor loss
        self._dq_actor = np.empty((P, 2, B, 1), dtype)

        self._last_actor = None  # what the last update leaves for scalars()
        self._last_log_alpha = self.log_alpha.copy()
        self._start()
        self._updated = False  # an update ran in this process (losses to report)
        self.native = NativeSAC(self) if cfg.backend == "native" else None

    @property
    def alpha(self) -> np.ndarray:
        return np.exp(self.log_alpha)

    def _draws(self, r):
        """One agent's numbers for RNG_BLOCK steps: acting noise and warm-up actions per step;
        raw replay indices of three minibatches, the critics' next-action noise and the actor's
        noise per update."""
        n, u, B, a, dt = RNG_BLOCK, block_updates(self.cfg.update_every), self.cfg.batch_size, self.act_dim, self.dtype
        return (r.standard_normal((n, a), dt), r.uniform(-1, 1, (n, a)).astype(dt),
                r.integers(0, 1 << 32, (u, 3, B), np.uint32),
                r.standard_normal((u, 2, B, a), dt), r.standard_normal((u, B, a), dt))

    # ----- acting -----
    def act(self, obs: np.ndarray) -> np.ndarray:
        """The policy's deterministic actions tanh(mean) in env units."""
        self.sync_host()
        layers = self._policy_layers if self.cfg.policy_average else self.actor.layers
        out = self.actor.mlp.forward(layers, with_ones(obs.astype(self.dtype)))
        return np.tanh(out[..., :self.act_dim]).astype(F32) * self.act_scale + self.act_offset

    def advance(self):
        """One env step of every agent and its SAC update (step_and_update), then every
        AVERAGE_EVERY steps the policy's average: policy <- b policy + (1 - b) actor, with
        b = exp(-AVERAGE_EVERY / policy_average)."""
        self.step_and_update()
        if self.cfg.policy_average and self.steps % AVERAGE_EVERY == 0:
            b = math.exp(-AVERAGE_EVERY / self.cfg.policy_average)
            self.policy_actor *= b
            self.policy_actor += (1 - b) * self._actor_params()

    def step_and_update(self):
        """One env step of every agent (a sampled action), then (from learning_starts on, every
        update_every-th step) one SAC update."""
        cfg = self.cfg
        if cfg.lr_decay_end and self.steps >= cfg.lr_decay_start:
            self._decay_learning_rates()
        draws = self._act_and_store()
        if draws is None:
            return
        raw_idx, next_noise, actor_noise = draws
        learn = self.update_due()
        if learn and self.native:
            self.native.update(raw_idx, next_noise, actor_noise)
            self._updated = True
        elif learn:
            critic_batch, actor_batch, next_noise = self._minibatches(raw_idx, next_noise)
            self._critic_loss(critic_batch, next_noise)
            self.critic.step()
            _, log_prob = self._actor_loss(actor_batch, actor_noise)
            self.actor.step()
            self._last_log_alpha = self.log_alpha.copy()
            self.alpha_opt.step(self.log_alpha, self._alpha_grad(log_prob))
            self.critic.update_target(cfg.tau)
            self._updated = True
        self.steps += 1

    def _explore(self, out, noise):
        """A sample tanh(mean + std * noise) of the actor's Gaussian, as TanhGaussian."""
        log_std = np.clip(out[:, self.act_dim:], self.cfg.log_std_min, self.cfg.log_std_max)
        return np.tanh(out[:, :self.act_dim] + np.exp(log_std) * noise)

    def _decay_learning_rates(self) -> None:
        cfg = self.cfg
        done = min(1.0, (self.steps - cfg.lr_decay_start) / (cfg.lr_decay_end - cfg.lr_decay_start))
        factor = 1.0 - done * (1.0 - cfg.lr_decay_factor)
        self.actor.opt.lr, self.critic.opt.lr = cfg.actor_lr * factor, cfg.critic_lr * factor
        if self.native:
            self.native.set_learning_rates(self.actor.opt.lr, self.critic.opt.lr)

    # ----- the losses: each writes its gradient (and computes its value per agent if asked) -----
    def _critic_loss(self, batch, next_noise, want_loss=False):
        """batch (P, 2, B, row): critic c learns from minibatch c, its soft Bellman targets from
        both target critics and next-action samples (noise next_noise[:, c]) on that minibatch.
        batch (P, 1, B, row) and next_noise (P, 1, B, a) (shared_minibatch): both critics learn
        from the one minibatch and the same targets. Names as in CleanRL's sac_continuous_action."""
        cfg, f, a = self.cfg, self.row, self.act_dim
        actor, critic = self.actor, self.critic
        P, M, B, rewards, not_dones, next_observations = self._targets_input(batch)

        # a' ~ pi(s') from the online actor, with its log-probability
        out = actor.mlp.forward(actor.layers, next_observations, self._ws_actor2)
        next_pi = TanhGaussian(out, next_noise.reshape(P, M * B, a), cfg.log_std_min, cfg.log_std_max)
        target_input = self._x_next
        target_input[..., f.act] = next_pi.action[:, None]
        target_input[..., f.actor_input] = next_observations[:, None]

        # next_q_value = r + gamma * not_done * (min(Q1'(s', a'), Q2'(s', a')) - alpha log pi(a'|s'))
        qf_next_target = critic.mlp.forward(critic.target_layers, target_input, self._ws_critic2)  # (P, 2, M B, 1)
        min_qf_next_target = np.minimum(qf_next_target[:, 0], qf_next_target[:, 1])
        min_qf_next_target -= self.alpha.astype(self.dtype)[:, None, None] * next_pi.log_prob
        next_q_value = min_qf_next_target.reshape(P, M, B, 1)  # a view: the rest is in place
        next_q_value *= not_dones
        next_q_value *= self.dtype(cfg.gamma)
        next_q_value += rewards

        # qf_loss = 1/2 mean (Q1(s, a) - y1)^2 + 1/2 mean (Q2(s, a) - y2)^2
        x = self._x_critic
        x[...] = batch[..., f.critic_input]
        qf_a_values = critic.mlp.forward(critic.layers, x, self._ws_critic)  # (P, 2, B, 1)
        dq = qf_a_values - next_q_value  # d qf_loss / d qf_a_values, scaled below
        qf_loss = 0.5 * (dq * dq).mean(axis=(2, 3)).sum(axis=1) if want_loss else None
        dq *= self.dtype(1.0 / B)
        self._last_critic_dq = dq  # the backward below leaves it as is (identity output layer)
        critic.mlp.backward(critic.layers, self._ws_critic, dq, critic.grad_layers)
        return qf_loss

    def _actor_loss(self, batch, noise, want_loss=False):
        """batch (P, B, row), noise (P, B, a): L = mean (alpha log pi(a~|s) - min(Q1, Q2)(s, a~))
        through the reparameterised sample a~; returns (loss, log pi(a~|s) (P, B, 1))."""
        cfg, f, actor, critic = self.cfg, self.row, self.actor, self.critic
        P, B, _ = batch.shape
        obs = batch[..., f.actor_input]
        out = actor.mlp.forward(actor.layers, obs, self._ws_actor)
        pi = TanhGaussian(out, noise, cfg.log_std_min, cfg.log_std_max)
        x = self._x_actor
        x[..., f.actor_input] = obs[:, None]
        x[..., f.act] = pi.action[:, None]
        q = critic.mlp.forward(critic.layers, x, self._ws_critic)  # (P, 2, B, 1)
        first = q[:, 0] <= q[:, 1]
        alpha = self.alpha.astype(self.dtype)[:, None, None]
        self._last_actor = (alpha * pi.log_prob, np.where(first, q[:, 0], q[:, 1]), pi.log_prob)
        loss = (self._last_actor[0] - self._last_actor[1]).mean(axis=(1, 2)) if want_loss else None

        # The min passes the gradient to the smaller critic only.
        dq, scale = self._dq_actor, self.dtype(-1.0 / B)
        np.multiply(first, scale, out=dq[:, 0])
        np.multiply(~first, scale, out=dq[:, 1])
        dx = critic.mlp.backward(critic.layers, self._ws_critic, dq, None, need_dx=True)
        d_action = dx[:, 0, :, f.act] + dx[:, 1, :, f.act]
        d_out = pi.backward(d_action, np.broadcast_to(alpha / B, pi.log_prob.shape))
        actor.mlp.backward(actor.layers, self._ws_actor, d_out, actor.grad_layers)
        return loss, pi.log_prob

    def _alpha_grad(self, log_prob):
        """d/dlog_alpha of L_alpha = -mean log_alpha * (log pi + target_entropy), per agent."""
        return (-(log_prob + self.target_entropy).mean(axis=(1, 2))).astype(F32)

    def _alpha_loss(self, log_prob):
        return -(self.log_alpha[:, None, None] * (log_prob + self.target_entropy)).mean(axis=(1, 2))

    # ----- reporting, export, checkpoints -----
    def scalars(self) -> dict:
        """Per agent: learning rates, the entropy coefficient and the last update's losses and
        policy entropy estimate -mean log pi (TensorBoard's scalars)."""
        cfg, P = self.cfg, self.P
        out = {"lr/actor": np.full(P, cfg.actor_lr), "lr/critic": np.full(P, cfg.critic_lr),
               "lr/alpha": np.full(P, cfg.alpha_lr), "entropy/alpha": self.alpha.astype(np.float64)}
        if self._updated and self.native:
            critic, actor, alpha, entropy = self.native.losses.T.astype(np.float64)
            out.update({"loss/critic": critic, "loss/actor": actor, "loss/alpha": alpha, "policy/entropy": entropy})
        elif self._last_actor is not None:
            dq, B = self._last_critic_dq, self.cfg.batch_size
            alpha_logp, q_min, log_prob = self._last_actor
            out.update({
                "loss/critic": 0.5 * B * np.square(dq, dtype=np.float64).sum(axis=(1, 2, 3)),
                "loss/actor": (alpha_logp - q_min).mean(axis=(1, 2), dtype=np.float64),
                "loss/alpha": -(self._last_log_alpha[:, None, None] * (log_prob + self.target_entropy)).mean(
                    axis=(1, 2), dtype=np.float64),
                "policy/entropy": -log_prob.mean(axis=(1, 2), dtype=np.float64),
            })
        return out

    @staticmethod
    def memory_parts(cfg: Config, obs_dim: int, act_dim: int, agents: int) -> tuple:
        """({part: bytes} of the arrays a population allocates, training envs): see neuromotor.training.memory."""
        # the actor's parameters, gradient and two Adam moments (no target)
        return offpolicy.memory_parts(cfg, obs_dim, act_dim, agents, actor_out=2 * act_dim, actor_copies=4,
                                      critic_rows=6, update_noises=3)

    @staticmethod
    def actor_mlp(cfg: Config, obs_dim: int, act_dim: int, agents: int, dtype=F32) -> MLP:
        """[mean, log_std] per action dimension: the hidden layers, then identity."""
        return MLP([obs_dim, *cfg.actor_hidden, 2 * act_dim], [cfg.activation] * len(cfg.actor_hidden) + ["identity"],
                   pop=(agents,), dtype=dtype)

    def _policy_arrays(self) -> dict:
        if self.cfg.policy_average:
            return {"policy_actor": self.policy_actor}
        return super()._policy_arrays()

    @classmethod
    def policy_state(cls, cfg: Config, env, agents: int) -> dict:
        state = super().policy_state(cfg, env, agents)
        if cfg.policy_average:
            state["policy_actor"] = state.pop("actor")
        return state

    @classmethod
    def policy_from_state(cls, cfg: Config, env, state: dict, agent: int) -> PolicySpec:
        """The deterministic policy tanh(mean): the actor (or its average) without its log-std outputs."""
        a, params = env.act_dim, state["policy_actor" if cfg.policy_average else "actor"]
        mlp = cls.actor_mlp(cfg, env.obs_dim, a, len(state["seeds"]), params.dtype)
        layers = mlp.weights_and_biases(MLP.member(mlp.views(params), agent))
        w, b = layers[-1]
        layers[-1] = (w[:, :a], b[:a])
        return deployable(env, layers, mlp.activations[:-1] + ["tanh"], "sac", state["seeds"][agent], state["steps"])

    def _arrays(self) -> dict:
        """The mutable arrays a checkpoint restores in place (after writing them: native.load())."""
        self.sync_host()
        return {
            **({"policy_actor": self.policy_actor} if self.cfg.policy_average else {}),
            "actor": self.actor.params, "critic": self.critic.params, "critic_target": self.critic.target,
            "log_alpha": self.log_alpha,
            "actor_opt_m": self.actor.opt.m, "actor_opt_v": self.actor.opt.v,
            "critic_opt_m": self.critic.opt.m, "critic_opt_v": self.critic.opt.v,
            "alpha_opt_m": self.alpha_opt.m, "alpha_opt_v": self.alpha_opt.v,
            "replay": self.replay.data, "ep_return": self.episodes.ep_return, "ep_len": self.episodes.ep_len,
        }

    def _optimizers(self) -> dict:
        return {"actor": self.actor.opt, "critic": self.critic.opt, "alpha": self.alpha_opt}

    def _restored(self) -> None:
        self._last_actor = None  # no update of this state has run yet
        self._updated = False
        super()._restored()

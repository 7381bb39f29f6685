"""TD3 (Fujimoto et al. 2018) for a population of agents, in NumPy.

Defaults are the RLtools paper's Pendulum configuration, and so are the minibatches: each
critic learns from its own, the actor from a third (`shared_minibatch` selects SB3's one);
docs/algorithms.md lists what was checked against RLtools. Every array has a leading
population axis P (one agent per seed, one env per agent); the twin critics are one network
family with population shape (P, 2), so both critics of every agent are evaluated by one
batched matmul per layer. Actions live in [-1, 1] inside the algorithm and are mapped to the
env's bounds only when stepping the env, so the noise scales are in units of the action range.

Two backends compute the same update: `native` (the default where neuromotor.native._nm_host
imports; neuromotor.algos.td3_native) runs the whole population's update, and on the built-in
envs the whole step, in one call through the kernels the boards use; `numpy` is the readable
reference below.

Per agent, all randomness of a block of `RNG_BLOCK` steps is drawn at once from
the agent's own Generator (exploration noise and warm-up actions per step, replay
indices and target policy noise per update); env resets draw from the same
Generator. So agent k's numbers do not depend on which other agents train beside it.
"""

from dataclasses import dataclass

import numpy as np

from neuromotor import rules
from neuromotor.algos import named_config, offpolicy
from neuromotor.algos.offpolicy import F32, OffPolicyAgents, block_updates, deployable
from neuromotor.algos.td3_native import NativeTD3
from neuromotor.limits import MAX_COUNT
from neuromotor.native import NATIVE_ERROR
from neuromotor.nn import MLP
from neuromotor.nn.mlp import with_ones
from neuromotor.policy.spec import PolicySpec

RNG_BLOCK = OffPolicyAgents.RNG_BLOCK


@dataclass
class Config(offpolicy.NetworkConfig):
    warmup_actions: str = "uniform"  # before learning_starts: "uniform" random, or "policy" (+ noise, as RLtools)
    exploration_noise: float = 0.1
    policy_noise: float = 0.2       # target policy smoothing
    noise_clip: float = 0.5
    gamma: float = 0.99
    tau: float = 0.005
    actor_lr: float = 1e-3
    critic_lr: float = 1e-3
    policy_delay: int = 2           # actor and targets updated every 2nd critic update
    update_every: int = 1           # one update per this many env steps (Learning to Fly: 10)
    episode_steps: int = 0          # training episodes time out after this many steps (0: the env's limit)
    start_draws: int = 1            # training episodes start from the hardest of this many initial states
                                    # (an env that ranks them: the quadrotor); evaluation from the task's
    shared_minibatch: bool = False  # one minibatch per update for the critics and the actor
    backend: str = "native" if NATIVE_ERROR is None else "numpy"  # the update's arithmetic: "native" or "numpy"

    RULES = {
        **offpolicy.RULES,
        "exploration_noise": rules.number(0),
        "policy_noise": rules.number(0),
        "noise_clip": rules.number(0),
        "policy_delay": rules.integer(1, MAX_COUNT),
    }


# Named configurations: hyperparameters, plus run settings for `neuromotor train`.
CONFIGS = {
    "pendulum": (Config(), {}),
    # Learning to Fly in Seconds (Eschmann et al. 2023; its src/config/config.h and
    # actor_and_critic.h): 64-64 tanh networks, batch 256, one critic update per 10 env steps
    # and one actor update per 20, 15k warm-up steps acting with the (noisy) initial policy,
    # a replay holding the whole run, 300k steps.
    "quadrotor": (Config(activation="tanh", batch_size=256, buffer_size=300_000, learning_starts=15_000,
                         warmup_actions="policy", update_every=10),
                  {"steps": 300_000, "eval_every": 50_000, "checkpoint_every": 50_000}),
}


def _clip(x, bound, out):
    """np.clip(x, -bound, bound, out=out) without np.clip's Python-level overhead."""
    np.maximum(x, F32(-bound), out=out)
    return np.minimum(out, F32(bound), out=out)


class TD3(OffPolicyAgents):
    """TD3 for a population of agents: ``TD3(TD3.Config(...), env_factory, seeds)``.

    ``advance()`` takes one env step of every agent and one update, ``act(obs)`` gives
    deterministic actions, ``policy_spec(k)`` agent k's deployable policy; the whole
    interface is described in ``neuromotor.algos``."""

    Config = Config

    @staticmethod
    def defaults(env_name: str, preset: str | None = None):
        """(Config, RunConfig settings): the named config `preset`, else this env's."""
        return named_config(CONFIGS, "td3", env_name, preset, mujoco="pendulum")

    def __init__(self, cfg: Config, env_factory, seeds):
        self._check_backend(cfg)
        self._setup(cfg, env_factory, seeds)
        P, o, a, B = self.P, self.obs_dim, self.act_dim, cfg.batch_size
        self._networks(cfg, actor_target=True)
        self.q1_layers = MLP.member(self.critic.layers, (slice(None), 0))  # critic 1 of every agent
        self._x_actor = np.empty((P, B, a + o + 1), F32)  # critic 1's input for the actor loss [pi(s), s, 1]
        self._dq = np.empty((P, 2, B, 1), F32)
        self._dq_actor = np.empty((P, B, 1), F32)
        self._ws_q1 = self.critic.mlp.workspace((P, B))

        self._start()
        self._q_actor = None    # the NumPy update's last Q1(s, pi(s)) (for the actor loss)
        self._updated = False   # an update ran in this process (losses to report)
        self.native = NativeTD3(self) if cfg.backend == "native" else None

    def _draws(self, r):
        """One agent's numbers for RNG_BLOCK steps: exploration noise and warm-up actions per
        step, raw replay indices of three minibatches and target policy noise of two per update."""
        n, u, B, a = RNG_BLOCK, block_updates(self.cfg.update_every), self.cfg.batch_size, self.act_dim
        return (r.standard_normal((n, a), F32), r.uniform(-1, 1, (n, a)).astype(F32),
                r.integers(0, 1 << 32, (u, 3, B), np.uint32), r.standard_normal((u, 2, B, a), F32))

    # ----- acting -----
    def act(self, obs: np.ndarray) -> np.ndarray:
        self.sync_host()
        return self.actor.mlp.forward(self.actor.layers, with_ones(obs.astype(F32))) * self.act_scale + self.act_offset

    def advance(self):
        """One env step of every agent, then (from learning_starts on) one TD3 update."""
        draws = self._act_and_store()
        if draws is None:
            return
        raw_idx, target_noise = draws
        update_critics, update_actor = self.updates_now()
        if update_critics:
            if self.native:
                self.native.update(raw_idx, target_noise, update_actor)
            else:
                critic_batch, actor_batch, target_noise = self._minibatches(raw_idx, target_noise)
                self._update_critics(critic_batch, target_noise)
                if update_actor:
                    self._update_actor(actor_batch)
                    self._update_targets()
            self._updated = True
        self.steps += 1

    def _explore(self, out, noise):
        """a = clip(pi(s) + eps, -1, 1), eps ~ N(0, sigma)"""
        action = out + noise * F32(self.cfg.exploration_noise)
        return _clip(action, 1, out=action)

    def updates_now(self) -> tuple:
        """(critics, actor): whether this step updates them. The actor and the targets follow
        every policy_delay-th critic update (counted in steps // update_every): the delayed
        policy update."""
        if not self.update_due():
            return False, False
        return True, self.steps // self.cfg.update_every % self.cfg.policy_delay == 0

    # ----- the TD3 updates -----
    def _update_critics(self, batch, target_noise):
        """batch (P, 2, B, row): critic c learns from minibatch c, its Bellman targets from both
        target critics on that minibatch; target_noise (P, 2, B, a) likewise per minibatch.
        batch (P, 1, B, row) and target_noise (P, 1, B, a) (shared_minibatch): both critics
        learn from the one minibatch and the same targets. Names as in CleanRL's td3_continuous_action."""
        cfg, f, a = self.cfg, self.row, self.act_dim
        actor, critic = self.actor, self.critic
        P, M, B, rewards, not_dones, next_observations = self._targets_input(batch)

        # Target policy smoothing: a' = clip(pi'(s') + clip(eps, -c, c), -1, 1)
        next_state_actions = actor.mlp.forward(actor.target_layers, next_observations, self._ws_actor2)
        clipped_noise = target_noise.reshape(P, M * B, a) * F32(cfg.policy_noise)
        next_state_actions += _clip(clipped_noise, cfg.noise_clip, out=clipped_noise)
        target_input = self._x_next
        _clip(next_state_actions[:, None], 1, out=target_input[..., f.act])
        target_input[..., f.actor_input] = next_observations[:, None]

        # Clipped double Q-learning: next_q_value = r + gamma * not_done * min(Q1'(s', a'), Q2'(s', a'))
        # (the minimum first, then the rest in place)
        qf_next_target = critic.mlp.forward(critic.target_layers, target_input, self._ws_critic2)  # (P, 2, M B, 1)
        next_q_value = np.minimum(qf_next_target[:, 0], qf_next_target[:, 1]).reshape(P, M, B, 1)
        next_q_value *= not_dones
        next_q_value *= F32(cfg.gamma)
        next_q_value += rewards

        # Critic c regresses on its target: qf_loss = mean (Q1(s, a) - y1)^2 + mean (Q2(s, a) - y2)^2
        x = self._x_critic
        x[...] = batch[..., f.critic_input]
        qf_a_values = critic.mlp.forward(critic.layers, x, self._ws_critic)  # (P, 2, B, 1)
        dq = self._dq  # d qf_loss / d qf_a_values
        np.subtract(qf_a_values, next_q_value, out=dq)
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
    def scalars(self) -> dict:
        """Per agent: the learning rates, and the last update's critic loss (the sum of both
        critics' mean squared Bellman errors) and actor loss (-mean Q1(s, pi(s)))."""
        cfg, P, B = self.cfg, self.P, self.cfg.batch_size
        out = {"lr/actor": np.full(P, cfg.actor_lr), "lr/critic": np.full(P, cfg.critic_lr)}
        if not self._updated:
            return out
        if self.native:
            critic, actor = self.native.losses[:, 0], self.native.losses[:, 1]
        else:
            err = self._dq.astype(np.float64) * (B / 2)  # dq = (Q - y) * 2 / B
            critic = np.square(err).mean(axis=(2, 3)).sum(axis=1)
            actor = -self._q_actor.mean(axis=(1, 2), dtype=np.float64) if self._q_actor is not None else None
        out["loss/critic"] = critic.astype(np.float64)
        if self.actor.opt.t and actor is not None:
            out["loss/actor"] = actor.astype(np.float64)
        return out

    @staticmethod
    def memory_parts(cfg: Config, obs_dim: int, act_dim: int, agents: int) -> tuple:
        """({part: bytes} of the arrays a population allocates, training envs): see neuromotor.training.memory."""
        # the actor's parameters, target, gradient, two Adam moments and a scratch copy
        return offpolicy.memory_parts(cfg, obs_dim, act_dim, agents, actor_out=act_dim, actor_copies=6,
                                      critic_rows=7, update_noises=2)

    @staticmethod
    def actor_mlp(cfg: Config, obs_dim: int, act_dim: int, agents: int) -> MLP:
        """pi(s) in [-1, 1]: the hidden layers, then tanh."""
        return MLP([obs_dim, *cfg.actor_hidden, act_dim], [cfg.activation] * len(cfg.actor_hidden) + ["tanh"],
                   pop=(agents,))

    @classmethod
    def policy_from_state(cls, cfg: Config, env, state: dict, agent: int) -> PolicySpec:
        mlp = cls.actor_mlp(cfg, env.obs_dim, env.act_dim, len(state["seeds"]))
        layers = mlp.weights_and_biases(MLP.member(mlp.views(state["actor"]), agent))
        return deployable(env, layers, mlp.activations, "td3", state["seeds"][agent], state["steps"])

    def _arrays(self) -> dict:
        """The mutable arrays a checkpoint restores in place (after writing them: native.load())."""
        self.sync_host()
        return {
            "actor": self.actor.params, "actor_target": self.actor.target,
            "critic": self.critic.params, "critic_target": self.critic.target,
            "actor_opt_m": self.actor.opt.m, "actor_opt_v": self.actor.opt.v,
            "critic_opt_m": self.critic.opt.m, "critic_opt_v": self.critic.opt.v,
            "replay": self.replay.data, "ep_return": self.episodes.ep_return, "ep_len": self.episodes.ep_len,
        }

    def _optimizers(self) -> dict:
        return {"actor": self.actor.opt, "critic": self.critic.opt}

"""SAC's native backend: the update (and on the built-in pendulum and quadrotor the whole step) in one call.

The arithmetic is sac.py's NumPy update, compiled (neuromotor.native._nm_host's sac_update:
nm_host/nm_host_sac.h over nm_mlp_train.h and nm_sac_steps.h); tests/test_sac_native.py
holds the two to agreement per update. `NativeSAC` makes the calls and keeps the
networks in the training layout between updates (neuromotor.algos.native_family);
log_alpha and its Adam moments are the host's own arrays, which the call updates in place.
"""

import numpy as np

from neuromotor.algos.native_family import NativeAgents
from neuromotor.algos.offpolicy import F32
from neuromotor.native import _nm_host


class NativeSAC(NativeAgents):
    """The native calls of one SAC population, and the training-layout copy of its networks."""

    def __init__(self, sac):
        # the last update's (critic, actor, alpha) loss and entropy per agent
        super().__init__(sac, 4, _nm_host.sac_workspace)
        self.sac = sac
        self.alpha_grad = np.zeros(sac.P, F32)
        self.alpha_state = np.zeros(6, F32)
        self.load()

    def load(self) -> None:
        super().load()
        sac, cfg = self.sac, self.sac.cfg
        self.alpha_state[...] = sac.alpha_opt.kernel_state()
        self.alpha = (sac.log_alpha, self.alpha_grad, sac.alpha_opt.m, sac.alpha_opt.v, self.alpha_state)
        self.hyper = (cfg.gamma, cfg.tau, cfg.log_std_min, cfg.log_std_max, sac.target_entropy,
                      float(sac.act_scale[0]), float(sac.act_offset[0]))

    def act(self, obs, explore) -> np.ndarray:
        """The sampled actions tanh(mean + std * explore) of every agent, as SAC.advance's NumPy ones."""
        sac = self.sac
        action = np.empty((sac.P, sac.act_dim), F32)
        _nm_host.sac_act(self.families[0].params, self.nets[2], np.ascontiguousarray(obs, F32),
                         explore, sac.cfg.log_std_min, sac.cfg.log_std_max, action, self.workspace)
        return action

    def update(self, raw_idx, next_noise, actor_noise) -> None:
        """One update of every agent: the arithmetic of SAC's _critic_loss, the critics' step,
        _actor_loss, the actor's and alpha's steps and the critics' targets."""
        sac = self.sac
        for opt in (sac.critic.opt, sac.actor.opt, sac.alpha_opt):
            opt.t += 1
        _nm_host.sac_update(self.nets, self.alpha, sac.replay.data, sac.replay.size, raw_idx, next_noise, actor_noise,
                            sac.cfg.shared_minibatch, self.hyper[:5], self.workspace)
        self.host_stale = True

    def step(self, block, i) -> bool:
        """One step of every agent on a built-in env in one call: the arithmetic of
        SAC.advance() with the NumPy update. Returns whether it updated."""
        sac, cfg, replay = self.sac, self.sac.cfg, self.sac.replay
        learn = sac.update_due()
        uniform = sac.steps < cfg.learning_starts and cfg.warmup_actions == "uniform"
        for opt in (sac.critic.opt, sac.actor.opt, sac.alpha_opt):
            opt.t += learn
        ended = _nm_host.sac_step(self.nets, self.alpha, replay.data, self.envs, block, i, sac._update_row(i),
                                  replay.pos, replay.size, uniform, learn, cfg.shared_minibatch, self.hyper,
                                  self.workspace)
        self.finish_step(ended)
        return learn

"""TD3's native backend: the update (and on the built-in pendulum and quadrotor the whole step) in one call.

The arithmetic is td3.py's NumPy update, compiled (neuromotor.native._nm_host, the training
kernels the boards use); tests/test_td3_native.py holds the two to agreement per update.
`NativeTD3` makes the calls, and keeps the networks in the training layout between updates
(neuromotor.algos.native_family).
"""

import numpy as np

from neuromotor.algos.native_family import NativeAgents
from neuromotor.algos.offpolicy import F32
from neuromotor.native import _nm_host


class NativeTD3(NativeAgents):
    """The native calls of one TD3 population, and the training-layout copy of its networks."""

    def __init__(self, td3):
        super().__init__(td3, 2, _nm_host.td3_workspace)  # the last update's (critic, actor) loss per agent
        self.td3 = td3
        self.load()

    def load(self) -> None:
        super().load()
        td3, cfg = self.td3, self.td3.cfg
        self.hyper = (cfg.gamma, cfg.tau, cfg.policy_noise, cfg.noise_clip, cfg.exploration_noise,
                      float(td3.act_scale[0]), float(td3.act_offset[0]))

    def act(self, obs, explore) -> np.ndarray:
        """clip(pi(s) + exploration_noise * explore, -1, 1) of every agent."""
        action = np.empty((self.td3.P, self.td3.act_dim), F32)
        _nm_host.act(self.families[0].params, self.nets[2], np.ascontiguousarray(obs, F32), explore,
                     self.td3.cfg.exploration_noise, action, self.workspace)
        return action

    def update(self, raw_idx, target_noise, update_actor) -> None:
        """The critics' update, then (update_actor) the actor's and the targets', of every agent:
        the arithmetic of TD3._update_critics, _update_actor and _update_targets."""
        td3 = self.td3
        td3.critic.opt.t += 1
        td3.actor.opt.t += update_actor
        _nm_host.td3_update(self.nets, td3.replay.data, td3.replay.size, raw_idx, target_noise,
                            update_actor, td3.cfg.shared_minibatch, self.hyper[:4], self.workspace)
        self.host_stale = True

    def step(self, block, i) -> None:
        """One step of every agent on a built-in env in one call: the arithmetic of
        TD3.advance() with the NumPy update."""
        td3, cfg, replay = self.td3, self.td3.cfg, self.td3.replay
        uniform = td3.steps < cfg.learning_starts and cfg.warmup_actions == "uniform"
        learn, update_actor = td3.updates_now()
        td3.critic.opt.t += learn
        td3.actor.opt.t += update_actor
        ended = _nm_host.td3_step(self.nets, replay.data, self.envs, block, i, td3._update_row(i), replay.pos,
                                  replay.size, uniform, learn, update_actor, cfg.shared_minibatch, self.hyper,
                                  self.workspace)
        self.finish_step(ended)
        return learn

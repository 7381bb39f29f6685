"""The native backends' networks: a family in the training layout of the compiled kernels.

The compiled kernels (neuromotor.native._nm_host, device/native/include) train a network
family as one flat float32 vector, member after member, each member's layers as
W (in, out) row-major then b (out,) (nm_mlp_train.h). neuromotor.nn.mlp keeps the
same numbers as augmented matrices, layer after layer. `TrainFamily` holds a
family's parameters, targets, Adam moments and Adam's float32 state in the
training layout and copies them to or from the host layout only when asked:
when a checkpoint, an evaluation or an export reads the networks, or after
someone wrote them. The copies move the same float32 values (the host's constant
column holds no trainable entry and its gradient is zero), so the numbers do not
depend on when they happen.
"""

import math

import numpy as np

from neuromotor.algos.offpolicy import F32, Net
from neuromotor.envs.pendulum import PendulumVec
from neuromotor.envs.quadrotor import QuadrotorVec

# What nm_host/nm_pendulum.h compiles in: a PendulumVec steps natively only when it has these.
NATIVE_PENDULUM = {"max_speed": 8.0, "max_torque": 2.0, "dt": 0.05, "g": 10.0, "m": 1.0, "l": 1.0,
                   "obs_dim": 3, "act_dim": 1}


def steps_natively(env) -> bool:
    """Whether the native call can also step `env`, one env per agent: the built-in pendulum, or
    the quadrotor (its C step takes the env's own model array)."""
    if type(env) is QuadrotorVec:  # not a subclass: per-drone models or delays are steps C does not know
        return True
    return type(env) is PendulumVec and all(getattr(env, k) == v for k, v in NATIVE_PENDULUM.items())


class TrainFamily:
    """One network family (a Net) in the training layout, and the copies to and from the host's."""

    def __init__(self, net: Net):
        mlp = net.mlp
        self.net = net
        self.members = math.prod(mlp.pop)
        blocks = [(n_in + 1) * n_out for n_in, n_out in zip(mlp.sizes, mlp.sizes[1:])]
        self.net_len = sum(blocks)
        # params, target, grad, Adam m, Adam v: (members * net_len,) each
        self.params, self.target, self.grad, self.m, self.v = (np.zeros(self.members * self.net_len, F32)
                                                             for _ in range(5))
        self.adam_state = np.zeros(6, F32)
        self._pairs = [(self.params, lambda: net.params), (self.m, lambda: net.opt.m), (self.v, lambda: net.opt.v)]
        if net.target is not None:  # without one, the kernels' target vector stays zero and unread
            self._pairs.append((self.target, lambda: net.target))
        self._starts = np.cumsum([0] + blocks)

    def _layer_views(self, train: np.ndarray, host: np.ndarray):
        """Per layer (training-layout block (M, in + 1, out), the same entries of the host's
        augmented matrices (M, in + 1, out)), both views."""
        mlp, M = self.net.mlp, self.members
        rows = train.reshape(M, self.net_len)
        for a, b, n_in, n_out, view in zip(self._starts, self._starts[1:], mlp.sizes, mlp.sizes[1:], mlp.views(host)):
            yield rows[:, a:b].reshape(M, n_in + 1, n_out), view.reshape(M, n_in + 1, -1)[..., :n_out]

    def load(self) -> None:
        """The host's numbers (and Adam's step count) into the training layout."""
        for train, host in self._pairs:
            for t, h in self._layer_views(train, host()):
                t[...] = h
        self.adam_state[...] = self.net.opt.kernel_state()

    def store(self) -> None:
        """The training layout's numbers back into the host's arrays."""
        for train, host in self._pairs:
            for t, h in self._layer_views(train, host()):
                h[...] = t

    def arrays(self) -> tuple:
        """(params, target, grad, adam_m, adam_v, adam_state) as the kernels take them."""
        return self.params, self.target, self.grad, self.m, self.v, self.adam_state


class NativeAgents:
    """What TD3's and SAC's native backends share: the actor's and the critics' training-layout
    copies, the last update's losses per agent, the calls' workspace (of the size
    `workspace_size` gives), and on a built-in env the env arrays the whole-step call writes.
    A subclass adds its algorithm's arguments in `load`."""

    def __init__(self, agents, losses: int, workspace_size):
        self.agents = agents
        self.families = (TrainFamily(agents.actor), TrainFamily(agents.critic))
        self.losses = np.zeros((agents.P, losses), F32)
        self.whole_step = steps_natively(agents.env)
        self.workspace = np.zeros(workspace_size(agents.actor.layout(), agents.critic.layout(),
                                                 agents.cfg.batch_size, agents.P), F32)

    def load(self) -> None:
        """(Re)load the training layout from the host arrays after they were written (a new
        algorithm, a checkpoint), and the arguments of the native calls."""
        agents = self.agents
        for fam in self.families:
            fam.load()
        self.host_stale = False
        actor, critic = self.families
        self.nets = (actor.arrays(), critic.arrays(), agents.actor.layout(), agents.critic.layout(), self.losses)
        if self.whole_step:
            agents.obs = np.array(agents.obs, F32)  # the array the native step writes
            ep, env = agents.episodes, agents.env
            self.envs = (env.state, agents.obs, ep.ep_return, ep.ep_len, agents.episode_steps)
            self.terminated = np.zeros(agents.P, bool)
            if type(env) is QuadrotorVec:
                self.envs += (env.model, env.params, env.history, self.terminated)

    def finish_step(self, ended: int) -> None:
        """After a whole step in which `ended` episodes ended: the replay ring past the row the
        call wrote, and the ended episodes recorded and restarted (the terminated ones and
        those at the episode limit), as AutoReset.step does."""
        agents = self.agents
        replay = agents.replay
        replay.pos = (replay.pos + 1) % replay.capacity
        replay.size = min(replay.size + 1, replay.capacity)
        if ended:
            done = self.terminated | (agents.episodes.ep_len >= agents.episode_steps)
            agents.obs[...] = agents.episodes.finish(done)
        self.host_stale = True

    def set_learning_rates(self, actor_lr: float, critic_lr: float) -> None:
        """The rates the next updates use (Adam's float32 state holds them)."""
        for fam, lr in zip(self.families, (actor_lr, critic_lr)):
            fam.adam_state[0] = lr

    def sync_host(self) -> None:
        """The training layout's numbers back into the nn.mlp-layout arrays, if updates changed them."""
        if self.host_stale:
            for fam in self.families:
                fam.store()
            self.host_stale = False

# nm_td3: TD3 (Fujimoto et al. 2018) trained on the board, pendulum swing-up, float32,
# every buffer allocated once in __init__.
#
#   import nm_td3
#   t = nm_td3.Trainer("teensy41", seed=0)    # or "small"; refuses a profile that does not fit
#   t.train(10000)                            # a training step is a handful of native calls
#   t.evaluate(10)                            # mean deterministic return
#   t.save_policy("/td3_policy.nmp")          # the policy file of docs/policy-format.md
#
# The update is the host's (neuromotor.algos.td3): every step each critic learns from its
# own minibatch with its own target policy noise, its Bellman targets from both target
# critics; every policy_delay-th step the actor learns from a third minibatch and the
# targets follow. DEFAULTS equal the host Config's defaults; the teensy41 profile has the
# host's network, batch and replay sizes, the small profile smaller ones. The random draws
# come from xoshiro128+ (Rng), not NumPy's PCG64, so one seed gives another run than on
# the host; given the same draws the updates agree (tests/ondevice/test_td3_equivalence.py).
#
# The arithmetic runs in the native module nm_train (built-in user C module) or
# nm_train_natmod (.mpy); without either, nm_td3_py gives the same numbers, slowly.
# nm_td3_server serves this trainer over serial for `neuromotor train-on-device`.
from array import array

try:
    import gc
except ImportError:  # pragma: no cover
    gc = None

try:
    from time import ticks_diff as _diff, ticks_ms as _ticks_ms
except ImportError:
    _ticks_ms = _diff = None

from nm_pendulum import Pendulum

POLICY_PATH = "/td3_policy.nmp"

DEFAULTS = {
    "learning_starts": 100,     # uniform random actions before this step, one update per step from it
    "exploration_noise": 0.1,
    "policy_noise": 0.2,        # target policy smoothing
    "noise_clip": 0.5,
    "gamma": 0.99,
    "tau": 0.005,
    "actor_lr": 1e-3,
    "critic_lr": 1e-3,
    "policy_delay": 2,          # actor and targets updated every 2nd step
}
ADAM = (0.9, 0.999, 1e-8)       # beta1, beta2, eps (PyTorch's defaults, as on the host)
NO_CLIP = 1e30                  # exploration noise is not clipped before the action is

from nm_td3_plan import (IDENTITY, PROFILE_SETTINGS, PROFILES, RELU, TANH, layout, net_size, plan,
                         policy_floats, tape_size)

# ----------------------------------------------------------------------------
def kernels(prefer=None):
    """The training kernels: 'native' (nm_train, else nm_train_natmod) or 'python' (nm_td3_py)."""
    if prefer in (None, "native"):
        try:
            import nm_train
            return nm_train
        except ImportError:
            pass
        try:
            import nm_train_natmod
            return nm_train_natmod
        except (ImportError, ValueError):
            pass
        if prefer == "native":
            raise ImportError("no native training kernels on this board (nm_train / nm_train_natmod)")
    print("nm_td3: using the pure-Python training kernels: correct but slow (minutes per step at 64x64)")
    from nm_td3_py import Kernels
    return Kernels()


class Rng:
    """The trainer's random draws: xoshiro128+ in the kernels (one seed, one stream in every
    home). Any object with these three methods can stand in for it."""

    def __init__(self, K, seed):
        self.K = K
        self.state = array("I", [0, 0, 0, 0])
        K.seed(self.state, seed)

    def uniform(self, out, lo, hi):
        self.K.uniform(self.state, out, lo, hi)

    def normal(self, out):
        self.K.normal(self.state, out)

    def randint(self, out, n):
        """Every entry of out (array('I')) uniform in 0 .. n-1."""
        self.K.randint(self.state, out, n)


class Net:
    """One network's float32 vectors (net_size(sizes) each): parameters, target copy, Adam's
    first and second moments; and Adam's state [lr, beta1, beta2, eps, beta1^t, beta2^t]."""

    def __init__(self, zeros, sizes, acts, lr):
        self.sizes = sizes
        self.acts = acts
        self.layout = layout(sizes, acts)
        n = net_size(sizes)
        self.params, self.target, self.adam_m, self.adam_v = zeros(n), zeros(n), zeros(n), zeros(n)
        self.adam = array("f", [lr, ADAM[0], ADAM[1], ADAM[2], 1.0, 1.0])


def _mem_free():
    if gc is not None and hasattr(gc, "mem_free"):
        gc.collect()
        return gc.mem_free()
    return None


def _mem_alloc():
    if gc is not None and hasattr(gc, "mem_alloc"):
        return gc.mem_alloc()
    return 0


class ProfileTooLarge(MemoryError):
    pass


class Trainer:
    """rng: the source of every random draw (default Rng(kernels, seed)); anything with
    Rng's methods, e.g. one that replays draws recorded elsewhere."""

    def __init__(self, profile="teensy41", seed=0, kernels_=None, check_memory=True, rng=None,
                 heap_watch=None, **overrides):
        if isinstance(profile, str):
            if profile not in PROFILES:
                raise ValueError("unknown profile %r (profiles: %s)" % (profile, ", ".join(sorted(PROFILES))))
            self.profile_name = profile
            prof = PROFILES[profile]
        else:
            self.profile_name = "custom"
            prof = profile
        self.cfg = cfg = dict(DEFAULTS)
        for k in PROFILE_SETTINGS:
            if k in prof:
                cfg[k] = prof[k]
        for k, v in overrides.items():
            if k not in cfg:
                raise ValueError("unknown TD3 setting %r" % k)
            cfg[k] = v
        self.env = env = Pendulum()
        o, na = self.obs_dim, self.act_dim = env.obs_dim, env.act_dim
        hidden = list(prof["hidden"])
        B = self.batch_size = prof["batch"]
        self.capacity = prof["replay"]
        self.plan = plan(prof, o, na)
        free = _mem_free()
        self.mem_free_before = free
        # nm_link.HeapWatch started before the trainer: its peak() is the trainer's heap
        # high-water mark (None where the firmware does not count it)
        self.heap_watch = heap_watch
        self.heap_base = _mem_alloc()  # live heap before the trainer (interpreter, modules)
        if check_memory and free is not None and self.plan["bytes"] > free:
            raise ProfileTooLarge(
                "profile %s needs about %d bytes (%d floats of buffers + %d of objects), "
                "this board has %d bytes free; use a smaller profile"
                % (self.profile_name, self.plan["bytes"], self.plan["floats"], self.plan["overhead"], free))
        self.K = K = kernels_ if kernels_ is not None else kernels()
        self.seed = seed
        a0 = _mem_alloc()

        def zeros(n):
            # array('f', range(n)) is allocated at its final size (no temporary copy); then zeroed
            a = array("f", range(n))
            K.fill(a, 0.0)
            return a

        mv = memoryview
        self.actor = Net(zeros, [o] + hidden + [na], [RELU] * len(hidden) + [TANH], cfg["actor_lr"])
        self.critics = [Net(zeros, [o + na] + hidden + [1], [RELU] * len(hidden) + [IDENTITY], cfg["critic_lr"])
                        for _ in range(2)]
        pa, pc = len(self.actor.params), len(self.critics[0].params)
        grad = zeros(max(pa, pc))  # one network's gradient at a time
        self.grad_actor, self.grad_critic = mv(grad)[:pa], mv(grad)[:pc]

        # Replay ring: one row [s, a, r, not_done, s'] per transition, floats or halves.
        self.row = 2 * o + na + 2
        if prof.get("half_replay"):
            # array('H', range(n)) is allocated at its final size; 0 is the half +0.0
            self.replay = array("H", range(self.capacity * self.row))
            for i in range(len(self.replay)):
                self.replay[i] = 0
        else:
            self.replay = zeros(self.capacity * self.row)
        self.pos = 0
        self.stored = 0

        # Minibatches are feature-major (row i holds feature i of every sample), as the kernels
        # take them. Indices: critic 1's minibatch, critic 2's, the actor's.
        self.minibatch_idx = array("I", bytearray(4 * 3 * B))
        self.critic_idx = [mv(self.minibatch_idx)[c * B:(c + 1) * B] for c in (0, 1)]
        self.actor_idx = mv(self.minibatch_idx)[2 * B:]
        self.obs_act = [zeros((o + na) * B) for _ in (0, 1)]   # [s; a] of critic c's minibatch
        self.reward = [zeros(B) for _ in (0, 1)]
        self.not_done = [zeros(B) for _ in (0, 1)]
        self.target_q = [zeros(B) for _ in (0, 1)]             # Bellman targets y
        self.target_noise_both = zeros(2 * na * B)
        self.target_noise = [mv(self.target_noise_both)[c * na * B:(c + 1) * na * B] for c in (0, 1)]
        self.next_obs_act = zeros((o + na) * B)                # [s'; a'], the target critics' input
        self.next_obs = mv(self.next_obs_act)[:o * B]
        self.next_act = mv(self.next_obs_act)[o * B:]
        self.dloss_dq = zeros(B)
        self.next_q1 = self.dloss_dq                           # Q1'(s', a') until y is formed
        # The actor learns after the critics, from critic 1's minibatch buffers (free by then).
        self.actor_input = self.obs_act[0]                     # [s; pi(s)]
        self.actor_obs = mv(self.actor_input)[:o * B]
        self.dq_dinput = zeros((o + na) * B)                   # dQ1/d[s; pi(s)]
        self.dq_daction = mv(self.dq_dinput)[o * B:]
        self.critic_loss = zeros(1)
        self.tape_actor = zeros(tape_size(self.actor.sizes, B))     # every layer's output, for backward
        self.tape_critic = zeros(tape_size(self.critics[0].sizes, B))
        self.actor_out_at = len(self.tape_actor) - na * B            # pi(s): the last layer's rows
        self.q = mv(self.tape_critic)[len(self.tape_critic) - B:]    # Q(s, a): the last layer's row
        self.scratch = zeros(self.plan["scratch"])                    # backward's work space; export

        # Acting, one sample at a time.
        self.tape_acting = zeros(tape_size(self.actor.sizes, 1))
        self.obs = zeros(o)
        self.action = zeros(na)
        self.explore_noise = zeros(na)
        self.one_draw = zeros(1)
        self.eval_obs = zeros(o)
        self.eval_action = zeros(na)
        self.rng = rng if rng is not None else Rng(K, seed)
        self.heap_setup = _mem_alloc() - a0

        # PyTorch's nn.Linear initialisation, U(-1/sqrt(fan_in), 1/sqrt(fan_in)); targets = copies
        for net in [self.actor] + self.critics:
            off, sizes = 0, net.sizes
            for i in range(len(sizes) - 1):
                n = (sizes[i] + 1) * sizes[i + 1]
                bound = 1.0 / sizes[i] ** 0.5
                self.rng.uniform(mv(net.params)[off:off + n], -bound, bound)
                off += n
            K.copy(net.target, 0, net.params, 0, len(net.params))

        self.steps = 0
        self.updates = 0
        self.ep_return = 0.0
        self.ep_len = 0
        self.returns = []  # finished training episodes (most recent last, bounded)
        self.episodes = 0
        self._reset_env()

    # --- acting ----------------------------------------------------------------
    def _draw(self, lo, hi):
        self.rng.uniform(self.one_draw, lo, hi)
        return self.one_draw[0]

    def _reset_env(self):
        self.K.copy(self.obs, 0, self.env.reset(self._draw), 0, self.obs_dim)
        self.ep_return = 0.0
        self.ep_len = 0

    def policy_action(self, obs, out):
        """Deterministic action pi(obs) in [-1, 1] into out (array('f'))."""
        self.K.forward(self.actor.params, self.actor.layout, obs, self.tape_acting)
        self.K.copy(out, 0, self.tape_acting, len(self.tape_acting) - self.act_dim, self.act_dim)
        return out

    # --- one environment step, then one TD3 update once learning started -------
    def step(self):
        K, cfg, env = self.K, self.cfg, self.env
        learning = self.steps >= cfg["learning_starts"]
        if learning:
            # a = clip(pi(s) + sigma * eps, -1, 1), eps ~ N(0, 1)
            self.policy_action(self.obs, self.action)
            self.rng.normal(self.explore_noise)
            K.smooth(self.action, self.explore_noise, cfg["exploration_noise"], NO_CLIP)
        else:
            self.rng.uniform(self.action, -1.0, 1.0)
        reward = env.step(self.action[0] * env.action_scale + env.action_offset)
        # not_done is always 1: the pendulum never terminates, its episodes are only cut short
        K.push(self.replay, self.pos, self.obs, self.action, reward, 1.0, env.obs)
        self.pos = (self.pos + 1) % self.capacity
        if self.stored < self.capacity:
            self.stored += 1
        self.ep_return += reward
        self.ep_len += 1
        if self.ep_len >= env.max_episode_steps:
            self.returns.append(self.ep_return)
            if len(self.returns) > 10:
                self.returns.pop(0)
            self.episodes += 1
            self._reset_env()
        else:
            K.copy(self.obs, 0, env.obs, 0, self.obs_dim)
        if learning:
            self.update(actor=self.steps % cfg["policy_delay"] == 0)
        self.steps += 1

    def update(self, actor=True):
        """One TD3 update: both critics; with actor=True then the actor and the targets."""
        K, cfg, B, o, na = self.K, self.cfg, self.batch_size, self.obs_dim, self.act_dim
        q1, q2 = self.critics
        self.rng.randint(self.minibatch_idx, self.stored)
        self.rng.normal(self.target_noise_both)
        for c in (0, 1):
            K.gather(self.replay, self.critic_idx[c], self.stored, self.obs_act[c], self.reward[c],
                     self.not_done[c], self.next_obs)
            # target policy smoothing: a' = clip(pi'(s') + clip(sigma' * eps, -c, c), -1, 1)
            K.forward(self.actor.target, self.actor.layout, self.next_obs, self.tape_actor)
            K.copy(self.next_obs_act, o * B, self.tape_actor, self.actor_out_at, na * B)
            K.smooth(self.next_act, self.target_noise[c], cfg["policy_noise"], cfg["noise_clip"])
            # clipped double Q: y = r + gamma * not_done * min(Q1'(s', a'), Q2'(s', a'))
            K.forward(q1.target, q1.layout, self.next_obs_act, self.tape_critic)
            K.copy(self.next_q1, 0, self.q, 0, B)
            K.forward(q2.target, q2.layout, self.next_obs_act, self.tape_critic)
            K.bellman(self.target_q[c], self.next_q1, self.q, self.reward[c], self.not_done[c], cfg["gamma"])
        # critic c: one Adam step on mean (Q_c(s, a) - y)^2 over its own minibatch
        for c in (0, 1):
            net, x = self.critics[c], self.obs_act[c]
            K.forward(net.params, net.layout, x, self.tape_critic)
            K.critic_grad(self.dloss_dq, self.q, self.target_q[c], 2.0 / B, self.critic_loss)
            K.backward(net.params, net.layout, x, self.tape_critic, self.dloss_dq, self.grad_critic, None,
                       self.scratch)
            K.adam(net.params, self.grad_critic, net.adam_m, net.adam_v, net.adam)
        if actor:
            # deterministic policy gradient on the third minibatch: minimise -mean Q1(s, pi(s))
            K.gather(self.replay, self.actor_idx, self.stored, self.actor_input, self.reward[0],
                     self.not_done[0], self.next_obs)  # only s is used
            a = self.actor
            K.forward(a.params, a.layout, self.actor_obs, self.tape_actor)
            K.copy(self.actor_input, o * B, self.tape_actor, self.actor_out_at, na * B)
            K.forward(q1.params, q1.layout, self.actor_input, self.tape_critic)
            K.fill(self.dloss_dq, -1.0 / B)
            K.backward(q1.params, q1.layout, self.actor_input, self.tape_critic, self.dloss_dq, None,
                       self.dq_dinput, self.scratch)
            K.backward(a.params, a.layout, self.actor_obs, self.tape_actor, self.dq_daction, self.grad_actor,
                       None, self.scratch)
            K.adam(a.params, self.grad_actor, a.adam_m, a.adam_v, a.adam)
            # the targets follow: theta' <- theta' + tau (theta - theta')
            for net in (a, q1, q2):
                K.polyak(net.target, net.params, cfg["tau"])
        self.updates += 1

    # --- training loop, evaluation, export -------------------------------------
    def recent_return(self):
        return sum(self.returns) / len(self.returns) if self.returns else None

    def train(self, steps, report=None, every=500):
        """Run until self.steps == steps; report(info) every `every` steps and at the end."""
        if self.replay is None:
            raise ValueError("this trainer has finished learning (finish_learning): make a new one")
        t0 = _ticks_ms() if _ticks_ms else 0
        last_t, last_s = t0, self.steps
        while self.steps < steps:
            self.step()
            if report is not None and (self.steps % every == 0 or self.steps == steps):
                now = _ticks_ms() if _ticks_ms else 0
                info = self.progress(now, last_t, last_s)
                last_t, last_s = now, self.steps
                report(info)
        return self.steps

    def progress(self, now=0, last_t=0, last_s=0):
        dt = _diff(now, last_t) if _diff else 0
        info = {
            "step": self.steps, "episodes": self.episodes, "recent_return": self.recent_return(),
            "steps_per_s": (1000.0 * (self.steps - last_s) / dt) if dt > 0 else None,
            "critic_loss": self.critic_loss[0], "heap_peak": self.heap_watch.peak() if self.heap_watch else None,
        }
        if gc is not None and hasattr(gc, "mem_free"):
            gc.collect()
            live = gc.mem_alloc()
            if live > self.heap_live_peak():
                self._live_peak = live
            info["mem_free"] = gc.mem_free()
            info["heap_live"] = live
            info["heap_live_peak"] = self._live_peak
        return info

    def heap_live_peak(self):
        return getattr(self, "_live_peak", 0)

    def evaluate(self, episodes=10, seed=12345):
        """Mean deterministic return over `episodes` episodes (resets from their own stream)."""
        env = Pendulum()
        rng = Rng(self.K, seed)
        draw = self.one_draw

        def uniform(lo, hi):
            rng.uniform(draw, lo, hi)
            return draw[0]

        total = 0.0
        for _ in range(episodes):
            env.reset(uniform)
            for _ in range(env.max_episode_steps):
                self.K.copy(self.eval_obs, 0, env.obs, 0, self.obs_dim)
                self.policy_action(self.eval_obs, self.eval_action)
                total += env.step(self.eval_action[0] * env.action_scale + env.action_offset)
        return total / episodes

    def finish_learning(self):
        """Free what only the updates use (replay, critics, minibatches, backward's tapes), so
        evaluating and saving the policy, which import the policy writer, fit in a small heap
        (the esp32 profile's). The trainer cannot train after this."""
        self.replay = self.critics = self.minibatch_idx = self.critic_idx = self.actor_idx = None
        self.obs_act = self.reward = self.not_done = self.target_q = self.target_noise = None
        self.target_noise_both = self.next_obs_act = self.next_obs = self.next_act = None
        self.dloss_dq = self.next_q1 = self.actor_input = self.actor_obs = None
        self.dq_dinput = self.dq_daction = self.tape_actor = self.tape_critic = self.q = None
        if gc:
            gc.collect()

    def save_policy(self, path=POLICY_PATH):
        """Write the actor as a policy file (docs/policy-format.md) with the runtime's writer (nm_rt_write),
        actions clamped to the pendulum's torque limits; returns (path, bytes written)."""
        from nm_rt_write import write_policy
        K, o, na, env = self.K, self.obs_dim, self.act_dim, self.env
        sizes = self.actor.sizes
        n = policy_floats(sizes)
        net = memoryview(self.scratch)[:n]  # free between updates
        # observations go in unnormalised: mean 0, std 1; actions scale to the torque range
        K.fill(net[:o], 0.0)
        K.fill(net[o:2 * o], 1.0)
        K.pack(net[2 * o:n - 2 * na], self.actor.params, self.actor.layout)
        K.fill(net[n - 2 * na:n - na], env.action_scale)
        K.fill(net[n - na:], env.action_offset)
        clamp = array("f", [env.action_low] * na + [env.action_high] * na)
        write_policy(path, sizes, self.actor.acts, net, clamp)
        import os
        return path, os.stat(path)[6]

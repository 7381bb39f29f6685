# nm_td3: TD3 training on the board (pendulum swing-up), after the RLtools paper.
#
#   import nm_td3
#   t = nm_td3.Trainer("teensy41", seed=0)    # or "small"; refuses a profile that does not fit
#   t.train(10000)                            # a training step is a handful of native calls
#   t.evaluate(10)                            # mean deterministic return
#   t.save_policy("/td3_policy.nmp")          # the policy file of docs/policy-format.md
#
# The host's TD3 defaults (neuromotor.algos.td3.Config), float32 throughout, every
# buffer allocated once in __init__. The arithmetic runs in the native module
# nm_train (built-in user C module) or nm_train_natmod (.mpy); without either a
# pure-Python fallback gives the same numbers, slowly (it says so).
#
# serve() speaks NMB/1 (docs/serial-protocol.md) for `neuromotor train-on-device`:
#   hello                          JSON: platform, mem_free, bytes each profile needs
#   train <profile> <steps> <seed> [every] [eval_episodes]
#                                  unsolicited `@nm - started {...}`, then `@nm - progress {...}`
#                                  every `every` steps (step, episodes, recent_return, steps_per_s,
#                                  critic_loss, mem_free, heap_live, heap_peak), then the reply:
#                                  JSON with eval_return, wall_ms, policy_bytes, policy_crc, heap figures
#   train_custom <h1> <h2> <batch> <replay> <steps> <seed> [every] [eval_episodes]
#   policy <offset> <n>            n bytes of the trained policy file, hex
#   sync <nonce>, quit             as NMB/1
# Only native kernels train over serial (the pure-Python fallback would take hours).
import sys
import struct
from array import array

try:
    import gc
except ImportError:  # pragma: no cover
    gc = None

try:
    import time
    _ticks_ms = time.ticks_ms
    _diff = time.ticks_diff
except (ImportError, AttributeError):
    time = None
    _ticks_ms = None
    _diff = None

import nm_link
from nm_link import PROTO, send
from nm_pendulum import Pendulum

POLICY_PATH = "/td3_policy.nmp"

# TD3 defaults: the host's neuromotor.algos.td3.Config (RLtools' Pendulum setup).
DEFAULTS = {
    "learning_starts": 100,
    "exploration_noise": 0.1,
    "policy_noise": 0.2,
    "noise_clip": 0.5,
    "gamma": 0.99,
    "tau": 0.005,
    "actor_lr": 1e-3,
    "critic_lr": 1e-3,
    "policy_delay": 2,
    # 1: both critics learn from one minibatch (Fujimoto et al.); 2: critic c from its
    # own minibatch c, the Bellman targets of each from both target critics (RLtools)
    "critic_batches": 1,
}

# Sized to real boards: teensy41 (1 MB RAM), small (STM32F405 / ESP32 without PSRAM).
PROFILES = {
    "teensy41": {"hidden": (64, 64), "replay": 10000, "batch": 100, "budget": 900 * 1024},
    "small": {"hidden": (32, 32), "replay": 800, "batch": 32, "budget": 150 * 1024},
}
OVERHEAD = 24 * 1024  # objects, views and code beside the float buffers (measured, rounded up)

RELU, TANH, IDENTITY = 1, 2, 0


# ----------------------------------------------------------------------------
# Sizes (shared by the native and the Python kernels)
def layout(sizes, acts):
    return array("H", [len(sizes) - 1] + list(sizes) + list(acts))


def net_size(sizes):
    return sum((sizes[i] + 1) * sizes[i + 1] for i in range(len(sizes) - 1))


def tape_size(sizes, batch):
    return sum(sizes[1:]) * batch


def scratch_size(sizes, batch):
    widest = max(sizes)
    wt = max(sizes[i] * sizes[i + 1] for i in range(len(sizes) - 1))
    return 2 * widest * batch + wt


def packed_size(sizes):
    return sum(((sizes[i + 1] + 3) // 4) * 4 * (sizes[i] + 1) for i in range(len(sizes) - 1))


def plan(profile, obs_dim=3, act_dim=1, critic_batches=1):
    """Float counts of every buffer of a profile -> dict, plus 'bytes' (all of it)."""
    p = PROFILES[profile] if isinstance(profile, str) else profile
    h, B = list(p["hidden"]), p["batch"]
    sa = [obs_dim] + h + [act_dim]
    sc = [obs_dim + act_dim] + h + [1]
    pa, pc = net_size(sa), net_size(sc)
    row = 2 * obs_dim + act_dim + 2
    f = {
        "actor": 4 * pa,                 # params, target, Adam m and v
        "critics": 4 * 2 * pc,           # twin critics: params, targets, m, v
        "grad": max(pa, pc),
        "replay": p["replay"] * row,
        "tapes": tape_size(sa, B) + tape_size(sc, B),
        "scratch": max(scratch_size(sa, B), scratch_size(sc, B), packed_size(sa)),
        "batch": (2 + critic_batches) * (obs_dim + act_dim) * B + (2 + 3 * critic_batches) * B
        + critic_batches * act_dim * B + critic_batches * B,
        "acting": tape_size(sa, 1) + 2 * obs_dim + 4 * act_dim + 1,
    }
    total = sum(f.values())
    f["floats"] = total
    f["bytes"] = 4 * total + OVERHEAD
    return f


# ----------------------------------------------------------------------------
# Pure-Python kernels: the same functions and semantics as nm_train (slow).
class PyKernels:
    HOME = "python"

    @staticmethod
    def _layout(l):
        n = l[0]
        return list(l[1:n + 2]), list(l[n + 2:2 * n + 2])

    def sizes(self, l, batch):
        s, _ = self._layout(l)
        return net_size(s), tape_size(s, batch), scratch_size(s, batch)

    def forward(self, net, l, x, tape):
        sizes, acts = self._layout(l)
        B = len(x) // sizes[0]
        inp, ioff, w, toff = x, 0, 0, 0
        for li in range(len(acts)):
            n_in, n_out, act = sizes[li], sizes[li + 1], acts[li]
            b = w + n_in * n_out
            for o in range(n_out):
                for s in range(B):
                    acc = net[b + o]
                    for i in range(n_in):
                        acc += net[w + i * n_out + o] * inp[ioff + i * B + s]
                    if act == RELU and acc < 0:
                        acc = 0.0
                    elif act == TANH:
                        acc = _tanh(acc)
                    tape[toff + o * B + s] = acc
            inp, ioff = tape, toff
            toff += n_out * B
            w = b + n_out

    def backward(self, net, l, x, tape, dy, grad, dx, scratch):
        sizes, acts = self._layout(l)
        L = len(acts)
        B = len(x) // sizes[0]
        offs, toffs = [0], [0]
        for li in range(L):
            offs.append(offs[-1] + (sizes[li] + 1) * sizes[li + 1])
            toffs.append(toffs[-1] + sizes[li + 1] * B)
        d = list(dy)
        for li in range(L - 1, -1, -1):
            n_in, n_out = sizes[li], sizes[li + 1]
            y0 = toffs[li]
            for k in range(n_out * B):
                y = tape[y0 + k]
                if acts[li] == RELU:
                    d[k] = d[k] if y > 0 else 0.0
                elif acts[li] == TANH:
                    d[k] = d[k] * (1.0 - y * y)
            inp, i0 = (tape, toffs[li - 1]) if li else (x, 0)
            w = offs[li]
            if grad is not None:
                for i in range(n_in):
                    for o in range(n_out):
                        acc = 0.0
                        for s in range(B):
                            acc += inp[i0 + i * B + s] * d[o * B + s]
                        grad[w + i * n_out + o] = acc
                for o in range(n_out):
                    acc = 0.0
                    for s in range(B):
                        acc += d[o * B + s]
                    grad[w + n_in * n_out + o] = acc
            if li == 0 and dx is None:
                break
            nd = [0.0] * (n_in * B)
            for i in range(n_in):
                for s in range(B):
                    acc = 0.0
                    for o in range(n_out):
                        acc += net[w + i * n_out + o] * d[o * B + s]
                    nd[i * B + s] = acc
            d = nd
        if dx is not None:
            for k in range(len(d)):
                dx[k] = d[k]
        for k in range(len(dy)):
            dy[k] = 0.0  # consumed (the native kernel overwrites it too)

    def pack(self, dst, net, l):
        sizes, _ = self._layout(l)
        off, w = 0, 0
        for li in range(len(sizes) - 1):
            n_in, n_out = sizes[li], sizes[li + 1]
            b = w + n_in * n_out
            for k in range((n_out + 3) // 4):
                blk = off + k * 4 * (n_in + 1)
                for r in range(4):
                    row = 4 * k + r
                    dst[blk + r] = net[b + row] if row < n_out else 0.0
                    for j in range(n_in):
                        dst[blk + 4 * (j + 1) + r] = net[w + j * n_out + row] if row < n_out else 0.0
            off += ((n_out + 3) // 4) * 4 * (n_in + 1)
            w = b + n_out

    def adam(self, p, g, m, v, st):
        lr, b1, b2, eps = st[0], st[1], st[2], st[3]
        st[4] *= b1
        st[5] *= b2
        lr_t = lr / (1.0 - st[4])
        s2 = (1.0 - st[5]) ** 0.5
        c1, c2 = 1.0 - b1, 1.0 - b2
        for i in range(len(p)):
            gi = g[i]
            m[i] = m[i] * b1 + gi * c1
            v[i] = v[i] * b2 + gi * gi * c2
            p[i] -= m[i] / (v[i] ** 0.5 / s2 + eps) * lr_t

    def polyak(self, t, o, tau):
        for i in range(len(t)):
            t[i] += (o[i] - t[i]) * tau

    def smooth(self, a, noise, scale, clip):
        for i in range(len(a)):
            n = min(max(noise[i] * scale, -clip), clip)
            a[i] = min(max(a[i] + n, -1.0), 1.0)

    def bellman(self, y, q1, q2, r, nd, gamma):
        for i in range(len(y)):
            y[i] = min(q1[i], q2[i]) * nd[i] * gamma + r[i]

    def critic_grad(self, dq, q, y, scale, loss):
        acc = 0.0
        for i in range(len(dq)):
            e = q[i] - y[i]
            acc += e * e
            dq[i] = e * scale
        if loss is not None:
            loss[0] = acc / len(dq)

    def fill(self, dst, value):
        for i in range(len(dst)):
            dst[i] = value

    def copy(self, dst, d0, src, s0, n):
        for i in range(n):
            dst[d0 + i] = src[s0 + i]

    # xoshiro128+ as nm_train.h, so a seed gives the same stream in both homes
    def _next(self, s):
        r = (s[0] + s[3]) & 0xFFFFFFFF
        t = (s[1] << 9) & 0xFFFFFFFF
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = ((s[3] << 11) | (s[3] >> 21)) & 0xFFFFFFFF
        return r

    def seed(self, s, seed):
        z = seed & 0xFFFFFFFF
        for i in range(4):
            z = (z + 0x9E3779B9) & 0xFFFFFFFF
            x = z
            x = ((x ^ (x >> 16)) * 0x85EBCA6B) & 0xFFFFFFFF
            x = ((x ^ (x >> 13)) * 0xC2B2AE35) & 0xFFFFFFFF
            s[i] = x ^ (x >> 16)

    def _float(self, s):
        return (self._next(s) >> 8) / 16777216.0

    def uniform(self, s, out, lo, hi):
        for i in range(len(out)):
            out[i] = lo + (hi - lo) * self._float(s)

    def normal(self, s, out):
        i = 0
        n = len(out)
        while i < n:
            u = 2.0 * self._float(s) - 1.0
            v = 2.0 * self._float(s) - 1.0
            q = u * u + v * v
            if q >= 1.0 or q == 0.0:
                continue
            f = (-2.0 * _log(q) / q) ** 0.5
            out[i] = u * f
            i += 1
            if i < n:
                out[i] = v * f
                i += 1

    def randint(self, s, out, n):
        for i in range(len(out)):
            k = int(self._float(s) * n)
            out[i] = k if k < n else n - 1

    def push(self, rep, pos, s, a, r, nd, s2):
        o, na = len(s), len(a)
        row = pos * (2 * o + na + 2)
        for i in range(o):
            rep[row + i] = s[i]
            rep[row + o + na + 2 + i] = s2[i]
        for i in range(na):
            rep[row + o + i] = a[i]
        rep[row + o + na] = r
        rep[row + o + na + 1] = nd

    def gather(self, rep, idx, n_stored, sa, r, nd, s2):
        B = len(idx)
        o = len(s2) // B
        na = len(sa) // B - o
        rl = 2 * o + na + 2
        for k in range(B):
            if idx[k] >= n_stored:
                raise ValueError("idx entry: expected < %d (rows stored), got %d" % (n_stored, idx[k]))
            row = idx[k] * rl
            for i in range(o + na):
                sa[i * B + k] = rep[row + i]
            r[k] = rep[row + o + na]
            nd[k] = rep[row + o + na + 1]
            for i in range(o):
                s2[i * B + k] = rep[row + o + na + 2 + i]


def _tanh(x):
    import math
    return math.tanh(x)


def _log(x):
    import math
    return math.log(x)


def kernels(prefer=None):
    """The training kernels: 'native' (nm_train, else nm_train_natmod) or 'python'."""
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
    return PyKernels()


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
    def __init__(self, profile="teensy41", seed=0, kernels_=None, check_memory=True, **overrides):
        if isinstance(profile, str):
            if profile not in PROFILES:
                raise ValueError("unknown profile %r (profiles: %s)" % (profile, ", ".join(sorted(PROFILES))))
            self.profile_name = profile
            prof = PROFILES[profile]
        else:
            self.profile_name = "custom"
            prof = profile
        self.cfg = dict(DEFAULTS)
        for k, v in overrides.items():
            if k not in self.cfg:
                raise ValueError("unknown TD3 setting %r" % k)
            self.cfg[k] = v
        self.env = env = Pendulum()
        o, na = env.obs_dim, env.act_dim
        self.o, self.na = o, na
        h = list(prof["hidden"])
        B = self.B = prof["batch"]
        self.capacity = prof["replay"]
        self.plan = plan(prof, o, na, self.cfg["critic_batches"])
        free = _mem_free()
        self.mem_free_before = free
        self.heap_base = _mem_alloc()  # live heap before the trainer (interpreter, modules)
        if check_memory and free is not None and self.plan["bytes"] > free:
            raise ProfileTooLarge(
                "profile %s needs about %d bytes (%d floats of buffers + %d of objects), "
                "this board has %d bytes free; use a smaller profile"
                % (self.profile_name, self.plan["bytes"], self.plan["floats"], OVERHEAD, free))
        self.K = K = kernels_ if kernels_ is not None else kernels()
        self.seed = seed
        a0 = _mem_alloc()

        def _zeros(n):
            # array('f', range(n)) is allocated at its final size (no temporary copy); then zeroed
            a = array("f", range(n))
            K.fill(a, 0.0)
            return a

        self.sa_sizes = [o] + h + [na]
        self.sc_sizes = [o + na] + h + [1]
        self.la = layout(self.sa_sizes, [RELU] * len(h) + [TANH])
        self.lc = layout(self.sc_sizes, [RELU] * len(h) + [IDENTITY])
        pa, pc = net_size(self.sa_sizes), net_size(self.sc_sizes)
        self.pa, self.pc = pa, pc

        # networks, targets, Adam moments; the twin critics share one vector each
        self.actor, self.actor_t, self.actor_m, self.actor_v = (_zeros(pa) for _ in range(4))
        self.critic, self.critic_t, self.critic_m, self.critic_v = (_zeros(2 * pc) for _ in range(4))
        self.grad = _zeros(max(pa, pc))
        mv = memoryview
        self.grad_a = mv(self.grad)[:pa]
        self.grad_c = mv(self.grad)[:pc]
        self.c = [mv(self.critic)[:pc], mv(self.critic)[pc:]]
        self.ct = [mv(self.critic_t)[:pc], mv(self.critic_t)[pc:]]
        self.cm = [mv(self.critic_m)[:pc], mv(self.critic_m)[pc:]]
        self.cv = [mv(self.critic_v)[:pc], mv(self.critic_v)[pc:]]
        cfg = self.cfg
        self.adam_a = array("f", [cfg["actor_lr"], 0.9, 0.999, 1e-8, 1.0, 1.0])
        self.adam_c = [array("f", [cfg["critic_lr"], 0.9, 0.999, 1e-8, 1.0, 1.0]) for _ in range(2)]

        # replay and minibatch (feature-major: row i = feature i of every sample)
        self.row = 2 * o + na + 2
        self.replay = _zeros(self.capacity * self.row)
        self.pos = 0
        self.stored = 0
        nb = self.nb = cfg["critic_batches"]
        if nb not in (1, 2):
            raise ValueError("critic_batches must be 1 or 2, got %r" % (nb,))
        self.idx = array("I", bytearray(4 * nb * B))
        self.idx_c = [mv(self.idx)[c * B:(c + 1) * B] for c in range(nb)]
        self.sas = [_zeros((o + na) * B) for _ in range(nb)]   # [s; a] of each minibatch
        self.sa = self.sas[0]
        self.x2 = _zeros((o + na) * B)          # [s'; a'] for the target critics
        self.xa = self.x2                       # [s; pi(s)] for the actor loss (x2 is free by then)
        self.dxc = _zeros((o + na) * B)         # dQ1/d[s; a]
        self.x2_s = mv(self.x2)[:o * B]
        self.x2_a = mv(self.x2)[o * B:]
        self.xa_s = mv(self.xa)[:o * B]
        self.dxc_a = mv(self.dxc)[o * B:]
        self.rs = [_zeros(B) for _ in range(nb)]
        self.nds = [_zeros(B) for _ in range(nb)]
        self.ys = [_zeros(B) for _ in range(nb)]
        self.r, self.nd, self.y = self.rs[0], self.nds[0], self.ys[0]
        self.dq = _zeros(B)
        self.q1 = self.dq                       # Q1'(s', a') until the Bellman target is formed
        self.noise = _zeros(nb * na * B)
        self.noise_c = [mv(self.noise)[c * na * B:(c + 1) * na * B] for c in range(nb)]
        self.loss = _zeros(1)
        self.tape_a = _zeros(tape_size(self.sa_sizes, B))
        self.tape_c = _zeros(tape_size(self.sc_sizes, B))
        self.a_out = len(self.tape_a) - na * B    # actor output offset in its tape
        self.q_view = mv(self.tape_c)[len(self.tape_c) - B:]
        self.scratch = _zeros(max(scratch_size(self.sa_sizes, B), scratch_size(self.sc_sizes, B),
                                  packed_size(self.sa_sizes)))
        # acting: one sample
        self.tape_1 = _zeros(tape_size(self.sa_sizes, 1))
        self.a1_out = len(self.tape_1) - na
        self.obs = _zeros(o)
        self.obs2 = _zeros(o)
        self.act = _zeros(na)
        self.n1 = _zeros(na)
        self.u1 = _zeros(1)
        self.packed = memoryview(self.scratch)[:packed_size(self.sa_sizes)]  # export only
        self.rng = array("I", [0, 0, 0, 0])
        K.seed(self.rng, seed)
        self.heap_setup = _mem_alloc() - a0
        self.heap_peak = _mem_alloc()

        # initialisation: PyTorch's nn.Linear default U(-1/sqrt(fan_in), 1/sqrt(fan_in))
        self._init(self.actor, self.sa_sizes)
        for c in self.c:
            self._init(c, self.sc_sizes)
        K.copy(self.actor_t, 0, self.actor, 0, pa)
        K.copy(self.critic_t, 0, self.critic, 0, 2 * pc)

        self.steps = 0
        self.updates = 0
        self.ep_return = 0.0
        self.ep_len = 0
        self.returns = []  # finished training episodes (most recent last, bounded)
        self.episodes = 0
        self._reset_env()

    # --- helpers -------------------------------------------------------------
    def _uniform(self, lo, hi):
        self.K.uniform(self.rng, self.u1, lo, hi)
        return self.u1[0]

    def _init(self, net, sizes):
        K, off = self.K, 0
        for i in range(len(sizes) - 1):
            n = (sizes[i] + 1) * sizes[i + 1]
            bound = 1.0 / sizes[i] ** 0.5
            K.uniform(self.rng, memoryview(net)[off:off + n], -bound, bound)
            off += n

    def _reset_env(self):
        obs = self.env.reset(self._uniform)
        self.K.copy(self.obs, 0, obs, 0, self.o)
        self.ep_return = 0.0
        self.ep_len = 0

    def policy_action(self, obs, out):
        """Deterministic action in [-1, 1] for obs (array('f')) into out."""
        self.K.forward(self.actor, self.la, obs, self.tape_1)
        self.K.copy(out, 0, self.tape_1, self.a1_out, self.na)
        return out

    # --- one environment step (and one TD3 update once learning started) ---
    def step(self):
        K, cfg, env = self.K, self.cfg, self.env
        if self.steps < cfg["learning_starts"]:
            K.uniform(self.rng, self.act, -1.0, 1.0)
        else:
            self.policy_action(self.obs, self.act)
            K.normal(self.rng, self.n1)
            K.smooth(self.act, self.n1, cfg["exploration_noise"], 1e30)
        reward = env.step(self.act[0] * env.action_scale + env.action_offset)
        K.push(self.replay, self.pos, self.obs, self.act, reward, 1.0, env.obs)
        self.pos += 1
        if self.pos == self.capacity:
            self.pos = 0
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
            K.copy(self.obs, 0, env.obs, 0, self.o)
        if self.steps >= cfg["learning_starts"]:
            self.update(self.steps % cfg["policy_delay"] == 0)
        self.steps += 1

    def sample(self):
        """Draw the minibatch indices and the target policy noise."""
        self.K.randint(self.rng, self.idx, self.stored)
        self.K.normal(self.rng, self.noise)

    def update(self, actor=True, sample=True):
        """One TD3 update: both critics, then (if actor) the actor and the targets.
        With sample=False it uses self.idx and self.noise as they are (tests)."""
        K, cfg, B, o, na = self.K, self.cfg, self.B, self.o, self.na
        if sample:
            self.sample()
        for c in range(self.nb):
            K.gather(self.replay, self.idx_c[c], self.stored, self.sas[c], self.rs[c], self.nds[c], self.x2_s)
            # a' = clip(pi'(s') + clip(noise * 0.2, -0.5, 0.5), -1, 1)
            K.forward(self.actor_t, self.la, self.x2_s, self.tape_a)
            K.copy(self.x2, o * B, self.tape_a, self.a_out, na * B)
            K.smooth(self.x2_a, self.noise_c[c], cfg["policy_noise"], cfg["noise_clip"])
            # y = r + gamma * not_done * min(Q1'(s', a'), Q2'(s', a'))
            K.forward(self.ct[0], self.lc, self.x2, self.tape_c)
            K.copy(self.q1, 0, self.q_view, 0, B)
            K.forward(self.ct[1], self.lc, self.x2, self.tape_c)
            K.bellman(self.ys[c], self.q1, self.q_view, self.rs[c], self.nds[c], cfg["gamma"])
        # each critic regresses on its y (independent parameters: one after the other)
        scale = 2.0 / B
        for k in (0, 1):
            b = k if self.nb == 2 else 0
            K.forward(self.c[k], self.lc, self.sas[b], self.tape_c)
            K.critic_grad(self.dq, self.q_view, self.ys[b], scale, self.loss)
            K.backward(self.c[k], self.lc, self.sas[b], self.tape_c, self.dq, self.grad_c, None, self.scratch)
            K.adam(self.c[k], self.grad_c, self.cm[k], self.cv[k], self.adam_c[k])
        if actor:
            # maximise Q1(s, pi(s)): dL/dQ1 = -1/B
            K.copy(self.xa, 0, self.sa, 0, o * B)
            K.forward(self.actor, self.la, self.xa_s, self.tape_a)
            K.copy(self.xa, o * B, self.tape_a, self.a_out, na * B)
            K.forward(self.c[0], self.lc, self.xa, self.tape_c)
            K.fill(self.dq, -1.0 / B)
            K.backward(self.c[0], self.lc, self.xa, self.tape_c, self.dq, None, self.dxc, self.scratch)
            K.backward(self.actor, self.la, self.xa_s, self.tape_a, self.dxc_a, self.grad_a, None, self.scratch)
            K.adam(self.actor, self.grad_a, self.actor_m, self.actor_v, self.adam_a)
            K.polyak(self.actor_t, self.actor, cfg["tau"])
            K.polyak(self.critic_t, self.critic, cfg["tau"])
        self.updates += 1

    # --- training loop, evaluation, export -----------------------------------
    def recent_return(self):
        return sum(self.returns) / len(self.returns) if self.returns else None

    def train(self, steps, report=None, every=500):
        """Run until self.steps == steps; report(info) every `every` steps and at the end."""
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
        alloc = _mem_alloc()
        if alloc > self.heap_peak:
            self.heap_peak = alloc
        dt = _diff(now, last_t) if _diff else 0
        info = {
            "step": self.steps, "episodes": self.episodes, "recent_return": self.recent_return(),
            "steps_per_s": (1000.0 * (self.steps - last_s) / dt) if dt > 0 else None,
            "critic_loss": self.loss[0],
        }
        if gc is not None and hasattr(gc, "mem_free"):
            gc.collect()
            live = gc.mem_alloc()
            if live > self.heap_live_peak():
                self._live_peak = live
            info["mem_free"] = gc.mem_free()
            info["heap_live"] = live
            info["heap_live_peak"] = self._live_peak
            info["heap_peak"] = self._live_peak - self.heap_base
        return info

    def heap_live_peak(self):
        return getattr(self, "_live_peak", 0)

    def evaluate(self, episodes=10, seed=12345):
        """Mean deterministic return over `episodes` episodes (own reset stream)."""
        env = Pendulum()
        st = array("I", [0, 0, 0, 0])
        self.K.seed(st, seed)
        u = self.u1

        def uniform(lo, hi):
            self.K.uniform(st, u, lo, hi)
            return u[0]

        total = 0.0
        obs = self.obs2
        act = self.n1
        for _ in range(episodes):
            env.reset(uniform)
            ret = 0.0
            for _ in range(env.max_episode_steps):
                self.K.copy(obs, 0, env.obs, 0, self.o)
                self.policy_action(obs, act)
                ret += env.step(act[0] * env.action_scale + env.action_offset)
            total += ret
        return total / episodes

    def policy_bytes(self):
        """The trained actor as a policy file (docs/policy-format.md)."""
        sizes = self.sa_sizes
        L = len(sizes) - 1
        self.K.pack(self.packed, self.actor, self.la)
        o, na = self.o, self.na
        n_floats = 2 * o + len(self.packed) + 2 * na
        hlen = (16 + 2 * (L + 1) + L + 3) & ~3
        head = struct.pack("<4sHHHHI", b"NMPL", 1, hlen, L, 0, n_floats)
        table = struct.pack("<%dH" % (L + 1), *sizes) + bytes([RELU] * (L - 1) + [TANH])
        pre = array("f", [0.0] * o + [1.0] * o)
        post = array("f", [self.env.action_scale] * na + [self.env.action_offset] * na)
        body = head + table + bytes(hlen - 16 - len(table)) + bytes(pre) + bytes(self.packed) + bytes(post)
        return body + struct.pack("<I", _crc32(body))

    def save_policy(self, path=POLICY_PATH):
        data = self.policy_bytes()
        tmp = path + ".nmtmp"
        with open(tmp, "wb") as f:
            f.write(data)
        try:
            import os
            try:
                os.remove(path)
            except OSError:
                pass
            os.rename(tmp, path)
        except ImportError:  # pragma: no cover
            path = tmp
        return path, len(data)


def _crc32(data):
    try:
        import nm_kernels
        return nm_kernels.crc32(data)
    except ImportError:
        pass
    try:
        import binascii
        return binascii.crc32(data) & 0xFFFFFFFF
    except (ImportError, AttributeError):
        pass
    from neuromotor_rt import _crc32_python  # imported only where nothing faster exists
    return _crc32_python(data)


# ----------------------------------------------------------------------------
# NMB/1 server (nm_link) for `neuromotor train-on-device`
def _json(obj):
    try:
        import json
    except ImportError:  # pragma: no cover
        import ujson as json
    return json.dumps(obj)


class Server(nm_link.Server):
    def __init__(self):
        self.trainer = None
        self.policy = None

    def cmd_hello(self, args):
        impl = sys.implementation
        return _json({"proto": PROTO, "server": "nm_td3", "impl": impl.name, "platform": sys.platform,
                      "version": ".".join(str(v) for v in impl.version[:3]),
                      "mem_free": _mem_free(), "profiles": {k: plan(k)["bytes"] for k in PROFILES}})

    def cmd_train_custom(self, args):
        # train_custom <h1> <h2> <batch> <replay> <steps> <seed> [every] [eval_episodes]
        prof = {"hidden": (int(args[0]), int(args[1])), "batch": int(args[2]), "replay": int(args[3])}
        return self.cmd_train([prof] + list(args[4:]))

    def cmd_train(self, args):
        # train <profile> <steps> <seed> [every] [eval_episodes]: progress lines, then done
        profile = args[0]
        steps, seed = int(args[1]), int(args[2])
        every = int(args[3]) if len(args) > 3 else 500
        episodes = int(args[4]) if len(args) > 4 else 10
        self.trainer = None
        self.policy = None
        # a board without native training kernels would take hours: refuse, do not crawl
        t = Trainer(profile, seed=seed, kernels_=kernels("native"))
        self.trainer = t
        info = {"profile": t.profile_name, "steps": steps, "seed": seed, "kernels": getattr(t.K, "HOME", "?"),
                "plan_bytes": t.plan["bytes"], "mem_free_before": t.mem_free_before,
                "heap_setup": t.heap_setup, "hidden": list(t.sa_sizes[1:-1]), "batch": t.B,
                "replay": t.capacity}
        send("-", "started", _json(info))
        t0 = _ticks_ms() if _ticks_ms else 0
        t.train(steps, report=lambda i: send("-", "progress", _json(i)), every=every)
        wall_ms = _diff(_ticks_ms(), t0) if _ticks_ms else 0
        ret = t.evaluate(episodes) if episodes > 0 else None
        data = t.policy_bytes()
        self.policy = data
        saved = None
        try:
            saved = t.save_policy()[0]
        except OSError:
            pass
        return _json({"step": t.steps, "eval_return": ret, "eval_episodes": episodes, "wall_ms": wall_ms,
                      "policy_bytes": len(data), "policy_crc": _crc32(data), "policy_path": saved,
                      "heap_live_peak": t.heap_live_peak(), "heap_setup": t.heap_setup,
                      "heap_peak": t.heap_live_peak() - t.heap_base, "heap_base": t.heap_base,
                      "mem_free_before": t.mem_free_before, "recent_return": t.recent_return(),
                      "updates": t.updates})

    def cmd_policy(self, args):
        # policy <offset> <n>: n bytes of the trained policy file from offset, as hex
        if self.policy is None:
            raise ValueError("no trained policy: send 'train' first")
        off, n = int(args[0]), int(args[1])
        from binascii import hexlify
        return hexlify(self.policy[off:off + n]).decode()


def serve():
    Server().serve()

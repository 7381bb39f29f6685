# nm_rt_python: the python backend of neuromotor_rt (plain Python, works everywhere,
# slow), float32 (dense and GRU layers) and int8, and what the ulab backend shares
# with it: the observation check, the activations, the GRU gates and the clamped
# store; and CRC-32 for boards with neither kernels nor binascii.
# neuromotor_rt imports it only when it needs one of these.
import struct
from array import array

from neuromotor_rt import BLOCK, GRU, Policy, layer_size

from math import exp

try:
    from math import tanh
except ImportError:

    def tanh(v):
        if v > 20.0:
            return 1.0
        if v < -20.0:
            return -1.0
        e = exp(2.0 * v)
        return (e - 1.0) / (e + 1.0)


def sigmoid(v):
    # exp(-v) past 80 would overflow float32 boards; the sigmoid is 0 there to float32.
    return 1.0 / (1.0 + exp(-v)) if v > -80.0 else 0.0


def fast_tanh(v):
    v = -3.0 if v < -3.0 else 3.0 if v > 3.0 else v
    return v * (27.0 + v * v) / (27.0 + 9.0 * v * v)


# Activation code -> function (identity and relu are done inline).
ACT_FUNCS = (None, None, tanh, sigmoid, fast_tanh)


def gru_gates(gi, gh, h):
    """h' = (1 - z) n + z h from the gate pre-activations gi = W_i x + b_i, gh = W_h h + b_h."""
    hd = len(h)
    out = []
    for i in range(hd):
        r = sigmoid(gi[i] + gh[i])
        z = sigmoid(gi[hd + i] + gh[hd + i])
        n = tanh(gi[2 * hd + i] + r * gh[2 * hd + i])
        out.append((1.0 - z) * n + z * h[i])
    return out


def finite_obs(obs, n):
    """obs as a list of n floats; ValueError (as the native kernels) for a non-finite one."""
    if len(obs) != n:
        raise ValueError("obs: expected %d floats, got %d" % (n, len(obs)))
    x = [float(v) for v in obs]
    for i in range(n):
        if x[i] - x[i] != 0.0:
            raise ValueError("obs[%d] is not finite" % i)
    return x


def store(out, y, clamp):
    """out[i] = y[i], clamped into [clamp[i], clamp[n + i]] when there are limits; a NaN
    becomes the midpoint lo/2 + hi/2 (nm_clamp in nm_kernels.h does the same)."""
    n = len(out)
    for i in range(n):
        v = y[i]
        if clamp is not None:
            lo, hi = clamp[i], clamp[n + i]
            if v != v:
                v = 0.5 * lo + 0.5 * hi
            elif v < lo:
                v = lo
            elif v > hi:
                v = hi
        out[i] = v
    return out


def crc32_python(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def dense(net, off, x, n_out):
    """W x + b of the block-4 layer at net[off:], as a list of n_out floats."""
    stride = BLOCK * (len(x) + 1)
    y = []
    for blk in range((n_out + BLOCK - 1) // BLOCK):
        k = off + blk * stride
        a0, a1, a2, a3 = net[k], net[k + 1], net[k + 2], net[k + 3]
        for xj in x:
            k += BLOCK
            a0 += net[k] * xj
            a1 += net[k + 1] * xj
            a2 += net[k + 2] * xj
            a3 += net[k + 3] * xj
        y.append(a0)
        y.append(a1)
        y.append(a2)
        y.append(a3)
    del y[n_out:]
    return y


class PythonPolicy(Policy):
    name = "python"

    def __call__(self, obs):
        net, sizes, state = self.net, self.sizes, self.state
        s0 = sizes[0]
        x = finite_obs(obs, s0)
        for i in range(s0):
            x[i] = (x[i] - net[i]) / net[s0 + i]
        off, st = 2 * s0, 0
        for li in range(len(self.acts)):
            n_in, n_out, act = sizes[li], sizes[li + 1], self.acts[li]
            if act == GRU:
                gi = dense(net, off, x, 3 * n_out)
                h = [state[st + i] for i in range(n_out)]
                off += layer_size(n_in, 3 * n_out)
                x = gru_gates(gi, dense(net, off, h, 3 * n_out), h)
                for i in range(n_out):
                    state[st + i] = x[i]
                st += n_out
                off += layer_size(n_out, 3 * n_out) + n_out
                continue
            x = dense(net, off, x, n_out)
            if act == 1:
                x = [v if v > 0.0 else 0.0 for v in x]
            elif act >= 2:
                f = ACT_FUNCS[act]
                x = [f(v) for v in x]
            off += layer_size(n_in, n_out)
        sl = sizes[-1]
        for i in range(sl):
            x[i] = x[i] * net[off + i] + net[off + sl + i]
        return store(self.out, x, self.clamp)


def _f32(v, _r=array("f", [0.0])):
    """v rounded to float32 (a no-op where MicroPython's float is float32)."""
    _r[0] = v
    return _r[0]


class PythonQ8Policy(Policy):
    """An int8 policy in plain Python: nm_int8.h's integer arithmetic (Python ints are
    exact), its float32 steps rounded through an array('f'); tanh is math's."""

    name = "python"

    def __init__(self, sizes, acts, net, clamp=None):
        from nm_rt_q8 import pad4, q8_layer_bytes

        Policy.__init__(self, sizes, acts, net, clamp)
        s0, sl, n = sizes[0], sizes[-1], len(acts)
        head = struct.unpack_from("<%df" % (2 * s0), net, 0)
        self.mean, self.mul = head[:s0], head[s0:2 * s0]
        self.layers = []
        off = 8 * s0
        for li in range(n):
            n_in, n_out = sizes[li], sizes[li + 1]
            cols, rows = pad4(n_in), pad4(n_out)
            raw = struct.unpack_from("<%db" % (rows * cols), net, off)
            w = []
            for r in range(n_out):  # block r // 4, row r % 4 of each group of 4 inputs
                base = (r // 4) * 4 * cols + (r % 4) * 4
                w.append([raw[base + (j // 4) * 16 + j % 4] for j in range(n_in)])
            off_b = off + rows * cols
            bias = struct.unpack_from("<%di" % n_out, net, off_b)
            if li < n - 1:
                extra = (struct.unpack_from("<%di" % n_out, net, off_b + 4 * rows),
                         struct.unpack_from("<i", net, off_b + 8 * rows)[0])
            else:
                extra = struct.unpack_from("<%df" % n_out, net, off_b + 4 * rows)
            self.layers.append((w, bias, extra, acts[li]))
            off += q8_layer_bytes(n_in, n_out, li == n - 1)
        tail = struct.unpack_from("<%df" % (2 * sl), net, off)
        self.scale, self.offset = tail[:sl], tail[sl:]

    def __call__(self, obs):
        x = finite_obs(obs, self.obs_dim)
        q = []
        for i in range(self.obs_dim):
            t = _f32(_f32(x[i] - self.mean[i]) * self.mul[i])
            v = int(abs(t) + 0.5) if abs(t) < 32767.0 else 32767  # exact: t has 24 bits, a float 53
            q.append(-v if t < 0.0 else v)
        n = len(self.layers)
        for li in range(n):
            w, bias, extra, act = self.layers[li]
            accs = [bias[r] + sum(wr[j] * q[j] for j in range(len(q))) for r, wr in enumerate(w)]
            if li == n - 1:
                break
            mult, r = extra
            lo, hi, rnd = (0 if act == 1 else -32768), 32767, (1 << r) >> 1
            q = []
            for c in range(len(accs)):
                v = (((accs[c] * mult[c] + (1 << 31)) >> 32) + rnd) >> r
                q.append(lo if v < lo else hi if v > hi else v)
        y = []
        for c in range(len(accs)):
            v = _f32(_f32(accs[c]) * extra[c])
            if act == 1:
                v = v if v > 0.0 else 0.0
            elif act == 2:
                v = _f32(tanh(v))
            y.append(_f32(_f32(v * self.scale[c]) + self.offset[c]))
        return store(self.out, y, self.clamp)


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


def _q8_rows(net, off, n_rows, n_in):
    """The int8 rows (n_rows lists of n_in) of the block-4 weights at net[off:]."""
    from nm_rt_q8 import pad4

    cols = pad4(n_in)
    raw = struct.unpack_from("<%db" % (pad4(n_rows) * cols), net, off)
    w = []
    for r in range(n_rows):  # block r // 4, row r % 4 of each group of 4 inputs
        base = (r // 4) * 4 * cols + (r % 4) * 4
        w.append([raw[base + (j // 4) * 16 + j % 4] for j in range(n_in)])
    return w


def _sig_exp(d):
    """(significand << 7, exponent field) of float32 d: d = m * 2^(e - 157) (nm_q8_f32_sig)."""
    u = struct.unpack("<I", struct.pack("<f", d))[0]
    ef = (u >> 23) & 0xFF
    return ((u & 0x7FFFFF) | (0x800000 if ef else 0)) << 7, ef or 1


def _q16(v, me, lim=1 << 24):
    """v * deq in Q16, rounded half up, clamped to +-lim (nm_q8_scale on deq's bits)."""
    m, s = me[0], 141 - me[1]
    if s >= 32:
        z = (v * m + (1 << 31)) >> 32
        r = min(s - 32, 31)
        if r:
            z = (z + (1 << (r - 1))) >> r
    else:
        sh = min(32 - s, 31)
        big = 1 << (31 - sh)
        z = lim if v >= big else -lim if v <= -big else ((v << sh) * m + (1 << 31)) >> 32
    return lim if z > lim else -lim if z < -lim else z


def _tanh_q15(z):
    # math's tanh where the kernels interpolate a table (within 6e-5 of it)
    t = int(abs(tanh(z / 65536.0)) * 32768.0 + 0.5)
    return -t if z < 0 else t


def _sig_q15(z):
    v = (32768 + _tanh_q15(z >> 1)) >> 1
    return v if v < 32767 else 32767


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
            if acts[li] == GRU:
                g, k = pad4(3 * n_out), 3 * n_out
                blocks = []
                for cols, at in ((n_in, off), (n_out, off + g * pad4(n_in) + 8 * g)):
                    w = _q8_rows(net, at, k, cols)
                    at += g * pad4(cols)
                    deq = [_sig_exp(d) for d in struct.unpack_from("<%df" % k, net, at + 4 * g)]
                    blocks.append((w, struct.unpack_from("<%di" % k, net, at), deq))
                self.layers.append((blocks, None, None, GRU))
                off += q8_layer_bytes(n_in, n_out, False, GRU)
                continue
            rows = pad4(n_out)
            w = _q8_rows(net, off, n_out, n_in)
            off_b = off + rows * pad4(n_in)
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

    def _gru(self, blocks, q, st):
        """One int8 GRU step (nm_q8_gru_step) on the state at self.state[st:]; its output."""
        from nm_rt_q8 import slot

        state = self.state
        hd = len(blocks[0][0]) // 3
        h = [state[st + slot(i)] for i in range(hd)]
        (wi, bi, di), (wh, bh, dh) = blocks
        ai = [bi[r] + sum(wr[j] * q[j] for j in range(len(q))) for r, wr in enumerate(wi)]
        ah = [bh[r] + sum(wr[j] * h[j] for j in range(hd)) for r, wr in enumerate(wh)]
        out = []
        for i in range(hd):
            r = _sig_q15(_q16(ai[i], di[i]) + _q16(ah[i], dh[i]))
            z = _sig_q15(_q16(ai[hd + i], di[hd + i]) + _q16(ah[hd + i], dh[hd + i]))
            ghn = _q16(ah[2 * hd + i], dh[2 * hd + i])
            n = _tanh_q15(_q16(ai[2 * hd + i], di[2 * hd + i]) + ((2 * ghn * (r << 16) + (1 << 31)) >> 32))
            v = n + ((z * (h[i] - n) + 16384) >> 15)
            v = -32768 if v < -32768 else 32767 if v > 32767 else v
            state[st + slot(i)] = v
            out.append(v)
        return out

    def __call__(self, obs):
        from nm_rt_q8 import pad4

        x = finite_obs(obs, self.obs_dim)
        q = []
        for i in range(self.obs_dim):
            t = _f32(_f32(x[i] - self.mean[i]) * self.mul[i])
            v = int(abs(t) + 0.5) if abs(t) < 32767.0 else 32767  # exact: t has 24 bits, a float 53
            q.append(-v if t < 0.0 else v)
        n, st = len(self.layers), 0
        for li in range(n):
            w, bias, extra, act = self.layers[li]
            if act == GRU:
                q = self._gru(w, q, st)
                st += pad4(len(q))
                continue
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

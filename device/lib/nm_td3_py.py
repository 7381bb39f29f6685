# nm_td3_py: nm_train's training kernels in plain Python, for boards without the native
# module. The same functions, argument order and float32 results (every array is an
# array('f')), hundreds of times slower: nm_td3 imports this module only when neither
# nm_train nor nm_train_natmod exists, so boards that have one never load it.
from math import log as _log, tanh as _tanh
from struct import pack as _pack, unpack as _unpack

from nm_td3_plan import RELU, TANH, net_size, scratch_size, tape_size


class Kernels:
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

    # A replay of halves is an array('H') (its items are ints); nm_half.h's rounding.
    def push(self, rep, pos, s, a, r, nd, s2):
        o, na = len(s), len(a)
        row = pos * (2 * o + na + 2)
        put = _half_of if isinstance(rep[0], int) else float
        for i in range(o):
            rep[row + i] = put(s[i])
            rep[row + o + na + 2 + i] = put(s2[i])
        for i in range(na):
            rep[row + o + i] = put(a[i])
        rep[row + o + na] = put(r)
        rep[row + o + na + 1] = put(nd)

    def gather(self, rep, idx, n_stored, sa, r, nd, s2):
        B = len(idx)
        o = len(s2) // B
        na = len(sa) // B - o
        rl = 2 * o + na + 2
        get = _float_of_half if isinstance(rep[0], int) else float
        for k in range(B):
            if idx[k] >= n_stored:
                raise ValueError("idx entry: expected < %d (rows stored), got %d" % (n_stored, idx[k]))
            row = idx[k] * rl
            for i in range(o + na):
                sa[i * B + k] = get(rep[row + i])
            r[k] = get(rep[row + o + na])
            nd[k] = get(rep[row + o + na + 1])
            for i in range(o):
                s2[i * B + k] = get(rep[row + o + na + 2 + i])


def _shift_round_even(m, shift):
    kept, rest, half = m >> shift, m & ((1 << shift) - 1), 1 << (shift - 1)
    return kept + (rest > half or (rest == half and kept & 1))


def _half_of(v):
    """binary16 bits of float v, as nm_half.h rounds it (ties to even, saturating at 65504)."""
    u = _unpack("<I", _pack("<f", v))[0]
    a, sign = u & 0x7FFFFFFF, (u >> 16) & 0x8000
    if a >= 0x7F800000:
        return sign | 0x7C00 | (0x200 if a > 0x7F800000 else 0)
    if a >= 0x477FF000:
        return sign | 0x7BFF
    if a >= 0x38800000:
        return sign | _shift_round_even(a - 0x38000000, 13)
    if a < 0x33000000:
        return sign
    return sign | _shift_round_even((a & 0x7FFFFF) | 0x800000, 126 - (a >> 23))


def _float_of_half(h):
    sign, e, m = (h & 0x8000) << 16, (h >> 10) & 0x1F, h & 0x3FF
    if e == 0x1F:
        u = sign | 0x7F800000 | (m << 13)
    elif e == 0 and m == 0:
        u = sign
    else:
        if e == 0:
            e = 1
            while not m & 0x400:
                m <<= 1
                e -= 1
            m &= 0x3FF
        u = sign | ((e + 112) << 23) | (m << 13)
    return _unpack("<f", _pack("<I", u))[0]

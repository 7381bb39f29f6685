# nm_rt_q8: an int8 policy's sizes, value checks and recurrent state (nm_int8.h's qnet),
# for neuromotor_rt; imported only when a policy is int8.
import struct
from array import array

from neuromotor_rt import PolicyValueError, check_clamp, ACTIVATIONS, GRU


def pad4(n):
    return (n + 3) & ~3


def q8_layer_bytes(n_in, n_out, last, code=0):
    if code == GRU:  # input block, hidden block (3H rows each), then h0 as int16
        g = pad4(3 * n_out)
        return g * pad4(n_in) + 8 * g + g * pad4(n_out) + 8 * g + 2 * pad4(n_out)
    return pad4(n_out) * pad4(n_in) + 8 * pad4(n_out) + (0 if last else 4)


def q8_net_bytes(sizes, codes=None):
    """Bytes of an int8 net (nm_int8.h's qnet)."""
    n = len(sizes) - 1
    total = 8 * sizes[0] + 8 * sizes[-1]
    for i in range(n):
        total += q8_layer_bytes(sizes[i], sizes[i + 1], i == n - 1, codes[i] if codes else 0)
    return total


def q8_state_parts(sizes, codes):
    """(state offset in int16s, byte offset of h0 in the net, hidden size) of each GRU layer;
    a layer's state takes pad4(H) int16s (pair order, as every int8 activation vector)."""
    parts, off, st, n = [], 8 * sizes[0], 0, len(codes)
    for i in range(n):
        n_in, n_out = sizes[i], sizes[i + 1]
        if codes[i] == GRU:
            parts.append((st, off + q8_layer_bytes(n_in, n_out, False, GRU) - 2 * pad4(n_out), n_out))
            st += pad4(n_out)
        off += q8_layer_bytes(n_in, n_out, i == n - 1, codes[i])
    return parts


def slot(i):
    """Where value i sits in an int16 activation vector (pair order: 0, 2, 1, 3 per group)."""
    return (i & ~3) | ((i & 1) << 1) | ((i >> 1) & 1)


def q8_state(sizes, codes):
    """(q8_state_parts, the state: array('h') of their padded sizes)."""
    parts = q8_state_parts(sizes, codes)
    return parts, array("h", range(sum(pad4(hd) for _, _, hd in parts)))


def q8_reset(state, net, parts):
    """Every GRU layer's state back to its h0 (pair order, padding 0)."""
    for st, h0, hd in parts:
        for i in range(pad4(hd)):
            state[st + slot(i)] = struct.unpack_from("<h", net, h0 + 2 * i)[0] if i < hd else 0


def _check_rows(net, off, n, li, what, deq_name):
    # n int32 biases at off, then (after pad4(n) of them) n float32 scales: the GRU blocks'.
    for c, b in enumerate(struct.unpack_from("<%di" % n, net, off)):
        if not -(1 << 24) <= b <= 1 << 24:
            raise PolicyValueError("layer %d: GRU %s[%d] outside -2^24..2^24" % (li, what, c))
    for c, d in enumerate(struct.unpack_from("<%df" % n, net, off + 4 * pad4(n))):
        if d - d != 0.0:
            raise PolicyValueError("policy has non-finite values: layer %d %s" % (li, deq_name))
        if not d > 0.0:
            raise PolicyValueError("layer %d: GRU scale %s[%d] must be positive, got %r" % (li, deq_name, c, d))


def check_q8_values(sizes, acts, net, clamp):
    """Raise PolicyValueError for what nm_q8_check refuses (the host's messages)."""
    n = len(acts)
    for i in range(n):
        if acts[i] > 2 and acts[i] != GRU:
            raise PolicyValueError("layer %d: an int8 layer is identity, relu, tanh or a GRU, not %s"
                                   % (i, ACTIVATIONS[acts[i]] if acts[i] < len(ACTIVATIONS) else acts[i]))
    if acts[-1] == GRU:
        raise PolicyValueError("the last layer of an int8 policy is dense, not a GRU")
    if len(net) != q8_net_bytes(sizes, acts):
        raise PolicyValueError("int8 net has %d bytes, sizes %r need %d" % (len(net), sizes, q8_net_bytes(sizes, acts)))
    if max(sizes[:-1]) > 512:
        raise PolicyValueError("an int8 layer takes at most 512 inputs, this one %d (its int32 accumulators "
                               "could overflow)" % max(sizes[:-1]))
    for i in range(n - 1):
        if acts[i] > 1 and acts[i] != GRU:
            raise PolicyValueError("layer %d: an int8 hidden layer is identity or relu, not %s" % (i, ACTIVATIONS[acts[i]]))
    s0, sl = sizes[0], sizes[-1]
    head = struct.unpack_from("<%df" % (2 * s0), net, 0)
    for i in range(2 * s0):
        v = head[i]
        if v - v != 0.0:
            name = "obs_mean[%d]" % i if i < s0 else "in_mul[%d]" % (i - s0)
            raise PolicyValueError("policy has non-finite values: %s" % name)
    for i in range(s0):
        if not head[s0 + i] > 0.0:
            raise PolicyValueError("in_mul (input multiplier) must be positive, got %r at index %d" % (head[s0 + i], i))
    off = 8 * s0
    for li in range(n):
        n_out, rows = sizes[li + 1], pad4(sizes[li + 1])
        if acts[li] == GRU:
            g = pad4(3 * n_out)
            at = off + g * pad4(sizes[li])
            _check_rows(net, at, 3 * n_out, li, "bias", "deq_i")
            _check_rows(net, at + 8 * g + g * rows, 3 * n_out, li, "hidden bias", "deq_h")
            off += q8_layer_bytes(sizes[li], n_out, False, GRU)
            continue
        off_b = off + rows * pad4(sizes[li])
        for c, b in enumerate(struct.unpack_from("<%di" % n_out, net, off_b)):
            if not -(1 << 24) <= b <= 1 << 24:
                raise PolicyValueError("layer %d: bias[%d] outside -2^24..2^24" % (li, c))
        if li < n - 1:
            for c, m in enumerate(struct.unpack_from("<%di" % n_out, net, off_b + 4 * rows)):
                if m < 1:
                    raise PolicyValueError("layer %d: requantisation multiplier[%d] outside 1..2^31-1" % (li, c))
            r = struct.unpack_from("<i", net, off_b + 8 * rows)[0]
            if not 0 <= r <= 31:
                raise PolicyValueError("layer %d: requantisation shift %d outside 0..31" % (li, r))
        else:
            for c, d in enumerate(struct.unpack_from("<%df" % n_out, net, off_b + 4 * rows)):
                if d - d != 0.0:
                    raise PolicyValueError("policy has non-finite values: deq[%d]" % c)
                if not d > 0.0:
                    raise PolicyValueError("output scale deq[%d] must be positive, got %r" % (c, d))
        off += q8_layer_bytes(sizes[li], n_out, li == n - 1)
    for i, v in enumerate(struct.unpack_from("<%df" % (2 * sl), net, off)):
        if v - v != 0.0:
            name = "action_scale[%d]" % i if i < sl else "action_offset[%d]" % (i - sl)
            raise PolicyValueError("policy has non-finite values: %s" % name)
    check_clamp(sl, clamp)

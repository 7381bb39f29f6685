# nm_rt_q8: an int8 policy's sizes and value checks (nm_int8.h's qnet), for neuromotor_rt;
# imported only when a policy is int8.
import struct

from neuromotor_rt import PolicyValueError, check_clamp, ACTIVATIONS


def pad4(n):
    return (n + 3) & ~3


def q8_layer_bytes(n_in, n_out, last):
    return pad4(n_out) * pad4(n_in) + 8 * pad4(n_out) + (0 if last else 4)


def q8_net_bytes(sizes):
    """Bytes of an int8 net (nm_int8.h's qnet)."""
    n = len(sizes) - 1
    total = 8 * sizes[0] + 8 * sizes[-1]
    for i in range(n):
        total += q8_layer_bytes(sizes[i], sizes[i + 1], i == n - 1)
    return total


def check_q8_values(sizes, acts, net, clamp):
    """Raise PolicyValueError for what nm_q8_check refuses (the host's messages)."""
    if len(net) != q8_net_bytes(sizes):
        raise PolicyValueError("int8 net has %d bytes, sizes %r need %d" % (len(net), sizes, q8_net_bytes(sizes)))
    n = len(acts)
    if max(sizes[:-1]) > 512:
        raise PolicyValueError("an int8 layer takes at most 512 inputs, this one %d (its int32 accumulators "
                               "could overflow)" % max(sizes[:-1]))
    for i in range(n - 1):
        if acts[i] > 1:
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

# nm_rt_where: which parameter of a float32 net a flat index is, for the message of a
# policy with a non-finite value (neuromotor_rt imports it only then).
from neuromotor_rt import any_layer_size


def where(sizes, i, codes=None):
    """Which parameter float i of a net is (for error messages)."""
    s0, sl = sizes[0], sizes[-1]
    for name, n in (("obs_mean", s0), ("obs_std", s0)):
        if i < n:
            return "%s[%d]" % (name, i)
        i -= n
    for li in range(len(sizes) - 1):
        n = any_layer_size(sizes[li], sizes[li + 1], codes[li] if codes else 0)
        if i < n:
            return "layer %d float %d" % (li, i)
        i -= n
    if i < sl:
        return "action_scale[%d]" % i
    return "action_offset[%d]" % (i - sl)

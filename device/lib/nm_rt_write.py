# nm_rt_write: write a policy file on the board (the format of docs/policy-format.md,
# as the host's export writes it), atomically. Used by the trainer (nm_td3) to save
# its actor; neuromotor_rt.write_policy imports it on first use.
import struct

try:
    from micropython import const
except ImportError:

    def const(x):
        return x


try:
    import os
except ImportError:  # pragma: no cover - very small ports
    os = None

from neuromotor_rt import (FORMAT_VERSION, HEADER_FIXED, MAGIC, RECURRENT_VERSION, PolicyValueError, check_values,
                           code_valid, crc32, header_size)

_S_IFMT = const(0xF000)
_S_IFREG = const(0x8000)


def _regular_or_absent(path):
    try:
        mode = os.stat(path)[0]
    except OSError:  # absent: a new file
        return
    if mode & _S_IFMT != _S_IFREG:
        raise ValueError("cannot write %s: not a regular file" % path)


def write_policy(path, sizes, acts, net, clamp=None):
    """Write a policy file (same format as the host's export): version 2 with the
    action limits clamp (lows then highs), version 1 without; version 4 (limits
    required) when a layer is a GRU or a sigmoid or fast_tanh one. The values are
    checked first (PolicyValueError); the file goes to path + ".tmp" and is
    renamed over path, which must be a regular file or absent."""
    n_layers = len(acts)
    if len(sizes) != n_layers + 1:
        raise ValueError("%d sizes for %d layers" % (len(sizes), n_layers))
    version = 1 if clamp is None else FORMAT_VERSION
    if max(acts) >= 3:
        version = RECURRENT_VERSION
        if clamp is None or not all(code_valid(c, version) for c in acts):
            raise PolicyValueError("a version-4 policy needs action limits and layer codes 0..4 or GRU (16), "
                                   "got %r" % (acts,))
    check_values(sizes, net, clamp, acts)
    tmp = path + ".tmp"
    _regular_or_absent(path)
    _regular_or_absent(tmp)
    hlen = header_size(n_layers, version)
    n_floats = len(net) + (0 if clamp is None else len(clamp))
    head = struct.pack("<4sHHHHI", MAGIC, version, hlen, n_layers, 0, n_floats)
    table = struct.pack("<%dH" % (n_layers + 1), *sizes) + bytes(acts)  # then dtype 0 (float32) in version 4
    table += bytes(hlen - HEADER_FIXED - len(table))
    crc = crc32(net, crc32(table, crc32(head)))
    if clamp is not None:
        crc = crc32(clamp, crc)
    with open(tmp, "wb") as f:
        f.write(head)
        f.write(table)
        f.write(net)
        if clamp is not None:
            f.write(clamp)
        f.write(struct.pack("<I", crc))
    try:
        os.rename(tmp, path)
    except OSError:  # FAT will not rename over an existing file
        os.remove(path)
        os.rename(tmp, path)

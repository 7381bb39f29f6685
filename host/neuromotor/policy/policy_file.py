"""The neuromotor policy file (``.nmp``): writer and validating reader.

Specified in docs/policy-format.md; the device reads the same bytes with
device/lib/neuromotor_rt.py. Little-endian throughout:

    offset  size        field
    0       4           magic b"NMPL"
    4       u16         format version (2; version 1 has no action limits; version 3 adds a dtype;
                        version 4 adds GRU layers and the sigmoid and fast_tanh activations)
    6       u16         header length in bytes (payload offset), multiple of 4
    8       u16         layer count L (1..32)
    10      u16         flags (0)
    12      u32         payload length in float32s
    16      u16 x L+1   layer sizes s0..sL
    ...     u8 x L      layer codes: activation (0 identity, 1 relu, 2 tanh; version 4: 3 sigmoid,
                        4 fast_tanh) in the low nibble, kind (version 4: 0 dense, 1 GRU) in the high
    ...     u8          dtype (versions 3 and 4): 0 float32, 1 int8 (version 4: an int8 policy with GRU layers)
    ...     0..3        zero padding to the header length
    hlen    4n bytes    payload: float32: obs_mean, obs_std, packed layers, action_scale,
                        action_offset, action_low, action_high (versions 2 to 4; a GRU layer
                        is its input block, its hidden block, then its initial state);
                        int8: the qnet of nm_int8.h, then action_low, action_high
    end-4   u32         CRC-32 (zlib) of every byte before it
"""

import struct
import zlib
from pathlib import Path

import numpy as np

from neuromotor import reading
from neuromotor.errors import UserError
from neuromotor.policy import quantize
from neuromotor.policy.quantize import QuantizedPolicy, pack_qnet
from neuromotor.policy.spec import ACTIVATIONS, KINDS, InvalidPolicyError, PolicySpec
from neuromotor.safe_write import atomic_write

MAGIC = b"NMPL"
FORMAT_VERSION = 2        # written for a float32 policy with action limits
DTYPE_VERSION = 3         # written for an int8 policy (the first version with a dtype field)
RECURRENT_VERSION = 4     # written for a policy with GRU layers or activations past tanh
VERSIONS = (1, 2, 3, 4)   # read
# activations of versions 1-3 (codes 0-2); float32 MLPs using only these keep those versions' bytes
BASIC_ACTIVATIONS = ACTIVATIONS[:3]
DTYPES = ("float32", "int8")
HEADER_FIXED = 16
MAX_LAYERS = 32
MAX_WIDTH = 65535
BLOCK = 4
_FIXED = struct.Struct("<4sHHHHI")


class PolicyFormatError(UserError, ValueError):
    """The file is not a valid neuromotor policy file."""


class TruncatedPolicyError(PolicyFormatError):
    pass


class BadMagicError(PolicyFormatError):
    pass


class UnsupportedVersionError(PolicyFormatError):
    pass


class ChecksumError(PolicyFormatError):
    pass


class PolicyValueError(PolicyFormatError):
    """Well-formed file, undeployable numbers: NaN/inf, obs_std <= 0, action low > high."""


def header_size(n_layers: int, version: int = FORMAT_VERSION) -> int:
    return (HEADER_FIXED + 2 * (n_layers + 1) + n_layers + (version >= DTYPE_VERSION) + 3) & ~3


def layer_size(n_in: int, n_out: int) -> int:
    return -(-n_out // BLOCK) * BLOCK * (n_in + 1)


def gru_size(n_in: int, n_hidden: int) -> int:
    """Floats of a GRU layer: its input block, its hidden block and its initial state."""
    return layer_size(n_in, 3 * n_hidden) + layer_size(n_hidden, 3 * n_hidden) + n_hidden


def net_size(sizes, codes=None) -> int:
    """Floats of the kernels' net vector (without the limits); `codes` the layer codes (None: all dense)."""
    codes = codes or [0] * (len(sizes) - 1)
    return 2 * sizes[0] + 2 * sizes[-1] + sum((gru_size if c >> 4 else layer_size)(a, b)
                                              for a, b, c in zip(sizes[:-1], sizes[1:], codes))


def layer_code(kind: str, activation: str) -> int:
    """The layer's code byte: kind in the high nibble, activation in the low one."""
    return KINDS.index(kind) << 4 | ACTIVATIONS.index(activation)


def needs_version4(spec) -> bool:
    """Whether a float32 spec has anything versions 1-3 cannot hold (a GRU, sigmoid or fast_tanh)."""
    return any(k != "dense" for k in spec.kinds) or any(a not in BASIC_ACTIVATIONS for a in spec.activations)


def pack_layer(w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-major W (n_out, n_in) and b into the kernels' block-4 layout:
    per block of 4 output rows, the 4 biases then, per input, the 4 weights."""
    n_out, n_in = w.shape
    nb = -(-n_out // BLOCK)
    wp = np.zeros((nb * BLOCK, n_in), np.float32)
    wp[:n_out] = w
    bp = np.zeros(nb * BLOCK, np.float32)
    bp[:n_out] = b
    blocks = np.concatenate([bp.reshape(nb, 1, BLOCK), wp.reshape(nb, BLOCK, n_in).transpose(0, 2, 1)], axis=1)
    return np.ascontiguousarray(blocks, dtype=np.float32).ravel()


def unpack_layer(flat: np.ndarray, n_in: int, n_out: int):
    nb = -(-n_out // BLOCK)
    blocks = np.asarray(flat, np.float32).reshape(nb, n_in + 1, BLOCK)
    b = blocks[:, 0, :].reshape(-1)[:n_out]
    w = blocks[:, 1:, :].transpose(0, 2, 1).reshape(nb * BLOCK, n_in)[:n_out]
    return np.ascontiguousarray(w), np.ascontiguousarray(b)


def pack_net(spec: PolicySpec) -> np.ndarray:
    """The parameter vector nm_kernels' mlp() takes (the payload without the limits)."""
    parts = [spec.obs_mean, spec.obs_std]
    for i, (w, b, kind) in enumerate(zip(spec.weights, spec.biases, spec.kinds)):
        parts.append(pack_layer(w, b))
        if kind == "gru":
            parts += [pack_layer(spec.hidden_weights[i], spec.hidden_biases[i]), spec.initial_hidden[i]]
    parts += [spec.action_scale, spec.action_offset]
    return np.concatenate([np.asarray(p, np.float32).ravel() for p in parts])


def pack_clamp(spec: PolicySpec) -> np.ndarray:
    """action_low then action_high: the `lo_hi` vector nm_clamp takes."""
    return np.concatenate([spec.action_low, spec.action_high]).astype(np.float32)


def layout(spec: PolicySpec) -> list:
    """The uint16 shape descriptor: L, s0..sL, layer codes (activation, and kind in the high nibble)."""
    return [len(spec.weights)] + list(spec.sizes) + codes_of(spec)


def codes_of(spec) -> list:
    return [layer_code(k, a) for k, a in zip(getattr(spec, "kinds", None) or ["dense"] * len(spec.weights),
                                             spec.activations)]


def _check_shape(sizes, n_layers) -> None:
    if n_layers > MAX_LAYERS:
        raise PolicyFormatError(f"{n_layers} layers; the policy format holds at most {MAX_LAYERS}")
    if max(sizes) > MAX_WIDTH:
        raise PolicyFormatError(f"layer width {max(sizes)} exceeds {MAX_WIDTH}")


def _frame(version: int, sizes, codes, payload: bytes, dtype: int = None) -> bytes:
    n_layers = len(sizes) - 1
    hlen = header_size(n_layers, version)
    head = _FIXED.pack(MAGIC, version, hlen, n_layers, 0, len(payload) // 4)
    table = struct.pack(f"<{n_layers + 1}H", *sizes) + bytes(codes)
    if dtype is not None:
        table += bytes([dtype])
    body = head + table + bytes(hlen - HEADER_FIXED - len(table)) + payload
    return body + struct.pack("<I", zlib.crc32(body))


def encode(spec) -> bytes:
    """The file's bytes: version 2 with the spec's action limits, version 1 for a spec
    without them (one read from a version-1 file), version 3 (dtype int8) for a
    QuantizedPolicy, version 4 for a spec with GRU layers, sigmoid or fast_tanh."""
    spec.validate()  # fields may have been reassigned since construction
    sizes = spec.sizes
    _check_shape(sizes, len(spec.weights))
    if isinstance(spec, QuantizedPolicy):
        payload = pack_qnet(spec) + pack_clamp(spec).astype("<f4").tobytes()
        version = RECURRENT_VERSION if spec.recurrent else DTYPE_VERSION
        return _frame(version, sizes, codes_of(spec), payload, DTYPES.index("int8"))
    net = pack_net(spec)
    v4 = needs_version4(spec)
    if v4 and not spec.has_limits:
        raise InvalidPolicyError("a policy with GRU layers, sigmoid or fast_tanh (policy file version 4) "
                                 "needs action limits")
    version = RECURRENT_VERSION if v4 else FORMAT_VERSION if spec.has_limits else 1
    if spec.has_limits:
        net = np.concatenate([net, pack_clamp(spec)])
    return _frame(version, sizes, codes_of(spec), net.astype("<f4").tobytes(), DTYPES.index("float32") if v4 else None)


def decode(data: bytes, name: str = "policy file"):
    """Validate and parse into a PolicySpec (float32) or a QuantizedPolicy (int8); raises a
    PolicyFormatError subclass naming the problem."""
    n = len(data)
    if n < 4:
        raise TruncatedPolicyError(f"{name}: truncated policy file: {n} bytes, not even a magic number")
    if data[:4] != MAGIC:
        raise BadMagicError(f"{name}: not a neuromotor policy file: magic {data[:4]!r}, expected {MAGIC!r}")
    if n < HEADER_FIXED:
        raise TruncatedPolicyError(f"{name}: truncated policy file: {n} bytes, header needs {HEADER_FIXED}")
    _, version, hlen, n_layers, flags, n_words = _FIXED.unpack_from(data)
    if version not in VERSIONS:
        raise UnsupportedVersionError(f"{name}: policy file format version {version}, this neuromotor reads "
                                      f"versions {', '.join(str(v) for v in VERSIONS)}")
    if not 1 <= n_layers <= MAX_LAYERS or hlen != header_size(n_layers, version) or flags != 0:
        raise PolicyFormatError(f"{name}: corrupt policy header: {n_layers} layers, header {hlen} bytes, flags {flags}")
    table = HEADER_FIXED + 2 * (n_layers + 1) + n_layers
    dtype = data[table] if version >= DTYPE_VERSION and n >= table + 1 else 0
    if dtype >= len(DTYPES):
        raise PolicyFormatError(f"{name}: unknown dtype code {dtype} (0 float32, 1 int8)")
    expected = hlen + 4 * n_words + 4
    if n < expected:
        raise TruncatedPolicyError(f"{name}: truncated policy file: {n} bytes, header says {expected}")
    if n > expected:
        raise PolicyFormatError(f"{name}: {n - expected} bytes of trailing data after the policy (expected {expected} bytes)")
    stored = struct.unpack_from("<I", data, n - 4)[0]
    crc = zlib.crc32(data[:-4])
    if crc != stored:
        raise ChecksumError(f"{name}: policy file checksum mismatch: stored {stored:08x}, computed {crc:08x} (file corrupted)")
    sizes = list(struct.unpack_from(f"<{n_layers + 1}H", data, HEADER_FIXED))
    codes = list(data[HEADER_FIXED + 2 * (n_layers + 1):table])
    if min(sizes) < 1:
        raise PolicyFormatError(f"{name}: corrupt policy header: sizes {sizes}")
    for i, c in enumerate(codes):
        if version < RECURRENT_VERSION and c >= len(BASIC_ACTIVATIONS) \
                or c >> 4 >= len(KINDS) or c & 15 >= len(ACTIVATIONS) or c >> 4 and c & 15:
            raise PolicyFormatError(f"{name}: layer {i}: unknown layer code 0x{c:02x} for version {version}")
        if dtype and c & 15 >= len(BASIC_ACTIVATIONS):
            raise PolicyFormatError(f"{name}: layer {i}: an int8 layer is identity, relu or tanh "
                                    f"(code 0x{c:02x})")
    kinds = [KINDS[c >> 4] for c in codes]
    if dtype and kinds[-1] == "gru":
        raise PolicyFormatError(f"{name}: the last layer of an int8 policy is dense, not a GRU")
    s0, sl = sizes[0], sizes[-1]
    limits_words = 2 * sl if version >= 2 else 0
    want = (quantize.net_bytes(sizes, kinds) // 4 if dtype else net_size(sizes, codes)) + limits_words
    if n_words != want:
        raise PolicyFormatError(f"{name}: corrupt policy header: {n_words} payload words for sizes {sizes} "
                                f"(version {version}, {DTYPES[dtype]}), expected {want}")
    if dtype:
        return _decode_int8(data, name, hlen, sizes, [ACTIVATIONS[c & 15] for c in codes], kinds)
    net = np.frombuffer(data, dtype="<f4", count=n_words, offset=hlen).astype(np.float32)
    off = 2 * s0
    weights, biases = [], []
    hidden = ([], [], [])
    for a, b, kind in zip(sizes[:-1], sizes[1:], kinds):
        rows = 3 * b if kind == "gru" else b
        w, bias = unpack_layer(net[off:off + layer_size(a, rows)], a, rows)
        weights.append(w)
        biases.append(bias)
        off += layer_size(a, rows)
        if kind == "gru":
            wh, bh = unpack_layer(net[off:off + layer_size(b, rows)], b, rows)
            off += layer_size(b, rows)
            for part, value in zip(hidden, (wh, bh, net[off:off + b])):
                part.append(value)
            off += b
        else:
            for part in hidden:
                part.append(None)
    limits = {}
    if version >= 2:
        limits = dict(action_low=net[off + 2 * sl:off + 3 * sl], action_high=net[off + 3 * sl:off + 4 * sl])
    try:
        return PolicySpec(weights=weights, biases=biases, activations=[ACTIVATIONS[c & 15] for c in codes],
                          obs_mean=net[:s0], obs_std=net[s0:2 * s0],
                          action_scale=net[off:off + sl], action_offset=net[off + sl:off + 2 * sl], **limits,
                          kinds=kinds, hidden_weights=hidden[0], hidden_biases=hidden[1], initial_hidden=hidden[2])
    except InvalidPolicyError as exc:
        raise PolicyValueError(f"{name}: {exc}") from None


def _decode_int8(data: bytes, name: str, hlen: int, sizes, activations, kinds) -> QuantizedPolicy:
    sl = sizes[-1]
    end = hlen + quantize.net_bytes(sizes, kinds)
    lo_hi = np.frombuffer(data, "<f4", 2 * sl, end).astype(np.float32)
    try:
        if not np.isfinite(lo_hi).all():
            raise InvalidPolicyError("policy has non-finite values: action limits")
        return QuantizedPolicy(**quantize.unpack_qnet(data[hlen:end], sizes, activations, (lo_hi[:sl], lo_hi[sl:]),
                                                      kinds))
    except InvalidPolicyError as exc:
        raise PolicyValueError(f"{name}: {exc}") from None


def write_policy(spec, path, protected=()) -> Path:
    """Encode (refusing an undeployable spec before anything is written), then replace
    `path` atomically; `protected` files are never overwritten (neuromotor.safe_write)."""
    return atomic_write(path, encode(spec), protected, follow=True)


POLICY_LIMIT = 64 * reading.MIB  # a policy a board can hold is far smaller


def read_policy(path):
    """The PolicySpec in a policy file (.nmp), validated: magic, version, sizes, CRC and every
    number finite; a UserError says what is wrong with any other file."""
    return decode(reading.read_bytes(path, "policy file", POLICY_LIMIT), str(path))

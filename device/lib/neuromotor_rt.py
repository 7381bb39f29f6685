# neuromotor_rt: run a neuromotor policy file on MicroPython or CircuitPython.
#
#   from neuromotor_rt import Policy
#   p = Policy.load("policy.nmp")          # backend: native > ulab > python
#   p = Policy.load("policy.nmp", backend="python")
#   action = p(obs)                        # array('f'), reused between calls
#
# Version 2 carries action limits: every backend clamps each action into them
# (NaN: their midpoint); version 1 has none. Observations must be finite. An
# int8 policy (version 3, or 4 with GRU layers; nm_int8.h) loads into an
# array('b') for the kernels' integer path or plain Python (p.dtype). Version 4
# holds GRU layers, sigmoid and fast_tanh: a recurrent policy's state p.state
# (array('f'); int8: array('h') in Q15) advances at every call, and p.reset()
# restores the file's initial state at each episode's start.
#
# The format: docs/policy-format.md (`neuromotor export` writes it). Backends:
#   native  our C kernels: built-in `nm_kernels` (custom firmware) or the dynamic
#           native module `nm_kernels_natmod.mpy`; no allocation per call. Its
#           policy subclasses their C type `Forward`: p(obs) goes straight to C.
#   ulab    ulab.numpy (CircuitPython, firmware built with ULAB_DIR=...).
#   python  plain Python, works everywhere, slow.
# Here is what every load needs (a further module costs a board an import). On
# first use only: nm_rt_write, nm_rt_python, nm_rt_ulab, nm_rt_native (kernels
# without Forward), nm_rt_where (names a faulty value), nm_rt_q8 (int8 policies).
import struct
import sys
from array import array

try:  # MicroPython-only modules stay behind guards (CircuitPython has neither).
    from micropython import const
except ImportError:

    def const(x):
        return x


FORMAT_VERSION = const(2)  # written when there are action limits; version 1 is read too
DTYPE_VERSION = const(3)  # the version with a dtype byte (written by the host for int8 policies)
RECURRENT_VERSION = const(4)  # GRU layers, sigmoid and fast_tanh (int8: GRU layers)
DTYPES = ("float32", "int8")
MAGIC = b"NMPL"
HEADER_FIXED = const(16)
MAX_LAYERS = const(32)
BLOCK = const(4)
ACTIVATIONS = ("identity", "relu", "tanh", "sigmoid", "fast_tanh")  # versions 1-3: the first three
GRU = const(16)  # layer code of a GRU layer: kind 1 << 4, activation 0
BACKENDS = ("native", "ulab", "python")
NATIVE_MODULES = ("nm_kernels", "nm_kernels_natmod")


class PolicyFileError(ValueError):
    """The file is not a valid neuromotor policy."""


class TruncatedPolicyError(PolicyFileError):
    pass


class BadMagicError(PolicyFileError):
    pass


class UnsupportedVersionError(PolicyFileError):
    pass


class ChecksumError(PolicyFileError):
    pass


class PolicyValueError(PolicyFileError):
    """Well-formed file, undeployable numbers: NaN/inf, obs_std <= 0, action low > high."""


class BackendUnavailableError(ImportError):
    pass


# ---------------------------------------------------------------------------
# Shapes (the same arithmetic as nm_kernels.h).


def layer_size(n_in, n_out):
    return ((n_out + BLOCK - 1) // BLOCK) * BLOCK * (n_in + 1)


def any_layer_size(n_in, n_out, code):
    """Floats of a layer; a GRU layer's are its input and hidden block-4 layers, then h0."""
    if code == GRU:
        return layer_size(n_in, 3 * n_out) + layer_size(n_out, 3 * n_out) + n_out
    return layer_size(n_in, n_out)


def net_size(sizes, codes=None):
    n = 2 * sizes[0] + 2 * sizes[-1]
    for i in range(len(sizes) - 1):
        n += any_layer_size(sizes[i], sizes[i + 1], codes[i] if codes else 0)
    return n


def state_parts(sizes, codes):
    """(state offset, net offset of h0, hidden size) of each GRU layer, in layer order."""
    parts, off, st = [], 2 * sizes[0], 0
    for i in range(len(codes)):
        n_in, n_out = sizes[i], sizes[i + 1]
        if codes[i] == GRU:
            parts.append((st, off + layer_size(n_in, 3 * n_out) + layer_size(n_out, 3 * n_out), n_out))
            st += n_out
        off += any_layer_size(n_in, n_out, codes[i])
    return parts


def code_valid(code, version):
    return code < 3 or version >= RECURRENT_VERSION and (code < len(ACTIVATIONS) or code == GRU)


def header_size(n_layers, version=FORMAT_VERSION):
    n = HEADER_FIXED + 2 * (n_layers + 1) + n_layers + (1 if version >= DTYPE_VERSION else 0)
    return (n + 3) & ~3


def dtype_of(net):
    """"int8" for an int8 net (array('b')), "float32" for array('f')."""
    return "int8" if len(net) and len(bytes(net[0:1])) == 1 else "float32"


def check_values(sizes, net, clamp=None, codes=None):
    """Raise PolicyValueError unless every float is finite, obs_std > 0 and low <= high."""
    if len(net) != net_size(sizes, codes):
        raise PolicyValueError("net has %d floats, sizes %r need %d" % (len(net), sizes, net_size(sizes, codes)))
    total = sum(net)  # C loop: NaN or inf if any value is (or if the sum overflowed)
    if total - total != 0.0:  # inf - inf and NaN - NaN are NaN; a finite value gives 0
        for i in range(len(net)):
            v = net[i]
            if v - v != 0.0:
                from nm_rt_where import where

                raise PolicyValueError("policy has non-finite values: %s is %r" % (where(sizes, i, codes), v))
    s0, sl = sizes[0], sizes[-1]
    for i in range(s0, 2 * s0):
        if not net[i] > 0.0:
            raise PolicyValueError("obs_std must be positive, got %r at index %d" % (net[i], i - s0))
    check_clamp(sl, clamp)


def check_clamp(sl, clamp):
    if clamp is None:
        return
    if len(clamp) != 2 * sl:
        raise PolicyValueError("clamp has %d floats, %d actions need %d" % (len(clamp), sl, 2 * sl))
    for i in range(sl):
        lo, hi = clamp[i], clamp[sl + i]
        if lo - lo != 0.0 or hi - hi != 0.0:
            raise PolicyValueError("policy has non-finite values: action limits of dimension %d are %r, %r" % (i, lo, hi))
        if lo > hi:
            raise PolicyValueError("action limits of dimension %d: low %r > high %r" % (i, lo, hi))


def make_layout(sizes, acts):
    """The array('H') shape descriptor nm_kernels.mlp takes: L, sizes, layer codes."""
    return array("H", [len(acts)] + list(sizes) + list(acts))


# ---------------------------------------------------------------------------
# CRC-32 (zlib): native kernels, then binascii, then plain Python (nm_rt_python).


def _find_crc32():
    for name in NATIVE_MODULES:
        try:
            return __import__(name).crc32
        except (ImportError, AttributeError, ValueError):
            pass
    try:
        from binascii import crc32

        return crc32
    except ImportError:
        from nm_rt_python import crc32_python

        return crc32_python


_crc32 = None


def crc32(data, crc=0):
    global _crc32
    if _crc32 is None:
        _crc32 = _find_crc32()
    return _crc32(data, crc) & 0xFFFFFFFF


# ---------------------------------------------------------------------------
# Policy file: read (validating everything) and write (atomically).


def _read_exact(f, n, what):
    b = f.read(n)
    if b is None or len(b) < n:
        raise TruncatedPolicyError("truncated policy file: %s needs %d bytes, file has %d" % (what, n, 0 if b is None else len(b)))
    return b


def read_policy(path):
    """Validate and load a policy file. Returns (sizes, acts, net, clamp): acts the
    layer codes (a dense layer's is its activation; GRU for a GRU layer), net an
    array('f') holding the kernels' parameter vector (read in place, no copy),
    or for an int8 policy an array('b') holding nm_int8.h's qnet; clamp an
    array('f') of the action_dim lower then upper limits, or None for a
    version-1 file."""
    if sys.byteorder != "little":
        raise PolicyFileError("policy files are little-endian; this board is not")
    with open(path, "rb") as f:
        total = f.seek(0, 2)
        f.seek(0)
        head = f.read(HEADER_FIXED)
        if len(head) < 4:
            raise TruncatedPolicyError("truncated policy file: %d bytes, not even a magic number" % len(head))
        if head[:4] != MAGIC:
            raise BadMagicError("not a neuromotor policy file: magic %r, expected %r" % (head[:4], MAGIC))
        if len(head) < HEADER_FIXED:
            raise TruncatedPolicyError("truncated policy file: %d bytes, header needs %d" % (len(head), HEADER_FIXED))
        magic, version, hlen, n_layers, flags, n_floats = struct.unpack("<4sHHHHI", head)
        if not 1 <= version <= RECURRENT_VERSION:
            raise UnsupportedVersionError(
                "policy file format version %d, this runtime reads versions 1 to %d (re-export with a matching neuromotor)"
                % (version, RECURRENT_VERSION))
        if not 1 <= n_layers <= MAX_LAYERS or hlen != header_size(n_layers, version) or flags != 0:
            raise PolicyFileError("corrupt policy header: %d layers, header %d bytes, flags %d" % (n_layers, hlen, flags))
        expected = hlen + 4 * n_floats + 4
        if total < expected:
            raise TruncatedPolicyError("truncated policy file: %d bytes, header says %d" % (total, expected))
        if total > expected:
            raise PolicyFileError("policy file has %d bytes of trailing data (expected %d bytes)" % (total - expected, expected))
        rest = _read_exact(f, hlen - HEADER_FIXED, "layer table")
        sizes = list(struct.unpack_from("<%dH" % (n_layers + 1), rest, 0))
        acts = list(rest[2 * (n_layers + 1):2 * (n_layers + 1) + n_layers])
        dtype = rest[2 * (n_layers + 1) + n_layers] if version >= DTYPE_VERSION else 0
        if dtype >= len(DTYPES):
            raise PolicyFileError("unknown dtype code %d (0 float32, 1 int8)" % dtype)
        if min(sizes) < 1 or not all(code_valid(c, version) for c in acts):
            raise PolicyFileError("corrupt policy header: sizes %r, layer codes %r" % (sizes, acts))
        n_clamp = 2 * sizes[-1] if version >= 2 else 0
        if dtype:
            from nm_rt_q8 import q8_net_bytes

            n_net = q8_net_bytes(sizes, acts) // 4
        else:
            n_net = net_size(sizes, acts)
        if n_floats != n_net + n_clamp:
            raise PolicyFileError("corrupt policy header: %d payload words for sizes %r (version %d, %s), expected %d"
                                  % (n_floats, sizes, version, DTYPES[dtype], n_net + n_clamp))
        # One allocation of the final size (array('b') wraps values past 127; they are overwritten).
        net = array("b", range(4 * n_net)) if dtype else array("f", range(n_net))
        if f.readinto(net) != 4 * n_net:
            raise TruncatedPolicyError("truncated policy file: payload ended early")
        clamp = None
        if n_clamp:
            clamp = array("f", range(n_clamp))
            if f.readinto(clamp) != 4 * n_clamp:
                raise TruncatedPolicyError("truncated policy file: payload ended early")
        stored = struct.unpack("<I", _read_exact(f, 4, "checksum"))[0]
    crc = crc32(net, crc32(rest, crc32(head)))
    if clamp is not None:
        crc = crc32(clamp, crc)
    if crc != stored:
        raise ChecksumError("policy file checksum mismatch: stored %08x, computed %08x (file corrupted)" % (stored, crc))
    if dtype:
        from nm_rt_q8 import check_q8_values

        check_q8_values(sizes, acts, net, clamp)
    else:
        check_values(sizes, net, clamp, acts)
    return sizes, acts, net, clamp


def write_policy(path, sizes, acts, net, clamp=None):
    """Write a policy file, values checked first, atomically (nm_rt_write.write_policy)."""
    from nm_rt_write import write_policy

    write_policy(path, sizes, acts, net, clamp)


# ---------------------------------------------------------------------------
# Backends. Each holds its buffers; __call__(obs) returns the output array.


def _native_module(kernels=None, need=None):
    """The kernels given, or the first importable; need: "INT8" (an int8 policy) or "GRU"
    (a version-4 one), the constant that kernels able to run it have."""
    what = "int8" if need == "INT8" else "version-4 (recurrent)"
    if kernels is not None:
        if need and not hasattr(kernels, need):
            raise BackendUnavailableError("native backend: these kernels predate %s policies (rebuild them)" % what)
        return kernels
    errors = []
    for name in NATIVE_MODULES:
        try:
            k = __import__(name)
            if need and not hasattr(k, need):
                errors.append("%s: predates %s policies" % (name, what))
                continue
            return k
        except ImportError as e:
            errors.append("%s: %s" % (name, e))
        except ValueError as e:  # e.g. "incompatible .mpy arch"
            errors.append("%s: %s" % (name, e))
    raise BackendUnavailableError(
        "native backend unavailable: no built-in nm_kernels and no loadable nm_kernels_natmod.mpy (%s)" % "; ".join(errors))


class Policy:
    """A loaded policy: call it with an observation, get the action.

    Policy.load(path, backend=None) returns an instance of the backend's
    subclass; backend None picks native > ulab > python. The returned action
    is an array('f') owned by the policy and overwritten by the next call.
    """

    name = None

    def __init__(self, sizes, acts, net, clamp=None):
        self.sizes = sizes
        self.acts = acts
        self.net = net
        self.dtype = dtype_of(net)
        self.clamp = clamp
        self.obs_dim = sizes[0]
        self.act_dim = sizes[-1]
        self.out = array("f", range(sizes[-1]))
        self.backend = self.name
        self.gru, self.state = [], None
        if GRU in acts and self.dtype == "int8":
            from nm_rt_q8 import q8_state  # int16 (Q15), pair order

            self.gru, self.state = q8_state(sizes, acts)
        elif GRU in acts:
            self.gru = state_parts(sizes, acts)
            self.state = array("f", range(sum(p[2] for p in self.gru)))
        self.recurrent = bool(self.gru)
        Policy.reset(self)

    def reset(self):
        """Back to the initial hidden state, at an episode's start (nothing for an MLP)."""
        st, net = self.state, self.net
        if self.gru and self.dtype == "int8":
            from nm_rt_q8 import q8_reset

            return q8_reset(st, net, self.gru)
        for s, n, hd in self.gru:
            for i in range(hd):
                st[s + i] = net[n + i]

    @classmethod
    def create(cls, sizes, acts, net, backend=None, kernels=None, clamp=None):
        """A policy over an in-memory net (array('f'), or array('b') for int8) and optional
        clamp, its values checked first."""
        if len(sizes) != len(acts) + 1 or not all(code_valid(c, RECURRENT_VERSION) for c in acts):
            raise PolicyValueError("sizes %r, layer codes %r: expected one more size than codes, each "
                                   "an activation 0..4 or GRU (16)" % (sizes, acts))
        if dtype_of(net) == "int8":
            from nm_rt_q8 import check_q8_values

            check_q8_values(sizes, acts, net, clamp)
        else:
            check_values(sizes, net, clamp, acts)
        return cls._create(sizes, acts, net, clamp, backend, kernels)

    @classmethod
    def _create(cls, sizes, acts, net, clamp, backend, kernels):
        if backend is not None and backend not in BACKENDS:
            raise ValueError("unknown backend %r, expected one of %r" % (backend, BACKENDS))
        if dtype_of(net) == "int8":
            return cls._create_int8(sizes, acts, net, clamp, backend, kernels)
        need = "GRU" if max(acts) >= 3 else None  # a version-4 layer: kernels that know them
        if backend == "native":
            k = _native_module(kernels, need)
            return _native_class(k)(sizes, acts, net, clamp, k)
        if backend == "ulab":
            return _ulab_policy(sizes, acts, net, clamp)
        if backend == "python":
            return _python_policy(sizes, acts, net, clamp)
        try:
            k = _native_module(None, need)
            return _native_class(k)(sizes, acts, net, clamp, k)
        except BackendUnavailableError:
            pass
        try:
            return _ulab_policy(sizes, acts, net, clamp)
        except BackendUnavailableError:
            pass
        return _python_policy(sizes, acts, net, clamp)

    @classmethod
    def _create_int8(cls, sizes, acts, net, clamp, backend, kernels):
        if backend == "ulab":
            raise BackendUnavailableError("ulab backend runs float32 policies only; this policy is int8")
        if backend != "python":
            try:
                k = _native_module(kernels, "INT8")
                return _native_class(k)(sizes, acts, net, clamp, k)
            except BackendUnavailableError:
                if backend == "native":
                    raise
        return _python_policy(sizes, acts, net, clamp)

    @classmethod
    def load(cls, path, backend=None, kernels=None):
        """Load and validate a policy file; backend None picks the best available."""
        sizes, acts, net, clamp = read_policy(path)  # values checked there
        return cls._create(sizes, acts, net, clamp, backend, kernels)

    def __repr__(self):
        return "<Policy %s %s backend=%s>" % ("->".join(str(s) for s in self.sizes),
                                              ",".join("gru" if a == GRU else ACTIVATIONS[a] for a in self.acts),
                                              self.name)


def _native_init(p, sizes, acts, net, clamp, k):
    """The buffers of a native policy p on kernels k."""
    Policy.__init__(p, sizes, acts, net, clamp)
    p.kernels = k
    p.mlp = k.mlp
    p.layout = make_layout(sizes, acts)
    if p.dtype == "int8":
        p.scratch = array("f", range(k.scratch_size(p.layout, 1)))
    else:
        p.scratch = array("f", range(k.scratch_size(p.layout)))
    p.x = array("f", range(sizes[0]))


_native_classes = {}


def _native_class(k):
    """NativePolicy, made a subclass of the kernels' Forward type when they have
    one: calling the policy then goes straight to C (no bytecode frame)."""
    forward = getattr(k, "Forward", None)
    if forward is None:
        from nm_rt_native import NativePolicy

        return NativePolicy
    cls = _native_classes.get(id(k))
    if cls is None:

        # Policy defines no __call__, so instances are called through Forward's
        # C call slot: no bytecode frame, no allocation per inference.
        class NativeForwardPolicy(forward, Policy):
            name = "native"

            def __init__(self, sizes, acts, net, clamp=None, kernels=None):
                _native_init(self, sizes, acts, net, clamp, k)
                args = (self.out, net, self.layout, self.scratch, self.x, clamp)
                if self.state is not None:  # kernels without GRU take six at most
                    args += (self.state,)
                super().__init__(*args)

            def reset(self):  # the kernels': no allocation (a Python loop boxes every float)
                if self.state is not None:
                    k.state_reset(self.state, self.net, self.layout)

        cls = _native_classes[id(k)] = NativeForwardPolicy
    return cls


def _ulab_policy(sizes, acts, net, clamp):
    try:  # first: a board without ulab never loads the backend's module
        import ulab  # noqa: F401
    except ImportError:
        raise BackendUnavailableError("ulab backend unavailable: this firmware has no ulab module")
    from nm_rt_ulab import UlabPolicy

    return UlabPolicy(sizes, acts, net, clamp)


def _python_policy(sizes, acts, net, clamp):
    from nm_rt_python import PythonPolicy, PythonQ8Policy

    return (PythonQ8Policy if dtype_of(net) == "int8" else PythonPolicy)(sizes, acts, net, clamp)


def available_backends():
    """Names of the backends that work on this board, best first."""
    found = []
    try:
        _native_module()
        found.append("native")
    except BackendUnavailableError:
        pass
    try:
        from nm_rt_ulab import ulab_numpy

        ulab_numpy()
        found.append("ulab")
    except BackendUnavailableError:
        pass
    found.append("python")
    return found

"""int8 policies: quantising a float `PolicySpec`, and the NumPy reference of the
integer forward pass that device/native/include/nm_int8.h computes bit for bit.

Weights are symmetric int8 per output channel, biases int32 at the scale of
their accumulator, and each hidden layer requantises its int32 accumulators to
the next layer's int8 scale with one fixed-point multiplier per channel and one
right shift per layer (docs/policy-format.md, "int8 payload"). Activation scales
come from calibration observations (the run's own env's rollouts).
"""

from dataclasses import dataclass, field

import numpy as np

from neuromotor.policy.spec import ACTIVATIONS, InvalidPolicyError, LayerSizes, PolicySpec, clamp

F32 = np.float32
QMAX = 127             # weights
AMAX = 32767           # activations (int16)
MAX_IN = 512           # inputs per layer: 127 * 32767 * 512 + 2^24 < 2^31, no accumulator overflows
BIAS_MAX = 1 << 24
SHIFT_MAX = 31
MULT_MAX = (1 << 31) - 1
# The fitted quantisation (rounding.py, finetune.py) gives inputs and activations this
# factor above the largest calibration value: other observations go further (a saturated
# input can move the action far), and int16 keeps 14 bits of resolution after it.
HEADROOM = 2.0


@dataclass
class QuantizedPolicy(LayerSizes):
    """The contents of a dtype-int8 policy file. Hidden layers carry (w, bias, mult);
    `shifts[l]` is hidden layer l's right shift; the last layer carries (w, bias) and
    `deq` (float32 per row: the accumulator's scale)."""
    weights: list            # per layer int8 (out, in)
    biases: list             # per layer int32 (out,)
    mults: list              # per hidden layer int32 (out,)
    shifts: list             # per hidden layer int
    deq: np.ndarray          # float32 (act_dim,)
    activations: list
    obs_mean: np.ndarray
    in_mul: np.ndarray       # float32 (obs_dim,): 1 / (obs_std * input scale), what the device multiplies by
    action_scale: np.ndarray
    action_offset: np.ndarray
    action_low: np.ndarray
    action_high: np.ndarray
    meta: dict = field(default_factory=dict)

    dtype = "int8"

    def __post_init__(self):
        self.weights = [np.ascontiguousarray(w, np.int8) for w in self.weights]
        self.biases = [np.ascontiguousarray(b, np.int64) for b in self.biases]
        self.mults = [np.ascontiguousarray(m, np.int64) for m in self.mults]
        self.shifts = [int(s) for s in self.shifts]
        for name in ("deq", "obs_mean", "in_mul", "action_scale", "action_offset", "action_low", "action_high"):
            setattr(self, name, np.ascontiguousarray(getattr(self, name), F32))
        self.validate()

    has_limits = True

    def validate(self) -> None:
        """Raise InvalidPolicyError naming the first value a device would refuse
        (the checks of nm_q8_check, in its order)."""
        n = len(self.weights)
        if not (n >= 1 and len(self.biases) == n == len(self.activations) and len(self.mults) == n - 1
                and len(self.shifts) == n - 1):
            raise InvalidPolicyError("int8 policy needs weights, biases and activations per layer and "
                                     "multipliers and a shift per hidden layer")
        sizes = self.sizes
        if max(sizes[:-1]) > MAX_IN:
            raise InvalidPolicyError(f"an int8 layer takes at most {MAX_IN} inputs, this one "
                                     f"{max(sizes[:-1])} (its int32 accumulators could overflow)")
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            if w.ndim != 2 or b.shape != (w.shape[0],) or (i and w.shape[1] != sizes[i]):
                raise InvalidPolicyError(f"layer {i}: weight {w.shape} and bias {b.shape} do not match")
        for i, a in enumerate(self.activations):
            if a not in ACTIVATIONS:
                raise InvalidPolicyError(f"layer {i}: activation {a!r} is not one of {ACTIVATIONS}")
            if i < n - 1 and a not in ("identity", "relu"):
                raise InvalidPolicyError(f"layer {i}: an int8 hidden layer is identity or relu, not {a}")
        vectors = [("obs_mean", self.obs_dim), ("in_mul", self.obs_dim), ("deq", self.act_dim),
                   ("action_scale", self.act_dim), ("action_offset", self.act_dim),
                   ("action_low", self.act_dim), ("action_high", self.act_dim)]
        for name, k in vectors:
            if getattr(self, name).shape != (k,):
                raise InvalidPolicyError(f"{name} has shape {getattr(self, name).shape}, expected ({k},)")
        for name, k in vectors:
            v = getattr(self, name)
            if not np.isfinite(v).all():
                raise InvalidPolicyError(f"policy has non-finite values: {name}[{int(np.argmin(np.isfinite(v)))}]")
        if np.any(self.in_mul <= 0):
            raise InvalidPolicyError(f"in_mul (input multiplier) must be positive, got {self.in_mul.min():g} "
                                     f"at index {int(self.in_mul.argmin())}")
        for i, b in enumerate(self.biases):
            if np.any(np.abs(b) > BIAS_MAX):
                raise InvalidPolicyError(f"layer {i}: bias[{int(np.argmax(np.abs(b) > BIAS_MAX))}] outside "
                                         "-2^24..2^24")
        for i, (m, s) in enumerate(zip(self.mults, self.shifts)):
            if m.shape != (sizes[i + 1],) or np.any(m < 1) or np.any(m > MULT_MAX):
                bad = int(np.argmax((m < 1) | (m > MULT_MAX))) if m.shape == (sizes[i + 1],) else -1
                raise InvalidPolicyError(f"layer {i}: requantisation multiplier[{bad}] outside 1..2^31-1")
            if not 0 <= s <= SHIFT_MAX:
                raise InvalidPolicyError(f"layer {i}: requantisation shift {s} outside 0..{SHIFT_MAX}")
        if np.any(self.deq <= 0):
            raise InvalidPolicyError(f"output scale deq[{int(np.argmin(self.deq))}] must be positive, "
                                     f"got {self.deq.min():g}")
        if np.any(self.action_low > self.action_high):
            i = int(np.argmax(self.action_low > self.action_high))
            raise InvalidPolicyError(f"action limits of dimension {i}: low {self.action_low[i]:g} "
                                     f"> high {self.action_high[i]:g}")

    def input_q(self, obs: np.ndarray) -> np.ndarray:
        return quantize_input(obs, self.obs_mean, self.in_mul)

    def hidden(self, obs: np.ndarray) -> list:
        """Every layer's integer input (the observation first), as int64 arrays."""
        xs = [self.input_q(obs)]
        for w, b, m, r, a in zip(self.weights, self.biases, self.mults, self.shifts, self.activations):
            xs.append(requantize(int_dense(xs[-1], w, b), m, r, a == "relu"))
        return xs

    def accumulators(self, obs: np.ndarray) -> np.ndarray:
        return int_dense(self.hidden(obs)[-1], self.weights[-1], self.biases[-1])

    def forward(self, obs: np.ndarray) -> np.ndarray:
        """Actions in float32, clamped; what nm_q8_mlp then nm_clamp compute (bit for bit
        where the target has no fused multiply-add)."""
        obs = np.asarray(obs, dtype=F32)
        if not np.isfinite(obs).all():
            raise ValueError("observation has non-finite values")
        return self.actions(self.accumulators(obs))

    def actions(self, acc: np.ndarray) -> np.ndarray:
        """The clamped float32 actions of the last layer's int32 accumulators."""
        with np.errstate(over="ignore", invalid="ignore"):
            act = self.activations[-1]
            if act == "tanh":
                y = tanh_q15(deq_q16(acc, self.deq)).astype(F32) / F32(32768)
            else:
                y = acc.astype(F32) * self.deq
                if act == "relu":
                    y = np.where(y > 0, y, F32(0)).astype(F32)
            y = y * self.action_scale + self.action_offset
        return clamp(y, self.action_low, self.action_high)

    __call__ = forward


def _wrap32(a: np.ndarray) -> np.ndarray:
    return ((a + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def int_dense(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The int32 accumulators x @ w.T + b (int64 arrays). Computed in float64, which is
    exact: every partial sum stays below 127 * 32768 * MAX_IN + BIAS_MAX < 2^31 << 2^53,
    whatever order BLAS adds in; and NumPy's integer matmul does not use BLAS."""
    acc = (np.asarray(x, np.float64) @ w.T.astype(np.float64)).astype(np.int64) + b
    return _wrap32(acc)


def _f32_sig(v) -> tuple:
    """nm_q8_f32_sig: (significand << 7, exponent field (1 for zero and subnormals)) of
    float32 values: |v| = m * 2^(e - 157)."""
    u = np.asarray(v, F32).view(np.uint32).astype(np.int64)
    ef = (u >> 23) & 0xFF
    m = ((u & 0x7FFFFF) | np.where(ef > 0, 0x800000, 0)) << 7
    return m, np.maximum(ef, 1)


def scale_round(v, m, s, lim) -> np.ndarray:
    """nm_q8_scale: round(v * m / 2^s) half up, clamped to +-lim, as the C computes it
    (s >= 32: nm_q8_mulhr then a right shift of at most 31, rounded half up; s < 32:
    one rounding, saturated where v << (32 - s) would overflow int32)."""
    v, m, s = np.asarray(v, np.int64), np.asarray(m, np.int64), np.asarray(s, np.int64)
    t = (v * m + (1 << 31)) >> 32
    r = np.clip(s - 32, 0, 31)
    right = (t + ((np.int64(1) << r) >> 1)) >> r
    lsh = np.clip(32 - s, 1, 31)
    big = np.int64(1) << (31 - lsh)
    left = np.where(v >= big, lim, np.where(v <= -big, -lim, ((v << lsh) * m + (1 << 31)) >> 32))
    return np.clip(np.where(s >= 32, right, left), -lim, lim)


def quantize_input(obs, mean, in_mul) -> np.ndarray:
    """nm_q8_quantize_input: the int16 observation (as int64). t is float32; its rounding
    half away from zero is exact in float64 (t has 24 significant bits)."""
    with np.errstate(over="ignore", invalid="ignore"):
        t = (np.asarray(obs, F32) - mean) * in_mul
        a = np.abs(t).astype(np.float64)
        v = np.where(a < AMAX, np.floor(a + 0.5), AMAX)   # inf and NaN saturate, as in nm_q8_round_f32
        return np.where(np.signbit(t), -v, v).astype(np.int64)


def requantize(acc: np.ndarray, mult: np.ndarray, shift: int, relu: bool) -> np.ndarray:
    """nm_q8_requant: (acc * mult + 2^31) >> 32, then a rounding right shift, then clamp.
    acc is int32-ranged and mult < 2^31, so the product fits int64."""
    t = (acc * mult + (1 << 31)) >> 32
    v = (t + ((1 << shift) >> 1)) >> shift
    return np.clip(v, 0 if relu else -AMAX - 1, AMAX)


TANH_STEP = 10                      # nm_int8_edge.h: table step 2^-6 in Q16
TANH_ZMAX = 384 << TANH_STEP        # 6.0


def tanh_table() -> np.ndarray:
    """nm_q8_tanh_table: round(tanh(i / 64) * 32768), i = 0..384 (every value at least
    4e-4 from a rounding tie, so any correctly rounded tanh gives these integers)."""
    return np.round(np.tanh(np.arange(385) / 64) * 32768).astype(np.int64)


_TANH_TABLE = tanh_table()


def deq_q16(acc: np.ndarray, deq: np.ndarray) -> np.ndarray:
    """nm_q8_deq_q16: acc * deq in Q16 clamped to +-6, from deq's float32 bits
    (m * 2^(e - 157)): scale_round(acc, m, 141 - e)."""
    m, e = _f32_sig(deq)
    return scale_round(acc, m, 141 - e, TANH_ZMAX)


def tanh_q15(z: np.ndarray) -> np.ndarray:
    """nm_q8_tanh_q15: tanh(z / 2^16) * 2^15 from the table, interpolated, rounded half up."""
    z = np.asarray(z, np.int64)
    a = np.abs(z)
    i = np.minimum(a >> TANH_STEP, 383)
    f = a & ((1 << TANH_STEP) - 1)
    t0 = _TANH_TABLE[i]
    t = np.where(a < TANH_ZMAX, t0 + (((_TANH_TABLE[i + 1] - t0) * f + (1 << (TANH_STEP - 1))) >> TANH_STEP), 32768)
    return np.where(z < 0, -t, t)


def _row_scales(w: np.ndarray) -> np.ndarray:
    m = np.abs(w).max(axis=1).astype(np.float64) / QMAX
    return np.where(m > 0, m, 1.0 / QMAX)


def quantize(spec: PolicySpec, calib_obs: np.ndarray) -> QuantizedPolicy:
    """int8 version of `spec`, activation scales calibrated on `calib_obs` (n, obs_dim)."""
    return calibrate(spec, calib_obs)[0]


def input_ranges(spec: PolicySpec, obs: np.ndarray, headroom: float = 1.0) -> np.ndarray:
    """float64 (obs_dim,): the range of each normalised input the int16 input spans (`headroom`
    times the largest on `obs`), as the float32 product with obs_std makes it."""
    x0 = (obs - spec.obs_mean) / spec.obs_std
    r = headroom * np.abs(x0).max(axis=0).astype(np.float64)
    r = np.where(r > 1e-6, r, 1.0)
    return ((spec.obs_std * r).astype(F32) / spec.obs_std).astype(np.float64)


def calibrate(spec: PolicySpec, calib_obs: np.ndarray, row_scales=None, headroom: float = 1.0) -> tuple:
    """(the int8 version of `spec`, each hidden layer's output scale (spec units per integer
    step, float64), each layer's integer input on `calib_obs` (int64; the observation first)):
    the scales calibrated on `calib_obs` (n, obs_dim), inputs and activations spanning
    `headroom` times their largest value there. `row_scales` (per layer, float64 (out,) or
    None) replaces the weights' scales (largest |weight| of each row / QMAX; layer 0's weights
    times `input_ranges`); weights beyond +-QMAX steps are clipped."""
    if not spec.has_limits:
        raise InvalidPolicyError("an int8 policy needs action limits (export it from its run directory)")
    for i, a in enumerate(spec.activations[:-1]):
        if a not in ("identity", "relu"):
            raise InvalidPolicyError(f"layer {i} is {a}: int8 hidden layers are identity or relu")
    obs = np.asarray(calib_obs, F32)
    if obs.ndim != 2 or obs.shape[1] != spec.obs_dim or not len(obs) or not np.isfinite(obs).all():
        raise InvalidPolicyError(f"calibration observations must be finite, shape (n, {spec.obs_dim})")
    # Each input gets the whole int16 range: its calibrated range r goes into in_mul (the
    # run's obs_std times r, inverted) and into layer 0's weights (W diag(r)).
    obs_std = (spec.obs_std * input_ranges(spec, obs, headroom)).astype(F32)
    in_scale = F32(1.0 / AMAX)
    # The device multiplies by this reciprocal (no soft-float division per input on cores
    # without an FPU); it is rounded to float32 once, here.
    in_mul = (1.0 / (obs_std.astype(np.float64) * np.float64(in_scale))).astype(F32)
    n = len(spec.weights)
    weights, biases, mults, shifts = [], [], [], []
    s_x = np.float64(in_scale)
    q = quantize_input(obs, spec.obs_mean, in_mul)  # the integer input of the layer being quantised
    inputs, scales = [q], []
    deq = None
    for i, (w, b, act) in enumerate(zip(spec.weights, spec.biases, spec.activations)):
        if i == 0:
            w = w * (obs_std / spec.obs_std).astype(np.float64)[None, :]
        s_w = _row_scales(w) if row_scales is None or row_scales[i] is None else np.asarray(row_scales[i], np.float64)
        wq = np.clip(np.round(w / s_w[:, None]), -QMAX, QMAX).astype(np.int8)
        bq = np.clip(np.round(b / (s_x * s_w)), -BIAS_MAX, BIAS_MAX).astype(np.int64)
        weights.append(wq)
        biases.append(bq)
        if i == n - 1:
            deq = (s_x * s_w).astype(F32)
            break
        acc = int_dense(q, wq, bq)
        y = acc * (s_x * s_w)
        if act == "relu":
            y = np.maximum(y, 0)
        s_y = headroom * float(np.abs(y).max()) / AMAX
        # The multipliers must stay below 1/2 (mult < 2^31 at shift 0).
        s_y = max(s_y, 2.0 * s_x * s_w.max() * (1 + 1e-6), 1e-12)
        m_real = s_x * s_w / s_y
        # The shift that puts the largest multiplier in 2^30..2^31; every multiplier of
        # 2^27 or more is rounded to a multiple of 2^16 (at most 2^-12 relative error):
        # cores without a 32x32->64 multiply take the high word in two 16-bit products then.
        r = 0
        while r < SHIFT_MAX and m_real.max() * 2.0 ** (32 + r) < 2.0 ** 30:
            r += 1
        m = np.clip(np.round(m_real * 2.0 ** (32 + r)), 1, MULT_MAX).astype(np.int64)
        m = np.where(m >= 1 << 27, np.minimum(np.round(m / 65536.0), MULT_MAX >> 16).astype(np.int64) << 16, m)
        mults.append(m)
        shifts.append(r)
        q = requantize(acc, m, r, act == "relu")
        inputs.append(q)
        scales.append(s_y)
        s_x = np.float64(s_y)
    qp = QuantizedPolicy(weights=weights, biases=biases, mults=mults, shifts=shifts, deq=deq,
                           activations=list(spec.activations), obs_mean=spec.obs_mean, in_mul=in_mul,
                           action_scale=spec.action_scale, action_offset=spec.action_offset,
                           action_low=spec.action_low, action_high=spec.action_high, meta=dict(spec.meta))
    return qp, scales, inputs


def _pad4(n: int) -> int:
    return -(-n // 4) * 4


def pack_weights(w: np.ndarray) -> bytes:
    """int8 (out, in) into nm_int8.h's layout: blocks of 4 rows, groups of 4 inputs, each
    group the 4 rows' 4 weights one row after another; padding zero."""
    n_out, n_in = w.shape
    rows, cols = _pad4(n_out), _pad4(n_in)
    wp = np.zeros((rows, cols), np.int8)
    wp[:n_out, :n_in] = w
    return wp.reshape(rows // 4, 4, cols // 4, 4).transpose(0, 2, 1, 3).tobytes()


def unpack_weights(data: bytes, n_in: int, n_out: int) -> np.ndarray:
    rows, cols = _pad4(n_out), _pad4(n_in)
    w = np.frombuffer(data, np.int8, rows * cols).reshape(rows // 4, cols // 4, 4, 4).transpose(0, 2, 1, 3)
    return np.ascontiguousarray(w.reshape(rows, cols)[:n_out, :n_in])


def _i32(v, rows: int) -> bytes:
    out = np.zeros(rows, "<i4")
    out[:len(v)] = v
    return out.tobytes()


def _f32(v, rows: int) -> bytes:
    out = np.zeros(rows, "<f4")
    out[:len(v)] = v
    return out.tobytes()


def layer_bytes(n_in: int, n_out: int, last: bool) -> int:
    return _pad4(n_out) * _pad4(n_in) + 8 * _pad4(n_out) + (0 if last else 4)


def net_bytes(sizes) -> int:
    n = len(sizes) - 1
    return 8 * sizes[0] + 8 * sizes[-1] + sum(
        layer_bytes(a, b, i == n - 1) for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])))


def pack_qnet(qp: QuantizedPolicy) -> bytes:
    """The qnet nm_q8_mlp takes (the int8 file's payload without the limits)."""
    parts = [_f32(qp.obs_mean, qp.obs_dim), _f32(qp.in_mul, qp.obs_dim)]
    n = len(qp.weights)
    for i, (w, b) in enumerate(zip(qp.weights, qp.biases)):
        rows = _pad4(w.shape[0])
        parts += [pack_weights(w), _i32(b, rows)]
        parts += [_f32(qp.deq, rows)] if i == n - 1 else [_i32(qp.mults[i], rows), _i32([qp.shifts[i]], 1)]
    parts += [_f32(qp.action_scale, qp.act_dim), _f32(qp.action_offset, qp.act_dim)]
    return b"".join(parts)


def unpack_qnet(data: bytes, sizes, activations, limits) -> dict:
    """The QuantizedPolicy fields of a qnet (no checks: QuantizedPolicy validates)."""
    s0, sl, n = sizes[0], sizes[-1], len(sizes) - 1
    f = lambda off, k: np.frombuffer(data, "<f4", k, off).astype(F32)  # noqa: E731
    i32 = lambda off, k: np.frombuffer(data, "<i4", k, off).astype(np.int64)  # noqa: E731
    out = dict(obs_mean=f(0, s0), in_mul=f(4 * s0, s0),
               weights=[], biases=[], mults=[], shifts=[], activations=list(activations))
    off = 8 * s0
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        rows, wb = _pad4(b), _pad4(a) * _pad4(b)
        out["weights"].append(unpack_weights(data[off:off + wb], a, b))
        out["biases"].append(i32(off + wb, b))
        if i == n - 1:
            out["deq"] = f(off + wb + 4 * rows, b)
        else:
            out["mults"].append(i32(off + wb + 4 * rows, b))
            out["shifts"].append(int(i32(off + wb + 8 * rows, 1)[0]))
        off += layer_bytes(a, b, i == n - 1)
    out["action_scale"], out["action_offset"] = f(off, sl), f(off + 4 * sl, sl)
    out["action_low"], out["action_high"] = limits
    return out

"""The integer arithmetic of int8 policies (device/native/include/nm_int8.h and
nm_int8_edge.h) in NumPy, bit for bit: integer dense layers, requantisation, the
observation's quantisation and the table tanh. Values are int64 arrays holding
int32 (or int16) quantities.
"""

import numpy as np

F32 = np.float32
QMAX = 127             # weights
AMAX = 32767           # activations (int16)
MAX_IN = 512           # inputs per layer: 127 * 32767 * 512 + 2^24 < 2^31, no accumulator overflows
BIAS_MAX = 1 << 24
SHIFT_MAX = 31
MULT_MAX = (1 << 31) - 1


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


def mulhr(a, b) -> np.ndarray:
    """nm_q8_mulhr: (a * b + 2^31) >> 32, for int32-ranged a and b."""
    return (np.asarray(a, np.int64) * np.asarray(b, np.int64) + (1 << 31)) >> 32


GATE_LIM = 1 << 24                  # a GRU gate's pre-activation in Q16: +-256


def gate_q16(acc: np.ndarray, deq: np.ndarray) -> np.ndarray:
    """nm_q8_gate_q16: acc * deq in Q16 clamped to +-GATE_LIM (deq_q16's arithmetic with a
    wider clamp: a gate's two halves are added, and r scales one, before any saturation)."""
    m, e = _f32_sig(deq)
    return scale_round(acc, m, 141 - e, GATE_LIM)


def sigmoid_q15(z: np.ndarray) -> np.ndarray:
    """nm_q8_sigmoid_q15: sigmoid(z / 2^16) * 2^15 = (1 + tanh(z / 2^17)) / 2 from the tanh
    table, at most 32767."""
    return np.minimum((32768 + tanh_q15(np.asarray(z, np.int64) >> 1)) >> 1, AMAX)


def gru_step(x: np.ndarray, h: np.ndarray, wi, bi, deq_i, wh, bh, deq_h) -> np.ndarray:
    """nm_q8_gru_step: the next int16 state (Q15) of a GRU layer from its int16 input x
    (..., n_in) and state h (..., H), the layer's int8 weights (3H, n_in) and (3H, H), int32
    biases and float32 deq (3H,) each, rows in gate order r, z, n."""
    hd = h.shape[-1]
    ai, ah = int_dense(x, wi, bi), int_dense(h, wh, bh)
    gi = [gate_q16(ai[..., k * hd:(k + 1) * hd], deq_i[k * hd:(k + 1) * hd]) for k in range(3)]
    gh = [gate_q16(ah[..., k * hd:(k + 1) * hd], deq_h[k * hd:(k + 1) * hd]) for k in range(3)]
    r, z = sigmoid_q15(gi[0] + gh[0]), sigmoid_q15(gi[1] + gh[1])
    n = tanh_q15(gi[2] + mulhr(2 * gh[2], r << 16))
    h = np.asarray(h, np.int64)
    return np.clip(n + ((z * (h - n) + 16384) >> 15), -AMAX - 1, AMAX)

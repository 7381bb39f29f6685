"""int8 GRU layers: quantising a float GRU layer, its section of the qnet, and its checks
(docs/policy-format.md, "int8 GRU layers"; device/native/include/nm_int8_gru.h). The step
itself is neuromotor.policy.int_arith.gru_step.

The state is int16 in Q15 (h = h_q / 32768): a GRU's state is a convex mix of its initial
state and tanh values, so an initial state within +-1 keeps every state there, and the
layer after it reads the state at the one scale 1/32768.
"""

from dataclasses import dataclass

import numpy as np

from neuromotor.policy.int_arith import AMAX, BIAS_MAX, F32, MAX_IN, QMAX
from neuromotor.policy.spec import InvalidPolicyError

STATE_SCALE = 1.0 / 32768


def pad4(n: int) -> int:
    return -(-n // 4) * 4


@dataclass
class GruQ8:
    """A GRU layer's parts besides its input weights and biases (which are the layer's
    `weights` and `biases` in a QuantizedPolicy): the input accumulators' scales, the hidden
    block and the initial state."""
    deq_i: np.ndarray   # float32 (3H,): input accumulator to value
    wh: np.ndarray      # int8 (3H, H)
    bh: np.ndarray      # int32 (3H,) as int64
    deq_h: np.ndarray   # float32 (3H,)
    h0: np.ndarray      # int16 (H,) as int64, Q15

    def __post_init__(self):
        self.deq_i, self.deq_h = (np.ascontiguousarray(v, F32) for v in (self.deq_i, self.deq_h))
        self.wh = np.ascontiguousarray(self.wh, np.int8)
        self.bh, self.h0 = (np.ascontiguousarray(v, np.int64) for v in (self.bh, self.h0))

    @property
    def hidden(self) -> int:
        return len(self.h0)

    def validate(self, layer: int, wi: np.ndarray, bi: np.ndarray) -> None:
        """InvalidPolicyError naming the first value a device refuses (nm_q8_check's order)."""
        hd = self.hidden
        rows = 3 * hd
        if hd < 1 or wi.shape[0] != rows or self.wh.shape != (rows, hd) or bi.shape != (rows,) \
                or self.bh.shape != (rows,) or self.deq_i.shape != (rows,) or self.deq_h.shape != (rows,):
            raise InvalidPolicyError(f"layer {layer}: GRU parts do not match its hidden size {hd}")
        if hd > MAX_IN:
            raise InvalidPolicyError(f"layer {layer}: an int8 GRU has at most {MAX_IN} units, this one {hd}")
        for name, b in (("bias", bi), ("hidden bias", self.bh)):
            if np.any(np.abs(b) > BIAS_MAX):
                raise InvalidPolicyError(f"layer {layer}: GRU {name}[{int(np.argmax(np.abs(b) > BIAS_MAX))}] "
                                         "outside -2^24..2^24")
        for name, d in (("deq_i", self.deq_i), ("deq_h", self.deq_h)):
            if not np.isfinite(d).all():
                raise InvalidPolicyError(f"policy has non-finite values: layer {layer} {name}")
            if np.any(d <= 0):
                raise InvalidPolicyError(f"layer {layer}: GRU scale {name}[{int(np.argmin(d))}] must be positive, "
                                         f"got {d.min():g}")
        if np.any(np.abs(self.h0) > AMAX + 1):
            raise InvalidPolicyError(f"layer {layer}: GRU initial state outside int16")


def row_scales(w: np.ndarray, b: np.ndarray, s_in: float) -> np.ndarray:
    """float64 (k,): the weight scale of each row of W (k, n), b (k,) reading inputs of scale
    s_in: symmetric per row, and a row whose bias would leave +-2^24 steps takes a coarser
    scale (the hidden block reads its state at 2^-15, where a bias a few times its row's
    largest weight already would)."""
    w, b = np.asarray(w, np.float64), np.asarray(b, np.float64)
    s_w = np.maximum(np.abs(w).max(axis=1) / QMAX, np.abs(b) / (s_in * BIAS_MAX))
    return np.where(s_w > 0, s_w, 1.0 / QMAX)


def _rows(w: np.ndarray, b: np.ndarray, s_in: float, s_w=None) -> tuple:
    """(int8 weights, int32 biases, float32 deq) of rows W (k, n) b (k,) reading inputs of
    scale s_in, at the row scales s_w (None: row_scales')."""
    w, b = np.asarray(w, np.float64), np.asarray(b, np.float64)
    s_w = row_scales(w, b, s_in) if s_w is None else np.asarray(s_w, np.float64)
    wq = np.clip(np.round(w / s_w[:, None]), -QMAX, QMAX).astype(np.int8)
    bq = np.clip(np.round(b / (s_in * s_w)), -BIAS_MAX, BIAS_MAX).astype(np.int64)
    return wq, bq, (s_in * s_w).astype(F32)


def quantize_gru(wi, bi, wh, bh, h0, s_x: float, scales=(None, None)) -> tuple:
    """(int8 input weights, int32 input biases, GruQ8) of a float GRU layer whose input has
    scale s_x, its blocks' row scales `scales` (input, hidden; None: row_scales'). An initial
    state beyond +-1 is clipped to Q15's range: every later state is a mix of the one before
    and tanh values, so only the first steps can differ, and the export's check flies them."""
    h0 = np.asarray(h0, np.float64)
    wiq, biq, deq_i = _rows(wi, bi, s_x, scales[0])
    whq, bhq, deq_h = _rows(wh, bh, STATE_SCALE, scales[1])
    h0q = np.clip(np.round(h0 * 32768), -AMAX - 1, AMAX).astype(np.int64)
    return wiq, biq, GruQ8(deq_i=deq_i, wh=whq, bh=bhq, deq_h=deq_h, h0=h0q)


def section_bytes(n_in: int, hd: int) -> int:
    """Bytes of a GRU layer's section of the qnet."""
    g, p, q = pad4(3 * hd), pad4(n_in), pad4(hd)
    return g * p + 8 * g + g * q + 8 * g + 2 * q


def pack_section(wi: np.ndarray, bi: np.ndarray, g: GruQ8, pack_weights, pack_i32, pack_f32) -> bytes:
    """The section's bytes: input block, hidden block, h0 (int16, natural order)."""
    rows = pad4(3 * g.hidden)
    h0 = np.zeros(pad4(g.hidden), "<i2")
    h0[:g.hidden] = g.h0
    return b"".join([pack_weights(wi), pack_i32(bi, rows), pack_f32(g.deq_i, rows),
                     pack_weights(g.wh), pack_i32(g.bh, rows), pack_f32(g.deq_h, rows), h0.tobytes()])


def unpack_section(data: bytes, off: int, n_in: int, hd: int, unpack_weights) -> tuple:
    """(wi, bi, GruQ8) from the section at `off` (no checks: validate does them)."""
    rows, real = pad4(3 * hd), 3 * hd
    i32 = lambda at, k: np.frombuffer(data, "<i4", k, at).astype(np.int64)  # noqa: E731
    f32 = lambda at, k: np.frombuffer(data, "<f4", k, at).astype(F32)  # noqa: E731
    wb = rows * pad4(n_in)
    wi = unpack_weights(data[off:off + wb], n_in, real)
    bi, deq_i = i32(off + wb, real), f32(off + wb + 4 * rows, real)
    off += wb + 8 * rows
    hb = rows * pad4(hd)
    wh = unpack_weights(data[off:off + hb], hd, real)
    bh, deq_h = i32(off + hb, real), f32(off + hb + 4 * rows, real)
    off += hb + 8 * rows
    h0 = np.frombuffer(data, "<i2", hd, off).astype(np.int64)
    return wi, bi, GruQ8(deq_i=deq_i, wh=wh, bh=bh, deq_h=deq_h, h0=h0)

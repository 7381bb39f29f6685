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

from neuromotor.policy import gru_q8
from neuromotor.policy.gru_q8 import STATE_SCALE, quantize_gru
from neuromotor.policy.int_arith import (AMAX, BIAS_MAX, F32, MAX_IN, MULT_MAX, QMAX, SHIFT_MAX, TANH_STEP,  # noqa: F401
                                         TANH_ZMAX, deq_q16, gru_step, int_dense, quantize_input, requantize,
                                         scale_round, tanh_q15, tanh_table)
from neuromotor.policy.spec import ACTIVATIONS, InvalidPolicyError, LayerSizes, PolicySpec, clamp

# The fitted quantisation (rounding.py, finetune.py) gives inputs and activations this
# factor above the largest calibration value: other observations go further (a saturated
# input can move the action far), and int16 keeps 14 bits of resolution after it.
HEADROOM = 2.0


@dataclass
class QuantizedPolicy(LayerSizes):
    """The contents of a dtype-int8 policy file. Hidden layers carry (w, bias, mult);
    `shifts[l]` is hidden layer l's right shift; the last layer carries (w, bias) and
    `deq` (float32 per row: the accumulator's scale). A GRU layer (`kinds[l]` "gru") carries
    its input block in (w, bias), mult None and shift 0, and the rest in `grus[l]` (GruQ8);
    the policy then has a state (int16 Q15 per unit, `step`, `reset`, as PolicySpec's)."""
    weights: list            # per layer int8 (out, in); GRU (3H, in)
    biases: list             # per layer int32 (out,)
    mults: list              # per hidden layer int32 (out,); GRU None
    shifts: list             # per hidden layer int; GRU 0
    deq: np.ndarray          # float32 (act_dim,)
    activations: list
    obs_mean: np.ndarray
    in_mul: np.ndarray       # float32 (obs_dim,): 1 / (obs_std * input scale), what the device multiplies by
    action_scale: np.ndarray
    action_offset: np.ndarray
    action_low: np.ndarray
    action_high: np.ndarray
    meta: dict = field(default_factory=dict)
    kinds: list = None       # per layer "dense" or "gru"; None: all dense
    grus: list = None        # per layer GruQ8 for a GRU, None for dense

    dtype = "int8"

    def __post_init__(self):
        n = len(self.weights)
        self.kinds = ["dense"] * n if self.kinds is None else list(self.kinds)
        self.grus = [None] * n if self.grus is None else list(self.grus)
        self.weights = [np.ascontiguousarray(w, np.int8) for w in self.weights]
        self.biases = [np.ascontiguousarray(b, np.int64) for b in self.biases]
        self.mults = [None if m is None else np.ascontiguousarray(m, np.int64) for m in self.mults]
        self.shifts = [int(s) for s in self.shifts]
        for name in ("deq", "obs_mean", "in_mul", "action_scale", "action_offset", "action_low", "action_high"):
            setattr(self, name, np.ascontiguousarray(getattr(self, name), F32))
        self.reset()
        self.validate()

    has_limits = True

    @property
    def sizes(self) -> list:
        return [self.weights[0].shape[1]] + [w.shape[0] // 3 if k == "gru" else w.shape[0]
                                             for w, k in zip(self.weights, self.kinds)]

    @property
    def recurrent(self) -> bool:
        return "gru" in self.kinds

    @property
    def state_size(self) -> int:
        """Units of recurrent state (int16 each): the GRU layers' hidden sizes, summed."""
        return sum(g.hidden for g in self.grus if g is not None)

    def initial_state(self) -> np.ndarray:
        """The int16 (as int64) state an episode starts in: the GRU layers' h0, in layer order."""
        return np.concatenate([np.zeros(0, np.int64)] + [g.h0 for g in self.grus if g is not None])

    def validate(self) -> None:
        """Raise InvalidPolicyError naming the first value a device would refuse
        (the checks of nm_q8_check, in its order)."""
        n = len(self.weights)
        if not (n >= 1 and len(self.biases) == n == len(self.activations) == len(self.kinds) == len(self.grus)
                and len(self.mults) == n - 1 and len(self.shifts) == n - 1):
            raise InvalidPolicyError("int8 policy needs weights, biases, activations and kinds per layer and "
                                     "multipliers and a shift per hidden layer")
        for i, (k, g) in enumerate(zip(self.kinds, self.grus)):
            if k not in ("dense", "gru") or (k == "gru") != (g is not None):
                raise InvalidPolicyError(f"layer {i}: kind {k!r} with {'no ' if g is None else ''}GRU parts")
            if k == "gru" and i == n - 1:
                raise InvalidPolicyError("the last layer of an int8 policy is dense, not a GRU")
            if k == "gru" and (self.activations[i] != "identity" or self.mults[i] is not None):
                raise InvalidPolicyError(f"layer {i}: a GRU layer has no activation and no multipliers")
            if k == "dense" and i < n - 1 and self.mults[i] is None:
                raise InvalidPolicyError(f"layer {i}: a dense hidden layer needs its multipliers")
        sizes = self.sizes
        if max(sizes[:-1]) > MAX_IN:
            raise InvalidPolicyError(f"an int8 layer takes at most {MAX_IN} inputs, this one "
                                     f"{max(sizes[:-1])} (its int32 accumulators could overflow)")
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            if w.ndim != 2 or b.shape != (w.shape[0],) or w.shape[1] != sizes[i]:
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
        for i, g in enumerate(self.grus):
            if g is not None:
                g.validate(i, self.weights[i], self.biases[i])
        for i, (m, s) in enumerate(zip(self.mults, self.shifts)):
            if m is None:
                continue
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

    def _layers(self, obs: np.ndarray, state: np.ndarray) -> tuple:
        """(every layer's integer input, the observation first; the next state)."""
        xs, new, at = [self.input_q(obs)], [], 0
        for i, (w, b, g) in enumerate(zip(self.weights[:-1], self.biases, self.grus)):
            if g is not None:
                h = state[..., at:at + g.hidden]
                xs.append(gru_step(xs[-1], h, w, b, g.deq_i, g.wh, g.bh, g.deq_h))
                new.append(xs[-1])
                at += g.hidden
            else:
                xs.append(requantize(int_dense(xs[-1], w, b), self.mults[i], self.shifts[i],
                                     self.activations[i] == "relu"))
        return xs, (np.concatenate(new, axis=-1) if new else state)

    def hidden(self, obs: np.ndarray) -> list:
        """Every layer's integer input (the observation first), as int64 arrays (a recurrent
        policy's from its initial state)."""
        return self._layers(obs, self.initial_state())[0]

    def accumulators(self, obs: np.ndarray) -> np.ndarray:
        return int_dense(self.hidden(obs)[-1], self.weights[-1], self.biases[-1])

    def step(self, obs: np.ndarray, state: np.ndarray) -> tuple:
        """(actions, next state) for one observation (obs_dim,) or a batch (B, obs_dim) from
        `state` (state_size,) or (B, state_size) (int16 values; one state broadcast over a
        batch): what nm_q8_mlp then nm_clamp compute. Pure."""
        obs = np.asarray(obs, dtype=F32)
        state = np.asarray(state, np.int64)
        if obs.ndim not in (1, 2) or obs.shape[-1] != self.obs_dim:
            raise ValueError(f"observation has shape {obs.shape}, expected ({self.obs_dim},) or (batch, {self.obs_dim})")
        if state.ndim not in (1, 2) or state.shape[-1] != self.state_size \
                or (state.ndim == 2 and (obs.ndim != 2 or len(state) != len(obs))):
            raise ValueError(f"state has shape {state.shape}, expected ({self.state_size},) or one row per observation")
        if not np.isfinite(obs).all():
            raise ValueError("observation has non-finite values")
        if obs.ndim == 2 and state.ndim == 1:
            state = np.broadcast_to(state, (len(obs), self.state_size))
        xs, new = self._layers(obs, state)
        return self.actions(int_dense(xs[-1], self.weights[-1], self.biases[-1])), new

    def forward(self, obs: np.ndarray) -> np.ndarray:
        """Actions in float32, clamped; what nm_q8_mlp then nm_clamp compute (bit for bit
        where the target has no fused multiply-add). A recurrent policy steps from the state
        it keeps, as PolicySpec.forward does."""
        obs = np.asarray(obs, dtype=F32)
        if not self.recurrent:
            if not np.isfinite(obs).all():
                raise ValueError("observation has non-finite values")
            return self.actions(self.accumulators(obs))
        return self._step_kept(obs)

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


def weight_scales(w: np.ndarray) -> np.ndarray:
    """float64 (out,): each row's weight scale, its largest |weight| / QMAX."""
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
    None; a GRU's a pair, its input block's and its hidden block's) replaces the weights'
    scales (largest |weight| of each row / QMAX; layer 0's weights times `input_ranges`);
    weights beyond +-QMAX steps are clipped."""
    if not spec.has_limits:
        raise InvalidPolicyError("an int8 policy needs action limits (export it from its run directory)")
    kinds = getattr(spec, "kinds", None) or ["dense"] * len(spec.weights)
    for i, (a, k) in enumerate(zip(spec.activations, kinds)):
        if k == "dense" and i < len(kinds) - 1 and a not in ("identity", "relu"):
            raise InvalidPolicyError(f"layer {i} is {a}: int8 hidden layers are identity or relu")
        if k == "dense" and i == len(kinds) - 1 and a not in ("identity", "relu", "tanh"):
            raise InvalidPolicyError(f"the last layer is {a}: an int8 output layer is identity, relu or tanh")
        if k == "gru" and i == len(kinds) - 1:
            raise InvalidPolicyError("the last layer is a GRU: an int8 output layer is dense")
    obs = np.asarray(calib_obs, F32)
    rank = 3 if "gru" in kinds else 2
    if obs.ndim != rank or obs.shape[-1] != spec.obs_dim or not obs.size or not np.isfinite(obs).all():
        shape = "(steps, episodes, {})" if rank == 3 else "(n, {})"
        raise InvalidPolicyError(f"calibration observations must be finite, shape {shape.format(spec.obs_dim)}")
    # Each input gets the whole int16 range: its calibrated range r goes into in_mul (the
    # run's obs_std times r, inverted) and into layer 0's weights (W diag(r)).
    obs_std = (spec.obs_std * input_ranges(spec, obs.reshape(-1, spec.obs_dim), headroom)).astype(F32)
    in_scale = F32(1.0 / AMAX)
    # The device multiplies by this reciprocal (no soft-float division per input on cores
    # without an FPU); it is rounded to float32 once, here.
    in_mul = (1.0 / (obs_std.astype(np.float64) * np.float64(in_scale))).astype(F32)
    n = len(spec.weights)
    weights, biases, mults, shifts, grus = [], [], [], [], [None] * n
    s_x = np.float64(in_scale)
    q = quantize_input(obs, spec.obs_mean, in_mul)  # the integer input of the layer being quantised
    inputs, scales = [q], []
    deq = None
    for i, (w, b, act) in enumerate(zip(spec.weights, spec.biases, spec.activations)):
        if i == 0:
            w = w * (obs_std / spec.obs_std).astype(np.float64)[None, :]
        if kinds[i] == "gru":
            # The state is the output, at the one scale 2^-15: no activation to calibrate; the
            # layers after it see the integer states of the calibration episodes.
            wq, bq, grus[i] = quantize_gru(w, b, spec.hidden_weights[i], spec.hidden_biases[i],
                                           spec.initial_hidden[i], s_x,
                                           (None, None) if row_scales is None or row_scales[i] is None
                                           else row_scales[i])
            weights.append(wq)
            biases.append(bq)
            mults.append(None)
            shifts.append(0)
            g, h, hs = grus[i], np.broadcast_to(grus[i].h0, (*q.shape[1:-1], grus[i].hidden)), []
            for x_t in q:
                h = gru_step(x_t, h, wq, bq, g.deq_i, g.wh, g.bh, g.deq_h)
                hs.append(h)
            q = np.stack(hs)
            inputs.append(q)
            scales.append(STATE_SCALE)
            s_x = np.float64(STATE_SCALE)
            continue
        s_w = weight_scales(w) if row_scales is None or row_scales[i] is None else np.asarray(row_scales[i], np.float64)
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
                           action_low=spec.action_low, action_high=spec.action_high, meta=dict(spec.meta),
                           kinds=kinds, grus=grus)
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


def layer_bytes(n_in: int, n_out: int, last: bool, kind: str = "dense") -> int:
    if kind == "gru":
        return gru_q8.section_bytes(n_in, n_out)
    return _pad4(n_out) * _pad4(n_in) + 8 * _pad4(n_out) + (0 if last else 4)


def net_bytes(sizes, kinds=None) -> int:
    n = len(sizes) - 1
    kinds = kinds or ["dense"] * n
    return 8 * sizes[0] + 8 * sizes[-1] + sum(
        layer_bytes(a, b, i == n - 1, k) for i, (a, b, k) in enumerate(zip(sizes[:-1], sizes[1:], kinds)))


def pack_qnet(qp: QuantizedPolicy) -> bytes:
    """The qnet nm_q8_mlp takes (the int8 file's payload without the limits)."""
    parts = [_f32(qp.obs_mean, qp.obs_dim), _f32(qp.in_mul, qp.obs_dim)]
    n = len(qp.weights)
    for i, (w, b) in enumerate(zip(qp.weights, qp.biases)):
        if qp.grus[i] is not None:
            parts.append(gru_q8.pack_section(w, b, qp.grus[i], pack_weights, _i32, _f32))
            continue
        rows = _pad4(w.shape[0])
        parts += [pack_weights(w), _i32(b, rows)]
        parts += [_f32(qp.deq, rows)] if i == n - 1 else [_i32(qp.mults[i], rows), _i32([qp.shifts[i]], 1)]
    parts += [_f32(qp.action_scale, qp.act_dim), _f32(qp.action_offset, qp.act_dim)]
    return b"".join(parts)


def unpack_qnet(data: bytes, sizes, activations, limits, kinds=None) -> dict:
    """The QuantizedPolicy fields of a qnet (no checks: QuantizedPolicy validates)."""
    s0, sl, n = sizes[0], sizes[-1], len(sizes) - 1
    kinds = kinds or ["dense"] * n
    f = lambda off, k: np.frombuffer(data, "<f4", k, off).astype(F32)  # noqa: E731
    i32 = lambda off, k: np.frombuffer(data, "<i4", k, off).astype(np.int64)  # noqa: E731
    out = dict(obs_mean=f(0, s0), in_mul=f(4 * s0, s0), weights=[], biases=[], mults=[], shifts=[],
               activations=list(activations), kinds=list(kinds), grus=[None] * n)
    off = 8 * s0
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        if kinds[i] == "gru":
            wi, bi, out["grus"][i] = gru_q8.unpack_section(data, off, a, b, unpack_weights)
            out["weights"].append(wi)
            out["biases"].append(bi)
            out["mults"].append(None)
            out["shifts"].append(0)
            off += gru_q8.section_bytes(a, b)
            continue
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

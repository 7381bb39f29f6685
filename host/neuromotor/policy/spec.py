"""What a deployable policy is, independent of the algorithm that trained it.

A `PolicySpec` is the contract between training (TD3, PPO, on-device TD3), import
(ONNX, RLtools checkpoints) and export: a stack of dense and GRU layers with
per-layer activations, the observation normalisation applied before it, the
affine map applied after it and the action limits (the env's action bounds)
every action is clamped to last. `step` (and `forward`) is the NumPy float32
reference every device backend is checked against.

Every number in a spec is finite and obs_std is positive: a spec is what
reaches a motor, so a diverged network is refused here (InvalidPolicyError)
rather than exported.
"""

from dataclasses import dataclass, field

import numpy as np

from neuromotor.envs import env_class
from neuromotor.errors import UserError

# The index is the activation's code in the policy file (docs/policy-format.md).
ACTIVATIONS = ("identity", "relu", "tanh", "sigmoid", "fast_tanh")
KINDS = ("dense", "gru")
HALF = np.float32(0.5)
ONE = np.float32(1.0)


class InvalidPolicyError(UserError, ValueError):
    """The policy's shapes or numbers cannot be deployed (NaN/inf, obs_std <= 0, low > high)."""


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # exp(-x) overflows to inf for x < -88, and 1 / inf is the right limit, 0
    with np.errstate(over="ignore"):
        return (ONE / (ONE + np.exp(-x))).astype(np.float32)


def _fast_tanh(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, np.float32(-3), np.float32(3)).astype(np.float32)
    x2 = x * x
    return x * (np.float32(27) + x2) / (np.float32(27) + np.float32(9) * x2)


def _activate(name: str, x: np.ndarray) -> np.ndarray:
    if name == "relu":
        return np.maximum(x, 0, dtype=np.float32)
    if name == "tanh":
        return np.tanh(x)
    if name == "sigmoid":
        return _sigmoid(x)
    if name == "fast_tanh":
        return _fast_tanh(x)
    return x


def gru_step(x, h, wi, bi, wh, bh) -> np.ndarray:
    """One GRU step in float32, gates in PyTorch's order r, z, n with b_hn inside the reset
    gate's product (ONNX linear_before_reset=1, RLtools)."""
    n_h = h.shape[-1]
    gi = x @ wi.T + bi
    gh = h @ wh.T + bh
    r = _sigmoid(gi[..., :n_h] + gh[..., :n_h])
    z = _sigmoid(gi[..., n_h:2 * n_h] + gh[..., n_h:2 * n_h])
    n = np.tanh(gi[..., 2 * n_h:] + r * gh[..., 2 * n_h:])
    return ((ONE - z) * n + z * h).astype(np.float32)


def clamp(y: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """y clamped into [low, high]; NaN becomes the midpoint low/2 + high/2 (in float32,
    exactly as nm_clamp in device/native/nm_kernels.h computes it)."""
    mid = HALF * low + HALF * high
    return np.where(np.isnan(y), mid, np.where(y < low, low, np.where(y > high, high, y))).astype(np.float32)


def _nonfinite(name: str, a: np.ndarray) -> str:
    bad = ~np.isfinite(a)
    if not bad.any():
        return ""
    n_nan = int(np.isnan(a).sum())
    return f"{name} ({n_nan} NaN, {int(bad.sum()) - n_nan} inf of {a.size})"


class LayerSizes:
    """The layer widths of a policy whose `weights` are (out, in) per layer, and the state its
    `forward` keeps when it is recurrent (`step`, `initial_state` and `recurrent` are its own)."""

    _state = None  # forward's own recurrent state, None: the initial one

    def reset(self) -> None:
        """Return the state `forward` keeps to the initial state (an episode starts)."""
        self._state = None

    def _step_kept(self, obs: np.ndarray) -> np.ndarray:
        """The actions of `obs` from the kept state, which then moves on one step."""
        state = self.initial_state() if self._state is None else self._state
        if self._state is not None and (state.ndim != obs.ndim or state.ndim == 2 and len(state) != len(obs)):
            raise ValueError(f"observation has shape {obs.shape}, but the policy's state is {state.shape} "
                             "(call reset() to start episodes of another batch size)")
        action, self._state = self.step(obs, state)
        return action

    @property
    def sizes(self) -> list:
        return [self.weights[0].shape[1]] + [w.shape[0] for w in self.weights]

    @property
    def obs_dim(self) -> int:
        return self.sizes[0]

    @property
    def act_dim(self) -> int:
        return self.sizes[-1]


@dataclass
class PolicySpec(LayerSizes):
    """A deployable policy: dense and GRU layers with its observation normalisation, action map
    and limits.

    `step(obs, state)` is pure: it gives float32 actions (clamped to the action limits, exactly
    as the boards compute them) and the next recurrent state. Calling the spec (``spec(obs)``,
    the same as ``forward``) steps from a state the spec keeps itself: `reset()` returns it to
    the initial state (an episode's start). A spec without GRU layers has no state
    (`state_size` 0) and `reset` does nothing.

    A GRU layer i holds its input weights and biases in `weights[i]` (3H, n_in) and `biases[i]`
    (3H,), rows in gate order r, z, n, and its hidden ones in `hidden_weights[i]` (3H, H),
    `hidden_biases[i]` (3H,) and its initial state in `initial_hidden[i]` (H,); those three
    lists hold None for dense layers. Its activation is "identity" (its gates' are fixed).
    """

    weights: list            # per layer, float32 (out, in); GRU: (3H, in)
    biases: list             # per layer, float32 (out,); GRU: (3H,)
    activations: list        # per layer, one of ACTIVATIONS
    obs_mean: np.ndarray     # float32 (obs_dim,)
    obs_std: np.ndarray      # float32 (obs_dim,); obs is (obs - mean) / std
    action_scale: np.ndarray  # float32 (act_dim,); action is out * scale + offset
    action_offset: np.ndarray
    # float32 (act_dim,) each, env units, or both None (a version-1 policy file: no clamp)
    action_low: np.ndarray = None
    action_high: np.ndarray = None
    meta: dict = field(default_factory=dict)  # env, algo, seed, step: informational only
    kinds: list = None           # per layer, one of KINDS; None: all dense
    hidden_weights: list = None  # per layer, GRU (3H, H), dense None
    hidden_biases: list = None   # per layer, GRU (3H,), dense None
    initial_hidden: list = None  # per layer, GRU (H,), dense None

    def __post_init__(self):
        f32 = lambda a: None if a is None else np.ascontiguousarray(a, dtype=np.float32)  # noqa: E731
        self.weights = [f32(w) for w in self.weights]
        self.biases = [f32(b) for b in self.biases]
        n = len(self.weights)
        self.kinds = ["dense"] * n if self.kinds is None else list(self.kinds)
        for name in ("hidden_weights", "hidden_biases", "initial_hidden"):
            value = getattr(self, name)
            setattr(self, name, [None] * n if value is None else [f32(a) for a in value])
        for name in ("obs_mean", "obs_std", "action_scale", "action_offset", "action_low", "action_high"):
            if getattr(self, name) is not None:
                setattr(self, name, f32(getattr(self, name)))
        self.reset()
        self.validate()

    @property
    def sizes(self) -> list:
        return [self.weights[0].shape[1]] + [w.shape[0] // 3 if k == "gru" else w.shape[0]
                                             for w, k in zip(self.weights, self.kinds)]

    def __repr__(self) -> str:
        # the shape of the network and where it came from; the weights would fill a screen
        layers = ", ".join(f"{k} {a}" if k != "dense" else a for k, a in zip(self.kinds, self.activations))
        meta = "".join(f", {k}={self.meta[k]!r}" for k in ("env", "algo", "seed", "step") if k in self.meta)
        return f"PolicySpec(sizes={self.sizes}, layers=[{layers}]{meta})"

    @property
    def has_limits(self) -> bool:
        return self.action_low is not None

    @property
    def recurrent(self) -> bool:
        """Whether the policy has GRU layers, i.e. a state carried from step to step."""
        return "gru" in self.kinds

    @property
    def state_size(self) -> int:
        """Floats of recurrent state: the GRU layers' hidden sizes, summed (0 for an MLP)."""
        return sum(h.shape[0] for h in self.initial_hidden if h is not None)

    def initial_state(self) -> np.ndarray:
        """The state an episode starts in: the GRU layers' initial states in layer order."""
        return np.concatenate([np.zeros(0, np.float32)] + [h for h in self.initial_hidden if h is not None])

    def validate(self) -> None:
        """Raise InvalidPolicyError naming the first problem: shapes, then values."""
        n = len(self.weights)
        if not self.weights or not (n == len(self.biases) == len(self.activations) == len(self.kinds)
                                    == len(self.hidden_weights) == len(self.hidden_biases) == len(self.initial_hidden)):
            raise InvalidPolicyError("policy needs at least one layer and one bias, activation and kind per layer")
        for i, (w, b, a, k) in enumerate(zip(self.weights, self.biases, self.activations, self.kinds)):
            if k not in KINDS:
                raise InvalidPolicyError(f"layer {i}: kind {k!r} is not one of {KINDS}")
            if w.ndim != 2 or b.shape != (w.shape[0],):
                raise InvalidPolicyError(f"layer {i}: weight {w.shape} and bias {b.shape} do not match")
            if a not in ACTIVATIONS:
                raise InvalidPolicyError(f"layer {i}: activation {a!r} is not one of {ACTIVATIONS}")
            extra = (self.hidden_weights[i], self.hidden_biases[i], self.initial_hidden[i])
            if k == "dense" and any(e is not None for e in extra):
                raise InvalidPolicyError(f"layer {i}: a dense layer has no hidden weights, biases or initial state")
            if k == "gru":
                hd = w.shape[0] // 3
                if a != "identity":
                    raise InvalidPolicyError(f"layer {i}: a GRU layer's activation is fixed (identity), got {a!r}")
                if w.shape[0] != 3 * hd or hd == 0 or any(e is None for e in extra) \
                        or extra[0].shape != (3 * hd, hd) or extra[1].shape != (3 * hd,) or extra[2].shape != (hd,):
                    shapes = [None if e is None else e.shape for e in extra]
                    raise InvalidPolicyError(
                        f"layer {i}: GRU input weights {w.shape} need hidden weights (3H, H), hidden biases (3H,) "
                        f"and an initial state (H,) with 3H = {w.shape[0]}, got {shapes}")
        sizes = self.sizes
        for i, w in enumerate(self.weights[1:], 1):
            if w.shape[1] != sizes[i]:
                raise InvalidPolicyError(f"layer {i}: expects {w.shape[1]} inputs, previous layer gives {sizes[i]}")
        if (self.action_low is None) != (self.action_high is None):
            raise InvalidPolicyError("action_low and action_high come together (or neither, for no clamp)")
        vectors = [("obs_mean", self.obs_dim), ("obs_std", self.obs_dim),
                   ("action_scale", self.act_dim), ("action_offset", self.act_dim)]
        if self.has_limits:
            vectors += [("action_low", self.act_dim), ("action_high", self.act_dim)]
        for name, size in vectors:
            if getattr(self, name).shape != (size,):
                raise InvalidPolicyError(f"{name} has shape {getattr(self, name).shape}, expected ({size},)")
        bad = [_nonfinite(f"layer {i} weights", w) for i, w in enumerate(self.weights)]
        bad += [_nonfinite(f"layer {i} biases", b) for i, b in enumerate(self.biases)]
        for what, arrays in (("hidden weights", self.hidden_weights), ("hidden biases", self.hidden_biases),
                             ("initial state", self.initial_hidden)):
            bad += [_nonfinite(f"layer {i} {what}", a) for i, a in enumerate(arrays) if a is not None]
        bad += [_nonfinite(name, getattr(self, name)) for name, _ in vectors]
        bad = [b for b in bad if b]
        if bad:
            raise InvalidPolicyError(f"policy has non-finite values (training diverged?): {', '.join(bad)}")
        if np.any(self.obs_std <= 0):
            raise InvalidPolicyError(f"obs_std must be positive, got {self.obs_std.min():g} "
                                     f"at index {int(self.obs_std.argmin())}")
        if self.has_limits and np.any(self.action_low > self.action_high):
            i = int(np.argmax(self.action_low > self.action_high))
            raise InvalidPolicyError(f"action limits of dimension {i}: low {self.action_low[i]:g} "
                                     f"> high {self.action_high[i]:g}")

    def step(self, obs: np.ndarray, state: np.ndarray):
        """(action, next state) for one observation (obs_dim,) or a batch (B, obs_dim), from
        `state` (state_size,) or (B, state_size) (one state broadcast over a batch). Actions are
        float32, clamped to the action limits (NaN -> their midpoint); non-finite observations
        are a ValueError, as on the device. Pure: nothing in the spec changes."""
        obs = np.asarray(obs, dtype=np.float32)
        state = np.asarray(state, dtype=np.float32)
        if obs.ndim not in (1, 2) or obs.shape[-1] != self.obs_dim:
            raise ValueError(f"observation has shape {obs.shape}, expected ({self.obs_dim},) or (batch, {self.obs_dim})")
        if state.ndim not in (1, 2) or state.shape[-1] != self.state_size \
                or (state.ndim == 2 and (obs.ndim != 2 or len(state) != len(obs))):
            raise ValueError(f"state has shape {state.shape}, expected ({self.state_size},) or one row per observation")
        if not np.isfinite(obs).all():
            raise ValueError("observation has non-finite values")
        if obs.ndim == 2 and state.ndim == 1:
            state = np.broadcast_to(state, (len(obs), self.state_size))
        out_state = []
        at = 0
        # Finite inputs can still overflow float32 to inf (and inf - inf to NaN):
        # the clamp below is what handles that, as on the device.
        with np.errstate(over="ignore", invalid="ignore"):
            x = (obs - self.obs_mean) / self.obs_std
            for i, (w, b, a, k) in enumerate(zip(self.weights, self.biases, self.activations, self.kinds)):
                if k == "gru":
                    hd = w.shape[0] // 3
                    x = gru_step(x, state[..., at:at + hd], w, b, self.hidden_weights[i], self.hidden_biases[i])
                    out_state.append(x)
                    at += hd
                else:
                    x = _activate(a, x @ w.T + b)
            y = x * self.action_scale + self.action_offset
        action = clamp(y, self.action_low, self.action_high) if self.has_limits else y
        new_state = np.concatenate(out_state, axis=-1) if out_state else np.array(state, np.float32)
        return action, new_state

    def forward(self, obs: np.ndarray) -> np.ndarray:
        """Actions for a batch (or a single row) of observations, in float32, clamped to
        the action limits (NaN -> their midpoint). A recurrent spec steps from the state it
        keeps (after `reset`, the initial state, one per row of a batch), which must then keep
        the batch's shape. Non-finite observations are a ValueError, as on the device."""
        if not self.recurrent:
            return self.step(obs, np.zeros(0, np.float32))[0]
        return self._step_kept(np.asarray(obs, dtype=np.float32))

    __call__ = forward


def env_name_for(spec, default="pendulum"):
    meta = getattr(spec, "meta", {}) or {}
    return meta.get("env") or default


def env_for(spec, env_name=None, env_kwargs=None):
    """The env factory a policy acts in (hil steps it, int8 calibrates on it): `env_name` (with env_kwargs) if given, else the run's env
    (name and env_kwargs in the policy's meta), else pendulum; it must fit the policy."""
    if env_name is None:
        meta = getattr(spec, "meta", {}) or {}
        env_name, env_kwargs = env_name_for(spec), meta.get("env_kwargs")
    factory = env_class(env_name, env_kwargs)
    if (factory.obs_dim, factory.act_dim) != (spec.obs_dim, spec.act_dim):
        raise UserError(f"environment {env_name!r} observes {factory.obs_dim} and acts with {factory.act_dim} "
                        f"numbers; this policy takes {spec.obs_dim} and gives {spec.act_dim} (give --env)")
    return env_name, factory

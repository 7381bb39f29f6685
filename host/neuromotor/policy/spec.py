"""What a deployable policy is, independent of the algorithm that trained it.

A `PolicySpec` is the contract between training (TD3, PPO, on-device TD3) and
export: a plain MLP with per-layer activations, the observation normalisation
applied before it, the affine map applied after it and the action limits
(the env's action bounds) every action is clamped to last. `forward` is the
NumPy reference every device backend is checked against.

Every number in a spec is finite and obs_std is positive: a spec is what
reaches a motor, so a diverged network is refused here (InvalidPolicyError)
rather than exported.
"""

from dataclasses import dataclass, field

import numpy as np

from neuromotor.envs import env_class
from neuromotor.errors import UserError

ACTIVATIONS = ("identity", "relu", "tanh")
HALF = np.float32(0.5)


class InvalidPolicyError(UserError, ValueError):
    """The policy's shapes or numbers cannot be deployed (NaN/inf, obs_std <= 0, low > high)."""


def _activate(name: str, x: np.ndarray) -> np.ndarray:
    if name == "relu":
        return np.maximum(x, 0, dtype=np.float32)
    if name == "tanh":
        return np.tanh(x)
    return x


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
    """The layer widths of a policy whose `weights` are (out, in) per layer."""

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
    """A deployable policy: an MLP with its observation normalisation, action map and limits.

    Calling it (``spec(obs)``, the same as ``forward``) gives float32 actions for one
    observation or a batch, clamped to the action limits, exactly as the boards compute them.
    """

    weights: list            # per layer, float32 (out, in)
    biases: list             # per layer, float32 (out,)
    activations: list        # per layer, one of ACTIVATIONS
    obs_mean: np.ndarray     # float32 (obs_dim,)
    obs_std: np.ndarray      # float32 (obs_dim,); obs is (obs - mean) / std
    action_scale: np.ndarray  # float32 (act_dim,); action is out * scale + offset
    action_offset: np.ndarray
    # float32 (act_dim,) each, env units, or both None (a version-1 policy file: no clamp)
    action_low: np.ndarray = None
    action_high: np.ndarray = None
    meta: dict = field(default_factory=dict)  # env, algo, seed, step: informational only

    def __post_init__(self):
        f32 = lambda a: np.ascontiguousarray(a, dtype=np.float32)  # noqa: E731
        self.weights = [f32(w) for w in self.weights]
        self.biases = [f32(b) for b in self.biases]
        for name in ("obs_mean", "obs_std", "action_scale", "action_offset", "action_low", "action_high"):
            if getattr(self, name) is not None:
                setattr(self, name, f32(getattr(self, name)))
        self.validate()

    @property
    def has_limits(self) -> bool:
        return self.action_low is not None

    def validate(self) -> None:
        """Raise InvalidPolicyError naming the first problem: shapes, then values."""
        if not self.weights or not (len(self.weights) == len(self.biases) == len(self.activations)):
            raise InvalidPolicyError("policy needs at least one layer and one bias and activation per layer")
        for i, (w, b, a) in enumerate(zip(self.weights, self.biases, self.activations)):
            if w.ndim != 2 or b.shape != (w.shape[0],):
                raise InvalidPolicyError(f"layer {i}: weight {w.shape} and bias {b.shape} do not match")
            if i and w.shape[1] != self.weights[i - 1].shape[0]:
                raise InvalidPolicyError(
                    f"layer {i}: expects {w.shape[1]} inputs, previous layer gives {self.weights[i - 1].shape[0]}")
            if a not in ACTIVATIONS:
                raise InvalidPolicyError(f"layer {i}: activation {a!r} is not one of {ACTIVATIONS}")
        if (self.action_low is None) != (self.action_high is None):
            raise InvalidPolicyError("action_low and action_high come together (or neither, for no clamp)")
        vectors = [("obs_mean", self.obs_dim), ("obs_std", self.obs_dim),
                   ("action_scale", self.act_dim), ("action_offset", self.act_dim)]
        if self.has_limits:
            vectors += [("action_low", self.act_dim), ("action_high", self.act_dim)]
        for name, n in vectors:
            if getattr(self, name).shape != (n,):
                raise InvalidPolicyError(f"{name} has shape {getattr(self, name).shape}, expected ({n},)")
        bad = [_nonfinite(f"layer {i} weights", w) for i, w in enumerate(self.weights)]
        bad += [_nonfinite(f"layer {i} biases", b) for i, b in enumerate(self.biases)]
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

    def forward(self, obs: np.ndarray) -> np.ndarray:
        """Actions for a batch (or a single row) of observations, in float32, clamped to
        the action limits (NaN -> their midpoint). Non-finite observations are a ValueError,
        as on the device."""
        obs = np.asarray(obs, dtype=np.float32)
        if not np.isfinite(obs).all():
            raise ValueError("observation has non-finite values")
        # Finite inputs can still overflow float32 to inf (and inf - inf to NaN):
        # the clamp below is what handles that, as on the device.
        with np.errstate(over="ignore", invalid="ignore"):
            x = (obs - self.obs_mean) / self.obs_std
            for w, b, a in zip(self.weights, self.biases, self.activations):
                x = _activate(a, x @ w.T + b)
            y = x * self.action_scale + self.action_offset
        return clamp(y, self.action_low, self.action_high) if self.has_limits else y

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

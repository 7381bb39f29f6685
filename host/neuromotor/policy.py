"""What a deployable policy is, independent of the algorithm that trained it.

A `PolicySpec` is the contract between training (TD3, PPO, on-device TD3) and
export: a plain MLP with per-layer activations, the observation normalisation
applied before it and the affine map applied after it. `forward` is the NumPy
reference every device backend is checked against.
"""

from dataclasses import dataclass, field

import numpy as np

ACTIVATIONS = ("identity", "relu", "tanh")


def _activate(name: str, x: np.ndarray) -> np.ndarray:
    if name == "relu":
        return np.maximum(x, 0, dtype=np.float32)
    if name == "tanh":
        return np.tanh(x)
    return x


@dataclass
class PolicySpec:
    weights: list            # per layer, float32 (out, in)
    biases: list             # per layer, float32 (out,)
    activations: list        # per layer, one of ACTIVATIONS
    obs_mean: np.ndarray     # float32 (obs_dim,)
    obs_std: np.ndarray      # float32 (obs_dim,); obs is (obs - mean) / std
    action_scale: np.ndarray  # float32 (act_dim,); action is out * scale + offset
    action_offset: np.ndarray
    meta: dict = field(default_factory=dict)  # env, algo, seed, step: informational only

    def __post_init__(self):
        f32 = lambda a: np.ascontiguousarray(a, dtype=np.float32)  # noqa: E731
        self.weights = [f32(w) for w in self.weights]
        self.biases = [f32(b) for b in self.biases]
        for name in ("obs_mean", "obs_std", "action_scale", "action_offset"):
            setattr(self, name, f32(getattr(self, name)))
        self.validate()

    @property
    def sizes(self) -> list:
        return [self.weights[0].shape[1]] + [w.shape[0] for w in self.weights]

    @property
    def obs_dim(self) -> int:
        return self.sizes[0]

    @property
    def act_dim(self) -> int:
        return self.sizes[-1]

    def validate(self) -> None:
        if not self.weights or not (len(self.weights) == len(self.biases) == len(self.activations)):
            raise ValueError("policy needs at least one layer and one bias and activation per layer")
        for i, (w, b, a) in enumerate(zip(self.weights, self.biases, self.activations)):
            if w.ndim != 2 or b.shape != (w.shape[0],):
                raise ValueError(f"layer {i}: weight {w.shape} and bias {b.shape} do not match")
            if i and w.shape[1] != self.weights[i - 1].shape[0]:
                raise ValueError(f"layer {i}: expects {w.shape[1]} inputs, previous layer gives {self.weights[i - 1].shape[0]}")
            if a not in ACTIVATIONS:
                raise ValueError(f"layer {i}: activation {a!r} is not one of {ACTIVATIONS}")
        for name, n in (("obs_mean", self.obs_dim), ("obs_std", self.obs_dim),
                        ("action_scale", self.act_dim), ("action_offset", self.act_dim)):
            if getattr(self, name).shape != (n,):
                raise ValueError(f"{name} has shape {getattr(self, name).shape}, expected ({n},)")
        if np.any(self.obs_std <= 0):
            raise ValueError("obs_std must be positive")

    def forward(self, obs: np.ndarray) -> np.ndarray:
        """Actions for a batch (or a single row) of observations, in float32."""
        x = (np.asarray(obs, dtype=np.float32) - self.obs_mean) / self.obs_std
        for w, b, a in zip(self.weights, self.biases, self.activations):
            x = _activate(a, x @ w.T + b)
        return x * self.action_scale + self.action_offset

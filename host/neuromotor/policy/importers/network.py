"""What an importer reads from a file, and how it becomes a deployable PolicySpec.

A file holds the layers, and sometimes the observation normalisation, an affine map on the
output (CleanRL's `tanh * action_scale + action_bias`) or the action bounds. What it lacks comes
from the caller: `obs_mean`/`obs_std`, `action_low`/`action_high`, or an env whose bounds are
taken. An actor whose output is tanh's [-1, 1] with no map of its own is rescaled to the bounds
(Stable-Baselines3's convention for TD3 and SAC: the user maps [-1, 1] to the env's range); any
other output is only clamped to them. Without bounds anywhere, a bounded output (tanh, sigmoid)
is clamped to its own range and an unbounded one is refused: every policy file has limits.
"""

from dataclasses import dataclass, field

import numpy as np

from neuromotor.envs import env_class
from neuromotor.errors import UserError
from neuromotor.policy.spec import PolicySpec

# an output activation's range, before any affine map
RANGES = {"tanh": (-1.0, 1.0), "fast_tanh": (-1.0, 1.0), "sigmoid": (0.0, 1.0)}


@dataclass
class Layer:
    kind: str                # "dense" or "gru"
    weight: np.ndarray       # (out, in); GRU: input weights (3H, in), gates r, z, n
    bias: np.ndarray
    activation: str = "identity"
    hidden_weight: np.ndarray = None  # GRU (3H, H)
    hidden_bias: np.ndarray = None    # GRU (3H,)
    initial: np.ndarray = None        # GRU (H,)

    @property
    def n_out(self) -> int:
        return self.weight.shape[0] // 3 if self.kind == "gru" else self.weight.shape[0]


@dataclass
class Network:
    """The policy as read from a file; None where the file does not say."""

    format: str
    layers: list = field(default_factory=list)
    obs_mean: np.ndarray = None
    obs_std: np.ndarray = None
    action_scale: np.ndarray = None
    action_offset: np.ndarray = None
    action_low: np.ndarray = None
    action_high: np.ndarray = None
    notes: dict = field(default_factory=dict)  # format-specific facts for the report


def _vector(name: str, value, n: int) -> np.ndarray:
    """An option's numbers as float32 (n,): a sequence of n, or one number for all."""
    a = np.asarray(value, dtype=np.float64).reshape(-1)
    if a.size == 1:
        a = np.full(n, a[0])
    if a.size != n:
        raise UserError(f"{name} has {a.size} numbers; this policy needs {n} (or one for all)")
    if not np.isfinite(a).all():
        raise UserError(f"{name} must be finite, got {value!r}")
    return a.astype(np.float32)


def _env_bounds(factory):
    """An env's action bounds, from one instance (a built-in class sets them per instance)."""
    one = factory(1)
    try:
        return np.asarray(one.action_low, np.float32), np.asarray(one.action_high, np.float32)
    finally:
        close = getattr(one, "close", None)
        if close:
            close()


def assemble(net: Network, obs_mean=None, obs_std=None, action_low=None, action_high=None,
             env: str = None, env_kwargs: dict = None):
    """(PolicySpec, report): the network with its normalisation, action map and limits; the
    report names the source of each ("file", an option, the env, or a default)."""
    if not net.layers:
        raise UserError(f"{net.format}: the file holds no layers")
    obs_dim, act_dim = net.layers[0].weight.shape[1], net.layers[-1].n_out
    sources = {}
    if env is not None and (action_low is not None or action_high is not None):
        raise UserError("give the action bounds either with --env or with --action-low/--action-high, not both")
    if (action_low is None) != (action_high is None):
        raise UserError("--action-low and --action-high come together")
    factory = None
    if env is not None:
        factory = env_class(env, env_kwargs)
        if (factory.obs_dim, factory.act_dim) != (obs_dim, act_dim):
            raise UserError(f"environment {env!r} observes {factory.obs_dim} and acts with {factory.act_dim} "
                            f"numbers; this policy takes {obs_dim} and gives {act_dim}")

    def pick(name, from_file, option, option_name, n, default, default_source):
        if option is not None:
            if from_file is not None:
                raise UserError(f"{option_name}: the file already holds {name.replace('_', ' ')}")
            sources[name] = option_name
            return _vector(option_name, option, n)
        if from_file is not None:
            sources[name] = "file"
            return _vector(name, from_file, n)
        sources[name] = default_source
        return np.full(n, default, np.float32)

    mean = pick("obs_mean", net.obs_mean, obs_mean, "--obs-mean", obs_dim, 0.0, "default (0)")
    std = pick("obs_std", net.obs_std, obs_std, "--obs-std", obs_dim, 1.0, "default (1)")
    if net.action_low is not None:
        low, high = _vector("action_low", net.action_low, act_dim), _vector("action_high", net.action_high, act_dim)
        bounds = "file"
        if factory is not None or action_low is not None:
            raise UserError("the file already holds the action bounds")
    elif factory is not None:
        low, high = _env_bounds(factory)
        bounds = f"env {env}"
    elif action_low is not None:
        low, high = _vector("--action-low", action_low, act_dim), _vector("--action-high", action_high, act_dim)
        bounds = "--action-low/--action-high"
    else:
        low = high = bounds = None
    out_range = RANGES.get(net.layers[-1].activation)
    if net.action_scale is not None:
        scale, offset = _vector("action_scale", net.action_scale, act_dim), _vector("action_offset", net.action_offset, act_dim)
        sources["action_scale"] = sources["action_offset"] = "file"
    elif out_range == (-1.0, 1.0) and bounds is not None:
        scale, offset = ((high - low) / 2).astype(np.float32), ((high + low) / 2).astype(np.float32)
        sources["action_scale"] = sources["action_offset"] = f"tanh's [-1, 1] rescaled to the bounds ({bounds})"
    else:
        scale, offset = np.ones(act_dim, np.float32), np.zeros(act_dim, np.float32)
        sources["action_scale"], sources["action_offset"] = "default (1)", "default (0)"
    if bounds is None:
        if out_range is None:
            raise UserError(f"{net.format}: the policy's output ({net.layers[-1].activation}) is unbounded and the "
                            "file holds no action bounds: give --env NAME or --action-low/--action-high")
        ends = np.stack([out_range[0] * scale + offset, out_range[1] * scale + offset]).astype(np.float32)
        low, high = ends.min(0), ends.max(0)
        bounds = f"the output's range ({net.layers[-1].activation})"
    sources["action_low"] = sources["action_high"] = bounds
    spec = PolicySpec(
        weights=[layer.weight for layer in net.layers], biases=[layer.bias for layer in net.layers],
        activations=[layer.activation for layer in net.layers], obs_mean=mean, obs_std=std,
        action_scale=scale, action_offset=offset, action_low=low, action_high=high,
        kinds=[layer.kind for layer in net.layers],
        hidden_weights=[layer.hidden_weight for layer in net.layers],
        hidden_biases=[layer.hidden_bias for layer in net.layers],
        initial_hidden=[layer.initial for layer in net.layers])
    if env is not None:
        spec.meta["env"] = env
        if env_kwargs:
            spec.meta["env_kwargs"] = env_kwargs
    report = {"format": net.format, "sizes": spec.sizes, "kinds": spec.kinds, "activations": spec.activations,
              "state_size": spec.state_size, "sources": sources, **net.notes}
    return spec, report

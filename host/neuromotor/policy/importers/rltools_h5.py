"""RLtools' HDF5 checkpoints (`actor` group; RAPTOR's foundation policy is one).

The layout, as RLtools writes it: a group per layer with a `type` attribute: `dense` (datasets
weights/parameters (out, in), biases/parameters (out,) or (1, out), attribute
`activation_function` IDENTITY, RELU, TANH, SIGMOID or FAST_TANH), `gru` (weights_input,
weights_hidden (3H, in) and (3H, H), biases_input, biases_hidden (3H,), initial_hidden_state
(H,), each under `parameters`; gates r, z, n with b_hn inside the reset gate's product, as
PyTorch), `mlp` (input_layer, hidden_layer_0.., output_layer; attribute num_layers),
`sequential` (layers/0, layers/1, ...) and `sample_and_squash` (tanh of the first half of its
input: the Gaussian's mean). A checkpoint may hold `example/input` (steps, batch, obs) and
`example/output`: the actor's outputs from a reset, which `read` replays and reports.
"""

import json
from dataclasses import replace

import numpy as np

from neuromotor.errors import UserError
from neuromotor.policy.importers.network import Layer, Network

ACTIVATIONS = {"IDENTITY": "identity", "RELU": "relu", "TANH": "tanh", "SIGMOID": "sigmoid",
               "FAST_TANH": "fast_tanh"}
EXAMPLE_TOLERANCE = 1e-4  # relative to the outputs' magnitude; float32 reorderings are ~1e-6
MAX_EXAMPLE = 1 << 22  # numbers of the example replayed (RAPTOR's: 22,000)


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _array(group, name: str, where: str) -> np.ndarray:
    if name not in group or "parameters" not in group[name]:
        raise UserError(f"{where}: no {name}/parameters dataset")
    data = group[name]["parameters"]
    if data.dtype.kind != "f" or data.ndim > 2:
        raise UserError(f"{where}/{name}: expected a float matrix, got {data.dtype} {data.shape}")
    return np.asarray(data[()], np.float32)


def _dense(group, where: str) -> Layer:
    w = _array(group, "weights", where)
    b = _array(group, "biases", where).reshape(-1)
    if w.ndim != 2 or b.shape != (w.shape[0],):
        raise UserError(f"{where}: weights {w.shape} and biases {b.shape} do not match")
    act = _text(group.attrs.get("activation_function", ""))
    if act not in ACTIVATIONS:
        raise UserError(f"{where}: activation function {act!r} cannot run on the boards "
                        f"(they run {', '.join(ACTIVATIONS)})")
    return Layer("dense", w, b, ACTIVATIONS[act])


def _gru(group, where: str) -> Layer:
    wi, wh = _array(group, "weights_input", where), _array(group, "weights_hidden", where)
    bi, bh = _array(group, "biases_input", where).reshape(-1), _array(group, "biases_hidden", where).reshape(-1)
    h0 = _array(group, "initial_hidden_state", where).reshape(-1)
    hd = h0.size
    if wi.ndim != 2 or wi.shape[0] != 3 * hd or wh.shape != (3 * hd, hd) or bi.shape != (3 * hd,) or bh.shape != (3 * hd,):
        raise UserError(f"{where}: GRU shapes do not fit a hidden size of {hd}: weights_input {wi.shape}, "
                        f"weights_hidden {wh.shape}, biases {bi.shape} and {bh.shape}")
    return Layer("gru", wi, bi, "identity", wh, bh, h0)


def _layers(group, where: str) -> list:
    kind = _text(group.attrs.get("type", ""))
    if kind == "dense":
        return [_dense(group, where)]
    if kind == "gru":
        return [_gru(group, where)]
    if kind == "mlp":
        count = int(group.attrs.get("num_layers", 0))
        names = ["input_layer"] + [f"hidden_layer_{i}" for i in range(count - 2)] + ["output_layer"]
        for name in names:
            if name not in group:
                raise UserError(f"{where}: the mlp has no {name}")
        return [_dense(group[name], f"{where}/{name}") for name in names]
    if kind == "sequential":
        if "layers" not in group:
            raise UserError(f"{where}: the sequential has no layers group")
        out = []
        for i in range(len(group["layers"])):
            if str(i) not in group["layers"]:
                raise UserError(f"{where}/layers: no layer {i} of {len(group['layers'])}")
            sub = f"{where}/layers/{i}"
            if _text(group["layers"][str(i)].attrs.get("type", "")) == "sample_and_squash":
                out[-1:] = [_squash(out[-1] if out else None, sub)]
            else:
                out += _layers(group["layers"][str(i)], sub)
        return out
    if kind == "sample_and_squash":
        raise UserError(f"{where}: sample_and_squash must follow a layer in a sequential")
    raise UserError(f"{where}: layer type {kind!r} cannot run on the boards (they run dense, gru, mlp, "
                    "sequential, sample_and_squash)")


def _squash(prev, where: str) -> Layer:
    """sample_and_squash's deterministic action: tanh of the first half (the mean) of an
    identity dense layer's outputs."""
    if prev is None or prev.kind != "dense" or prev.activation != "identity" or prev.n_out % 2:
        raise UserError(f"{where}: sample_and_squash must follow a dense layer with identity activation and an "
                        "even number of outputs")
    half = prev.n_out // 2
    return Layer("dense", prev.weight[:half], prev.bias[:half], "tanh")


def read(path) -> Network:
    """The actor of an RLtools checkpoint; its example, when it has one, in `notes`."""
    import h5py  # an optional dependency: only importing needs it

    where = str(path)
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise UserError(f"{where}: not an HDF5 file ({exc})") from None
    with f:
        if "actor" not in f:
            raise UserError(f"{where}: no 'actor' group (not an RLtools checkpoint)")
        net = Network("rltools-h5", _layers(f["actor"], "actor"))
        meta = f["actor"].attrs.get("meta")
        if meta is not None:
            try:
                net.notes["meta"] = json.loads(_text(meta))
            except ValueError:
                net.notes["meta"] = _text(meta)
        if "example" in f and "input" in f["example"] and "output" in f["example"]:
            x, y = f["example"]["input"], f["example"]["output"]
            if x.ndim == 3 and y.ndim == 3 and x.size <= MAX_EXAMPLE and y.size <= MAX_EXAMPLE:
                example = (np.asarray(x[()], np.float32), np.asarray(y[()], np.float32))
                net.notes["verify"] = lambda spec: _checked(spec, example, where)
    return net


def _checked(spec, example, where: str) -> dict:
    """The example replayed; refused when the policy read does not reproduce it (a layout this
    reader does not understand)."""
    diff = replay(spec, example)
    tolerance = EXAMPLE_TOLERANCE * max(1.0, float(np.abs(example[1]).max()))
    if not diff <= tolerance:
        raise UserError(f"{where}: the policy read does not reproduce the checkpoint's own example "
                        f"(max |difference| {diff:.3g} > {tolerance:.3g})")
    return {"example_steps": int(example[0].shape[0]), "example_batch": int(example[0].shape[1]),
            "example_max_abs_diff": diff}


def replay(spec, example) -> float:
    """The largest |difference| between the network's outputs (before the action map's clamp)
    and a checkpoint's example outputs, stepping through its (steps, batch, obs) inputs from
    the initial state."""
    x, y = example
    if x.shape[2] != spec.obs_dim or y.shape[:2] != x.shape[:2] or y.shape[2] != spec.act_dim:
        raise UserError(f"the checkpoint's example has shapes {x.shape} -> {y.shape}; the policy maps "
                        f"{spec.obs_dim} to {spec.act_dim}")
    free = replace(spec, action_low=None, action_high=None, action_scale=np.ones(spec.act_dim),
                   action_offset=np.zeros(spec.act_dim), obs_mean=np.zeros(spec.obs_dim), obs_std=np.ones(spec.obs_dim))
    free.reset()
    out = np.stack([free(step) for step in x])
    return float(np.abs(out - y).max())

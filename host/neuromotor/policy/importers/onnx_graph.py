"""ONNX graphs of actors: the chain of operators from the observation to the graph's first output.

Gemm, and MatMul with an Add of constants, are dense layers; Relu, Tanh and Sigmoid their
activations; Flatten, Reshape, Squeeze, Unsqueeze and Identity are no-ops on a chain that carries
one observation's features, and so is a Gather of index 0 on axis 0 after a GRU (the one step of
the sequence it was given, as torch exports `gru(x)[0]`); GRU (forward, default activations, linear_before_reset=1, which
is PyTorch's and this format's) is a GRU layer, its initial_h its initial state (zeros when it is
a graph input or absent). Elementwise Add, Sub, Mul and Div by constants are folded: into the
layer they follow when it has no activation yet, before the first layer into the observation
normalisation, after the last activation into the action map (CleanRL's
`tanh * action_scale + action_bias`), between layers into the next layer's weights. Anything
else on the chain is refused, naming the operator.
"""

import numpy as np

from neuromotor.errors import UserError
from neuromotor.policy.importers.network import Layer, Network

NO_OPS = ("Flatten", "Reshape", "Squeeze", "Unsqueeze", "Identity")
ACTIVATIONS = {"Relu": "relu", "Tanh": "tanh", "Sigmoid": "sigmoid"}
ELEMENTWISE = ("Add", "Sub", "Mul", "Div")
MAX_BYTES = 1 << 30


class _Chain:
    """The layers read so far, and the elementwise affine map x * s + o waiting on the chain."""

    def __init__(self, where: str):
        self.where, self.layers = where, []
        self.open = False  # the last layer's output has no activation yet: Add/Mul fold into it
        self.scale = self.shift = None  # pending elementwise map, float64 (n,)
        self.obs_affine = None  # (s, o) of the input, before the first layer
        self.width = None  # features on the chain

    def refuse(self, node, why: str):
        raise UserError(f"{self.where}: ONNX node {node.name or node.op_type!r} ({node.op_type}): {why}")

    def affine(self, node, op: str, c: np.ndarray):
        c = c.astype(np.float64).reshape(-1) if c.size > 1 else np.full(1, float(c.reshape(-1)[0]))
        if self.width is not None and c.size not in (1, self.width):
            self.refuse(node, f"a constant of {c.size} numbers on {self.width} features")
        s, o = (c, 0.0) if op == "Mul" else (1.0 / c, 0.0) if op == "Div" else (1.0, c if op == "Add" else -c)
        if self.open:
            last = self.layers[-1]
            w, b = last.weight.astype(np.float64), last.bias.astype(np.float64)
            s = np.broadcast_to(s, b.shape)
            last.weight, last.bias = (w * s[:, None]).astype(np.float32), (b * s + o).astype(np.float32)
            return
        base_s = 1.0 if self.scale is None else self.scale
        base_o = 0.0 if self.shift is None else self.shift
        self.scale, self.shift = base_s * s, base_o * s + o

    def dense(self, node, w: np.ndarray, b: np.ndarray):
        w, b = w.astype(np.float64), b.astype(np.float64)
        self._close()
        if self.scale is not None:
            s = np.broadcast_to(self.scale, (w.shape[1],))
            o = np.broadcast_to(self.shift, (w.shape[1],))
            if not self.layers:
                self.obs_affine = (s, o)
            else:  # W (x * s + o) + b
                b = b + w @ o
                w = w * s[None, :]
            self.scale = self.shift = None
        self.layers.append(Layer("dense", w.astype(np.float32), b.astype(np.float32)))
        self.open, self.width = True, w.shape[0]

    def activate(self, node, name: str):
        if not self.open or self.scale is not None:
            if self.width is None:
                self.refuse(node, "an activation before any layer")
            self.dense(node, np.eye(self.width), np.zeros(self.width))  # exact: x * 1 + 0
        self.layers[-1].activation = name
        self.open = False

    def gru(self, node, layer: Layer):
        self._close()
        if self.scale is not None:
            if self.layers:
                self.refuse(node, "an elementwise map between layers before a GRU")
            self.obs_affine = (np.broadcast_to(self.scale, (layer.weight.shape[1],)),
                               np.broadcast_to(self.shift, (layer.weight.shape[1],)))
            self.scale = self.shift = None
        self.layers.append(layer)
        self.open, self.width = False, layer.n_out

    def _close(self):
        self.open = False


def _attrs(node) -> dict:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _constants(model) -> dict:
    from onnx import numpy_helper

    out = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant":
            value = _attrs(node).get("value")
            if value is not None:
                out[node.output[0]] = numpy_helper.to_array(value)
    return out


def _gru(chain: _Chain, node, const: dict, inputs: set) -> Layer:
    a = _attrs(node)
    ins = list(node.input) + [""] * (6 - len(node.input))
    for name in ins[1:3]:
        if name not in const:
            chain.refuse(node, "its weights are not constants")
    w, r = const[ins[1]], const[ins[2]]
    if w.ndim != 3 or r.ndim != 3 or w.shape[0] != 1 or r.shape[0] != 1:
        chain.refuse(node, f"weights {w.shape} and recurrence {r.shape}: only one direction runs")
    hd = r.shape[2]
    if int(a.get("hidden_size", hd)) != hd or w.shape[1] != 3 * hd or r.shape[1] != 3 * hd:
        chain.refuse(node, f"hidden_size {a.get('hidden_size')} does not match weights {w.shape} and "
                     f"recurrence {r.shape}")
    if int(a.get("linear_before_reset", 0)) != 1:
        chain.refuse(node, "linear_before_reset=0 is not the GRU this format runs (PyTorch's, "
                     "linear_before_reset=1)")
    if _text(a.get("direction", "forward")) != "forward":
        chain.refuse(node, f"direction {_text(a['direction'])!r}: only forward runs")
    acts = [_text(x) for x in a.get("activations", [])]
    if acts and acts != ["Sigmoid", "Tanh"]:
        chain.refuse(node, f"activations {acts}: only Sigmoid, Tanh run")
    if "clip" in a or int(a.get("layout", 0)):
        chain.refuse(node, "clip and layout=1 are not supported")
    if ins[4]:
        chain.refuse(node, "sequence_lens is not supported (one step at a time)")
    b = const.get(ins[3]) if ins[3] else np.zeros((1, 6 * hd))
    if b is None or b.shape != (1, 6 * hd):
        chain.refuse(node, f"bias must be a constant (1, {6 * hd})")
    h0 = np.zeros(hd, np.float32)
    if ins[5] and ins[5] in const:
        h = const[ins[5]]
        if h.size != hd:
            chain.refuse(node, f"initial_h has {h.size} numbers, the hidden size is {hd}")
        h0 = h.reshape(-1).astype(np.float32)
    elif ins[5] and ins[5] not in inputs:
        chain.refuse(node, "initial_h is computed in the graph; it must be a constant or a graph input")
    # ONNX orders the gates z, r, h; this format (PyTorch, RLtools) r, z, n
    order = np.concatenate([np.arange(hd, 2 * hd), np.arange(hd), np.arange(2 * hd, 3 * hd)])
    return Layer("gru", w[0][order], b[0, :3 * hd][order], "identity", r[0][order], b[0, 3 * hd:][order], h0)


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def read(path) -> Network:
    try:
        import onnx
    except ImportError:
        raise UserError("reading ONNX needs the onnx package: pip install onnx") from None
    where = str(path)
    try:
        model = onnx.load(where)
    except Exception as exc:  # onnx raises DecodeError and others for a file that is not a model
        raise UserError(f"{where}: not an ONNX model ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from None
    graph = model.graph
    const = _constants(model)
    inputs = [i.name for i in graph.input if i.name not in const]
    if not graph.output:
        raise UserError(f"{where}: the graph has no output")
    target = graph.output[0].name
    producer = {out: node for node in graph.node for out in node.output}
    # the nodes the first output depends on, from the observation
    needed, todo = set(), [target]
    while todo:
        name = todo.pop()
        node = producer.get(name)
        if node is None or id(node) in needed:
            continue
        needed.add(id(node))
        todo += [i for i in node.input if i]
    chain_nodes = [n for n in graph.node if id(n) in needed and n.op_type != "Constant"]
    fed = [i for i in inputs if any(i in n.input for n in chain_nodes)]
    obs = [i for i in fed if not any(n.op_type == "GRU" and len(n.input) > 5 and n.input[5] == i
                                     for n in chain_nodes)]
    if len(obs) != 1:
        raise UserError(f"{where}: the first output depends on {len(obs)} graph inputs {obs}; an actor takes one "
                        "observation")
    chain = _Chain(where)
    current = obs[0]
    for node in chain_nodes:
        data = [i for i in node.input if i and i not in const]
        if data != [current] and not (node.op_type == "GRU" and data[:1] == [current]):
            chain.refuse(node, "not on a single chain from the observation (a branch or a second input)")
        op, cs = node.op_type, [const[i] for i in node.input if i in const]
        if op in NO_OPS:
            pass
        elif op == "Gather":
            # torch's export of `gru(x)[0][0]`: the one step of the sequence the GRU was given
            a = _attrs(node)
            if not (any(layer.kind == "gru" for layer in chain.layers) and int(a.get("axis", 0)) == 0
                    and len(cs) == 1 and cs[0].size == 1 and int(cs[0].reshape(-1)[0]) == 0):
                chain.refuse(node, "only the first step of a GRU's output sequence (index 0 on axis 0) is supported")
        elif op == "Gemm":
            a = _attrs(node)
            if int(a.get("transA", 0)):
                chain.refuse(node, "transA=1 is not supported")
            if node.input[0] != current or len(cs) < 1:
                chain.refuse(node, "the weights must be a constant second input")
            w = cs[0].astype(np.float64) * float(a.get("alpha", 1.0))
            w = w if int(a.get("transB", 0)) else w.T
            b = cs[1].astype(np.float64).reshape(-1) * float(a.get("beta", 1.0)) if len(cs) > 1 else np.zeros(1)
            chain.dense(node, w, np.broadcast_to(b, (w.shape[0],)))
        elif op == "MatMul":
            if node.input[0] != current or len(cs) != 1 or cs[0].ndim != 2:
                chain.refuse(node, "only observation @ constant matrix is supported")
            chain.dense(node, cs[0].T, np.zeros(cs[0].shape[1]))
        elif op in ELEMENTWISE:
            if len(cs) != 1:
                chain.refuse(node, "only an elementwise map by a constant is supported")
            if op in ("Sub", "Div") and node.input[0] != current:
                chain.refuse(node, "constant minus (or over) the features is not supported")
            if op == "Div" and not np.all(cs[0]):
                chain.refuse(node, "division by zero")
            chain.affine(node, op, np.asarray(cs[0]))
        elif op in ACTIVATIONS:
            chain.activate(node, ACTIVATIONS[op])
        elif op == "GRU":
            chain.gru(node, _gru(chain, node, const, set(inputs)))
        else:
            chain.refuse(node, "this operator cannot run on the boards")
        outs = [o for o in node.output if o]
        if op == "GRU":  # Y or Y_h, whichever the chain goes on with (both are the new state)
            nxt = [o for o in outs if o == target or any(o in n.input for n in chain_nodes)]
            if len(nxt) != 1:
                chain.refuse(node, "both of its outputs are used")
            current = nxt[0]
        else:
            current = outs[0]
    if current != target:
        raise UserError(f"{where}: the chain ends at {current!r}, not at the output {target!r}")
    if not chain.layers:
        raise UserError(f"{where}: the graph holds no layer (Gemm, MatMul or GRU)")
    net = Network("onnx", chain.layers)
    if chain.obs_affine is not None:
        s, o = chain.obs_affine
        if np.any(s <= 0):
            raise UserError(f"{where}: the input's elementwise map has a scale <= 0; it is not an observation "
                            "normalisation (x - mean) / std")
        net.obs_std, net.obs_mean = (1 / s), (-o / s)
    if chain.scale is not None:
        n = chain.layers[-1].n_out
        net.action_scale = np.broadcast_to(chain.scale, (n,)).astype(np.float32)
        net.action_offset = np.broadcast_to(chain.shift, (n,)).astype(np.float32)
    net.notes["onnx_ops"] = [n.op_type for n in chain_nodes]
    return net

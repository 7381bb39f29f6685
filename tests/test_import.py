"""`neuromotor import`: ONNX graphs checked against onnxruntime, refusals, and the format registry."""

import json

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import neuromotor  # noqa: E402
from neuromotor.api import _formats  # noqa: E402
from neuromotor.errors import UserError  # noqa: E402
from neuromotor.policy import read_policy  # noqa: E402


def save(tmp_path, nodes, inits, obs_dim, out_dim, name="actor.onnx", extra_inputs=(), extra_outputs=()):
    graph = helper.make_graph(
        nodes, "actor",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", obs_dim]), *extra_inputs],
        [helper.make_tensor_value_info("action", TensorProto.FLOAT, None), *extra_outputs],
        [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / name
    onnx.save(model, str(path))
    return path


def mlp_graph(tmp_path, act="Tanh", squash=True, scale=None, seed=0, obs_dim=11, act_dim=3):
    """SB3's actor (Flatten, Gemm-act-Gemm-act-Gemm, Tanh); with `scale`, CleanRL's * scale + bias."""
    rng = np.random.default_rng(seed)
    inits = {"w0": rng.normal(size=(64, obs_dim)) * 0.3, "b0": rng.normal(size=64) * 0.1,
             "w1": rng.normal(size=(64, 64)) * 0.2, "b1": rng.normal(size=64) * 0.1,
             "w2": rng.normal(size=(64, act_dim)) * 0.2, "b2": rng.normal(size=act_dim) * 0.1}
    nodes = [helper.make_node("Flatten", ["obs"], ["x"]),
             helper.make_node("Gemm", ["x", "w0", "b0"], ["h0"], transB=1),
             helper.make_node(act, ["h0"], ["a0"]),
             helper.make_node("Gemm", ["a0", "w1", "b1"], ["h1"], transB=1),
             helper.make_node(act, ["h1"], ["a1"]),
             helper.make_node("MatMul", ["a1", "w2"], ["m2"]),
             helper.make_node("Add", ["m2", "b2"], ["h2" if squash else "action"])]
    if squash:
        nodes.append(helper.make_node("Tanh", ["h2"], ["t" if scale is not None else "action"]))
    if scale is not None:
        inits["scale"], inits["bias"] = scale
        nodes += [helper.make_node("Mul", ["t", "scale"], ["s"]), helper.make_node("Add", ["s", "bias"], ["action"])]
    return save(tmp_path, nodes, inits, obs_dim, act_dim)


def run_ort(path, feeds):
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)


@pytest.mark.parametrize("act", ["Tanh", "Relu"])
def test_sb3_style_mlp_matches_onnxruntime_and_is_rescaled_to_the_bounds(tmp_path, act):
    path = mlp_graph(tmp_path, act)
    low, high = np.array([-2.0, 0.0, -0.5]), np.array([2.0, 1.0, 0.5])
    spec = neuromotor.import_policy(path, tmp_path / "p.nmp", action_low=low, action_high=high)
    obs = np.random.default_rng(1).normal(size=(256, 11)).astype(np.float32)
    squashed = run_ort(path, {"obs": obs})[0]
    want = low + (squashed + 1) / 2 * (high - low)  # SB3's unscale_action
    assert np.abs(spec(obs) - want).max() <= 1e-6
    back = read_policy(tmp_path / "p.nmp")
    assert np.array_equal(back(obs), spec(obs)) and back.activations == [act.lower(), act.lower(), "tanh"]
    assert spec.meta["import"]["sources"]["action_scale"].startswith("tanh's [-1, 1] rescaled")


def test_cleanrl_scale_and_bias_come_from_the_graph(tmp_path, cli):
    scale, bias = np.array([[2.0, 0.5, 1.0]]), np.array([[0.0, 0.5, -1.0]])
    path = mlp_graph(tmp_path, "Relu", scale=(scale, bias))
    code, out, err = cli("import", path, "-o", tmp_path / "p.nmp", "--obs-mean", "0.5", "--json")
    assert code == 0, err
    report = json.loads(out.strip().splitlines()[-1])
    assert report["sources"] == {"obs_mean": "--obs-mean", "obs_std": "default (1)", "action_scale": "file",
                                 "action_offset": "file", "action_low": "the output's range (tanh)",
                                 "action_high": "the output's range (tanh)"}
    spec = read_policy(tmp_path / "p.nmp")
    obs = np.random.default_rng(2).normal(size=(100, 11)).astype(np.float32)
    assert np.abs(spec(obs) - run_ort(path, {"obs": obs - 0.5})[0]).max() <= 1e-6
    assert np.array_equal(spec.action_low, [-2, 0, -2]) and np.array_equal(spec.action_high, [2, 1, 0])


def gru_graph(tmp_path, hidden=8, obs_dim=6, act_dim=2, lbr=1, hidden_attr=None, nan=False, h0=None):
    """obs -> Gemm-Relu -> GRU (one step; state in and out as graph input/output) -> Gemm-Tanh."""
    rng = np.random.default_rng(5)
    inits = {"w0": rng.normal(size=(16, obs_dim)) * 0.4, "b0": rng.normal(size=16) * 0.1,
             "W": rng.normal(size=(1, 3 * hidden, 16)) * 0.4, "R": rng.normal(size=(1, 3 * hidden, hidden)) * 0.4,
             "B": rng.normal(size=(1, 6 * hidden)) * 0.2, "w2": rng.normal(size=(act_dim, hidden)) * 0.5,
             "b2": np.zeros(act_dim), "axes0": np.array([0]), "axes01": np.array([0, 1])}
    if nan:
        inits["R"][0, 1, 1] = np.nan
    inits["axes0"], inits["axes01"] = inits["axes0"].astype(np.int64), inits["axes01"].astype(np.int64)
    state_in = "h_in" if h0 is None else "h0"
    nodes = [helper.make_node("Gemm", ["obs", "w0", "b0"], ["g"], transB=1),
             helper.make_node("Relu", ["g"], ["r"]),
             helper.make_node("Unsqueeze", ["r", "axes0"], ["seq"]),
             helper.make_node("GRU", ["seq", "W", "R", "B", "", state_in], ["Y", "h_out"],
                              hidden_size=hidden if hidden_attr is None else hidden_attr, linear_before_reset=lbr),
             helper.make_node("Squeeze", ["Y", "axes01"], ["y"]),
             helper.make_node("Gemm", ["y", "w2", "b2"], ["o"], transB=1),
             helper.make_node("Tanh", ["o"], ["action"])]
    extra_in = [helper.make_tensor_value_info("h_in", TensorProto.FLOAT, [1, "batch", hidden])] if h0 is None else []
    if h0 is not None:
        inits["h0"] = h0
    graph_inits = {k: v for k, v in inits.items() if not k.startswith("axes")}
    path = save(tmp_path, nodes, graph_inits, obs_dim, act_dim, extra_inputs=extra_in,
                extra_outputs=[helper.make_tensor_value_info("h_out", TensorProto.FLOAT, None)])
    model = onnx.load(str(path))  # int64 axes constants
    model.graph.initializer.extend([numpy_helper.from_array(inits["axes0"], "axes0"),
                                    numpy_helper.from_array(inits["axes01"], "axes01")])
    onnx.save(model, str(path))
    return path


def test_gru_graph_matches_onnxruntime_step_by_step(tmp_path):
    path = gru_graph(tmp_path)
    spec = neuromotor.import_policy(path, tmp_path / "p.nmp")
    assert spec.kinds == ["dense", "gru", "dense"] and spec.state_size == 8
    back = read_policy(tmp_path / "p.nmp")
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(6)
    h = np.zeros((1, 4, 8), np.float32)
    back.reset()
    worst = 0.0
    for _ in range(50):
        obs = rng.normal(size=(4, 6)).astype(np.float32)
        action, h = sess.run(None, {"obs": obs, "h_in": h})
        worst = max(worst, float(np.abs(back(obs) - action).max()))
    assert worst <= 1e-5


def test_gru_initial_state_constant_is_h0(tmp_path):
    h0 = np.linspace(-0.5, 0.5, 8).reshape(1, 1, 8)
    spec = neuromotor.import_policy(gru_graph(tmp_path, h0=h0))
    assert np.allclose(spec.initial_state(), h0.ravel())


def conv_graph(tmp_path):
    nodes = [helper.make_node("Conv", ["obs", "k"], ["action"])]
    return save(tmp_path, nodes, {"k": np.ones((1, 1, 1))}, 4, 4, "conv.onnx")


@pytest.mark.parametrize("make, message", [
    (conv_graph, r"\(Conv\): this operator cannot run on the boards"),
    (lambda p: gru_graph(p, hidden_attr=5), "hidden_size 5 does not match"),
    (lambda p: gru_graph(p, lbr=0), "linear_before_reset=0"),
    (lambda p: gru_graph(p, nan=True), r"non-finite values .*layer 1 hidden weights \(1 NaN"),
    (lambda p: mlp_graph(p, squash=False), "unbounded and the file holds no action bounds"),
])
def test_refused_graphs_write_nothing(tmp_path, cli, make, message):
    path = make(tmp_path)
    out = tmp_path / "p.nmp"
    with pytest.raises(UserError, match=message) as err:
        neuromotor.import_policy(path, out)
    assert "\n" not in str(err.value) and not out.exists()
    code, stdout, stderr = cli("import", path, "-o", out)
    assert code == 2 and stdout == "" and len(stderr.strip().splitlines()) == 1 and not out.exists()


def test_env_bounds_and_size_check(tmp_path):
    path = mlp_graph(tmp_path, obs_dim=3, act_dim=1)
    spec = neuromotor.import_policy(path, env="pendulum")
    assert spec.action_high[0] == 2.0 and spec.action_scale[0] == 2.0
    assert spec.meta["import"]["sources"]["action_low"] == "env pendulum"
    with pytest.raises(UserError, match="observes 3 and acts with 1 numbers; this policy takes 11"):
        neuromotor.import_policy(mlp_graph(tmp_path), env="pendulum")


def test_a_format_added_to_the_registry_reaches_the_cli(tmp_path, cli, monkeypatch):
    """Registering a format is all it takes for `export --format` to offer and write it."""
    def write_sizes(spec, path):
        path.write_text(json.dumps({"sizes": spec.sizes}))
        return path

    monkeypatch.setattr(_formats, "FORMATS", dict(_formats.FORMATS))  # the table as it was, after the test
    neuromotor.register_format(neuromotor.PolicyFormat("sizes-json", "export", "layer sizes as JSON", write_sizes,
                                                       (".sizes.json",)))
    neuromotor.import_policy(mlp_graph(tmp_path), tmp_path / "p.nmp")
    code, out, err = cli("export", tmp_path / "p.nmp", "-o", tmp_path / "p.sizes.json")
    assert code == 0, err
    assert json.loads((tmp_path / "p.sizes.json").read_text()) == {"sizes": [11, 64, 64, 3]}
    assert "(sizes-json, float32" in out
    code, out, _ = cli("export", "--help")
    assert "sizes-json: layer sizes as JSON" in " ".join(out.split())

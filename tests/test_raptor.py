"""RLtools HDF5 checkpoints, RAPTOR's foundation policy first: its own example reproduced by our
reader and PolicySpec, through the policy file too, and flown in the quadrotor env."""

import json

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
foundation_policy = pytest.importorskip("foundation_policy")

import neuromotor  # noqa: E402
from neuromotor.errors import UserError  # noqa: E402
from neuromotor.policy import read_policy  # noqa: E402
from neuromotor.policy.importers import rltools_h5  # noqa: E402
from neuromotor.policy.importers.network import assemble  # noqa: E402

ENV_KWARGS = {"position_scale": 1, "rotor_speeds": False, "action_history": 1}


@pytest.fixture(scope="module")
def checkpoint():
    import importlib_resources

    return str(importlib_resources.files("foundation_policy").joinpath("blob", "checkpoint.h5"))


def example(path):
    with h5py.File(path, "r") as f:
        return f["example/input"][()], f["example/output"][()]


def replay(spec, x):
    """The policy's actions over the example's (steps, batch, obs) inputs, with pure steps."""
    state, out = spec.initial_state(), []
    for obs in x:
        action, state = spec.step(obs, state)
        out.append(action)
    return np.stack(out)


def test_raptor_example_is_reproduced_by_reader_and_spec(checkpoint):
    x, y = example(checkpoint)
    assert x.shape == (500, 2, 22) and y.shape == (500, 2, 4)
    spec, report = assemble(rltools_h5.read(checkpoint), action_low=-10, action_high=10)  # no clamp on the example
    assert spec.kinds == ["dense", "gru", "dense"] and spec.sizes == [22, 16, 16, 4] and spec.state_size == 16
    assert np.abs(replay(spec, x) - y).max() <= 1e-5
    assert report["verify"](spec)["example_max_abs_diff"] <= 1e-5


def test_raptor_round_trips_through_the_policy_file(checkpoint, tmp_path, cli):
    code, out, err = cli("import", checkpoint, "-o", tmp_path / "raptor.nmp", "--action-low", "-10",
                         "--action-high", "10", "--json")
    assert code == 0, err
    report = json.loads(out.strip().splitlines()[-1])
    assert report["example_max_abs_diff"] <= 1e-5 and report["sources"]["action_low"] == "--action-low/--action-high"
    x, y = example(checkpoint)
    spec = read_policy(tmp_path / "raptor.nmp")
    assert np.abs(replay(spec, x) - y).max() <= 1e-5
    spec.reset()
    assert np.array_equal(np.stack([spec(obs) for obs in x]), replay(spec, x))


def test_raptor_flies_the_quadrotor_like_its_own_class(checkpoint, tmp_path, cli):
    from foundation_policy import Raptor

    from neuromotor.envs.quadrotor import QuadrotorVec

    spec = neuromotor.import_policy(checkpoint, tmp_path / "raptor.nmp", env="quadrotor", env_kwargs=ENV_KWARGS)
    assert np.array_equal(spec.action_low, -np.ones(4)) and spec.meta["import"]["sources"]["action_low"] == "env quadrotor"
    theirs = Raptor()
    theirs.reset()
    spec.reset()
    env = QuadrotorVec(8, **ENV_KWARGS)
    obs = env.reset([np.random.default_rng(10_000 + k) for k in range(8)])
    worst = 0.0
    for _ in range(200):
        mine, ref = spec(obs), np.clip(theirs.evaluate_step(obs), -1, 1)
        worst = max(worst, float(np.abs(mine - ref).max()))
        obs, _, _ = env.step(ref)
    assert worst <= 1e-4
    code, out, err = cli("eval", tmp_path / "raptor.nmp", "--env", "quadrotor", "--env-kwargs", json.dumps(ENV_KWARGS),
                         "--episodes", "20", "--json")
    assert code == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["episodes"] == 20 and result["success_rate"] >= 0.6


def write_h5(path, actor_layers, activation="RELU"):
    """A sequential actor: an mlp (22 -> 32 -> 8, `activation` then identity) and sample_and_squash."""
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as f:
        actor = f.create_group("actor")
        actor.attrs["type"] = "sequential"
        layers = actor.create_group("layers")
        mlp = layers.create_group("0")
        mlp.attrs["type"], mlp.attrs["num_layers"] = "mlp", 2
        for name, (n_out, n_in, act) in (("input_layer", (32, 22, activation)), ("output_layer", (8, 32, "IDENTITY"))):
            g = mlp.create_group(name)
            g.attrs["activation_function"], g.attrs["type"] = act, "dense"
            g.create_group("weights").create_dataset("parameters", data=rng.normal(size=(n_out, n_in)).astype(np.float32))
            g.create_group("biases").create_dataset("parameters", data=rng.normal(size=(1, n_out)).astype(np.float32))
        if actor_layers:
            layers.create_group("1").attrs["type"] = actor_layers
    return path


def test_mlp_with_sample_and_squash_matches_the_reference_class(tmp_path):
    path = write_h5(tmp_path / "actor.h5", "sample_and_squash", "FAST_TANH")
    spec = neuromotor.import_policy(path, tmp_path / "p.nmp")
    assert spec.activations == ["fast_tanh", "tanh"] and spec.sizes == [22, 32, 4]
    assert spec.meta["import"]["sources"]["action_low"] == "the output's range (tanh)"
    with h5py.File(path, "r") as f:
        theirs = foundation_policy.layer_dispatch(f["actor"])
    obs = np.random.default_rng(1).normal(size=(64, 22)).astype(np.float32)
    assert np.abs(read_policy(tmp_path / "p.nmp")(obs) - theirs.evaluate_step(obs)).max() <= 1e-6


@pytest.mark.parametrize("layers, activation, message", [
    ("sample_and_squash", "GELU", "activation function 'GELU' cannot run on the boards"),
    ("conv", "RELU", "layer type 'conv' cannot run on the boards"),
])
def test_unsupported_layers_are_refused_in_one_line(tmp_path, cli, layers, activation, message):
    path = write_h5(tmp_path / "actor.h5", layers, activation)
    with pytest.raises(UserError, match=message) as err:
        neuromotor.import_policy(path, tmp_path / "p.nmp")
    assert "\n" not in str(err.value) and not (tmp_path / "p.nmp").exists()
    code, _, stderr = cli("import", path, "-o", tmp_path / "p.nmp")
    assert code == 2 and len(stderr.strip().splitlines()) == 1 and not (tmp_path / "p.nmp").exists()


def test_raptor_c_header_replays_the_checkpoints_example(checkpoint, tmp_path, cli):
    """Bare-metal C: the checkpoint's two sequences through the exported header, the state
    reset between them, against the checkpoint's own outputs."""
    from test_c_header_gru import _compile, _steps

    code, _, err = cli("import", checkpoint, "-o", tmp_path / "raptor.nmp", "--action-low", "-10",
                       "--action-high", "10")
    assert code == 0, err
    code, _, err = cli("export", tmp_path / "raptor.nmp", "--format", "c-header", "-o", tmp_path / "raptor.h")
    assert code == 0, err
    exe = _compile(tmp_path, read_policy(tmp_path / "raptor.nmp"), "nm_kernels.h")
    assert (tmp_path / "policy.h").read_text() == (tmp_path / "raptor.h").read_text()
    x, y = example(checkpoint)
    lines = [line for b in range(x.shape[1]) for line in ["reset"] + [" ".join(f"{v:.9g}" for v in o) for o in x[:, b]]]
    _, status, got = _steps(exe, lines)
    assert status == [0] * (x.shape[0] * x.shape[1])
    want = np.concatenate([y[:, b] for b in range(x.shape[1])])
    assert np.abs(got - want).max() <= 1e-5

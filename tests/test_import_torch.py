"""Actors as PyTorch exports them (`torch.onnx.export`), imported and checked against the torch
module itself: the layouts Stable-Baselines3 and CleanRL train. torch comes with `make compare`."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")

import neuromotor  # noqa: E402
from neuromotor.policy import read_policy  # noqa: E402

OBS, ACT = 11, 3
LOW, HIGH = np.array([-2.0, 0.0, -0.5], np.float32), np.array([2.0, 1.0, 0.5], np.float32)


def export(module, path, obs_dim=OBS):
    module.eval()
    torch.onnx.export(module, (torch.zeros(1, obs_dim),), str(path), input_names=["obs"], output_names=["action"],
                      dynamic_axes={"obs": {0: "batch"}, "action": {0: "batch"}}, dynamo=False)
    return path


def observations(n=256):
    return np.random.default_rng(3).normal(size=(n, OBS)).astype(np.float32)


class CleanRLActor(torch.nn.Module):
    """CleanRL's TD3/DDPG actor: relu MLP, tanh, then * action_scale + action_bias (buffers)."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc_mu = torch.nn.Linear(OBS, 256), torch.nn.Linear(256, 256), torch.nn.Linear(256, ACT)
        self.register_buffer("action_scale", torch.tensor((HIGH - LOW) / 2.0))
        self.register_buffer("action_bias", torch.tensor((HIGH + LOW) / 2.0))

    def forward(self, x):
        x = torch.relu(self.fc2(torch.relu(self.fc1(x))))
        return torch.tanh(self.fc_mu(x)) * self.action_scale + self.action_bias


@pytest.mark.parametrize("act", [torch.nn.Tanh, torch.nn.ReLU])
def test_sb3_actor_exported_by_torch_matches_the_module(tmp_path, act):
    torch.manual_seed(0)
    # Stable-Baselines3's TD3/DDPG actor: net_arch [64, 64] (its default for these sizes), tanh output
    actor = torch.nn.Sequential(torch.nn.Linear(OBS, 64), act(), torch.nn.Linear(64, 64), act(),
                                torch.nn.Linear(64, ACT), torch.nn.Tanh())
    path = export(actor, tmp_path / "actor.onnx")
    spec = neuromotor.import_policy(path, tmp_path / "p.nmp", action_low=LOW, action_high=HIGH)
    obs = observations()
    with torch.no_grad():
        squashed = actor(torch.from_numpy(obs)).numpy()
    want = LOW + (squashed + 1) / 2 * (HIGH - LOW)  # SB3's unscale_action
    assert np.abs(spec(obs) - want).max() <= 1e-6
    assert np.array_equal(read_policy(tmp_path / "p.nmp")(obs), spec(obs))


def test_cleanrl_actor_takes_its_scale_and_bias_from_the_graph(tmp_path):
    torch.manual_seed(1)
    actor = CleanRLActor()
    path = export(actor, tmp_path / "actor.onnx")
    spec = neuromotor.import_policy(path, tmp_path / "p.nmp", action_low=LOW, action_high=HIGH)
    obs = observations()
    with torch.no_grad():
        want = actor(torch.from_numpy(obs)).numpy()
    assert np.abs(spec(obs) - want).max() <= 1e-6
    assert np.allclose(spec.action_scale, (HIGH - LOW) / 2) and np.allclose(spec.action_offset, (HIGH + LOW) / 2)


class RecurrentActor(torch.nn.Module):
    """Dense relu -> GRU -> Dense tanh, one step per call with the hidden state in and out, as a
    recurrent actor is exported for deployment."""

    def __init__(self):
        super().__init__()
        self.fc, self.gru, self.out = torch.nn.Linear(OBS, 16), torch.nn.GRU(16, 16), torch.nn.Linear(16, ACT)

    def forward(self, x, h):
        y, h = self.gru(torch.relu(self.fc(x)).unsqueeze(0), h)
        return torch.tanh(self.out(y[0])), h


def test_recurrent_actor_exported_by_torch_steps_like_the_module(tmp_path):
    torch.manual_seed(2)
    actor = RecurrentActor().eval()
    path = tmp_path / "gru.onnx"
    torch.onnx.export(actor, (torch.zeros(1, OBS), torch.zeros(1, 1, 16)), str(path), input_names=["obs", "h"],
                      output_names=["action", "h_out"], dynamo=False)
    spec = neuromotor.import_policy(path, tmp_path / "p.nmp", action_low=-np.ones(ACT), action_high=np.ones(ACT))
    assert spec.recurrent and spec.kinds == ["dense", "gru", "dense"]
    h, worst = torch.zeros(1, 1, 16), 0.0
    spec.reset()
    for obs in observations(50):
        with torch.no_grad():
            want, h = actor(torch.from_numpy(obs[None]), h)
        worst = max(worst, float(np.abs(spec(obs) - want.numpy()[0]).max()))
    assert worst <= 1e-5

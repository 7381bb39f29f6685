"""An algorithm is one module: a toy written outside the package trains through the command
line and exports, named as module:Class or by one registry entry, with its own setting
checked by its own rule and its memory counted by its own estimate."""

import json
import textwrap

import numpy as np
import pytest

from neuromotor.algos import ALGOS, algo_class
from neuromotor.envs import env_class
from neuromotor.errors import UserError
from neuromotor.policy.policy_file import read_policy
from neuromotor.training import config, memory

# Random search: each agent's linear tanh policy takes a random step every env step.
TOY = '''
import dataclasses

import numpy as np

from neuromotor import rules
from neuromotor.algos.offpolicy import deployable
from neuromotor.envs.autoreset import AutoReset
from neuromotor.rng import rng_state_array, set_rng_state


@dataclasses.dataclass
class Config:
    jitter: float = 0.1  # no other algorithm has this setting

    RULES = {"jitter": rules.number(0, 1)}


class Jitter:
    Config = Config

    def __init__(self, cfg, env_factory, seeds):
        self.cfg, self.seeds, self.steps = cfg, list(seeds), 0
        self.env = env_factory(len(self.seeds))
        self.rngs = [np.random.default_rng(s) for s in self.seeds]
        self.weights = np.zeros((len(self.seeds), self.env.obs_dim + 1, self.env.act_dim), np.float32)
        self.episodes = AutoReset(self.env, self.rngs)
        self.obs = self.episodes.reset()

    @staticmethod
    def memory_parts(cfg, obs_dim, act_dim, agents):
        return {"weights": agents * (obs_dim + 1) * act_dim * 4}, agents

    def advance(self):
        for k, rng in enumerate(self.rngs):
            self.weights[k] += np.float32(self.cfg.jitter) * rng.standard_normal(self.weights.shape[1:], np.float32)
        self.obs = self.episodes.step(self.act(self.obs[:, None])[:, 0])[0]
        self.steps += 1

    def act(self, obs):
        scale = (self.env.action_high - self.env.action_low) / 2
        offset = (self.env.action_high + self.env.action_low) / 2
        return np.tanh(obs @ self.weights[:, :-1] + self.weights[:, -1:]) * scale + offset

    def pop_episode_returns(self):
        return self.episodes.pop_episode_returns()

    @classmethod
    def policy_state(cls, cfg, env, agents):
        return {"weights": np.zeros((agents, env.obs_dim + 1, env.act_dim), np.float32),
                "seeds": np.zeros(agents, np.int64), "steps": np.int64(0)}

    @classmethod
    def policy_from_state(cls, cfg, env, state, agent):
        w = state["weights"][agent]
        return deployable(env, [(w[:-1], w[-1])], ["tanh"], "jitter", state["seeds"][agent], state["steps"])

    def policy_spec(self, agent):
        return self.policy_from_state(self.cfg, self.env, self.state_dict(), agent)

    def state_dict(self):
        return {"weights": self.weights, "seeds": np.array(self.seeds, np.int64), "steps": np.int64(self.steps),
                "rng": np.stack([rng_state_array(r) for r in self.rngs]), "env_state": self.env.get_state(),
                "obs": self.obs, "ep_return": self.episodes.ep_return, "ep_len": self.episodes.ep_len}

    def load_state_dict(self, d):
        self.weights[...] = d["weights"]
        self.steps = int(d["steps"])
        for r, state in zip(self.rngs, d["rng"]):
            set_rng_state(r, state)
        self.episodes.ep_return[...], self.episodes.ep_len[...] = d["ep_return"], d["ep_len"]
        self.obs = self.episodes.restore(d["env_state"], np.array(d["obs"]))


@dataclasses.dataclass
class UnruledConfig:
    jitter: float = 0.1


class Unruled(Jitter):
    Config = UnruledConfig
'''

TRAIN = ["--steps", 60, "--set", "eval_every=30", "--set", "eval_episodes=1", "--quiet"]


@pytest.fixture
def toy(tmp_path, monkeypatch):
    (tmp_path / "jitter_toy.py").write_text(textwrap.dedent(TOY))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "jitter_toy:Jitter"


@pytest.mark.parametrize("registered", [False, True], ids=["module:Class", "registry-entry"])
def test_a_toy_algorithm_trains_and_exports_through_the_cli(cli, toy, tmp_path, monkeypatch, registered):
    name = toy
    if registered:
        monkeypatch.setitem(ALGOS, "jitter", toy)  # the one line an algorithm adds to the registry
        name = "jitter"
    run = tmp_path / "run"
    code, _, err = cli("train", "pendulum", "--algo", name, "--set", "jitter=0.05", "--run-dir", run, *TRAIN)
    assert code == 0, err
    saved = json.loads((run / "config.json").read_text())
    assert (saved["algo"], saved["algo_config"]) == (name, {"jitter": 0.05})

    code, _, err = cli("export", run, "-o", tmp_path / "policy.nmp")
    assert code == 0, err
    spec = read_policy(tmp_path / "policy.nmp")
    with np.load(run / "checkpoint.npz") as state:
        weights = state["weights"][0]
        assert int(state["steps"]) == 60
    assert np.abs(weights).max() > 0  # it trained: random steps moved the weights
    assert np.array_equal(spec.weights[0], weights[:-1].T) and np.array_equal(spec.biases[0], weights[-1])


def test_the_toy_setting_is_checked_by_its_own_rule(cli, toy, tmp_path):
    code, _, err = cli("train", "pendulum", "--algo", toy, "--set", "jitter=2", "--run-dir", tmp_path / "r", *TRAIN)
    assert code == 2 and "jitter must be a finite number in [0, 1], got 2.0" in err
    assert not (tmp_path / "r").exists()


def test_a_setting_without_a_rule_is_refused_by_name(cli, toy, tmp_path):
    code, _, err = cli("train", "pendulum", "--algo", "jitter_toy:Unruled", "--run-dir", tmp_path / "r", *TRAIN)
    assert code == 2 and "jitter_toy.UnruledConfig has no rule for its setting 'jitter'" in err


def test_the_memory_estimate_is_the_algorithms_own(toy):
    cls = algo_class(toy)
    parts = memory.estimate(cls, cls.Config(), config.RunConfig(), env_class("pendulum"), 3)
    assert parts["weights"] == 3 * 4 * 1 * 4


@pytest.mark.parametrize("name, says", [
    ("no_such_module_xyz:Algo", "cannot import it (ModuleNotFoundError"),
    ("jitter_toy:Missing", "cannot import it (AttributeError"),
    ("jitter_toy:deployable", "is not an algorithm class"),
    ("nonesuch", "unknown algorithm 'nonesuch'"),
])
def test_what_is_not_an_algorithm_is_refused(toy, name, says):
    with pytest.raises(UserError) as caught:
        algo_class(name)
    assert says in str(caught.value)

"""hil checks the policy that was deployed: its path and hash from the deploy manifest, every action."""

import hashlib

import numpy as np
import pytest

from neuromotor.boards import hil
from neuromotor.errors import UserError

FAST = ["--set", "batch_size=16", "--set", "eval_episodes=1", "--quiet"]


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    from neuromotor.cli import main

    root = tmp_path_factory.mktemp("hil")
    assert main(["train", "pendulum", "--steps", "20", "--run-dir", str(root / "run"), *FAST]) == 0
    assert main(["export", str(root / "run"), "-o", str(root / "p.nmp")]) == 0
    return root / "p.nmp"


class FakeBoard:
    """The bench server's side of NMB/1, computing with the host's forward (optionally wrong)."""

    def __init__(self, spec, manifest, wrong=None):
        self.spec, self.wrong, self.loaded, self.steps = spec, wrong, [], 0
        self.info = {"policy_present": True, "interrupted_deploy": False, "deploy": manifest}
        self.stats = {}

    def __call__(self, port, timeout=None):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def load(self, path, backend):
        self.loaded.append(path)
        return {"obs_dim": self.spec.obs_dim, "act_dim": self.spec.act_dim, "sizes": self.spec.sizes,
                "backend": "python"}

    def act(self, obs):
        a = self.spec.forward(obs[None])[0].astype(np.float32)
        self.steps += 1
        if self.wrong is not None:
            a = self.wrong(self.steps, a)
        return a, 10, 1000


def _run(monkeypatch, policy, manifest, wrong=None):
    from neuromotor.training.run_policy import load_spec

    board = FakeBoard(load_spec(str(policy)), manifest, wrong)
    monkeypatch.setattr(hil, "LinkClient", board)
    return board, hil.run_hil("PORT", str(policy), episodes=1, steps=30, log=lambda *a: None)


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_hil_loads_the_deployed_path_and_checks_its_hash(monkeypatch, policy):
    board, res = _run(monkeypatch, policy, {"policy": "/x.nmp", "policy_sha256": _sha(policy)})
    assert board.loaded == ["/x.nmp"] and res["returns_match"]


def test_hil_refuses_a_board_holding_another_policy(monkeypatch, policy):
    with pytest.raises(UserError, match="deploy"):
        _run(monkeypatch, policy, {"policy": "/policy.nmp", "policy_sha256": "0" * 64})


@pytest.mark.parametrize("bad", [np.nan, 0.5])
def test_hil_compares_every_step_not_only_the_first(monkeypatch, policy, bad):
    def wrong(step, a):
        if step == 20:
            a = a.copy()
            a[-1] = bad if np.isnan(bad) else a[-1] + bad
        return a

    with pytest.raises(UserError, match="step 19"):
        _run(monkeypatch, policy, {"policy": "/policy.nmp", "policy_sha256": _sha(policy)}, wrong)


def test_actions_compared_in_every_dimension():
    ref = np.zeros((2, 3), np.float32)
    out = ref.copy()
    hil.check_actions(out, ref, "PORT", 5)
    out[1, 2] = 0.01
    with pytest.raises(UserError, match="action 2"):
        hil.check_actions(out, ref, "PORT", 5)


def test_hil_with_a_policy_only_at_the_deployed_path(monkeypatch, policy):
    """deploy --dest /x.nmp leaves no /policy.nmp: that is not 'no policy on the board'."""
    from neuromotor.training.run_policy import load_spec

    board = FakeBoard(load_spec(str(policy)), {"policy": "/x.nmp", "policy_sha256": _sha(policy)})
    board.info["policy_present"] = False
    monkeypatch.setattr(hil, "LinkClient", board)
    assert hil.run_hil("PORT", str(policy), episodes=1, steps=5, log=lambda *a: None)["returns_match"]
    assert board.loaded == ["/x.nmp"]

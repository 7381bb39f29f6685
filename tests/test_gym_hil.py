"""Hardware in the loop on a gymnasium env: the host steps the run's env, an emulated board acts."""

import shutil

import numpy as np
import pytest

from neuromotor.boards import hil
from neuromotor.errors import UserError

gymnasium = pytest.importorskip("gymnasium")

BOARD = "qemu-m4f"
# a small actor: observations and actions cross a ~4 KB/s pty at every step
TRAIN = ["--steps", "300", "--quiet", "--set", "actor_hidden=[16, 16]", "--set", "critic_hidden=[32, 32]",
         "--set", "eval_episodes=1", "--set", "eval_every=300"]


@pytest.fixture(scope="module")
def mountain_car(tmp_path_factory):
    from neuromotor.cli import main

    run = tmp_path_factory.mktemp("gymhil") / "run"
    assert main(["train", "MountainCarContinuous-v0", "--run-dir", str(run),
                 "--env-kwargs", '{"max_episode_steps": 60}', *TRAIN]) == 0
    return run


def test_hil_steps_the_runs_gymnasium_env_with_its_kwargs(mountain_car, monkeypatch):
    from neuromotor.training.run_policy import load_spec

    spec = load_spec(str(mountain_car))
    name, factory = hil.env_for(spec)
    assert (name, factory.max_episode_steps, factory.obs_dim) == ("MountainCarContinuous-v0", 60, 2)
    returns = hil.rollout(factory, 2, 5, lambda obs, t: spec.forward(obs))
    again = hil.rollout(factory, 2, 5, lambda obs, t: spec.forward(obs))
    np.testing.assert_array_equal(returns, again)  # env i starts from seed + i every time


def test_hil_refuses_an_env_that_does_not_fit_the_policy(mountain_car):
    from neuromotor.training.run_policy import load_spec

    with pytest.raises(UserError, match="observes 3 .* this policy takes 2"):
        hil.env_for(load_spec(str(mountain_car)), "Pendulum-v1")


@pytest.mark.qemu
def test_hil_on_an_emulated_board_agrees_with_the_host(mountain_car):
    from e2e.helpers import last_json, nm, started_board
    from neuromotor.boards import load_board

    if not shutil.which(load_board(BOARD).qemu["system"]):
        pytest.skip("QEMU is not installed (make system)")
    with started_board(BOARD, tag="gymhil") as board:
        nm("deploy", mountain_car, "--port", board.port, check=True)
        res = nm("hil", mountain_car, "--port", board.port, "--episodes", "2", "--json", check=True)
    r = last_json(res.stdout)
    assert r["env"] == "MountainCarContinuous-v0"
    assert r["returns_match"] is True and r["max_action_rel_diff"] <= 1e-3
    assert r["steps"] == 2 * 60  # every action of both 60-step episodes came from the board
    assert "agree within float32 tolerance: yes" in res.stdout

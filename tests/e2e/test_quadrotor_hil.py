"""The quadrotor flown in the loop: the host simulates the Crazyflie, the emulated board
computes every action from the deployed policy, and both agree with the host's own rollout."""

from .helpers import last_json, nm


def test_the_board_flies_the_quadrotor_as_the_host_does(arm_board, tmp_path):
    run = tmp_path / "quad"
    nm("train", "quadrotor", "--steps", 300, "--run-dir", run, "--set", "actor_hidden=[16, 16]", "--set",
       "batch_size=32", "--set", "eval_episodes=1", "--quiet", check=True)
    nm("deploy", run, "--port", arm_board.port, check=True)
    r = last_json(nm("hil", run, "--port", arm_board.port, "--episodes", 2, "--steps", 30, "--json",
                     check=True).stdout)
    assert r["env"] == "quadrotor" and r["returns_match"] is True and 2 <= r["steps"] <= 60
    assert r["max_action_rel_diff"] < 1e-3 and r["link"]["retries"] == 0

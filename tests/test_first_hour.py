"""What a new user meets first: the default algorithm on their own env, the summary naming the
run's policy, help generated from the code's tables, suggestions for unknown names, output
fit for a log, success reported by eval, a short repr of a policy."""

import json

import numpy as np
import pytest

import neuromotor
from neuromotor.cli import build_parser, main
from neuromotor.cli.cmd_train import warn_untrained

POINT_ENV = '''
import gymnasium as gym
import numpy as np


class PointEnv(gym.Env):
    def __init__(self):
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x, self.v, self.t = self.np_random.uniform(-1, 1), 0.0, 0
        return np.array([self.x, self.v], np.float32), {}

    def step(self, action):
        self.v += 0.1 * float(action[0])
        self.x += 0.1 * self.v
        self.t += 1
        reward = -(self.x ** 2) - 0.1 * self.v ** 2
        return np.array([self.x, self.v], np.float32), reward, False, self.t >= 100, {}
'''


def test_the_default_command_trains_a_users_env(tmp_path, monkeypatch, cli):
    name = f"pointenv_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(POINT_ENV)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("train", f"{name}:PointEnv", "--steps", 3000, "--run-dir", "r", "--json")
    assert code == 0, err
    summary = json.loads(out.strip().splitlines()[-1])
    assert json.loads((tmp_path / "r" / "config.json").read_text())["algo"] == "sac"
    assert summary["eval_return_mean"] > -100  # TD3 with the pendulum's settings ended near -500


def test_built_in_envs_keep_their_default_algorithms():
    from neuromotor.envs import default_algo

    assert [default_algo(e) for e in ("pendulum", "quadrotor", "ant", "Pendulum-v1")] == ["td3", "sac", "td3", "td3"]


def test_the_summary_leads_with_the_runs_policy(tmp_path, cli):
    run = tmp_path / "q"
    code, out, err = cli("train", "quadrotor", "--algo", "td3", "--steps", 200, "--run-dir", run, "--set",
                         "batch_size=32", "--set", "eval_episodes=2", "--set", "eval_every=100", "--json")
    assert code == 0, err
    summary = json.loads(out.strip().splitlines()[-1])
    policy = summary["policy"]
    assert list(summary)[0] == "policy" and policy["path"] == str(run / "best.npz")
    assert policy["step"] == summary["best"]["step"] and 0 <= policy["eval_success"] <= 1
    table = out.split("\n{")[0]
    assert f"the run's policy (export, deploy, hil and eval use it): {run / 'best.npz'}" in table
    assert "<run dir>" not in out
    if policy["step"] != 200:
        assert f"the last state (step 200, {run / 'checkpoint.npz'}):" in table
    assert ("untrained" in err) == (policy["step"] == 0)


def test_an_untrained_policy_is_named_plainly(capsys):
    warn_untrained({"steps": 20000, "policy": {"step": 0, "path": "r/best.npz"}})
    warn_untrained({"steps": 20000, "policy": {"step": 10000, "path": "r/best.npz"}})
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("neuromotor: warning: ") and "r/best.npz" in err


def test_the_progress_bar_shows_evaluation_success(tmp_path, capsys):
    neuromotor.train("quadrotor", "td3", steps=200, run_dir=tmp_path / "q", progress=True,
                     config={"batch_size": 32, "eval_episodes": 2, "eval_every": 100})
    assert "eval success" in capsys.readouterr().err


def test_no_progress_bar_off_a_terminal_and_quiet_prints_the_run_dir(tmp_path, cli):
    code, out, err = cli("train", "pendulum", "--steps", 200, "--run-dir", tmp_path / "a", "--set", "batch_size=16")
    assert code == 0 and err == "" and "the run's policy" in out  # stderr is not a terminal here
    code, out, err = cli("train", "pendulum", "--steps", 200, "--run-dir", tmp_path / "b", "--set", "batch_size=16",
                         "--quiet")
    assert code == 0 and out == f"{tmp_path / 'b'}\n" and err == ""


def test_train_help_lists_what_the_code_knows(capsys):
    from neuromotor.algos.sac import CONFIGS
    from neuromotor.envs import ENVS

    assert main(["train", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines at the terminal's width
    assert all(name in text for name in ENVS)
    presets = ", ".join(f"{p} ({r.get('steps', 10000)})" for p, (_, r) in CONFIGS.items())
    assert f"sac: {presets}" in text
    assert "quadrotor (300000)" in text and "(default 10000)" not in text
    assert "sac on the quadrotor and your own envs" in text
    assert "policy_average" in text and "exploration_noise" in text and "eval_every" in text
    assert "examples:" in text and "neuromotor train quadrotor" in text


def test_help_is_built_without_importing_the_algorithms():
    import subprocess
    import sys

    code = ("import sys; from neuromotor.cli import build_parser; build_parser(); "
            "print(any(m.startswith('neuromotor.algos.') for m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


@pytest.mark.parametrize("args,message", [
    (["trian"], "invalid choice: 'trian'"),
    (["deploy", "x", "--natmod", "alway"], "did you mean always?"),
])
def test_an_unknown_choice_suggests_a_close_one(cli, args, message):
    code, _, err = cli(*args)
    assert code == 2 and message in err and err.count("\n") == 1
    if args == ["trian"]:
        assert "did you mean train?" in err


@pytest.mark.parametrize("setting,message", [
    ("learning_rate=1e-3", "unknown setting 'learning_rate'; did you mean actor_lr or critic_lr?"),
    ("gama=0.9", "did you mean gamma?"),
    ("batch_size=abc", "batch_size must be an integer, got 'abc'"),
    ("tau=fast", "tau must be a number"),
    ("shared_minibatch=3", "shared_minibatch must be true or false"),
])
def test_a_bad_setting_says_what_was_meant(cli, runs_root, setting, message):
    code, _, err = cli("train", "pendulum", "--set", setting)
    assert code == 2 and message in err and err.count("\n") == 1


def test_a_policy_repr_is_one_short_line(trained):
    text = repr(neuromotor.load_policy(trained))
    assert text == "PolicySpec(sizes=[3, 64, 64, 1], layers=[relu, relu, tanh], env='pendulum', algo='td3', " \
                   "seed=0, step=50)"


def test_eval_of_a_run_reports_success(tmp_path, cli):
    run = tmp_path / "q"
    assert cli("train", "quadrotor", "--algo", "td3", "--steps", 100, "--run-dir", run, "--quiet", "--set",
               "batch_size=32", "--set", "eval_episodes=1", "--set", "eval_every=100")[0] == 0
    code, out, err = cli("eval", run, "--episodes", 4, "--json")
    assert code == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["success_rate"] in (0, 0.25, 0.5, 0.75, 1) and "success" in out.splitlines()[0]
    assert neuromotor.evaluate(run, episodes=2).success.shape == (1, 2)
    assert neuromotor.evaluate(run, episodes=2).as_dict()["agents"][0]["success_rate"] in (0, 0.5, 1)
    assert np.isfinite(result["eval_return_mean"])


@pytest.mark.parametrize("command", ["deploy", "hil"])
def test_deploy_and_hil_refuse_what_is_not_a_serial_port(tmp_path, cli, trained, command):
    for port in ("/dev/null", tmp_path):
        code, _, err = cli(command, trained, "--port", port)
        assert code == 2 and f"{port} is not a serial port" in err and "another program" not in err


def test_an_unknown_algorithm_gets_the_closest_name(cli, runs_root):
    code, _, err = cli("train", "pendulum", "--algo", "sca", "--steps", 10)
    assert code == 2 and "unknown algorithm 'sca'; did you mean sac?" in err and err.count("\n") == 1


def test_a_policy_deploy_leaves_the_trainer_out(tmp_path):
    from neuromotor.boards.deploy.board import parse_probe
    from neuromotor.boards.deploy.core import POLICY_DEST, TRAINER_MODULES, lib_sources, make_plan

    probe = {"impl": "micropython", "version": (1, 25, 0), "platform": "rp2", "mpy": 5 | (3 << 8), "hash": "sha256",
             "root": [], "free": 1 << 20, "path": ["", "/lib"], "manifest": None}
    board = parse_probe(repr(probe).encode())  # another .mpy version: sources are copied, no mpy-cross needed
    policy_only = {it.dest for it in make_plan(board, "p.nmp", b"x", tmp_path, with_natmod=False, trainer=False).items}
    everything = {it.dest for it in make_plan(board, "p.nmp", b"x", tmp_path, with_natmod=False).items}
    assert {f"/lib/{m}.py" for m in ("nm_td3", "nm_td3_server", "nm_pendulum")} <= everything - policy_only
    assert {"/lib/neuromotor_rt.py", "/lib/nm_bench.py", "/lib/nm_rt_write.py", POLICY_DEST} <= policy_only
    assert all(s.stem not in TRAINER_MODULES for s in lib_sources(trainer=False))


def test_bench_names_the_board_its_predictions_assume():
    from neuromotor.boards.bench import predicted_board
    from neuromotor.boards.bench import table

    res = {"board": "qemu-m4f", "port": "/dev/pts/9", "emulated": True, "predict_mhz": 600.0, "unavailable": {},
           "predicted_for": predicted_board(600.0, False),
           "backends": {"native": {"mean_us": 50.0, "p99_us": 60.0, "instructions": 50000.0,
                                   "instructions_per_mac": 2.0, "predicted_us": 83.3, "predicted_khz": 12.0}}}
    assert "'pred' = predicted for a Teensy 4.1 (Cortex-M7) at 600 MHz" in table([res])
    assert predicted_board(240.0, False) == "an ESP32 (Xtensa LX6)" and predicted_board(600.0, True) == "a board"


def test_bench_without_a_board_leaves_no_directory(runs_root, cli):
    code, _, err = cli("bench", "--port", runs_root / "no-such-port")
    assert code == 2 and err.count("\n") == 1
    assert not any(runs_root.iterdir())


def test_hil_judges_success_on_the_episodes_it_flies(tmp_path, cli, trained):
    from neuromotor.api._board import HilResult, _host_success

    run = tmp_path / "q"
    assert cli("train", "quadrotor", "--algo", "td3", "--steps", 100, "--run-dir", run, "--quiet", "--set",
               "batch_size=32", "--set", "eval_episodes=1", "--set", "eval_every=100")[0] == 0
    success = _host_success(str(run), 3, 0, None, None, 50)
    assert success.shape == (3,) and success.dtype == bool
    assert _host_success(str(trained), 2, 0, None, None, 20) is None  # the pendulum judges no success
    data = {"backend": "native", "returns": [1.0], "host_returns": [1.0], "return_mean": 1.0, "host_return_mean": 1.0,
            "returns_match": True, "max_return_diff": 0.0, "max_action_rel_diff": 0.0, "steps": 5,
            "rtt_median_us": 1.0, "rtt_p90_us": 1.0, "rtt_p99_us": 1.0, "rtt_min_us": 1.0, "rtt_max_us": 1.0,
            "device_median_us": 1.0, "success": [True, False], "success_rate": 0.5}
    assert "success: 50% of 2 episodes" in str(HilResult(data)) and HilResult(data).success_rate == 0.5

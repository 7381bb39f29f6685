"""The Python API as a new user meets it: only names from `import neuromotor`."""

import ast
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import neuromotor

HOST = Path(neuromotor.__file__).resolve().parent
SMALL = {"actor_hidden": [16, 16], "critic_hidden": [32, 32], "eval_every": 400, "eval_episodes": 2}


def test_top_level_names_resolve_and_are_the_api():
    from neuromotor import api

    assert set(neuromotor.__all__) == {*api.__all__, "__version__"}
    for name in neuromotor.__all__:
        assert getattr(neuromotor, name) is not None, name
    # the modules the CLI and tests import by name stay modules: no API name shadows one
    from neuromotor.boards import bench, deploy, hil
    assert callable(hil.run_hil) and callable(bench.run_bench) and callable(deploy.deploy)


def test_train_evaluate_export_from_python(tmp_path, capsys):
    run = neuromotor.train("pendulum", steps=800, seeds=[3, 4], config=SMALL, run_dir=tmp_path / "run",
                           shards=1, progress=False)
    assert isinstance(run, neuromotor.Run) and run.seeds == [3, 4] and run.algo == "td3"
    assert run.summary["steps"] == 800 and len(run.summary["agents"]) == 2
    steps, returns = run.learning_curve(agent=1)
    assert list(steps) == [0, 400, 800] and np.isfinite(returns).all()
    ev = run.evaluate(3)
    assert ev.returns.shape == (2, 3) and ev.as_dict()["agents"][1]["seed"] == 4
    # the policy is callable on observations and is what the export holds
    obs = np.float32([[1.0, 0.0, 0.5], [0.0, 1.0, -2.0]])
    actions = run.policy(obs)
    assert actions.shape == (2, 1) and np.all(np.abs(actions) <= 2.0)
    path = run.export(tmp_path / "policy.nmp")
    again = neuromotor.load_run(run.path).policy_of(0)
    np.testing.assert_array_equal(neuromotor.Run(run.path).policy(obs), again(obs))
    from neuromotor.policy import read_policy
    np.testing.assert_array_equal(read_policy(path)(obs), actions)
    assert "#define" in run.export(tmp_path / "policy.h").read_text()
    gif = run.render(tmp_path / "swing.gif")
    assert gif.read_bytes()[:6] == b"GIF89a"
    # progress=False: nothing on the terminal
    assert capsys.readouterr().err == ""


def test_api_and_cli_train_the_same_numbers(tmp_path, cli):
    settings = [f"--set={k}={v}" for k, v in SMALL.items()]
    code, _, err = cli("train", "pendulum", "--steps", 600, "--seed", 7, "--run-dir", tmp_path / "cli", "--quiet",
                       *settings)
    assert code == 0, err
    run = neuromotor.train("pendulum", steps=600, seeds=7, config=SMALL, run_dir=tmp_path / "api", progress=False)
    a, b = np.load(tmp_path / "cli" / "checkpoint.npz"), np.load(run.path / "checkpoint.npz")
    assert sorted(a) == sorted(b)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    code, out, _ = cli("eval", tmp_path / "cli", "--episodes", 2, "--json")
    import json
    assert json.loads(out.splitlines()[-1])["eval_return_mean"] == run.evaluate(2).mean


def test_resume_continues_to_more_steps(tmp_path):
    run = neuromotor.train("pendulum", steps=400, config=SMALL, run_dir=tmp_path / "r", progress=False)
    more = run.resume(800, progress=False)
    assert more.summary["steps"] == 800 and [r["step"] for r in more.metrics] == [0, 400, 800]


def test_progress_bar_on_request_and_off_by_default_in_a_pipe(tmp_path, capsys):
    neuromotor.train("pendulum", steps=200, config=SMALL, run_dir=tmp_path / "on", progress=True)
    assert "step" in capsys.readouterr().err
    neuromotor.train("pendulum", steps=200, config=SMALL, run_dir=tmp_path / "auto")  # stderr is not a terminal
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("call, message", [
    (lambda d: neuromotor.train("no-such-env", run_dir=d), "unknown environment"),
    (lambda d: neuromotor.train("pendulum", algo="dqn", run_dir=d), "algorithm"),
    (lambda d: neuromotor.train("pendulum", config={"batch_sise": 8}, run_dir=d), "unknown setting 'batch_sise'"),
    (lambda d: neuromotor.train("pendulum", config={"actor_lr": float("nan")}, run_dir=d), "actor_lr"),
    (lambda d: neuromotor.train("pendulum", seeds=[1, -2], run_dir=d), "seeds must be"),
    (lambda d: neuromotor.train("pendulum", seeds=True, run_dir=d), "seeds must be"),
    (lambda d: neuromotor.train("pendulum", config=3, run_dir=d), "config must be"),
    (lambda d: neuromotor.train("pendulum", run_dir=""), "run_dir is empty"),
    (lambda d: neuromotor.train(_MainEnv, run_dir=d), "module of its own"),
    (lambda d: neuromotor.load_run(d), "not a run directory"),
    (lambda d: neuromotor.start_board("qemu-m7", instance="../x"), "is not a name"),
    (lambda d: neuromotor.start_board("teensy99"), "unknown board"),
])
def test_bad_input_is_one_user_error_and_writes_nothing(tmp_path, call, message):
    target = tmp_path / "run"
    with pytest.raises(neuromotor.UserError, match=message):
        call(target)
    assert not target.exists()


class _MainEnv:
    pass


_MainEnv.__module__ = "__main__"  # as a class typed into a notebook or `python -c`


def test_env_class_from_a_module_is_recorded_by_name(tmp_path, monkeypatch):
    (tmp_path / "tiny_env.py").write_text(
        "import gymnasium as gym, numpy as np\n"
        "class Drift(gym.Env):\n"
        "    observation_space = gym.spaces.Box(-10, 10, (1,), np.float32)\n"
        "    action_space = gym.spaces.Box(-1, 1, (1,), np.float32)\n"
        "    def reset(self, seed=None, options=None):\n"
        "        super().reset(seed=seed)\n"
        "        self.x, self.t = self.np_random.uniform(-1, 1), 0\n"
        "        return np.float32([self.x]), {}\n"
        "    def step(self, a):\n"
        "        self.x, self.t = self.x + 0.1 * float(a[0]), self.t + 1\n"
        "        return np.float32([self.x]), -abs(self.x), False, self.t >= 20, {}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    from tiny_env import Drift
    run = neuromotor.train(Drift, algo="sac", steps=300, config={"learning_starts": 100, "eval_every": 300},
                           run_dir=tmp_path / "drift", progress=False)
    assert run.env == "tiny_env:Drift" and run.algo == "sac"
    assert run.policy.sizes[0] == 1 and np.isfinite(run.evaluate(2).returns).all()


def test_stepping_an_algorithm_yourself():
    algo = neuromotor.TD3(neuromotor.TD3.Config(learning_starts=50, batch_size=32), neuromotor.env_factory("pendulum"),
                          [0, 1])
    for _ in range(120):
        algo.advance()
    assert algo.steps == 120
    spec = algo.policy_spec(1)
    assert isinstance(spec, neuromotor.PolicySpec) and spec(np.zeros(3, np.float32)).shape == (1,)


def test_no_library_module_imports_the_cli():
    offenders = []
    for path in HOST.rglob("*.py"):
        if "cli" in path.relative_to(HOST).parts or path.name == "__main__.py":  # the command itself
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "neuromotor.cli" or n.startswith("neuromotor.cli.") for n in names):
                offenders.append(str(path.relative_to(HOST)))
    assert offenders == []


@pytest.mark.qemu
@pytest.mark.slow
def test_new_user_trains_evaluates_exports_and_deploys_to_a_board(tmp_path):
    """The whole path with top-level names only; the board is the e2e tests' emulated qemu-m7."""
    from e2e.helpers import started_board
    if not shutil.which("qemu-system-arm"):
        pytest.fail("qemu-system-arm is not installed (make system)")
    run = neuromotor.train("pendulum", steps=1000, config={**SMALL, "eval_every": 1000}, run_dir=tmp_path / "run",
                           progress=False)
    assert np.isfinite(run.evaluate(2).mean)
    policy = run.export(tmp_path / "policy.nmp")
    with started_board("qemu-m7", tag="api") as b:
        board = neuromotor.Board(b.port)
        done = board.deploy(policy)
        assert done["backend"] == "native" and not done["dry_run"]
        hil = run.hil(board, episodes=1, steps=40)
        assert hil.returns_match and len(hil.returns) == 1
        bench = board.bench(n=50, backends=["native"], out=tmp_path / "bench")
        assert bench.json_path.is_file() and bench.png_path.is_file()
        assert [r["backend"] for r in bench.rows()] == ["native"] and "native" in bench.table


def test_training_leaves_the_callers_matplotlib_backend_alone(tmp_path):
    """A notebook's plots keep showing after training, rendering and bench plots."""
    import subprocess
    code = ("import matplotlib; matplotlib.use('svg')\n"
            "import neuromotor\n"
            f"run = neuromotor.train('pendulum', steps=100, config={{'eval_every': 100}}, run_dir={str(tmp_path / 'r')!r})\n"
            f"run.render({str(tmp_path / 'a.gif')!r})\n"
            "from neuromotor.boards.bench import plot\n"
            "s = {'mean_us': 1.0, 'median_us': 1.0, 'p99_us': 1.0, 'khz': 1.0}\n"
            f"plot([{{'board': 'b', 'port': 'p', 'emulated': False, 'backends': {{'native': s}}}}], {str(tmp_path / 'b.png')!r})\n"
            "print(matplotlib.get_backend())\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split()[-1] == "svg" and (tmp_path / "b.png").read_bytes()[:4] == b"\x89PNG"


def test_a_population_leaves_no_worker_processes_behind(tmp_path):
    """A notebook lives long: reading a sharded run's policy or evaluating it ends its workers."""
    import multiprocessing
    run = neuromotor.train("pendulum", steps=200, seeds="0-3", shards=2, config={**SMALL, "eval_every": 200},
                           run_dir=tmp_path / "pop", progress=False)
    assert multiprocessing.active_children() == []
    assert run.policy_of(3).sizes == [3, 16, 16, 1]
    assert multiprocessing.active_children() == []  # closed, not left to the garbage collector
    assert run.evaluate(1).returns.shape == (4, 1)
    assert multiprocessing.active_children() == []


def test_int8_export_from_python_is_the_commands(tmp_path, cli):
    run = neuromotor.train("pendulum", steps=400, config=SMALL, run_dir=tmp_path / "r", progress=False)
    path = run.export(tmp_path / "q.nmp", quantize="int8", max_error=1.0)
    code, _, err = cli("export", run.path, "-o", tmp_path / "cli.nmp", "--quantize", "int8", "--max-error", 1.0)
    assert code == 0, err
    assert path.read_bytes() == (tmp_path / "cli.nmp").read_bytes()
    plain = run.export(tmp_path / "q0.nmp", quantize="int8", max_error=1.0, finetune_steps=0)
    code, _, err = cli("export", run.path, "-o", tmp_path / "cli0.nmp", "--quantize", "int8", "--max-error", 1.0,
                       "--finetune-steps", 0)
    assert code == 0, err
    assert plain.read_bytes() == (tmp_path / "cli0.nmp").read_bytes()
    from neuromotor.policy import read_policy
    assert read_policy(path).dtype == "int8"
    with pytest.raises(neuromotor.UserError, match="int8 policy refused"):
        run.export(tmp_path / "refused.nmp", quantize="int8", max_error=1e-9)
    assert not (tmp_path / "refused.nmp").exists()
    with pytest.raises(neuromotor.UserError, match="quantize must be 'int8'"):
        run.export(tmp_path / "x.nmp", quantize="int4")

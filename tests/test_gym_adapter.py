"""Training on any gymnasium env: ids, module:attr, kwargs, seeding, vector modes, resume, bad input."""

import json
import shutil
import textwrap

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

from neuromotor.envs import env_class  # noqa: E402
from neuromotor.envs.pendulum import PendulumVec  # noqa: E402

# gymnasium's Pendulum computes 3/(m l^2) * u and 0.001 * u^2 in float32 when u is a float32
# action (NumPy 2 keeps float32 * Python float in float32); PendulumVec computes them in
# float64, as gymnasium does for a float64 action. With the action in float64 the two are the
# same arithmetic, so this twin must train to bit-identical numbers.
USER_MODULE = textwrap.dedent('''
    import numpy as np
    import gymnasium
    from gymnasium.envs.classic_control.pendulum import PendulumEnv


    class Pendulum64(PendulumEnv):
        def step(self, u):
            return super().step(np.asarray(u, np.float64))


    class Flaky(PendulumEnv):
        """Raises (or observes NaN, or rewards NaN) from its step `at` on."""

        def __init__(self, at=250, nan=False):
            super().__init__()
            self.at, self.nan, self.calls = at, nan, 0

        def step(self, u):
            self.calls += 1
            obs, r, term, trunc, info = super().step(u)
            if self.calls >= self.at:
                if not self.nan:
                    raise RuntimeError("motor driver fault\\nsecond line of the message")
                if self.nan == "reward":
                    r = float("nan")
                else:
                    obs = obs * np.float32("nan")
            return obs, r, term, trunc, info


    class DictObs(gymnasium.Env):
        observation_space = gymnasium.spaces.Dict({"x": gymnasium.spaces.Box(-1, 1, (2,))})
        action_space = gymnasium.spaces.Box(-1, 1, (1,))


    class Unbounded(PendulumEnv):
        def __init__(self):
            super().__init__()
            self.action_space = gymnasium.spaces.Box(-np.inf, np.inf, (1,), np.float32)


    def short_pendulum():
        return gymnasium.make("Pendulum-v1", max_episode_steps=50)
''')


@pytest.fixture
def user_env(tmp_path, monkeypatch):
    """A module of user envs importable from the working directory, as `userenvs_<n>`."""
    name = f"userenvs_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(USER_MODULE)
    monkeypatch.chdir(tmp_path)
    return name


def _train(cli, run_dir, env, *extra, steps=300):
    code, out, err = cli("train", env, "--steps", steps, "--run-dir", run_dir, "--quiet", "--json",
                         "--set", "eval_every=100", "--set", "checkpoint_every=100",
                         "--set", "eval_episodes=3", *extra)
    assert code == 0, err
    return json.loads(out.strip().splitlines()[-1])


def _arrays(run_dir):
    with np.load(run_dir / "checkpoint.npz") as z:
        return {k: z[k] for k in z.files if k.rpartition(".")[2] != "env_state" and not k.startswith("run.")}


def _returns(run_dir):
    return [(r["step"], r["agent"], r["eval_return_mean"], r["train_return"])
            for r in map(json.loads, (run_dir / "metrics.jsonl").read_text().splitlines())]


def _one_line_error(code, err, *words):
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("neuromotor: error:"), err
    for w in words:
        assert w in lines[0], lines[0]


def test_a_twin_of_a_built_in_env_trains_to_identical_numbers(cli, tmp_path, user_env):
    _train(cli, tmp_path / "builtin", "pendulum", "--seeds", "0,7", "--algo", "td3")
    _train(cli, tmp_path / "twin", f"{user_env}:Pendulum64", "--seeds", "0,7", "--algo", "td3",
           "--env-kwargs", '{"max_episode_steps": 200}')
    a, b = _arrays(tmp_path / "builtin"), _arrays(tmp_path / "twin")
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    assert _returns(tmp_path / "builtin") == _returns(tmp_path / "twin")


def test_pendulum_v1_starts_from_the_built_in_states_and_trains_alike(cli, tmp_path):
    """Same initial states bit for bit; afterwards gymnasium's float32 torque term moves the
    trajectories by float32 rounding, so the numbers agree closely but not bitwise."""
    gym_env = env_class("Pendulum-v1")(6)
    agents_a = [np.random.default_rng(s) for s in (0, 1)]
    agents_b = [np.random.default_rng(s) for s in (0, 1)]
    rngs_a = [g for g in agents_a for _ in range(3)]  # two agents of three envs, as PPO lays them out
    rngs_b = [g for g in agents_b for _ in range(3)]
    np.testing.assert_array_equal(gym_env.reset(rngs_a), PendulumVec(6).reset(rngs_b))
    assert [r.bit_generator.state for r in rngs_a] == [r.bit_generator.state for r in rngs_b]
    built = _train(cli, tmp_path / "builtin", "pendulum")
    gym = _train(cli, tmp_path / "gym", "Pendulum-v1")
    assert gym["eval_return_mean"] == pytest.approx(built["eval_return_mean"], rel=1e-3)
    assert json.loads((tmp_path / "gym" / "config.json").read_text())["env"] == "Pendulum-v1"


def test_async_vector_env_computes_what_sync_does(cli, tmp_path):
    _train(cli, tmp_path / "sync", "Pendulum-v1", "--seeds", "3,4", "--shards", 1, steps=200)
    _train(cli, tmp_path / "async", "Pendulum-v1", "--seeds", "3,4", "--shards", 1, "--vector", "async",
           steps=200)
    a, b = _arrays(tmp_path / "sync"), _arrays(tmp_path / "async")
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    assert json.loads((tmp_path / "async" / "config.json").read_text())["vector"] == "async"


def test_agent_k_owns_its_envs_and_stream(cli, tmp_path):
    _train(cli, tmp_path / "pop", "Pendulum-v1", "--seeds", "2,5", "--shards", 1, "--algo", "ppo",
           "--set", "num_envs=3", "--set", "num_steps=50", "--set", "minibatch_size=50", steps=300)
    _train(cli, tmp_path / "one", "Pendulum-v1", "--seed", "5", "--algo", "ppo",
           "--set", "num_envs=3", "--set", "num_steps=50", "--set", "minibatch_size=50", steps=300)
    pop, one = _arrays(tmp_path / "pop"), _arrays(tmp_path / "one")
    np.testing.assert_array_equal(pop["obs"][1], one["obs"][0])
    np.testing.assert_array_equal(pop["obs_mean"][1], one["obs_mean"][0])
    assert [r[2:] for r in _returns(tmp_path / "pop") if r[1] == 1] == [r[2:] for r in _returns(tmp_path / "one")]


def test_env_kwargs_reach_gymnasium_make_and_are_recorded(cli, tmp_path):
    run = tmp_path / "run"
    _train(cli, run, "Pendulum-v1", "--set", "env_kwargs.g=2.0", "--env-kwargs", "{max_episode_steps = 50}",
           steps=100)
    doc = json.loads((run / "config.json").read_text())
    assert doc["env_kwargs"] == {"g": 2.0, "max_episode_steps": 50}
    factory = env_class("Pendulum-v1", doc["env_kwargs"])
    assert factory.max_episode_steps == 50
    code, out, err = cli("eval", run, "--episodes", "2", "--json")
    assert code == 0, err
    # 50-step episodes: returns far smaller in magnitude than a 200-step episode's
    assert -50 * 17 <= json.loads(out.strip().splitlines()[-1])["eval_return_mean"] <= 0


def test_resume_restarts_the_episodes_in_flight_and_is_otherwise_exact(cli, tmp_path):
    base = tmp_path / "base"
    _train(cli, base, "Pendulum-v1", "--set", "checkpoint_every=150", steps=150)
    before = _arrays(base)
    assert before["ep_len"][0] == 150  # an episode in flight
    for name in ("r1", "r2"):
        shutil.copytree(base, tmp_path / name)
        code, out, err = cli("train", "--resume", tmp_path / name, "--steps", 300, "--quiet")
        assert code == 0, err
    r1, r2 = _arrays(tmp_path / "r1"), _arrays(tmp_path / "r2")
    for k in r1:
        np.testing.assert_array_equal(r1[k], r2[k], err_msg=k)
    assert int(r1["steps"]) == 300 and r1["ep_len"][0] == 150  # restarted at 150, not continued to 200
    # the first 150 transitions (and the parameters' history before them) are the checkpoint's
    np.testing.assert_array_equal(r1["replay"][:, :150], before["replay"][:, :150])


@pytest.mark.parametrize("env, words", [
    ("CartPole-v1", ["Discrete(2)", "Box"]),
    ("{mod}:DictObs", ["Dict(", "Box observations"]),
    ("{mod}:Unbounded", ["unbounded", "inf"]),
    ("no_such_module_xyz:Env", ["cannot import 'no_such_module_xyz'"]),
    ("{mod}:NoSuchAttr", ["no attribute"]),
    ("Pendulum-v7", ["unknown environment", "Pendulum-v1"]),
])
def test_bad_envs_are_one_line_and_write_nothing(cli, tmp_path, runs_root, user_env, env, words):
    code, out, err = cli("train", env.format(mod=user_env), "--steps", 10)
    _one_line_error(code, err, *words)
    assert list(runs_root.iterdir()) == []


@pytest.mark.parametrize("extra, words", [
    (["--env-kwargs", "[1, 2]"], ["--env-kwargs must be a table"]),
    (["--env-kwargs", "{nope"], ["neither a JSON object nor a TOML inline table"]),
    (["--set", "env_kwargs.bad-name=1"], ["does not name a keyword argument"]),
    (["--set", "env_kwargs.no_such_arg=1"], ["could not be made", "no_such_arg"]),
    (["--set", "vector=threads"], ["vector must be one of sync, async"]),
])
def test_bad_env_settings_are_one_line(cli, tmp_path, runs_root, extra, words):
    code, out, err = cli("train", "Pendulum-v1", "--steps", 10, *extra)
    _one_line_error(code, err, *words)
    assert list(runs_root.iterdir()) == []


def test_built_in_envs_refuse_kwargs_they_do_not_take(cli, runs_root):
    code, out, err = cli("train", "pendulum", "--steps", 10, "--env-kwargs", '{"g": 3}')
    _one_line_error(code, err, "built-in environment 'pendulum' takes the env_kwargs observe_velocity (got g)")


@pytest.mark.parametrize("nan, vector, words", [
    (False, "sync", ["raised in step", "motor driver fault"]),
    (False, "async", ["raised in step", "motor driver fault"]),
    (True, "sync", ["NaN or inf observation"]),
    ("reward", "sync", ["non-finite reward"]),
])
def test_env_failing_mid_run_keeps_the_last_good_checkpoint(cli, tmp_path, user_env, nan, vector, words):
    run = tmp_path / "run"
    kwargs = json.dumps({"at": 250, "nan": nan, "max_episode_steps": 200})
    code, out, err = cli("train", f"{user_env}:Flaky", "--env-kwargs", kwargs, "--steps", 400, "--run-dir", run,
                         "--quiet", "--set", "eval_every=1000", "--set", "checkpoint_every=100",
                         "--set", "eval_episodes=1", "--vector", vector)
    _one_line_error(code, err, *words)
    assert "second line" not in err
    arrays = _arrays(run)
    assert int(arrays["steps"]) == 200 and np.isfinite(arrays["actor"]).all()


def test_the_adapter_benchmark_runs_and_reports_its_bound(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    out = tmp_path / "gym_adapter.json"
    res = subprocess.run([sys.executable, str(repo / "benchmarks" / "gym_adapter.py"), "--envs", "2", "--steps", "400",
                          "--repeat", "1", "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    doc = json.loads(out.read_text())
    assert set(doc["rows"]) == {"gymnasium_random", "adapter_random", "ppo_adapter", "ppo_builtin", "td3_adapter",
                                "td3_builtin"}
    assert doc["rows"]["gymnasium_random"]["over_gymnasium_random"] == 1.0
    assert doc["rows"]["gymnasium_random"]["over_gymnasium_random_cpu"] == 1.0
    assert 0 < doc["ppo_over_gymnasium_random_bound"] < 1 and 0 < doc["ppo_over_gymnasium_random_bound_cpu"] < 1
    assert all(len(r["runs_wall"]) == len(r["runs_cpu"]) == 1 and r["env_steps_per_cpu_s"] > 0
               for r in doc["rows"].values())
    assert isinstance(doc["shared_machine"], bool) and ("shared machine" in res.stdout) == doc["shared_machine"]


def test_the_checkpoint_knows_its_env_kwargs(cli, tmp_path):
    run = tmp_path / "run"
    _train(cli, run, "Pendulum-v1", "--set", "env_kwargs.g=2.0", steps=100)
    doc = json.loads((run / "config.json").read_text())
    doc["env_kwargs"]["g"] = 3.0
    (run / "config.json").write_text(json.dumps(doc))
    before = _arrays(run)
    for args in (["train", "--resume", run, "--steps", 200], ["eval", run], ["export", run, "-o", tmp_path / "p.nmp"]):
        _one_line_error(*cli(*args)[::2], "env_kwargs", '{"g": 2.0}', '{"g": 3.0}')
    assert not (tmp_path / "p.nmp").exists()
    doc["env_kwargs"]["g"] = 2.0
    (run / "config.json").write_text(json.dumps(doc))
    code, _, err = cli("train", "--resume", run, "--steps", 200, "--vector", "async", "--quiet")
    assert code == 0, err
    assert json.loads((run / "config.json").read_text())["vector"] == "async"
    assert int(_arrays(run)["steps"]) == 200 and int(before["steps"]) == 100


def test_envs_of_one_agent_draw_in_turn_in_sync_and_async_vector_envs():
    """A SyncVectorEnv resets an agent's envs in one call through a relayed Generator, an
    AsyncVectorEnv in rounds: the same initial states and the same streams afterwards."""
    from neuromotor.envs.gymnasium_vec import GymEnv

    out = []
    for vector in ("sync", "async"):
        env = GymEnv.probe("Pendulum-v1", {}, vector)(6)
        try:
            agents = [np.random.default_rng(s) for s in (3, 4)]
            rngs = [g for g in agents for _ in range(3)]
            first = env.reset(rngs)
            again = env.reset(rngs, mask=np.array([1, 0, 1, 1, 1, 0], bool))
            out.append((first, again, [g.bit_generator.state for g in agents]))
        finally:
            env.close()
    (f1, a1, s1), (f2, a2, s2) = out
    np.testing.assert_array_equal(f1, f2)
    np.testing.assert_array_equal(a1, a2)
    assert s1 == s2 and not np.array_equal(f1[0], f1[1])  # env 1 drew after env 0


def test_registered_envs_end_at_their_time_limit_when_stepped_past_it():
    """The adapter counts the time limit itself (gymnasium's TimeLimit is left out): stepped
    past it, as `hil --steps` may, an env reports truncated there and evaluation stops."""
    from neuromotor.envs.episodes import episode_returns

    env = env_class("Pendulum-v1", {"max_episode_steps": 5})(2)
    obs = env.reset([np.random.default_rng(0), np.random.default_rng(1)])
    seen = []
    returns = episode_returns(env, obs, lambda o, t: seen.append(t) or np.zeros((2, 1), np.float32), 50)
    assert seen == [0, 1, 2, 3, 4] and env.truncated.all() and (returns < 0).all()
    env.step(np.zeros((2, 1), np.float32))  # past the end: those envs restart first
    assert not env.truncated.any()

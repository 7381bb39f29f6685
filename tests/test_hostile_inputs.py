"""Hostile input, by class: each is refused with one line (exit 2, or the API's UserError),
without a traceback, a hang, or a change to anything the command was not asked to write."""

import json
import os
import signal
import subprocess
import sys
import time
import zipfile

import numpy as np
import pytest

import neuromotor
from neuromotor.training import rundir

FAST = ["--set", "batch_size=16", "--set", "eval_episodes=1", "--quiet"]


def refused(code, err, *words):
    assert code == 2, err
    assert err.startswith("neuromotor") and err.count("\n") == 1 and "Traceback" not in err, err
    for w in words:
        assert w in err, err


def _process(*args, timeout=120, env=None, cwd=None):
    """`neuromotor args` in its own process: a hang fails the test instead of stalling it."""
    res = subprocess.run([sys.executable, "-m", "neuromotor", *map(str, args)], capture_output=True, text=True,
                         timeout=timeout, env=env, cwd=cwd)
    return res.returncode, res.stdout, res.stderr


# --- data overwritten through a link, or deleted -------------------------------------------

@pytest.mark.parametrize("name", [rundir.LOCK, rundir.METRICS, rundir.CONFIG, rundir.SUMMARY, rundir.CHECKPOINT])
def test_a_run_file_that_is_a_symlink_is_never_written_through(run_copy, tmp_path, cli, name, snapshot):
    victim = tmp_path / "victim"
    victim.write_bytes(b"the user's own file\n")
    if os.path.lexists(run_copy / name):
        (run_copy / name).unlink()
    (run_copy / name).symlink_to(victim)
    before = snapshot(tmp_path)
    code, _, err = cli("train", "--resume", run_copy, "--steps", 200)
    refused(code, err, "symbolic link")
    assert victim.read_bytes() == b"the user's own file\n" and snapshot(tmp_path) == before


def test_platformio_export_keeps_the_users_own_project(run_copy, tmp_path, cli, snapshot):
    project = tmp_path / "mine"
    (project / "src").mkdir(parents=True)
    (project / "src" / "main.cpp").write_text("int main() { return 42; }\n")
    before = snapshot(project)
    refused(*cli("export", run_copy, "--format", "platformio", "-o", project)[::2], "not empty")
    assert snapshot(project) == before
    empty = tmp_path / "new"
    assert cli("export", run_copy, "--format", "platformio", "-o", empty)[0] == 0
    assert cli("export", run_copy, "--format", "platformio", "-o", empty)[0] == 0  # its own project: refreshed


def test_force_replaces_runs_never_the_users_files(tmp_path, cli, snapshot):
    d = tmp_path / "mine"
    d.mkdir()
    (d / "policy.nmp").write_bytes(b"a policy of the user's")
    (d / "summary.json").write_text('{"mine": true}')
    before = snapshot(d)
    refused(*cli("train", "pendulum", "--steps", 50, "--run-dir", d, "--force", *FAST)[::2], "not a run directory")
    assert snapshot(d) == before


def test_a_refused_train_on_device_leaves_nothing_behind(tmp_path):
    d = tmp_path / "od"
    for _ in range(2):  # the retry is refused for the same reason, not "already exists"
        code, _, err = _process("train-on-device", "--port", "/dev/null", "--steps", 100, "--run-dir", d,
                                "--no-upload", "--quiet", timeout=300)
        refused(code, err)
        assert "already exists" not in err and not d.exists()


# --- hangs: FIFOs where files belong ---------------------------------------------------------

@pytest.mark.parametrize("args,name,words", [
    (["eval", "RUN", "--episodes", "1"], rundir.CHECKPOINT, "not a regular file"),
    (["export", "RUN", "-o", "OUT"], rundir.CHECKPOINT, "not a regular file"),
    (["train", "--resume", "RUN", "--steps", "200"], rundir.CHECKPOINT, "not a regular file"),
    (["train", "--resume", "RUN", "--steps", "200"], rundir.METRICS, "not a regular file"),
    (["train", "--resume", "RUN", "--steps", "200"], rundir.LOCK, "not a regular file"),
    (["eval", "RUN", "--episodes", "1"], rundir.CONFIG, "no such run directory"),
])
def test_a_fifo_is_refused_not_waited_on(run_copy, tmp_path, args, name, words):
    os.unlink(run_copy / name)
    os.mkfifo(run_copy / name)
    argv = [str(run_copy) if a == "RUN" else str(tmp_path / "p.nmp") if a == "OUT" else a for a in args]
    refused(*_process(*argv, timeout=60)[::2], words)


def test_fifo_settings_file_and_fifo_metrics_in_runs(run_copy, tmp_path):
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    refused(*_process("train", "pendulum", "--config", fifo, timeout=60)[::2], "not a regular file")
    os.unlink(run_copy / rundir.METRICS)
    os.mkfifo(run_copy / rundir.METRICS)
    code, out, err = _process("runs", tmp_path, timeout=60)
    assert code == 0 and "run" in out and "Traceback" not in err


# --- tracebacks --------------------------------------------------------------------------------

LONG_INT = "1" * 5000
DEEP = "[" * 30000 + "]" * 30000


@pytest.mark.parametrize("args", [
    ["train", "pendulum", "--set", f"batch_size={LONG_INT}"],
    ["train", "pendulum", "--set", f"actor_hidden={DEEP}"],
    ["train", "pendulum", "--env-kwargs", DEEP],
    ["train", "pendulum", "--env-kwargs", '{"a": ' + LONG_INT + "}"],
    ["sweep", "pendulum", "--grid", f"batch_size={LONG_INT},2"],
    ["train", "pendulum", "--set", "steps=1e400"],
])
def test_huge_and_deep_values(cli, runs_root, args):
    refused(*cli(*args, "--quiet")[::2])
    assert list(runs_root.iterdir()) == []


SETTINGS = ["actor_hidden", "critic_hidden", "activation", "batch_size", "buffer_size", "learning_starts",
            "warmup_actions", "exploration_noise", "policy_noise", "noise_clip", "gamma", "tau", "actor_lr",
            "critic_lr", "policy_delay", "shared_minibatch", "backend", "steps", "eval_every", "eval_episodes",
            "checkpoint_every", "shards"]
HOSTILE_VALUES = [LONG_INT, DEEP, "1e400", "-1e400", "nan", '"\u0000"', "[1, [2, [3]]]", "{a = 1}"]


@pytest.mark.parametrize("key", SETTINGS)
@pytest.mark.parametrize("value", HOSTILE_VALUES, ids=lambda v: v[:12])
def test_every_setting_refuses_hostile_values(cli, runs_root, key, value):
    """Every TD3 and run setting, from --set and from a settings file alike: one line, no run made."""
    refused(*cli("train", "pendulum", "--set", f"{key}={value}", "--quiet")[::2])
    assert list(runs_root.iterdir()) == []


@pytest.mark.parametrize("text", [f"batch_size = {LONG_INT}\n", f"actor_hidden = {DEEP}\n"])
def test_huge_and_deep_settings_files(cli, tmp_path, runs_root, text):
    f = tmp_path / "c.toml"
    f.write_text(text)
    refused(*cli("train", "pendulum", "--config", f)[::2])


DAMAGED_CONFIGS = [b"", b"null", b"[]", b"{}", b'{"env": 3, "algo": "td3", "seeds": [0]}',
                   b'{"env": "pendulum", "algo": "td3", "seeds": "0"}',
                   b'{"env": "pendulum", "algo": "zzz", "seeds": [0], "run": {}, "algo_config": {}}',
                   b'{"env": "pendulum", "algo": "td3", "seeds": [-1], "run": {}, "algo_config": {}}',
                   b'{"env": "pendulum", "algo": "td3", "seeds": [0, 0], "run": {}, "algo_config": {}}',
                   b'{"env": "pendulum", "algo": "td3", "seeds": [1180591620717411303424], "run": {}, "algo_config": {}}',
                   b'{"env": "pendulum", "algo": "td3", "seeds": [0], "run": {"steps": "x"}, "algo_config": {}}',
                   b'{"env": "pendulum", "algo": "td3", "seeds": [0], "run": {}, "algo_config": {"tau": 1e400}}',
                   b"\xff\xfe{}", b" " * (2 << 20)]


@pytest.mark.parametrize("command", ["eval", "export", "resume"])
@pytest.mark.parametrize("content", DAMAGED_CONFIGS, ids=lambda c: repr(c[:24]))
def test_a_damaged_run_config(run_copy, cli, tmp_path, snapshot, command, content):
    (run_copy / rundir.CONFIG).write_bytes(content)
    before = snapshot(run_copy)
    args = {"eval": ["eval", run_copy, "--episodes", 1], "export": ["export", run_copy, "-o", tmp_path / "p.nmp"],
            "resume": ["train", "--resume", run_copy, "--steps", 200]}[command]
    refused(*cli(*args)[::2], rundir.CONFIG)
    assert snapshot(run_copy) == before and not (tmp_path / "p.nmp").exists()


def test_deep_run_config(run_copy, cli):
    (run_copy / rundir.CONFIG).write_text(DEEP)
    refused(*cli("eval", run_copy)[::2], "nests deeper")


USER_ENVS = '''
import gymnasium, numpy as np, sys

class NoSpaces(gymnasium.Env):
    def reset(self, seed=None, options=None):
        return np.zeros(3, np.float32), {}

class Fine(gymnasium.Env):
    observation_space = gymnasium.spaces.Box(-1, 1, (3,))
    action_space = gymnasium.spaces.Box(-1, 1, (1,))

    def reset(self, seed=None, options=None):
        return np.zeros(self.observation_space.shape, np.float32), {}

    def step(self, action):
        return np.zeros(self.observation_space.shape, np.float32), 0.0, False, False, {}

class Empty(Fine):
    observation_space = gymnasium.spaces.Box(-1, 1, (0,))

class NoActions(Fine):
    action_space = gymnasium.spaces.Box(-1, 1, (0,))
'''


@pytest.mark.parametrize("args", [
    ["userenvs:NoSpaces"], ["userenvs:Empty"], ["userenvs:NoActions"],
    ["userenvs:Fine", "--env-kwargs", '{"max_episode_steps": "abc"}'],
    ["userenvs:Fine", "--env-kwargs", '{"max_episode_steps": 1e400}'],
    ["userenvs:Fine", "--env-kwargs", '{"max_episode_steps": -3}'],
    ["exits:Env"],
])
def test_the_users_environment(tmp_path, args):
    (tmp_path / "userenvs.py").write_text(USER_ENVS)
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(0)\n")
    refused(*_process("train", *args, "--steps", 50, "--quiet", cwd=tmp_path,
                      env=dict(os.environ, PYTHONPATH=str(tmp_path)))[::2])
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("args", [
    ["train", "pendulum", "--steps", "50", "--run-dir", "LONG"],
    ["train", "--resume", "LONG"],
    ["export", "RUN", "-o", "LONG"],
    ["eval", "RUN", "--episodes", "1", "--render", "LONG.gif"],
    ["eval", "LONG"],
    ["runs", "LONG"],
    ["sweep", "pendulum", "--seeds", "0", "--steps", "50", "--grid", "batch_size=16", "--dir", "LONG"],
])
def test_names_longer_than_the_file_system_allows(run_copy, cli, runs_root, args):
    long = "x" * 300 + "/" + "y" * 5000
    refused(*cli(*[long if a == "LONG" else long + ".gif" if a == "LONG.gif" else run_copy if a == "RUN" else a
                   for a in args])[::2])


def _npz_with_header(path, key, shape):
    """An .npz whose member `key` declares `shape` (float32) and holds no data."""
    header = {"descr": "<f4", "fortran_order": False, "shape": shape}
    buf = np.lib.format.magic(1, 0)
    text = repr(header).encode()
    text += b" " * ((64 - (len(buf) + 2 + len(text) + 1) % 64) % 64) + b"\n"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{key}.npy", buf + len(text).to_bytes(2, "little") + text)


@pytest.mark.parametrize("key", ["actor", "replay"])
def test_a_checkpoint_that_declares_a_vast_array(run_copy, cli, tmp_path, key):
    """The actor (what export reads) or the replay (what only resuming reads) declares 10^13 floats."""
    _npz_with_header(run_copy / rundir.CHECKPOINT, key, (10**7, 10**6))
    for args in (["eval", run_copy, "--episodes", 1], ["export", run_copy, "-o", tmp_path / "p.nmp"],
                 ["train", "--resume", run_copy, "--steps", 200]):
        refused(*cli(*args)[::2], "does not match" if key == "actor" or args[0] != "export" else "lacks actor")


@pytest.mark.parametrize("content", [b"\xff\xfe not utf-8\n", b"[1, 2]\n", b'{"step": "ten"}\n', "DIR"])
def test_damaged_metrics(run_copy, cli, tmp_path, content):
    (run_copy / rundir.METRICS).unlink()
    if content == "DIR":
        (run_copy / rundir.METRICS).mkdir()
    else:
        (run_copy / rundir.METRICS).write_bytes(content)
    refused(*cli("train", "--resume", run_copy, "--steps", 200)[::2], rundir.METRICS)
    code, out, err = cli("runs", tmp_path)
    assert code == 0 and "run" in out


@pytest.mark.parametrize("damage", ["not json", "{}", '{"units": 3, "configs": [], "backend": "local"}',
                                    "SUMMARY"])
def test_damaged_sweep(tmp_path, cli, damage):
    sweep = tmp_path / "sweep"
    assert cli("sweep", "pendulum", "--seeds", "0", "--grid", "batch_size=16", "--steps", 50, "--set",
               "eval_episodes=1", "--dir", sweep, "--quiet")[0] == 0
    if damage == "SUMMARY":
        unit = next(p for p in sweep.iterdir() if (p / rundir.SUMMARY).is_file())
        (unit / rundir.SUMMARY).write_text('{"agents": "none"}')
    else:
        (sweep / "sweep.json").write_text(damage)
    refused(*cli("sweep", "--resume", sweep, "--quiet")[::2])


def test_runs_prints_an_undecodable_name(run_copy, tmp_path):
    os.rename(run_copy, os.fsdecode(bytes(tmp_path) + b"/r\xff\xfeun"))
    code, out, err = _process("runs", tmp_path, env=dict(os.environ, PYTHONIOENCODING="utf-8:strict"))
    assert code == 0 and "\\xff\\xfe" in out, err


def test_ctrl_c_on_a_sharded_population_is_one_line(tmp_path):
    for attempt in range(2):
        # SIGINT at its default in the child: a runner started as a background job ignores it,
        # and Python then never turns it into KeyboardInterrupt
        proc = subprocess.Popen([sys.executable, "-m", "neuromotor", "train", "pendulum", "--seeds", "0-1",
                                 "--shards", "2", "--steps", "200000", "--run-dir", tmp_path / f"r{attempt}"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.time() + 120
        while not (tmp_path / f"r{attempt}" / rundir.CONFIG).exists() and time.time() < deadline:
            time.sleep(0.1)
        time.sleep(2 + attempt)  # the shards are stepping
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 130 and "Traceback" not in err and "interrupted" in err, err


@pytest.mark.parametrize("kwargs,words", [
    ({"algo": ["td3"]}, "unknown algorithm"),
    ({"run_dir": 123}, "run_dir must be a path"),
    ({"vector": "threads"}, "vector must be one of"),
    ({"run_dir": "x" * 300 + "/" + "y" * 5000}, "cannot use run directory"),
])
def test_the_api_refuses_what_the_cli_refuses(tmp_path, monkeypatch, kwargs, words):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(neuromotor.UserError, match=words):
        neuromotor.train("pendulum", steps=50, progress=False, **kwargs)
    assert not (tmp_path / "runs").exists()


def test_json_summaries_read_back_as_written(run_copy):
    assert json.loads((run_copy / rundir.SUMMARY).read_text()) == neuromotor.load_run(run_copy).summary

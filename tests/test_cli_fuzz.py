"""Bad values for every option of every subcommand: exit 2, one line, no traceback, nothing changed.

The cases are generated from the CLI's own parser, so an option added without an entry in
BAD (what is wrong for it) fails `test_every_option_has_bad_values`. Boards are never
reached: port resolution, QEMU, builds and uploads are replaced by stand-ins that fail
the test (a bad value must be refused before any of them).
"""

import argparse
import os
import shutil
import subprocess
import sys

import pytest

from neuromotor.cli import build_parser
from neuromotor.errors import UserError

INT = ["-1", "x", "1e23", "", "nan", str(2**70), str(-2**70)]
POSITIVE = INT + ["0"]
FLOAT = ["nan", "inf", "-inf", "-1", "0", "x", ""]
PATH_IN = ["", "MISSING", "DIR", "BINARY", "TEXT"]
PATH_OUT = ["", "DIR", "TEXT/x", "MISSING/x"]
BOARD = ["", "nope", "../qemu-m7", "a/b"]

# (command, option) -> values that must be refused
BAD = {
    ("train", "env"): ["", "cartpole", "../pendulum"],
    ("train", "--algo"): ["", "dqn"],
    ("train", "--steps"): POSITIVE,
    ("train", "--envs"): POSITIVE,
    ("train", "--threads"): ["0", "-1", "x", "", "100000"],
    ("train", "--seed"): INT + [str(2**32)],
    ("train", "--seeds"): ["", "x", "-1", "5-2", "0-99999999999", "1,1", "0-" + str(2**32)],
    ("train", "--shards"): INT + ["5000"],
    ("train", "--preset"): ["", "ant-papr"],
    ("train", "--config"): PATH_IN,
    ("train", "--set"): ["x", "=1", "nope=1", "actor_lr=nan", "batch_size=0", "gamma=inf", "activation=x"],
    ("train", "--run-dir"): ["", "TEXT", "TEXT/x", "RUN"],
    ("train", "--resume"): ["", "MISSING", "TEXT", "DIR"],
    ("train", "--env-kwargs"): ["", "[1]", "{x", '{"g": 2}', '{"1bad": 2}'],
    ("train", "--vector"): ["", "threads"],
    ("sweep", "env"): ["", "cartpole", "../pendulum"],
    ("sweep", "--algo"): ["", "dqn"],
    ("sweep", "--steps"): POSITIVE,
    ("sweep", "--seeds"): ["", "x", "-1", "5-2", "0-99999999999", "1,1"],
    ("sweep", "--grid"): ["", "x", "=1", "batch_size=", "batch_size=16,,32", "batch_size=16,16", "nope=1,2",
                          "actor_lr=nan", "batch_size=0,16", "gamma=inf", "activation=x", "actor_hidden=[64,0]"],
    ("sweep", "--random"): ["", "x", "actor_lr", "actor_lr=uniform", "actor_lr=normal:0:1", "actor_lr=loguniform:0:1",
                            "actor_lr=loguniform:1e-2:1e-4", "actor_lr=uniform:nan:1", "actor_lr=uniform:0:inf",
                            "nope=uniform:0:1", "batch_size=uniform:16:32", "gamma=uniform:2:3",
                            "policy_delay=loguniform:1e-4:1e-2"],
    ("sweep", "-n"): POSITIVE + ["1000000"],
    ("sweep", "--sample-seed"): ["-1", "x", "", "1e23"],
    ("sweep", "--preset"): ["", "ant-papr"],
    ("sweep", "--config"): PATH_IN,
    ("sweep", "--set"): ["x", "=1", "nope=1", "actor_lr=nan", "gamma=inf", "activation=x"],
    ("sweep", "--shards"): INT + ["5000", "2"],
    ("sweep", "--backend"): ["", "cuda"],
    ("sweep", "--address"): ["", "auto"],
    ("sweep", "--workers"): POSITIVE + ["100000"],
    ("sweep", "--dir"): ["", "TEXT", "TEXT/x", "RUN"],
    ("sweep", "--resume"): ["", "MISSING", "TEXT", "DIR", "RUN"],
    ("eval", "run_dir"): PATH_IN,
    ("eval", "--episodes"): POSITIVE,
    ("eval", "--render"): ["", "x.png", "MISSING/x.gif", "TEXT/x.gif", "DIR.gif", "RUN/config.json"],
    ("eval", "--agent"): INT + ["1"],
    ("eval", "--seed"): INT,
    ("eval", "--env"): ["", "cartpole", "../pendulum"],
    ("eval", "--env-kwargs"): ["", "[1]", "{x", '{"g": 2}'],
    ("distil", "env"): ["", "pendulum"],
    ("distil", "--set"): ["x", "=1", "nope=1", "teachers=0", "teachers=abc"],
    ("distil", "--nominal"): PATH_IN,
    ("distil", "--run-dir"): ["", "TEXT", "TEXT/x"],
    ("import", "file"): PATH_IN,
    ("import", "-o"): PATH_OUT + ["BINARY"],
    ("import", "--format"): ["", "nmp"],
    ("import", "--obs-mean"): ["", "x", "1,,2", "nan", "inf"],
    ("import", "--obs-std"): ["", "x", "1,,2", "nan", "-inf"],
    ("import", "--action-low"): ["", "x", "nan", "1,inf"],
    ("import", "--action-high"): ["", "x", "nan", "1,inf"],
    ("import", "--env"): ["", "cartpole", "../pendulum"],
    ("import", "--env-kwargs"): ["", "[1]", "{x", '{"g": 2}'],
    ("export", "run"): PATH_IN,
    ("export", "-o"): PATH_OUT + ["RUN/checkpoint.npz", "RUN/config.json", "RUN/metrics.jsonl", "NULL"],
    ("export", "--format"): ["", "onnx"],
    ("export", "--agent"): INT + ["1"],
    ("export", "--quantize"): ["", "int4"],
    ("export", "--max-error"): FLOAT,
    ("export", "--calibration"): POSITIVE,
    ("export", "--heldout"): POSITIVE,
    ("export", "--seed"): INT + [str(2**32)],
    ("export", "--finetune-steps"): INT + ["100001"],
    ("runs", "root"): ["MISSING", "TEXT"],
    ("bench", "--port"): ["", "MISSING"],
    ("bench", "-n"): POSITIVE,
    ("bench", "--backend"): ["", "cuda"],
    ("bench", "--out"): ["", "TEXT", "TEXT/x"],
    ("bench", "--predict-mhz"): FLOAT,
    ("hil", "source"): PATH_IN,
    ("hil", "--port"): ["", "MISSING"],
    ("hil", "--episodes"): POSITIVE + ["100000000"],
    ("hil", "--seed"): INT,
    ("hil", "--env"): ["", "cartpole"],
    ("hil", "--env-kwargs"): ["", "[1]", "{x", '{"g": 2}'],
    ("hil", "--steps"): POSITIVE,
    ("deploy", "source"): PATH_IN,
    ("deploy", "--port"): ["", "MISSING"],
    ("deploy", "--dest"): ["", "/", "x.nmp", "/a/../b.nmp", "/dir/", "/a b.nmp", "/x\n.nmp"],
    ("deploy", "--natmod"): ["", "maybe"],
    ("deploy", "--index"): ["", "MISSING", "TEXT", "DIR", "ftp://x", "http://", "http:///p", "https:"],
    ("train-on-device", "--port"): ["", "MISSING"],
    ("train-on-device", "--profile"): ["", "huge"],
    ("train-on-device", "--steps"): POSITIVE,
    ("train-on-device", "--seed"): INT + [str(2**32)],
    ("train-on-device", "--every"): POSITIVE,
    ("train-on-device", "--eval-episodes"): POSITIVE,
    ("train-on-device", "--run-dir"): ["", "TEXT", "TEXT/x", "RUN"],
    ("board start", "name"): BOARD,
    ("board start", "--instance"): ["", "../x", "a/b", "-x"],
    ("board start", "--firmware"): PATH_IN,
    ("board stop", "name"): ["", "../x", "a/b"],
    ("board reset", "name"): BOARD,
    ("board build", "name"): BOARD,
    ("board build", "-j"): POSITIVE + ["100000"],
    ("board baremetal", "name"): BOARD,
    ("board baremetal", "--sizes"): ["", "x", "0,1", "3", "-1,2", "3,100000000", "3,,1"],
    ("board baremetal", "--acts"): ["", "x", "relu,x", "relu,relu,relu,relu"],
    ("board baremetal", "--repeat"): POSITIVE + ["100000000000"],
    ("board check", "name"): ["nope", "", "../qemu-m7"],
    ("board pio", "pio_args"): ["", "nonsense", "-x", "../run"],
    ("serve-web", "--port"): INT + ["65536"],
}

# A command that is valid except for the option under test ({opt} is replaced by the case).
BASE = {
    "train": ["train", "pendulum", "--steps", "20", "--set", "batch_size=16", "--set", "eval_episodes=1",
              "--quiet"],
    "sweep": ["sweep", "pendulum", "--steps", "20", "--grid", "batch_size=16", "--set", "eval_episodes=1",
              "--quiet"],
    "eval": ["eval", "RUN", "--episodes", "1"],
    "export": ["export", "RUN", "-o", "OUT/p.nmp"],
    "distil": ["distil", "quadrotor", "--run-dir", "OUT/distil"],
    "import": ["import", "BINARY", "-o", "OUT/p.nmp", "--format", "onnx"],
    "runs": ["runs"],
    "bench": ["bench", "--port", "PORT", "--out", "OUT/bench"],
    "hil": ["hil", "RUN", "--port", "PORT", "--episodes", "1"],
    "deploy": ["deploy", "RUN", "--port", "PORT"],
    "train-on-device": ["train-on-device", "--port", "PORT", "--steps", "100", "--run-dir", "OUT/od"],
    "board start": ["board", "start", "qemu-m7"],
    "board stop": ["board", "stop", "qemu-m7"],
    "board reset": ["board", "reset", "qemu-m7"],
    "board build": ["board", "build", "qemu-m7"],
    "board baremetal": ["board", "baremetal", "qemu-m7"],
    "board check": ["board", "check"],
    "board pio": ["board", "pio"],
    "serve-web": ["serve-web"],
}
# Options that cannot combine with the base command's own (train --resume replaces the env).
STANDALONE = {("train", "--resume"): ["train", "--quiet"], ("train", "--run-dir"): None,
              ("sweep", "--resume"): ["sweep", "--quiet"]}


def _options(parser, prefix=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, prefix + (name,))
        elif isinstance(action, (argparse._HelpAction, argparse._VersionAction, argparse._StoreTrueAction)):
            continue
        elif prefix:
            yield " ".join(prefix), (action.option_strings[0] if action.option_strings else action.dest), action


def test_every_option_has_bad_values():
    missing = [(cmd, opt) for cmd, opt, _ in _options(build_parser()) if (cmd, opt) not in BAD]
    assert not missing, f"options without bad values in BAD: {missing}"


def _cases():
    for (cmd, opt), values in BAD.items():
        for v in values:
            yield pytest.param(cmd, opt, v, id=f"{cmd}:{opt}={v!r}")


@pytest.fixture
def tree(tmp_path, trained, monkeypatch):
    """A working directory with a run, a text file, a binary file, a directory and a device node."""
    root = tmp_path / "tree"
    root.mkdir()
    shutil.copytree(trained, root / "RUN")
    (root / "TEXT").write_text("not a run\n")
    (root / "BINARY").write_bytes(bytes(range(256)) * 4)
    (root / "DIR").mkdir()
    (root / "DIR.gif").mkdir()
    (root / "OUT").mkdir()
    (root / "runs").mkdir()
    try:
        os.mknod(root / "NULL", 0o666 | 0o020000, os.makedev(1, 3))
    except PermissionError:
        (root / "NULL").write_text("")
    monkeypatch.chdir(root)
    monkeypatch.setenv("NEUROMOTOR_RUNS", str(root / "runs"))
    return root


@pytest.fixture
def no_boards(monkeypatch):
    """Every way to a board or a build fails the test, except port resolution, which refuses in one line."""
    import neuromotor.boards.link.ports as ports
    from neuromotor import boards

    def refuse_port(port="auto", *a, **k):
        raise UserError(f"no board at port {port!r}")

    monkeypatch.setattr(ports, "resolve_port", refuse_port)
    monkeypatch.setattr(ports, "resolve_ports", lambda p=None, *a, **k: refuse_port(p))

    def reached(*a, **k):
        raise AssertionError("a bad value reached a board, QEMU or a build")

    for name in ("start", "stop", "reset", "build_firmware"):
        monkeypatch.setattr(boards, name, reached)
    import neuromotor.boards.baremetal as baremetal

    monkeypatch.setattr(baremetal, "run_baremetal", reached)


def _argv(cmd, opt, value):
    base = STANDALONE.get((cmd, opt), "default")
    argv = list(BASE[cmd] if base in ("default", None) else base)
    if opt.startswith("-"):
        if opt in argv:  # the base's own value for it is replaced
            i = argv.index(opt)
            del argv[i:i + 2]
        argv += [opt, value]
    else:
        positional = {"env": 1, "run_dir": 1, "run": 1, "source": 1, "file": 1, "root": 1, "name": 2, "pio_args": 2}[opt]
        if cmd in ("runs", "board check", "board pio"):
            argv.append(value)
        else:
            argv[positional] = value
    return argv


@pytest.mark.usefixtures("no_boards")
@pytest.mark.parametrize("cmd, opt, value", list(_cases()))
def test_bad_value_is_one_line_and_changes_nothing(tree, capsys, snapshot, cmd, opt, value):
    from neuromotor.cli import main

    argv = _argv(cmd, opt, value)
    before = snapshot(tree)
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (argv, out, err)
    assert err.startswith("neuromotor") and "error: " in err and err.count("\n") == 1, (argv, err)
    assert "Traceback" not in err + out
    if opt != "--port":
        assert "no board at port" not in err, f"{argv}: the bad value was not checked before the port: {err}"
    assert snapshot(tree) == before, argv


@pytest.mark.parametrize("argv", [
    ["train", "pendulum", "--seed", "-3"],
    ["train", "pendulum", "--seed", "1e23"],
    ["export", "RUN", "-o", ""],
    ["runs", "TEXT"],
])
def test_real_process_exit_status(tree, argv):
    proc = subprocess.run([sys.executable, "-m", "neuromotor", *argv], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr

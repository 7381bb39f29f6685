"""Helpers for the end-to-end tests: run the CLI, build policies, look at the board."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from neuromotor.policy import write_policy
from neuromotor.policy.spec import PolicySpec

REPO = Path(__file__).resolve().parents[2]


def make_spec(seed, sizes=(3, 64, 64, 1), acts=("relu", "relu", "tanh")) -> PolicySpec:
    rng = np.random.default_rng(seed)
    n = len(sizes) - 1
    return PolicySpec(
        [rng.normal(0, 1 / np.sqrt(sizes[i]), (sizes[i + 1], sizes[i])) for i in range(n)],
        [rng.normal(0, 0.1, sizes[i + 1]) for i in range(n)], list(acts),
        rng.normal(0, 0.1, sizes[0]), rng.uniform(0.5, 2, sizes[0]),
        np.full(sizes[-1], 2.0), np.zeros(sizes[-1]), meta={"env": "pendulum"})


def write_spec(spec, path) -> Path:
    write_policy(spec, path)
    return Path(path)


def nm_cmd(*args):
    return [sys.executable, "-m", "neuromotor", *map(str, args)]


def nm(*args, env=None, timeout=300, check=False):
    res = subprocess.run(nm_cmd(*args), capture_output=True, text=True, timeout=timeout, cwd=REPO,
                         env=dict(os.environ, **(env or {})))
    if check and res.returncode:
        raise AssertionError(f"neuromotor {' '.join(map(str, args))} failed ({res.returncode}):\n"
                             f"{res.stdout}\n{res.stderr}")
    return res


def last_json(text):
    return json.loads(text.strip().splitlines()[-1])


def recurrent_hil(port, policy, env_kwargs: dict, episodes: int, steps: int, seed: int) -> dict:
    """`neuromotor hil` of a recurrent quadrotor policy already on the board; its JSON, once it
    ran on the firmware's kernels with returns equal to the host's and every action within 1e-5
    of the host's step from the same observation and state."""
    res = nm("hil", policy, "--port", port, "--env", "quadrotor", "--env-kwargs", json.dumps(env_kwargs),
             "--episodes", episodes, "--steps", steps, "--seed", seed, "--json", check=True)
    r = last_json(res.stdout)
    assert r["recurrent"] is True and r["backend"] == "native", r
    assert r["returns_match"] is True and r["max_action_rel_diff"] <= 1e-5, r
    return r


def start_paused(*args, stage, timeout=120):
    """Start `neuromotor <args>` with the deploy fault hook; return the process once it is paused."""
    env = dict(os.environ, NEUROMOTOR_DEPLOY_PAUSE=stage, PYTHONUNBUFFERED="1")
    p = subprocess.Popen(nm_cmd(*args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         cwd=REPO, env=env)
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        seen.append(line)
        if f"paused at {stage}" in line:
            return p, "".join(seen)
    p.kill()
    p.wait()
    raise AssertionError("deploy never reached the pause point:\n" + "".join(seen))


def sigkill(p):
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=10)
    p.stdout.close()
    assert p.returncode == -signal.SIGKILL


def board_exec(port, code, timeout=30) -> str:
    """Run code on the board with mpremote (soft reset first, like any mpremote command)."""
    res = subprocess.run([str(Path(sys.executable).parent / "mpremote"), "connect", port, "exec", code],
                         capture_output=True, text=True, timeout=timeout)
    if res.returncode:
        raise AssertionError(f"mpremote exec failed: {res.stdout}\n{res.stderr}")
    return res.stdout


def board_sha256(port, path) -> str:
    out = board_exec(port, "import hashlib, binascii\nh = hashlib.sha256()\n"
                     f"with open({path!r}, 'rb') as f:\n    h.update(f.read())\n"
                     "print('SHA', binascii.hexlify(h.digest()).decode())")
    return [w for w in out.split() if len(w) == 64][-1]


def board_listdir(port, d="/"):
    out = board_exec(port, f"import os\nprint('LS', os.listdir({d!r}))")
    line = [x for x in out.splitlines() if x.startswith("LS ")][-1]
    import ast
    return ast.literal_eval(line[3:])


def ensure_deployed(port, path) -> None:
    """Make `path` the board's active policy, deploying only when it is not already (so each
    test states its own starting point instead of relying on the test before it)."""
    out = board_exec(port, "import os, hashlib, binascii\n"
                     "names = os.listdir('/')\nlib = os.listdir('/lib') if 'lib' in names else []\n"
                     "h = hashlib.sha256()\n"
                     "if 'policy.nmp' in names:\n    h.update(open('/policy.nmp', 'rb').read())\n"
                     "clean = 'nm_bench.mpy' in lib and not [n for n in names if n.endswith(('.nmtmp', '.lock'))]\n"
                     "print('STATE', clean, binascii.hexlify(h.digest()).decode())")
    clean, digest = [x for x in out.splitlines() if x.startswith("STATE ")][-1].split()[1:]
    if clean != "True" or digest != hashlib.sha256(Path(path).read_bytes()).hexdigest():
        nm("deploy", path, "--port", port, check=True)


def board_reset(port, timeout=30):
    """Soft reset, as `mpremote soft-reset` does it (Ctrl-D in the raw REPL)."""
    res = subprocess.run([str(Path(sys.executable).parent / "mpremote"), "connect", port, "soft-reset"],
                         capture_output=True, text=True, timeout=timeout)
    if res.returncode:
        raise AssertionError(f"mpremote soft-reset failed: {res.stdout}\n{res.stderr}")


class started_board:
    """An emulated board under an instance name of our own (tests/boards' session pool uses
    <board>-pytest-<pid>; both may run in one pytest process). Always stopped on exit."""

    def __init__(self, name, tag="e2e"):
        self.name, self.instance, self.board = name, f"{name}-{tag}-{os.getpid()}", None

    def __enter__(self):
        from neuromotor import boards
        self.board = boards.start(self.name, instance=self.instance, build=True, die_with_parent=True)
        return self.board

    def __exit__(self, *exc):
        from neuromotor import boards
        boards.stop(self.instance)

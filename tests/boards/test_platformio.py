"""`neuromotor export --format platformio`: a PlatformIO project for the real boards around the
policy's C header, whose program prints NMB/1 bench lines that `neuromotor bench` reads."""

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from neuromotor.boards.link.protocol import decode_line
from neuromotor.policy.platformio import INCLUDE_DIR, kernel_headers

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from board_inference import GRU_H, SIZES, make_gru_policies, make_policy  # noqa: E402

ENVS = ["teensy41", "esp32", "esp32c3", "stm32f405", "stm32h743"]

HOST_MAIN = r"""
#include <stdio.h>
#include <stdint.h>
#include "nm_policy_bench.h"
static uint32_t t;
static uint32_t fake_cycles(void) { t += 1000; return t; }  /* 1000 cycles between reads */
static void emit(const char *line) { printf("%s\n", line); }
int main(void) {
    int a = nm_bench_report(fake_cycles, emit, 600000000u, "host", 50);
    int b = nm_bench_report(fake_cycles, emit, 600000000u, "host", 0);
    return a == 0 && b == -1 ? 0 : 1;
}
"""


@pytest.fixture
def project(tmp_path, cli):
    make_policy(tmp_path / "p.nmp")
    out = tmp_path / "proj"
    code, stdout, err = cli("export", tmp_path / "p.nmp", "--format", "platformio", "-o", out)
    assert code == 0, err
    assert "PlatformIO project" in stdout
    return out


def test_export_writes_the_project(project):
    ini = (project / "platformio.ini").read_text()
    for env in ENVS:
        assert f"[env:{env}]" in ini
    for rel in ("include/nm_policy.h", "include/nm_kernels.h", "src/nm_policy_bench.c", "src/nm_policy_bench.h",
                "src/main.cpp"):
        assert (project / rel).is_file(), rel
    headers = kernel_headers()
    assert {"nm_kernels.h", "nm_dense.h", "nm_isa.h", "nm_mlp.h"} <= set(headers)
    for h in headers:  # nm_kernels.h and every header it includes, as in the tree
        assert (project / "include" / h).read_text() == (INCLUDE_DIR / h).read_text(), h
    assert "nm_policy_forward" in (project / "include/nm_policy.h").read_text()
    assert "DWT->CYCCNT" in (project / "src/main.cpp").read_text()


def test_export_refuses_foreign_projects_and_files(tmp_path, cli):
    make_policy(tmp_path / "p.nmp")
    foreign = tmp_path / "theirs"
    foreign.mkdir()
    (foreign / "platformio.ini").write_text("[env:mine]\nboard = uno\n")
    code, _, err = cli("export", tmp_path / "p.nmp", "--format", "platformio", "-o", foreign)
    assert code == 2 and "belongs to another project" in err and err.count("\n") == 1
    assert (foreign / "platformio.ini").read_text() == "[env:mine]\nboard = uno\n"
    assert not (foreign / "src").exists()
    afile = tmp_path / "afile"
    afile.write_text("x")
    code, _, err = cli("export", tmp_path / "p.nmp", "--format", "platformio", "-o", afile)
    assert code == 2 and "not a directory" in err and afile.read_text() == "x"
    # a second export into its own project is fine (same files replaced)
    out = tmp_path / "again"
    assert cli("export", tmp_path / "p.nmp", "--format", "platformio", "-o", out)[0] == 0
    assert cli("export", tmp_path / "p.nmp", "--format", "platformio", "-o", out)[0] == 0


def _host_program(project, tmp_path):
    if not shutil.which("cc"):
        pytest.skip("no host C compiler")
    main = tmp_path / "host_main.c"
    main.write_text(HOST_MAIN)
    exe = tmp_path / "host_bench"
    subprocess.run(["cc", "-O2", "-std=gnu99", "-Wall", "-Werror", "-I", str(project / "include"),
                    "-I", str(project / "src"), "-o", str(exe), str(main), str(project / "src/nm_policy_bench.c"),
                    "-lm"], check=True, capture_output=True, text=True)
    return exe


def test_bench_program_prints_nmb1_lines(project, tmp_path):
    exe = _host_program(project, tmp_path)
    res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stdout + res.stderr
    good, bad = [decode_line(line) for line in res.stdout.splitlines()]
    assert good.seq == "-" and good.word == "bench"
    import json
    r = json.loads(good.payload)
    assert r["board"] == "host" and r["n"] == 50 and r["example_ok"] is True
    assert r["cycles"]["median"] == r["cycles"]["mean"] == 1000 and r["macs"] == 13 * 64 + 64 * 64 + 64 * 4
    assert "error" in json.loads(bad.payload)


def test_bench_program_of_a_recurrent_policy(tmp_path, cli):
    """A GRU policy's project: its example checked after the header's steps from the initial
    state, its multiply-adds counted with the GRU's three gates over input and state."""
    import json
    out = tmp_path / "proj"
    code, _, err = cli("export", make_gru_policies(tmp_path)["gru"], "--format", "platformio", "-o", out)
    assert code == 0, err
    res = subprocess.run([str(_host_program(out, tmp_path))], capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stdout + res.stderr
    r = json.loads(decode_line(res.stdout.splitlines()[0]).payload)
    assert r["example_ok"] is True and r["macs"] == 3 * GRU_H * (SIZES[0] + GRU_H) + GRU_H * 4


def test_bench_reads_a_baremetal_board(project, tmp_path):
    """A port without a REPL that prints the program's lines: bench reports them as 'c-header'."""
    from neuromotor.boards.bench import bench_port, table
    exe = _host_program(project, tmp_path)
    line = subprocess.run([str(exe)], capture_output=True, text=True, timeout=30).stdout.splitlines()[0]
    port, close = _pty_board(line)
    try:
        r = bench_port(port, n=10, timeout=2.0, log=lambda s: None)
    finally:
        close()
    s = r["backends"]["c-header"]
    assert r["baremetal"] is True and r["board"] == "host" and not r["emulated"]
    assert s["mean_us"] == pytest.approx(1000 / 600)
    assert s["cycles"] == 1000 and s["cpu_ticks"]["median"] == 1000
    assert "bare-metal program" in table([r])


def _pio():
    for cand in (Path(sys.executable).with_name("pio"), shutil.which("pio")):
        if cand and Path(cand).exists():
            return str(cand)
    pytest.skip("PlatformIO (pio) is not installed")


def test_pio_parses_the_real_board_environments(project, tmp_path):
    pio = _pio()
    env = dict(os.environ, PLATFORMIO_CORE_DIR=str(tmp_path / "pio-core"))
    res = subprocess.run([pio, "project", "config", "-d", str(project), "--json-output"], capture_output=True,
                         text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    import json
    sections = dict(json.loads(res.stdout))
    for name in ENVS:
        opts = dict(sections[f"env:{name}"])
        assert opts["platform"] and opts["board"]


def _pty_board(line):
    """A pty whose 'board' side prints `line` every 0.3 s and swallows what the host sends."""
    import select
    master, slave = os.openpty()
    stop = threading.Event()

    def board():
        while not stop.is_set():
            if select.select([master], [], [], 0.0)[0]:
                try:
                    os.read(master, 4096)
                except OSError:
                    return
            os.write(master, b"noise\r\n" + line.encode() + b"\r\n")
            time.sleep(0.3)

    t = threading.Thread(target=board, daemon=True)
    t.start()

    def close():
        stop.set()
        t.join(2)
        os.close(master)
        os.close(slave)
    return os.ttyname(slave), close


def test_baremetal_project_emulated_env_runs_offline_and_bench_reads_it():
    """device/baremetal/platformio.ini: the emulated environment builds with Debian's toolchain
    through the local platform (no registry: tool-scons comes from PyPI's scons), runs under
    QEMU, and its NMB/1 line is what `neuromotor bench` reads from a port."""
    _pio()
    for tool in ("arm-none-eabi-gcc", "qemu-system-arm"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed")
    import json
    from neuromotor.boards.bench import bench_port
    from neuromotor.boards.baremetal import BAREMETAL_DIR, pio_run, run_baremetal
    out = pio_run("qemu-m4f", "exec")
    assert not (BAREMETAL_DIR / ".pio").exists()  # the build lives in the cache
    line = next(x for x in out.splitlines() if x.startswith("@nm - bench"))
    msg = decode_line(line)
    r = json.loads(msg.payload)
    assert r["board"] == "qemu-m4f" and r["clock_hz"] == 10**9 and set(r["backends"]) == {"native", "generic"}
    # the same program as the Makefile build: the same instruction count per inference
    ref = run_baremetal("qemu-m4f", sizes=(13, 64, 64, 4), repeat=200)
    assert abs(r["backends"]["native"] - ref["instructions_per_inference"]) <= 2
    # and the generic loops built the same way (the compiler's default contraction) in both
    assert abs(r["backends"]["generic"] - ref["generic"]["instructions"]) <= 2
    port, close = _pty_board(line)
    try:
        res = bench_port(port, n=10, timeout=2.0, log=lambda s: None)
    finally:
        close()
    assert set(res["backends"]) == {"native", "generic"}
    assert res["backends"]["native"]["mean_us"] == pytest.approx(r["backends"]["native"] / 1000)
    assert res["backends"]["generic"]["cycles"] == r["backends"]["generic"]


def test_baremetal_project_real_envs_parse():
    pio = _pio()
    from neuromotor.boards.baremetal import BAREMETAL_DIR, pio_env
    res = subprocess.run([pio, "project", "config", "-d", str(BAREMETAL_DIR), "--json-output"],
                         capture_output=True, text=True, timeout=120, env=pio_env())
    assert res.returncode == 0, res.stdout + res.stderr
    import json
    sections = dict(json.loads(res.stdout))
    for name in ENVS:
        opts = dict(sections[f"env:{name}"])
        assert opts["framework"] == ["arduino"] and "+<arduino_main.cpp>" in " ".join(opts["build_src_filter"])
    for name in ("qemu-m7", "qemu-m4f"):
        assert dict(sections[f"env:{name}"])["platform"] == "symlink://platform/qemu-arm"


def test_baremetal_project_pio_test_checks_the_program():
    """`pio test -e qemu-m7`: the custom runner (no Unity download) builds the program, runs it
    under QEMU and passes it only on a good NMB/1 line from a kernel that matches its reference."""
    pio = _pio()
    for tool in ("arm-none-eabi-gcc", "qemu-system-arm"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed")
    from neuromotor.boards.baremetal import BAREMETAL_DIR, pio_env
    res = subprocess.run([pio, "test", "-d", str(BAREMETAL_DIR), "-e", "qemu-m7"], capture_output=True,
                         text=True, timeout=300, env=pio_env(), stdin=subprocess.DEVNULL)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    assert "qemu-m7:test_program [PASSED]" in out and "@nm - bench" in out

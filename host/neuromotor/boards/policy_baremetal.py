"""A policy's float and int8 forward passes as bare-metal programs on emulated cores
without an FPU, checked against the host's NumPy reference.

Three cores: two that no emulator here runs MicroPython on for a board of ours, and the
ESP32's, whose bare-metal figures are the limit MicroPython's call is measured against on
qemu-xtensa (benchmarks/board_inference.py):

- ``armv6m``: a Cortex-M0 (no FPU, no DSP extension) on QEMU's ``microbit`` machine,
  instructions counted exactly by the cycle-model plugin's marks (neuromotor.boards.cycles);
- ``xtensa``: the ESP8266's Xtensa LX106 on QEMU's ``sim`` machine, instructions from
  its CCOUNT register under ``-icount shift=0`` (the plugin models ARM and RISC-V only),
  calibrated in the same run on a straight line of instructions;
- ``xtensawin``: the ESP32's ABI (windowed registers, single-precision FPU) on the same
  machine with QEMU's ``de233_fpu`` core, compiled as the xtensawin natmods (clang-22),
  counted as ``xtensa``.

device/baremetal/xtensa/nm_policy_run.c is the program (ports in device/baremetal/xtensa
and device/baremetal/armv6m). It runs the policy as the two C headers `neuromotor export
--format c-header` writes, float and int8 (`--quantize int8`), on given observations.

    from neuromotor.boards.policy_baremetal import run_policy
    r = run_policy("xtensa", spec, qpolicy, obs)
    r["float"], r["int8"]               # actions, float32 (n_obs, act_dim)
    r["instructions_per_mac"]           # {"float": ..., "int8": ...}: nm_mlp and nm_q8_mlp
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from neuromotor.errors import UserError
from neuromotor.policy.c_header import render_c_header
from neuromotor.paths import SOURCE_ROOT, cache_dir, require_checkout
from neuromotor.safe_write import atomic_write

from . import cycles


@dataclass(frozen=True)
class Target:
    folder: str            # under device/baremetal
    system: str            # QEMU binary
    machine_args: tuple    # what selects the machine and core
    plugin_core: str       # cycle-model core whose decoder reads this ISA ("" = count with the clock)
    insns_per_tick: int    # without the plugin: instructions per tick of the program's clock
    what: str


TARGETS = {
    "armv6m": Target("armv6m", "qemu-system-arm", ("-machine", "microbit"), "cortex-m4", 0,
                     "Cortex-M0 (QEMU microbit), instructions from the cycle-model plugin's marks"),
    # CCOUNT counts the sim core's 40 MHz clock; -icount shift=0 makes an instruction 1 ns.
    "xtensa": Target("xtensa", "qemu-system-xtensa", ("-machine", "sim", "-cpu", "lx106"), "", 25,
                     "Xtensa LX106 (QEMU sim), instructions from CCOUNT under -icount shift=0"),
    # The ESP32's windowed ABI and FPU on QEMU's de233_fpu core (an LX7); same clock.
    "xtensawin": Target("xtensawin", "qemu-system-xtensa", ("-machine", "sim", "-cpu", "de233_fpu"), "", 25,
                        "Xtensa de233_fpu (QEMU sim), instructions from CCOUNT under -icount shift=0"),
}


def td3_shaped_case(sizes=(13, 64, 64, 4), seed: int = 0, n_obs: int = 8) -> tuple:
    """(spec, int8 policy, observations): a TD3-actor-shaped policy of random weights (ReLU,
    ReLU, tanh; actions in [-2, 2]), its int8 version calibrated on 256 observations, and n_obs
    held-out observations: the case the bare-metal builds are checked and benchmarked on."""
    from neuromotor.policy.quantize import quantize
    from neuromotor.policy.spec import PolicySpec

    rng = np.random.default_rng(seed)
    weights = [(rng.standard_normal((b, a)) / np.sqrt(a)).astype(np.float32) for a, b in zip(sizes, sizes[1:])]
    biases = [(0.1 * rng.standard_normal(b)).astype(np.float32) for b in sizes[1:]]
    obs_dim, act_dim = sizes[0], sizes[-1]
    spec = PolicySpec(weights=weights, biases=biases, activations=["relu", "relu", "tanh"],
                      obs_mean=(0.2 * rng.standard_normal(obs_dim)).astype(np.float32),
                      obs_std=rng.uniform(0.5, 2.0, obs_dim).astype(np.float32),
                      action_scale=np.full(act_dim, 2.0, np.float32), action_offset=np.zeros(act_dim, np.float32),
                      action_low=np.full(act_dim, -2.0, np.float32), action_high=np.full(act_dim, 2.0, np.float32))
    calib = spec.obs_mean + spec.obs_std * rng.standard_normal((256, obs_dim)).astype(np.float32)
    obs = spec.obs_mean + spec.obs_std * rng.standard_normal((n_obs, obs_dim)).astype(np.float32)
    return spec, quantize(spec, calib), obs.astype(np.float32)


def _target(arch: str) -> Target:
    if arch not in TARGETS:
        raise UserError(f"bare-metal policy runs exist for {', '.join(TARGETS)}, not {arch!r}")
    return TARGETS[arch]


def _floats(values) -> str:
    return ", ".join(f"{float(v):.9g}f" for v in np.asarray(values, np.float32).ravel())


def render_case(spec, qpolicy, obs) -> dict:
    """The case folder's files: the policy's two exported C headers and the observations."""
    from neuromotor.policy.c_header_int8 import render_c_header_int8  # int8 export

    obs = np.asarray(obs, np.float32)
    if obs.ndim != 2 or obs.shape[1] != spec.obs_dim or len(obs) == 0:
        raise UserError(f"observations must be an (n, {spec.obs_dim}) array")
    if not spec.has_limits:
        raise UserError("the bare-metal policy run needs a policy with action limits")
    if list(qpolicy.sizes) != list(spec.sizes) or list(qpolicy.activations) != list(spec.activations):
        raise UserError("the int8 policy's shape differs from the float policy's")
    rows = ",\n    ".join("{ " + _floats(o) + " }" for o in obs)
    return {
        "nm_policy_float.h": render_c_header(spec, obs[0], guard="NM_POLICY_FLOAT_H"),
        "nm_policy_int8.h": render_c_header_int8(qpolicy, obs[0], guard="NM_POLICY_INT8_H"),
        "nm_case_obs.h": f"""/* Observations for the bare-metal policy run. */
#ifndef NM_CASE_OBS_H
#define NM_CASE_OBS_H
#define NM_CASE_N_OBS {len(obs)}
#define NM_CASE_OBS_DIM {spec.obs_dim}
#define NM_CASE_ACT_DIM {spec.act_dim}
static const float nm_case_obs[NM_CASE_N_OBS][NM_CASE_OBS_DIM] = {{
    {rows}
}};
#endif
""",
    }


def build(arch: str, case: dict, repeat: int = 4, make_vars: dict | None = None) -> Path:
    """Write the case into its own cache folder (named by its contents), build with the
    port Makefile's variables make_vars (e.g. {"XT_ASM": 0}); return the ELF."""
    require_checkout("the bare-metal policy program")
    t = _target(arch)
    digest = hashlib.sha256(str(int(repeat)).encode())
    for name in sorted(case):
        digest.update(f"\0{name}\0{case[name]}".encode())
    case_dir = cache_dir() / "baremetal" / f"policy-{arch}" / digest.hexdigest()[:12]
    case_dir.mkdir(parents=True, exist_ok=True)
    for name, text in case.items():
        path = case_dir / name
        if not path.is_file() or path.read_text() != text:
            atomic_write(path, text)
    res = subprocess.run(["make", "-s", "-C", str(SOURCE_ROOT / "device" / "baremetal" / t.folder),
                          f"CASE={case_dir}", f"REPEAT={int(repeat)}", f"NEUROMOTOR_CACHE={cache_dir()}",
                          *(f"{k}={v}" for k, v in (make_vars or {}).items())],
                         capture_output=True, text=True)
    if res.returncode != 0:
        raise UserError(f"building the {arch} bare-metal policy program failed:\n{(res.stdout + res.stderr)[-3000:]}")
    return Path(res.stdout.strip().splitlines()[-1])


def _bits(rows) -> np.ndarray:
    return np.array([[int(h, 16) for h in row] for row in rows], dtype=np.uint32).view(np.float32)


def _run(t: Target, elf: Path, timeout: float) -> tuple[dict, list]:
    """Run the program; return its JSON object and the instruction count at each mark."""
    if t.plugin_core:
        counters, output = cycles.run_marked(elf, t.machine_args[-1], t.plugin_core, system=t.system,
                                             timeout=timeout)
        marks = [m["insns"] for m in counters["marks"]]
    else:
        cmd = [t.system, *t.machine_args, "-nographic", "-monitor", "none", "-semihosting",
               "-icount", "shift=0", "-kernel", str(elf)]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise UserError(f"{elf} did not finish within {timeout:.0f} s") from None
        output = res.stdout + res.stderr
        if res.returncode != 0:
            raise UserError(f"{elf} failed (exit {res.returncode}): {output[-500:]}")
        marks = None
    m = re.search(r"\{.*\}", output)
    if m is None:
        raise UserError(f"the bare-metal policy program printed no result: {output[-500:]}")
    r = json.loads(m.group(0))
    if "error" in r:
        raise UserError(f"the bare-metal policy program reported: {r['error']}")
    if marks is None:
        # The straight line of calib_insns instructions must take what the clock's rate
        # says, to a tick at each end (a different core clock or icount would not).
        if abs(r["calib_ticks"] * t.insns_per_tick - r["calib_insns"]) > 2 * t.insns_per_tick:
            raise UserError(f"{r['calib_insns']} instructions took {r['calib_ticks']} ticks, not "
                            f"{r['calib_insns'] / t.insns_per_tick:.0f}: the clock is not what the count assumes")
        r["instructions_per_tick"] = r["calib_insns"] / r["calib_ticks"]
        marks = [v * t.insns_per_tick for v in r["ticks"]]
    if len(marks) != 4:
        raise UserError(f"the bare-metal policy program passed {len(marks)} marks, expected 4")
    return r, marks


def run_policy(arch: str, spec, qpolicy, obs, repeat: int = 4, timeout: float = 120,
               make_vars: dict | None = None) -> dict:
    """Build and run the float and int8 forward passes of one policy on `arch`.

    Returns the actions the core computed for each observation ("float": nm_mlp then
    nm_clamp through nm_policy_forward, "int8": nm_q8_mlp then nm_clamp), float32, and
    the instructions per inference and per multiply-add of nm_mlp and nm_q8_mlp alone
    (each averaged over `repeat` calls, the timing loop's own cost taken out).
    make_vars go to the port's Makefile (xtensawin: {"XT_ASM": 0} builds the C path).
    """
    t = _target(arch)
    elf = build(arch, render_case(spec, qpolicy, obs), repeat, make_vars)
    r, marks = _run(t, elf, timeout)
    loop = marks[1] - marks[0]
    per_inference = {"float": (marks[2] - marks[1] - loop) / r["repeat"],
                     "int8": (marks[3] - marks[2] - loop) / r["repeat"]}
    return {
        "arch": arch,
        "float": _bits(r["float"]),
        "int8": _bits(r["int8"]),
        "macs": r["macs"],
        "repeat": r["repeat"],
        "instructions_per_inference": per_inference,
        "instructions_per_mac": {k: v / r["macs"] for k, v in per_inference.items()},
        "instructions_per_tick": r.get("instructions_per_tick"),
        "elf": str(elf),
        "clock": t.what,
    }

"""Policy inference on the unix MicroPython build, per backend, next to CPython+NumPy.

    .venv/bin/python benchmarks/device_inference.py [--json] [--repeat 5] [--no-valgrind]

Networks: 13->64->64->4 (the RLtools paper's) and 3->64->64->1, ReLU hidden
layers, tanh output, with observation normalisation and the action affine.
Backends: `native` (the built-in user C module), `native-natmod` (the x64
.mpy), `python`, and `ulab` when NEUROMOTOR_MICROPYTHON_ULAB names a
ulab-enabled binary. Each is timed through the user API (`policy(obs)`) and,
for native ones, also as the bare kernel call (`nm_kernels.mlp(...)`).
Times are the best of --repeat runs of N inferences, with `time.ticks_us`.
With valgrind, instructions per multiply-add come from callgrind as the
difference between runs of 2N and N inferences (startup cancels).

Writes benchmarks/results/device_inference.json; with --json the last line
printed is that JSON object.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchutil import RESULTS, macs, write_json
from neuromotor.policy import write_policy
from neuromotor.paths import cache_dir
from neuromotor.policy.spec import PolicySpec

NETS = {"13-64-64-4": [13, 64, 64, 4], "3-64-64-1": [3, 64, 64, 1]}

# What both scripts open with: the policy `p` on its backend and an observation `obs`.
LOAD = """
import sys, time
from array import array
sys.path.append({natmod_dir!r})
import neuromotor_rt as rt
kernels = None
if {backend!r} == 'native-natmod':
    import nm_kernels_natmod as kernels
p = rt.Policy.load({policy!r}, backend={api_backend!r}, kernels=kernels)
obs = array('f', [0.1 * i - 0.5 for i in range(p.obs_dim)])
"""

TIMING = LOAD + """def api(n):
    i = 0
    while i < n:
        p(obs)
        i += 1
def kernel(n, mlp, out, x, net, lay, sc):
    i = 0
    while i < n:
        mlp(out, x, net, lay, sc)
        i += 1
def best(f, *a):
    t_best = None
    for r in range({repeat}):
        t0 = time.ticks_us()
        f({n}, *a)
        t = time.ticks_diff(time.ticks_us(), t0)
        t_best = t if t_best is None or t < t_best else t_best
    return t_best / {n}
print('api', best(api))
if p.backend == 'native':
    print('kernel', best(kernel, p.mlp, p.out, obs, p.net, p.layout, p.scratch))
    print('isa', p.kernels.isa())
"""

COUNT = LOAD + """n = int(sys.argv[1]) if len(sys.argv) > 1 else {n}
i = 0
if {mode!r} == 'api':
    def run(n):
        i = 0
        while i < n:
            p(obs)
            i += 1
    run(n)
else:
    def run(n, mlp, out, x, net, lay, sc):
        i = 0
        while i < n:
            mlp(out, x, net, lay, sc)
            i += 1
    run(n, p.mlp, p.out, obs, p.net, p.layout, p.scratch)
"""


def random_spec(sizes, seed=0):
    rng = np.random.default_rng(seed)
    weights = [(rng.standard_normal((b, a)) / np.sqrt(a)).astype(np.float32) for a, b in zip(sizes[:-1], sizes[1:])]
    biases = [(0.1 * rng.standard_normal(b)).astype(np.float32) for b in sizes[1:]]
    acts = ["relu"] * (len(sizes) - 2) + ["tanh"]
    return PolicySpec(weights, biases, acts, rng.standard_normal(sizes[0]).astype(np.float32),
                      (0.5 + rng.random(sizes[0])).astype(np.float32),
                      np.ones(sizes[-1], np.float32), np.zeros(sizes[-1], np.float32))


def numpy_us(spec, repeat):
    """CPython+NumPy, one observation: the same computation written plainly."""
    ws, bs = spec.weights, spec.biases
    mean, std, scale, offset = spec.obs_mean, spec.obs_std, spec.action_scale, spec.action_offset
    obs = np.linspace(-0.5, 0.5, spec.obs_dim).astype(np.float32)

    def forward(o):
        x = (o - mean) / std
        x = np.maximum(ws[0] @ x + bs[0], 0)
        x = np.maximum(ws[1] @ x + bs[1], 0)
        x = np.tanh(ws[2] @ x + bs[2])
        return x * scale + offset

    assert np.allclose(forward(obs), spec.forward(obs[None])[0], rtol=1e-5, atol=1e-6)
    n, best = 20000, float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            forward(obs)
        best = min(best, (time.perf_counter() - t0) / n)
    return best * 1e6


def run_mp(binary, script, args=(), timeout=600):
    # A private directory: sys.path[0] is the script's folder, and a stray
    # neuromotor_rt.py/.mpy there would shadow the frozen runtime.
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.py"
        path.write_text(script)
        proc = subprocess.run([str(binary), str(path), *args], capture_output=True, text=True, timeout=timeout)
    if proc.returncode:
        raise RuntimeError(f"micropython failed:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def callgrind_instructions(binary, script, n):
    """Instructions for n inferences: callgrind totals of runs of 2n and n."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "count.py"
        path.write_text(script)
        totals = []
        for k in (n, 2 * n):
            out = Path(tmp) / f"cg.{k}"
            subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", str(binary), str(path), str(k)],
                           capture_output=True, text=True, check=True, timeout=900)
            summary = [line for line in out.read_text().splitlines() if line.startswith(("summary:", "totals:"))]
            totals.append(int(summary[0].split()[1]))
    return (totals[1] - totals[0]) / n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print the results JSON as the last line")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-valgrind", action="store_true")
    ap.add_argument("--out", default=str(RESULTS / "device_inference.json"))
    args = ap.parse_args(argv)

    binary = Path(os.environ.get("NEUROMOTOR_MICROPYTHON", cache_dir() / "bin" / "micropython"))
    if not binary.exists():
        sys.exit(f"device_inference: {binary} missing; run `make firmware BOARD=unix`")
    natmod_dir = cache_dir() / "natmods" / "x64"
    backends = [("native", binary), ("python", binary)]
    if (natmod_dir / "nm_kernels_natmod.mpy").exists():
        backends.insert(1, ("native-natmod", binary))
    else:
        print(f"(no x64 natmod in {natmod_dir}: run `make natmods`)", file=sys.stderr)
    if os.environ.get("NEUROMOTOR_MICROPYTHON_ULAB"):
        backends.insert(-1, ("ulab", Path(os.environ["NEUROMOTOR_MICROPYTHON_ULAB"])))
    valgrind = not args.no_valgrind and shutil.which("valgrind")

    results = {"machine": os.uname().machine, "micropython": str(binary.resolve()), "repeat": args.repeat,
               "valgrind": bool(valgrind), "networks": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for net, sizes in NETS.items():
            spec = random_spec(sizes)
            policy = Path(tmp) / f"{net}.nmp"
            write_policy(spec, policy)
            np_us = numpy_us(spec, args.repeat)
            entry = {"macs": macs(sizes), "numpy_us": np_us, "backends": {}}
            for backend, mp in backends:
                api_backend = "native" if backend.startswith("native") else backend
                n = 20000 if api_backend == "native" else (200 if backend == "ulab" else 50)
                fmt = dict(natmod_dir=str(natmod_dir), backend=backend, api_backend=api_backend,
                           policy=str(policy), repeat=args.repeat, n=n)
                out = dict(line.split(" ", 1) for line in run_mp(mp, TIMING.format(**fmt)).splitlines())
                r = {"us_per_inference": float(out["api"]), "numpy_us": np_us}
                r["ratio_to_numpy"] = r["us_per_inference"] / np_us
                if "kernel" in out:
                    r["kernel_call_us"] = float(out["kernel"])
                    r["isa"] = out["isa"].strip()
                if valgrind:
                    cn = 500 if api_backend == "native" else 3
                    r["instructions_per_mac"] = callgrind_instructions(
                        mp, COUNT.format(mode="api", **fmt), cn) / entry["macs"]
                    if api_backend == "native":
                        r["kernel_call_instructions_per_mac"] = callgrind_instructions(
                            mp, COUNT.format(mode="kernel", **fmt), cn) / entry["macs"]
                entry["backends"][backend] = r
            results["networks"][net] = entry

    print(f"{'network':12} {'backend':14} {'us/inference':>12} {'x numpy':>8} {'kernel us':>10} "
          f"{'instr/MAC':>10} {'kernel instr/MAC':>17}")
    for net, entry in results["networks"].items():
        print(f"{net:12} {'cpython+numpy':14} {entry['numpy_us']:12.3f} {1.0:8.2f}")
        for backend, r in entry["backends"].items():
            k_us = f"{r['kernel_call_us']:10.3f}" if "kernel_call_us" in r else f"{'':10}"
            ipm = f"{r['instructions_per_mac']:10.3f}" if "instructions_per_mac" in r else f"{'':10}"
            kipm = f"{r['kernel_call_instructions_per_mac']:17.3f}" if "kernel_call_instructions_per_mac" in r else ""
            print(f"{net:12} {backend:14} {r['us_per_inference']:12.3f} {r['ratio_to_numpy']:8.2f} {k_us} {ipm} {kipm}")
    print("us: best of %d runs, wall clock on a shared machine; instr/MAC: callgrind, "
          "call overhead included (API = policy(obs); kernel = nm_kernels.mlp)" % args.repeat)
    print(f"wrote {write_json(args.out, results)}")
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()

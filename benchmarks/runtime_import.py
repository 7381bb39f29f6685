"""What the device runtime costs a board before its first action: `import neuromotor_rt`,
then Policy.load and the first calls, on the emulated boards.

For each board: start it (QEMU -icount shift=0), compile device/lib with mpy-cross for
its arch into a folder of its own on the board (with --baseline REF, also device/lib as
it was at that git revision, into another folder: both measured in the same run), put a
float32 and an int8 13->64->64->4 policy there, and run one script per (library,
policy, backend) after a soft reset, so every import starts from a fresh interpreter.

Each row: the time to import the runtime and to load the policy, the first call and the
mean of the following calls, in instruction-count µs (ticks_us under -icount shift=0:
1 guest instruction = 1 ns; an instruction count, not a time on a real core); the heap
the import and the load keep (gc.mem_alloc() after gc.collect(), before and after) and
the most the heap held while each ran above its start (the firmware's nm_heap counter,
device/port/patches/gc-peak-tracking.patch).

    .venv/bin/python benchmarks/runtime_import.py [--boards qemu-m4f,qemu-rv32] [--baseline REF] [--json]

Writes benchmarks/results/runtime_import.json; with --json the last line is that document.
"""

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from benchutil import RESULTS, write_json

REPO = Path(__file__).resolve().parents[1]
SIZES = (13, 64, 64, 4)
ACTS = ("relu", "relu", "tanh")
CASES = (("float32", "native", 100), ("float32", "python", 5), ("int8", "native", 100), ("int8", "python", 3))

SCRIPT = r"""
import gc, sys, time
from array import array
sys.path.insert(0, {libdir!r})
try:
    import nm_heap
except ImportError:
    nm_heap = None
obs = array('f', [0.1 * i - 0.5 for i in range({obs_dim})])
def used():
    gc.collect()
    return gc.mem_alloc()
def start_peak():
    return nm_heap.reset_peak() if nm_heap else 0
def peak(base):
    return nm_heap.peak() - base if nm_heap else -1
u0 = used()
b = start_peak()
t0 = time.ticks_us()
import neuromotor_rt
t1 = time.ticks_us()
pk_import = peak(b)
u1 = used()
b = start_peak()
t2 = time.ticks_us()
p = neuromotor_rt.Policy.load({policy!r}, backend={backend!r})
t3 = time.ticks_us()
a = p(obs)
t4 = time.ticks_us()
for i in range({n}):
    a = p(obs)
t5 = time.ticks_us()
pk_load = peak(b)
u2 = used()
print('RESULT', repr({{'backend': p.backend, 'dtype': p.dtype, 'import_us': time.ticks_diff(t1, t0),
    'load_us': time.ticks_diff(t3, t2), 'first_call_us': time.ticks_diff(t4, t3),
    'call_us': time.ticks_diff(t5, t4) / {n}, 'import_heap': u1 - u0, 'import_peak': pk_import,
    'load_heap': u2 - u1, 'load_peak': pk_load, 'action': [float(v) for v in a]}}))
"""


def make_policies(folder):
    from neuromotor.policy import quantize, write_policy
    from neuromotor.policy.spec import PolicySpec
    rng = np.random.default_rng(0)
    n = len(SIZES) - 1
    spec = PolicySpec([rng.normal(0, 1 / np.sqrt(SIZES[i]), (SIZES[i + 1], SIZES[i])) for i in range(n)],
                      [rng.normal(0, 0.1, SIZES[i + 1]) for i in range(n)], list(ACTS),
                      np.zeros(SIZES[0]), np.ones(SIZES[0]), np.ones(SIZES[-1]), np.zeros(SIZES[-1]),
                      action_low=-np.ones(SIZES[-1], np.float32), action_high=np.ones(SIZES[-1], np.float32))
    paths = {"float32": folder / "f32.nmp", "int8": folder / "q8.nmp"}
    write_policy(spec, paths["float32"])
    calib = np.random.default_rng(1).normal(0, 1, (1000, SIZES[0])).astype(np.float32)
    write_policy(quantize(spec, calib), paths["int8"])
    return paths


def library_at(ref, folder):
    """device/lib's .py files at git revision ref, written into folder."""
    folder.mkdir(parents=True)
    names = subprocess.run(["git", "-C", str(REPO), "ls-tree", "--name-only", ref, "device/lib/"],
                           capture_output=True, text=True, check=True).stdout.split()
    for name in names:
        if name.endswith(".py"):
            data = subprocess.run(["git", "-C", str(REPO), "show", f"{ref}:{name}"], capture_output=True,
                                  check=True).stdout
            (folder / Path(name).name).write_bytes(data)
    return folder


def upload(port, libraries, policies, workdir, log):
    """Each library compiled for the board into /nmv_<label>; the policies into /."""
    from neuromotor.boards.deploy.core import Deployer, compile_lib
    d = Deployer(port, log=log)
    try:
        arch = d.probe()["arch"]
        for label, folder in libraries.items():
            d.exec(f"import os\ntry:\n    os.mkdir('/nmv_{label}')\nexcept OSError:\n    pass", "mkdir")
            out = workdir / label
            out.mkdir(exist_ok=True)
            for src in sorted(folder.glob("*.py")):
                d.write(f"/nmv_{label}/{src.stem}.mpy", compile_lib(src, arch, out))
        for dtype, path in policies.items():
            d.write(f"/{path.name}", path.read_bytes())
    finally:
        d.close()


def run_case(port, label, policy, backend, n, workdir):
    script = workdir / "case.py"
    script.write_text(SCRIPT.format(libdir=f"/nmv_{label}", obs_dim=SIZES[0], policy=f"/{policy.name}",
                                    backend=backend, n=n))
    mpremote = str(Path(sys.executable).with_name("mpremote"))
    res = subprocess.run([mpremote, "connect", port, "run", str(script)], capture_output=True, text=True,
                         timeout=600)
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")]
    if not lines:
        raise SystemExit(f"{label} {policy.name} {backend}: no result\n{res.stdout[-2000:]}{res.stderr[-2000:]}")
    return ast.literal_eval(lines[-1][len("RESULT "):])


def bench_board(name, libraries, policies, workdir, log):
    from neuromotor import boards
    instance = f"{name}-rtimport-{os.getpid()}"
    rows = []
    b = boards.start(name, instance=instance, build=True, die_with_parent=True)
    try:
        log(f"{name}: running on {b.port} (QEMU pid {b.pid}); uploading")
        upload(b.port, libraries, policies, workdir, log=lambda s: None)
        for dtype, backend, n in CASES:
            for label in libraries:
                r = run_case(b.port, label, policies[dtype], backend, n, workdir)
                r.update(board=name, library=label, policy=dtype, calls=n)
                rows.append(r)
                log(f"{name} {label:8s} {dtype:7s} {backend:6s} import {r['import_us']} us, "
                    f"load {r['load_us']} us")
    finally:
        boards.stop(instance)
    return rows


def table(rows):
    head = (f"{'board':9s} {'library':8s} {'policy':7s} {'backend':7s} {'import µs':>10s} {'load µs':>9s} "
            f"{'1st call':>9s} {'call µs':>9s} {'imp heap':>9s} {'imp peak':>9s} {'load heap':>9s} "
            f"{'load peak':>9s}")
    out = [head, "-" * len(head)]
    for r in rows:
        out.append(f"{r['board']:9s} {r['library']:8s} {r['policy']:7s} {r['backend']:7s} {r['import_us']:10d} "
                   f"{r['load_us']:9d} {r['first_call_us']:9d} {r['call_us']:9.0f} {r['import_heap']:9d} "
                   f"{r['import_peak']:9d} {r['load_heap']:9d} {r['load_peak']:9d}")
    return "\n".join(out)


def ratios(rows, baseline):
    """Per board and case: this library's figures over the baseline's (import+load time, heap, peak)."""
    out = []
    keys = {(r["board"], r["policy"], r["backend"]) for r in rows}
    for key in sorted(keys):
        cur = next(r for r in rows if (r["board"], r["policy"], r["backend"]) == key and r["library"] == "current")
        old = next(r for r in rows if (r["board"], r["policy"], r["backend"]) == key and r["library"] == baseline)

        def ratio(f):
            return round(f(cur) / f(old), 4) if f(old) else None
        out.append({"board": key[0], "policy": key[1], "backend": key[2],
                    "import_us": ratio(lambda r: r["import_us"]),
                    "import_load_first_call_us": ratio(lambda r: r["import_us"] + r["load_us"] + r["first_call_us"]),
                    "call_us": ratio(lambda r: r["call_us"]),
                    "import_heap": ratio(lambda r: r["import_heap"]),
                    "import_load_heap": ratio(lambda r: r["import_heap"] + r["load_heap"]),
                    "peak": ratio(lambda r: max(r["import_peak"], r["import_heap"] + r["load_peak"])),
                    "same_action": cur["action"] == old["action"]})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boards", default="qemu-m4f,qemu-rv32")
    ap.add_argument("--baseline", help="git revision whose device/lib is measured beside the current one")
    ap.add_argument("--json", action="store_true", help="print the JSON document as the last line")
    args = ap.parse_args(argv)
    log = (lambda s: print(s, file=sys.stderr)) if args.json else print
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        libraries = {"current": REPO / "device" / "lib"}
        if args.baseline:
            libraries["baseline"] = library_at(args.baseline, tmp / "baseline_src")
        policies = make_policies(tmp)
        rows = []
        for name in args.boards.split(","):
            rows += bench_board(name, libraries, policies, tmp, log)
    doc = {"what": "import neuromotor_rt, Policy.load and calls on emulated boards; times are "
                   "instruction-count µs (QEMU -icount shift=0), heap in bytes",
           "sizes": list(SIZES), "activations": list(ACTS), "baseline": args.baseline, "rows": rows}
    if args.baseline:
        doc["ratios"] = ratios(rows, "baseline")
    log(table(rows))
    if args.baseline:
        log("\ncurrent / baseline (" + args.baseline + ")")
        for r in doc["ratios"]:
            log(f"  {r['board']:9s} {r['policy']:7s} {r['backend']:7s} import {r['import_us']}, "
                f"import+load+1st call {r['import_load_first_call_us']}, call {r['call_us']}, "
                f"heap kept {r['import_load_heap']}, peak {r['peak']}, same action {r['same_action']}")
    path = write_json(RESULTS / "runtime_import.json", doc)
    log(f"wrote {path}")
    if args.json:
        print(json.dumps(doc))


if __name__ == "__main__":
    main()

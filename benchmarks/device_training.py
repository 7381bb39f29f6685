"""TD3 training on the device: pendulum swing-up learned under MicroPython.

  1. unix port: 10k-step training per profile and seed (wall time, final return:
     mean deterministic return over 10 episodes of the trained actor on the host's
     Pendulum-v1, plus the board-side float32 evaluation);
  2. qemu-m7 with -icount shift=0: instructions per training step (one env step +
     one TD3 update; actor every 2nd step, so averaged over an even number of steps),
     the step's multiply-add count, and the PREDICTED time for 10k steps on a 600 MHz
     Teensy 4.1 at one instruction per cycle (instruction count, not measured time);
  3. heap high-water mark per profile on qemu-m7: the GC's counted peak
     (firmware built with MICROPY_GC_PEAK_TRACKING, read through nm_link.HeapWatch
     with a collection every few KiB) above the heap in use before the trainer was
     made, in a separate untimed pass;
  4. browser board (teensy41 profile): the page of `neuromotor serve-web` in headless
     Chromium trains per seed in its Web Worker (MicroPython in WebAssembly); wall time
     of the training as the page measures it and from navigation to the trained
     policy, the downloaded policy's return on the host's Pendulum-v1. Seeds run one
     after another, after the unix runs.

    .venv/bin/python benchmarks/device_training.py [--seeds 0,1,2] [--steps 10000] [--no-browser] [--json]

With --json the last line is one JSON object: per profile instructions_per_step,
predicted_teensy41_s, heap_peak_bytes, returns (and more).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from benchutil import RESULTS, macs, write_json
from neuromotor.envs.pendulum import PendulumVec
from neuromotor.policy.policy_file import decode
from neuromotor.boards.ondevice.rundir import PROFILES
from neuromotor.paths import cache_dir

TEENSY_HZ = 600e6
LEARNING_STARTS = 100


def macs_per_step(profile):
    """Multiply-adds of one training step (critic update every step, actor every 2nd)."""
    p = PROFILES[profile]
    h, B = list(p["hidden"]), p["batch"]
    sa, sc = [3] + h + [1], [4] + h + [1]
    fa, fc = macs(sa), macs(sc)
    dx_c_hidden = macs(sc[1:])   # critic input grads, layers >= 1
    dx_a_hidden = macs(sa[1:])
    critic = fa + 2 * fc + 2 * fc + 2 * fc + 2 * dx_c_hidden     # target actor, target critics, fwd, dW, dX
    actor = fa + fc + fc + fa + dx_a_hidden                       # actor fwd, Q1 fwd, Q1 dX, actor dW + dX
    return (critic + actor / 2) * B + fa                          # + acting


def host_return(policy: bytes, episodes=10, seed=12345):
    spec = decode(policy)
    env = PendulumVec(episodes)
    obs = env.reset([np.random.default_rng(seed + k) for k in range(episodes)])
    total = np.zeros(episodes)
    for _ in range(env.max_episode_steps):
        obs, r, _ = env.step(spec.forward(obs))
        total += r
    return float(total.mean())


UNIX_SCRIPT = """
import nm_td3, time, sys
t = nm_td3.Trainer({profile!r}, seed={seed})
t0 = time.ticks_ms()
t.train({steps})
wall = time.ticks_diff(time.ticks_ms(), t0) / 1000
ret = t.evaluate(10)
t.save_policy({out!r})
print('RESULT', wall, ret, t.heap_live_peak() - t.heap_base, t.heap_setup)
"""


def unix_run(micropython, profile, seed, steps):
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "policy.nmp"
        t0 = time.perf_counter()
        proc = subprocess.run(["nice", "-n", "19", str(micropython), "-X", "heapsize=16M", "-c",
                               UNIX_SCRIPT.format(profile=profile, seed=seed, steps=steps, out=str(out))],
                              capture_output=True, text=True, timeout=3600)
        if proc.returncode:
            raise RuntimeError(f"unix run failed: {proc.stderr[-2000:]}")
        line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")][-1].split()
        return {"profile": profile, "seed": seed, "wall_s": float(line[1]), "device_return": float(line[2]),
                "host_return": host_return(out.read_bytes()), "process_s": round(time.perf_counter() - t0, 2)}


QEMU_SCRIPT = """
import nm_td3, nm_link, time, gc, json
t = nm_td3.Trainer({profile!r}, seed=0, kernels_=nm_td3.kernels('native'))
t.train({warm})
n = {n}
gc.collect()
t0 = time.ticks_us()
for i in range(n):
    t.step()
dt = time.ticks_diff(time.ticks_us(), t0)
home = t.K.HOME
t = None
# The high-water mark in a pass of its own: the watch makes the GC collect every
# few KiB, which would slow the timed steps above.
watch = nm_link.HeapWatch(nm_link.HEAP_GC_THRESHOLD)
t = nm_td3.Trainer({profile!r}, seed=0, kernels_=nm_td3.kernels('native'), heap_watch=watch)
t.train({warm} + n)
peak = watch.peak()
watch.close()
print('RESULT ' + json.dumps({{'us': dt, 'n': n, 'heap_peak': peak, 'heap_gc_threshold': watch.threshold,
    'heap_setup': t.heap_setup, 'heap_base': t.heap_base, 'mem_free_before': t.mem_free_before,
    'kernels': home}}))
"""


def qemu_measure(profiles, log):
    from neuromotor.boards.testing import BoardPool
    from neuromotor.boards.deploy.core import Deployer
    from neuromotor.boards.ondevice import upload_trainer
    pool = BoardPool(build=True)
    res = {}
    try:
        b = pool.get("qemu-m7")
        upload_trainer(b.port, log=log)
        for profile in profiles:
            d = Deployer(b.port, log=log, timeout=30)
            try:
                d.t.serial.timeout = 900
                out, err = d.t.exec_raw(QEMU_SCRIPT.format(profile=profile, warm=LEARNING_STARTS + 20, n=20),
                                        timeout=900)
                if err:
                    raise RuntimeError(f"qemu measurement {profile} failed: {err.decode()[-500:]}")
                out = out.decode()
            finally:
                d.close()
            r = json.loads(out.split("RESULT ", 1)[1])
            instr = r["us"] * 1000 / r["n"]   # -icount shift=0: 1 ns of guest time per instruction
            macs = macs_per_step(profile)
            res[profile] = {**r, "instructions_per_step": instr, "macs_per_step": macs,
                            "instructions_per_mac": instr / macs,
                            "predicted_teensy41_s": instr * (10000 - LEARNING_STARTS) / TEENSY_HZ}
    finally:
        pool.close()
    return res


def browser_runs(seeds, steps, log):
    """Per seed: the page's training wall time, the whole visit's, returns (browser board)."""
    from neuromotor.boards.web.chromium import Chromium
    from neuromotor.boards.web.serve import Background
    runs = []
    with Background() as srv:
        for seed in seeds:
            with tempfile.TemporaryDirectory() as d, Chromium(download_dir=d) as b:
                t0 = time.perf_counter()
                b.open(f"{srv.url}?seed={seed}&steps={steps}")
                b.wait_for("window.nmState && window.nmState.done", timeout=1800,
                           fail="window.nmState && window.nmState.error", poll=0.5)
                visit = time.perf_counter() - t0
                s = b.evaluate("window.nmState")
                b.evaluate("document.getElementById('download').click()")
                deadline = time.monotonic() + 30
                while not list(Path(d).glob("*.nmp")) and time.monotonic() < deadline:
                    time.sleep(0.1)
                policy = next(Path(d).glob("*.nmp")).read_bytes()
            runs.append({"profile": "teensy41", "seed": seed, "wall_s": s["trainMs"] / 1000, "visit_s": visit,
                         "first_motion_s": s["firstMotionMs"] / 1000, "device_return": s["evalReturn"],
                         "host_return": host_return(policy)})
            log(f"browser seed {seed}: {runs[-1]['wall_s']:.1f} s")
    return runs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--profiles", default="teensy41,small")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-qemu", action="store_true")
    ap.add_argument("--no-browser", action="store_true", help="skip the browser board (headless Chromium)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    profiles = args.profiles.split(",")
    seeds = [int(s) for s in args.seeds.split(",")]
    log = (lambda *a: print(*a, file=sys.stderr)) if args.json else print
    mp = Path(os.environ.get("NEUROMOTOR_MICROPYTHON") or cache_dir() / "bin" / "micropython")
    if not mp.exists():
        sys.exit(f"unix MicroPython missing at {mp}: run `make firmware BOARD=unix`")
    jobs = [(p, s) for p in profiles for s in seeds]
    with ThreadPoolExecutor(args.jobs) as ex:
        runs = list(ex.map(lambda ps: unix_run(mp, ps[0], ps[1], args.steps), jobs))
    web = [] if args.no_browser or "teensy41" not in profiles else browser_runs(seeds, args.steps, log)
    q = {} if args.no_qemu else qemu_measure(profiles, log)
    out = {}
    log(f"\nTD3 on the device, pendulum, {args.steps} steps; unix port (MicroPython {mp})")
    log(f"{'profile':9} {'seed':>4} {'wall s':>7} {'host return':>12} {'board return':>13}")
    for r in runs:
        log(f"{r['profile']:9} {r['seed']:>4} {r['wall_s']:>7.1f} {r['host_return']:>12.1f} {r['device_return']:>13.1f}")
    for p in profiles:
        rs = [r for r in runs if r["profile"] == p]
        out[p] = {"returns": [r["host_return"] for r in rs], "device_returns": [r["device_return"] for r in rs],
                  "unix_wall_s": [r["wall_s"] for r in rs], "seeds": seeds, "steps": args.steps}
        out[p]["solved_seeds"] = sum(r >= (-200 if p == "teensy41" else -400) for r in out[p]["returns"])
        if p in q:
            out[p].update({k: q[p][k] for k in ("instructions_per_step", "macs_per_step", "instructions_per_mac",
                                                "predicted_teensy41_s", "kernels")})
            out[p]["heap_peak_bytes"] = q[p]["heap_peak"]
            out[p]["heap_budget_bytes"] = PROFILES[p]["budget"]
    if web:
        out["teensy41"]["browser"] = {
            "wall_s": [r["wall_s"] for r in web], "visit_s": [r["visit_s"] for r in web],
            "first_motion_s": [r["first_motion_s"] for r in web], "returns": [r["host_return"] for r in web],
            "device_returns": [r["device_return"] for r in web],
            "solved_seeds": sum(r["host_return"] >= -200 for r in web)}
        log("\nbrowser board (headless Chromium, MicroPython in WebAssembly, Web Worker), teensy41 profile")
        log(f"{'seed':>4} {'wall s':>7} {'unix s':>7} {'visit s':>8} {'host return':>12} {'board return':>13}")
        unix = {r["seed"]: r["wall_s"] for r in runs if r["profile"] == "teensy41"}
        for r in web:
            log(f"{r['seed']:>4} {r['wall_s']:>7.1f} {unix.get(r['seed'], float('nan')):>7.1f} {r['visit_s']:>8.1f} "
                f"{r['host_return']:>12.1f} {r['device_return']:>13.1f}")
    if q:
        log("\nqemu-m7 (-icount shift=0): instruction counts; Teensy 4.1 time PREDICTED at 600 MHz, 1 instruction/cycle")
        log(f"{'profile':9} {'instr/step':>11} {'MAC/step':>10} {'instr/MAC':>9} {'pred. 10k s':>11} {'heap peak B':>12} {'budget B':>9}")
        for p in profiles:
            o = out[p]
            log(f"{p:9} {o['instructions_per_step']:>11.0f} {o['macs_per_step']:>10.0f} {o['instructions_per_mac']:>9.2f} "
                f"{o['predicted_teensy41_s']:>11.1f} {str(o['heap_peak_bytes']):>12} {o['heap_budget_bytes']:>9}")
    path = write_json(RESULTS / "device_training.json", {"summary": out, "unix_runs": runs, "qemu": q,
                                                         "browser_runs": web})
    log(f"wrote {path}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()

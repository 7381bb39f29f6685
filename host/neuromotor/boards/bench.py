"""Inference latency on boards over the serial line (NMB/1): table, JSON, PNG.

On an emulated board QEMU runs with `-icount shift=0`: one guest instruction
advances the guest clock by 1 ns, so a guest microsecond is 1000 instructions.
Figures from emulated boards are therefore instruction counts; microseconds at
a real clock are *predicted* as instructions / MHz (one instruction per cycle).

When the board was started with the cycle model (`neuromotor board start NAME --cycles`)
the plugin's counters are read around each backend's run: their cycles per instruction
turn the instruction count into modelled cycles, cycles per multiply-add and predicted µs
at the clock of each real board the emulated core stands for (docs/timing-model.md).

A board running the bare-metal program of `neuromotor export --format platformio`
has no REPL: it prints `@nm - bench {...}` lines on its own (cycle counts from its
cycle counter and its clock). When the raw REPL does not answer, bench listens for
such a line and reports it as the board's "c-header" backend.
"""

import json
import time
from pathlib import Path

from neuromotor.errors import UserError
from neuromotor.safe_write import atomic_open, atomic_write, check_dir_target, check_target
from neuromotor.boards.link import LinkClient
from neuromotor.boards.link.client import ProtocolError
from neuromotor.boards.link.ports import board_for_port

DEFAULT_PREDICT_MHZ = 600.0   # Teensy 4.1 class Cortex-M7, unless the board names its own
DEFAULT_POLICY = "/policy.nmp"


def board_label(port, info):
    b = board_for_port(port)
    return b.name if b is not None else f"{info.get('platform', '?')}@{port}"


def is_emulated(port, info):
    b = board_for_port(port)
    return b.kind == "emulated" if b is not None else info.get("platform") == "qemu"


def _qemu_descriptor(port):
    b = board_for_port(port)
    try:
        from neuromotor.boards import load_board
        return load_board(b.name).qemu if b is not None else {}
    except Exception:
        return {}


def emulated_clock(port):
    """(guest instructions per guest µs, ticks_cpu Hz) from the board descriptor; (1000, None) by default."""
    q = _qemu_descriptor(port)
    return float(q.get("instructions_per_us", 1000)), q.get("ticks_cpu_hz")


def board_predict_mhz(port):
    """The clock an emulated board's instruction counts are predicted at: its descriptor's
    [qemu] predict_mhz (qemu-xtensa: the ESP32's 240 MHz), else DEFAULT_PREDICT_MHZ."""
    return float(_qemu_descriptor(port).get("predict_mhz", DEFAULT_PREDICT_MHZ))


def cycle_counters(port):
    """(board name, counters path) of the emulated board on `port` when it runs the cycle model."""
    try:
        from neuromotor.boards import emulated
        for b in emulated.running():
            c = (b.extra or {}).get("cycles")
            if b.port == port and c:
                return b.name, c["counters"]
    except Exception:
        return None
    return None


def check_deploy_state(port, info):
    if info.get("interrupted_deploy"):
        dep = info.get("deploy") or {}
        prev = dep.get("policy_sha256")
        raise UserError(
            f"{port}: an earlier deploy to this board was interrupted (temporary files or "
            f"/nm_deploy.lock left on the board). The active policy was not touched"
            f"{' (sha256 ' + prev[:16] + '…)' if prev else ''}; run `neuromotor deploy` again to finish.")
    if not info.get("policy_present") and deployed_path(info) == DEFAULT_POLICY:
        raise UserError(f"{port}: no policy on the board ({DEFAULT_POLICY}); run `neuromotor deploy` first")


def deployed_path(info) -> str:
    """Where the last deploy put the policy (`deploy --dest`), from the board's deploy manifest."""
    manifest = info.get("deploy")
    path = manifest.get("policy") if isinstance(manifest, dict) else None
    return path if isinstance(path, str) and path.startswith("/") else DEFAULT_POLICY


def read_baremetal(port, timeout=5.0):
    """The first valid `@nm - bench` line the port prints within `timeout` s (parsed), or None."""
    import serial

    from neuromotor.boards.link.protocol import BadLine, decode_line
    deadline = time.monotonic() + timeout
    buf = b""
    try:
        with serial.Serial(port, 115200, timeout=0.1) as s:
            while time.monotonic() < deadline:
                buf += s.read(1024)
                while b"\n" in buf:
                    raw, buf = buf.split(b"\n", 1)
                    try:
                        msg = decode_line(raw)
                    except BadLine:
                        continue
                    if msg is not None and msg.seq == "-" and msg.word == "bench":
                        try:
                            r = json.loads(msg.payload)
                        except ValueError:
                            continue
                        if isinstance(r, dict) and {"cycles", "clock_hz", "n"} <= set(r):
                            return r
                buf = buf[-4096:]
    except (OSError, serial.SerialException):
        return None
    return None


def baremetal_result(port, r) -> dict:
    """A bare-metal bench line as bench_port's result: each backend's cycles and µs at the
    board's clock. `cycles` holds the statistics of the first backend; `backends` (the
    bare-metal timing program) maps more backends to their mean cycles per call."""
    keys = ("min", "median", "p99", "max", "mean")
    hz = r.get("clock_hz")
    cyc = r.get("cycles")
    good = (isinstance(hz, int) and hz > 0 and isinstance(cyc, dict)
            and all(isinstance(cyc.get(k), int) and cyc[k] >= 0 for k in keys))
    if "error" in r or not good:
        raise UserError(f"{port}: the bare-metal program reported {r.get('error', 'an unusable bench line')}")
    extra = r.get("backends") if isinstance(r.get("backends"), dict) else {}
    first = "native" if "native" in extra else r.get("impl", "c-header")
    stats = {first: cyc}
    for name, mean in extra.items():
        if name != first and isinstance(mean, int) and mean >= 0:
            stats[name] = {k: mean for k in keys}
    macs = r.get("macs")
    backends = {}
    for name, c in stats.items():
        us = {k: c[k] / hz * 1e6 for k in keys}
        backends[name] = {
            "median_us": us["median"], "p99_us": us["p99"], "min_us": us["min"], "max_us": us["max"],
            "mean_us": us["mean"], "n": r["n"], "macs": macs, "khz": 1000.0 / us["mean"] if us["mean"] > 0 else None,
            "timer_overhead_us": r.get("counter_overhead", 0) / hz * 1e6, "alloc_per_call": 0, "sizes": None,
            "heap_peak": None, "load_heap_peak": None, "cpu_ticks": c, "cycles": c["mean"],
            "cycles_per_mac": c["mean"] / macs if macs else None}
    return {"port": port, "board": r.get("board") or f"baremetal@{port}", "emulated": False, "baremetal": True,
            "platform": "baremetal", "version": None, "n": r["n"], "backends": backends,
            "unavailable": {}, "clock_hz": hz, "example_ok": r.get("example_ok")}


def bench_port(port, n=1000, backends=None, policy=None, predict_mhz=None,
               timeout=10.0, log=print) -> dict:
    """predict_mhz: the clock for predicted µs on an emulated board; None: the board's own."""
    try:
        client = LinkClient(port, timeout=timeout)
    except ProtocolError as exc:
        if "raw REPL" not in str(exc):
            raise
        r = read_baremetal(port)
        if r is None:
            raise
        log(f"  {port}: no REPL; read the bare-metal program's bench line")
        return baremetal_result(port, r)
    with client as c:
        info = c.info
        check_deploy_state(port, info)
        policy = policy or deployed_path(info)
        emulated = is_emulated(port, info)
        avail = c.backends(policy)
        chosen = backends or [b for b, s in avail.items() if s == "ok"]
        if not chosen:
            raise UserError(f"{port}: no backend can load {policy}: {avail}")
        out = {"port": port, "board": board_label(port, info), "emulated": emulated,
               "platform": info.get("platform"), "version": info.get("version"),
               "n": n, "backends": {}, "unavailable": {b: s for b, s in avail.items() if s != "ok"}}
        ipu, cpu_hz = emulated_clock(port) if emulated else (1000.0, None)
        model = cycle_counters(port) if emulated else None
        if emulated:
            predict_mhz = predict_mhz or board_predict_mhz(port)
            out["predict_mhz"] = predict_mhz
            out["instructions_per_us"] = ipu
            out["cycle_model"] = model is not None
        for b in chosen:
            if avail.get(b) != "ok":
                raise UserError(f"{port}: backend {b} is not available: {avail.get(b)}")
            meta = c.load(policy, b)
            # the python backend is ~100x slower: fewer samples keep the run short
            nb = max(20, n // 20) if b == "python" else n
            log(f"  {out['board']}: timing {nb} inferences on {b} ...")
            before = _read_model(model)
            r = c.bench(nb, timeout=max(300.0, timeout))
            out["backends"][b] = summarise(r, meta, emulated, predict_mhz, ipu, cpu_hz)
            if model is not None and nb >= 2:
                # A second, shorter run: the difference of the two cancels the serial
                # exchange and the server's statistics, leaving (nb - n0) inferences.
                mid = _read_model(model)
                n0 = max(1, nb // 4)
                c.bench(n0, timeout=max(300.0, timeout))
                add_cycles(out["backends"][b], model[0], before, mid, _read_model(model), nb - n0)
        out["link"] = dict(c.stats)
    return out


def summarise(r, meta, emulated, predict_mhz, instructions_per_us=1000.0, ticks_cpu_hz=None):
    us = r["us"]
    macs = meta.get("macs")
    mean = r.get("loop_mean_us") or us["median"]
    s = {"median_us": float(us["median"]), "p99_us": float(us["p99"]), "min_us": float(us["min"]),
         "max_us": float(us["max"]), "mean_us": float(mean), "n": r["n"], "macs": macs,
         "khz": (1000.0 / mean) if mean > 0 else None, "timer_overhead_us": r.get("timer_overhead_us"),
         "alloc_per_call": r.get("alloc_per_call"), "sizes": meta.get("sizes"),
         # counted high-water marks (None where the board's firmware does not count them)
         "heap_peak": r.get("heap_peak"), "load_heap_peak": meta.get("load_heap_peak"),
         "recurrent": bool(meta.get("recurrent"))}
    if "cpu_ticks" in r:
        s["cpu_ticks"] = r["cpu_ticks"]
    if emulated:
        instr = mean * instructions_per_us   # icount shift=0: 1 instruction = 1 ns guest time
        s["instructions"] = instr
        if ticks_cpu_hz and "cpu_ticks" in r:   # per-call median at ticks_cpu resolution
            per_tick = instructions_per_us * 1e6 / ticks_cpu_hz
            s["instructions_median_per_call"] = r["cpu_ticks"]["median"] * per_tick
        s["instructions_per_mac"] = instr / macs if macs else None
        s["predicted_us"] = instr / predict_mhz
        s["predicted_khz"] = 1000.0 / s["predicted_us"] if instr > 0 else None
    return s


def _read_model(model):
    if model is None:
        return None
    from neuromotor.boards.cycles import read_counters
    return read_counters(model[1])


def add_cycles(s, board_name, before, mid, after, n_diff):
    """Modelled cycles per inference. The plugin's counters around a bench of n inferences
    (before..mid) and one of n - n_diff (mid..after) differ by the work that grows with n:
    the server's timed loops of calls and the timer reads between them. Their cycles per
    instruction, times the guest-clock instruction count of one call, give its cycles."""
    from neuromotor.boards.cycles import predict

    def diff(key):
        return (mid[key] - before[key]) - (after[key] - mid[key])

    insns, cycles = diff("insns"), diff("cycles")
    if insns <= 0 or cycles <= 0 or not s.get("instructions"):
        return
    cpi = cycles / insns
    s["cycles_per_instruction"] = cpi
    s["cycles"] = s["instructions"] * cpi
    macs = s.get("macs")
    s["cycles_per_mac"] = s["cycles"] / macs if macs else None
    beats = max(0.0, diff("beats") / insns * s["instructions"])
    s["predicted_boards"] = predict(board_name, s["cycles"], beats, macs)


def table(results) -> str:
    lines = []
    for res in results:
        if res["emulated"]:
            lines.append(f"{res['board']} ({res['port']}): EMULATED, instruction-count time "
                         f"(QEMU -icount shift=0: 1 instruction = 1 ns guest time); "
                         f"'pred' = predicted for {res.get('predicted_for', 'a board')} at {res['predict_mhz']:.0f} MHz, "
                         "1 instruction per cycle")
            lines.append(f"  {'backend':8s} {'guest µs':>9s} {'p99':>8s} {'instr':>9s} {'instr/MAC':>9s} "
                         f"{'pred µs':>8s} {'pred kHz':>8s}")
            for b, s in res["backends"].items():
                ipm = s.get("instructions_per_mac")
                lines.append(f"  {b:8s} {s['mean_us']:9.1f} {s['p99_us']:8.0f} {s['instructions']:9.0f} "
                             f"{ipm if ipm is not None else float('nan'):9.2f} {s['predicted_us']:8.2f} "
                             f"{s['predicted_khz']:8.1f}")
            if res.get("cycle_model"):
                lines.append("  cycle model (device/timing, docs/timing-model.md): modelled cycles and "
                             "µs predicted at each real board's clock")
                lines.append(f"  {'backend':8s} {'cycles':>9s} {'cyc/MAC':>8s} {'cyc/instr':>9s}  predicted µs")
                for b, s in res["backends"].items():
                    if "cycles" not in s:
                        continue
                    cpm = s.get("cycles_per_mac")
                    preds = "  ".join(f"{n} {p['us']:.2f} ({p['clock_mhz']:.0f} MHz)"
                                      for n, p in s["predicted_boards"].items())
                    lines.append(f"  {b:8s} {s['cycles']:9.0f} {cpm if cpm is not None else float('nan'):8.2f} "
                                 f"{s['cycles_per_instruction']:9.2f}  {preds}")
        else:
            lines.append(f"{res['board']} ({res['port']}): " + (
                f"bare-metal program, measured in cycles at {res['clock_hz'] / 1e6:.0f} MHz (ticks = cycles)"
                if res.get("baremetal") else
                "measured with time.ticks_us (ticks = time.ticks_cpu, the port's cycle counter where it has one)"))
            lines.append(f"  {'backend':8s} {'median µs':>9s} {'p99 µs':>8s} {'mean µs':>8s} {'kHz':>8s} "
                         f"{'ticks med':>10s}")
            for b, s in res["backends"].items():
                ticks = s.get("cpu_ticks", {}).get("median")
                lines.append(f"  {b:8s} {s['median_us']:9.1f} {s['p99_us']:8.1f} {s['mean_us']:8.2f} "
                             f"{s['khz'] or 0:8.2f} {ticks if ticks is not None else '-':>10}")
        for b, why in res["unavailable"].items():
            lines.append(f"  {b:8s} unavailable: {why}")
        lines += control_loops(res)
    return "\n".join(lines)


CONTROL_RATES_HZ = (100, 400, 500)  # 400 Hz: the rate PX4 runs RAPTOR at


def _headroom(us: float) -> str:
    def fits(room):
        return f"fits, {room:.0f}x headroom" if room >= 10 else f"fits, {room:.1f}x headroom"
    # the fastest loop answers any other rate (a quadrotor's 400 Hz, say) at a glance
    fastest = f"{1e3 / us:.1f} kHz" if us < 1e3 else f"{1e6 / us:.0f} Hz"
    return "  ".join(f"{hz} Hz " + (fits(1e6 / hz / us) if us <= 1e6 / hz
                                    else f"too slow ({us / (1e6 / hz):.1f}x the period)")
                     for hz in CONTROL_RATES_HZ) + f"  (fastest loop {fastest})"


def control_loops(res) -> list:
    """Whether one inference per period fits a 100 Hz and a 500 Hz control loop, and the fastest
    loop it fits, per backend: from measured µs on a real board; on an emulated one from the
    cycle model's prediction for each real board it models (else the instruction-count
    prediction), labelled as predicted and by which of the two."""
    if not res["emulated"]:
        how = "measured"
    elif any(s.get("predicted_boards") for s in res["backends"].values()):
        how = "predicted by the cycle model at each real board's clock, not measured"
    else:
        how = f"predicted from instruction counts at {res['predict_mhz']:.0f} MHz, 1 instruction per cycle, not measured"
    # a recurrent policy's inference is one step: its GRU state update is in the time
    step = ("one step (GRU state update included)" if any(s.get("recurrent") for s in res["backends"].values())
            else "one inference")
    lines = [f"  control loop, {step} per period ({how}):"]
    for b, s in res["backends"].items():
        if not res["emulated"]:
            lines.append(f"  {b:8s} {_headroom(s['median_us'])}")
        elif s.get("predicted_boards"):
            lines += [f"  {b:8s} {n}: {_headroom(p['us'])}" for n, p in s["predicted_boards"].items()]
        else:
            lines.append(f"  {b:8s} at {res['predict_mhz']:.0f} MHz: {_headroom(s['predicted_us'])}")
    return lines


def plot(results, path: Path):
    from neuromotor.training.plotting import subplots
    backends = []
    for res in results:
        for b in res["backends"]:
            if b not in backends:
                backends.append(b)
    fig, ax = subplots(figsize=(max(6.0, 1.8 + 1.6 * len(backends) * max(1, len(results)) / 2), 4.5))
    width = 0.8 / max(1, len(results))
    for k, res in enumerate(results):
        xs, ys = [], []
        for i, b in enumerate(backends):
            s = res["backends"].get(b)
            if s:
                xs.append(i + k * width)
                ys.append(s["predicted_us"] if res["emulated"] else s["mean_us"])
        label = res["board"] + (f" (predicted for {res.get('predicted_for', 'a board')} at "
                                f"{res['predict_mhz']:.0f} MHz from instruction count)" if res["emulated"] else " (measured)")
        bars = ax.bar(xs, ys, width, label=label)
        ax.bar_label(bars, fmt="%.3g", fontsize=7)
    ax.set_xticks([i + width * (len(results) - 1) / 2 for i in range(len(backends))], backends)
    ax.set_yscale("log")
    ax.set_ylabel("µs per inference (log)")
    ax.set_title("one policy inference on the board")
    # Below the axes: long labels would hide the bars.
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), frameon=False)
    fig.tight_layout()
    with atomic_open(path) as f:
        fig.savefig(f, format="png", dpi=120)


def json_summary(results) -> dict:
    boards = []
    for res in results:
        bk = {}
        for b, s in res["backends"].items():
            e = {"median_us": s["median_us"], "p99_us": s["p99_us"], "mean_us": s["mean_us"], "khz": s["khz"]}
            if res["emulated"]:
                e["instructions_per_mac"] = s["instructions_per_mac"]
                e["instructions"] = s["instructions"]
                e["predicted_us"] = s["predicted_us"]
                if "cycles" in s:
                    e["cycles"] = s["cycles"]
                    e["cycles_per_mac"] = s["cycles_per_mac"]
                    e["predicted_boards_us"] = {n: p["us"] for n, p in s["predicted_boards"].items()}
            bk[b] = e
        boards.append({"board": res["board"], "port": res["port"], "emulated": res["emulated"], "backends": bk})
    return {"backends": boards[0]["backends"] if boards else {}, "boards": boards}


# The boards whose clocks bench predicts emulated timings at, unless told another (--predict-mhz).
PREDICTED_BOARDS = {DEFAULT_PREDICT_MHZ: "a Teensy 4.1 (Cortex-M7)", 240.0: "an ESP32 (Xtensa LX6)"}


def predicted_board(mhz: float, given: bool) -> str:
    """The board an emulated timing is predicted for, as the table names it."""
    if given or mhz not in PREDICTED_BOARDS:
        return "a board"
    return PREDICTED_BOARDS[mhz]


def run_bench(ports, n=1000, backends=None, out_dir="runs/bench", predict_mhz=None,
              log=print):
    out = prepare_out_dir(out_dir)
    results = [bench_port(p, n=n, backends=backends, predict_mhz=predict_mhz, log=log) for p in ports]
    for res in results:
        if res["emulated"]:
            res["predicted_for"] = predicted_board(res["predict_mhz"], predict_mhz is not None)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    full = {"time": stamp, "results": results}
    atomic_write(out / "bench.json", json.dumps(full, indent=1))
    plot(results, out / "bench.png")
    return results, out


def prepare_out_dir(out_dir, create: bool = True) -> Path:
    """The output directory, checked (and created) before any board time is spent on results."""
    out = check_dir_target(out_dir, "--out", "bench.json and bench.png")
    if not create:
        return out
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create --out directory {out}: {exc.strerror}") from None
    for name in ("bench.json", "bench.png"):
        check_target(out / name)
    return out

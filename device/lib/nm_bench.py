# nm_bench: neuromotor bench + hardware-in-the-loop server, serial protocol NMB/1.
#
# The host starts it through the raw REPL (`import nm_bench; nm_bench.serve()`),
# then speaks one request line, one reply line, over the board's REPL UART.
# Specification: docs/serial-protocol.md; the line protocol itself is nm_link.
# Runs on MicroPython, CircuitPython and (for host-side tests of the protocol) CPython.
import sys

try:
    import time
except ImportError:  # stock qemu firmware has no time module
    time = None

try:
    from binascii import hexlify, unhexlify
except ImportError:
    from ubinascii import hexlify, unhexlify

import struct

try:
    import json
except ImportError:
    import ujson as json

try:
    import gc
except ImportError:
    gc = None

import nm_link
from nm_link import PREFIX, PROTO, parse, send  # noqa: F401 (nm_bench.parse, nm_bench.send as before)

DEFAULT_POLICY = "/policy.nmp"
LOCK = "/nm_deploy.lock"
MANIFEST = "/nm_deploy.json"
BACKENDS = ("native", "ulab", "python")

if time is not None and hasattr(time, "ticks_us"):
    _ticks_us = time.ticks_us
    _diff = time.ticks_diff
elif time is not None and hasattr(time, "perf_counter_ns"):  # CPython
    def _ticks_us():
        return time.perf_counter_ns() // 1000

    def _diff(a, b):
        return a - b
else:
    _ticks_us = None
    _diff = None

_ticks_cpu = getattr(time, "ticks_cpu", None) if time is not None else None


def _platform_info():
    impl = sys.implementation
    mpy = getattr(impl, "_mpy", None)
    info = {
        "proto": PROTO,
        "impl": impl.name,
        "version": ".".join(str(v) for v in impl.version[:3]),
        "platform": sys.platform,
        "mpy": mpy,
        "ticks_us": _ticks_us is not None,
        "ticks_cpu": _ticks_cpu is not None,
    }
    if gc is not None and hasattr(gc, "mem_free"):
        gc.collect()
        info["mem_free"] = gc.mem_free()
        info["mem_alloc"] = gc.mem_alloc()
    # load and bench report heap peaks only where the firmware counts them
    info["heap_peak_counted"] = nm_link.HeapWatch().available
    try:
        import os
        names = os.listdir("/")
    except Exception:
        names = []
    info["interrupted_deploy"] = LOCK[1:] in names or any(n.endswith(".nmtmp") for n in names)
    info["policy_present"] = DEFAULT_POLICY[1:] in names
    if MANIFEST[1:] in names:
        try:
            with open(MANIFEST) as f:
                info["deploy"] = json.loads(f.read())
        except Exception as e:
            info["deploy"] = {"error": repr(e)}
    return info


def _load(path, backend):
    import neuromotor_rt
    if backend in ("auto", "-", ""):
        backend = None
    return neuromotor_rt.Policy.load(path, backend=backend)


def _dims(p):
    obs = getattr(p, "obs_dim", None)
    act = getattr(p, "act_dim", None)
    sizes = getattr(p, "sizes", None)
    if sizes is not None:
        sizes = list(sizes)
        if obs is None:
            obs = sizes[0]
        if act is None:
            act = sizes[-1]
    return obs, act, sizes


def _macs(sizes, codes=None):
    """Multiply-adds of one step; a GRU layer (code 16) has 3 hd (n_in + hd): W_i x and W_h h."""
    if not sizes:
        return None
    n = 0
    for i in range(len(sizes) - 1):
        a, b = sizes[i], sizes[i + 1]
        n += 3 * b * (a + b) if codes and codes[i] == 16 else a * b
    return n


def _pct(sorted_vals, q):
    # nearest-rank percentile
    n = len(sorted_vals)
    k = int(q * n + 0.999999) - 1
    if k < 0:
        k = 0
    if k >= n:
        k = n - 1
    return sorted_vals[k]


def _stats(samples):
    s = sorted(samples)
    return {"min": s[0], "median": _pct(s, 0.5), "p99": _pct(s, 0.99), "max": s[-1],
            "mean": sum(s) / len(s)}


class Server(nm_link.Server):
    def __init__(self):
        self.policy = None
        self.policy_path = None
        self.obs = None
        self.act_dim = None

    # --- commands -------------------------------------------------------
    def cmd_hello(self, args):
        return json.dumps(_platform_info())

    def cmd_backends(self, args):
        path = args[0] if args else DEFAULT_POLICY
        out = {}
        for b in BACKENDS:
            try:
                _load(path, b)
                out[b] = "ok"
            except Exception as e:
                out[b] = "%s: %s" % (type(e).__name__, e)
        if gc is not None:
            gc.collect()
        return json.dumps(out)

    def cmd_load(self, args):
        path = args[0] if args else DEFAULT_POLICY
        backend = args[1] if len(args) > 1 else "auto"
        self.policy = None
        if gc is not None:
            gc.collect()
        watch = nm_link.HeapWatch(nm_link.HEAP_GC_THRESHOLD)
        try:
            p = _load(path, backend)
        finally:
            watch.close()
        obs, act, sizes = _dims(p)
        self.policy, self.policy_path = p, path
        from array import array
        self.obs = array("f", [0.0] * obs)
        self.act_dim = act
        return json.dumps({"backend": getattr(p, "backend", backend), "obs_dim": obs,
                           "act_dim": act, "sizes": sizes, "macs": _macs(sizes, getattr(p, "acts", None)),
                           "recurrent": bool(getattr(p, "recurrent", False)),
                           "load_heap_peak": watch.peak()})

    def _need_policy(self):
        if self.policy is None:
            raise ValueError("no policy loaded: send 'load' first")

    def cmd_reset(self, args):
        # a recurrent policy's state back to the file's initial one: an episode starts
        self._need_policy()
        reset = getattr(self.policy, "reset", None)
        if reset is not None:
            reset()
        return "ok"

    def cmd_act(self, args):
        self._need_policy()
        if not args:
            raise ValueError("act needs hex float32 observations")
        raw = unhexlify(args[0])
        n = len(self.obs)
        if len(raw) != 4 * n:
            raise ValueError("act: expected %d float32 (%d hex chars), got %d hex chars"
                             % (n, 8 * n, len(args[0])))
        obs = self.obs
        vals = struct.unpack("<%df" % n, raw)
        for i in range(n):
            obs[i] = vals[i]
        t0 = _ticks_us() if _ticks_us else 0
        a = self.policy(obs)
        dt = _diff(_ticks_us(), t0) if _ticks_us else -1
        out = struct.pack("<%df" % len(a), *a)
        return "%s %d" % (hexlify(out).decode(), dt)

    def cmd_bench(self, args):
        # bench <n> [warmup]: n timed single inferences + one timed loop of n
        self._need_policy()
        if _ticks_us is None:
            raise ValueError("this firmware has no time.ticks_us: cannot time")
        n = int(args[0]) if args else 200
        warm = int(args[1]) if len(args) > 1 else 10
        if n < 1 or n > 100000:
            raise ValueError("bench: n must be in 1..100000")
        p = self.policy
        from array import array
        # a few deterministic, different observations in [-1, 1)
        obss = []
        seed = 12345
        for k in range(8):
            o = array("f", [0.0] * len(self.obs))
            for i in range(len(o)):
                seed = (seed * 1103515245 + 12345) & 0x7FFFFFFF
                o[i] = seed / 1073741824.0 - 1.0
            obss.append(o)
        reset = getattr(p, "reset", None)
        if reset is not None:  # a recurrent policy times from its initial state, as every run
            reset()
        for k in range(warm):
            p(obss[k & 7])
        if gc is not None:
            gc.collect()
        samples = array("i", [0] * n)
        ticks_us, diff = _ticks_us, _diff
        for k in range(n):
            o = obss[k & 7]
            t0 = ticks_us()
            p(o)
            samples[k] = diff(ticks_us(), t0)
        res = {"n": n, "us": _stats(samples)}
        # empty timing overhead: two ticks_us calls back to back
        for k in range(n):
            t0 = ticks_us()
            samples[k] = diff(ticks_us(), t0)
        res["timer_overhead_us"] = _stats(samples)["median"]
        if _ticks_cpu is not None:
            tc = _ticks_cpu
            for k in range(n):
                o = obss[k & 7]
                t0 = tc()
                p(o)
                samples[k] = diff(tc(), t0)
            st = _stats(samples)
            if st["max"] > 0:
                res["cpu_ticks"] = st
        # one loop of n calls: mean with sub-tick resolution (includes the loop)
        o = obss[0]
        t0 = ticks_us()
        for k in range(n):
            p(o)
        t_loop = diff(ticks_us(), t0)
        t0 = ticks_us()
        for k in range(n):
            pass
        t_empty = diff(ticks_us(), t0)
        res["loop_us"] = t_loop
        res["empty_loop_us"] = t_empty
        res["loop_mean_us"] = (t_loop - t_empty) / n
        if gc is not None and hasattr(gc, "mem_alloc"):
            gc.collect()
            a0 = gc.mem_alloc()
            for k in range(16):
                p(o)
            res["alloc_per_call"] = (gc.mem_alloc() - a0) / 16
        # the most the heap held over 16 more calls, above the loaded policy (None
        # where the firmware does not count it); untimed, and apart from
        # alloc_per_call: the watch's collections would hide allocations from it
        watch = nm_link.HeapWatch(nm_link.HEAP_GC_THRESHOLD)
        try:
            for k in range(16):
                p(o)
        finally:
            watch.close()
        res["heap_peak"] = watch.peak()
        return json.dumps(res)

    def cmd_noise(self, args):
        # For tests of the host's robustness: junk the host must skip, a line
        # with our prefix and a wrong checksum, a reply to an old request.
        nm_link.write("\x1b[0mMPY: soft reboot (not really) \xff garbage")
        stale = "%s 0 ok stale-reply" % PREFIX
        nm_link.write("%s ~%04x" % (stale, nm_link.checksum(stale)))
        n = int(args[0]) if args else 1
        for k in range(n):
            nm_link.write("%s %d ok corrupted ~0000" % (PREFIX, k))
        return "clean"


def serve():
    Server().serve()


if __name__ == "__main__":
    serve()

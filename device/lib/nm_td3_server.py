# nm_td3_server: the trainer (nm_td3) over NMB/1 (docs/serial-protocol.md), for
# `neuromotor train-on-device`:   import nm_td3_server; nm_td3_server.serve()
#
#   hello                          JSON: platform, mem_free, bytes each profile needs
#   train <profile> <steps> <seed> [every] [eval_episodes]
#                                  unsolicited `@nm - started {...}`, then `@nm - progress {...}`
#                                  every `every` steps (step, episodes, recent_return, steps_per_s,
#                                  critic_loss, mem_free, heap_live, heap_peak: the high-water mark
#                                  above the heap before the trainer, None where the firmware does
#                                  not count it; the GC collects every nm_link.HEAP_GC_THRESHOLD
#                                  bytes meanwhile), then the reply:
#                                  JSON with eval_return, wall_ms, policy_bytes, policy_crc, heap figures
#   train_custom <h1> <h2> <batch> <replay> <steps> <seed> [every] [eval_episodes]
#   policy <offset> <n>            n bytes of the trained policy file, hex
#   sync <nonce>, quit             as NMB/1
# Only native kernels train over serial (the pure-Python ones would take hours).
import sys

import nm_link
import nm_td3
from nm_link import PROTO, send

try:
    import json
except ImportError:  # pragma: no cover
    import ujson as json

try:
    from time import ticks_diff as _diff, ticks_ms as _ticks_ms
except ImportError:
    _ticks_ms = _diff = None


class Server(nm_link.Server):
    def __init__(self):
        self.trainer = None
        self.policy = None

    def cmd_hello(self, args):
        impl = sys.implementation
        return json.dumps({"proto": PROTO, "server": "nm_td3", "impl": impl.name, "platform": sys.platform,
                           "version": ".".join(str(v) for v in impl.version[:3]),
                           "mem_free": nm_td3._mem_free(),
                           "profiles": {k: nm_td3.plan(k)["bytes"] for k in nm_td3.PROFILES}})

    def cmd_train_custom(self, args):
        # train_custom <h1> <h2> <batch> <replay> <steps> <seed> [every] [eval_episodes]
        prof = {"hidden": (int(args[0]), int(args[1])), "batch": int(args[2]), "replay": int(args[3])}
        return self.cmd_train([prof] + list(args[4:]))

    def cmd_train(self, args):
        # train <profile> <steps> <seed> [every] [eval_episodes]: progress lines, then done
        profile = args[0]
        steps, seed = int(args[1]), int(args[2])
        every = int(args[3]) if len(args) > 3 else 500
        episodes = int(args[4]) if len(args) > 4 else 10
        self.trainer = None
        self.policy = None
        # a board without native training kernels would take hours: refuse, do not crawl
        watch = nm_link.HeapWatch(nm_link.HEAP_GC_THRESHOLD)
        try:
            t = nm_td3.Trainer(profile, seed=seed, kernels_=nm_td3.kernels("native"), heap_watch=watch)
        except BaseException:
            watch.close()
            raise
        self.trainer = t
        info = {"profile": t.profile_name, "steps": steps, "seed": seed, "kernels": getattr(t.K, "HOME", "?"),
                "plan_bytes": t.plan["bytes"], "mem_free_before": t.mem_free_before,
                "heap_setup": t.heap_setup, "hidden": list(t.actor.sizes[1:-1]), "batch": t.batch_size,
                "replay": t.capacity}
        send("-", "started", json.dumps(info))
        t0 = _ticks_ms() if _ticks_ms else 0
        t.train(steps, report=lambda i: send("-", "progress", json.dumps(i)), every=every)
        wall_ms = _diff(_ticks_ms(), t0) if _ticks_ms else 0
        t.finish_learning()
        from neuromotor_rt import crc32  # the runtime is imported once the learning state is freed
        ret = t.evaluate(episodes) if episodes > 0 else None
        path = t.save_policy()[0]
        with open(path, "rb") as f:
            self.policy = f.read()
        heap_peak = watch.peak()
        watch.close()
        return json.dumps({"step": t.steps, "eval_return": ret, "eval_episodes": episodes, "wall_ms": wall_ms,
                           "policy_bytes": len(self.policy), "policy_crc": crc32(self.policy),
                           "policy_path": path, "heap_live_peak": t.heap_live_peak(),
                           "heap_setup": t.heap_setup, "heap_peak": heap_peak,
                           "heap_gc_threshold": watch.threshold,
                           "heap_base": t.heap_base, "mem_free_before": t.mem_free_before,
                           "recent_return": t.recent_return(), "updates": t.updates})

    def cmd_policy(self, args):
        # policy <offset> <n>: n bytes of the trained policy file from offset, as hex
        if self.policy is None:
            raise ValueError("no trained policy: send 'train' first")
        off, n = int(args[0]), int(args[1])
        from binascii import hexlify
        return hexlify(self.policy[off:off + n]).decode()


def serve():
    Server().serve()

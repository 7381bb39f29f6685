# nm_link: the board's side of NMB/1, the neuromotor serial line protocol
# (docs/serial-protocol.md), shared by nm_bench (bench + HIL server) and
# nm_td3 (training server). Runs on MicroPython, CircuitPython and CPython.
#
# Every line: "@nm <seq> <word> [payload] ~<cksum>". A server subclasses
# Server and adds cmd_<name>(self, args) methods returning the reply payload.
import sys

PROTO = 1
PREFIX = "@nm"

# The GC collects at least every HEAP_GC_THRESHOLD bytes allocated while a
# HeapWatch measures: garbage then adds at most this much to the peak.
HEAP_GC_THRESHOLD = 4096


def checksum(s):
    # 16-bit sum of the UTF-8 bytes; cheap on every port, catches dropped or
    # injected characters. Written as 4 lower-case hex digits after " ~".
    return sum(s.encode()) & 0xFFFF


def write(line):
    sys.stdout.write(line + "\n")
    try:
        sys.stdout.flush()
    except AttributeError:
        pass


def send(seq, word, payload=""):
    body = "%s %s %s" % (PREFIX, seq, word)
    if payload != "":
        body += " " + payload
    write("%s ~%04x" % (body, checksum(body)))


def parse(line):
    """Request line -> (seq, cmd, args) or raises ValueError with the reason."""
    line = line.strip()
    i = line.rfind(" ~")
    if i < 0:
        raise ValueError("no checksum")
    body, ck = line[:i], line[i + 2:]
    # a request may arrive after garbage on the same line: start at the last prefix
    j = body.rfind(PREFIX + " ")
    if j < 0:
        raise ValueError("no prefix")
    body = body[j:]
    try:
        ok = int(ck, 16) == checksum(body)
    except ValueError:
        ok = False
    parts = body.split(" ")
    seq = parts[1] if len(parts) > 1 else "-"
    if not ok:
        raise ValueError("checksum mismatch", seq)
    if len(parts) < 3:
        raise ValueError("no command", seq)
    return seq, parts[2], parts[3:]


class Server:
    """One request line, one reply line: `ok <payload>` or `err <reason>`."""

    running = False

    def cmd_sync(self, args):
        return args[0] if args else ""

    def cmd_quit(self, args):
        self.running = False
        return ""

    def handle(self, line):
        try:
            seq, cmd, args = parse(line)
        except ValueError as e:
            a = e.args
            send(a[1] if len(a) > 1 else "-", "err", "bad-request " + str(a[0]))
            return
        fn = getattr(self, "cmd_" + cmd, None)
        if fn is None:
            send(seq, "err", "unknown-command " + cmd)
            return
        try:
            payload = fn(args)
        except Exception as e:
            msg = ("%s: %s" % (type(e).__name__, e)).replace("\n", " ").replace("\r", " ")
            send(seq, "err", msg)
            return
        send(seq, "ok", payload)

    def serve(self):
        """`ready`, then requests until `quit` or end of input, then `bye`."""
        self.running = True
        send("-", "ready", "NMB/%d" % PROTO)
        stdin = sys.stdin
        while self.running:
            try:
                line = stdin.readline()
            except KeyboardInterrupt:
                raise
            except Exception as e:  # undecodable garbage
                send("-", "err", "bad-request unreadable " + type(e).__name__)
                continue
            if isinstance(line, bytes):
                line = line.decode()
            if not line:
                break  # EOF (CPython over a pipe)
            if line.strip() == "":
                continue
            self.handle(line)
        send("-", "bye", "")


class HeapWatch:
    """The GC heap's high-water mark over a stretch of code, in bytes above the
    heap in use when the watch started (after a collection).

    Only firmware whose allocator counts it has the mark: module nm_heap (built
    into the emulated boards' firmware, device/port/nm_heap.c). Elsewhere (stock
    firmware, natmods, CPython) `available` is False and peak() is None: gc
    reports only the heap in use at the moment it is asked. The mark counts
    garbage until a collection frees it: with threshold=n the GC collects every
    n bytes (gc.threshold) until close(), so the peak is at most about n above
    the most the code ever held live; without, it depends on when the heap
    filled up.
    """

    def __init__(self, threshold=None):
        try:
            import gc
            import nm_heap
        except ImportError:
            nm_heap = None
        self.available = nm_heap is not None
        self.threshold = None
        self.base = None
        self._nm_heap, self._restore = nm_heap, None
        if nm_heap is not None:
            gc.collect()
            if threshold is not None:
                self._restore = gc.threshold()
                gc.threshold(threshold)
                self.threshold = threshold
            self.base = nm_heap.reset_peak()

    def peak(self):
        if self._nm_heap is None:
            return None
        return self._nm_heap.peak() - self.base

    def close(self):
        if self._restore is not None:
            import gc
            gc.threshold(self._restore)
            self._restore = None

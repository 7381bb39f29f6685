"""Host side of NMB/1: start the bench server on a board and talk to it.

The server is started through MicroPython's raw REPL with mpremote's
SerialTransport (soft reset, then ``import nm_bench; nm_bench.serve()``); from
then on requests and replies are lines on the same pyserial port. The client
ignores anything that is not a protocol line (boot banners, REPL prompts,
noise), drops replies to older requests, and on a timeout or a corrupted line
resynchronises with ``sync <nonce>`` before retrying. When the server cannot be
reached it raises ProtocolError with what it saw on the line.
"""

import contextlib
import io
import json
import os
import secrets
import time

from neuromotor.errors import UserError
from neuromotor.boards.link.protocol import PROTO, BadLine, decode_line, encode_line
from neuromotor.boards.link.tty import is_terminal

START_SERVER = "import nm_bench\nnm_bench.serve()\n"


class ProtocolError(UserError):
    """The board did not answer as NMB/1 says (timeout, server died, bad data)."""


class ServerError(ProtocolError):
    """The server answered ``err``: the request was understood and failed."""


def enter_raw_repl(transport, soft_reset: bool, timeout: float) -> None:
    """mpremote's enter_raw_repl, whose failure prints what the board sent to our stdout (a
    bare b'' when nothing answers): that text goes into the TransportError instead."""
    from mpremote.transport import TransportError
    seen = io.StringIO()
    try:
        with contextlib.redirect_stdout(seen):
            transport.enter_raw_repl(soft_reset=soft_reset, timeout_overall=timeout)
    except TransportError as exc:
        got = seen.getvalue().strip()
        raise TransportError(f"{exc}; the board sent " + ("nothing" if got in ("", "b''") else got[-80:])) from None


def start_program(transport, soft_reset: bool, timeout: float, program: str) -> None:
    """Enter the raw REPL and start `program` without waiting for it, the port's read timeout
    at `timeout` meanwhile: mpremote reads the raw-paste handshake (its two-byte answer, the
    window size) with the port's own timeout, and a board slower than the protocol's 50 ms
    (an emulated one on a loaded machine) answered after it, which read as a refusal."""
    serial = transport.serial
    before = serial.timeout
    serial.timeout = timeout
    try:
        enter_raw_repl(transport, soft_reset, timeout)
        transport.exec_raw_no_follow(program)
    finally:
        serial.timeout = before


class LinkClient:
    def __init__(self, port: str, baudrate: int = 115200, timeout: float = 10.0,
                 retries: int = 3, start_server: bool = True, soft_reset: bool = True):
        self.port = port
        self.timeout = timeout
        self.retries = retries
        self.seq = 0
        self.noise = []          # recent non-protocol lines, for error messages
        self.stats = {"bad_lines": 0, "stale": 0, "resyncs": 0, "retries": 0}
        self.info = {}
        self._buf = b""
        self._transport = None
        self._server_exited = None
        self._open(baudrate)
        try:
            if start_server:
                self._start(soft_reset)
            self.info = self.hello()
        except BaseException:
            self.close(quit_server=False)
            raise

    # --- connection -----------------------------------------------------
    def _open(self, baudrate):
        try:
            from mpremote.transport import TransportError
            from mpremote.transport_serial import SerialTransport
        except ImportError as exc:  # pragma: no cover - dependency missing
            raise UserError("mpremote is not installed: pip install -e '.[device]'") from exc
        if not os.path.exists(self.port) and not self.port.startswith(("rfc2217://", "COM")):
            raise ProtocolError(f"serial port {self.port} does not exist (is the board connected / started?)")
        try:
            self._transport = SerialTransport(self.port, baudrate=baudrate)
        except TransportError as exc:
            if not is_terminal(self.port):
                raise ProtocolError(f"{self.port} is not a serial port (a board's port is a terminal device such "
                                    "as /dev/ttyACM0; `neuromotor boards` lists them)") from exc
            raise ProtocolError(f"cannot open {self.port}: {exc} (is another program using it?)") from exc
        self.ser = self._transport.serial
        self.ser.timeout = 0.05

    def _start(self, soft_reset):
        from mpremote.transport import TransportError
        try:
            start_program(self._transport, soft_reset, self.timeout, START_SERVER)
        except TransportError as exc:
            raise ProtocolError(
                f"{self.port}: could not start the bench server through the raw REPL ({exc}); "
                "is MicroPython running on the board and is no other program using the port?") from exc
        deadline = time.monotonic() + self.timeout
        while True:
            msg = self._read_message(deadline)
            if msg is None:
                raise ProtocolError(
                    f"{self.port}: bench server did not announce itself within {self.timeout:.0f} s; "
                    f"last output: {self._noise_text()}")
            if msg.seq == "-" and msg.word == "ready":
                if msg.payload.strip() != f"NMB/{PROTO}":
                    raise ProtocolError(f"{self.port}: board speaks {msg.payload!r}, host speaks NMB/{PROTO}; "
                                        "deploy again to update nm_bench")
                return

    def close(self, quit_server: bool = True):
        if self._transport is None:
            return
        try:
            if quit_server and self._server_exited is None:
                try:
                    self.request("quit", timeout=2.0, retries=0)
                    # raw REPL end of execution: \x04 <stderr> \x04 then '>'
                    self._transport.read_until(1, b"\x04>", timeout=1)
                except Exception:
                    self.ser.write(b"\r\x03")
                self._transport.exit_raw_repl()
        except Exception:
            pass
        finally:
            try:
                self._transport.close()
            except Exception:
                pass
            self._transport = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- line layer -----------------------------------------------------
    def _noise_text(self) -> str:
        text = " | ".join(self.noise[-6:])
        return repr(text[-400:]) if text else "(nothing)"

    def _readline(self, deadline):
        while True:
            i = self._buf.find(b"\n")
            k = self._buf.find(b"\x04")
            if k >= 0 and (i < 0 or k < i):  # raw REPL: the server's program ended
                return self._server_ended(deadline)
            if i >= 0:
                line, self._buf = self._buf[:i], self._buf[i + 1:]
                return line
            if len(self._buf) > 65536:  # a flood of garbage without newlines
                self.noise.append(self._buf[-200:].decode("utf-8", "replace"))
                self._buf = b""
            now = time.monotonic()
            if now >= deadline:
                return None
            self.ser.timeout = min(0.05, max(0.0, deadline - now))
            try:
                chunk = self.ser.read(max(1, self.ser.in_waiting))
            except OSError as exc:
                raise ProtocolError(f"{self.port}: serial line closed ({exc})") from exc
            self._buf += chunk

    def _server_ended(self, deadline):
        # collect stdout \x04 stderr \x04
        end = time.monotonic() + 1.0
        while self._buf.count(b"\x04") < 2 and time.monotonic() < end:
            self._buf += self.ser.read(max(1, self.ser.in_waiting))
        out, _, rest = self._buf.partition(b"\x04")
        err = rest.partition(b"\x04")[0].decode("utf-8", "replace").strip()
        self._buf = b""
        last = err.splitlines()[-1] if err else "it ended without an error message"
        self._server_exited = err or "exited"
        hint = ""
        if "nm_bench" in err and "ImportError" in err:
            hint = " - nm_bench is not on the board: run `neuromotor deploy` first"
        elif "neuromotor_rt" in err and "ImportError" in err:
            hint = " - the runtime is not on the board: run `neuromotor deploy` first"
        raise ProtocolError(f"{self.port}: the bench server on the board stopped: {last}{hint}")

    def _read_message(self, deadline, raise_bad=False):
        while True:
            line = self._readline(deadline)
            if line is None:
                return None
            try:
                msg = decode_line(line)
            except BadLine as exc:
                self.stats["bad_lines"] += 1
                self.noise.append(str(exc))
                if raise_bad:
                    raise
                continue
            if msg is None:
                text = line.decode("utf-8", "replace").strip()
                if text:
                    self.noise.append(text)
                    del self.noise[:-20]
                continue
            return msg

    # --- requests -------------------------------------------------------
    def resync(self, timeout=None) -> bool:
        """Terminate any partial line on the board, then wait for our nonce."""
        self.stats["resyncs"] += 1
        timeout = self.timeout if timeout is None else timeout
        nonce = secrets.token_hex(4)
        self.seq += 1
        seq = str(self.seq)
        self.ser.write(b"\n" + encode_line(seq, "sync", nonce))
        deadline = time.monotonic() + timeout
        while True:
            msg = self._read_message(deadline)
            if msg is None:
                return False
            if msg.seq == seq and msg.word == "ok" and msg.payload == nonce:
                return True

    def request(self, cmd: str, *args, timeout=None, retries=None) -> str:
        timeout = self.timeout if timeout is None else timeout
        retries = self.retries if retries is None else retries
        if self._server_exited is not None:
            raise ProtocolError(f"{self.port}: the bench server is not running ({self._server_exited})")
        payload = " ".join(str(a) for a in args)
        last_problem = None
        for attempt in range(retries + 1):
            if attempt:
                self.stats["retries"] += 1
                if not self.resync(timeout=min(timeout, self.timeout)):
                    last_problem = "no answer to a resync"
                    continue
            self.seq += 1
            seq = str(self.seq)
            last_problem = None
            self.ser.write(encode_line(seq, cmd, payload))
            deadline = time.monotonic() + timeout
            while True:
                try:
                    msg = self._read_message(deadline, raise_bad=True)
                except BadLine as exc:
                    # maybe our reply, garbled: wait a little for a good one, then resync and retry
                    last_problem = f"corrupted reply ({exc})"
                    deadline = min(deadline, time.monotonic() + 0.5)
                    continue
                if msg is None:
                    last_problem = last_problem or f"no reply within {timeout:.1f} s"
                    break
                if msg.seq != seq:
                    if msg.seq == "-" and msg.word == "err":
                        # the board could not read a line: maybe our request, garbled; retry now
                        last_problem = f"board could not read the request: {msg.payload}"
                        self.noise.append(last_problem)
                        break
                    else:
                        self.stats["stale"] += 1
                    continue
                if msg.word == "ok":
                    return msg.payload
                if msg.word == "err":
                    if msg.payload.startswith("bad-request"):
                        last_problem = f"board could not read the request: {msg.payload}"
                        break  # garbled on the way: retry
                    raise ServerError(f"{self.port}: {cmd} failed on the board: {msg.payload}")
                last_problem = f"unexpected reply {msg.word!r}"
                break
        raise ProtocolError(
            f"{self.port}: no valid reply to {cmd!r} after {retries + 1} attempt(s): {last_problem}; "
            f"line noise seen: {self._noise_text()}")

    def request_json(self, cmd: str, *args, **kw):
        text = self.request(cmd, *args, **kw)
        try:
            return json.loads(text)
        except ValueError as exc:
            raise ProtocolError(f"{self.port}: {cmd} reply is not JSON: {text[:200]!r}") from exc

    # --- commands -------------------------------------------------------
    def hello(self) -> dict:
        return self.request_json("hello")

    def backends(self, path="/policy.nmp") -> dict:
        return self.request_json("backends", path, timeout=max(self.timeout, 60))

    def load(self, path="/policy.nmp", backend="auto") -> dict:
        return self.request_json("load", path, backend, timeout=max(self.timeout, 60))

    def bench(self, n=200, warmup=10, timeout=300.0) -> dict:
        return self.request_json("bench", n, warmup, timeout=timeout, retries=1)

    def act(self, obs):
        """obs: float32 array (obs_dim,) -> (action float32 array, device compute µs, round trip ns)."""
        import numpy as np
        obs = np.ascontiguousarray(obs, dtype="<f4")
        t0 = time.perf_counter_ns()
        reply = self.request("act", obs.tobytes().hex())
        rtt = time.perf_counter_ns() - t0
        parts = reply.split()
        if len(parts) != 2:
            raise ProtocolError(f"{self.port}: malformed act reply {reply!r}")
        try:
            action = np.frombuffer(bytes.fromhex(parts[0]), dtype="<f4").copy()
        except ValueError as exc:
            raise ProtocolError(f"{self.port}: malformed act reply {reply!r}") from exc
        return action, int(parts[1]), rtt

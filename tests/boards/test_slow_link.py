"""A slow board: the emulated Cortex-M7 behind a pty relay that delays every byte it sends by
0.3 s (as a loaded machine's QEMU can). Starting the bench server through the raw REPL must
still work: mpremote reads the raw-paste handshake with the port's own timeout, which the
link keeps at 50 ms for its protocol."""

import os
import select
import subprocess
import sys
import threading
import time
import tty

import numpy as np
import serial

from neuromotor.boards.link.client import LinkClient
from neuromotor.policy import write_policy
from neuromotor.policy.spec import PolicySpec

DELAY = 0.3


def _slow_relay(board_port: str):
    """(a pty path whose other side is the board, each of the board's bytes DELAY s late; close())."""
    master, slave = os.openpty()
    tty.setraw(master)
    board = serial.Serial(board_port, 115200, timeout=0)
    stop = threading.Event()
    pending = []  # (due time, bytes) from the board

    def relay():
        while not stop.is_set():
            ready = select.select([master, board.fileno()], [], [], 0.01)[0]
            if master in ready:
                try:
                    board.write(os.read(master, 4096))
                except OSError:
                    return
            if board.fileno() in ready:
                data = board.read(4096)
                if data:
                    pending.append((time.monotonic() + DELAY, data))
            while pending and pending[0][0] <= time.monotonic():
                os.write(master, pending.pop(0)[1])

    thread = threading.Thread(target=relay, daemon=True)
    thread.start()

    def close():
        stop.set()
        thread.join(2)
        board.close()
        os.close(master)
        os.close(slave)
    return os.ttyname(slave), close


def test_the_bench_server_starts_on_a_board_slower_than_the_protocols_timeout(qemu_m7, tmp_path):
    policy = tmp_path / "p.nmp"
    rng = np.random.default_rng(1)
    write_policy(PolicySpec([rng.normal(0, 0.5, (8, 3)), rng.normal(0, 0.5, (1, 8))], [np.zeros(8), np.zeros(1)],
                            ["relu", "tanh"], np.zeros(3), np.ones(3), np.ones(1), np.zeros(1)), policy)
    res = subprocess.run([sys.executable, "-m", "neuromotor", "deploy", str(policy), "--port", qemu_m7.port],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    port, close = _slow_relay(qemu_m7.port)
    try:
        client = LinkClient(port, timeout=20.0)
        try:
            assert client.info["policy_present"] is True and client.info["platform"] == "qemu"
            assert client.ser.timeout == 0.05  # the protocol's own again, once the server runs
        finally:
            client.close()
    finally:
        close()

"""Emulated boards for test sessions: started once, always stopped.

    from neuromotor.boards.testing import BoardPool
    pool = BoardPool()
    b = pool.get("qemu-m7")          # builds the firmware if missing, starts QEMU, waits for the REPL
    ...
    pool.close()                      # stops exactly the QEMUs this pool started (by PID)

Each board runs under its own instance name (<board>-pytest-<pid>-<pool>), so a
board a user started with `neuromotor board start` is never touched, several
pools in one test session never collide, and with
PR_SET_PDEATHSIG so even a killed test session leaves no QEMU behind.
"""

from __future__ import annotations

import itertools
import os

from .emulated import QemuInstance, firmware_path, start, stop
from .descriptor import load_board


_pool_numbers = itertools.count()


class BoardPool:
    def __init__(self, build: bool = True):
        self.build = build
        self._boards: dict = {}
        self._tag = f"pytest-{os.getpid()}-{next(_pool_numbers)}"

    def firmware_ready(self, name: str) -> bool:
        return firmware_path(load_board(name)).exists()

    def get(self, name: str) -> QemuInstance:
        b = self._boards.get(name)
        if b is not None and b.alive():
            return b
        if b is not None:
            stop(b.instance)
        b = start(name, instance=f"{name}-{self._tag}", build=self.build, die_with_parent=True)
        self._boards[name] = b
        return b

    def restart(self, name: str) -> QemuInstance:
        b = self._boards.pop(name, None)
        if b is not None:
            stop(b.instance)
        return self.get(name)

    def close(self) -> None:
        while self._boards:
            _, b = self._boards.popitem()
            stop(b.instance)

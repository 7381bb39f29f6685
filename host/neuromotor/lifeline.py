"""Child processes that end with the process that started them.

A worker blocked on a queue whose other end is held by its siblings never sees its parent
go, so a killed parent (SIGKILL leaves it no time to clean up) would leave it running, and
holding the run directory it trains into. Linux's PR_SET_PDEATHSIG has the kernel send the
child a signal the moment its parent exits, however the parent ended.
"""

import ctypes
import os
import signal

_PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """From now on, this process gets `sig` when its parent exits (a no-op where there is
    no prctl). Call it first thing in the child."""
    parent = os.getppid()
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return
    prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    if os.getppid() != parent:  # the parent ended before the request took effect
        os.kill(os.getpid(), sig)

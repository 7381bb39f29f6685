"""A Ctrl-C that third-party code swallowed still stops a command.

Python turns SIGINT into a KeyboardInterrupt wherever the main thread happens to be, and C code
that clears the errors of what it calls drops it: a Ctrl-C in the first tenth of a second of
`neuromotor train --resume` landed, in about 1 run of 200, in a class's registration with
collections.abc while an extension module initialised during a lazy import; the extension
ignored the failure, and training went on.
The command line installs this module's handler, which also remembers the signal; long loops
call `check` between their chunks of work, which raises the interrupt again.
"""

import signal
import threading

_received = False


def _handler(signum, frame):
    global _received
    _received = True
    raise KeyboardInterrupt


def install() -> None:
    """Remember every SIGINT from now on (the main thread, where SIGINT has Python's own handler:
    a program that chose its own keeps it)."""
    if threading.current_thread() is threading.main_thread() \
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _handler)


def check() -> None:
    """KeyboardInterrupt if a SIGINT came since `install`, whether or not its first one got through."""
    if _received:
        raise KeyboardInterrupt

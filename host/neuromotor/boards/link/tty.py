"""Whether a path names a serial port at all, so a wrong --port gets the right message."""

import os
import stat


def is_terminal(port: str) -> bool:
    """Whether `port` is a terminal device, as every serial port is (/dev/null, a file or a
    directory is not); a remote or Windows port counts as one."""
    if port.startswith(("rfc2217://", "COM")):
        return True
    try:
        fd = os.open(port, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError:
        return os.path.exists(port) and stat.S_ISCHR(os.stat(port).st_mode)  # busy or not ours: still a device
    try:
        return os.isatty(fd)
    finally:
        os.close(fd)

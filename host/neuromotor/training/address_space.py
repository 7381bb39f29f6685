"""The address space this process may still map under its RLIMIT_AS (`ulimit -v`).

Such a limit counts every mapping (the interpreter, the libraries, thread stacks), not only
what is resident, and an allocation past it fails however much memory the machine has free.
"""

import os

try:
    import resource
except ImportError:  # not POSIX
    resource = None


def left():
    """Bytes below the soft RLIMIT_AS not yet mapped, or None when there is no such limit."""
    if resource is None:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        with open("/proc/self/statm") as f:
            mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        mapped = 0
    return max(0, soft - mapped)

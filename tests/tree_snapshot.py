"""A directory tree's state, to show that a command changed nothing in it."""

import hashlib
import os


def tree_state(root) -> dict:
    """Every entry below root: its mode, and for a file its mtime and contents' hash, for a
    symlink its target (a directory's mtime moves with a probe file, so only its mode counts)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if os.path.islink(p):
                out[os.path.relpath(p, root)] = (st.st_mode, os.readlink(p))
            elif os.path.isdir(p):
                out[os.path.relpath(p, root)] = (st.st_mode,)
            else:
                digest = None
                if os.path.isfile(p):
                    with open(p, "rb") as f:
                        digest = hashlib.sha256(f.read()).hexdigest()
                out[os.path.relpath(p, root)] = (st.st_mode, st.st_mtime_ns, digest)
    return out

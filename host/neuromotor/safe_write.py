"""One way to write a host file: atomically, and only over a regular file the user meant.

Every writer (checkpoints, a run's config/metrics/summary/curve, bench output,
exported policies) goes through `atomic_write` or `atomic_open`:

- the data goes to a temporary file in the target's directory, is fsync'd, and
  is then os.replace()d over the target, so a kill at any moment leaves either
  the old file or the new one, never half of each. The temporary's name,
  .<target>.<pid>.<random>.tmp, names its writer: one left by a writer that was
  killed is removed by the next write of that target;
- the target must be a regular file or not exist yet. Devices, FIFOs, sockets,
  directories and anything the kernel will not let us create a file beside
  (/proc, /sys) are refused with a UserError, as are an empty path and a
  missing parent directory (a typo there should not create directories);
- the files neuromotor names itself (a run's, a sweep's, bench output) are never
  written through a symlink: a link in their place is refused (`follow=False`, the
  default), so a link planted in a run directory cannot redirect a write;
- a path the user named (`follow=True`: an export's -o, a rendered GIF) may be a
  symlink to an existing regular file, which is written through: the file it
  points to is replaced and the link stays. A symlink to anything else (a
  device, a directory, nothing at all) is refused;
- `protected` paths (e.g. a run's own checkpoint when exporting from it) are
  refused under any name: relative, through symlinks or as a hard link.
"""

import contextlib
import errno
import os
import re
import stat
import tempfile
from pathlib import Path

from neuromotor.errors import UserError


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def check_target(path, protected=(), follow: bool = False) -> Path:
    """The file that writing `path` would replace (symlinks resolved), or a UserError saying why not.

    Call it before long work whose result goes to `path`, so a bad path fails first.
    """
    if path is None or os.fspath(path) == "":
        raise UserError("output path is empty")
    given = Path(path)
    target = Path(os.path.realpath(given))
    if given.is_symlink() and not follow:
        raise UserError(f"refusing to write {given}: it is a symbolic link, and neuromotor writes its own "
                        "files only as regular files")
    if given.is_symlink():
        if not target.exists():
            raise UserError(f"{given} is a symlink to {target}, which does not exist; "
                            "give the real path to create a new file")
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        raise UserError(f"cannot write {given}: {_first_non_dir(given)} is not a directory") from None
    except OSError as exc:
        raise UserError(f"cannot write {given}: {exc.strerror}") from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise UserError(f"cannot write {given}: it is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise UserError(f"cannot write {given}: {target} is not a regular file")
        for p in protected:
            try:
                if _same_file(st, os.stat(p)):
                    raise UserError(f"refusing to write {given}: it would overwrite {p}")
            except OSError:
                pass
        if not os.access(target, os.W_OK):
            raise UserError(f"cannot write {given}: permission denied")
    else:
        real_protected = {os.path.realpath(p) for p in protected}
        if str(target) in real_protected:
            raise UserError(f"refusing to write {given}: it is a file this run needs")
    parent = target.parent
    if not parent.exists():
        raise UserError(f"cannot write {given}: directory {given.parent} does not exist")
    if not parent.is_dir():
        raise UserError(f"cannot write {given}: {_first_non_dir(given)} is not a directory")
    # Try the temporary file now: /proc, /sys or a read-only mount fail here, not after the work.
    try:
        fd, probe = tempfile.mkstemp(prefix=_tmp_prefix(target), suffix=".tmp", dir=parent)
    except OSError as exc:
        raise UserError(f"cannot write {given}: {exc.strerror}") from None
    os.close(fd)
    os.unlink(probe)
    return target


def check_dir_target(out_dir, option: str, purpose: str) -> Path:
    """The output directory that `option` names, as a Path, or a UserError when it cannot be
    one (empty, an existing file, or below a file), so that no work is spent before that."""
    if out_dir is None or str(out_dir) == "":
        raise UserError(f"{option} is empty: give a directory for {purpose}")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise UserError(f"{option} {out}: exists and is not a directory (it is for {purpose})")
    existing = next((p for p in out.parents if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise UserError(f"{option} {out}: {existing} is not a directory")
    return out


def _tmp_prefix(target: Path) -> str:
    return f".{target.name}.{os.getpid()}."


_TMP_TAIL = re.compile(r"(\d+)\.[a-z0-9_]{8}\.tmp")  # <pid>.<mkstemp's 8 characters>.tmp


def remove_stale_temporaries(target) -> list:
    """Remove the temporaries of `target` whose writer no longer runs (killed between writing
    and renaming); returns their paths. A live writer's temporary is left alone."""
    target = Path(target)
    head = f".{target.name}."
    removed = []
    try:
        names = [n for n in os.listdir(target.parent) if n.startswith(head)]
    except OSError:
        return removed
    for name in names:
        m = _TMP_TAIL.fullmatch(name[len(head):])
        if m and not _runs(int(m.group(1))):
            with contextlib.suppress(OSError):
                os.unlink(target.parent / name)
                removed.append(target.parent / name)
    return removed


def _runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # OverflowError: past any pid there can be
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _first_non_dir(path: Path) -> Path:
    for p in reversed(path.parents):
        if p.exists() and not p.is_dir():
            return p
    return path.parent


@contextlib.contextmanager
def atomic_open(path, mode: str = "wb", protected=(), follow: bool = False):
    """A file object whose contents replace `path` when the block ends without an exception."""
    target = check_target(path, protected, follow)
    remove_stale_temporaries(target)
    try:
        fd, tmp = tempfile.mkstemp(prefix=_tmp_prefix(target), suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror}") from None
    try:
        try:
            mode_bits = stat.S_IMODE(os.stat(target).st_mode)
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode_bits = 0o666 & ~umask
        os.fchmod(fd, mode_bits)
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
        tmp = None
        _fsync_dir(target.parent)
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _fsync_dir(directory: Path) -> None:
    # The rename itself is only durable once the directory entry is on disk.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(path, data, protected=(), follow: bool = False) -> Path:
    """Replace `path` with `data` (bytes, or str written as UTF-8); returns the path as given."""
    if isinstance(data, str):
        data = data.encode()
    with atomic_open(path, "wb", protected, follow) as f:
        f.write(data)
    return Path(path)


def open_own(path, flags: int) -> int:
    """A descriptor of `path`, one of neuromotor's own files (a log, a lock), opened with
    `flags` | O_CREAT without following a symlink and without waiting on a FIFO; anything
    but a regular file is refused."""
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UserError(f"refusing to open {path}: it is a symbolic link, and neuromotor writes its own "
                            "files only as regular files") from None
        raise UserError(f"cannot open {path}: {exc.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UserError(f"refusing to open {path}: it is not a regular file")
    os.set_blocking(fd, True)
    return fd


def append_text(path, text: str) -> None:
    """Append `text` to one of neuromotor's own logs (metrics.jsonl)."""
    fd = open_own(path, os.O_WRONLY | os.O_APPEND)
    try:
        with os.fdopen(fd, "ab") as f:
            f.write(text.encode())
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None

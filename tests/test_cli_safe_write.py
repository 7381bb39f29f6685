"""safe_write: every host file is written atomically, and only over a regular file the user meant."""

import os
import socket
import stat

import pytest

from neuromotor.errors import UserError
from neuromotor.safe_write import atomic_open, atomic_write, check_target
from special_files import private_null


def _no_temp_left(directory):
    return [p.name for p in directory.iterdir() if ".tmp" in p.name]


def test_writes_new_and_replaces_existing(tmp_path):
    target = tmp_path / "out.bin"
    assert atomic_write(target, b"one") == target
    target.chmod(0o600)
    atomic_write(target, "two")
    assert target.read_text() == "two"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600  # the replaced file keeps its mode
    assert _no_temp_left(tmp_path) == []


def test_streaming_writer_keeps_old_file_on_error(tmp_path):
    target = tmp_path / "ck.npz"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with atomic_open(target) as f:
            f.write(b"half")
            raise RuntimeError("killed mid-write")
    assert target.read_bytes() == b"old"
    assert _no_temp_left(tmp_path) == []


@pytest.mark.parametrize("make, message", [
    (lambda d: "", "empty"),
    (lambda d: d, "is a directory"),
    (lambda d: d / "missing" / "x.nmp", "does not exist"),
    (lambda d: (d / "file").write_text("x") and d / "file" / "x.nmp", "not a directory"),
    (lambda d: os.mkfifo(d / "fifo") or d / "fifo", "not a regular file"),
    (lambda d: private_null(d), "not a regular file"),
    (lambda d: "/proc/neuromotor-x", "cannot write"),
])
def test_refuses_non_regular_targets(tmp_path, make, message):
    target = make(tmp_path)
    with pytest.raises(UserError, match=message):
        atomic_write(target, b"data")
    if target and os.path.basename(target) == "null":
        assert stat.S_ISCHR(os.lstat(target).st_mode)
    assert _no_temp_left(tmp_path) == []


def test_refuses_a_socket(tmp_path):
    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        with pytest.raises(UserError, match="not a regular file"):
            atomic_write(path, b"data")
        assert stat.S_ISSOCK(path.lstat().st_mode)


def test_symlink_to_a_regular_file_writes_through(tmp_path):
    real = tmp_path / "real.nmp"
    real.write_bytes(b"old")
    link = tmp_path / "link.nmp"
    link.symlink_to(real)
    atomic_write(link, b"new", follow=True)
    assert link.is_symlink() and real.read_bytes() == b"new"


def test_own_files_are_never_written_through_a_symlink(tmp_path):
    real = tmp_path / "users_file"
    real.write_bytes(b"the user's")
    link = tmp_path / "config.json"
    link.symlink_to(real)
    with pytest.raises(UserError, match="symbolic link"):
        atomic_write(link, b"new")
    assert link.is_symlink() and real.read_bytes() == b"the user's"


@pytest.mark.parametrize("target", ["null", "dangling"])
def test_symlink_to_anything_else_is_refused(tmp_path, target):
    if target == "null":
        private_null(tmp_path)
    link = tmp_path / "link.nmp"
    link.symlink_to(tmp_path / target)
    with pytest.raises(UserError):
        atomic_write(link, b"new", follow=True)
    assert link.is_symlink() and not (tmp_path / "dangling").exists()


def test_protected_paths_are_refused_by_any_name(tmp_path):
    own = tmp_path / "run" / "checkpoint.npz"
    own.parent.mkdir()
    own.write_bytes(b"weights")
    (tmp_path / "alias").symlink_to(own)
    os.link(own, tmp_path / "hard")
    for name in (own, tmp_path / "run" / ".." / "run" / "checkpoint.npz", tmp_path / "alias", tmp_path / "hard"):
        with pytest.raises(UserError, match="would overwrite"):
            check_target(name, protected=[own], follow=True)
    assert own.read_bytes() == b"weights"

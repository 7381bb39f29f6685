"""Files that are not regular files, which the tests of the host's writers point outputs at."""

import os
import stat

import pytest


def private_null(directory):
    """A character device like /dev/null in `directory` (a regression must not replace the real one)."""
    try:
        os.mknod(directory / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs root")
    return directory / "null"

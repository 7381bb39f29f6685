"""Checkpoints: a flat dict of numpy arrays in one .npz, written atomically.

Written through neuromotor.safe_write (a temporary file in the same directory,
fsync'd, then os.replace()d over the old one), so a kill at any moment leaves
either the old or the new checkpoint.
Loaded with allow_pickle=False and checked against the arrays the running code
expects (names, shapes, dtypes) from each member's header, before any array's data
is read: a damaged header cannot make the loader allocate more than the run needs.
"""

import zipfile

import numpy as np

from neuromotor import reading
from neuromotor.errors import UserError
from neuromotor.safe_write import atomic_open


def save(path, arrays: dict) -> None:
    with atomic_open(path) as f:
        np.savez(f, **arrays)


# Arrays under this prefix name what the checkpoint belongs to ("run.env", "run.algo": UTF-8
# bytes). They are compared before anything else, and may be absent (older checkpoints).
IDENTITY_PREFIX = "run."


def load(path, expected: dict) -> dict:
    """The arrays of `path`, validated against `expected` (a state_dict of the same config)."""
    identity = {k: v for k, v in expected.items() if k.startswith(IDENTITY_PREFIX)}
    with reading.open_regular(path, "checkpoint") as (f, _):
        try:
            with zipfile.ZipFile(f) as zf:
                arrays = _read_checked(zf, path, identity)
                for key in sorted(arrays):
                    got, want = _text(arrays[key]), _text(expected[key])
                    if got != want:
                        raise UserError(f"checkpoint {path} belongs to a run with {key[len(IDENTITY_PREFIX):]} "
                                        f"{got!r}, but the config says {want!r}")
                arrays.update(_read_checked(zf, path, {k: v for k, v in expected.items() if k not in identity}))
        except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as exc:
            raise UserError(f"checkpoint {path} is corrupted or not a neuromotor checkpoint ({exc})") from None
    missing = sorted(k for k in set(expected) - set(arrays) if not k.startswith(IDENTITY_PREFIX))
    if missing:
        raise UserError(f"checkpoint {path} lacks {', '.join(missing)}; it was written by another algorithm or version")
    return arrays


def _text(array) -> str:
    if array.dtype != np.uint8 or array.ndim != 1:
        return "?"
    return array.tobytes().decode("utf-8", "replace")


IDENTITY_LIMIT = 4096  # bytes of a "run.*" name


def _read_checked(zf, path, expected: dict) -> dict:
    """The members of the .npz `zf` that `expected` names, each read only after its header
    (shape, dtype) matches what is expected; identity members are short text."""
    arrays = {}
    for member in zf.namelist():
        key = member[:-4] if member.endswith(".npy") else member
        if key not in expected:
            continue  # never read: nothing the run uses
        with zf.open(member) as m:
            version = np.lib.format.read_magic(m)
            read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                           else np.lib.format.read_array_header_2_0)
            shape, fortran, dtype = read_header(m)
            want = np.asarray(expected[key])
            if key.startswith(IDENTITY_PREFIX):
                ok = dtype == np.uint8 and len(shape) == 1 and shape[0] <= IDENTITY_LIMIT
            else:
                ok = tuple(shape) == want.shape and dtype == want.dtype
            if not ok:
                raise UserError(f"checkpoint {path} does not match this configuration: {key} is "
                                f"{dtype}{list(shape)}, expected {want.dtype}{list(want.shape)} "
                                "(different network sizes, seeds or buffer?)")
        with zf.open(member) as m:
            arrays[key] = np.lib.format.read_array(m, allow_pickle=False)
    return arrays

"""Checkpoints: a flat dict of numpy arrays in one .npz, written atomically.

Written through neuromotor.safe_write (a temporary file in the same directory,
fsync'd, then os.replace()d over the old one), so a kill at any moment leaves
either the old or the new checkpoint.
Loaded with allow_pickle=False and checked against the arrays the running code
expects (names, shapes, dtypes) before anything is touched.
"""

import zipfile

import numpy as np

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
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except FileNotFoundError:
        raise UserError(f"no checkpoint at {path}") from None
    except IsADirectoryError:
        raise UserError(f"checkpoint {path} is a directory") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise UserError(f"checkpoint {path} is corrupted or not a neuromotor checkpoint ({exc})") from None
    for key in sorted(k for k in expected if k.startswith(IDENTITY_PREFIX)):
        if key not in arrays:
            continue
        got, want = _text(arrays[key]), _text(expected[key])
        if got != want:
            raise UserError(f"checkpoint {path} belongs to a run with {key[len(IDENTITY_PREFIX):]} {got!r}, "
                            f"but the config says {want!r}")
    missing = sorted(k for k in set(expected) - set(arrays) if not k.startswith(IDENTITY_PREFIX))
    if missing:
        raise UserError(f"checkpoint {path} lacks {', '.join(missing)}; it was written by another algorithm or version")
    for key, want in expected.items():
        if key.startswith(IDENTITY_PREFIX):
            continue
        want = np.asarray(want)
        got = arrays[key]
        if got.shape != want.shape or got.dtype != want.dtype:
            raise UserError(f"checkpoint {path} does not match this configuration: {key} is "
                            f"{got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)} "
                            "(different network sizes, seeds or buffer?)")
    return arrays


def _text(array) -> str:
    if array.dtype != np.uint8 or array.ndim != 1:
        return "?"
    return array.tobytes().decode("utf-8", "replace")

"""One way to read a host file: a regular file, of bounded size, parsed to a bounded depth.

Every file a user can hand the tool or leave in a run directory (a settings file, a run's
config, metrics, summary and checkpoint, a policy file, a sweep's plan) is read here, so

- a FIFO, a device, a socket or a directory is refused in one line, never waited on
  (the file is opened non-blocking, then checked with fstat);
- a file larger than its format allows is refused before a byte of it is read;
- text must be UTF-8, and JSON or TOML that nests deep enough to exhaust the parser's
  stack, or holds an integer too long to convert, is refused like any malformed file.

Every refusal is a UserError naming the file.
"""

import contextlib
import json
import os
import stat
import sys

from neuromotor.errors import UserError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

KIB, MIB = 1 << 10, 1 << 20
TEXT_LIMIT = 16 * MIB  # settings, configs, summaries, plans: far below this
MAX_DEPTH = 64  # nesting any file of the tool's needs is a handful of levels


@contextlib.contextmanager
def open_regular(path, what: str):
    """(binary file object, size) of `path`, which must be a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise UserError(f"cannot read {what} {os.fspath(path)}: no such file") from None
    except OSError as exc:
        raise UserError(f"cannot read {what} {os.fspath(path)}: {exc.strerror}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise UserError(f"{what} {os.fspath(path)} is {kind}")
    os.set_blocking(fd, True)
    with os.fdopen(fd, "rb") as f:
        yield f, st.st_size


def read_bytes(path, what: str, limit: int = TEXT_LIMIT) -> bytes:
    with open_regular(path, what) as (f, size):
        if size > limit:
            raise UserError(f"{what} {os.fspath(path)} is {size} bytes, more than the {limit} such a file can be")
        try:
            data = _read_up_to(f, size, limit + 1)
        except OSError as exc:
            raise UserError(f"cannot read {what} {os.fspath(path)}: {exc.strerror}") from None
    if len(data) > limit:
        raise UserError(f"{what} {os.fspath(path)} grew past {limit} bytes while it was read")
    return data


def _read_up_to(f, size: int, most: int) -> bytes:
    """At most `most` bytes of f, in pieces: a read of `most` at once would allocate all of it
    (hundreds of MiB for a metrics file's bound) however small the file is."""
    chunks, total, want = [], 0, size + 1  # one byte more shows whether it grew since fstat
    while total < most:
        chunk = f.read(min(want, most - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        want = MIB
    return b"".join(chunks)


def read_text(path, what: str, limit: int = TEXT_LIMIT) -> str:
    try:
        return read_bytes(path, what, limit).decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{what} {os.fspath(path)} is not UTF-8 text") from None


def too_deep(text: str) -> bool:
    return _depth(text) > MAX_DEPTH


def _depth(text: str) -> int:
    """The deepest bracket nesting of JSON or TOML text (brackets inside strings count too:
    a bound, not a parse)."""
    depth = deepest = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def parse_json(text: str, what: str):
    """The value of JSON `text`, or a UserError naming `what`."""
    if too_deep(text):
        raise UserError(f"{what} nests deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # ValueError: also an int past Python's digit limit
        raise UserError(f"malformed JSON in {what} ({str(exc).splitlines()[0][:120]})") from None


def parse_toml(text: str, what: str) -> dict:
    if too_deep(text):
        raise UserError(f"{what} nests deeper than {MAX_DEPTH} levels")
    try:
        return tomllib.loads(text)
    except (ValueError, RecursionError) as exc:  # TOMLDecodeError is a ValueError
        raise UserError(f"malformed TOML in {what} ({str(exc).splitlines()[0][:120]})") from None


def read_json(path, what: str, kind=dict, limit: int = TEXT_LIMIT):
    """The JSON value of file `path`, which must be a `kind` (dict, list)."""
    value = parse_json(read_text(path, what, limit), f"{what} {os.fspath(path)}")
    if not isinstance(value, kind):
        raise UserError(f"{what} {os.fspath(path)} holds a JSON {type(value).__name__}, not a {kind.__name__}")
    return value


def read_toml(path, what: str, limit: int = TEXT_LIMIT) -> dict:
    return parse_toml(read_text(path, what, limit), f"{what} {os.fspath(path)}")

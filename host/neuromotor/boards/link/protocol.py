"""NMB/1, the neuromotor bench protocol: line encoding shared with device/lib/nm_bench.py.

Every line, both directions:  ``@nm <seq> <word> [payload] ~<cksum>``  where
``cksum`` is the 16-bit sum of the UTF-8 bytes before `` ~``, as 4 hex digits.
Requests carry a command word; replies carry ``ok``/``err`` (and the board's
unsolicited lines ``ready``/``bye`` use seq ``-``). See docs/serial-protocol.md.
"""

from dataclasses import dataclass

PROTO = 1
PREFIX = "@nm"


def checksum(body: str) -> int:
    return sum(body.encode()) & 0xFFFF


def encode_line(seq, word: str, payload: str = "") -> bytes:
    body = f"{PREFIX} {seq} {word}"
    if payload != "":
        body += " " + payload
    return f"{body} ~{checksum(body):04x}\n".encode()


@dataclass
class Message:
    seq: str
    word: str
    payload: str


class BadLine(ValueError):
    """A line that carries the prefix but fails its checksum or is malformed."""


def decode_line(line) -> "Message | None":
    """A received line -> Message; None for lines that are not ours (boot
    banners, REPL output, noise); BadLine for our prefix with a bad checksum."""
    if isinstance(line, bytes):
        line = line.decode("utf-8", "replace")
    line = line.strip("\r\n\x00 ")
    j = line.rfind(PREFIX + " ")
    if j < 0:
        return None
    line = line[j:]
    i = line.rfind(" ~")
    if i < 0:
        raise BadLine(f"no checksum in {line!r}")
    body, ck = line[:i], line[i + 2:]
    try:
        good = int(ck, 16) == checksum(body)
    except ValueError:
        good = False
    if not good:
        raise BadLine(f"checksum mismatch in {line!r}")
    parts = body.split(" ", 3)
    if len(parts) < 3:
        raise BadLine(f"malformed line {line!r}")
    return Message(parts[1], parts[2], parts[3] if len(parts) > 3 else "")

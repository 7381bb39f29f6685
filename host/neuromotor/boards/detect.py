"""Which boards are there: USB serial ports matched by VID:PID, plus running emulated boards."""

from __future__ import annotations

from dataclasses import dataclass, field

from .descriptor import list_boards
from .emulated import running


@dataclass
class Detected:
    """A board neuromotor can talk to right now."""

    name: str               # board name; "a|b" when the VID:PID fits several boards
    port: str
    kind: str               # "serial" or "emulated"
    usb_id: str = ""        # "vvvv:pppp" for USB serial boards
    description: str = ""
    candidates: list = field(default_factory=list)
    pid: int | None = None  # QEMU's PID for emulated boards

    def get(self, key, default=None):  # dict-style access
        return getattr(self, key, default)


def usb_table(boards=None) -> dict:
    """{(vid, pid): [board names]} from the descriptors."""
    table: dict = {}
    for b in boards if boards is not None else list_boards():
        for vp in b.usb_ids:
            table.setdefault(vp, []).append(b.name)
    return table


def serial_ports(all_ports: bool = False, boards=None) -> list:
    """USB serial ports whose VID:PID belongs to a known board (all USB ports with all_ports)."""
    from serial.tools import list_ports

    table = usb_table(boards)
    out = []
    for info in sorted(list_ports.comports(), key=lambda i: i.device):
        if info.vid is None or info.pid is None:
            continue
        names = table.get((info.vid, info.pid), [])
        if not names and not all_ports:
            continue
        out.append(Detected(name="|".join(names) or "unknown", port=info.device, kind="serial",
                            usb_id=f"{info.vid:04x}:{info.pid:04x}",
                            description=" ".join(x for x in (info.manufacturer, info.product or info.description) if x),
                            candidates=names))
    return out


def emulated_ports() -> list:
    return [Detected(name=b.name, port=b.port, kind="emulated", description=f"QEMU pid {b.pid}",
                     candidates=[b.name], pid=b.pid) for b in running()]


def detect(all_ports: bool = False) -> list:
    """Serial boards (by USB VID:PID) followed by running emulated boards."""
    return serial_ports(all_ports) + emulated_ports()

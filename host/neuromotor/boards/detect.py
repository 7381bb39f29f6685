"""Which boards are there: USB serial ports matched by VID:PID, plus running emulated boards.

Both kinds answer to one small protocol, `ConnectedBoard` (name, port, kind), so
`--port auto`, bench and HIL treat a USB board and a QEMU alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from .descriptor import list_boards
from .emulated import running


class ConnectedBoard(Protocol):
    """A board neuromotor can talk to right now: a `UsbBoard` or an `emulated.QemuInstance`."""

    @property
    def name(self) -> str: ...   # board name; "a|b" when a USB VID:PID fits several boards

    @property
    def port(self) -> str: ...   # serial device or QEMU's pty

    @property
    def kind(self) -> str: ...   # "serial" or "emulated"


@dataclass
class UsbBoard:
    """A USB serial port whose VID:PID belongs to a known board (or any, with all_ports)."""

    name: str
    port: str
    usb_id: str             # "vvvv:pppp"
    description: str = ""
    candidates: list = field(default_factory=list)
    kind: str = field(default="serial", init=False)


def usb_table(boards=None) -> dict:
    """{(vid, pid): [board names]} from the descriptors."""
    table: dict = {}
    for b in boards if boards is not None else list_boards():
        for vp in b.usb_ids:
            table.setdefault(vp, []).append(b.name)
    return table


def serial_ports(all_ports: bool = False, boards=None) -> list[UsbBoard]:
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
        out.append(UsbBoard(name="|".join(names) or "unknown", port=info.device,
                            usb_id=f"{info.vid:04x}:{info.pid:04x}",
                            description=" ".join(x for x in (info.manufacturer, info.product or info.description) if x),
                            candidates=names))
    return out


def detect(all_ports: bool = False) -> list[ConnectedBoard]:
    """Serial boards (by USB VID:PID) followed by running emulated boards."""
    return [*serial_ports(all_ports), *running()]

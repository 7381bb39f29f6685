"""Serial side of neuromotor: the NMB/1 line protocol (bench + HIL) and port selection."""

from neuromotor.serial.client import BenchClient, ProtocolError, ServerError
from neuromotor.serial.protocol import PROTO
from neuromotor.serial.ports import resolve_port, resolve_ports

__all__ = ["BenchClient", "ProtocolError", "ServerError", "PROTO", "resolve_port", "resolve_ports"]

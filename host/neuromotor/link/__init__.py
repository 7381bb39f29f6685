"""The host end of the NMB/1 link to a board: the line protocol, its client and port selection."""

from neuromotor.link.client import BenchClient, ProtocolError, ServerError
from neuromotor.link.protocol import PROTO
from neuromotor.link.ports import resolve_port, resolve_ports

__all__ = ["BenchClient", "ProtocolError", "ServerError", "PROTO", "resolve_port", "resolve_ports"]

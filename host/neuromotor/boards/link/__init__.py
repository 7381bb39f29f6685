"""The host end of the NMB/1 link to a board: the line protocol, its client and port selection."""

from neuromotor.boards.link.client import LinkClient, ProtocolError, ServerError
from neuromotor.boards.link.protocol import PROTO
from neuromotor.boards.link.ports import resolve_port, resolve_ports

__all__ = ["LinkClient", "ProtocolError", "ServerError", "PROTO", "resolve_port", "resolve_ports"]

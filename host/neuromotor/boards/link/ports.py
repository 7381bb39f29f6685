"""`--port auto`: the single board that is connected or running.

Detection itself (USB VID:PID of known boards, running emulated boards and
their ptys) belongs to neuromotor.boards; this module only turns its answer
into one port or a clear error.
"""

from neuromotor import boards
from neuromotor.errors import UserError


def detected_ports():
    """[(port, label)] of boards neuromotor.boards can see right now."""
    return [(b.port, b.name) for b in boards.detect()]


def resolve_port(port: str) -> str:
    if port != "auto":
        return port
    found = detected_ports()
    if not found:
        raise UserError("--port auto: no board found (no known USB serial board connected and no "
                        "emulated board running; try `neuromotor board start qemu-m7`)")
    if len(found) > 1:
        listing = ", ".join(f"{label} on {p}" for p, label in found)
        raise UserError(f"--port auto: several boards found ({listing}); choose one with --port")
    return found[0][0]


def resolve_ports(ports) -> list:
    ports = list(ports or ["auto"])
    if len(ports) == 1:
        return [resolve_port(ports[0])]
    if "auto" in ports:
        raise UserError("--port auto cannot be combined with other --port values")
    return ports


def board_for_port(port: str) -> "boards.ConnectedBoard | None":
    """The detected board on a port (None if unknown): tells emulated boards apart."""
    return next((b for b in boards.detect() if b.port == port), None)

"""Boards: descriptors (boards/<name>/board.toml), USB detection, emulated boards in QEMU.

    from neuromotor import boards
    b = boards.start("qemu-m7")      # QEMU -icount shift=0 on a pty; b.port, b.pid
    ...
    b.stop()                          # or boards.stop("qemu-m7"): ends exactly that PID
    boards.detect()                   # [ConnectedBoard (name, port, kind)]: USB boards + running QEMUs
"""

from .descriptor import CORE_ARCHS, NATMOD_ARCHS, BoardDescriptor, board_names, list_boards, load_board
from .detect import ConnectedBoard, UsbBoard, detect, serial_ports, usb_table
from .emulated import (QemuInstance, build_firmware, clean_stale, firmware_path, get, qemu_command,
                       reset, running, stale, start, state_dir, stop)
from .validate import validate_board

__all__ = [
    "CORE_ARCHS", "NATMOD_ARCHS", "BoardDescriptor", "board_names", "list_boards", "load_board", "validate_board",
    "ConnectedBoard", "UsbBoard", "detect", "serial_ports", "usb_table",
    "QemuInstance", "build_firmware", "clean_stale", "firmware_path", "get", "qemu_command", "reset",
    "running", "stale", "start", "state_dir", "stop",
]

"""`neuromotor boards`: serial boards found by USB VID:PID, plus running emulated boards."""

import json
import time

from neuromotor import api


def register(sub):
    p = sub.add_parser("boards", help="list connected serial boards (USB VID:PID) and running emulated boards",
                       description="Serial boards found by their USB VID:PID (from boards/*/board.toml) "
                       "and emulated boards started with `neuromotor board start`.")
    p.add_argument("--all", action="store_true", help="also list USB serial ports of unknown boards")
    p.add_argument("--known", action="store_true", help="list the board descriptors instead")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.set_defaults(func=run)


def _known(args) -> int:
    rows = api.known_boards()
    if args.json:
        for r in rows:
            print(json.dumps(r))
        return 0
    print(f"{'board':<10} {'kind':<9} {'core':<11} {'MHz':>6} {'natmod':<10} usb ids")
    for r in rows:
        print(f"{r['board']:<10} {r['kind']:<9} {r['core']:<11} {r['clock_mhz']:>6.0f} {r['natmod_arch']:<10} {r['usb']}")
    return 0


def run(args) -> int:
    if args.known:
        return _known(args)
    found = api.connected_boards(all_ports=args.all)
    emu, stale = api.running_boards(clean=True)
    if args.json:
        for d in found:
            print(json.dumps({"kind": "serial", "board": d.name, "port": d.port, "usb_id": d.usb_id,
                              "description": d.description}))
        for e in emu:
            print(json.dumps({"kind": "emulated", "board": e.name, "instance": e.instance, "port": e.port,
                              "pid": e.pid, "firmware": e.firmware}))
        return 0
    if not found and not emu:
        print("no boards: connect one over USB, or `neuromotor board start qemu-m7`")
    if found:
        print("serial boards")
        print(f"  {'port':<16} {'usb id':<10} {'board':<18} description")
        for d in found:
            print(f"  {d.port:<16} {d.usb_id:<10} {d.name:<18} {d.description}")
    if emu:
        print("emulated boards")
        print(f"  {'port':<16} {'instance':<18} {'board':<10} {'pid':>7}  up")
        for e in emu:
            up = time.time() - e.started
            print(f"  {e.port:<16} {e.instance:<18} {e.name:<10} {e.pid:>7}  {up:.0f}s")
    for f in stale:
        print(f"(removed stale record {f.name}: its QEMU process is gone)")
    return 0

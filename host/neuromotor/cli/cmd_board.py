"""`neuromotor board start|stop|reset|build|baremetal|pio|check`: emulated boards, bare-metal runs, descriptors."""

import argparse
import signal
import sys

from neuromotor import api
from neuromotor.cli import checks, json_line
from neuromotor.errors import UserError


def register(sub):
    p = sub.add_parser("board", help="start/stop/reset/build an emulated board; check descriptors",
                       description="Emulated boards run in QEMU with -icount shift=0 and their UART on a "
                       "pty. `board start` prints the pty; `board stop` ends exactly the QEMU it started.")
    bsub = p.add_subparsers(dest="action", metavar="<action>")
    s = bsub.add_parser("start", help="start an emulated board and print its port (a pty)")
    s.add_argument("name", help="emulated board, e.g. qemu-m7, qemu-m4f, qemu-rv32, qemu-xtensa")
    s.add_argument("--instance", help="record it under this name (to run a second copy)")
    s.add_argument("--firmware", help="firmware ELF (default: the one `board build` makes)")
    s.add_argument("--build", action="store_true", help="build the firmware first if it is missing")
    s.add_argument("--cycles", action="store_true", help="run under the cycle model (QEMU plugin): "
                   "`neuromotor bench` then reports modelled cycles and µs at real boards' clocks")
    s.set_defaults(func=start)
    t = bsub.add_parser("stop", help="stop an emulated board started with `board start`")
    t.add_argument("name", nargs="?", help="instance (board name unless --instance was given)")
    t.add_argument("--all", action="store_true", help="stop every emulated board neuromotor started")
    t.set_defaults(func=stop)
    r = bsub.add_parser("reset", help="hardware-reset an emulated board (RAM and its filesystem are kept)")
    r.add_argument("name")
    r.set_defaults(func=reset)
    b = bsub.add_parser("build", help="build the firmware of an emulated board (make firmware BOARD=...)")
    b.add_argument("name")
    b.add_argument("-j", "--jobs", type=int, default=2)
    b.set_defaults(func=build)
    m = bsub.add_parser("baremetal", help="run our kernel as a bare-metal program on an emulated board "
                        "(the limit MicroPython's overhead is measured against)")
    m.add_argument("name", nargs="?", default="qemu-m7", help="qemu-m7 (default) or qemu-m4f")
    m.add_argument("--sizes", default="13,64,64,4", help="layer sizes (default 13,64,64,4)")
    m.add_argument("--acts", help="activations per layer, e.g. relu,relu,tanh (default relu..., identity)")
    m.add_argument("--repeat", type=int, default=200, help="inferences timed (default 200)")
    m.add_argument("--json", action="store_true", help="print one JSON object")
    m.set_defaults(func=baremetal)
    o = bsub.add_parser("pio", help="run PlatformIO offline on the bare-metal project (device/baremetal)",
                        description="Runs `pio` with this project's offline setup: its core directory in the "
                        "build cache, tool-scons from PyPI's scons, builds outside the source tree. "
                        "Example: `neuromotor board pio run -d device/baremetal -e qemu-m7 -t exec`.")
    o.add_argument("pio_args", nargs=argparse.REMAINDER, help="arguments for pio (run, test, ...)")
    o.set_defaults(func=pio)
    c = bsub.add_parser("check", help="check board descriptors and their files for consistency")
    c.add_argument("name", nargs="*", help="boards to check (default: all)")
    c.set_defaults(func=check)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def start(args) -> int:
    checks.board_name("name", args.name)
    if args.instance is not None:
        checks.name("--instance", args.instance)
    if args.firmware is not None:
        checks.elf_file("--firmware", args.firmware)
    previous = signal.signal(signal.SIGTERM, _interrupted)
    try:
        b = api.start_board(args.name, instance=args.instance, firmware=args.firmware, build=args.build,
                            cycles=args.cycles, detach=True).record
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(f"{b.instance}: QEMU pid {b.pid}, -icount shift=0; stop with `neuromotor board stop {b.instance}`",
          file=sys.stderr)
    print(b.port)
    return 0


def _interrupted(signum, frame):
    # as Ctrl-C: the start unwinds and stops the QEMU it started (SIGTERM's default would leave it)
    raise KeyboardInterrupt


def stop(args) -> int:
    if args.all:
        names = [b.instance for b in api.running_boards()]
    elif args.name is not None:
        names = [checks.name("name", args.name)]
    else:
        raise UserError("board stop: name a board (or --all)")
    status = 0
    for n in names:
        if api.stop_board(n):
            print(f"{n}: stopped")
        else:
            print(f"{n}: not running", file=sys.stderr)
            status = 1 if not args.all else status
    return status


def reset(args) -> int:
    checks.name("name", args.name)
    api.reset_board(args.name)
    print(f"{args.name}: reset")
    return 0


def build(args) -> int:
    checks.board_name("name", args.name)
    checks.int_range("-j", args.jobs, 1, 256)
    fw = api.build_firmware(args.name, jobs=args.jobs)
    print(fw)
    return 0


def baremetal(args) -> int:
    checks.board_name("name", args.name)
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
    except ValueError:
        raise UserError(f"--sizes {args.sizes!r}: give layer sizes like 13,64,64,4") from None
    if len(sizes) < 2 or not all(1 <= n <= 4096 for n in sizes):
        raise UserError(f"--sizes {args.sizes!r}: at least two layer sizes, each from 1 to 4096")
    acts = args.acts.split(",") if args.acts is not None else None
    if acts is not None and (len(acts) != len(sizes) - 1
                             or not set(acts) <= {"relu", "tanh", "identity"}):
        raise UserError(f"--acts {args.acts!r}: one of relu, tanh, identity per layer ({len(sizes) - 1})")
    checks.int_range("--repeat", args.repeat, 1, 10**6)
    r = api.run_baremetal(args.name, sizes, acts, args.repeat)
    if args.json:
        print(json_line(r))
        return 0
    print(f"{args.name} bare metal, {'->'.join(map(str, sizes))}, {r['macs']} multiply-adds, {r['repeat']} runs")
    print(f"  {r['instructions_per_inference']:.0f} instructions per inference, "
          f"{r['instructions_per_mac']:.2f} per multiply-add (instruction-count time, -icount shift=0)")
    print(f"  {r['cycles_per_inference']:.0f} cycles per inference, {r['cycles_per_mac']:.2f} per multiply-add "
          f"({r['core']} cycle model)")
    g = r.get("generic")
    if g:
        print(f"  generic nested loops: {g['instructions']:.0f} instructions, {g['cycles']:.0f} cycles, "
              f"{g['cycles_per_mac']:.2f} per multiply-add")
    for name, p in r["predicted"].items():
        gen = f", generic {g['predicted'][name]['us']:.1f} µs" if g else ""
        print(f"  predicted on {name} ({p['clock_mhz']:.0f} MHz): {p['us']:.1f} µs{gen}")
    print(f"  max |error| vs naive C reference: {r['max_abs_err']:.2e}")
    return 0


PIO_COMMANDS = ("run", "test", "check", "ci", "debug", "device", "pkg", "project", "boards", "settings", "system")


def pio(args) -> int:
    if not args.pio_args or args.pio_args[0] not in PIO_COMMANDS:
        raise UserError(f"board pio: give a pio command ({', '.join(PIO_COMMANDS)}) and its arguments, "
                        "e.g. run -d device/baremetal -e qemu-m7 -t exec")
    return api.pio(args.pio_args)


def check(args) -> int:
    names = [checks.board_name("name", n) for n in args.name]
    bad = 0
    for n, problems in api.check_boards(names).items():
        print(f"{n}: {'ok' if not problems else 'PROBLEMS'}")
        for pr in problems:
            print(f"  - {pr}")
        bad += bool(problems)
    return 1 if bad else 0

"""The `neuromotor` command: one subcommand per module named `cmd_*` in this package.

Each such module defines `register(subparsers)`, which adds its parser and sets
`func` (taking the parsed args, returning an exit status) as a default.
"""

import argparse
import importlib
import pkgutil
import sys

from neuromotor import __version__
from neuromotor.errors import UserError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="neuromotor",
        description="Reinforcement learning for microcontrollers: train on the host, "
        "export, deploy to a MicroPython board, benchmark over serial.",
        epilog="Run `neuromotor <command> --help` for the options of one command.",
    )
    parser.add_argument("--version", action="version", version=f"neuromotor {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="<command>")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("cmd_"):
            importlib.import_module(f"{__name__}.{info.name}").register(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"neuromotor: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("neuromotor: interrupted", file=sys.stderr)
        return 130

"""The `neuromotor` command: one subcommand per module named `cmd_*` in this package.

Each such module defines `register(subparsers)`, which adds its parser and sets
`func` (taking the parsed args, returning an exit status) as a default.
"""

import argparse
import importlib
import json
import math
import os
import pkgutil
import sys

from neuromotor import __version__, interrupts
from neuromotor.errors import UserError


def json_line(obj) -> str:
    """One line of strict JSON: NaN and infinities (which json.dumps writes as bare NaN,
    Infinity) become null, so every `--json` line parses anywhere."""
    def clean(x):
        if isinstance(x, float) and not math.isfinite(x):
            return None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        return x
    return json.dumps(clean(obj), allow_nan=False)


def shown_path(path, limit: int = 200) -> str:
    """A path as one printable line: undecodable bytes escaped, a very long one shortened."""
    text = os.fsencode(path).decode("utf-8", "backslashreplace")
    return text if len(text) <= limit else f"{text[:limit // 2]}...{text[-limit // 2:]}"


class _Parser(argparse.ArgumentParser):
    """argparse with its errors on one line, like every other refusal (no usage block)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}{self._did_you_mean(message)} (see {self.prog} --help)\n")

    def _did_you_mean(self, message) -> str:
        """"; did you mean X?" after an invalid choice (a command or an option's value) close to a valid one."""
        import difflib
        import re

        m = re.match(r"argument (.+?): invalid choice: '(.*?)' \(", message)
        if not m:
            return ""
        choices = [c for a in self._actions if a.choices and argparse._get_action_name(a) == m.group(1)
                   for c in a.choices]
        close = difflib.get_close_matches(m.group(2), [c for c in choices if isinstance(c, str)], n=1)
        return f"; did you mean {close[0]}?" if close else ""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="neuromotor",
        description="Reinforcement learning for microcontrollers: train on the host, "
        "export, deploy to a MicroPython board, benchmark over serial.",
        epilog="Run `neuromotor <command> --help` for the options of one command.",
    )
    parser.add_argument("--version", action="version", version=f"neuromotor {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="<command>", parser_class=_Parser)
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("cmd_"):
            importlib.import_module(f"{__name__}.{info.name}").register(sub)
    return parser


def main(argv=None) -> int:
    interrupts.install()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version or a usage error: its status, as a return value
        return exc.code if isinstance(exc.code, int) else 2
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"neuromotor: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # the file system's refusal (a name too long, a full disk, ...): in one line
        name = "" if exc.filename is None else f"{shown_path(exc.filename)}: "
        print(f"neuromotor: error: {name}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except MemoryError as exc:  # past the memory check (ulimit -v, an estimate that fell short)
        need = f" ({str(exc).splitlines()[0][:200]})" if str(exc) else ""
        print(f"neuromotor: error: out of memory{need}; use fewer seeds or smaller buffers, batches or networks, "
              "or raise the memory limit (ulimit -v)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("neuromotor: interrupted", file=sys.stderr)
        return 130

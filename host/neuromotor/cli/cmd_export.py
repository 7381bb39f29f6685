"""`neuromotor export RUN -o policy.nmp` (or `--format c-header -o policy.h`, `--format platformio -o DIR`)."""

import os
from pathlib import Path

from neuromotor.cli import checks
from neuromotor.safe_write import check_target


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "export",
        help="write a trained policy as a device policy file or a C header",
        description="Export the policy of a run directory (or convert an existing .nmp file) "
        "to the device policy file format (docs/policy-format.md) or to a C header.",
    )
    p.add_argument("run", help="run directory (from `neuromotor train`) or an existing .nmp policy file")
    p.add_argument("-o", "--output", required=True,
                   help="output path, written atomically; it must be a regular file or new (a symlink to a "
                   "regular file is written through) and never the source or a run's own files")
    p.add_argument("--format", choices=("nmp", "c-header", "platformio"), default=None,
                   help="output format (default: c-header for *.h, else nmp); platformio: -o is a directory "
                   "that gets a PlatformIO project for the real boards around the C header")
    p.add_argument("--agent", type=int, default=0, help="which agent of a multi-agent run (default 0)")
    p.set_defaults(func=run)


def _protected(source: str, output: str) -> list:
    """What an export must never replace: its source, and the files of any run directory."""
    from neuromotor.runs import ADDED_FILES, CONFIG, LOCK, OWN_FILES

    names = OWN_FILES + ADDED_FILES + (LOCK,)  # ADDED_FILES: the board's own policy file of a run
    src = Path(source)
    paths = [src] if src.is_file() else [src / name for name in names]
    out_dir = Path(os.path.realpath(output)).parent if output else None
    if out_dir is not None and (out_dir / CONFIG).is_file():
        paths += [out_dir / name for name in names]
    return paths


def run(args) -> int:
    from neuromotor.export import write_c_header, write_policy
    from neuromotor.runs import load_spec

    # Checked before the (slow) load; the resolved target makes a symlink write through.
    checks.source("source", args.run)
    checks.int_range("--agent", args.agent, 0)
    if args.format == "platformio":
        from neuromotor.export.platformio import check_project_dir, write_platformio_project

        check_project_dir(args.output)
        spec = load_spec(args.run, args.agent)
        out = write_platformio_project(spec, args.output)
        print(f"wrote the PlatformIO project {out} (network {' -> '.join(str(s) for s in spec.sizes)}; "
              f"environments teensy41, esp32, esp32c3, stm32f405, stm32h743)")
        return 0
    target = check_target(args.output, protected=_protected(args.run, args.output))
    spec = load_spec(args.run, args.agent)
    fmt = args.format or ("c-header" if args.output.endswith(".h") else "nmp")
    (write_c_header if fmt == "c-header" else write_policy)(spec, target)
    print(f"wrote {args.output} ({fmt}, network {' -> '.join(str(s) for s in spec.sizes)}, "
          f"{', '.join(spec.activations)})")
    return 0

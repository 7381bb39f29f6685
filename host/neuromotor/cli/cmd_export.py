"""`neuromotor export RUN -o policy.nmp` (or `--format c-header -o policy.h`)."""

from pathlib import Path

from neuromotor.errors import UserError


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "export",
        help="write a trained policy as a device policy file or a C header",
        description="Export the policy of a run directory (or convert an existing .nmp file) "
        "to the device policy file format (docs/policy-format.md) or to a C header.",
    )
    p.add_argument("run", help="run directory (from `neuromotor train`) or an existing .nmp policy file")
    p.add_argument("-o", "--output", required=True, help="output path (written atomically)")
    p.add_argument("--format", choices=("nmp", "c-header"), default=None,
                   help="output format (default: c-header for *.h, else nmp)")
    p.add_argument("--agent", type=int, default=0, help="which agent of a multi-agent run (default 0)")
    p.set_defaults(func=run)


def load_spec(source: str, agent: int = 0):
    from neuromotor.export.policy_file import read_policy

    path = Path(source)
    if path.is_file():
        return read_policy(path)
    if not path.is_dir():
        raise UserError(f"{source}: no such run directory or policy file")
    try:
        from neuromotor.runs import load_policy_spec
    except ImportError as exc:
        raise UserError(f"cannot read run directories in this installation ({exc})") from exc
    return load_policy_spec(path, agent=agent)


def run(args) -> int:
    from neuromotor.export import write_c_header, write_policy

    spec = load_spec(args.run, args.agent)
    fmt = args.format or ("c-header" if args.output.endswith(".h") else "nmp")
    out = (write_c_header if fmt == "c-header" else write_policy)(spec, args.output)
    print(f"wrote {out} ({fmt}, network {' -> '.join(str(s) for s in spec.sizes)}, "
          f"{', '.join(spec.activations)})")
    return 0

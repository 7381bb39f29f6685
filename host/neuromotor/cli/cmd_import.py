"""`neuromotor import FILE -o policy.nmp`: a policy trained elsewhere (ONNX, RLtools HDF5) as a
policy file."""

import math

from neuromotor import api
from neuromotor.cli import checks, json_line
from neuromotor.errors import UserError


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "import",
        help="turn a policy trained elsewhere (ONNX, RLtools HDF5) into a device policy file",
        description="Read an actor from another framework's file and write it as a neuromotor policy file "
        "(docs/policy-format.md; GRU layers, sigmoid and fast_tanh make it version 4). What the file does not "
        "hold comes from the options: the observation normalisation, and the action bounds (every policy file "
        "clamps its actions); an actor ending in tanh without its own action map is rescaled from [-1, 1] to "
        "the bounds, as Stable-Baselines3 does. The report says where each part came from. An operator or "
        "layer the boards cannot run is refused in one line, and nothing is written.",
    )
    p.add_argument("file", help="the file to read")
    p.add_argument("-o", "--output", required=True, help="the policy file to write (atomically)")
    p.add_argument("--format", choices=[f.name for f in api.policy_formats("import")], default=None,
                   help="the file's format (default: by its suffix): " + "; ".join(f.describe() for f in api.policy_formats("import")))
    p.add_argument("--obs-mean", metavar="NUMBERS", help="observation mean, comma-separated (one number: for "
                   "all); default 0, or the file's")
    p.add_argument("--obs-std", metavar="NUMBERS", help="observation standard deviation, the same way; "
                   "default 1, or the file's")
    p.add_argument("--action-low", metavar="NUMBERS", help="lower action bounds, comma-separated (one: for all)")
    p.add_argument("--action-high", metavar="NUMBERS", help="upper action bounds, the same way")
    p.add_argument("--env", default=None, help="take the action bounds of this environment (and check its "
                   "observation and action sizes); recorded as the policy's env")
    p.add_argument("--env-kwargs", metavar="TABLE", help="with --env: its keyword arguments (JSON or TOML "
                   "inline table)")
    p.add_argument("--json", action="store_true", help="end with one JSON line describing the import")
    p.set_defaults(func=run)


def _numbers(option: str, text):
    if text is None:
        return None
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise UserError(f"{option} takes comma-separated numbers, got {text!r}") from None
    if not all(math.isfinite(v) for v in values):
        raise UserError(f"{option} must be finite numbers, got {text!r}")
    return values


def run(args) -> int:
    env_kwargs = checks.env_override(args.env, args.env_kwargs)
    spec = api.import_policy(args.file, args.output, format=args.format,
                             obs_mean=_numbers("--obs-mean", args.obs_mean), obs_std=_numbers("--obs-std", args.obs_std),
                             action_low=_numbers("--action-low", args.action_low),
                             action_high=_numbers("--action-high", args.action_high),
                             env=args.env, env_kwargs=env_kwargs)
    report = spec.meta["import"]
    layers = ", ".join(f"{k} {a}" if k == "dense" else k for k, a in zip(spec.kinds, spec.activations))
    print(f"read {args.file} ({report['format']}): network {' -> '.join(str(s) for s in spec.sizes)} ({layers})"
          + (f", recurrent state of {spec.state_size}" if spec.recurrent else ""))
    if "example_max_abs_diff" in report:
        print(f"the checkpoint's own example ({report['example_steps']} steps x {report['example_batch']}) "
              f"reproduced: max |difference| {report['example_max_abs_diff']:.2g}")
    print(f"{'part':<14} from")
    for part, source in report["sources"].items():
        print(f"{part:<14} {source}")
    print(f"wrote {args.output} ({report['bytes']} bytes)")
    if args.json:
        print(json_line(report))
    return 0

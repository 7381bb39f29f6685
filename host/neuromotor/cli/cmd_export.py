"""`neuromotor export RUN -o policy.nmp` (or `--format c-header -o policy.h`, `--format platformio -o DIR`;
`--quantize int8` for an integer policy)."""

import json
import os

from neuromotor import api
from neuromotor.cli import checks
from neuromotor.errors import UserError
from neuromotor.limits import MAX_FINETUNE_STEPS


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "export",
        help="write a trained policy as a device policy file or a C header",
        description="Export the policy of a run directory (or convert an existing .nmp file) "
        "to the device policy file format (docs/policy-format.md) or to a C header. "
        "Writing next to the run's checkpoint (`export runs/x -o runs/x/policy.nmp`) is the usual place; "
        "what a run needs is never replaced: its config.json, checkpoint.npz, metrics.jsonl, summary.json, "
        "learning_curve.png, .lock, on_device.json, and the policy.nmp a board wrote in train-on-device.",
    )
    p.add_argument("run", help="run directory (from `neuromotor train`; on an env that judges success its policy is "
                   "its best evaluation's, best.npz, and RUN/checkpoint.npz names the last state), a distillation's "
                   "directory (from `neuromotor distil`: its student) or an existing .nmp policy file")
    p.add_argument("-o", "--output", required=True,
                   help="output path, written atomically; it must be a regular file or new (a symlink to a "
                   "regular file is written through) and never the source or a file the run needs (see above)")
    p.add_argument("--format", choices=[f.name for f in api.policy_formats("export")], default=None,
                   help="output format (default: by -o's suffix, else nmp): " + "; ".join(f.describe() for f in api.policy_formats("export")))
    p.add_argument("--agent", type=int, default=0, help="which agent of a multi-agent run (default 0)")
    p.add_argument("--quantize", choices=("int8",), default=None,
                   help="int8: integer weights and activations (docs/policy-format.md, version 3; with GRU layers "
                   "version 4, the state in integers too), calibrated on rollouts of the run's env and fitted "
                   "there to act like the float policy (a recurrent policy: fine-tuned along whole "
                   "episodes, through time); refused "
                   "when its actions are too far from the float policy's (--max-error) or, on an env that "
                   "judges success (the quadrotor), when it succeeds in more than 2 fewer of 100 held-out "
                   "episodes than the float policy")
    p.add_argument("--max-error", type=float, default=None,
                   help="largest allowed |int8 action - float action| on held-out rollout observations, as a "
                   "fraction of each dimension's action range (default 0.02; on an env that judges success, "
                   "giving it replaces the success check with this one)")
    p.add_argument("--calibration", type=int, default=2000,
                   help="rollout observations the activation scales are calibrated on (default 2000)")
    p.add_argument("--heldout", type=int, default=2000,
                   help="held-out rollout observations (other episodes) the action error is measured on "
                   "(default 2000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the calibration episodes (default 0)")
    p.add_argument("--finetune-steps", type=int, default=None,
                   help="steps of the int8 fine-tune that fits the integer weights to the float policy's "
                   "actions on the calibration observations (default 100, a recurrent policy's 300; 0: "
                   "error-compensated rounding only, a recurrent policy's plain rounding)")
    p.add_argument("--json", action="store_true", help="end with one JSON line describing the export")
    p.set_defaults(func=run)


def run(args) -> int:
    # Checked before the (slow) load, under the options' own names.
    checks.source("source", args.run)
    checks.int_range("--agent", args.agent, 0)
    checks.int_range("--calibration", args.calibration, 1)
    checks.int_range("--heldout", args.heldout, 1)
    checks.int_range("--seed", args.seed, 0, 2**32 - 1)
    if args.finetune_steps is not None:
        checks.int_range("--finetune-steps", args.finetune_steps, 0, MAX_FINETUNE_STEPS)
    if args.quantize:
        if args.max_error is not None and not 0 < args.max_error < float("inf"):
            raise UserError(f"--max-error must be a fraction > 0 of the action range, got {args.max_error}")
        fmt = api.policy_format("export", args.format, args.output)
        if not fmt.int8:
            raise UserError(f"--quantize int8 writes a policy file or a C header, not {fmt.name}")
    elif args.max_error is not None or args.finetune_steps is not None:
        raise UserError(f"--{'max-error' if args.max_error is not None else 'finetune-steps'} applies to "
                        "--quantize int8 only")
    out, spec, report = api.export(args.run, args.output, args.format, args.agent, args.quantize,
                                   args.max_error, args.calibration, args.heldout, args.seed, args.finetune_steps,
                                   progress=False if args.json else None)
    fmt = api.policy_format("export", args.format, args.output)
    if fmt.summary is not None:
        print(fmt.summary(out, spec))
        if fmt.directory:
            return 0
    target = os.path.realpath(out)
    if report.get("rounding") == "plain":
        print(f"int8: calibrated on {report['calibration_obs']} steps of whole episodes (each GRU state following "
              f"its own inputs), weights rounded plainly: max action error {100 * report['max_error_frac']:.2f}% of "
              f"the action range ({report['max_error']:.4g}), mean {100 * report['mean_error_frac']:.3f}% over "
              f"{report['heldout_obs']} steps of held-out episodes")
    elif report.get("rounding") == "through time":
        print(f"int8: calibrated on {report['calibration_obs']} steps of whole episodes (each GRU state following "
              f"its own inputs), fine-tuned {report['finetune_steps']} steps through time (kept step "
              f"{report['finetune_kept_step']}): max action error {100 * report['max_error_frac_before']:.2f}% -> "
              f"{100 * report['max_error_frac']:.2f}% of the action range, mean "
              f"{100 * report['mean_error_frac_before']:.3f}% -> {100 * report['mean_error_frac']:.3f}% over "
              f"{report['heldout_obs']} steps of held-out episodes (before: plain rounding)")
    elif report:
        print(f"int8: calibrated on {report['calibration_obs']} rollout observations, weights rounded with error "
              f"compensation and fine-tuned {report['finetune_steps']} steps (kept step "
              f"{report['finetune_kept_step']}): max action error {100 * report['max_error_frac_before']:.2f}% -> "
              f"{100 * report['max_error_frac']:.2f}% of the action range ({report['max_error_before']:.4g} -> "
              f"{report['max_error']:.4g}), mean {100 * report['mean_error_frac_before']:.3f}% -> "
              f"{100 * report['mean_error_frac']:.3f}% on {report['heldout_obs']} held-out observations "
              "(before: plain rounding)")
    if report.get("contract") == "success":
        print(f"int8: succeeds in {100 * report['int8_success']:.0f}% of {report['success_episodes']} held-out "
                  f"episodes, the float policy in {100 * report['float_success']:.0f}% (the contract on this env)")
    dtype = getattr(spec, "dtype", "float32")
    if fmt.summary is None:
        print(f"wrote {args.output} ({fmt.name}, {dtype}, network {' -> '.join(str(s) for s in spec.sizes)}, "
              f"{', '.join(k if k != 'dense' else a for k, a in zip(spec.kinds, spec.activations))}, "
              f"{os.path.getsize(target)} bytes)")
    if args.json:
        print(json.dumps({"output": args.output, "format": fmt.name, "dtype": dtype, "sizes": spec.sizes,
                          "bytes": os.path.getsize(target), **report}))
    return 0

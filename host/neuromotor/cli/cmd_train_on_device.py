"""`neuromotor train-on-device`: TD3 on the board itself (pendulum swing-up)."""

from neuromotor.cli import checks, json_line
from neuromotor.errors import UserError


def register(sub):
    p = sub.add_parser("train-on-device", help="train a pendulum policy with TD3 on the board itself",
                       description="Uploads the trainer (device/lib + natmods), trains on the board "
                       "(progress over serial, NMB/1), brings the policy back and writes a run directory "
                       "that eval, export and hil accept.")
    p.add_argument("--port", default="auto", help="serial port, or auto (a detected board or a running emulated one)")
    p.add_argument("--profile", default="teensy41", help="teensy41 (64x64, replay 10000, batch 100) or small "
                   "(32x32, replay 800, batch 32)")
    p.add_argument("--steps", type=int, default=10000, help="environment steps (default 10000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--every", type=int, help="progress line every N steps")
    p.add_argument("--eval-episodes", type=int, default=10)
    p.add_argument("--run-dir", type=checks.nonempty_path)
    p.add_argument("--force", action="store_true", help="overwrite an existing run directory")
    p.add_argument("--no-upload", action="store_true", help="the trainer is already on the board")
    p.add_argument("--json", action="store_true", help="print one final JSON line (as train --json)")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=run)


def _resolve_port(port: str) -> str:
    from neuromotor.boards.link.ports import resolve_port
    return resolve_port(port)


def run(args) -> int:
    from neuromotor.training import runs
    from neuromotor.boards.ondevice import BoardResetError, train_on_device
    from neuromotor.boards.ondevice.rundir import PROFILES
    if args.profile not in PROFILES:
        raise UserError(f"--profile: unknown profile {args.profile!r} (profiles: {', '.join(sorted(PROFILES))})")
    checks.int_range("--steps", args.steps, 1, 10**9)
    checks.seed("--seed", args.seed)
    if args.every is not None:
        checks.int_range("--every", args.every, 1, 10**9)
    checks.int_range("--eval-episodes", args.eval_episodes, 1, 10_000)
    if args.run_dir is not None:
        runs.check_replaceable(args.run_dir, args.force)
    port = _resolve_port(args.port)
    quiet = args.quiet or args.json
    log = (lambda *a, **k: None) if quiet else print
    made = args.run_dir is None
    run_dir = args.run_dir or runs.new_run_dir("pendulum", f"td3-ondevice-{args.profile}", [args.seed])
    try:
        with runs.undone_on_failure(run_dir, made):  # a refused port leaves nothing behind
            runs.make_dir(run_dir)
            with runs.locked(run_dir):  # one trainer per run directory, as for `train`
                summary = train_on_device(port, args.profile, args.steps, args.seed, run_dir=run_dir,
                                          force=args.force, upload=not args.no_upload, every=args.every,
                                          eval_episodes=args.eval_episodes, progress=not quiet, log=log)
    except BoardResetError as exc:
        raise UserError(str(exc)) from None
    if not quiet:
        od = summary["on_device"]
        print(f"\nseed {args.seed}: eval return {summary['eval_return_mean']:.1f} +- {summary['eval_return_std']:.1f} "
              f"(host Pendulum-v1, {args.eval_episodes} episodes; on the board: {od['device_eval_return']:.1f})")
        peak = od.get("heap_peak")
        heap = (f"heap peak {peak} B above the {od['heap_base']} B in use before training" if peak is not None
                else f"heap peak not counted by this firmware (live after GC at most {od['heap_live_peak']} B)")
        print(f"{summary['steps']} steps on the board in {od['device_wall_s']:.1f} s; {heap}; "
              f"run dir {summary['run_dir']}")
    if args.json:
        print(json_line(summary))
    return 0

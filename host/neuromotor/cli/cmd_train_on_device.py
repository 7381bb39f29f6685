"""`neuromotor train-on-device`: TD3 on the board itself (pendulum swing-up)."""

from neuromotor.cli import checks, json_line


def register(sub):
    p = sub.add_parser("train-on-device", help="train a pendulum policy with TD3 on the board itself",
                       description="Uploads the trainer (device/lib + natmods), trains on the board "
                       "(progress over serial, NMB/1), brings the policy back and writes a run directory "
                       "that eval, export and hil accept.")
    p.add_argument("--port", default="auto", help="serial port, or auto (a detected board or a running emulated one)")
    p.add_argument("--profile", default="teensy41", help="teensy41 (64x64, replay 10000, batch 100), small "
                   "(32x32, replay 800, batch 32) or esp32 (20x20, replay 1600 in half precision, batch 24: an ESP32 without PSRAM)")
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


def run(args) -> int:
    from neuromotor import api

    checks.int_range("--steps", args.steps, 1, 10**9)
    checks.seed("--seed", args.seed)
    if args.every is not None:
        checks.int_range("--every", args.every, 1, 10**9)
    checks.int_range("--eval-episodes", args.eval_episodes, 1, 10_000)
    quiet = args.quiet or args.json
    log = (lambda *a, **k: None) if quiet else print
    summary = api.train_on_device(args.port, args.profile, args.steps, args.seed, run_dir=args.run_dir,
                                  force=args.force, upload=not args.no_upload, every=args.every,
                                  eval_episodes=args.eval_episodes, progress=not quiet, log=log)
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

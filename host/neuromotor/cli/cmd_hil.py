"""`neuromotor hil RUN --port PORT`: hardware-in-the-loop evaluation over serial."""

from neuromotor.cli import checks, json_line


def register(sub):
    p = sub.add_parser("hil", help="hardware in the loop: host simulates, board computes the actions",
                       description="Step the run's environment on the host, send each observation to "
                       "the board (NMB/1), apply the board's action; compare the returns with a "
                       "host-only NumPy evaluation of the same policy and report the round-trip latency.")
    p.add_argument("source", help="run directory or policy file (the one deployed on the board)")
    p.add_argument("--port", default="auto", help="serial port, or 'auto'")
    p.add_argument("--episodes", type=int, default=3)
    p.add_argument("--seed", type=int, default=0, help="env i starts from seed + i")
    p.add_argument("--env", default=None, help="environment: built-in name, gymnasium id or module:attr "
                   "(default: the run's, with its env_kwargs)")
    p.add_argument("--env-kwargs", metavar="TABLE", help="with --env: keyword arguments for gymnasium.make "
                   "or the factory (JSON or TOML inline table)")
    p.add_argument("--steps", type=int, default=None, help="steps per episode (default: the env's)")
    p.add_argument("--json", action="store_true",
                   help="end with one JSON line (return_mean, host_return_mean, success_rate on envs that "
                   "judge success, rtt_median_us, ...)")
    p.set_defaults(func=run)


def run(args):
    from neuromotor import api

    checks.source("source", args.source)
    checks.int_range("--episodes", args.episodes, 1, 10_000)
    checks.seed("--seed", args.seed, count=args.episodes)
    if args.steps is not None:
        checks.int_range("--steps", args.steps, 1, 10**7)
    env_kwargs = checks.env_override(args.env, args.env_kwargs, " (a run's own env already has its env_kwargs)")
    res = api.Board(args.port).hil(args.source, episodes=args.episodes, seed=args.seed, env=args.env,
                                   steps=args.steps, env_kwargs=env_kwargs, verbose=True)
    print(res)
    if args.json:
        print(json_line(res.data))
    return 0 if res.returns_match else 1

"""`neuromotor eval RUN_DIR`: deterministic evaluation of a trained run, optionally a GIF; or
`neuromotor eval POLICY.nmp --env NAME`: of a policy file (an imported one, say)."""


import math

from neuromotor.cli import checks, json_line
from neuromotor.errors import UserError


def register(sub):
    p = sub.add_parser("eval", help="evaluate a trained run or a policy file (deterministic policy)")
    p.add_argument("run_dir", help="a run directory (see `neuromotor runs`); on an env that judges success its "
                   "policy is its best evaluation's (best.npz); or a policy file (.nmp), evaluated in --env")
    p.add_argument("--env", default=None, help="with a policy file: the environment (default pendulum)")
    p.add_argument("--env-kwargs", metavar="TABLE", help="with --env: its keyword arguments (JSON or TOML "
                   "inline table)")
    p.add_argument("--episodes", type=int, default=10, help="episodes per agent (default 10)")
    p.add_argument("--render", metavar="FILE.gif", help="also render the first episode of --agent to a GIF")
    p.add_argument("--agent", type=int, default=0, help="agent index for --render (default 0)")
    p.add_argument("--seed", type=int, default=12345, help="seed of the initial states")
    p.add_argument("--gymnasium", action="store_true",
                   help="evaluate in gymnasium's own environment (MuJoCo envs) instead of neuromotor's")
    p.add_argument("--json", action="store_true", help="print one final JSON line")
    p.set_defaults(func=run)


def run(args) -> int:
    from neuromotor import api  # NumPy and the algorithms: imported once there is work

    checks.int_range("--episodes", args.episodes, 1)
    checks.int_range("--agent", args.agent, 0)
    checks.seed("--seed", args.seed)
    checks.source("run_dir", args.run_dir)
    if args.render is not None:
        if args.gymnasium:
            raise UserError("--render draws neuromotor's env; it does not combine with --gymnasium")
        if not args.render.endswith(".gif"):
            raise UserError(f"--render writes a GIF; give a file name ending in .gif, not {args.render!r}")
    env_kwargs = checks.env_override(args.env, args.env_kwargs)
    ev = api.evaluate(args.run_dir, args.episodes, args.seed, args.gymnasium, args.render, args.agent,
                      env=args.env, env_kwargs=env_kwargs)
    returns, seeds, success = ev.returns, ev.seeds, ev.success
    print(f"{'seed':>6} {'return':>10} {'std':>8}" + (f" {'success':>8}" if success is not None else ""))
    for k, s in enumerate(seeds):
        print(f"{s:>6} {returns[k].mean():>10.1f} {returns[k].std():>8.1f}"
              + (f" {success[k].mean():>8.0%}" if success is not None else ""))
    if args.render:
        print(f"wrote {args.render} ({ev.frames} frames)" + (f" and {ev.plot}" if ev.plot else ""))
    if args.json:
        print(json_line(ev.as_dict()))
    return 0 if all(math.isfinite(r) for r in returns.flat) else 1

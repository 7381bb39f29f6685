"""`neuromotor eval RUN_DIR`: deterministic evaluation of a trained run, optionally a GIF."""

import time
from pathlib import Path

import numpy as np

from neuromotor import runs
from neuromotor.cli import checks, json_line
from neuromotor.errors import UserError
from neuromotor.evaluation import Evaluator
from neuromotor.safe_write import check_target


def register(sub):
    p = sub.add_parser("eval", help="evaluate a trained run (deterministic policy)")
    p.add_argument("run_dir", help="a run directory (see `neuromotor runs`)")
    p.add_argument("--episodes", type=int, default=10, help="episodes per agent (default 10)")
    p.add_argument("--render", metavar="FILE.gif", help="also render the first episode of --agent to a GIF")
    p.add_argument("--agent", type=int, default=0, help="agent index for --render (default 0)")
    p.add_argument("--seed", type=int, default=12345, help="seed of the initial states")
    p.add_argument("--gymnasium", action="store_true",
                   help="evaluate in gymnasium's own environment (MuJoCo envs) instead of neuromotor's")
    p.add_argument("--json", action="store_true", help="print one final JSON line")
    p.set_defaults(func=run)


def run(args) -> int:
    checks.int_range("--episodes", args.episodes, 1)
    checks.int_range("--agent", args.agent, 0)
    checks.seed("--seed", args.seed)
    checks.source("run_dir", args.run_dir)
    if args.render is not None:
        if not args.render.endswith(".gif"):
            raise UserError(f"--render writes a GIF; give a file name ending in .gif, not {args.render!r}")
        check_target(args.render, protected=[Path(args.run_dir) / name for name in runs.OWN_FILES])
    cfg, algo = runs.load(args.run_dir)
    seeds = cfg["seeds"]
    if not 0 <= args.agent < len(seeds):
        raise UserError(f"--agent {args.agent} out of range: the run has {len(seeds)} agent(s)")
    env_cls = runs.env_factory(cfg)
    if args.render and not hasattr(env_cls, "draw"):
        raise UserError(f"environment {cfg['env']!r} cannot be rendered")
    t0 = time.perf_counter()
    if args.gymnasium:
        if args.render:
            raise UserError("--render draws neuromotor's env; it does not combine with --gymnasium")
        from neuromotor.envs.mujoco_vec import gymnasium_returns

        returns, states = gymnasium_returns(env_cls, algo.act, len(seeds), args.episodes, args.seed), None
    else:
        evaluator = Evaluator(env_cls, seeds, args.episodes)
        record = args.agent * args.episodes if args.render else None
        out = evaluator.run(algo, args.seed, record_env=record)
        returns, states = out if args.render else (out, None)
    wall = time.perf_counter() - t0
    if args.render:
        from neuromotor.plotting import episode_gif

        episode_gif(env_cls.draw, states, args.render, title=f"{cfg['env']} seed {seeds[args.agent]}")
    print(f"{'seed':>6} {'return':>10} {'std':>8}")
    for k, s in enumerate(seeds):
        print(f"{s:>6} {returns[k].mean():>10.1f} {returns[k].std():>8.1f}")
    if args.render:
        print(f"wrote {args.render} ({len(states)} frames)")
    if args.json:
        means = returns.mean(axis=1)
        print(json_line({
            "steps": algo.steps, "wall_s": round(wall, 3), "episodes": args.episodes,
            "eval_return_mean": float(means.mean()),
            "eval_return_std": float(means.std() if len(seeds) > 1 else returns.std()),
            "run_dir": str(args.run_dir),
            "agents": [{"seed": s, "eval_return_mean": float(returns[k].mean()),
                        "eval_return_std": float(returns[k].std())} for k, s in enumerate(seeds)],
        }))
    return 0 if np.isfinite(returns).all() else 1

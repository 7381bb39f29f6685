"""RAPTOR's foundation policy (RLtools; the `foundation-policy` package) flying neuromotor's quadrotor.

    pip install foundation-policy        # its checkpoint; the dev extra installs it
    .venv/bin/python benchmarks/raptor.py

The policy is imported from the package's own checkpoint as `neuromotor import` does (its
example replayed within 1e-5 first) and written as a policy file; the file's policy (host
NumPy reference, the arithmetic boards are checked against) and the package's own NumPy class
fly the same starts. The env is `quadrotor` with env_kwargs {"position_scale": 1,
"rotor_speeds": false, "action_history": 1}: RAPTOR's 22 numbers (position in metres, rotation
matrix, linear and angular velocity, the last action). Starts: the task's own 100 (seeded
10,000 + k, as benchmarks/quadrotor.py) and 100 gentle ones (within 0.2 m of the target, tilted
by at most 30 degrees, each velocity component at most 0.5 m/s and 0.5 rad/s, seeded 30,000 + k).
Success is the env's criterion: 5 s in the box, ending within 0.1 m of the target, slower than
0.2 m/s. Prints a table, writes benchmarks/results/raptor.json.
"""

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

import quadrotor
from benchutil import write_json

import neuromotor
from neuromotor.envs.quadrotor import P, Q, SUCCESS_DISTANCE, SUCCESS_SPEED, V, W, QuadrotorVec, _random_tilt

ENV_KWARGS = {"position_scale": 1, "rotor_speeds": False, "action_history": 1}
TASK_SEED0, GENTLE_SEED0 = 10_000, 30_000
GENTLE_TILT, GENTLE_SPEED = np.radians(30), 0.5


def checkpoint() -> Path:
    import importlib_resources

    return Path(str(importlib_resources.files("foundation_policy").joinpath("blob", "checkpoint.h5")))


def starts(kind: str, episodes: int) -> QuadrotorVec:
    env = QuadrotorVec(episodes, **ENV_KWARGS)
    if kind == "task":
        env.reset([np.random.default_rng(TASK_SEED0 + k) for k in range(episodes)])
        return env
    env.reset([np.random.default_rng(0) for _ in range(episodes)])
    for k in range(episodes):
        rng = np.random.default_rng(GENTLE_SEED0 + k)
        env.state[k, P] = rng.uniform(-0.2, 0.2, 3)
        env.state[k, Q] = _random_tilt(rng, GENTLE_TILT)
        env.state[k, V] = rng.uniform(-GENTLE_SPEED, GENTLE_SPEED, 3)
        env.state[k, W] = rng.uniform(-GENTLE_SPEED, GENTLE_SPEED, 3)
    return env


def fly(act, env: QuadrotorVec) -> dict:
    """Success of `act` (observations -> actions, its state reset) on env's starts: the env's
    criterion, as benchmarks/quadrotor.py judges it."""
    alive, distance, _, ok = quadrotor.fly(act, env, env._observe())
    return {"success": int(ok.sum()), "episodes": env.num_envs, "left_box": int((~alive).sum()),
            "final_distance_m": float(np.median(distance[alive])) if alive.any() else None}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--episodes", type=int, default=100, help="starts of each kind (default 100)")
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "raptor.json"))
    args = p.parse_args(argv)
    from foundation_policy import Raptor

    theirs = Raptor()
    with tempfile.TemporaryDirectory() as tmp:
        spec = neuromotor.import_policy(checkpoint(), Path(tmp) / "raptor.nmp", env="quadrotor", env_kwargs=ENV_KWARGS)
        mine = neuromotor.read_policy(Path(tmp) / "raptor.nmp")
    report = spec.meta["import"]
    rows = []
    for name, reset, act in (("neuromotor policy file (host reference)", mine.reset, mine),
                             ("foundation_policy NumPy class", theirs.reset, theirs.evaluate_step)):
        row = {"policy": name}
        for kind in ("gentle", "task"):
            reset()
            row[kind] = fly(act, starts(kind, args.episodes))
        rows.append(row)
    print(f"RAPTOR on quadrotor {ENV_KWARGS}; its example replayed: max |difference| "
          f"{report['example_max_abs_diff']:.2g}")
    print(f"{'policy':<42} {'gentle starts':>14} {'task starts':>12} {'left box (task)':>16}")
    for r in rows:
        print(f"{r['policy']:<42} {r['gentle']['success']:>9d}/{r['gentle']['episodes']:<4d} "
              f"{r['task']['success']:>7d}/{r['task']['episodes']:<4d} {r['task']['left_box']:>16d}")
    path = write_json(args.out, {"env_kwargs": ENV_KWARGS, "task_seed0": TASK_SEED0, "gentle_seed0": GENTLE_SEED0,
                                 "gentle_tilt_deg": 30, "gentle_speed": GENTLE_SPEED,
                                 "success_distance_m": SUCCESS_DISTANCE, "success_speed_m_s": SUCCESS_SPEED,
                                 "example_max_abs_diff": report["example_max_abs_diff"], "rows": rows})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The quadrotor hover task (Learning to Fly's Crazyflie model): train, then measure success.

    .venv/bin/python benchmarks/quadrotor.py --seeds 10                   # `train quadrotor`'s defaults (SAC), seeds 0-9
    .venv/bin/python benchmarks/quadrotor.py --seeds 5 --first-seed 5     # seeds 5-9 (run halves side by side)
    .venv/bin/python benchmarks/quadrotor.py --algos td3,sac --steps 40000 --seeds 1
    .venv/bin/python benchmarks/quadrotor.py --env-kwargs '{"action_history": 32, "reward": "initial"}'
    .venv/bin/python benchmarks/quadrotor.py --rltools path/to/l2f_binary  # RLtools' own L2F build in the same run

Success (the same for every row): from the task's own initial states (one in ten at rest on
the target, the rest within 0.2 m, tilted up to 90 degrees, moving at up to 1 m/s and 1 rad/s),
an episode succeeds when the drone flies all 500 steps (5 s) without leaving the 1.2 m box and
ends within 0.1 m of the target, slower than 0.2 m/s. An agent passes when at least 95% of its
--episodes episodes (seeded 10,000 + k, never seen in training; deterministic actions) succeed
and none leaves the box. Beside it, the run's policy flies --crash-episodes other starts
(seeded 20,000 + k, apart from the success starts while --episodes stays below 10,000): the
"crashes" column counts those that left the box, an estimate of the policy's crash rate that
100 starts cannot give (a policy that leaves the box from 1% of starts still passes on 100 of
them about a third of the time).

Each agent trains alone with neuromotor's defaults for the algorithm on the quadrotor (SAC, the
default: its quadrotor preset; TD3: its Learning to Fly configuration), one thread; the time is the training's wall and CPU time, evaluations included (every 10,000
steps, as `train` does). `--rltools BIN` runs a binary the user built from RLtools' L2F zoo
(not part of this project) and reports its wall time, its last report line, and its last
evaluation's saved flights judged by this criterion against its own task's reference (its zoo
trains whatever task its build sets: a hover or a trajectory to track, at its own rate). Each agent's
int8 export (`export --quantize int8`) is flown the same way by the host's int8 reference (the
board's integers): the "int8 success" column; a * marks an export its default contract refused
(on the quadrotor: succeeding in more than 2 fewer of the export's own 100 held-out flights than
the float policy), flown without the contract. The policy flown is the run's (`run.policy`):
on the quadrotor, its best evaluation's (best.npz, chosen on training's own evaluation episodes,
not these; the "policy at" column gives its step); the state training ended in
(checkpoint.npz) is flown on the same starts: the "last state success" column.
Prints a table, writes benchmarks/results/quadrotor.json.
"""

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchutil import write_json

import neuromotor
from neuromotor.envs.quadrotor import P, SUCCESS_DISTANCE, SUCCESS_SPEED, V, QuadrotorVec
from neuromotor.errors import UserError
from neuromotor.policy.policy_file import read_policy
from neuromotor.policy.spec import InvalidPolicyError

PASS_RATE = 0.95


def fly(policy, env: QuadrotorVec, obs) -> tuple:
    """Every drone of `env` flown from observations `obs` by `policy` (obs batch -> actions) for
    a whole episode: (stayed in the box, final distance, final speed, succeeded) per drone."""
    alive = np.ones(env.num_envs, bool)
    final = env.state.copy()
    for _ in range(QuadrotorVec.max_episode_steps):
        obs, _, terminated = env.step(np.asarray(policy(obs), np.float64))
        alive &= ~terminated
        final[alive] = env.state[alive]
        env.state[~alive] = final[~alive]  # a drone out of the box has ended: it stays where it left
    distance, speed = np.linalg.norm(final[:, P], axis=1), np.linalg.norm(final[:, V], axis=1)
    return alive, distance, speed, alive & (distance < SUCCESS_DISTANCE) & (speed < SUCCESS_SPEED)


def success(policy, episodes: int, env_kwargs: dict, seed0: int = 10_000) -> dict:
    """Success rate of `policy` (obs batch -> actions), how many episodes stayed in the box, and
    the median final distance and speed of those that did, on the env the policy was trained on."""
    env = QuadrotorVec(episodes, **env_kwargs)
    obs = env.reset([np.random.default_rng(seed0 + k) for k in range(episodes)])
    alive, distance, speed, ok = fly(policy, env, obs)
    return {"success_rate": float(ok.mean()), "survived": float(alive.mean()),
            "left_box": [int(k) for k in np.flatnonzero(~alive)],  # which starts (seed0 + k) crashed
            "passed": bool(ok.mean() >= PASS_RATE and alive.all()),
            "final_distance_m": float(np.median(distance[alive])) if alive.any() else None,
            "final_speed_m_s": float(np.median(speed[alive])) if alive.any() else None}


def env_speed(repeats: int = 2000) -> list:
    """µs per drone-step of the native step and its NumPy reference, one drone and 64."""
    rows = []
    for n in (1, 64):
        for name in ("native", "numpy"):
            env = QuadrotorVec(n)
            env.reset([np.random.default_rng(k) for k in range(n)])
            step = env.step if name == "native" else env.step_numpy
            hover = np.full((n, 4), 0.334)
            count = repeats if name == "native" else max(20, repeats // 20)
            t0 = time.process_time()
            for _ in range(count):
                step(hover)
            rows.append({"step": name, "drones": n, "us_per_drone_step": (time.process_time() - t0) / count / n * 1e6})
    return rows


CRASH_SEED0 = 20_000  # the crash-rate starts


def train_one(algo: str, steps: int | None, seed: int, episodes: int, root: Path, env_kwargs: dict,
              crash_episodes: int) -> dict:
    cpu0, wall0 = resource.getrusage(resource.RUSAGE_SELF).ru_utime, time.perf_counter()
    run = neuromotor.train("quadrotor", algo=algo, steps=steps, seeds=seed, run_dir=root / f"{algo}-s{seed}",
                           env_kwargs=env_kwargs or None, progress=False)
    wall, cpu = time.perf_counter() - wall0, resource.getrusage(resource.RUSAGE_SELF).ru_utime - cpu0
    return {"algo": algo, "seed": seed, "steps": run.config["run"]["steps"], "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "eval_return_mean": run.summary["eval_return_mean"],
            # the run's policy: its best evaluation's (on training's own episodes, not these)
            "best_step": run.summary["best"]["step"], **success(run.policy, episodes, env_kwargs),
            "crashes": len(success(run.policy, crash_episodes, env_kwargs, CRASH_SEED0)["left_box"]),
            **int8_success(run, episodes, root / f"{algo}-s{seed}-int8.nmp", env_kwargs),
            # and the state training ended in
            "last_success_rate": success(neuromotor.load_policy(run.path / "checkpoint.npz"), episodes,
                                         env_kwargs)["success_rate"]}


def int8_success(run, episodes: int, path: Path, env_kwargs: dict) -> dict:
    """The same success measure for the run's int8 export, flown by the host's int8 reference (the
    integers the boards compute). Where its default contract (on the quadrotor: success within 2
    points of the float policy's on other starts) refuses it, the export without a contract is
    flown, and the refusal is reported beside it."""
    out = {}
    try:
        run.export(path, quantize="int8")
    except InvalidPolicyError as exc:  # no int8 form at all (the boards' int8 layers are relu or identity)
        return {"int8_unavailable": str(exc).splitlines()[0], "int8_success_rate": None}
    except UserError as exc:
        out["int8_refused"] = str(exc).splitlines()[0]
        run.export(path, quantize="int8", max_error=1.0)
    flown = success(read_policy(path).forward, episodes, env_kwargs)
    return {**out, **{f"int8_{k}": v for k, v in flown.items()}}


def int8_cell(row: dict) -> str:
    if row["int8_success_rate"] is None:
        return "-"
    return format(row["int8_success_rate"], ".0%") + ("*" if "int8_refused" in row else "")


def rltools_flights(trajectories: Path) -> dict:
    """This benchmark's criterion applied to RLtools' own last evaluation (its trajectories.json:
    per episode the flown states, padded with dt 0 after an early end, and the parameters of its
    task). The target is its reference at the last step (a point for a hover, a moving point for
    its trajectory tracking): success is all steps flown, ending within SUCCESS_DISTANCE of the
    reference and within SUCCESS_SPEED of its velocity."""
    episodes = json.loads(trajectories.read_text())
    ended_early, ok, errors = 0, 0, []
    for ep in episodes:
        flown = [s for s in ep["trajectory"] if s["dt"] > 0]
        if len(flown) < len(ep["trajectory"]) or any(s["terminated"] for s in flown):
            ended_early += 1
            continue
        last = flown[-1]["state"]
        reference = ep["parameters"].get("trajectory", {}).get("steps") or [{"position": [0, 0, 0], "linear_velocity": [0, 0, 0]}]
        ref = reference[last.get("trajectory", {}).get("trajectory_step", 0) % len(reference)]
        distance = float(np.linalg.norm(np.subtract(last["position"], ref["position"])))
        speed = float(np.linalg.norm(np.subtract(last["linear_velocity"], ref["linear_velocity"])))
        errors.append(distance)
        ok += distance < SUCCESS_DISTANCE and speed < SUCCESS_SPEED
    params = episodes[0]["parameters"]
    return {"episodes": len(episodes), "steps": len(episodes[0]["trajectory"]), "dt_s": params["integration"]["dt"],
            "task": params.get("trajectory_parameters", {}).get("type", "hover").lower(),
            "ended_early": ended_early, "success_rate": ok / len(episodes),
            "final_distance_m": float(np.median(errors)) if errors else None}


def rltools(binary: str) -> dict:
    """Run RLtools' L2F binary on one thread (as ours trains), read its last report line and judge
    its last evaluation's flights by this benchmark's criterion."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    cpu0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime, time.perf_counter()
    with tempfile.TemporaryDirectory() as where:  # it writes its checkpoints into the working directory
        res = subprocess.run([binary], capture_output=True, text=True, env=env, cwd=where)
        wall, cpu = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - cpu0
        saved = sorted(Path(where).glob("experiments/*/*/*/*/steps/*/trajectories.json"))
        flights = rltools_flights(saved[-1]) if saved else None
    report = [line for line in res.stdout.splitlines() if "Mean return" in line]
    found = re.search(r"Mean return: ([-\d.e+]+) Mean episode length: ([\d.e+]+)", report[-1]) if report else None
    return {"peer": "rltools", "binary": binary, "exit": res.returncode, "wall_s": round(wall, 2),
            "cpu_s": round(cpu, 2), "last_report": report[-1] if report else None,
            "its_return": float(found[1]) if found else None,
            "its_episode_length": float(found[2]) if found else None,
            "flights": flights}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--algos", default="sac", help="comma-separated algorithms (default sac, `train quadrotor`'s)")
    p.add_argument("--steps", type=int, help="env steps per agent (default: the algorithm's quadrotor default)")
    p.add_argument("--seeds", type=int, default=3, help="agents per algorithm (default 3)")
    p.add_argument("--first-seed", type=int, default=0, help="their seeds are this one and the next (default 0)")
    p.add_argument("--episodes", type=int, default=100, help="success episodes per agent (default 100)")
    p.add_argument("--crash-episodes", type=int, default=1000,
                   help="other episodes per agent whose crashes are counted (default 1000)")
    p.add_argument("--env-kwargs", default="{}", type=json.loads,
                   help='the env\'s settings as JSON, e.g. \'{"action_history": 4, "reward": "distance"}\'')
    p.add_argument("--rltools", help="an RLtools L2F binary to run and time in the same run")
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "quadrotor.json"))
    args = p.parse_args(argv)
    if args.episodes < 1 or args.crash_episodes < 1:
        p.error("--episodes and --crash-episodes must be at least 1")
    neuromotor.set_threads(1)
    speed = env_speed()
    print("env step (CPU µs per drone-step, one thread)")
    for r in speed:
        print(f"  {r['step']:6s} {r['drones']:3d} drones: {r['us_per_drone_step']:9.2f}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.first_seed, args.first_seed + args.seeds):  # seeds alternate between the algorithms: machine load hits both
            for algo in args.algos.split(","):
                rows.append(train_one(algo, args.steps, seed, args.episodes, Path(tmp), args.env_kwargs,
                                      args.crash_episodes))
                r = rows[-1]
                print(f"{r['algo']:4s} seed {r['seed']}: {r['steps']} steps in {r['wall_s']:.1f} s wall "
                      f"({r['cpu_s']:.1f} s CPU), eval return {r['eval_return_mean']:.1f}, success "
                      f"{r['success_rate']:.0%}, survived {r['survived']:.0%}", file=sys.stderr)
    peer = rltools(args.rltools) if args.rltools else None
    print(f"\nquadrotor hover, success = 5 s in the box, ending < {SUCCESS_DISTANCE} m from the target and "
          f"< {SUCCESS_SPEED} m/s ({args.episodes} episodes per agent; an agent passes at >= {PASS_RATE:.0%} "
          "with none leaving the box)")
    print(f"{'algo':5s} {'seed':>4s} {'steps':>7s} {'policy at':>9s} {'wall s':>7s} {'CPU s':>7s} {'return':>8s} {'success':>8s} "
          f"{'survived':>9s} {'final m':>8s} {'m/s':>6s} {'passed':>7s} {'crashes':>9s} {'int8 success':>13s} "
          f"{'last state success':>19s}")
    for r in rows:
        final = "-" if r["final_distance_m"] is None else f"{r['final_distance_m']:.3f}"
        speed = "-" if r["final_speed_m_s"] is None else f"{r['final_speed_m_s']:.3f}"
        print(f"{r['algo']:5s} {r['seed']:4d} {r['steps']:7d} {r['best_step']:9d} {r['wall_s']:7.1f} {r['cpu_s']:7.1f} "
              f"{r['eval_return_mean']:8.1f} {r['success_rate']:8.0%} {r['survived']:9.0%} {final:>8s} {speed:>6s} "
              f"{'yes' if r['passed'] else 'no':>7s} {r['crashes']:>4d}/{args.crash_episodes:<4d} "
              f"{int8_cell(r):>13s} "
              f"{r['last_success_rate']:19.0%}")
    for algo in args.algos.split(","):
        mine = [r for r in rows if r["algo"] == algo]
        crashes = sum(r["crashes"] for r in mine) / max(1, len(mine) * args.crash_episodes)
        print(f"{algo}: {sum(r['passed'] for r in mine)} of {len(mine)} seeds pass; the run's policies left the box "
              f"from {crashes:.1%} of {args.crash_episodes} other starts")
        for r in mine:
            if r["left_box"]:
                print(f"  seed {r['seed']}: starts that left the box {r['left_box']}")
            if "int8_unavailable" in r:
                print(f"  seed {r['seed']} int8: none ({r['int8_unavailable']})")
            if "int8_refused" in r:
                print(f"  seed {r['seed']} int8*: the default contract refused it ({r['int8_refused']}); "
                      "flown: the export without it")
    if peer:
        print(f"RLtools {peer['binary']}: exit {peer['exit']}, {peer['wall_s']:.1f} s wall, {peer['cpu_s']:.1f} s CPU; "
              f"its last report: return {peer['its_return']}, episode length {peer['its_episode_length']}")
        f = peer["flights"]
        if f:
            print(f"  its last evaluation ({f['task']}, {1 / f['dt_s']:.0f} Hz, {f['episodes']} episodes of {f['steps']} steps): "
                  f"{f['ended_early']} ended early, {f['success_rate']:.0%} succeed by this criterion against its own reference")
        else:
            print("  it saved no evaluation flights: its success is not measured")
    path = write_json(args.out, {"episodes": args.episodes, "crash_episodes": args.crash_episodes,
                                 "crash_seed0": CRASH_SEED0, "env_kwargs": args.env_kwargs, "rows": rows, "rltools": peer, "env_speed": speed,
                                 "success_distance_m": SUCCESS_DISTANCE, "success_speed_m_s": SUCCESS_SPEED,
                                 "pass_rate": PASS_RATE})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A normal run directory for a policy trained on the board.

It holds what `neuromotor train` writes (config.json, checkpoint.npz, metrics.jsonl,
summary.json, learning_curve.png), so `eval`, `export` and `hil` read it through
`runs.load_policy_spec` like any other run, plus:
  policy.nmp       the policy file exactly as the board wrote it (CRC checked)
  on_device.json   board, profile, kernels, heap figures and the progress stream
                   (written when training starts, so an unfinished run is recognised too)
The checkpoint holds a host TD3 of the same configuration with the board's actor
(critics and replay are not brought back: they never leave the board), so such a
run cannot be resumed on the host: `rundir.refuse_resume` says so.
"""

import importlib.util
import json
from pathlib import Path

import numpy as np

from neuromotor.training import checkpoint, config, run_policy, rundir, runs
from neuromotor.algos.td3 import Config
from neuromotor.errors import UserError
from neuromotor.safe_write import atomic_write
from neuromotor.nn import MLP
from neuromotor.paths import DEVICE_DIR


def _board_plan():
    """The board's own profiles module (device/lib/nm_td3_plan.py, plain Python that CPython runs
    too), so the profiles are written once for both sides."""
    spec = importlib.util.spec_from_file_location("nm_td3_plan", DEVICE_DIR / "lib" / "nm_td3_plan.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_PLAN = _board_plan()
PROFILES, PROFILE_SETTINGS = _PLAN.PROFILES, _PLAN.PROFILE_SETTINGS
POLICY, ON_DEVICE = rundir.BOARD_POLICY, rundir.ON_DEVICE


def write_started(run_dir: Path, profile: str, seed: int, steps: int) -> None:
    """Mark the run directory as on-device before the first step (write_run_dir completes it)."""
    atomic_write(run_dir / ON_DEVICE, (json.dumps({"profile": profile, "seed": seed, "steps": steps,
                                                   "progress": []}, indent=2) + "\n").encode())


def algo_config(profile: str) -> Config:
    p = PROFILES[profile]
    return Config(actor_hidden=tuple(p["hidden"]), critic_hidden=tuple(p["hidden"]),
                  batch_size=p["batch"], buffer_size=p["replay"], **{k: p[k] for k in PROFILE_SETTINGS if k in p})


def _set_actor(td3, spec) -> None:
    """Write a PolicySpec's layers into agent 0 of a host TD3 (its actor and target)."""
    actor = td3.actor
    layers = actor.mlp.weights_and_biases(MLP.member(actor.layers, 0))
    if len(layers) != len(spec.weights):
        raise UserError(f"board policy has {len(spec.weights)} layers, the host config {len(layers)}")
    for (w, b), sw, sb in zip(layers, spec.weights, spec.biases):
        w[...] = sw.T
        b[...] = sb
    actor.target[...] = actor.params


def write_run_dir(run_dir: Path, spec, policy_bytes: bytes, profile: str, seed: int, steps: int,
                  progress: list, device: dict, eval_episodes: int = 10) -> dict:
    """Write config, checkpoint, policy file, metrics and summary; returns the summary."""
    run_cfg = config.RunConfig(steps=steps, eval_episodes=eval_episodes, shards=1)
    algo_cfg = algo_config(profile)
    rundir.write_config(run_dir, config.RunSpec("pendulum", "td3", [seed], run_cfg, algo_cfg))
    algo = runs.build(rundir.read_config(run_dir))
    td3 = algo.local
    _set_actor(td3, spec)
    td3.steps = steps
    checkpoint.save(run_dir / rundir.CHECKPOINT, algo.state_dict())
    atomic_write(run_dir / POLICY, policy_bytes)
    # the run directory must give back exactly the board's policy
    back = run_policy.load_policy_spec(run_dir)
    for a, b in zip(back.weights + back.biases, spec.weights + spec.biases):
        if a.shape != b.shape or not np.array_equal(a, b):
            raise UserError(f"{run_dir}: the host's run format did not round-trip the board's policy")

    from neuromotor.envs import env_class
    from neuromotor.training.evaluation import Evaluator
    returns = Evaluator(env_class("pendulum"), [seed], eval_episodes).run(algo, steps)
    records = [{"step": p["step"], "agent": 0, "seed": seed, "eval_return_mean": None,
                "eval_return_std": None, "train_return": p.get("recent_return"),
                "wall_s": p.get("wall_s")} for p in progress if p.get("step", 0) < steps]
    records.append({"step": steps, "agent": 0, "seed": seed,
                    "eval_return_mean": float(returns[0].mean()), "eval_return_std": float(returns[0].std()),
                    "train_return": progress[-1].get("recent_return") if progress else None,
                    "wall_s": device.get("wall_s")})
    rundir.append_metrics(run_dir, records)
    try:
        from neuromotor.training import plotting
        plotting.learning_curve([r for r in records if r["eval_return_mean"] is not None],
                                run_dir / rundir.CURVE, f"td3 on pendulum, on the board ({profile})")
    except Exception:  # a plot is a nicety
        pass
    atomic_write(run_dir / ON_DEVICE,
                 (json.dumps({**device, "profile": profile, "progress": progress}, indent=2) + "\n").encode())
    summary = {
        "steps": steps, "wall_s": device.get("wall_s"), "cpu_s": None,
        "eval_return_mean": float(returns[0].mean()), "eval_return_std": float(returns[0].std()),
        "run_dir": str(run_dir),
        "agents": [{"seed": seed, "eval_return_mean": float(returns[0].mean()),
                    "eval_return_std": float(returns[0].std())}],
        "on_device": {k: device.get(k) for k in ("board", "profile", "kernels", "device_eval_return",
                                                  "device_wall_s", "heap_peak", "heap_gc_threshold", "heap_base",
                                                  "heap_live_peak", "heap_setup", "mem_free_before", "plan_bytes",
                                                  "updates")},
    }
    summary["on_device"]["profile"] = profile
    rundir.write_summary(run_dir, summary)
    return summary

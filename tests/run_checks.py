"""What the tests of several algorithms and backends check on training runs: agents independent
of the population they train in, and a killed run resuming to the uninterrupted one's numbers."""

import json
import signal
import time

import numpy as np

from neuromotor.envs import env_class
from neuromotor.nn import MLP
from neuromotor.training.evaluation import Evaluator
from neuromotor.training.parallel import Sharded


def checkpoint_arrays(run_dir) -> dict:
    with np.load(run_dir / "checkpoint.npz", allow_pickle=False) as ck:
        return {k: ck[k] for k in ck.files}


def kill_then_resume_equals_uninterrupted(tmp_path, cli, neuromotor_process, args, steps: int, first_checkpoint: int):
    """Train the pendulum with `args` (`steps` steps, the first checkpoint at `first_checkpoint`)
    straight through, and again killed with SIGKILL past its first checkpoint and resumed: the
    resumed run ends at `steps` with every checkpoint array equal to the straight run's.
    Returns (straight run dir, resumed run dir, the straight run's checkpoint arrays)."""
    straight = tmp_path / "straight"
    assert cli("train", "pendulum", "--run-dir", straight, *args)[0] == 0
    killed = tmp_path / "killed"
    proc = neuromotor_process("train", "pendulum", "--run-dir", killed, *args)
    try:
        deadline = time.time() + 60
        while not (killed / "checkpoint.npz").exists() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.01)
        time.sleep(0.1)  # past the first checkpoint, mid-way to the next
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL, "training finished before it could be killed"
    assert not (killed / "summary.json").exists()
    assert first_checkpoint <= int(checkpoint_arrays(killed)["steps"]) < steps

    code, out, err = cli("train", "--resume", killed, "--json")
    assert code == 0, err
    assert json.loads(out.strip().splitlines()[-1])["steps"] == steps
    a, b = checkpoint_arrays(straight), checkpoint_arrays(killed)
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    return straight, killed, a


def train(algo_class, cfg, seeds, steps: int, shards: int = 1) -> Sharded:
    """A population of `seeds` on the pendulum after `steps` steps (in `shards` processes)."""
    algo = Sharded(algo_class, cfg, env_class("pendulum"), seeds, shards)
    for _ in range(steps):
        algo.advance()
    return algo


def agent_arrays(algo, k: int) -> dict:
    """Every network of agent k of one (unsharded) instance (its targets where it keeps them), and its replay."""
    algo.sync_host()  # the native backend trains a copy in the kernels' layout
    out = {"replay": algo.replay.data[k].copy()}
    for name, views in (("actor", algo.actor.layers), ("actor_t", algo.actor.target_layers),
                        ("critic", algo.critic.layers), ("critic_t", algo.critic.target_layers)):
        for i, layer in enumerate(MLP.member(views, k) if views is not None else ()):
            out[f"{name}{i}"] = layer.copy()
    return out


def seed_alone_equals_seed_inside_a_population(algo_class, cfg, steps: int, arrays=agent_arrays):
    """Seed 5 trained alone, as agent 1 of a population, and as agent 1 of shard 0 of a
    multi-process population (rebuilt here from its state): `arrays` of the three equal to
    the bit, and seed 2's different. Returns the one trained alone."""
    alone = train(algo_class, cfg, [5], steps).local
    population = train(algo_class, cfg, [2, 5, 9], steps).local
    sharded = train(algo_class, cfg, [2, 5, 9, 11], steps, shards=2)
    assert sharded.local is None and sharded.shard_seeds == [[2, 5], [9, 11]]
    shard = algo_class(cfg, env_class("pendulum"), sharded.shard_seeds[0])
    shard.load_state_dict({k[7:]: v for k, v in sharded.state_dict().items() if k.startswith("shard0.")})
    a = arrays(alone, 0)
    for other in (population, shard):
        b = arrays(other, 1)
        for key in a:
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    assert not np.array_equal(arrays(population, 0)["actor0"], a["actor0"])
    return alone


def round_trip_mid_block_continues_exactly(algo_class, cfg, steps_after: int):
    """A population saved 170 steps in (mid RNG block) and run on `steps_after` steps (across the
    200-step episode boundary: env resets draw from the agents' RNGs), and a new one loaded from
    the save and run as far: every state array equal."""
    a = train(algo_class, cfg, [4, 6], 170)
    saved = {k: np.array(v) for k, v in a.state_dict().items()}
    for _ in range(steps_after):
        a.advance()
    b = train(algo_class, cfg, [4, 6], 0)
    b.load_state_dict(saved)
    for _ in range(steps_after):
        b.advance()
    for key, value in a.state_dict().items():
        np.testing.assert_array_equal(value, b.state_dict()[key], err_msg=key)


def swings_up_the_pendulum(algo_class, best_seed_above: float, mean_above: float) -> None:
    """Two seeds of algo_class's default configuration, 10k steps in two processes: over 10
    evaluation episodes each, the better seed's mean return and the mean of both above the bounds."""
    algo = train(algo_class, algo_class.Config(), [0, 1], 10_000, shards=2)
    returns = Evaluator(env_class("pendulum"), [0, 1], 10).run(algo, 10_000)
    assert returns.mean(axis=1).max() > best_seed_above
    assert returns.mean() > mean_above

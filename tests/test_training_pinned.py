"""Short TD3 and SAC (both backends each) and PPO runs pinned to the exact numbers they train to.

Refactoring an algorithm must not change a single bit of what it computes: the
checkpoint's arrays (weights, optimiser state, replay, RNG states) are hashed and the
evaluation returns compared exactly. A change that is meant to alter training updates
these pins in the same commit, saying why.
"""

import hashlib

import numpy as np
import pytest

import neuromotor

SMALL = {"actor_hidden": [16, 16], "critic_hidden": [16, 16], "eval_episodes": 1}
OFF_POLICY = {**SMALL, "learning_starts": 100, "batch_size": 32, "eval_every": 200}
CASES = {
    "td3-native": ("td3", 400, [0, 1], OFF_POLICY),
    "td3-numpy": ("td3", 400, [0, 1], {**OFF_POLICY, "backend": "numpy"}),
    "sac-native": ("sac", 400, [0, 1], OFF_POLICY),
    "sac-numpy": ("sac", 400, [0, 1], {**OFF_POLICY, "backend": "numpy"}),
    "ppo": ("ppo", 1600, [0], {**SMALL, "num_envs": 4, "num_steps": 200, "minibatch_size": 200, "epochs": 2,
                               "eval_every": 800}),
}
PINNED = {  # (checkpoint digest, each agent's final evaluation return)
    'ppo': ('fc5f4bb3954f75fd', [-915.2968429401517]),
    'sac-native': ('3375af563d1afb07', [-1524.5692739486694, -1252.0168089866638]),
    'sac-numpy': ('3d575fab1600ee7d', [-1524.5695757865906, -1252.0167183876038]),
    'td3-native': ('9e7c2e923c0448c5', [-1079.4242854118347, -1665.7379885911942]),
    'td3-numpy': ('c26f48bc78e0789a', [-1079.4245645403862, -1665.7379730939865]),
}


def checkpoint_digest(run) -> str:
    with np.load(run.path / "checkpoint.npz") as arrays:
        h = hashlib.sha256()
        for key in sorted(arrays.files):
            h.update(key.encode())
            h.update(np.ascontiguousarray(arrays[key]).tobytes())
    return h.hexdigest()[:16]


@pytest.mark.parametrize("case", sorted(CASES))
def test_training_is_pinned(case, tmp_path):
    algo, steps, seeds, settings = CASES[case]
    run = neuromotor.train("pendulum", algo, steps=steps, seeds=seeds, config=settings, shards=1,
                           run_dir=tmp_path / case, progress=False)
    got = (checkpoint_digest(run), [a["eval_return_mean"] for a in run.summary["agents"]])
    assert got == PINNED[case]

"""benchmarks/sac.py's bookkeeping (never its timings): SB3 gets neuromotor's hyperparameters,
the solve count, and the one evaluation loop both trainers are measured by."""

import numpy as np
import pytest

from neuromotor.algos.sac import SAC
from neuromotor.paths import SOURCE_ROOT


@pytest.fixture
def sac_bench(monkeypatch):
    monkeypatch.syspath_prepend(str(SOURCE_ROOT / "benchmarks"))
    import importlib
    return importlib.import_module("sac")


def test_sb3_gets_the_same_hyperparameters(sac_bench):
    for preset in ("pendulum", "mujoco"):
        cfg, _ = SAC.defaults("pendulum", preset)
        s = sac_bench.sb3_settings(cfg)
        assert (s["learning_rate"], s["buffer_size"], s["learning_starts"], s["batch_size"]) == \
            (cfg.actor_lr, cfg.buffer_size, cfg.learning_starts, cfg.batch_size)
        assert (s["tau"], s["gamma"], s["train_freq"], s["gradient_steps"]) == (cfg.tau, cfg.gamma, 1, 1)
        assert s["ent_coef"] == "auto_1.0" and s["target_entropy"] == "auto"
        assert s["policy_kwargs"]["net_arch"] == list(cfg.actor_hidden)
    cfg, _ = SAC.defaults("pendulum")
    cfg.alpha_lr = 3e-4
    with pytest.raises(SystemExit, match="one learning rate"):
        sac_bench.sb3_settings(cfg)


def test_summary_counts_solved_seeds_at_minus_200(sac_bench):
    runs = [{"seed": s, "wall_s": w, "cpu_s": w / 2, "return_mean": r}
            for s, w, r in ((0, 1.0, -150.0), (1, 3.0, -200.0), (2, 2.0, -350.0))]
    s = sac_bench.summary(runs, -200.0)
    assert s["solved"] == 2 and s["seeds"] == [0, 1, 2]
    assert (s["wall_s_mean"], s["cpu_s_mean"], s["return_min"], s["return_max"]) == (2.0, 1.0, -350.0, -150.0)
    assert "solved" not in sac_bench.summary(runs, None)


def test_both_trainers_are_evaluated_by_the_same_gymnasium_loop(sac_bench):
    pytest.importorskip("gymnasium")
    zero = sac_bench.gym_returns(lambda obs: np.zeros(1, np.float32), "Pendulum-v1", 3, episodes=2)
    again = sac_bench.gym_returns(lambda obs: np.zeros(1, np.float32), "Pendulum-v1", 3, episodes=2)
    np.testing.assert_array_equal(zero, again)  # the env is seeded from the seed
    assert zero.shape == (2,) and (zero < 0).all() and zero[0] != zero[1]
    other = sac_bench.gym_returns(lambda obs: np.zeros(1, np.float32), "Pendulum-v1", 4, episodes=2)
    assert not np.array_equal(zero, other)


def test_the_headline_row_trains_with_sb3s_update_and_settings(sac_bench):
    phase = sac_bench.PHASES["halfcheetah"]
    matched = sac_bench.phase_config(phase, 1000, **sac_bench.ROWS["neuromotor"])
    rltools = sac_bench.phase_config(phase, 1000, **sac_bench.ROWS["neuromotor-rltools"])
    sb3 = sac_bench.phase_config(phase, 1000)
    assert list(sac_bench.ROWS)[0] == "neuromotor" and matched.shared_minibatch and not rltools.shared_minibatch
    assert matched.learning_starts == rltools.learning_starts == sb3.learning_starts == 1000
    assert sac_bench.sb3_settings(matched) == sac_bench.sb3_settings(sb3)
    assert (matched.batch_size, matched.actor_lr, matched.tau, matched.actor_hidden) == (256, 3e-4, 0.005, (256, 256))
    assert sac_bench.phase_config(phase).learning_starts == 10_000  # the preset's unless asked
    assert sac_bench.per_update_ms(3.0, 1.0, 5000, 1000) == pytest.approx(0.5)
    assert sac_bench.per_update_ms(3.0, 3.0, 1000, 1000) is None

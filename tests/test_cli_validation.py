"""Every setting is checked (type, range, finite) before a run directory exists, on new runs and on resume."""

import dataclasses
import json

import pytest

from neuromotor.training import config, rundir
from neuromotor.algos.ppo import Config as PPOConfig
from neuromotor.algos.sac import Config as SACConfig
from neuromotor.algos.td3 import Config as TD3Config
from neuromotor.errors import UserError

FAST = ["--set", "batch_size=16", "--set", "eval_episodes=1", "--quiet"]


def _one_line_error(code, err, *words):
    assert code == 2, err
    assert err.startswith("neuromotor") and "error: " in err and err.count("\n") == 1, err
    for w in words:
        assert w in err, err


@pytest.mark.parametrize("cls", [config.RunConfig, TD3Config, PPOConfig, SACConfig])
def test_every_field_has_a_rule_and_the_defaults_pass(cls):
    for f in dataclasses.fields(cls):
        assert f.name in cls.RULES, f"{cls.__name__}.{f.name} has no validation rule"
    config.validate(cls())


def test_a_setting_shared_by_algorithms_has_one_rule():
    wants = {}
    for cls in (TD3Config, PPOConfig, SACConfig):
        for name, (_, said) in cls.RULES.items():
            wants.setdefault(name, set()).add(said)
    assert {name: said for name, said in wants.items() if len(said) > 1} == {}


@pytest.mark.parametrize("preset", ["ant-paper", "pendulum"])
def test_ppo_presets_pass(preset):
    from neuromotor.algos.ppo import PPO

    algo_cfg, run = PPO.defaults("pendulum", preset)
    config.validate(algo_cfg, config.RunConfig(**run))


BAD_TD3 = ["batch_size=0", "buffer_size=0", "policy_delay=0", "actor_hidden=[0]", "critic_hidden=[]",
           "activation=sigmoid", "actor_lr=-1e-3", "critic_lr=0", "noise_clip=-1", "gamma=2", "tau=5", "tau=0",
           "actor_lr=nan", "critic_lr=inf", "exploration_noise=-0.1", "policy_noise=nan", "learning_starts=-1",
           "warmup_actions=maybe", "eval_every=0", "checkpoint_every=-1", "shards=-1", "eval_every=1e30",
           "gamma=-inf", "actor_hidden=[64, 100000000]", "episode_steps=-1"]
BAD_PPO = ["init_std=0", "init_std=-1", "num_envs=0", "num_steps=0", "epochs=0", "minibatch_size=0",
           "minibatch_size=3", "gae_lambda=1.5", "clip_coef=0", "target_kl=nan", "lr_factor=1",
           "lr_min=0", "lr_max=1e-9", "ent_coef=-1", "actor_lr=nan"]


@pytest.mark.parametrize("setting", BAD_TD3)
def test_bad_td3_setting_refused_before_the_run_dir(cli, runs_root, setting):
    name = setting.partition("=")[0]
    _one_line_error(*cli("train", "pendulum", "--steps", 20, "--set", setting, "--quiet")[::2], name)
    assert not any(runs_root.iterdir())


@pytest.mark.parametrize("setting", BAD_PPO)
def test_bad_ppo_setting_refused_before_the_run_dir(cli, runs_root, setting):
    name = setting.partition("=")[0]
    _one_line_error(*cli("train", "pendulum", "--algo", "ppo", "--steps", 20, "--set", setting, "--quiet")[::2],
                    name)
    assert not any(runs_root.iterdir())


@pytest.mark.parametrize("settings, name", [(["lr_decay_factor=0"], "lr_decay_factor"),
                                            (["lr_decay_factor=1.5"], "lr_decay_factor"),
                                            (["lr_decay_end=-1"], "lr_decay_end"),
                                            (["lr_decay_start=20", "lr_decay_end=10"], "lr_decay_start"),
                                            (["start_draws=0"], "start_draws"),
                                            # the pendulum does not rank its initial states
                                            (["start_draws=2"], "start_draws 2 needs an env that ranks")])
def test_bad_sac_setting_refused_before_the_run_dir(cli, runs_root, settings, name):
    sets = [x for s in settings for x in ("--set", s)]
    _one_line_error(*cli("train", "pendulum", "--algo", "sac", "--steps", 20, *sets, "--quiet")[::2], name)
    assert not any(runs_root.iterdir())


def test_an_empty_algorithm_name_is_refused_not_defaulted(cli, runs_root):
    _one_line_error(*cli("train", "quadrotor", "--algo", "", "--steps", 20, "--quiet")[::2], "algorithm")
    assert not any(runs_root.iterdir())


def test_a_refused_setting_leaves_no_partial_run_that_blocks_a_rerun(cli, tmp_path):
    run_dir = tmp_path / "r"
    assert cli("train", "pendulum", "--run-dir", run_dir, "--set", "batch_size=0", "--quiet")[0] == 2
    assert not run_dir.exists()
    assert cli("train", "pendulum", "--run-dir", run_dir, "--steps", 20, *FAST)[0] == 0


@pytest.mark.parametrize("edit", [
    {"algo_config": {"gamma": 2.0}}, {"algo_config": {"batch_size": 0}}, {"run": {"eval_episodes": 0}},
    {"algo_config": {"activation": "sigmoid"}}, {"algo_config": {"actor_lr": "nan"}},
])
def test_resume_and_eval_refuse_a_hand_edited_bad_config(cli, tmp_path, edit):
    run_dir = tmp_path / "r"
    assert cli("train", "pendulum", "--run-dir", run_dir, "--steps", 20, *FAST)[0] == 0
    path = run_dir / rundir.CONFIG
    doc = json.loads(path.read_text())
    for section, values in edit.items():
        doc[section].update({k: float(v) if v == "nan" else v for k, v in values.items()})
    path.write_text(json.dumps(doc))
    before = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    for args in (["train", "--resume", run_dir, "--steps", 40], ["eval", run_dir], ["export", run_dir, "-o",
                                                                                      tmp_path / "p.nmp"]):
        _one_line_error(*cli(*args)[::2], next(iter(next(iter(edit.values())))))
    assert {p.name: p.read_bytes() for p in run_dir.iterdir()} == before


@pytest.mark.parametrize("args, words", [
    (["--seed", "-3"], ["seed"]), (["--seed", "1e23"], ["--seed"]), (["--seeds", ""], ["seed"]),
    (["--seed", str(2**32)], ["seed"]), (["--seeds", "0-99999999999999"], ["seeds"]), (["--seeds", "5-2"], ["seed"]),
    (["--seeds", "-1"], ["seed"]), (["--steps", "1e6"], ["--steps"]), (["--shards", "-2"], ["shards"]),
])
def test_bad_seeds_and_flags_are_one_line(cli, runs_root, args, words):
    _one_line_error(*cli("train", "pendulum", "--steps", 20, *args, "--quiet")[::2], *words)
    assert not any(runs_root.iterdir())


def test_json_summary_is_strict_json(cli, tmp_path):
    code, out, _ = cli("train", "pendulum", "--run-dir", tmp_path / "r", "--steps", 20, "--json", *FAST)
    assert code == 0
    json.loads(out.strip().splitlines()[-1], parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))


def test_validate_names_the_field_and_value():
    cfg = TD3Config(gamma=2.0)
    with pytest.raises(UserError, match=r"gamma must be .*got 2\.0"):
        config.validate(cfg)


def test_ppo_steps_in_the_config_are_what_is_trained(cli, tmp_path):
    run_dir = tmp_path / "ppo"
    code, out, err = cli("train", "pendulum", "--algo", "ppo", "--env-steps", 100, "--run-dir", run_dir,
                         "--set", "eval_episodes=1", "--set", "num_envs=4", "--set", "num_steps=50",
                         "--set", "minibatch_size=100", "--set", "epochs=1", "--json")
    assert code == 0, err
    assert "100 steps become 200" in err
    assert json.loads((run_dir / "config.json").read_text())["run"]["steps"] == 200
    assert json.loads(out.strip().splitlines()[-1])["steps"] == 200


def test_json_lines_never_hold_bare_nan(monkeypatch, cli, tmp_path):
    from neuromotor.training import loop

    real = loop.train

    def nan_summary(*a, **k):
        summary = real(*a, **k)
        summary["eval_return_mean"] = float("nan")
        return summary

    monkeypatch.setattr(loop, "train", nan_summary)
    code, out, _ = cli("train", "pendulum", "--run-dir", tmp_path / "r", "--steps", 20, "--json", *FAST)
    line = json.loads(out.strip().splitlines()[-1], parse_constant=lambda c: pytest.fail(f"bare {c}"))
    assert line["eval_return_mean"] is None

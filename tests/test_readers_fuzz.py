"""Property-based fuzzing of the settings layer and every reader of a host file: whatever the
bytes, the answer is a value or a UserError, never another exception (fixed budget, no
deadline, derandomised so a failure is the same on every machine)."""

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neuromotor import reading
from neuromotor.algos.td3 import Config as TD3Config
from neuromotor.errors import UserError
from neuromotor.policy.policy_file import decode
from neuromotor.training import checkpoint, config, rundir, sweep

BUDGET = settings(max_examples=150, deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                                max_size=4),
                    max_leaves=20)
SETTING_KEYS = st.sampled_from(["batch_size", "actor_lr", "actor_hidden", "steps", "gamma", "activation",
                                "eval_every", "shards", "nope", ""])


def _value_or_user_error(fn, *args):
    try:
        return fn(*args)
    except UserError as exc:
        assert "\n" not in str(exc)
        return exc


@BUDGET
@given(st.text(max_size=200))
def test_json_and_toml_text(text):
    _value_or_user_error(reading.parse_json, text, "x")
    _value_or_user_error(reading.parse_toml, text, "x")


@BUDGET
@given(st.lists(st.tuples(SETTING_KEYS, st.text(max_size=40) | st.from_regex(r"-?[0-9e.]{1,12}", fullmatch=True)),
                max_size=5))
def test_set_options(items):
    def settle():
        overrides = config.parse_set([f"{k}={v}" for k, v in items])
        run_cfg, algo_cfg = config.RunConfig(), TD3Config()
        config.apply(overrides, run_cfg, algo_cfg)
        config.validate(run_cfg, algo_cfg)
    _value_or_user_error(settle)


@BUDGET
@given(st.binary(max_size=300))
def test_policy_files(data):
    _value_or_user_error(decode, data, "p.nmp")


@BUDGET
@given(data=st.binary(max_size=400))
def test_checkpoints(tmp_path, data):
    path = tmp_path / "c.npz"
    path.write_bytes(data)
    _value_or_user_error(checkpoint.load, path, {"steps": np.int64(0), "actor": np.zeros((2, 3), np.float32)})


@BUDGET
@given(lines=st.lists(JSON.map(json.dumps) | st.text(max_size=30), max_size=6))
def test_metrics(tmp_path, lines):
    (tmp_path / rundir.METRICS).write_text("\n".join(lines))
    _value_or_user_error(rundir.read_metrics, tmp_path)


@BUDGET
@given(doc=JSON)
def test_run_configs_and_sweep_plans(tmp_path, doc):
    (tmp_path / rundir.CONFIG).write_text(json.dumps(doc))
    (tmp_path / sweep.PLAN).write_text(json.dumps(doc))
    _value_or_user_error(rundir.read_config, tmp_path)
    _value_or_user_error(sweep.read_plan, tmp_path)


def test_the_fuzz_reaches_the_error_paths():
    assert isinstance(_value_or_user_error(reading.parse_json, "{", "x"), UserError)
    with pytest.raises(AssertionError):
        _value_or_user_error(lambda: (_ for _ in ()).throw(UserError("two\nlines")))

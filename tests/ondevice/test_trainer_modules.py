"""The trainer's modules on the unix MicroPython build: the policy file it saves goes through
neuromotor_rt's writer (version 2, actions clamped to the pendulum's torque limits) and is the
policy the board trained; the pure-Python kernels (nm_td3_py) are loaded only when asked for
or when no native training module exists; the serial server is its own module."""

import json

import numpy as np

from neuromotor.policy.policy_file import decode

from .conftest import run_mp

SAVE = """
import json, nm_td3
from array import array
t = nm_td3.Trainer('small', seed=2)
t.train(150)
t.finish_learning()  # as the serial server does before it evaluates and saves
path, size = t.save_policy({path!r})
obs = {obs!r}
acts = [list(t.policy_action(array('f', o), array('f', [0.0])))[0] for o in obs]
try:
    t.train(160)
    again = 'trained'
except ValueError as e:
    again = str(e)
print(json.dumps({{'path': path, 'size': size, 'acts': acts, 'again': again}}))
"""


def test_saved_policy_is_the_trained_actor(micropython_train, tmp_path):
    path = tmp_path / "td3.nmp"
    path.write_bytes(b"an older policy")  # replaced, as a regular file may be
    obs = np.random.default_rng(0).uniform(-1, 1, (6, 3)).astype(np.float32) * [1, 1, 8]
    out = run_mp(micropython_train, SAVE.format(path=str(path), obs=obs.tolist()))
    board = json.loads(out.strip().splitlines()[-1])
    data = path.read_bytes()
    assert board["path"] == str(path) and board["size"] == len(data)
    assert board["again"] == "this trainer has finished learning (finish_learning): make a new one"
    spec = decode(data, "board policy")  # checks magic, version, CRC and every value
    assert spec.sizes == [3, 32, 32, 1]
    assert spec.action_low.tolist() == [-2.0] and spec.action_high.tolist() == [2.0]
    assert not list(tmp_path.glob("*.tmp")), "the writer left its temporary file"
    # the file computes what the board's actor computed, in torque units
    np.testing.assert_allclose(spec.forward(obs)[:, 0], 2.0 * np.array(board["acts"]), atol=1e-5)


MODULES = """
import sys, nm_td3
t = nm_td3.Trainer({profile}, seed=0{kernels})
t.train(30)
print('LOADED', 'nm_td3_py' in sys.modules, 'nm_td3_server' in sys.modules, 'nm_link' in sys.modules, t.K.HOME)
"""


def test_python_kernels_only_without_native(micropython_train):
    out = run_mp(micropython_train, MODULES.format(profile="'small'", kernels=""))
    assert "LOADED False False False usermod" in out, out
    tiny = "{'hidden': (4, 4), 'batch': 4, 'replay': 20}"
    out = run_mp(micropython_train, MODULES.format(profile=tiny, kernels=", kernels_=nm_td3.kernels('python')"))
    assert "LOADED True False False python" in out, out

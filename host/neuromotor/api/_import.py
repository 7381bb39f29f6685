"""Policies trained elsewhere (ONNX graphs, RLtools checkpoints) as neuromotor policy files."""

import os
from pathlib import Path

from neuromotor.api import _formats
from neuromotor.errors import UserError
from neuromotor.policy.importers.network import assemble
from neuromotor.policy.policy_file import encode
from neuromotor.reading import MIB
from neuromotor.safe_write import atomic_write, check_target

MAX_SOURCE = 1024 * MIB  # a policy a board can hold is far smaller


def import_policy(path, output=None, *, format: "str | None" = None, obs_mean=None, obs_std=None,
                  action_low=None, action_high=None, env: "str | None" = None, env_kwargs: "dict | None" = None):
    """Read the policy in `path` (format "onnx" or "rltools-h5"; default: by its suffix, .onnx,
    .h5, .hdf5) and, with `output`, write it as a policy file (.nmp, atomically; nothing is
    written when anything is refused). Returns the PolicySpec; `spec.meta["import"]` says what
    was read and where each part came from.

    What the file lacks comes from the options: `obs_mean`, `obs_std` (one number for all, or
    one per observation; default no normalisation), the action bounds `action_low` and
    `action_high`, or `env` (with `env_kwargs`) to take that env's bounds. An actor ending in
    tanh without an action map of its own is rescaled from [-1, 1] to the bounds (what
    Stable-Baselines3's TD3 and SAC do); a policy whose output is unbounded needs bounds."""
    source = os.fspath(path)
    fmt = _formats.policy_format(_formats.IMPORT, format, source)
    if not os.path.isfile(source):
        raise UserError(f"{source}: no such file")
    if os.path.getsize(source) > MAX_SOURCE:
        raise UserError(f"{source}: {os.path.getsize(source)} bytes; a policy to import is at most {MAX_SOURCE}")
    target = None
    if output is not None:
        target = check_target(os.fspath(output), protected=[Path(source)], follow=True)
    net = _formats.resolve(fmt.handler)(source)
    spec, report = assemble(net, obs_mean, obs_std, action_low, action_high, env, env_kwargs)
    verify = report.pop("verify", None)
    if verify is not None:
        report.update(verify(spec))
    data = encode(spec)  # refuses what no policy file may hold before anything is written
    if target is not None:
        atomic_write(os.fspath(output), data, protected=[Path(source)], follow=True)
        report["output"] = os.fspath(output)
        report["bytes"] = len(data)
    report["source"] = source
    spec.meta["import"] = report
    return spec

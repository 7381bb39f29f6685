"""Helpers for the device tests: run scripts on a MicroPython binary, random policies."""

import dataclasses
import struct
import subprocess
import tempfile
import zlib

import numpy as np

from neuromotor.policy.spec import PolicySpec


class MicroPythonError(AssertionError):
    pass


# For MicroPython scripts that check refusals line by line: attempt(f, *a) prints 'ok', or the
# TypeError or ValueError that f(*a) raised.
ATTEMPT = """
def attempt(f, *a):
    try:
        f(*a)
        print('ok')
    except (TypeError, ValueError) as e:
        print(type(e).__name__, e)
"""


def run_script(binary, script: str, timeout: float = 120, check: bool = True, cwd=None):
    """Run `script` (passed with -c) on a MicroPython binary; return the CompletedProcess.
    With check, a non-zero exit raises with the script's output."""
    # sys.path[0] is the working directory: run in an empty one so no stray
    # neuromotor_rt.py/.mpy lying around shadows the frozen module.
    with tempfile.TemporaryDirectory() as empty:
        proc = subprocess.run([str(binary), "-X", "heapsize=64M", "-c", script], capture_output=True,
                              text=True, timeout=timeout, cwd=cwd or empty)
    if check and proc.returncode != 0:
        raise MicroPythonError(f"micropython exited with {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\n"
                               f"stderr:\n{proc.stderr[-3000:]}")
    return proc


def native_loop_script(natmod_dir, kernels: str, policy, n_obs: int) -> str:
    """The opening of a MicroPython script that measures allocation: the policy file loaded
    on the native backend with the `kernels` module, an observation `obs` and `run(n)`, which
    calls the policy n times and returns its last action, already run once to warm up."""
    return f"""
import gc, sys
from array import array
sys.path.append({str(natmod_dir)!r})
import {kernels} as k
import neuromotor_rt as rt
p = rt.Policy.load({str(policy)!r}, backend='native', kernels=k)
obs = array('f', [0.1 * i for i in range({n_obs})])
def run(n):
    i = 0
    while i < n:  # no range object: the loop itself must not allocate
        a = p(obs)
        i += 1
    return a
a = run(10)
"""


def random_spec(sizes, seed=0, activations=None) -> PolicySpec:
    rng = np.random.default_rng(seed)
    n = len(sizes) - 1
    acts = activations or ["relu"] * (n - 1) + ["tanh"]
    weights = [(rng.standard_normal((b, a)) / np.sqrt(a)).astype(np.float32) for a, b in zip(sizes[:-1], sizes[1:])]
    biases = [(0.1 * rng.standard_normal(b)).astype(np.float32) for b in sizes[1:]]
    return PolicySpec(weights, biases, acts,
                      obs_mean=rng.standard_normal(sizes[0]).astype(np.float32),
                      obs_std=(0.5 + rng.random(sizes[0])).astype(np.float32),
                      action_scale=(1.0 + rng.random(sizes[-1])).astype(np.float32),
                      action_offset=(0.1 * rng.standard_normal(sizes[-1])).astype(np.float32),
                      meta={"test": "random"})


def clamped_spec(sizes=(5, 7, 3), seed=4, gain=20.0) -> PolicySpec:
    """A policy shaped like PPO's export (identity output, scale 1, offset 0) whose raw
    actions leave its limits ([-1, 1], last dimension [-0.25, 2]) for most inputs."""
    spec = random_spec(list(sizes), seed=seed, activations=["tanh"] * (len(sizes) - 2) + ["identity"])
    a = sizes[-1]
    return dataclasses.replace(spec, weights=spec.weights[:-1] + [gain * spec.weights[-1]],
                               action_scale=np.ones(a), action_offset=np.zeros(a),
                               action_low=np.float32([-1.0] * (a - 1) + [-0.25]),
                               action_high=np.float32([1.0] * (a - 1) + [2.0]))


def patched(data: bytes, index: int, value: float) -> bytes:
    """A policy file with payload float `index` replaced and its CRC made right again."""
    hlen = struct.unpack_from("<H", data, 6)[0]
    body = bytearray(data[:-4])
    struct.pack_into("<f", body, hlen + 4 * index, value)
    return bytes(body) + struct.pack("<I", zlib.crc32(body))

"""The armv6m natmod (the .mpy for Cortex-M0/M0+ boards) runs on the emulated Cortex-M4F:
its Thumb-1 code executes unchanged there, and every float crosses in a buffer (a
soft-float natmod would read a scalar float argument through the wrong ABI on hard-float
firmware; buffers are plain memory). Its int8 actions are the NumPy reference's bits, and
its float actions are the bits the same kernels give bare metal on a Cortex-M0
(tests/boards/test_armv6m_baremetal.py): the natmod divides as every other home does."""

import struct

import numpy as np
import pytest
from test_xtensa_baremetal import policy_case

from neuromotor.boards import policy_baremetal as pb
from neuromotor.policy.policy_file import layout, pack_clamp, pack_net
from neuromotor.policy.quantize import pack_qnet
from neuromotor.paths import cache_dir


def _script(net_code: str, scratch_arg: str, lay, clamp, obs, act_dim) -> str:
    return f"""
import struct
from array import array
k = __import__('nm_kernels_natmod')
net = {net_code}
lay = array('H', {list(lay)!r})
out = array('f', bytes({4 * act_dim}))
clamp = array('f', {struct.pack(f'<{len(clamp)}f', *clamp)!r})
scratch = array('f', bytes(4 * k.scratch_size(lay{scratch_arg})))
for r in {[struct.pack(f'<{len(o)}f', *o) for o in obs]!r}:
    k.mlp(out, array('f', r), net, lay, scratch, clamp)
    print(*struct.unpack('<{act_dim}I', out))
"""


def _run(mpremote, port, script):
    out = mpremote(port, "exec", script, timeout=120)
    return np.array([[int(v) for v in line.split()] for line in out.splitlines()], np.uint32)


def test_armv6m_natmod_on_cortex_m4(qemu_m4f, mpremote):
    mpy = cache_dir() / "natmods" / "armv6m" / "nm_kernels_natmod.mpy"
    if not mpy.exists():
        pytest.fail(f"{mpy} missing: run `make natmods`")
    spec, qp, obs = policy_case()
    obs = obs[:4]
    lay, clamp, act_dim = layout(spec), pack_clamp(spec), spec.act_dim
    mpremote(qemu_m4f.port, "cp", str(mpy), ":nm_kernels_natmod.mpy")
    try:
        got_q = _run(mpremote, qemu_m4f.port,
                     _script(f"array('b', {pack_qnet(qp)!r})", ", 1", lay, clamp, obs, act_dim))
        got_f = _run(mpremote, qemu_m4f.port,
                     _script(f"array('f', {pack_net(spec).astype('<f4').tobytes()!r})", "", lay, clamp, obs, act_dim))
    finally:
        mpremote(qemu_m4f.port, "fs", "rm", ":nm_kernels_natmod.mpy", check=False)
    np.testing.assert_array_equal(got_q, qp.forward(obs).view(np.uint32))
    m0 = pb.run_policy("armv6m", spec, qp, obs)
    np.testing.assert_array_equal(got_f, m0["float"].view(np.uint32))

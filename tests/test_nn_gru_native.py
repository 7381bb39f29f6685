"""The GRU's steps in C (neuromotor.native._nm_host.gru_forward and gru_backward,
device/native/nm_host/nm_host_gru.h), which neuromotor.nn.gru takes in float32: the NumPy
reference's outputs, tape and gradients to float32 rounding on every instruction-set path, tapes
that either backward reads, a member's numbers the same bits alone or in a population, and bad
arrays refused with a ValueError before anything is written."""

import numpy as np
import pytest

from neuromotor.nn import gru
from neuromotor.nn.gru import GRUParams

_nm_host = pytest.importorskip("neuromotor.native._nm_host")

T, B, N_IN, H = 7, 5, 4, 6
TAPE = ("h_prev", "r", "z", "n", "ghn")


def _case(pop, start=True, final=True, resets=True, seed=0):
    """Parameters (non-zero h0), inputs, a start state (or None), resets (row 1 at step 0 among
    them, or None), dL/d outputs and dL/d final state (or None), float32."""
    rng = np.random.default_rng(seed)
    f32 = lambda *shape: rng.uniform(-0.8, 0.8, shape).astype(np.float32)  # noqa: E731
    p = GRUParams(f32(*pop, 3 * H, N_IN), f32(*pop, 3 * H), f32(*pop, 3 * H, H), f32(*pop, 3 * H), f32(*pop, H))
    r = rng.random((T, *pop, B)) < 0.25
    r[0, ..., 1] = True
    return (p, rng.normal(size=(T, *pop, B, N_IN)).astype(np.float32), f32(*pop, B, H) if start else None,
            r if resets else None, rng.normal(size=(T, *pop, B, H)).astype(np.float32),
            f32(*pop, B, H) if final else None)


def _numpy(monkeypatch, fn, *args):
    """fn(*args) through the NumPy reference."""
    with monkeypatch.context() as m:
        m.setattr(gru, "_nm_host", None)
        return fn(*args)


def _close(got, want, what):
    """Equal to float32 rounding: within 1e-5 of the array's scale."""
    assert got.shape == want.shape and got.dtype == want.dtype == np.float32, what
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * max(1.0, float(np.abs(want).max(initial=0))),
                               err_msg=what)


def _check(got, want, params):
    (out, h, tape), (grads, d_x, d_h) = got
    (out_, h_, tape_), (grads_, d_x_, d_h_) = want
    for a, b, what in [(out, out_, "out"), (h, h_, "final state"), (d_x, d_x_, "d_x"), (d_h, d_h_, "d_h")] + [
            (getattr(tape, name), getattr(tape_, name), name) for name in TAPE]:
        _close(a, b, what)
    if params:
        for name in GRUParams.NAMES:
            _close(getattr(grads, name), getattr(grads_, name), "d_" + name)
    else:
        assert grads is None and grads_ is None


def _passes(p, x, h, resets, d_out, d_final, params):
    out, h_final, tape = gru.forward(p, x, h, resets)
    return (out, h_final, tape), gru.backward(p, tape, d_out, d_final, params)


@pytest.mark.parametrize("pop", [(), (3,), (2, 2)])
@pytest.mark.parametrize("start,final,params", [(True, True, True), (False, False, True), (True, False, False),
                                                (False, True, False)])
def test_c_steps_are_the_numpy_reference(monkeypatch, pop, start, final, params):
    p, x, h, resets, d_out, d_final = _case(pop, start, final)
    got = _passes(p, x, h, resets, d_out, d_final, params)
    _check(got, _numpy(monkeypatch, _passes, p, x, h, resets, d_out, d_final, params), params)
    assert np.abs(got[1][2][..., 1, :]).max() == 0  # row 1 reset at step 0: its start has no gradient


@pytest.mark.parametrize("isa", [1, 2, 3])
def test_every_instruction_set_path(monkeypatch, isa):
    best = _nm_host.isa()
    if isa > best:
        pytest.skip(f"instruction-set path {isa} is not available on this CPU")
    case = _case((2,), resets=False, seed=isa)
    try:
        _nm_host.isa(isa)
        got = _passes(*case, True)
    finally:
        _nm_host.isa(best)
    _check(got, _numpy(monkeypatch, _passes, *case, True), True)


def test_either_backward_reads_either_tape(monkeypatch):
    p, x, h, resets, d_out, d_final = _case((3,))
    _, _, c_tape = gru.forward(p, x, h, resets)
    _, _, np_tape = _numpy(monkeypatch, gru.forward, p, x, h, resets)
    for tape in (c_tape, np_tape):
        got = gru.backward(p, tape, d_out, d_final)
        want = _numpy(monkeypatch, gru.backward, p, tape, d_out, d_final)
        for a, b, what in [(got[1], want[1], "d_x"), (got[2], want[2], "d_h")] + [
                (getattr(got[0], name), getattr(want[0], name), name) for name in GRUParams.NAMES]:
            _close(a, b, what)


def test_a_member_alone_is_the_same_bits_as_inside_a_population():
    p, x, h, resets, d_out, d_final = _case((2, 3))
    out, h_final, tape = gru.forward(p, x, h, resets)
    grads, d_x, d_h = gru.backward(p, tape, d_out, d_final)
    for m in np.ndindex(2, 3):
        q = GRUParams(*(getattr(p, name)[m] for name in GRUParams.NAMES))
        at = (slice(None), *m)
        out1, h1, tape1 = gru.forward(q, x[at], h[m], resets[at])
        grads1, d_x1, d_h1 = gru.backward(q, tape1, d_out[at], d_final[m])
        for a, b in [(out1, out[at]), (h1, h_final[m]), (d_x1, d_x[at]), (d_h1, d_h[m])] + [
                (getattr(grads1, name), getattr(grads, name)[m]) for name in GRUParams.NAMES]:
            np.testing.assert_array_equal(a, b)


def test_broadcast_inputs_and_empty_sequences(monkeypatch):
    """Inputs, states and resets whose population axes are 1 (every member reads the same), and
    sequences of no steps or no rows, as NumPy computes them."""
    p, x, h, resets, d_out, d_final = _case((2, 3))
    args = (p, x[:, :, :1], h[:, :1], resets[:, :, :1], d_out, d_final, True)
    _check(_passes(*args), _numpy(monkeypatch, _passes, *args), True)
    for steps, rows in ((0, B), (T, 0)):
        args = (p, x[:steps, ..., :rows, :], h[..., :rows, :], None, d_out[:steps, ..., :rows, :],
                d_final[..., :rows, :], True)
        _check(_passes(*args), _numpy(monkeypatch, _passes, *args), True)


def test_float32_takes_the_c_steps_and_float64_numpys(monkeypatch):
    calls = []

    class Counting:
        def __getattr__(self, name):
            calls.append(name)
            return getattr(_nm_host, name)

    monkeypatch.setattr(gru, "_nm_host", Counting())
    case = _case((2,))
    _passes(*case, True)
    assert calls == ["gru_forward", "gru_backward"]
    p, x, h, resets, d_out, d_final = case
    p = GRUParams(*(getattr(p, name).astype(np.float64) for name in GRUParams.NAMES))
    (out, _, _), (grads, _, _) = _passes(p, x.astype(np.float64), h, resets, d_out.astype(np.float64), d_final, True)
    assert out.dtype == grads.wh.dtype == np.float64 and len(calls) == 2


def _forward_args(M=2):
    rng = np.random.default_rng(1)
    f32 = lambda *shape: rng.uniform(-1, 1, shape).astype(np.float32)  # noqa: E731
    return {"gi": f32(T, M, B, 3 * H), "h": f32(M, B, H), "h0": f32(M, H), "wh": f32(M, 3 * H, H),
            "bh": f32(M, 3 * H), "resets": rng.random((T, M, B)) < 0.3,
            **{name: np.full((T, M, B, H), 7, np.float32) for name in ("out", *TAPE)}}


def _backward_args(M=2):
    rng = np.random.default_rng(2)
    f32 = lambda *shape: rng.uniform(-1, 1, shape).astype(np.float32)  # noqa: E731
    return {"d_out": f32(T, M, B, H), "d_final": f32(M, B, H), "wh": f32(M, 3 * H, H),
            "resets": rng.random((T, M, B)) < 0.3, **{name: f32(T, M, B, H) for name in TAPE},
            "d_gi": np.full((T, M, B, 3 * H), 7, np.float32), "d_h": np.full((M, B, H), 7, np.float32),
            "d_wh": np.full((M, 3 * H, H), 7, np.float32), "d_bh": np.full((M, 3 * H), 7, np.float32),
            "d_h0": np.full((M, H), 7, np.float32)}


WRITTEN = {"forward": ("out", *TAPE), "backward": ("d_gi", "d_h", "d_wh", "d_bh", "d_h0")}
BAD = [
    ("forward", "gi", lambda a: a.astype(np.float64), "gi must be float32"),
    ("forward", "gi", lambda a: a[..., :3 * H - 1].copy(), "gi: the last axis must be 3 H"),
    ("forward", "h", lambda a: a[:, :-1].copy(), "h: axis 1 must be 5 long, got 4"),
    ("forward", "h0", lambda a: a[None], "h0 must have 2 axes, got 3"),
    ("forward", "wh", lambda a: np.swapaxes(a, 1, 2), "wh must be a C-contiguous float32 array"),
    ("forward", "resets", lambda a: a.astype(np.uint8), "resets must be bool"),
    ("forward", "out", lambda a: a[:-1], "out: axis 0 must be 7 long, got 6"),
    ("forward", "r", lambda a: np.broadcast_to(a, a.shape), "r must be a C-contiguous, writable float32 array"),
    ("forward", "z", lambda a: None, "overlap"),  # z is r itself
    ("backward", "d_out", lambda a: a.astype(np.float64), "d_out must be float32"),
    ("backward", "d_final", lambda a: a[:1], "d_final: axis 0 must be 2 long, got 1"),
    ("backward", "ghn", lambda a: a[..., :-1].copy(), "ghn: axis 3 must be 6 long, got 5"),
    ("backward", "d_gi", lambda a: a[..., :H].copy(), "d_gi: axis 3 must be 18 long, got 6"),
    ("backward", "d_bh", lambda a: None, "d_wh, d_bh and d_h0 must be all arrays or all None"),
    ("backward", "d_h", lambda a: None, "overlap"),  # d_h inside d_wh
]


@pytest.mark.parametrize("which,name,bad,message", BAD)
def test_bad_arrays_are_refused_before_anything_is_written(which, name, bad, message):
    args = _forward_args() if which == "forward" else _backward_args()
    if message == "overlap":
        args[name] = args["r"] if which == "forward" else args["d_wh"].reshape(-1)[:args["d_h"].size].reshape(2, B, H)
    else:
        args[name] = bad(args[name])
    written = {key: args[key].copy() for key in WRITTEN[which] if args[key] is not None}
    fn = _nm_host.gru_forward if which == "forward" else _nm_host.gru_backward
    with pytest.raises(ValueError, match=message) as err:
        fn(*args.values())
    assert "\n" not in str(err.value)
    for key, before in written.items():
        np.testing.assert_array_equal(args[key], before, err_msg=key)


@pytest.mark.parametrize("which", ["forward", "backward"])
def test_good_arrays_are_accepted(which):
    """What the refusals above alter, unaltered, runs (resets and d_final None too)."""
    args = _forward_args() if which == "forward" else _backward_args()
    fn = _nm_host.gru_forward if which == "forward" else _nm_host.gru_backward
    assert fn(*args.values()) is None
    args["resets"] = None
    if which == "backward":
        args.update(d_final=None, d_wh=None, d_bh=None, d_h0=None)
    assert fn(*args.values()) is None
    assert not np.any(args["d_gi" if which == "backward" else "out"] == 7)

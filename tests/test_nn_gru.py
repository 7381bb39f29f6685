"""The host GRU (neuromotor.nn.gru) and the recurrent policy network: forward equals the policy
file's reference step, backward equals finite differences (float64), and torch.nn.GRU agrees
where torch is installed (`make compare`)."""

import numpy as np
import pytest

from neuromotor.nn import gru
from neuromotor.nn.gru import GRUParams
from neuromotor.nn.optim import Adam
from neuromotor.nn.recurrent import RecurrentNet, RecurrentPolicyNet
from neuromotor.policy.spec import gru_step

T, B, N_IN, H = 5, 3, 4, 6


def _params(dtype, seed=0):
    p = gru.init_params(N_IN, H, np.random.default_rng(seed), dtype)
    p.h0[...] = np.random.default_rng(seed + 1).uniform(-0.5, 0.5, H)  # a non-zero start is checked too
    return p


def test_forward_is_the_policy_files_step_with_resets():
    p = _params(np.float32)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(T, B, N_IN)).astype(np.float32)
    h_start = rng.normal(size=(B, H)).astype(np.float32)
    resets = np.zeros((T, B), bool)
    resets[2, 1] = True
    out, h_final, _ = gru.forward(p, x, h_start, resets)
    h = h_start
    for t in range(T):
        h = np.where(resets[t][:, None], p.h0, h)
        h = gru_step(x[t], h, p.wi, p.bi, p.wh, p.bh)
        np.testing.assert_allclose(out[t], h, rtol=1e-5, atol=1e-6)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(h_final, out[-1])


def _loss(p, x, h_start, resets, weights):
    out, _, _ = gru.forward(p, x, h_start, resets)
    return float((out * weights).sum())


@pytest.mark.parametrize("from_h0", [False, True])
def test_backward_matches_finite_differences(from_h0):
    p = _params(np.float64)
    rng = np.random.default_rng(3)
    x = rng.normal(size=(T, B, N_IN))
    h_start = None if from_h0 else rng.normal(size=(B, H))
    resets = np.zeros((T, B), bool)
    resets[3, 0] = resets[1, 2] = True
    weights = rng.normal(size=(T, B, H))
    _, _, tape = gru.forward(p, x, h_start, resets)
    grads, d_x, d_start = gru.backward(p, tape, weights)
    if from_h0:  # every row started from h0: its gradient is the rows' too
        grads.h0 = grads.h0 + d_start.sum(0)
    eps = 1e-6
    checks = [(getattr(p, name), getattr(grads, name), name) for name in GRUParams.NAMES] + [(x, d_x, "x")]
    if not from_h0:
        checks.append((h_start, d_start, "h_start"))
    for array, grad, name in checks:
        numeric = np.zeros_like(array)
        for i in np.ndindex(array.shape):
            keep = array[i]
            array[i] = keep + eps
            up = _loss(p, x, h_start, resets, weights)
            array[i] = keep - eps
            down = _loss(p, x, h_start, resets, weights)
            array[i] = keep
            numeric[i] = (up - down) / (2 * eps)
        np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8, err_msg=name)
        assert np.abs(numeric).max() > 0, name


def test_policy_net_gradient_matches_finite_differences():
    rng = np.random.default_rng(4)
    net = RecurrentPolicyNet(5, 2, 7, 4, rng, np.float64)
    x = rng.normal(size=(6, 3, 5))
    resets = np.zeros((6, 3), bool)
    resets[4, 1] = True
    target = rng.uniform(-0.9, 0.9, size=(6, 3, 2))

    def loss():
        y, _, _ = net.forward(x, None, resets)
        return 0.5 * float(((y - target) ** 2).sum())

    y, _, cache = net.forward(x, None, resets)
    grad = net.backward(cache, y - target)
    numeric = np.zeros_like(grad)
    for i in range(len(grad)):
        keep = net.params[i]
        net.params[i] = keep + 1e-6
        up = loss()
        net.params[i] = keep - 1e-6
        down = loss()
        net.params[i] = keep
        numeric[i] = (up - down) / 2e-6
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-8)
    assert np.abs(net.views(grad)["h0"]).max() > 0


def _critic_like(pop, seed_of):
    return RecurrentNet(5, 7, 4, [(6, "relu"), (1, "identity")], seed_of, pop=pop, dtype=np.float64)


def test_a_population_computes_what_its_members_compute_alone():
    """Members (P, 2) in one batched pass: each one's outputs, gradients and input gradients are
    those of the same network built and run alone."""
    rng = np.random.default_rng(7)
    pop = _critic_like((3, 2), lambda m: np.random.default_rng(list(m)))
    x = rng.normal(size=(6, 3, 1, 4, 5))             # every member of an agent reads the same input
    resets = rng.random((6, 3, 1, 4)) < 0.2
    d_y = rng.normal(size=(6, 3, 2, 4, 1))
    y, h, cache = pop.forward(x, None, resets)
    grad, d_x = pop.backward(cache, d_y, need_dx=True)
    assert y.shape == (6, 3, 2, 4, 1) and grad.shape == (3, 2, pop.size) and d_x.shape == (6, 3, 2, 4, 5)
    for k, c in np.ndindex(3, 2):
        alone = _critic_like((), lambda m: np.random.default_rng([k, c]))
        np.testing.assert_array_equal(alone.params, pop.params[k, c])
        y1, h1, cache1 = alone.forward(x[:, k, 0], None, resets[:, k, 0])
        grad1, d_x1 = alone.backward(cache1, d_y[:, k, c], need_dx=True)
        np.testing.assert_allclose(y1, y[:, k, c], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(h1, h[k, c], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(grad1, grad[k, c], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(d_x1, d_x[:, k, c], rtol=1e-10, atol=1e-12)


def test_head_and_input_gradients_match_finite_differences():
    rng = np.random.default_rng(8)
    net = _critic_like((2,), lambda m: np.random.default_rng(m[0]))
    x = rng.normal(size=(5, 2, 3, 5))
    resets = np.zeros((5, 2, 3), bool)
    resets[2, 1, 0] = True
    weights = rng.normal(size=(5, 2, 3, 1))

    def loss():
        return float((net.forward(x, None, resets)[0] * weights).sum())

    _, _, cache = net.forward(x, None, resets)
    grad, d_x = net.backward(cache, weights, need_dx=True)
    for array, analytic in ((net.params, grad), (x, d_x)):
        numeric = np.zeros_like(array)
        for i in np.ndindex(array.shape):
            keep = array[i]
            array[i] = keep + 1e-6
            up = loss()
            array[i] = keep - 1e-6
            down = loss()
            array[i] = keep
            numeric[i] = (up - down) / 2e-6
        np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-8)
        assert np.abs(numeric).max() > 0


def test_one_step_continuations_equal_running_the_prefix():
    """What recurrent TD3's targets rest on: continuing one step from the state each step started
    from, with another input, is the sequence run up to that step with that input last."""
    rng = np.random.default_rng(9)
    net = _critic_like((), lambda m: np.random.default_rng(1))
    x = rng.normal(size=(6, 3, 5))
    resets = np.zeros((6, 3), bool)
    resets[0] = resets[3, 2] = True
    other = rng.normal(size=(6, 3, 5))
    _, _, cache = net.forward(x, None, resets)
    y, _, _ = net.forward(gru.time_flat(other)[None], net.states_before(cache))  # rows step-major
    for t in range(6):
        prefix = np.concatenate([x[:t], other[t:t + 1]])
        want, _, _ = net.forward(prefix, None, resets[:t + 1])
        np.testing.assert_allclose(y[0, t * 3:(t + 1) * 3], want[-1], rtol=1e-12, atol=1e-12)


def test_adam_fits_a_sequence_that_needs_memory():
    """The target is the input of the step before: only a network that remembers fits it."""
    rng = np.random.default_rng(5)
    net = RecurrentPolicyNet(1, 1, 16, 16, rng)
    opt = Adam(len(net.params), lr=1e-2)
    x = rng.uniform(-1, 1, size=(20, 32, 1)).astype(np.float32)
    target = np.concatenate([np.zeros((1, 32, 1), np.float32), x[:-1]]) * np.float32(0.8)

    def loss_and_grad():
        y, _, cache = net.forward(x)
        return float(((y - target) ** 2).mean()), net.backward(cache, 2 * (y - target) / y.size)

    first, _ = loss_and_grad()
    for _ in range(300):
        _, grad = loss_and_grad()
        opt.step(net.params, grad)
    last, _ = loss_and_grad()
    assert net.params.dtype == np.float32
    assert last < 0.1 * first


def test_matches_torch_gru():
    torch = pytest.importorskip("torch")
    p = _params(np.float32)
    rng = np.random.default_rng(6)
    x = rng.normal(size=(T, B, N_IN)).astype(np.float32)
    h_start = rng.normal(size=(B, H)).astype(np.float32)
    d_out = rng.normal(size=(T, B, H)).astype(np.float32)
    model = torch.nn.GRU(N_IN, H)
    with torch.no_grad():
        for ours, theirs in ((p.wi, "weight_ih_l0"), (p.bi, "bias_ih_l0"), (p.wh, "weight_hh_l0"), (p.bh, "bias_hh_l0")):
            getattr(model, theirs).copy_(torch.from_numpy(ours))
    tx = torch.from_numpy(x).requires_grad_()
    th = torch.from_numpy(h_start)[None].requires_grad_()
    t_out, _ = model(tx, th)
    (t_out * torch.from_numpy(d_out)).sum().backward()
    out, _, tape = gru.forward(p, x, h_start)
    grads, d_x, d_start = gru.backward(p, tape, d_out)
    np.testing.assert_allclose(out, t_out.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(d_x, tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(d_start, th.grad.numpy()[0], rtol=1e-4, atol=1e-5)
    for ours, theirs in ((grads.wi, "weight_ih_l0"), (grads.bi, "bias_ih_l0"), (grads.wh, "weight_hh_l0"),
                         (grads.bh, "bias_hh_l0")):
        np.testing.assert_allclose(ours, getattr(model, theirs).grad.numpy(), rtol=1e-4, atol=1e-5)

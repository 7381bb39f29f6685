"""The NumPy networks: finite-difference gradient check, init, Adam against its formula, polyak."""

import numpy as np
import pytest

from neuromotor.nn import MLP, Adam, polyak
from neuromotor.nn.mlp import with_ones


def _loss_and_grads(net, flat, x, target, need_dx):
    views = net.views(flat)
    ws = net.workspace(x.shape[:-1], flat.dtype)
    y = net.forward(views, x, ws)
    loss = 0.5 * float(np.sum((y - target) ** 2))
    grad = np.zeros_like(flat)
    dx = net.backward(views, ws, y - target, net.views(grad), need_dx=need_dx)
    return loss, grad, None if dx is None else dx.copy()


@pytest.mark.parametrize("acts", [("relu", "relu", "tanh"), ("tanh", "identity")])
def test_backward_matches_finite_differences(acts):
    sizes = [4] + [5] * (len(acts) - 1) + [2]
    net = MLP(sizes, acts, pop=(2, 3))
    rng = np.random.default_rng(0)
    # float64 (the code is dtype-generic) so that a tiny step sees no ReLU kink.
    flat = net.zeros().astype(np.float64)
    views = net.views(flat)
    for idx in np.ndindex(2, 3):
        net.init_member(views, idx, rng)
    x = with_ones(rng.standard_normal((2, 3, 7, 4)))
    target = rng.standard_normal((2, 3, 7, 2))
    _, grad, dx = _loss_and_grads(net, flat, x, target, need_dx=True)
    # the constant columns that carry the 1 from layer to layer are not parameters
    for a, n_out in zip(net.views(grad)[:-1], sizes[1:-1]):
        assert not a[..., n_out].any()
    eps = 1e-6

    def numeric(flat_, x_):
        return _loss_and_grads(net, flat_, x_, target, False)[0]

    trainable = np.ones(net.size, bool)
    for a in net.views(trainable)[:-1]:
        a[..., -1] = False  # the constant columns
    for i in rng.choice(np.flatnonzero(trainable), 60, replace=False):
        p, m = flat.copy(), flat.copy()
        p[i] += eps
        m[i] -= eps
        assert (numeric(p, x) - numeric(m, x)) / (2 * eps) == pytest.approx(grad[i], rel=1e-5, abs=1e-7)
    for j in [j for j in np.ndindex(x.shape) if j[-1] < 4][::5]:
        p, m = x.copy(), x.copy()
        p[j] += eps
        m[j] -= eps
        assert (numeric(flat, p) - numeric(flat, m)) / (2 * eps) == pytest.approx(dx[j], rel=1e-5, abs=1e-7)


def test_forward_broadcasts_inputs_over_population_axes():
    net = MLP([3, 8, 1], ["relu", "identity"], pop=(2, 2))
    flat = net.zeros()
    views = net.views(flat)
    for idx in np.ndindex(2, 2):
        net.init_member(views, idx, np.random.default_rng(idx))
    x = np.random.default_rng(9).standard_normal((2, 1, 5, 3)).astype(np.float32)
    y = net.forward(views, with_ones(x))
    assert y.shape == (2, 2, 5, 1)
    for k, c in np.ndindex(2, 2):
        (w0, b0), (w1, b1) = net.weights_and_biases(MLP.member(views, (k, c)))
        np.testing.assert_allclose(y[k, c], np.maximum(x[k, 0] @ w0 + b0, 0) @ w1 + b1, rtol=1e-5)


def test_views_share_the_flat_vector_and_init_is_pytorch_default():
    net = MLP([3, 64, 1], ["relu", "identity"], pop=(4,))
    flat = net.zeros()
    views = net.views(flat)
    assert net.size == 4 * (4 * 65 + 65 * 1) and flat.dtype == np.float32
    for k in range(4):
        net.init_member(views, k, np.random.default_rng(k))
    (w0, b0), (w1, b1) = net.weights_and_biases(views)
    assert w0.shape == (4, 3, 64) and b1.shape == (4, 1)
    assert np.abs(w0).max() <= 1 / np.sqrt(3) and np.abs(w1).max() <= 1 / 8
    assert np.abs(w0).max() > 0.9 / np.sqrt(3)  # uniform over the whole bound
    flat[:] = 0
    assert not w0.any() and not b1.any()


def test_adam_matches_pytorch_formula():
    rng = np.random.default_rng(1)
    p = rng.standard_normal(10).astype(np.float32)
    ref = p.astype(np.float64)
    opt = Adam(10, lr=1e-2)
    m = v = np.zeros(10)
    for t in range(1, 6):
        g = rng.standard_normal(10).astype(np.float32)
        opt.step(p, g)
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g.astype(np.float64) ** 2
        ref -= 1e-2 / (1 - 0.9**t) * m / (np.sqrt(v) / np.sqrt(1 - 0.999**t) + 1e-8)
    np.testing.assert_allclose(p, ref, rtol=1e-5, atol=1e-6)


def test_polyak():
    target, online = np.ones(5, np.float32), np.full(5, 3, np.float32)
    polyak(target, online, 0.25, np.empty(5, np.float32))
    np.testing.assert_allclose(target, 1.5)

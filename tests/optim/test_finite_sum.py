"""SVRG / SGD / GD on finite sums, and the step-size rules (eq. (14)-(17))."""

import math

import numpy as np
import pytest
import torch

from embedopt._core import InvalidParameterError, NumericalInstabilityError
from embedopt.optim import (
    STEP_SIZES,
    BarzilaiBorwein,
    ConstantStep,
    FiniteSum,
    InverseDecay,
    StabilizedBB,
    gradient_descent,
    probe_step,
    sgd,
    stabilized_bb_step,
    svrg,
)


class RowMeans:
    """f_i(X) = ||X[r_i] - c_i||^2 / 2: each sample touches one row.

    The minimizer puts every row at the mean of its targets.
    """

    def __init__(self, n_rows=6, n_samples=300, p=3, seed=0, dtype=torch.float64):
        g = np.random.default_rng(seed)
        self.r = torch.as_tensor(g.integers(0, n_rows, n_samples))
        self.c = torch.as_tensor(g.normal(size=(n_samples, p)), dtype=dtype)
        self.n_samples, self.n_rows, self.p = n_samples, n_rows, p
        self.solution = torch.zeros(n_rows, p, dtype=dtype).index_add_(
            0, self.r, self.c
        )
        self.solution /= torch.bincount(self.r, minlength=n_rows).clamp(min=1)[:, None]

    def value_and_grad(self, X):
        diff = X[self.r] - self.c
        grad = torch.zeros_like(X).index_add_(0, self.r, diff) / self.n_samples
        return float(0.5 * (diff**2).sum() / self.n_samples), grad

    def rows(self, batches):
        return self.r[batches]

    def row_gradients(self, Z, batch, weights):
        return ((Z - self.c[batch][:, None, :]) * weights[None, :, None]).sum(1)


def test_rowmeans_is_a_finite_sum():
    assert isinstance(RowMeans(), FiniteSum)


@pytest.mark.parametrize("eps", [0.0, 0.1, 1.0])
def test_sbb_step_within_eq15_bounds(eps):
    # f = x^T A x / 2 with eigenvalues of magnitude in [mu, L] and both signs
    # (non-convex): dy = A dx, so |<dx, dy>| <= L ||dx||^2.
    g = np.random.default_rng(1)
    lam = np.concatenate([g.uniform(0.5, 4.0, 5), -g.uniform(0.5, 4.0, 5)])
    L, mu = np.abs(lam).max(), np.abs(lam).min()
    A = torch.as_tensor(np.diag(lam))
    for _ in range(200):
        dx = torch.as_tensor(g.normal(size=10))
        a = stabilized_bb_step(dx, A @ dx, eps)
        assert 1 / (L + eps) - 1e-12 <= a
        if eps > 0:
            assert a <= 1 / eps + 1e-12
    # eq. (16): SBB_0 is within [1/L, 1/mu] when all eigenvalues are >= mu > 0
    B = torch.as_tensor(np.diag(np.abs(lam)))
    for _ in range(50):
        dx = torch.as_tensor(g.normal(size=10))
        a = stabilized_bb_step(dx, B @ dx, 0.0)
        assert 1 / L - 1e-12 <= a <= 1 / mu + 1e-12


def test_example1_bb_fails_where_sbb_does_not():
    # Example 1 of Ma et al.: A = diag(1, 0, -1).
    A = torch.diag(torch.tensor([1.0, 0.0, -1.0], dtype=torch.float64))
    dx = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
    assert stabilized_bb_step(dx, A @ dx, 0.0, absolute=False) == pytest.approx(-1.0)
    assert stabilized_bb_step(dx, A @ dx, 0.0) == pytest.approx(1.0)
    dx = torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64)
    assert math.isnan(stabilized_bb_step(dx, A @ dx, 0.0))  # zero denominator
    rule = StabilizedBB(0.3, epsilon=0.0)
    assert rule.step(0) == 0.3
    assert rule.step(1, dx, A @ dx) == 0.3  # keeps its last step
    assert stabilized_bb_step(dx, A @ dx, 0.5) == pytest.approx(2.0)
    assert BarzilaiBorwein(1.0).step(1, -dx, -dx) == pytest.approx(1.0)


def test_simple_rules_and_registry():
    assert ConstantStep(0.5).step(7) == 0.5
    assert InverseDecay(1.0, decay=1.0).step(3) == pytest.approx(0.25)
    assert set(STEP_SIZES) == {"constant", "inverse_decay", "sbb", "bb"}
    x = torch.ones(4, dtype=torch.float64)
    # curvature 2 along any direction of ||x||^2 -> step 1/2
    assert probe_step(lambda z: 2 * z, x, 2 * x) == pytest.approx(0.5)
    assert probe_step(lambda z: z, x, torch.zeros(4)) == 1.0


@pytest.mark.parametrize(
    ("kwargs", "extra"),
    [
        ({}, {}),
        ({"epsilon": 0.0}, {}),
        ({"batch_size": 7, "update_frequency": 150}, {}),
        ({"output": "random"}, {}),
        ({"module_epochs": 3}, {}),
        ({"step_size": "constant", "learning_rate": 5.0}, {}),
    ],
)
def test_svrg_converges_on_row_means(kwargs, extra):
    prob = RowMeans()
    x0 = torch.zeros(prob.n_rows, prob.p, dtype=torch.float64)
    res = svrg(prob, x0, max_iter=15, tol=0, random_state=0, **kwargs)
    assert torch.allclose(res.x, prob.solution, atol=1e-3)
    h = res.history
    assert np.all(np.diff(h["grad_evals"]) > 0)
    assert set(h) >= {"objective", "step_size", "passes", "grad_norm", "time"}


def test_svrg_budget_is_n_plus_2m_per_epoch():
    prob = RowMeans(n_samples=200)
    x0 = torch.zeros(prob.n_rows, prob.p, dtype=torch.float64)
    res = svrg(prob, x0, batch_size=10, learning_rate=0.5, max_iter=4, tol=0)
    np.testing.assert_allclose(np.diff(res.history["passes"]), 3.0)
    res = svrg(prob, x0, batch_size=10, update_frequency=50, max_iter=2, tol=0)
    np.testing.assert_allclose(np.diff(res.history["passes"]), 1.5)


def test_lazy_and_dense_inner_updates_agree():
    prob = RowMeans(n_rows=9, n_samples=120)
    x0 = torch.randn(
        prob.n_rows,
        prob.p,
        dtype=torch.float64,
        generator=torch.Generator().manual_seed(0),
    )
    for kw in ({}, {"output": "random"}, {"module_epochs": 2, "epsilon": 0.1}):
        a = svrg(
            prob, x0, batch_size=4, max_iter=4, tol=0, random_state=3, lazy=True, **kw
        )
        b = svrg(
            prob, x0, batch_size=4, max_iter=4, tol=0, random_state=3, lazy=False, **kw
        )
        torch.testing.assert_close(a.x, b.x, rtol=0, atol=1e-12)
        np.testing.assert_allclose(
            a.history["objective"], b.history["objective"], rtol=1e-12
        )


def test_sgd_and_gradient_descent_converge():
    prob = RowMeans()
    x0 = torch.zeros(prob.n_rows, prob.p, dtype=torch.float64)
    f0 = prob.value_and_grad(x0)[0]
    f_star = prob.value_and_grad(prob.solution)[0]
    res = sgd(prob, x0, batch_size=5, max_iter=30, tol=0, random_state=0)
    # SGD stalls at its noise level (the gap is small: f* is mostly the
    # variance of the targets); ask for 80% of it.
    assert prob.value_and_grad(res.x)[0] - f_star < 0.2 * (f0 - f_star)
    for rule in ("constant", "sbb"):
        res = gradient_descent(prob, x0, step_size=rule, max_iter=30, tol=0)
        assert torch.allclose(res.x, prob.solution, atol=1e-6), rule


def test_projected_gradient_descent_stays_feasible():
    prob = RowMeans()
    x0 = torch.zeros(prob.n_rows, prob.p, dtype=torch.float64)
    res = gradient_descent(
        prob, x0, project=lambda x: x.clamp(min=0), max_iter=40, tol=0
    )
    assert (res.x >= 0).all()
    torch.testing.assert_close(res.x, prob.solution.clamp(min=0), atol=1e-6, rtol=0)


def test_gd_safeguard_halves_a_diverging_step():
    prob = RowMeans()
    x0 = torch.zeros(prob.n_rows, prob.p, dtype=torch.float64)
    f_star = prob.value_and_grad(prob.solution)[0]
    res = gradient_descent(prob, x0, learning_rate=1e4, max_iter=100, tol=0)
    assert res.history["objective"][-1] - f_star < 1e-6
    assert np.all(np.diff(res.history["objective"]) <= 0)
    assert res.history["step_size"][-1] < 1e4
    with pytest.raises(NumericalInstabilityError, match="step size"):
        gradient_descent(prob, x0, learning_rate=1e200, safeguard=False, max_iter=30)


def test_invalid_parameters_use_the_one_message_shape():
    prob = RowMeans()
    x0 = torch.zeros(prob.n_rows, prob.p, dtype=torch.float64)
    with pytest.raises(
        InvalidParameterError, match="The 'batch_size' parameter of SVRG-SBB"
    ):
        svrg(prob, x0, batch_size=0)
    with pytest.raises(InvalidParameterError, match="'output'"):
        svrg(prob, x0, output="best")
    with pytest.raises(InvalidParameterError, match="'decay'"):
        sgd(prob, x0, decay=-1.0)


def test_clip_batch_size():
    from embedopt.optim.finite_sum import clip_batch_size

    assert clip_batch_size(5, 5, "S") == 5
    with pytest.warns(UserWarning, match="S: batch_size=9 exceeds the 5 samples"):
        assert clip_batch_size(9, 5, "S") == 5

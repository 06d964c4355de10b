"""Truncated Newton-CG: one step on quadratics, SciPy's Newton-CG, Gauss-Newton."""

import numpy as np
import pytest
import scipy.optimize
import torch

from embedopt._core import ConvergenceWarning, InvalidParameterError
from embedopt.optim import AutogradObjective, FunctionObjective, newton_cg
from tests._derivatives import (
    autograd_jvp,
    autograd_vjp,
    check_grad,
    check_hvp,
    check_jvp,
)

D = torch.float64


def _spd(n, seed):
    g = torch.Generator().manual_seed(seed)
    B = torch.randn(n, n, dtype=D, generator=g)
    return B @ B.T + 0.5 * torch.eye(n, dtype=D), torch.randn(n, dtype=D, generator=g)


def test_convex_quadratic_in_one_newton_step():
    A, b = _spd(8, 0)
    obj = FunctionObjective(
        lambda x: (float(0.5 * x @ A @ x - b @ x), A @ x - b), hvp=lambda x, v: A @ v
    )
    res = newton_cg(obj, torch.zeros(8, dtype=D), cg_rtol=1e-12, tol=1e-8)
    assert res.converged and res.n_iter == 1
    torch.testing.assert_close(res.x, torch.linalg.solve(A, b))
    h = res.history
    assert set(h) >= {
        "iteration",
        "time",
        "objective",
        "grad_norm",
        "cg_iter",
        "step",
        "damping",
    }
    assert h["step"][0] == 1.0 and h["cg_iter"][0] <= 8


class Logistic:
    """Mean logistic loss plus (lam / 2) ||w||^2, closed-form derivatives."""

    def __init__(self, n=80, p=5, lam=0.1, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.X = torch.randn(n, p, dtype=D, generator=g)
        w = torch.randn(p, dtype=D, generator=g)
        self.y = torch.where(
            self.X @ w + 0.5 * torch.randn(n, dtype=D, generator=g) > 0, 1.0, -1.0
        )
        self.lam, self.n = lam, n

    def torch_value(self, w):
        z = self.y * (self.X @ w)
        return torch.nn.functional.softplus(-z).mean() + 0.5 * self.lam * (w @ w)

    def value(self, w):
        return float(self.torch_value(w))

    def value_and_grad(self, w):
        z = self.y * (self.X @ w)
        s = torch.sigmoid(-z)
        return self.value(w), -(self.X.T @ (self.y * s)) / self.n + self.lam * w

    def hvp(self, w, v):
        s = torch.sigmoid(self.y * (self.X @ w))
        return self.X.T @ (s * (1 - s) * (self.X @ v)) / self.n + self.lam * v


def test_logistic_regression_matches_scipy_newton_cg():
    prob = Logistic()
    w0 = torch.zeros(5, dtype=D)
    # derivatives first (the closed forms the solver trusts)
    w = torch.linspace(-1, 1, 5, dtype=D)
    check_grad(prob.torch_value, w, prob.value_and_grad(w)[1])
    v = torch.ones(5, dtype=D)
    check_hvp(prob.torch_value, w, v, prob.hvp(w, v))
    ref = scipy.optimize.minimize(
        lambda z: prob.value(torch.as_tensor(z)),
        w0.numpy(),
        jac=lambda z: prob.value_and_grad(torch.as_tensor(z))[1].numpy(),
        hessp=lambda z, p: prob.hvp(torch.as_tensor(z), torch.as_tensor(p)).numpy(),
        method="Newton-CG",
        options={"xtol": 1e-12},
    )
    res = newton_cg(prob, w0, tol=1e-10, cg_rtol=1e-3)
    assert res.converged and res.n_iter < 15
    # SciPy stops on the step size (here at ||grad|| ~ 5e-8); strong convexity
    # (modulus lam = 0.1) bounds its distance to the optimum by ||grad|| / lam.
    grad_ref = float(np.linalg.norm(prob.value_and_grad(torch.as_tensor(ref.x))[1]))
    assert res.history["grad_norm"][-1] <= grad_ref
    np.testing.assert_allclose(res.x.numpy(), ref.x, rtol=0, atol=grad_ref / 0.1)
    assert np.all(np.diff(res.history["objective"]) <= 0)


def test_a_jacobi_preconditioner_per_iteration():
    # Badly scaled features: diag(H(w)) + mu, recomputed at every iterate,
    # cuts the CG iterations and leads to the same solution.
    prob = Logistic(n=120, p=6, lam=1e-3, seed=3)
    prob.X = prob.X * torch.logspace(0, 2, 6, dtype=D)
    w0 = torch.zeros(6, dtype=D)

    def jacobi(w, mu):
        s = torch.sigmoid(prob.y * (prob.X @ w))
        return (prob.X**2).T @ (s * (1 - s)) / prob.n + prob.lam + mu

    options = dict(tol=1e-9, cg_rtol=1e-4, damping=1e-3)
    plain = newton_cg(prob, w0, **options)
    pre = newton_cg(prob, w0, preconditioner=jacobi, **options)
    assert plain.converged and pre.converged
    torch.testing.assert_close(pre.x, plain.x, rtol=1e-5, atol=1e-7)
    assert pre.history["cg_iter"].sum() < plain.history["cg_iter"].sum()


class LowRankLeastSquares:
    """f(X, Y) = ||P_Omega(X Y^T - M)||^2 / 2 on factor pairs, with J^T J v."""

    def __init__(self, m=12, n=10, r=2, seed=0):
        g = torch.Generator().manual_seed(seed)
        U = torch.randn(m, r, dtype=D, generator=g)
        V = torch.randn(n, r, dtype=D, generator=g)
        self.M = U @ V.T
        self.mask = (torch.rand(m, n, generator=g, dtype=D) < 0.7).to(D)

    def residual(self, p):
        return self.mask * (p[0] @ p[1].T - self.M)

    def value(self, p):
        return 0.5 * float((self.residual(p) ** 2).sum())

    def value_and_grad(self, p):
        R = self.residual(p)
        return 0.5 * float((R**2).sum()), (R @ p[1], R.T @ p[0])

    def jvp(self, p, v):
        return self.mask * (v[0] @ p[1].T + p[0] @ v[1].T)

    def gnvp(self, p, v):
        U = self.jvp(p, v)  # already masked: J^T applies the mask once more
        return (U @ p[1], U.T @ p[0])

    @staticmethod
    def random_factors(g):
        return (
            torch.randn(12, 2, dtype=D, generator=g),
            torch.randn(10, 2, dtype=D, generator=g),
        )


def test_gauss_newton_products_match_autograd():
    prob = LowRankLeastSquares()
    g = torch.Generator().manual_seed(5)
    p, v = prob.random_factors(g), prob.random_factors(g)
    check_jvp(prob.residual, p, v, prob.jvp(p, v))
    check_grad(
        lambda q: 0.5 * (prob.residual(q) ** 2).sum(), p, prob.value_and_grad(p)[1]
    )
    JtJv = autograd_vjp(prob.residual, p, autograd_jvp(prob.residual, p, v))
    for a, b in zip(prob.gnvp(p, v), JtJv, strict=True):
        torch.testing.assert_close(a, b)


def test_gauss_newton_cg_with_damping_fits_a_planted_low_rank_matrix():
    prob = LowRankLeastSquares()
    x0 = prob.random_factors(torch.Generator().manual_seed(1))
    res = newton_cg(prob, x0, use="gauss_newton", damping=1.0, tol=1e-9, max_iter=60)
    assert res.converged and isinstance(res.x, tuple)
    assert prob.value(res.x) < 1e-12 * prob.value(x0)
    mu = res.history["damping"]
    assert mu[0] == 1.0 and mu[-1] < 0.1  # the damping shrinks as the model fits
    assert np.all(np.diff(res.history["objective"]) <= 0)
    assert res.info["n_products"] >= res.history["cg_iter"].sum()


def test_hessian_of_a_non_convex_function_by_autograd():
    def rosen(x):
        return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2

    x0 = torch.tensor([-1.2, 1.0], dtype=D)
    # an accurate inner solve: with cg_rtol = 0.1, one CG step is often enough
    # in the curved valley and Newton-CG crawls like gradient descent
    res = newton_cg(AutogradObjective(rosen), x0, tol=1e-10, cg_rtol=1e-6)
    assert res.converged and res.n_iter < 40
    torch.testing.assert_close(res.x, torch.ones(2, dtype=D))


def test_callback_max_iter_and_errors():
    A, b = _spd(5, 1)
    obj = AutogradObjective(lambda x: 0.5 * x @ A @ x - b @ x + (x**4).sum())
    x0 = torch.zeros(5, dtype=D)
    res = newton_cg(obj, x0, tol=0.0, callback=lambda s: s.iteration == 2)
    assert res.stop_reason == "callback" and res.n_iter == 2
    with pytest.warns(
        ConvergenceWarning, match="Increase 'max_iter' or 'tol' of Model"
    ):
        newton_cg(obj, x0, tol=0.0, max_iter=2, owner="Model")
    with pytest.raises(InvalidParameterError, match="no 'gnvp"):
        newton_cg(obj, x0, use="gauss_newton")
    with pytest.raises(
        InvalidParameterError, match="The 'cg_rtol' parameter of Newton-CG"
    ):
        newton_cg(obj, x0, cg_rtol=0.0)

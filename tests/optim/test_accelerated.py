"""The shared accelerated proximal-gradient loop (optim.accelerated)."""

import pytest
import torch

from embedopt._core import InvalidParameterError, NumericalInstabilityError
from embedopt.optim import (
    CONTINUATIONS,
    CompositeProblem,
    FixedWeight,
    GeometricContinuation,
    NoMomentum,
    accelerated_proximal_gradient,
)


def _lasso(seed=0, m=40, n=15):
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(m, n, generator=g, dtype=torch.float64)
    b = torch.randn(m, generator=g, dtype=torch.float64)

    def fun(x):
        r = A @ x - b
        return 0.5 * float(r @ r), A.T @ r

    def prox(v, t):
        return torch.sign(v) * torch.clamp(v.abs() - t, min=0)

    L = float(torch.linalg.matrix_norm(A, 2)) ** 2
    return A, b, fun, prox, L


def test_lasso_solution_satisfies_the_optimality_conditions():
    A, b, fun, prox, L = _lasso()
    lam = 2.0
    prob = CompositeProblem(
        fun, 1.0 / L, prox=prox, regularizer=lambda x: x.abs().sum()
    )
    res = accelerated_proximal_gradient(
        prob,
        torch.zeros(A.shape[1], dtype=torch.float64),
        weight=lam,
        tol=1e-12,
        max_iter=5000,
    )
    x = res.x
    g = A.T @ (A @ x - b)
    nz = x.abs() > 1e-8
    assert nz.any() and (~nz).any()
    # 0 in grad f + lam d||x||_1: g_i = -lam sign(x_i) on the support, |g_i| <= lam off.
    torch.testing.assert_close(g[nz], -lam * torch.sign(x[nz]), atol=1e-4, rtol=0)
    assert float(g[~nz].abs().max()) <= lam + 1e-4
    assert res.stop_reason == "tol"
    assert {"objective", "weight", "grad_norm", "theta", "restart"} <= set(res.history)


def test_acceleration_beats_the_plain_proximal_gradient():
    A, _, fun, prox, L = _lasso(seed=1)
    prob = CompositeProblem(
        fun, 1.0 / L, prox=prox, regularizer=lambda x: x.abs().sum()
    )
    x0 = torch.zeros(A.shape[1], dtype=torch.float64)
    kw = dict(weight=0.5, tol=1e-10, max_iter=20000)
    fast = accelerated_proximal_gradient(prob, x0, **kw)
    slow = accelerated_proximal_gradient(prob, x0, momentum="none", **kw)
    assert fast.n_iter < slow.n_iter
    assert fast.history["objective"][-1] == pytest.approx(
        slow.history["objective"][-1], rel=1e-7
    )
    assert (slow.history["theta"] == 0).all()


def test_tuple_iterates_burer_monteiro_gradient():
    # f(V) = ||V V^T - M||_F^2 / 4 over a tuple holding one factor, r = 0.
    g = torch.Generator().manual_seed(0)
    W = torch.randn(12, 2, generator=g, dtype=torch.float64)
    M = W @ W.T

    def fun(x):
        (V,) = x
        R = V @ V.T - M
        return 0.25 * float((R * R).sum()), (R @ V,)

    V0 = (0.1 * torch.randn(12, 2, generator=g, dtype=torch.float64),)
    res = accelerated_proximal_gradient(
        CompositeProblem(fun, 0.02), V0, tol=1e-14, max_iter=3000
    )
    (V,) = res.x
    assert isinstance(res.x, tuple)
    assert float(torch.linalg.matrix_norm(V @ V.T - M)) < 1e-4 * float(
        torch.linalg.matrix_norm(M)
    )


def test_continuation_schedule_and_early_end():
    c = GeometricContinuation(1.0, 9.0, 0.5)
    assert [c.advance(t) for t in (1, 2, 3)] == [9.0, 5.0, 3.0]
    assert c.active and c.at_target == 0
    c.end()
    assert c.advance(4) == 1.0 and c.at_target == 1
    f = FixedWeight(2.0, 5.0)
    assert not f.active and f.advance(1) == 2.0
    assert CONTINUATIONS.get("geometric") is GeometricContinuation
    with pytest.raises(InvalidParameterError, match="Valid names"):
        CONTINUATIONS.get("linear")


def test_loop_follows_the_continuation_and_records_the_target_objective():
    A, _, fun, prox, L = _lasso(seed=2)
    prob = CompositeProblem(
        fun, 1.0 / L, prox=prox, regularizer=lambda x: x.abs().sum()
    )
    res = accelerated_proximal_gradient(
        prob,
        torch.zeros(A.shape[1], dtype=torch.float64),
        continuation=GeometricContinuation(0.5, 20.0, 0.7),
        tol=1e-10,
        max_iter=5000,
    )
    w = res.history["weight"]
    assert w[0] == 20.0 and w[-1] == 0.5 and (w[:-1] >= w[1:]).all()
    x = res.x
    assert res.history["objective"][-1] == pytest.approx(
        fun(x)[0] + 0.5 * float(x.abs().sum())
    )


class _Truncated:
    """A 1-D quadratic whose first steps are flagged as truncated."""

    def __init__(self, n_truncated):
        self.n_left = n_truncated
        self.refined = 0
        self.truncated = False

    def smooth(self, x):
        return float(x**2)

    def penalty(self, x, weight):
        return 0.0

    def step(self, x, x_prev, theta, weight):
        self.truncated = self.n_left > 0
        self.n_left -= 1
        return x  # already settled: the stopping rule holds at once

    def describe(self, x, weight):
        return {}

    def solution(self, x):
        return x

    def refine(self):
        self.refined += 1


def test_truncated_steps_never_stop_the_loop():
    prob = _Truncated(4)
    res = accelerated_proximal_gradient(prob, 1.0, tol=1e-3, max_iter=50)
    assert res.stop_reason == "tol"
    assert res.n_iter == 5  # 4 truncated, then the first untruncated one
    assert prob.refined == 3  # the tolerance holds from the second iteration


def test_momentum_object_and_breakdown_error():
    class Broken(_Truncated):
        def step(self, x, x_prev, theta, weight):
            raise torch.linalg.LinAlgError("no convergence")

    with pytest.raises(NumericalInstabilityError, match="proximal step failed"):
        accelerated_proximal_gradient(Broken(0), 1.0, momentum=NoMomentum())

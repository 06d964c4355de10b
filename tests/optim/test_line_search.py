"""Armijo backtracking: exact cases, quadratic and Rosenbrock, failure modes."""

import math

import pytest
import torch

from embedopt._core import InvalidParameterError
from embedopt.linalg.points import axpy, inner
from embedopt.optim import armijo_backtracking

D = torch.float64


def _rosenbrock(z):
    x, y = z[0], z[1]
    f = (1 - x) ** 2 + 100 * (y - x**2) ** 2
    g = torch.stack((-2 * (1 - x) - 400 * x * (y - x**2), 200 * (y - x**2)))
    return float(f), g


def _armijo_holds(fun, x, f, g, d, t, c1):
    return fun(axpy(t, d, x))[0] <= f + c1 * t * inner(g, d)


def test_exact_steps_on_one_dimensional_quadratics():
    # f = x^2 at 1 along -g = -2: t = 1 lands on -1 (no decrease), t = 1/2 on 0.
    f = lambda z: float((z**2).sum())  # noqa: E731
    x = torch.tensor([1.0], dtype=D)
    res = armijo_backtracking(f, x, f(x), 2 * x, -2 * x)
    assert res.success and res.step == 0.5 and res.n_evals == 2
    assert res.value == 0.0 and res.grad is None
    torch.testing.assert_close(res.x, torch.zeros(1, dtype=D))
    # f = 2 x^2 (L = 4): with c1 = 1/2 Armijo accepts exactly t <= 1 / L.
    f2 = lambda z: float(2 * (z**2).sum())  # noqa: E731
    res = armijo_backtracking(f2, x, f2(x), 4 * x, -4 * x, c1=0.5)
    assert res.success and res.step == 0.25 and res.n_evals == 3


def test_quadratic_step_satisfies_armijo_and_the_previous_did_not():
    g_ = torch.Generator().manual_seed(0)
    B = torch.randn(6, 6, dtype=D, generator=g_)
    A = B @ B.T + 0.1 * torch.eye(6, dtype=D)

    def fun(z):
        return float(0.5 * z @ A @ z), A @ z

    x = torch.randn(6, dtype=D, generator=g_)
    f, g = fun(x)
    res = armijo_backtracking(fun, x, f, g, -g, step=10.0, c1=0.3, shrink=0.7)
    assert res.success and res.step < 10.0
    assert _armijo_holds(fun, x, f, g, -g, res.step, 0.3)
    assert not _armijo_holds(fun, x, f, g, -g, res.step / 0.7, 0.3)
    torch.testing.assert_close(res.grad, A @ res.x)  # fun's gradient comes back
    assert res.step == pytest.approx(10.0 * 0.7 ** (res.n_evals - 1))


@pytest.mark.parametrize("newton", [False, True], ids=["gradient", "newton"])
def test_rosenbrock(newton):
    x = torch.tensor([-1.2, 1.0], dtype=D)
    f, g = _rosenbrock(x)
    if newton:
        a, b = float(x[0]), float(x[1])
        H = torch.tensor(
            [[2 - 400 * (b - 3 * a**2), -400 * a], [-400 * a, 200.0]], dtype=D
        )
        d = -torch.linalg.solve(H, g)
    else:
        d = -g
    res = armijo_backtracking(_rosenbrock, x, f, g, d)
    assert res.success and res.value < f
    assert _armijo_holds(_rosenbrock, x, f, g, d, res.step, 1e-4)
    if res.step < 1.0:
        assert not _armijo_holds(_rosenbrock, x, f, g, d, 2 * res.step, 1e-4)
    if newton:
        assert res.step == 1.0  # the full Newton step is accepted here


def test_failure_keeps_the_last_trial():
    f = lambda z: float((z**2).sum())  # noqa: E731
    x = torch.tensor([1.0], dtype=D)
    res = armijo_backtracking(f, x, f(x), 2 * x, 2 * x, max_trials=5)  # ascent
    assert not res.success and res.n_evals == 5 and res.step == 0.5**4
    assert res.value == pytest.approx(f(x + res.step * 2 * x))


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_non_finite_trials_are_rejected(bad):
    # f = x^2 where x >= 0.5, non-finite below: overshooting steps are refused
    # even with c1 = 0, which accepts any finite non-increase.
    def fun(z):
        return bad if float(z) < 0.5 else float(z) ** 2

    x = torch.tensor(1.0, dtype=D)
    g = torch.tensor(2.0, dtype=D)
    res = armijo_backtracking(fun, x, 1.0, g, -g, c1=0.0)
    assert res.success and res.step == 0.25 and float(res.x) == 0.5


def test_projection_and_tuple_points():
    # f(X, Y) = ||X - 2||^2 + ||Y + 1||^2 on the box [0, 1]: the projected
    # step from 0.5 along -g clips; Armijo uses <g, x_t - x>.
    def fun(p):
        X, Y = p
        return float(((X - 2) ** 2).sum() + ((Y + 1) ** 2).sum())

    x = (torch.full((2, 2), 0.5, dtype=D), torch.full((3,), 0.5, dtype=D))
    g = (2 * (x[0] - 2), 2 * (x[1] + 1))
    d = (-g[0], -g[1])
    res = armijo_backtracking(
        fun, x, fun(x), g, d, project=lambda p: tuple(t.clamp(0, 1) for t in p)
    )
    assert res.success and res.step == 1.0 and isinstance(res.x, tuple)
    torch.testing.assert_close(res.x[0], torch.ones(2, 2, dtype=D))
    torch.testing.assert_close(res.x[1], torch.zeros(3, dtype=D))


def test_invalid_parameters():
    x = torch.ones(1)
    with pytest.raises(
        InvalidParameterError, match="The 'shrink' parameter of armijo_backtracking"
    ):
        armijo_backtracking(float, x, 1.0, x, -x, shrink=1.0)
    with pytest.raises(InvalidParameterError, match="'c1' parameter"):
        armijo_backtracking(float, x, 1.0, x, -x, c1=1.0)

"""The objective protocol, its adapters, point arithmetic and the derivative checks."""

import pytest
import torch

from embedopt.linalg.points import (
    as_tuple,
    axpy,
    clone,
    flatten,
    inner,
    lincomb,
    norm,
    pack,
    scale,
    unflatten,
    zeros_like,
)
from embedopt.optim import (
    AutogradObjective,
    FunctionObjective,
    GaussNewtonObjective,
    HessianObjective,
    Objective,
)
from tests._derivatives import autograd_grad, check_grad, check_hvp, check_jvp

D = torch.float64


def _pair(seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(4, 2, dtype=D, generator=g), torch.randn(3, dtype=D, generator=g)


def test_point_arithmetic_on_tensors_and_tuples():
    x, y = _pair(0), _pair(1)
    fx, fy = flatten(x), flatten(y)
    assert fx.shape == (11,)
    assert inner(x, y) == pytest.approx(float(fx @ fy), rel=1e-14)
    assert norm(x) == pytest.approx(float(fx.norm()), rel=1e-14)
    torch.testing.assert_close(flatten(axpy(0.5, x, y)), fy + 0.5 * fx)
    torch.testing.assert_close(flatten(lincomb(2.0, x, -1.0, y)), 2 * fx - fy)
    torch.testing.assert_close(flatten(scale(3.0, x)), 3 * fx)
    assert norm(zeros_like(x)) == 0.0
    back = unflatten(fx, x)
    assert isinstance(back, tuple) and [t.shape for t in back] == [(4, 2), (3,)]
    torch.testing.assert_close(back[0], x[0])
    c = clone(x)
    c[0].zero_()
    assert norm(x[0]) > 0  # a copy
    # single tensors keep their type
    t = x[0]
    assert isinstance(axpy(1.0, t, t), torch.Tensor) and as_tuple(t) == (t,)
    assert pack(t, [t]) is t and pack(x, list(x)) == x


def test_function_objective_advertises_only_given_products():
    A = torch.tensor([[2.0, 0.5], [0.5, 1.0]], dtype=D)
    fun = lambda x: (0.5 * float(x @ A @ x), A @ x)  # noqa: E731
    plain = FunctionObjective(fun)
    assert isinstance(plain, Objective) and not isinstance(plain, HessianObjective)
    assert not hasattr(plain, "gnvp")
    full = FunctionObjective(
        fun, value=lambda x: 0.5 * float(x @ A @ x), hvp=lambda x, v: A @ v
    )
    assert isinstance(full, HessianObjective)
    assert not isinstance(full, GaussNewtonObjective)
    x = torch.tensor([1.0, -1.0], dtype=D)
    assert full.value(x) == plain.value(x) == pytest.approx(1.0)


def test_autograd_objective_on_factors_matches_closed_forms():
    # f(X, Y) = ||X Y^T - M||^2 / 2: gradient (R Y, R^T X), R = X Y^T - M.
    g = torch.Generator().manual_seed(2)
    M = torch.randn(5, 4, dtype=D, generator=g)
    X, Y = (
        torch.randn(5, 2, dtype=D, generator=g),
        torch.randn(4, 2, dtype=D, generator=g),
    )
    V = (
        torch.randn(5, 2, dtype=D, generator=g),
        torch.randn(4, 2, dtype=D, generator=g),
    )

    def f(p):
        return 0.5 * ((p[0] @ p[1].T - M) ** 2).sum()

    obj = AutogradObjective(f)
    value, grad = obj.value_and_grad((X, Y))
    R = X @ Y.T - M
    assert value == pytest.approx(float(f((X, Y))))
    check_grad(f, (X, Y), (R @ Y, R.T @ X))
    for a, b in zip(grad, (R @ Y, R.T @ X), strict=True):
        torch.testing.assert_close(a, b)
    # Hessian: d(RY) = (VX Y^T + X VY^T) Y + R VY, and symmetrically.
    dR = V[0] @ Y.T + X @ V[1].T
    closed = (dR @ Y + R @ V[1], dR.T @ X + R.T @ V[0])
    check_hvp(f, (X, Y), V, closed)
    for a, b in zip(obj.hvp((X, Y), V), closed, strict=True):
        torch.testing.assert_close(a, b)
    # Jacobian of the residual: J v = dR
    check_jvp(lambda p: p[0] @ p[1].T - M, (X, Y), V, dR)


def test_derivative_checks_catch_wrong_derivatives():
    f = lambda x: (x**3).sum()  # noqa: E731
    x = torch.tensor([0.5, -1.0, 2.0], dtype=D)
    check_grad(f, x, 3 * x**2)
    with pytest.raises(AssertionError):
        check_grad(f, x, 3 * x**2 + 1e-4, autograd=False)
    with pytest.raises(AssertionError):
        check_grad(f, x, 3 * x**2 + 1e-4, finite_differences=False)
    v = torch.tensor([1.0, 2.0, 0.0], dtype=D)
    check_hvp(f, x, v, 6 * x * v, grad=lambda z: 3 * z**2)
    with pytest.raises(AssertionError):
        check_hvp(f, x, v, 6 * x * v + 1e-3)
    with pytest.raises(AssertionError):
        check_jvp(lambda z: z**2, x, v, 2 * x * v + 1e-3)
    torch.testing.assert_close(autograd_grad(f, x), 3 * x**2)

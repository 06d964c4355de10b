"""The fixed-code derivatives of quantization.problem against references.

The rotation steps (:mod:`embedopt.quantization.rotation_learners`) rely on
``fixed_code_value``, ``givens_derivatives``, ``givens_step_bound`` and
``unconstrained_gradient``; each is checked here against autograd, central
differences or the definition it stands for.
"""

from __future__ import annotations

import itertools

import torch

from embedopt.linalg.rotations import givens_directional_derivatives, givens_matrix
from embedopt.quantization.problem import (
    fixed_code_value,
    givens_derivatives,
    givens_step_bound,
    moments,
    unconstrained_gradient,
)
from tests._derivatives import central_difference, check_grad


def _data(n=6, m=40, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(m, n, generator=g, dtype=torch.float64)
    Y = torch.randn(m, n, generator=g, dtype=torch.float64)
    R = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=torch.float64))[0]
    return X, Y, R


def test_fixed_code_value_is_the_distortion_up_to_a_constant():
    # (1/m) ||X R - Y||^2 = const - 2 <R, C> for orthogonal R
    X, Y, R = _data()
    C = moments(X, Y)
    torch.testing.assert_close(C, X.T @ Y / X.shape[0])
    _, _, R2 = _data(seed=1)

    def full(R):
        return ((X @ R - Y) ** 2).sum() / X.shape[0]

    torch.testing.assert_close(
        full(R) - full(R2), fixed_code_value(R, C) - fixed_code_value(R2, C)
    )


def test_givens_derivatives_are_the_derivatives_along_every_plane():
    X, Y, R = _data()
    C = moments(X, Y)
    A = givens_derivatives(R.T @ C)
    # the linalg definition with the Euclidean gradient -2 C ...
    torch.testing.assert_close(A, givens_directional_derivatives(R, -2.0 * C))
    # ... and d/dt f(R G_ij(t)) at 0 by central differences
    n = R.shape[0]
    for i, j in itertools.combinations(range(n), 2):

        def along(t, i=i, j=j):
            return float(fixed_code_value(R @ givens_matrix(n, i, j, t), C))

        assert abs(central_difference(along) - float(A[i, j])) < 1e-6


def test_givens_step_bound_bounds_the_curvature_of_every_plane():
    X, Y, R = _data()
    C = moments(X, Y)
    L = 1.0 / givens_step_bound(R.T @ C)
    n, eps = R.shape[0], 1e-4
    worst = 0.0
    for i, j in itertools.combinations(range(n), 2):

        def along(t, i=i, j=j):
            return float(fixed_code_value(R @ givens_matrix(n, i, j, t), C))

        curvature = (along(eps) - 2 * along(0.0) + along(-eps)) / eps**2
        worst = max(worst, curvature)
    assert worst <= L * (1 + 1e-6)
    assert worst >= 0.5 * L  # the bound is the sum of the two largest a_ii


def test_unconstrained_gradient_against_autograd_and_finite_differences():
    X, Y, _ = _data()
    g = torch.Generator().manual_seed(3)
    W = torch.randn(6, 6, generator=g, dtype=torch.float64)
    mu = 0.7
    eye = torch.eye(6, dtype=torch.float64)

    def relaxed(W):
        fit = ((X - Y @ W.T) ** 2).sum() / X.shape[0]
        return fit + mu * ((W.T @ W - eye) ** 2).sum()

    grad = unconstrained_gradient(W, moments(X, Y), moments(Y, Y), mu)
    check_grad(relaxed, W, grad, rtol=1e-5, atol=1e-6)

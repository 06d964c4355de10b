import numpy as np
import pytest
import scipy.linalg
import torch

from embedopt._core import DataValidationError
from embedopt.linalg import (
    apply_givens,
    apply_givens_sequence,
    cayley,
    givens_directional_derivatives,
    givens_matrix,
    orthogonality_error,
    procrustes,
    reorthogonalize,
)
from tests._derivatives import autograd_grad, central_difference

D = torch.float64


def _rotation(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    Q, R = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=D))
    Q = Q * torch.sign(torch.diagonal(R))
    if torch.linalg.det(Q) < 0:
        Q[:, 0] = -Q[:, 0]
    return Q


def test_givens_matrix_matches_definition_2():
    G = givens_matrix(5, 1, 3, 0.3)
    c, s = np.cos(0.3), np.sin(0.3)
    assert G[1, 1] == pytest.approx(c) and G[3, 3] == pytest.approx(c)
    assert G[1, 3] == pytest.approx(-s) and G[3, 1] == pytest.approx(s)
    torch.testing.assert_close(G.T @ G, torch.eye(5, dtype=D))
    assert torch.linalg.det(G) == pytest.approx(1.0)


@pytest.mark.parametrize("n", [6, 7])  # even and odd dimensions
def test_disjoint_givens_product_matches_dense_product(n):
    R = _rotation(n)
    i = torch.tensor([0, 4, 2])
    j = torch.tensor([3, 1, 5])
    theta = torch.tensor([0.3, -1.1, 2.0], dtype=D)
    dense = R.clone()
    for a, b, t in zip(i.tolist(), j.tolist(), theta.tolist(), strict=True):
        dense = dense @ givens_matrix(n, a, b, t)
    out = apply_givens(R.clone(), i, j, theta, dim=1, check=True)
    torch.testing.assert_close(out, dense)
    # dim=0 acts on rows as P^T Z.
    P = dense.T @ R  # = R^T-free product: P = R^T dense -> use identity start
    Z = torch.randn(n, 4, dtype=D)
    Pm = torch.eye(n, dtype=D)
    for a, b, t in zip(i.tolist(), j.tolist(), theta.tolist(), strict=True):
        Pm = Pm @ givens_matrix(n, a, b, t)
    torch.testing.assert_close(apply_givens(Z.clone(), i, j, theta, dim=0), Pm.T @ Z)
    assert P.shape == (n, n)


def test_overlapping_sequence_matches_ordered_dense_product():
    n = 5
    R = _rotation(n, 1)
    i = torch.tensor([0, 0, 1, 2])
    j = torch.tensor([1, 2, 3, 4])
    theta = torch.tensor([0.2, -0.7, 0.4, 1.3], dtype=D)
    dense = R.clone()
    for a, b, t in zip(i.tolist(), j.tolist(), theta.tolist(), strict=True):
        dense = dense @ givens_matrix(n, a, b, t)
    torch.testing.assert_close(apply_givens_sequence(R.clone(), i, j, theta), dense)
    with pytest.raises(DataValidationError, match="disjoint"):
        apply_givens(R.clone(), i, j, theta, check=True)


def test_directional_derivative_matches_finite_differences():
    """Proposition 1: A_ij = d/dtheta f(R G_ij(theta)) at 0, float64."""
    n = 6
    R = _rotation(n, 2)
    X = torch.randn(20, n, dtype=D)
    Y = torch.randn(20, n, dtype=D)

    def f(Rm):
        return ((torch.tanh(X @ Rm) - Y) ** 2).sum()  # a non-quadratic loss

    A = givens_directional_derivatives(R, autograd_grad(f, R))
    torch.testing.assert_close(A, -A.T)
    for a, b in [(0, 1), (2, 5), (4, 3)]:
        fd = central_difference(
            lambda t, a=a, b=b: f(R @ givens_matrix(n, a, b, t)), eps=1e-6
        )
        assert float(A[a, b]) == pytest.approx(float(fd), rel=1e-6, abs=1e-8)


def test_procrustes_matches_scipy():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((40, 7))
    B = rng.standard_normal((40, 7))
    expect, _ = scipy.linalg.orthogonal_procrustes(A, B)
    got = procrustes(torch.as_tensor(A), torch.as_tensor(B)).numpy()
    np.testing.assert_allclose(got, expect, atol=1e-10)
    proper = procrustes(torch.as_tensor(A), torch.as_tensor(B), proper=True)
    assert torch.linalg.det(proper) == pytest.approx(1.0)


def test_cayley_is_a_rotation_and_differentiable():
    W = torch.randn(5, 5, dtype=D, requires_grad=True)
    R = cayley(W - W.T)
    torch.testing.assert_close(R.T @ R, torch.eye(5, dtype=D))
    assert torch.linalg.det(R).item() == pytest.approx(1.0)
    R.sum().backward()
    assert torch.isfinite(W.grad).all()


def test_reorthogonalize_removes_drift_and_keeps_determinant():
    R = _rotation(8, 3).float()
    R += 1e-4 * torch.randn(8, 8, generator=torch.Generator().manual_seed(0))
    assert orthogonality_error(R) > 1e-5
    reorthogonalize(R)
    assert orthogonality_error(R) < 1e-6
    assert torch.linalg.det(R.double()) == pytest.approx(1.0, abs=1e-5)
    R2 = R.clone()
    reorthogonalize(R2, method="svd")
    assert orthogonality_error(R2) < 1e-6

"""NPKL oracles against the dense formula and autograd; pairs; the kNN Laplacian."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from embedopt._core import DataValidationError
from embedopt.sdp import (
    FactorProblem,
    NPKLProblem,
    check_pairs,
    knn_laplacian,
    quartic_step,
    sample_pairs,
)
from tests._derivatives import check_grad
from tests.sdp._common import dense_objective, tiny_npkl


def _factors(n=12, r=3, seed=1):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(n, r, generator=g, dtype=torch.float64) for _ in range(2))


def test_npkl_is_a_factor_problem():
    assert isinstance(tiny_npkl(), FactorProblem)


def test_value_matches_dense_formula():
    prob = tiny_npkl()
    f = dense_objective(prob)
    X, Y = _factors()
    assert prob.value(X, Y) == pytest.approx(float(f(X @ Y.T)), rel=1e-12)
    assert prob.gradient(X, Y).value == pytest.approx(prob.value(X, Y), rel=1e-14)


def test_gradient_products_match_autograd_and_finite_differences():
    prob = tiny_npkl()
    f = dense_objective(prob)
    X, Y = _factors()
    g = prob.gradient(X, Y)
    check_grad(lambda P: f(P[0] @ P[1].T), (X, Y), (g.matmul(Y), g.rmatmul(X)))


def _dense_setup():
    """A tiny NPKL problem, two factors and autograd's n x n gradient at X Y^T."""
    prob = tiny_npkl()
    X, Y = _factors()
    Z = (X @ Y.T).requires_grad_(True)
    (G,) = torch.autograd.grad(dense_objective(prob)(Z), Z)
    return prob, X, Y, G


def test_gradient_operator_is_the_dense_gradient():
    prob, X, Y, G = _dense_setup()
    W = torch.randn(12, 5, dtype=torch.float64)
    g = prob.gradient(X, Y)
    torch.testing.assert_close(g.matmul(W), G @ W)
    torch.testing.assert_close(g.rmatmul(W), G.T @ W)
    norm, _ = g.spectral_norm(torch.ones(12, 1, dtype=torch.float64), n_iter=200)
    assert norm == pytest.approx(float(torch.linalg.matrix_norm(G, 2)), rel=1e-6)


def test_curvature_is_the_second_derivative_along_the_direction():
    prob = tiny_npkl()
    f = dense_objective(prob)
    X, Y = _factors()
    U, V = _factors(seed=2)
    E = U @ V.T
    # f quadratic: f(Z + E) + f(Z - E) - 2 f(Z) = q(E) exactly
    Z = X @ Y.T
    second = float(f(Z + E) + f(Z - E) - 2 * f(Z))
    assert prob.curvature(U, V) == pytest.approx(second, rel=1e-10)


def test_exact_step_minimizes_the_quadratic_along_the_direction():
    prob = tiny_npkl()
    f = dense_objective(prob)
    X, Y = _factors()
    g = prob.gradient(X, Y)
    D = g.matmul(Y)  # the X-gradient of f(X Y^T)
    tau = prob.curvature(D, Y)
    tau = float((D * D).sum()) / tau
    grid = np.linspace(0.5 * tau, 1.5 * tau, 2001)
    vals = [float(f((X - t * D) @ Y.T)) for t in grid]
    assert grid[int(np.argmin(vals))] == pytest.approx(tau, rel=1e-3)
    assert prob.value(X - tau * D, Y) <= min(vals) + 1e-12


def test_quartic_step_minimizes_burer_monteiro_along_the_gradient():
    prob = tiny_npkl()
    V, _ = _factors()
    g = prob.gradient(V, V)
    D = -(g.matmul(V) + g.rmatmul(V))
    t = quartic_step(prob, V, D)
    grid = np.linspace(0, 3 * t, 3001)
    vals = [prob.value(V + s * D, V + s * D) for s in grid]
    assert t > 0
    assert prob.value(V + t * D, V + t * D) <= min(vals) + 1e-10
    assert grid[int(np.argmin(vals))] == pytest.approx(t, rel=2e-3)


def test_knn_laplacian_is_normalized_and_symmetric():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))
    lap = knn_laplacian(X, 4)
    dense = lap.toarray()
    np.testing.assert_allclose(dense, dense.T, atol=1e-14)
    np.testing.assert_allclose(np.diag(dense), 1.0)
    eig = np.linalg.eigvalsh(dense)
    assert eig[0] > -1e-10 and eig[-1] < 2 + 1e-10
    assert (np.count_nonzero(dense, axis=1) - 1 >= 4).all()  # at least k neighbours
    # the kernel of the normalized Laplacian is D^{1/2} 1
    deg = 1 - dense
    np.fill_diagonal(deg, 0)
    assert eig[0] == pytest.approx(0.0, abs=1e-10)


def test_knn_laplacian_warns_on_a_disconnected_graph():
    X = np.concatenate([np.zeros((5, 2)), 100 + np.zeros((5, 2))])
    X += np.random.default_rng(0).normal(scale=0.01, size=X.shape)
    with pytest.warns(UserWarning, match="2 connected components"):
        knn_laplacian(X, 2)


def test_knn_laplacian_rejects_nan_features():
    X = np.ones((6, 2))
    X[3, 1] = np.nan
    with pytest.raises(DataValidationError, match="row 3"):
        knn_laplacian(X, 2)


def test_sample_pairs_respects_the_labels_and_is_seeded():
    y = np.array([0, 0, 0, 1, 1, 1, 2, 2])
    ml, cl = sample_pairs(y, 5, random_state=0)
    assert ml.shape == cl.shape == (5, 2)
    assert (y[ml[:, 0]] == y[ml[:, 1]]).all() and (y[cl[:, 0]] != y[cl[:, 1]]).all()
    assert len({tuple(p) for p in ml}) == 5 and (ml[:, 0] < ml[:, 1]).all()
    again = sample_pairs(y, 5, random_state=0)
    np.testing.assert_array_equal(ml, again[0])
    with pytest.raises(DataValidationError, match="Only 7 must-link"):
        sample_pairs(y, 8, random_state=0)


@pytest.mark.parametrize(
    "ml, cl, match",
    [
        ([[0, 12]], None, "out of range"),
        ([[-1, 2]], None, "out of range"),
        ([[3, 3]], None, "self-pair"),
        ([[1, 2], [2, 1]], None, "duplicate pair \\(1, 2\\)"),
        ([[1, 2]], [[2, 1]], "pair \\(1, 2\\) is both a must-link and a cannot-link"),
        ([[0, 1, 2]], None, "shape"),
    ],
)
def test_bad_pairs(ml, cl, match):
    with pytest.raises(DataValidationError, match=match):
        check_pairs(ml, cl, 12)


def test_bad_laplacian():
    with pytest.raises(DataValidationError, match="shape"):
        NPKLProblem(4, laplacian=sp.identity(5))
    with pytest.raises(DataValidationError, match="symmetric"):
        NPKLProblem(4, laplacian=sp.csr_matrix(np.triu(np.ones((4, 4)))))


def _dense_pair_values(prob, U, V):
    S = 0.5 * (U @ V.T + V @ U.T)
    return S[prob.rows, prob.cols]


def test_pair_values_are_the_symmetrized_entries():
    prob = tiny_npkl()
    X, Y = _factors()
    torch.testing.assert_close(
        prob.pair_values(X, Y), _dense_pair_values(prob, X, Y), rtol=1e-12, atol=1e-12
    )
    torch.testing.assert_close(
        prob.pair_values(X, X), _dense_pair_values(prob, X, X), rtol=1e-12, atol=1e-12
    )
    D, B = _factors(seed=3)
    c = prob.cross_pair_values(D, [X, Y, B])
    assert c.shape == (len(prob.rows), 3)
    for k, other in enumerate((X, Y, B)):
        torch.testing.assert_close(
            c[:, k], _dense_pair_values(prob, D, other), rtol=1e-12, atol=1e-12
        )


def test_pair_gradient_is_the_dense_gradient():
    prob, X, Y, G = _dense_setup()
    resid = prob.pair_values(X, Y) - prob.pair_target
    old = prob.pair_gradient(torch.ones_like(resid))
    for out in (None, old):  # fresh, and rewritten in place
        G_csr = prob.pair_gradient(resid, out=out)
        torch.testing.assert_close(G_csr.to_dense(), G, rtol=1e-12, atol=1e-12)
    assert G_csr is old


def test_value_after_a_gradient_product_matches_dense_formula():
    # the fused G = S(r) + lam Lap is built on the first product; the value
    # must not depend on which products came first
    prob = tiny_npkl()
    f = dense_objective(prob)
    X, Y = _factors()
    want = float(f(X @ Y.T))
    for W in ("X", "Y"):
        g = prob.gradient(X, Y)
        g.matmul(X if W == "X" else Y)
        assert g.value == pytest.approx(want, rel=1e-12)
    g = prob.gradient(X, X)
    g.matmul(X)
    assert g.value == pytest.approx(float(f(X @ X.T)), rel=1e-12)


def test_pair_values_in_blocks_match_one_block():
    prob = tiny_npkl()
    X, Y = _factors()
    D, _ = _factors(seed=3)
    whole = (prob.pair_values(X, Y), prob.pair_values(X, X))
    cross = prob.cross_pair_values(D, [X, Y])
    prob._BLOCK = 7  # blocks of 1-3 pairs, the last one short
    torch.testing.assert_close(prob.pair_values(X, Y), whole[0], rtol=0, atol=1e-14)
    torch.testing.assert_close(prob.pair_values(X, X), whole[1], rtol=0, atol=1e-14)
    torch.testing.assert_close(
        prob.cross_pair_values(D, [X, Y]), cross, rtol=0, atol=1e-14
    )
    torch.testing.assert_close(
        prob.pair_values(X, Y), _dense_pair_values(prob, X, Y), rtol=1e-12, atol=1e-12
    )

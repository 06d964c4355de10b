"""CMVU (eq. 23): oracles against the dense formula and autograd, kNN pairs, solvers."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from embedopt._core import DataValidationError
from embedopt.sdp import (
    CMVUProblem,
    FactorProblem,
    aagd,
    bm_lbfgs,
    estimate_gamma,
    knn_pairs,
    one_hot_labels,
)
from tests._derivatives import check_grad
from tests.conftest import requires_cuda


def _blobs(n=12, d=3, seed=0, sep=3.0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    X = rng.normal(size=(n, d)) + sep * np.eye(d)[y]
    return X, y


def _tiny(labels=True, lam=0.5, n=12):
    X, y = _blobs(n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        pairs, d = knn_pairs(X, 3)
    return CMVUProblem(n, pairs, d, one_hot_labels(y) if labels else None, lam=lam)


def _dense_objective(prob: CMVUProblem):
    """``Z -> f(Z)`` by the dense formula of eq. 23 (autograd-friendly)."""
    n = prob.n
    i, j = prob.rows, prob.cols
    H = torch.eye(n, dtype=torch.float64) - 1.0 / n
    K = torch.eye(n, dtype=torch.float64)
    if prob.labels is not None:
        K = prob.labels @ prob.labels.T

    def f(Z):
        dist = Z[i, i] + Z[j, j] - Z[i, j] - Z[j, i]
        return 0.5 * ((dist - prob.sqdist) ** 2).sum() - prob.lam * torch.trace(
            H @ Z @ H @ K
        )

    return f


def _factors(n=12, r=3, seed=1):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(n, r, generator=g, dtype=torch.float64) for _ in range(2))


def test_cmvu_is_a_factor_problem():
    assert isinstance(_tiny(), FactorProblem)


@pytest.mark.parametrize("labels", [True, False], ids=["colored", "mvu"])
def test_value_and_gradient_match_the_dense_formula_and_autograd(labels):
    prob = _tiny(labels)
    f = _dense_objective(prob)
    X, Y = _factors()
    assert prob.value(X, Y) == pytest.approx(float(f(X @ Y.T)), rel=1e-12)
    g = prob.gradient(X, Y)
    check_grad(lambda P: f(P[0] @ P[1].T), (X, Y), (g.matmul(Y), g.rmatmul(X)))
    Z = (X @ Y.T).requires_grad_(True)
    (G,) = torch.autograd.grad(f(Z), Z)
    G = 0.5 * (G + G.T)  # f only sees sym(Z): the gradient on symmetric matrices
    W = torch.randn(12, 4, dtype=torch.float64)
    torch.testing.assert_close(g.matmul(W), G @ W)


def test_label_kernel_identity_is_plain_mvu():
    X, _ = _blobs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        pairs, d = knn_pairs(X, 3)
    eye = np.eye(12) + 0.0  # a one-hot factor with one class per pattern: K = I
    A, B = _factors()
    mvu = CMVUProblem(12, pairs, d, None, lam=0.5)
    same = CMVUProblem(12, pairs, d, eye, lam=0.5)
    assert mvu.value(A, B) == pytest.approx(same.value(A, B), rel=1e-12)


def test_curvature_and_exact_step():
    prob = _tiny()
    f = _dense_objective(prob)
    X, Y = _factors()
    U, V = _factors(seed=2)
    Z, E = X @ Y.T, U @ V.T
    assert prob.curvature(U, V) == pytest.approx(
        float(f(Z + E) + f(Z - E) - 2 * f(Z)), rel=1e-10
    )
    D = prob.gradient(X, Y).matmul(Y)
    tau = float((D * D).sum()) / prob.curvature(D, Y)
    grid = np.linspace(0.5 * tau, 1.5 * tau, 2001)
    vals = [float(f((X - t * D) @ Y.T)) for t in grid]
    assert grid[int(np.argmin(vals))] == pytest.approx(tau, rel=1e-3)
    assert prob.value(X - tau * D, Y) <= min(vals) + 1e-9 * abs(min(vals))


def test_lipschitz_bounds_the_hessian():
    prob = _tiny()
    n = prob.n
    i, j = prob.rows.numpy(), prob.cols.numpy()
    A = np.zeros((len(i), n * n))
    for p, (a, b) in enumerate(zip(i, j, strict=True)):
        e = np.zeros(n)
        e[a], e[b] = 1, -1
        A[p] = np.outer(e, e).ravel()
    top = np.linalg.eigvalsh(A @ A.T)[-1]
    assert top <= prob.lipschitz + 1e-10


def test_gamma_estimate_sees_the_gradient():
    # G 1 = 0: a power iteration from the all-ones vector would see ||G|| = 0
    prob = _tiny()
    X, Y = _factors()
    g = prob.gradient(X, Y)
    est = estimate_gamma(prob, X, Y, g)
    Gd = torch.stack([g.matmul(e[:, None])[:, 0] for e in torch.eye(12).double()])
    norm = float(torch.linalg.matrix_norm(Gd, 2))
    # five cold power iterations: a lower estimate, but far from 0
    assert prob.lipschitz + norm < est.lipschitz <= prob.lipschitz + 2 * norm + 1e-9


def test_gamma_power_iteration_continues_from_a_stale_warm_start():
    # Warm-started from a vector nearly orthogonal to G's top eigenvector (G
    # changed since the last half-step), one power iteration sees a fifth of
    # ||G||_2, so gamma would fall below lambda_max(G) / 2, where X - Y drifts
    prob = _tiny()
    X, Y = _factors()
    g = prob.gradient(X, Y)
    Gd = torch.stack([g.matmul(e[:, None])[:, 0] for e in torch.eye(12).double()])
    w, U = torch.linalg.eigh(Gd)
    top = int(torch.argmax(w.abs()))
    stale = U[:, [6]] + 0.05 * U[:, [top]]
    norm = float(w.abs().max())
    one_step, _ = g.spectral_norm(stale, 1)
    assert one_step < 0.3 * norm
    est = estimate_gamma(prob, X, Y, g, vector=stale)
    assert est.lipschitz - prob.lipschitz == pytest.approx(2 * norm, rel=1e-3)


def test_knn_pairs_connects_the_components():
    X = np.concatenate([np.zeros((5, 2)), 50 + np.zeros((5, 2)), [[0, 200]] * 5])
    X += np.random.default_rng(0).normal(scale=0.01, size=X.shape)
    with pytest.warns(UserWarning, match="3 connected components; joined"):
        pairs, d = knn_pairs(X, 2)
    assert (pairs[:, 0] < pairs[:, 1]).all()
    np.testing.assert_allclose(d, ((X[pairs[:, 0]] - X[pairs[:, 1]]) ** 2).sum(1))
    cross = (pairs // 5)[:, 0] != (pairs // 5)[:, 1]
    assert cross.sum() == 2
    with pytest.warns(UserWarning, match="unbounded below"):
        CMVUProblem(15, pairs[~cross], d[~cross])


@pytest.mark.parametrize(
    "pairs, sqdist, labels, match",
    [
        ([[0, 12]], [1.0], None, "in \\[0, 12\\)"),
        ([[3, 3]], [1.0], None, "self-pairs"),
        ([[0, 1]], [1.0, 2.0], None, "one per pair"),
        ([[0, 1]], [np.nan], None, "finite"),
        ([[0, 1]], [-1.0], None, "non-negative"),
        ([[0, 1]], [1.0], np.ones((5, 2)), "shape \\(12, c\\)"),
    ],
)
def test_bad_problem_inputs(pairs, sqdist, labels, match):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(DataValidationError, match=match):
            CMVUProblem(12, pairs, sqdist, labels)


def test_aagd_agrees_with_burer_monteiro_lbfgs():
    prob = _tiny(n=15)
    a = aagd(prob, 2, max_iter=3000, tol=1e-13, random_state=0)
    b = bm_lbfgs(prob, 2, max_iter=3000, tol=1e-14, random_state=0)
    fa, fb = prob.value(a.x, a.x), prob.value(b.x, b.x)
    assert fa == pytest.approx(fb, rel=1e-5)


@pytest.mark.gpu
@requires_cuda
def test_cmvu_on_cuda_matches_cpu():
    X, y = _blobs(30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        pairs, d = knn_pairs(X, 3, device="cuda")
    cpu = CMVUProblem(30, pairs, d, one_hot_labels(y))
    gpu = CMVUProblem(30, pairs, d, one_hot_labels(y), device="cuda")
    A, B = _factors(30)
    assert gpu.value(A.cuda(), B.cuda()) == pytest.approx(cpu.value(A, B), rel=1e-12)
    a = aagd(cpu, A, max_iter=300, tol=1e-12)
    b = aagd(gpu, A.cuda(), max_iter=300, tol=1e-12)
    assert b.x.is_cuda
    assert b.history["objective"][-1] == pytest.approx(
        a.history["objective"][-1], rel=1e-6
    )

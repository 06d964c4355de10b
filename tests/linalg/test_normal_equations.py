"""Row-wise sparse normal equations against per-row dense solves."""

import numpy as np
import pytest
import torch

from embedopt._core import NumericalInstabilityError
from embedopt.linalg import (
    psd_solve,
    sparse_normal_equations,
    sparse_normal_equations_cg,
)


def _pattern(m=7, n=5, density=0.5, seed=0):
    rng = np.random.default_rng(seed)
    mask = rng.random((m, n)) < density
    mask[3] = False  # a row with no entry
    rows, cols = np.nonzero(mask)  # row-major: CSR order
    crow = np.zeros(m + 1, dtype=np.int64)
    crow[1:] = np.cumsum(np.bincount(rows, minlength=m))
    c = rng.uniform(0.5, 2.0, rows.size)
    r = rng.standard_normal(rows.size)
    return [torch.as_tensor(a) for a in (crow, cols, c, r)], rows, rng


@pytest.mark.parametrize("chunk_size", [None, 2])
def test_matches_dense_per_row_solves(chunk_size):
    (crow, cols, c, r), rows, rng = _pattern()
    k = 3
    F = torch.as_tensor(rng.standard_normal((5, k)))
    G = torch.as_tensor(rng.standard_normal((k, k)))
    G = G @ G.T
    gw = torch.as_tensor(rng.uniform(0.1, 1.0, 7))
    extra = torch.as_tensor(rng.standard_normal((7, k)))
    X = sparse_normal_equations(
        crow,
        cols,
        c,
        r,
        F,
        ridge=0.3,
        gram=G,
        gram_weights=gw,
        rhs_extra=lambda a, b: extra[a:b],
        chunk_size=chunk_size,
    )
    for i in range(7):
        sel = torch.as_tensor(rows == i)
        Fi, ci, ri = F[cols[sel]], c[sel], r[sel]
        A = Fi.T @ (ci[:, None] * Fi) + gw[i] * G + 0.3 * torch.eye(k, dtype=F.dtype)
        b = Fi.T @ ri + extra[i]
        torch.testing.assert_close(
            X[i], torch.linalg.solve(A, b), rtol=1e-10, atol=1e-12
        )


def test_singular_rows_get_the_minimum_norm_solution():
    (crow, cols, c, r), _, rng = _pattern()
    F = torch.as_tensor(rng.standard_normal((5, 2)))
    X = sparse_normal_equations(crow, cols, c, r, F)  # no ridge: row 3 is empty
    assert torch.isfinite(X).all() and torch.equal(X[3], torch.zeros(2, dtype=X.dtype))


def test_nonfinite_systems_raise_a_clear_error():
    A = torch.full((1, 2, 2), float("inf"), dtype=torch.float64)
    with pytest.raises(NumericalInstabilityError, match="refine: the normal equations"):
        psd_solve(A, torch.zeros(1, 2, dtype=torch.float64), "refine")


def _cg_problem(k=4, seed=1):
    (crow, cols, c, r), _, rng = _pattern(m=9, n=6, seed=seed)
    F = torch.as_tensor(rng.standard_normal((6, k)))
    G = torch.as_tensor(rng.standard_normal((k, k)))
    extra = torch.as_tensor(rng.standard_normal((9, k)))
    kwargs = dict(
        ridge=0.3,
        gram=G @ G.T,
        gram_weights=torch.as_tensor(rng.uniform(0.1, 1.0, 9)),
        rhs_extra=lambda a, b: extra[a:b],
    )
    x0 = torch.as_tensor(rng.standard_normal((9, k)))
    return (crow, cols, c, r, F), kwargs, x0


def _row_quadratics(args, kwargs, X):
    """x_i^T A_i x_i / 2 - b_i^T x_i of every row, with A_i and b_i formed."""
    crow, cols, c, r, F = args
    k = F.shape[1]
    out = []
    for i in range(crow.numel() - 1):
        e = slice(int(crow[i]), int(crow[i + 1]))
        Fi = F[cols[e]]
        A = Fi.T @ (c[e, None] * Fi) + kwargs["gram_weights"][i] * kwargs["gram"]
        A = A + kwargs["ridge"] * torch.eye(k, dtype=F.dtype)
        b = Fi.T @ r[e] + kwargs["rhs_extra"](i, i + 1)[0]
        out.append(float(X[i] @ A @ X[i] / 2 - b @ X[i]))
    return np.array(out)


def test_cg_with_enough_steps_is_the_exact_solve():
    args, kwargs, x0 = _cg_problem()
    exact = sparse_normal_equations(*args, **kwargs)
    X = sparse_normal_equations_cg(*args, x0=x0, n_steps=25, **kwargs)
    torch.testing.assert_close(X, exact, rtol=1e-10, atol=1e-10)


def test_cg_steps_never_increase_each_rows_quadratic():
    args, kwargs, x0 = _cg_problem(k=6, seed=2)
    exact = sparse_normal_equations(*args, **kwargs)
    best = _row_quadratics(args, kwargs, exact)
    previous = _row_quadratics(args, kwargs, x0)
    for steps in (1, 2, 3):
        X = sparse_normal_equations_cg(*args, x0=x0, n_steps=steps, **kwargs)
        q = _row_quadratics(args, kwargs, X)
        assert np.all(q <= previous + 1e-12) and np.all(q >= best - 1e-12)
        previous = q
    # A few steps are not the exact solve here (k = 6): the test can fail.
    assert np.any(previous > best + 1e-6)


def test_cg_leaves_rows_without_curvature_at_their_start():
    (crow, cols, c, r), _, rng = _pattern()
    F = torch.as_tensor(rng.standard_normal((5, 2)))
    x0 = torch.as_tensor(rng.standard_normal((7, 2)))
    X = sparse_normal_equations_cg(crow, cols, c, r, F, x0=x0, n_steps=3)
    assert torch.isfinite(X).all() and torch.equal(X[3], x0[3])  # row 3 is empty

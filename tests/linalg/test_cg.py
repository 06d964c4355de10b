"""Conjugate gradient vs SciPy's on SPD systems, tuples, preconditioning."""

import numpy as np
import pytest
import scipy.sparse.linalg as spla
import torch

from embedopt._core import InvalidParameterError
from embedopt.linalg import cg

D = torch.float64


def _spd(n, cond, seed):
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    w = np.geomspace(1.0, cond, n)
    return (Q * w) @ Q.T, rng.standard_normal(n)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("cond", [10.0, 1e4])
def test_cg_matches_scipy(seed, cond):
    A, b = _spd(40, cond, seed)
    iters = []
    expect, info = spla.cg(A, b, rtol=1e-10, maxiter=500, callback=iters.append)
    assert info == 0
    At = torch.as_tensor(A)
    res = cg(lambda v: At @ v, torch.as_tensor(b), rtol=1e-10, max_iter=500)
    assert res.converged and not res.negative_curvature
    np.testing.assert_allclose(res.x.numpy(), expect, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(res.x.numpy(), np.linalg.solve(A, b), rtol=1e-6)
    assert abs(res.n_iter - len(iters)) <= max(2, 0.1 * len(iters))
    assert res.residual_norm <= 1e-10 * np.linalg.norm(b)
    true_residual = np.linalg.norm(b - A @ res.x.numpy())
    assert true_residual <= 1e-8 * np.linalg.norm(b)


def test_jacobi_preconditioner_matches_scipy_and_helps():
    # badly scaled diagonal: Jacobi fixes most of the conditioning
    B, b = _spd(30, 10.0, 3)
    s = np.geomspace(1.0, 1e3, 30)
    A = s[:, None] * B * s[None, :]
    d = np.diag(A).copy()
    iters_p, iters = [], []
    M = spla.LinearOperator(A.shape, matvec=lambda r: r / d)
    expect, _ = spla.cg(A, b, rtol=1e-10, maxiter=2000, M=M, callback=iters_p.append)
    spla.cg(A, b, rtol=1e-10, maxiter=2000, callback=iters.append)
    At = torch.as_tensor(A)
    res = cg(
        lambda v: At @ v,
        torch.as_tensor(b),
        rtol=1e-10,
        preconditioner=torch.as_tensor(d),
    )
    np.testing.assert_allclose(res.x.numpy(), expect, rtol=1e-6, atol=1e-12)
    assert abs(res.n_iter - len(iters_p)) <= 2 and res.n_iter < len(iters)
    dt = torch.as_tensor(d)
    same = cg(
        lambda v: At @ v,
        torch.as_tensor(b),
        rtol=1e-10,
        preconditioner=lambda r: r / dt,
    )
    torch.testing.assert_close(same.x, res.x)


def test_cg_on_tuple_valued_operators():
    # An SPD operator on (X, Y) pairs of matrices that couples the blocks.
    g = torch.Generator().manual_seed(4)
    X = torch.randn(5, 2, dtype=D, generator=g)
    Y = torch.randn(3, 2, dtype=D, generator=g)
    K = torch.randn(16, 16, dtype=D, generator=g)
    A = K @ K.T + 16 * torch.eye(16, dtype=D)

    def matvec(v):
        flat = torch.cat([v[0].reshape(-1), v[1].reshape(-1)])
        out = A @ flat
        return out[:10].view(5, 2), out[10:].view(3, 2)

    res = cg(matvec, (X, Y), rtol=1e-12)
    assert isinstance(res.x, tuple) and res.converged
    flat = torch.linalg.solve(A, torch.cat([X.reshape(-1), Y.reshape(-1)]))
    torch.testing.assert_close(res.x[0], flat[:10].view(5, 2))
    torch.testing.assert_close(res.x[1], flat[10:].view(3, 2))
    # a diagonal preconditioner as a tuple too
    d = torch.diagonal(A)
    pre = cg(
        matvec,
        (X, Y),
        rtol=1e-12,
        preconditioner=(d[:10].view(5, 2), d[10:].view(3, 2)),
    )
    torch.testing.assert_close(pre.x[0], res.x[0])


def test_cg_stops_at_max_iter_and_reports_the_residual():
    A, b = _spd(30, 1e6, 5)
    At = torch.as_tensor(A)
    res = cg(lambda v: At @ v, torch.as_tensor(b), rtol=1e-12, max_iter=3)
    assert res.n_iter == 3 and not res.converged
    true = float(torch.linalg.norm(torch.as_tensor(b) - At @ res.x))
    assert res.residual_norm == pytest.approx(true, rel=1e-6)


def test_cg_negative_curvature_returns_a_descent_direction():
    A = torch.diag(torch.tensor([2.0, 1.0, -1.0], dtype=D))
    b = torch.tensor([1.0, 1.0, 1.0], dtype=D)
    res = cg(lambda v: A @ v, b)
    assert res.negative_curvature and not res.converged
    assert float(b @ res.x) > 0
    # curvature negative at the first direction: the direction is b itself
    first = cg(lambda v: -v, b)
    assert first.negative_curvature and first.n_iter == 0
    torch.testing.assert_close(first.x, b)


def test_cg_edge_cases_and_errors():
    A = torch.eye(3, dtype=D)
    zero = cg(lambda v: A @ v, torch.zeros(3, dtype=D))
    assert zero.converged and zero.n_iter == 0 and float(zero.x.abs().sum()) == 0
    warm = cg(
        lambda v: 2 * v, torch.ones(3, dtype=D), x0=torch.full((3,), 0.5, dtype=D)
    )
    assert warm.n_iter == 0 and warm.converged
    with pytest.raises(InvalidParameterError, match="The 'rtol' parameter of cg"):
        cg(lambda v: v, torch.ones(2), rtol=-1.0)


@pytest.mark.parametrize("jacobi", [False, True])
def test_truncated_iterates_have_residuals_orthogonal_to_them(jacobi):
    # What Newton-CG's damping rule relies on: <x_k, b - A x_k> = 0 for every
    # (preconditioned) CG iterate from 0, so <x_k, A x_k> = <b, x_k>.
    A, b = _spd(30, 1e4, 6)
    At, bt = torch.as_tensor(A), torch.as_tensor(b)
    pre = torch.diagonal(At) if jacobi else None
    for k in (1, 3, 7):
        x = cg(lambda v: At @ v, bt, max_iter=k, rtol=1e-14, preconditioner=pre).x
        assert float(x @ (bt - At @ x)) == pytest.approx(0.0, abs=1e-9 * float(bt @ x))

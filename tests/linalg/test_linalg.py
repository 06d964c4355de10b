import numpy as np
import pytest
import torch

from embedopt._core import InvalidParameterError
from embedopt.linalg import (
    DenseOperator,
    SparsePattern,
    SparsePlusLowRank,
    approx_svt,
    exact_svt,
    orthonormalize,
    partial_svd,
    power_method,
    shrink,
    svt,
    thin_svd,
    warm_start_basis,
)

D = torch.float64


def _pattern(m=13, n=9, frac=0.4, seed=0):
    rng = np.random.default_rng(seed)
    mask = rng.random((m, n)) < frac
    r, c = np.nonzero(mask)
    perm = rng.permutation(r.size)  # any input order
    return SparsePattern(r[perm], c[perm], (m, n)), r[perm], c[perm], rng


def test_transposed_values_are_not_taken_from_a_tensor_at_the_same_address():
    # CUDA's caching allocator hands a freed tensor's memory to the next one,
    # with a fresh version counter; two tensors over one NumPy buffer are the
    # same situation on the CPU.
    pat, r, _c, rng = _pattern()
    buf = rng.standard_normal(r.size)
    first = torch.from_numpy(buf)
    pat.to_csr_transposed(first)
    buf[:] = rng.standard_normal(r.size)
    second = torch.from_numpy(buf)
    assert second.data_ptr() == first.data_ptr() and second._version == 0
    expect = pat.to_csr(second.clone()).to_dense().T
    torch.testing.assert_close(pat.to_csr_transposed(second).to_dense(), expect)


def test_sparse_products_match_dense():
    pat, r, c, rng = _pattern()
    vals_in = torch.as_tensor(rng.standard_normal(r.size), dtype=D)
    vals = vals_in[pat.order]
    dense = torch.zeros(pat.shape, dtype=D)
    dense[r, c] = vals_in
    R = torch.randn(9, 4, dtype=D)
    Q = torch.randn(13, 4, dtype=D)
    torch.testing.assert_close(pat.matmul(vals, R), dense @ R)
    torch.testing.assert_close(pat.rmatmul(vals, Q), dense.T @ Q)
    # the transposed CSR used on CUDA (built lazily, values cached per vector)
    torch.testing.assert_close(pat.to_csr_transposed(vals).to_dense(), dense.T)
    torch.testing.assert_close(pat.to_csr_transposed(vals) @ Q, dense.T @ Q)
    torch.testing.assert_close(pat.to_csr_transposed(2 * vals).to_dense(), 2 * dense.T)
    A, B = torch.randn(13, 3, dtype=D), torch.randn(9, 3, dtype=D)
    full = A @ B.T
    expect = full[pat.row_indices(), pat.col_indices()]
    torch.testing.assert_close(pat.sampled_dot(A, B), expect)
    assert pat.sampled_dot(A[:, :0], B[:, :0]).abs().sum() == 0


def test_sparse_plus_low_rank_matches_dense():
    pat, _r, _c, rng = _pattern()
    vals = torch.as_tensor(rng.standard_normal(pat.nnz), dtype=D)
    U1, V1 = torch.randn(13, 2, dtype=D), torch.randn(9, 2, dtype=D)
    U2, V2 = torch.randn(13, 3, dtype=D), torch.randn(9, 3, dtype=D)
    op = SparsePlusLowRank.from_terms(pat, vals, [(1.5, U1, V1), (-0.5, U2, V2)])
    dense = pat.to_csr(vals).to_dense() + 1.5 * U1 @ V1.T - 0.5 * U2 @ V2.T
    torch.testing.assert_close(op.to_dense(), dense)
    R, Q = torch.randn(9, 4, dtype=D), torch.randn(13, 4, dtype=D)
    torch.testing.assert_close(op.matmul(R), dense @ R)
    torch.testing.assert_close(op.rmatmul(Q), dense.T @ Q)
    empty = SparsePlusLowRank.from_terms(pat, vals, [(0.0, U1, V1)])
    assert empty.A.shape == (13, 0)


def _lowrank_plus_noise(m=40, n=30, r=4, noise=1e-3, seed=0):
    g = torch.Generator().manual_seed(seed)
    U = torch.linalg.qr(torch.randn(m, r, generator=g, dtype=D)).Q
    V = torch.linalg.qr(torch.randn(n, r, generator=g, dtype=D)).Q
    s = torch.tensor([10.0, 7.0, 5.0, 3.0], dtype=D)[:r]
    return U @ torch.diag(s) @ V.T + noise * torch.randn(m, n, generator=g, dtype=D)


def test_power_method_captures_top_subspace():
    Z = _lowrank_plus_noise()
    op = DenseOperator(Z)
    Q = power_method(op, torch.randn(30, 4, dtype=D), n_iter=5)
    Uex = torch.linalg.svd(Z).U[:, :4]
    # The projector on span(Q) reproduces the exact top-4 subspace.
    torch.testing.assert_close(Q @ (Q.T @ Uex), Uex, atol=1e-6, rtol=0)
    torch.testing.assert_close(Q.T @ Q, torch.eye(4, dtype=D))


def test_approx_svt_matches_exact_svt():
    Z = _lowrank_plus_noise()
    U, s, V, Q = approx_svt(DenseOperator(Z), torch.randn(30, 6, dtype=D), 2.0, 5)
    Ue, se, Ve = svt(Z, 2.0)
    torch.testing.assert_close(s, se, atol=1e-8, rtol=0)
    torch.testing.assert_close(
        U @ torch.diag(s) @ V.T, Ue @ torch.diag(se) @ Ve.T, atol=1e-8, rtol=0
    )
    assert Q.shape == (40, 6)


def test_svt_is_the_proximal_operator():
    # SVT_lam(Z) minimizes 0.5||X - Z||^2 + lam ||X||_*: perturbations do not help.
    Z = _lowrank_plus_noise()
    lam = 2.5
    U, s, V = svt(Z, lam)
    X = U @ torch.diag(s) @ V.T

    def h(X):
        return 0.5 * ((X - Z) ** 2).sum() + lam * torch.linalg.svdvals(X).sum()

    g = torch.Generator().manual_seed(1)
    for _ in range(5):
        assert h(X) <= h(X + 1e-3 * torch.randn(X.shape, generator=g, dtype=D))


def test_shrink_scalar_and_weights():
    s = torch.tensor([5.0, 3.0, 1.0])
    torch.testing.assert_close(shrink(s, 2.0), torch.tensor([3.0, 1.0, 0.0]))
    torch.testing.assert_close(
        shrink(s, torch.tensor([0.0, 1.0])), torch.tensor([5.0, 2.0, 0.0])
    )
    # a threshold beyond float32's range shrinks everything (no overflow error)
    torch.testing.assert_close(shrink(s, 1e300), torch.zeros(3))


@pytest.mark.parametrize("method", ["arpack", "subspace", "dense"])
def test_partial_svd_methods(method):
    Z = _lowrank_plus_noise(m=80, n=70)
    U, s, V = partial_svd(
        DenseOperator(Z), 3, method=method, random_state=np.random.default_rng(0)
    )
    se = torch.linalg.svdvals(Z)[:3]
    torch.testing.assert_close(s, se, atol=1e-7, rtol=1e-7)
    torch.testing.assert_close(U.T @ Z @ V, torch.diag(s), atol=1e-6, rtol=0)


def test_exact_svt_grows_k_until_all_found():
    Z = _lowrank_plus_noise(m=80, n=70)
    U, s, V, k = exact_svt(DenseOperator(Z), 1.0, k_init=1, k_step=1, method="arpack")
    Ue, se, Ve = svt(Z, 1.0)
    assert s.numel() == se.numel() == 4
    assert k == 5
    torch.testing.assert_close(
        U @ torch.diag(s) @ V.T, Ue @ torch.diag(se) @ Ve.T, atol=1e-7, rtol=0
    )


def test_warm_start_basis():
    g = torch.Generator().manual_seed(0)
    Vt = torch.linalg.qr(torch.randn(20, 3, generator=g, dtype=D)).Q
    Vp = torch.linalg.qr(torch.randn(20, 2, generator=g, dtype=D)).Q
    R = warm_start_basis(Vt, Vp)
    assert R.shape == (20, 5)
    torch.testing.assert_close(R.T @ R, torch.eye(5, dtype=D))
    # span contains both inputs
    torch.testing.assert_close(
        R @ (R.T @ torch.cat([Vt, Vp], 1)), torch.cat([Vt, Vp], 1)
    )
    # a previous basis inside the current one adds no column ("zero columns")
    assert warm_start_basis(Vt, Vt[:, :2]).shape == (20, 3)
    assert warm_start_basis(Vt, Vp, max_cols=4).shape == (20, 4)
    # R = [V_cur, QR(P)]: the current basis first, unchanged, and a cap keeps
    # the leading columns of the uncapped basis (QR is column-ordered).
    torch.testing.assert_close(R[:, :3], Vt, rtol=0, atol=0)
    torch.testing.assert_close(warm_start_basis(Vt, Vp, max_cols=4), R[:, :4])
    assert warm_start_basis(Vt, Vp, max_cols=2).shape == (20, 2)
    # float32 iterates (the estimators' default): orthonormal to its rounding
    R32 = warm_start_basis(Vt.float(), Vp.float())
    eye = torch.eye(5)
    assert float((R32.T @ R32 - eye).abs().max()) < 1e-5
    # empty iterates: one random unit column
    e = torch.zeros(20, 0, dtype=D)
    r = warm_start_basis(e, e, generator=g)
    assert r.shape == (20, 1) and torch.isclose(r.norm(), torch.tensor(1.0, dtype=D))


@pytest.mark.parametrize("k", [8, 160])  # the GEMM and the triangular-solve paths
@pytest.mark.parametrize("passes", [2, 1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_orthonormalize_matches_householder_span(dtype, passes, k):
    g = torch.Generator().manual_seed(0)
    X = torch.randn(500, k, generator=g, dtype=dtype)
    X[:, 0] *= 1e3  # condition number ~1e3
    Q = orthonormalize(X, passes=passes)
    # one float64 pass: orthogonal to about cond^2 1e-16 = 1e-10
    tol = 1e-5 if dtype == torch.float32 else (1e-12 if passes == 2 else 1e-9)
    torch.testing.assert_close(Q.T @ Q, torch.eye(k, dtype=dtype), atol=tol, rtol=0)
    # same span as X: projecting X on span(Q) gives X back
    torch.testing.assert_close(Q @ (Q.T @ X), X, atol=tol * 1e3, rtol=tol)
    # rank-deficient input falls back to Householder and stays orthonormal
    Xd = torch.cat([X[:, :3], X[:, :3]], 1)
    Qd = orthonormalize(Xd, passes=passes)
    torch.testing.assert_close(Qd.T @ Qd, torch.eye(6, dtype=dtype), atol=tol, rtol=0)


def test_orthonormalize_refuses_other_pass_counts():
    with pytest.raises(InvalidParameterError, match="1 or 2"):
        orthonormalize(torch.ones(4, 2, dtype=D), passes=0)


def test_thin_svd_in_float32_keeps_float32_accuracy():
    # Ub is formed in W's dtype: W is reproduced to float32 rounding of its norm
    g = torch.Generator().manual_seed(0)
    W64 = torch.randn(400, 6, generator=g, dtype=D) * torch.tensor(
        [9, 5, 3, 2, 1, 0.5], dtype=D
    )
    W = W64.float()
    Ub, S, Vb = thin_svd(W)
    assert Ub.dtype == S.dtype == Vb.dtype == torch.float32
    torch.testing.assert_close(
        S.double(), torch.linalg.svdvals(W.double()), rtol=1e-6, atol=0
    )
    err = (Ub @ torch.diag(S) @ Vb.T - W).abs().max()
    assert err < 1e-5 * W.abs().max()


def test_thin_svd_matches_lapack():
    g = torch.Generator().manual_seed(0)
    W = torch.randn(300, 6, generator=g, dtype=D) * torch.tensor(
        [9, 5, 3, 2, 1, 0.5], dtype=D
    )
    Ub, S, Vb = thin_svd(W)
    torch.testing.assert_close(S, torch.linalg.svdvals(W))
    torch.testing.assert_close(Ub @ torch.diag(S) @ Vb.T, W)
    torch.testing.assert_close(Ub.T @ Ub, torch.eye(6, dtype=D))

"""CUDA paths of matrix completion: same code, same answers as on the CPU."""

import numpy as np
import pytest
import torch

from embedopt.completion import (
    CompletionProblem,
    MatrixCompletion,
    ais_impute,
    postprocess,
    soft_impute,
)
from embedopt.completion.postprocess import refine
from embedopt.linalg import DenseOperator, SparsePattern, partial_svd
from tests.conftest import random_entries, requires_cuda

pytestmark = [pytest.mark.gpu, requires_cuda]


def test_sparse_pattern_products_on_cuda():
    entries, _, _ = random_entries(m=50, n=40, frac=0.3)
    cpu = SparsePattern(entries.rows, entries.cols, entries.shape, "cpu")
    gpu = SparsePattern(entries.rows, entries.cols, entries.shape, "cuda")
    v = torch.randn(cpu.nnz, dtype=torch.float64)
    Q = torch.randn(50, 3, dtype=torch.float64)
    R = torch.randn(40, 3, dtype=torch.float64)
    torch.testing.assert_close(gpu.rmatmul(v.cuda(), Q.cuda()).cpu(), cpu.rmatmul(v, Q))
    torch.testing.assert_close(gpu.matmul(v.cuda(), R.cuda()).cpu(), cpu.matmul(v, R))
    A, B = (
        torch.randn(50, 2, dtype=torch.float64),
        torch.randn(40, 2, dtype=torch.float64),
    )
    torch.testing.assert_close(
        gpu.sampled_dot(A.cuda(), B.cuda()).cpu(), cpu.sampled_dot(A, B)
    )


def test_subspace_partial_svd_on_cuda():
    g = torch.Generator().manual_seed(0)
    Z = torch.randn(120, 90, generator=g, dtype=torch.float64)
    _U, s, _V = partial_svd(
        DenseOperator(Z.cuda()),
        4,
        method="subspace",
        random_state=np.random.default_rng(0),
    )
    torch.testing.assert_close(
        s.cpu(), torch.linalg.svdvals(Z)[:4], atol=1e-8, rtol=1e-8
    )


@pytest.mark.parametrize("solver", [ais_impute, soft_impute])
def test_solvers_agree_across_devices(solver):
    entries, _, _ = random_entries(m=60, n=45, rank=3, frac=0.5)
    a = solver(
        entries,
        lam=1.0,
        device="cpu",
        dtype="float64",
        tol=1e-10,
        max_iter=2000,
        random_state=0,
    )
    b = solver(
        entries,
        lam=1.0,
        device="cuda",
        dtype="float64",
        tol=1e-10,
        max_iter=2000,
        random_state=0,
    )
    assert b.x[0].device.type == "cuda"
    assert b.history["objective"][-1] == pytest.approx(
        a.history["objective"][-1], rel=1e-7
    )


def test_estimator_on_cuda():
    entries, _, _ = random_entries(m=60, n=45, rank=3, frac=0.5)
    cpu = MatrixCompletion(random_state=0, device="cpu", dtype="float64").fit(entries)
    gpu = MatrixCompletion(random_state=0, device="cuda", dtype="float64").fit(entries)
    assert gpu.factors_[0].device.type == "cuda"
    assert gpu.lam_ == pytest.approx(cpu.lam_, rel=1e-6)
    np.testing.assert_allclose(
        gpu.predict([0, 1], [2, 3]), cpu.predict([0, 1], [2, 3]), rtol=1e-4, atol=1e-4
    )


def test_factors_built_on_the_cpu_meet_a_cuda_problem():
    # A user's own factors (CPU tensors) reached a CUDA sparse kernel and
    # failed with torch's device-mismatch error.
    entries, _, _ = random_entries(m=30, n=20, rank=2, frac=0.6)
    problem = CompletionProblem(entries, device="cuda", dtype="float64")
    U, s, V = ais_impute(entries, lam=1.0, device="cpu", dtype="float64").x
    assert problem.predict((U, s, V)).device.type == "cuda"
    for out in (postprocess(problem, U, s, V), refine(problem, U, s, V)):
        assert all(t.device.type == "cuda" for t in out)


def test_weighted_estimator_on_cuda():
    entries, _, _ = random_entries(m=60, n=45, rank=3, frac=0.5)
    w = np.random.default_rng(0).uniform(0.0, 2.0, entries.nnz)
    fits = [
        MatrixCompletion(random_state=0, device=d, dtype="float64").fit(
            entries, sample_weight=w
        )
        for d in ("cpu", "cuda")
    ]
    assert fits[1].factors_[0].device.type == "cuda"
    assert fits[1].lam_ == pytest.approx(fits[0].lam_, rel=1e-6)
    np.testing.assert_allclose(
        *(f.predict([0, 1], [2, 3]) for f in fits), rtol=1e-4, atol=1e-4
    )

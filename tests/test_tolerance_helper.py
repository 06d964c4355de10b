"""tests/_tolerance.py bounds what it claims, and no more loosely than that."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests._tolerance import eps, inner_product_tolerance, sum_tolerance


def test_sums_in_any_order_stay_within_the_bound():
    rng = np.random.default_rng(0)
    for n in (8, 100, 5000):
        x = rng.standard_normal(n).astype(np.float32)
        exact = float(np.sum(x.astype(np.float64)))
        forward = np.float32(0)
        for v in x:  # the worst order: one running sum
            forward = np.float32(forward + v)
        tol = sum_tolerance(np.float32, n, np.abs(x).sum(dtype=np.float64))
        for value in (forward, x.sum(), float(torch.from_numpy(x).sum())):
            assert abs(float(value) - exact) <= tol
        assert tol < 1e-3 * np.abs(x).sum()  # a bound, not a blanket


def test_inner_products_of_two_kernels_stay_within_the_bound():
    g = torch.Generator().manual_seed(0)
    A, B = torch.randn(50, 64, generator=g), torch.randn(40, 64, generator=g)
    tol = inner_product_tolerance(A, B)
    block = A @ B.T
    rows = torch.stack([B @ a for a in A])  # a matrix-vector product per row
    exact = (A.double() @ B.double().T).float()
    assert float((block - rows).abs().max()) <= tol
    assert float((block - exact).abs().max()) <= tol
    longest = A.double().norm(dim=1).max() * B.double().norm(dim=1).max()
    assert tol == pytest.approx(64 * eps(torch.float32) * float(longest), rel=1e-12)

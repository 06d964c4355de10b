"""Hutchinson's diagonal estimate against the exact diagonal."""

from __future__ import annotations

import pytest
import torch

from embedopt.linalg import hutchinson_diagonal


def test_exact_for_diagonal_operators_and_unbiased_otherwise():
    g = torch.Generator().manual_seed(0)
    d = torch.rand(6, generator=g, dtype=torch.float64) + 1
    est = hutchinson_diagonal(lambda v: d * v, torch.zeros(6, dtype=torch.float64))
    assert torch.equal(est, d)
    B = torch.randn(6, 6, generator=g, dtype=torch.float64)
    A = B @ B.T
    est = hutchinson_diagonal(
        lambda v: A @ v, torch.zeros(6, dtype=torch.float64), n_probes=4000, generator=g
    )
    off = (A - torch.diag(torch.diag(A))).norm(dim=1)
    # Standard error of the mean of z_i (A z)_i is ||A_i,off|| / sqrt(n_probes).
    assert ((est - torch.diag(A)).abs() <= 5 * off / 4000**0.5).all()


def test_tuple_points():
    like = (torch.zeros(2), torch.zeros(3, 1))
    est = hutchinson_diagonal(lambda v: (3 * v[0], 2 * v[1]), like, n_probes=2)
    assert torch.equal(est[0], torch.full((2,), 3.0))
    assert torch.equal(est[1], torch.full((3, 1), 2.0))
    with pytest.raises(ValueError, match="n_probes"):
        hutchinson_diagonal(lambda v: v, like, n_probes=0)

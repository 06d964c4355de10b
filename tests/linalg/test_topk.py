"""Batched top-k inner products against a full sort."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from embedopt.linalg import top_k_inner_products


def test_matches_full_sort_with_exclusions_across_batches():
    g = torch.Generator().manual_seed(0)
    Q = torch.randn(9, 4, generator=g, dtype=torch.float64)
    V = torch.randn(12, 4, generator=g, dtype=torch.float64)
    rng = np.random.default_rng(0)
    ex = sp.random(9, 12, density=0.3, random_state=rng, format="csr")
    ids, scores = top_k_inner_products(Q, V, 5, exclude=ex, batch_size=4)
    S = (Q @ V.T).numpy()
    S[ex.toarray() != 0] = -np.inf
    ref = np.argsort(-S, axis=1, kind="stable")[:, :5]
    np.testing.assert_array_equal(ids, ref)
    np.testing.assert_allclose(scores, np.take_along_axis(S, ref, 1))


def test_pads_with_minus_one_when_items_run_out():
    Q, V = torch.ones(1, 2), torch.eye(2)
    ids, scores = top_k_inner_products(Q, V, 3, exclude=sp.csr_matrix([[1, 0]]))
    np.testing.assert_array_equal(ids, [[1, -1]])  # k capped at n = 2
    assert scores[0, 1] == -np.inf
    with pytest.raises(ValueError, match="shape"):
        top_k_inner_products(Q, V, 1, exclude=sp.csr_matrix((2, 2)))

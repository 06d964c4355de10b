import numpy as np
import pytest
import torch
from scipy.spatial import procrustes

from embedopt._core import DataValidationError
from embedopt.data import make_random_triplets
from embedopt.metrics import (
    label_precision_at_k,
    label_recall_at_k,
    mean_average_precision,
    procrustes_align,
    procrustes_distance,
    retrieval_scores,
    triplet_error,
)


def test_triplet_error_of_truth_is_zero_and_collapse_is_one():
    P = np.random.default_rng(0).normal(size=(15, 2))
    c = make_random_triplets(P, 300, random_state=0)
    assert triplet_error(P, c) == 0.0
    assert triplet_error(torch.as_tensor(P), c.indices) == 0.0
    assert triplet_error(np.zeros_like(P), c) == 1.0
    assert triplet_error(P, c.indices[:, [0, 2, 1]]) == 1.0
    with pytest.raises(DataValidationError, match="outside"):
        triplet_error(P[:3], c)
    with pytest.raises(DataValidationError, match="shape"):
        triplet_error(P, np.array([[0, 1]]))


def test_procrustes_matches_scipy():
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(25, 3))
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    assert procrustes_distance(3.0 * Y @ Q + 2.0, Y) < 1e-20
    Z = rng.normal(size=(25, 3))
    assert procrustes_distance(Z, Y) == pytest.approx(procrustes(Y, Z)[2])
    np.testing.assert_allclose(procrustes_align(3.0 * Y @ Q - 1.0, Y), Y, atol=1e-10)
    # lower-dimensional embeddings are padded
    assert procrustes_align(Y[:, :2], Y).shape == (25, 3)
    with pytest.raises(DataValidationError, match="same number of rows"):
        procrustes_distance(Y[:3], Y)


def test_retrieval_scores_by_hand():
    # Two classes on a line: query 0 sees [1 (same), 2 (other), 3 (other)]
    X = np.array([[0.0], [1.0], [2.5], [3.9]])
    y = np.array([0, 0, 1, 1])
    res = retrieval_scores(X, y, k=(1, 2))
    # Every object's nearest neighbour shares its label: every AP is 1.
    assert res["map"] == pytest.approx(1.0)
    assert res["precision"][2] == pytest.approx(0.5)
    assert res["recall"][1] == pytest.approx(1.0)
    Xq = np.array([[0.9]])
    assert label_precision_at_k(Xq, [1], X, y, k=2) == pytest.approx(0.0)
    assert label_recall_at_k(Xq, [1], X, y, k=3) == pytest.approx(0.5)
    # ranks 3 and 4 for the two relevant items: AP = (1/3 + 2/4) / 2
    assert mean_average_precision(Xq, [1], X, y) == pytest.approx((1 / 3 + 0.5) / 2)
    with pytest.raises(DataValidationError, match="K must be"):
        retrieval_scores(X, y, k=4)

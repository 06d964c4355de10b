import numpy as np
import pytest
import scipy.sparse as sp

from embedopt._core import DataValidationError
from embedopt.metrics import precision_at_k, quantization_distortion, recall_at_k


def test_recall_and_precision_at_k_by_hand():
    retrieved = np.array([[3, 1, 7, 9], [0, 2, 4, 6]])
    relevant = [{1, 9}, {5}]
    assert recall_at_k(retrieved, relevant, 2) == pytest.approx((0.5 + 0.0) / 2)
    assert recall_at_k(retrieved, relevant, 4) == pytest.approx((1.0 + 0.0) / 2)
    assert precision_at_k(retrieved, relevant, 2) == pytest.approx((1 / 2 + 0) / 2)
    padded = np.array([[1, 9], [5, -1]])
    assert recall_at_k(retrieved, padded, 4) == recall_at_k(retrieved, relevant, 4)
    csr = sp.csr_matrix(([1, 1, 1], ([0, 0, 1], [1, 9, 5])), shape=(2, 10))
    assert precision_at_k(retrieved, csr, 4) == precision_at_k(retrieved, relevant, 4)


def test_nn_recall_at_r():
    retrieved = np.array([[4, 2, 8], [1, 0, 3], [5, 6, 7]])
    true_nn = np.array([2, 1, 0])
    assert recall_at_k(retrieved, true_nn, 1) == pytest.approx(1 / 3)
    assert recall_at_k(retrieved, true_nn, 2) == pytest.approx(2 / 3)


def test_distortion_and_errors():
    X = np.ones((3, 2))
    assert quantization_distortion(X, np.zeros((3, 2))) == pytest.approx(2.0)
    with pytest.raises(DataValidationError, match="same shape"):
        quantization_distortion(X, np.zeros((2, 2)))
    with pytest.raises(DataValidationError, match="k must"):
        recall_at_k(np.zeros((1, 3), int), [[0]], 0)
    with pytest.raises(DataValidationError, match="queries"):
        recall_at_k(np.zeros((2, 3), int), [[0]], 1)


def test_ndcg_and_average_precision_by_hand():
    from embedopt.metrics import average_precision_at_k, ndcg_at_k

    retrieved = np.array([[3, 1, 7, 5], [2, 4, 6, 8]])
    relevant = [[1, 5, 9], [8]]
    # Query 0: hits at ranks 2 and 4 of 3 relevant; query 1: a hit at rank 4.
    dcg0 = 1 / np.log2(3) + 1 / np.log2(5)
    idcg0 = 1 + 1 / np.log2(3) + 1 / np.log2(4)
    dcg1, idcg1 = 1 / np.log2(5), 1.0
    expected = (dcg0 / idcg0 + dcg1 / idcg1) / 2
    assert ndcg_at_k(retrieved, relevant, 4) == pytest.approx(expected)
    ap0 = (1 / 2 + 2 / 4) / 3
    ap1 = (1 / 4) / 1
    assert average_precision_at_k(retrieved, relevant, 4) == pytest.approx(
        (ap0 + ap1) / 2
    )
    # A perfect ranking scores 1; repeats and -1 padding never count.
    assert ndcg_at_k([[1, 5, 9]], [[9, 5, 1]], 3) == pytest.approx(1.0)
    assert average_precision_at_k([[1, 1, -1]], [[1, 2]], 3) == pytest.approx(0.5)
    # k = 2 cuts query 0 to one hit of min(2, 3) = 2 possible.
    assert average_precision_at_k(retrieved[:1], relevant[:1], 2) == pytest.approx(
        (1 / 2) / 2
    )

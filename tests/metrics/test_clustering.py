"""Rand index and leave-one-out 1-NN accuracy against naive references."""

from __future__ import annotations

import numpy as np
import pytest

from embedopt._core import DataValidationError
from embedopt.metrics import nearest_neighbor_accuracy, rand_index


def _naive_rand_index(a, b) -> float:
    """The share of the n (n - 1) / 2 pairs on which a and b agree, pair by pair."""
    n, agree = len(a), 0
    for i in range(n):
        for j in range(i + 1, n):
            agree += (a[i] == a[j]) == (b[i] == b[j])
    return agree / (n * (n - 1) / 2)


@pytest.mark.parametrize("seed", range(5))
def test_rand_index_counts_agreeing_pairs(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    a, b = rng.integers(0, 4, n), rng.integers(0, 3, n)
    assert rand_index(a, b) == pytest.approx(_naive_rand_index(a, b), rel=1e-12)


def test_rand_index_matches_sklearn():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(1)
    for _ in range(5):
        a, b = rng.integers(0, 5, 200), rng.integers(0, 3, 200)
        assert rand_index(a, b) == pytest.approx(metrics.rand_score(a, b), rel=1e-12)


def test_rand_index_sees_partitions_not_label_values():
    a = np.array([0, 0, 1, 1, 2])
    assert rand_index(a, a + 5) == 1.0
    assert rand_index(a, np.array(["x", "x", "y", "y", "z"])) == 1.0
    assert rand_index([3], [1]) == 1.0  # no pair to disagree on
    with pytest.raises(DataValidationError, match="one entry per pattern"):
        rand_index([0, 1], [0, 1, 1])


def test_nearest_neighbor_accuracy_against_a_loop():
    rng = np.random.default_rng(0)
    E, y = rng.normal(size=(30, 3)), rng.integers(0, 3, 30)
    hits = 0
    for i in range(30):
        d = [np.sum((E[i] - E[j]) ** 2) if j != i else np.inf for j in range(30)]
        hits += y[int(np.argmin(d))] == y[i]
    assert nearest_neighbor_accuracy(E, y) == pytest.approx(hits / 30)
    assert nearest_neighbor_accuracy([[0.0], [0.1], [5.0], [5.2]], [0, 0, 1, 1]) == 1.0
    with pytest.raises(DataValidationError, match="n >= 2"):
        nearest_neighbor_accuracy(E[:1], y[:1])
    with pytest.raises(DataValidationError, match="same n"):
        nearest_neighbor_accuracy(E, y[:5])


def test_nearest_neighbor_accuracy_refuses_a_distance_matrix_beyond_memory(
    monkeypatch,
):
    from embedopt._core import memory

    monkeypatch.setattr(memory, "device_memory", lambda device: 2**20)  # 1 MiB
    E, y = np.zeros((300, 2)), np.arange(300) % 2  # 2 x 300^2 float64: 1.4 MB
    with pytest.raises(DataValidationError, match=r"300 x 300 distance matrix"):
        nearest_neighbor_accuracy(E, y)
    assert nearest_neighbor_accuracy(E[:100], y[:100]) >= 0.0  # 160 kB fit

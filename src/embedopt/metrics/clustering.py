"""Agreement of a clustering or an embedding with class labels."""

from __future__ import annotations

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._core import DataValidationError, as_array, check_memory

__all__ = ["nearest_neighbor_accuracy", "rand_index"]


def _two_labelings(a, b, names: tuple[str, str]):
    a, b = as_array(a, names[0]).ravel(), as_array(b, names[1]).ravel()
    if len(a) != len(b):
        raise DataValidationError(
            f"{names[0]} and {names[1]} must have one entry per pattern each; got "
            f"{len(a)} and {len(b)}."
        )
    return a, b


def rand_index(labels_true: ArrayLike, labels_pred: ArrayLike) -> float:
    """Rand index (Rand, 1971): the share of pattern pairs two labelings agree on.

    A pair agrees when both labelings put it in one cluster or both split
    it. Computed from the contingency table in ``O(n + k_1 k_2)``, never
    over the ``n (n - 1) / 2`` pairs; the label values themselves do not
    matter, only the partitions (as scikit-learn's ``rand_score``).

    Parameters
    ----------
    labels_true, labels_pred : array-like, shape (n,)
        Two labelings of the same n patterns (ints or strings).

    Returns
    -------
    float
        In [0, 1]; 1 for identical partitions (and for n < 2).

    Raises
    ------
    DataValidationError
        If the labelings have different lengths.

    Examples
    --------
    >>> rand_index([0, 0, 1, 1], [1, 1, 0, 0])
    1.0
    >>> round(rand_index([0, 0, 1, 1], [0, 1, 0, 1]), 4)
    0.3333
    """
    a, b = _two_labelings(labels_true, labels_pred, ("labels_true", "labels_pred"))
    n = len(a)
    if n < 2:
        return 1.0
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    table = np.zeros((ia.max() + 1, ib.max() + 1))
    np.add.at(table, (ia, ib), 1)

    def pairs(c):
        return float((c * (c - 1) / 2).sum())

    total = n * (n - 1) / 2
    same_both = pairs(table)
    disagree = pairs(table.sum(1)) + pairs(table.sum(0)) - 2 * same_both
    return 1.0 - disagree / total


def nearest_neighbor_accuracy(embedding: ArrayLike, labels: ArrayLike) -> float:
    """Leave-one-out 1-nearest-neighbour accuracy of an embedding.

    Each pattern gets the label of its nearest other pattern (Euclidean
    distance between the rows of ``embedding``); the share of patterns whose
    label that is. Dense: ``O(n^2)`` memory, for embeddings of a few
    thousand patterns.

    Parameters
    ----------
    embedding : array-like, shape (n, d)
    labels : array-like, shape (n,)

    Returns
    -------
    float
        In [0, 1].

    Raises
    ------
    DataValidationError
        Fewer than 2 patterns, labels of another length, or an n x n
        distance matrix larger than the memory.

    Examples
    --------
    >>> nearest_neighbor_accuracy([[0.0], [0.1], [5.0], [5.2]], [0, 0, 1, 1])
    1.0
    """
    E = np.asarray(as_array(embedding, "embedding"), dtype=np.float64)
    E = E.reshape(len(E), -1)
    y = as_array(labels, "labels").ravel()
    if len(E) < 2 or len(y) != len(E):
        raise DataValidationError(
            f"embedding and labels must describe the same n >= 2 patterns; got "
            f"{len(E)} rows and {len(y)} labels."
        )
    n = len(E)
    # the distances and the Gram matrix they are computed from, float64
    check_memory(
        "nearest_neighbor_accuracy",
        2 * 8.0 * n * n,
        torch.device("cpu"),
        f"the {n} x {n} distance matrix",
        hint="Score a random sample of the patterns.",
    )
    sq = (E * E).sum(1)
    d2 = sq[:, None] + sq[None, :] - 2 * E @ E.T
    np.fill_diagonal(d2, np.inf)
    return float((y[d2.argmin(1)] == y).mean())

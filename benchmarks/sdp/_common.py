"""Shared pieces of the sdp benchmarks: adult data, pairs, clustering, Rand index."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp


def data_dir() -> Path:
    """``$EMBEDOPT_DATA`` (the shared data folder), else ``../shared/data``."""
    root = os.environ.get("EMBEDOPT_DATA")
    if root:
        return Path(root)
    return Path(__file__).resolve().parents[3] / "shared" / "data"


def read_svmlight(path, n_features: int = 123):
    """An svmlight file as (CSR features, int labels), without scikit-learn."""
    rows, cols, vals, labels = [], [], [], []
    with open(path) as fh:
        for r, line in enumerate(fh):
            label, *items = line.split()
            labels.append(int(float(label)))
            for item in items:
                k, v = item.split(":")
                rows.append(r)
                cols.append(int(k) - 1)
                vals.append(float(v))
    X = sp.csr_matrix((vals, (rows, cols)), shape=(len(labels), n_features))
    return X, np.asarray(labels)


def adult(name: str, rng=None):
    """``a1a``, ``a9a``, or ``a9a:<n>`` (n rows of a9a drawn without replacement)."""
    folder = data_dir() / "libsvm-adult"
    if ":" in name:
        base, size = name.split(":")
        X, y = read_svmlight(folder / base)
        idx = np.sort(np.random.default_rng(rng).choice(len(y), int(size), False))
        return X[idx], y[idx]
    return read_svmlight(folder / name)


def kmeans(V: np.ndarray, k: int, n_init: int = 10, seed: int = 0) -> np.ndarray:
    """Kernel k-means on Z = V V^T: k-means (Lloyd, k-means++) on the rows of V."""
    from scipy.cluster.vq import kmeans2

    rng = np.random.default_rng(seed)
    best, best_cost = None, np.inf
    for _ in range(n_init):
        centers, labels = kmeans2(V, k, minit="++", seed=rng)
        cost = float(((V - centers[labels]) ** 2).sum())
        if cost < best_cost:
            best, best_cost = labels, cost
    return best


def rand_index(a, b) -> float:
    """Rand (1971): the fraction of the n(n-1)/2 pairs on which a and b agree.

    From the contingency table, O(n + k^2), so a9a's 5e8 pairs cost nothing.
    """
    a = np.unique(np.asarray(a), return_inverse=True)[1]
    b = np.unique(np.asarray(b), return_inverse=True)[1]
    n = len(a)
    table = np.zeros((a.max() + 1, b.max() + 1))
    np.add.at(table, (a, b), 1)

    def pairs(x):
        return float((x * (x - 1) / 2).sum())

    total = n * (n - 1) / 2
    same_both = pairs(table)
    same_a, same_b = pairs(table.sum(1)), pairs(table.sum(0))
    return (total + 2 * same_both - same_a - same_b) / total

"""Retrieval quality of an embedding of labelled objects: MAP, P@K, R@K.

Relevance comes from class labels (Ma et al., Sec. 5.4). For retrieval against
explicit ground-truth neighbour ids see :mod:`embedopt.metrics.retrieval`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._core import DataValidationError, fill_doc, to_numpy

__all__ = [
    "label_precision_at_k",
    "label_recall_at_k",
    "mean_average_precision",
    "retrieval_scores",
]

#: The query and database arguments of every metric here (a docstring's
#: ``{labelled_data}``); without a database the queries search each other.
_LABELLED_DATA = """\
query : array-like or tensor, shape (n, p)
query_labels : array-like, shape (n,)
database : array-like or tensor, shape (N, p), optional
database_labels : array-like, shape (N,), optional"""


def _labelled_rows(X, labels, what: str, shape: str):
    """``X`` as float64 rows and one label per row, or an error naming ``what``."""
    X = np.asarray(to_numpy(X), dtype=np.float64)
    y = np.asarray(to_numpy(labels)).ravel()
    if X.ndim != 2 or X.shape[0] != y.shape[0] or X.shape[0] == 0:
        raise DataValidationError(
            f"{what} must be {shape} with one label per row; got {X.shape} and "
            f"{y.shape[0]} labels."
        )
    return X, y


def _prepare(query, query_labels, database, database_labels):
    Xq, yq = _labelled_rows(query, query_labels, "query", "(n, p)")
    if database is None:
        return Xq, yq, Xq, yq, True
    Xd, yd = _labelled_rows(database, database_labels, "database", "(N, p)")
    if Xd.shape[1] != Xq.shape[1]:
        raise DataValidationError(
            f"query and database dimensions differ: {Xq.shape[1]} vs {Xd.shape[1]}."
        )
    return Xq, yq, Xd, yd, False


@fill_doc(labelled_data=_LABELLED_DATA)
def retrieval_scores(
    query: ArrayLike | torch.Tensor,
    query_labels: ArrayLike,
    database: ArrayLike | torch.Tensor | None = None,
    database_labels: ArrayLike | None = None,
    *,
    k: int | Sequence[int] = (40, 60, 100),
    chunk_size: int = 1024,
) -> dict[str, Any]:
    """MAP, Precision@K and Recall@K of nearest-neighbour retrieval by label.

    Every query ranks the database by ascending Euclidean distance; database
    items with the query's label are the relevant ones (Ma et al., Sec. 5.4):
    ``P@K = TP_K / K``, ``R@K = TP_K / (TP_K + FN_K)`` and ``AP`` is the mean of
    the precisions at the ranks of the relevant items; every score is averaged
    over the queries. Without a database, each query searches the other
    queries (leave-one-out).

    Parameters
    ----------
    {labelled_data}
    k : int or sequence of int
        Cut-offs of Precision@K and Recall@K (paper: 40 to 100, P@60 in Table II).
    chunk_size : int
        Queries ranked at once (memory is ``chunk_size * N``).

    Returns
    -------
    dict
        ``"map"`` (float), ``"precision"`` and ``"recall"`` (dicts from K to
        float).
    """
    Xq, yq, Xd, yd, loo = _prepare(query, query_labels, database, database_labels)
    ks = [int(k)] if np.ndim(k) == 0 else [int(v) for v in k]
    N = Xd.shape[0] - (1 if loo else 0)
    if not ks or min(ks) < 1 or max(ks) > N:
        raise DataValidationError(f"Every K must be in [1, {N}]; got {ks}.")
    D_db = torch.as_tensor(Xd)
    codes_d = torch.as_tensor(np.unique(yd, return_inverse=True)[1])
    lut = {v: i for i, v in enumerate(np.unique(yd))}
    codes_q = torch.as_tensor([lut.get(v, -1) for v in yq])
    ap_sum, prec = 0.0, dict.fromkeys(ks, 0.0)
    rec = dict.fromkeys(ks, 0.0)
    ranks = torch.arange(1, N + 1, dtype=torch.float64)
    for s in range(0, Xq.shape[0], chunk_size):
        q = torch.as_tensor(Xq[s : s + chunk_size])
        dist = torch.cdist(q, D_db)
        if loo:
            rows = torch.arange(q.shape[0])
            dist[rows, rows + s] = torch.inf
        order = torch.argsort(dist, dim=1, stable=True)[:, :N]
        rel = (codes_d[order] == codes_q[s : s + chunk_size, None]).double()
        cum = rel.cumsum(1)
        n_rel = cum[:, -1]
        ap = (rel * cum / ranks).sum(1) / n_rel.clamp(min=1)
        ap_sum += float(ap.sum())
        for kk in ks:
            prec[kk] += float((cum[:, kk - 1] / kk).sum())
            rec[kk] += float((cum[:, kk - 1] / n_rel.clamp(min=1)).sum())
    n = Xq.shape[0]
    return {
        "map": ap_sum / n,
        "precision": {kk: v / n for kk, v in prec.items()},
        "recall": {kk: v / n for kk, v in rec.items()},
    }


@fill_doc(labelled_data=_LABELLED_DATA)
def mean_average_precision(
    query: ArrayLike | torch.Tensor,
    query_labels: ArrayLike,
    database: ArrayLike | torch.Tensor | None = None,
    database_labels: ArrayLike | None = None,
) -> float:
    """Mean average precision of retrieval by label (see :func:`retrieval_scores`).

    Parameters
    ----------
    {labelled_data}

    Returns
    -------
    float
    """
    return retrieval_scores(query, query_labels, database, database_labels, k=1)["map"]


@fill_doc(labelled_data=_LABELLED_DATA)
def label_precision_at_k(
    query: ArrayLike | torch.Tensor,
    query_labels: ArrayLike,
    database: ArrayLike | torch.Tensor | None = None,
    database_labels: ArrayLike | None = None,
    *,
    k: int = 60,
) -> float:
    """Precision@K of retrieval by label (see :func:`retrieval_scores`).

    Parameters
    ----------
    {labelled_data}
    k : int

    Returns
    -------
    float
    """
    res = retrieval_scores(query, query_labels, database, database_labels, k=k)
    return res["precision"][int(k)]


def label_recall_at_k(
    query: ArrayLike | torch.Tensor,
    query_labels: ArrayLike,
    database: ArrayLike | torch.Tensor | None = None,
    database_labels: ArrayLike | None = None,
    *,
    k: int = 60,
) -> float:
    """Recall@K of retrieval by label; arguments as in :func:`label_precision_at_k`."""
    res = retrieval_scores(query, query_labels, database, database_labels, k=k)
    return res["recall"][int(k)]

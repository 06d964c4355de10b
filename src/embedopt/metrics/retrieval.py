"""Retrieval and quantization metrics: recall@k, precision@k, distortion."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Protocol

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._core import DataValidationError, fill_doc, to_numpy

__all__ = [
    "average_precision_at_k",
    "ndcg_at_k",
    "precision_at_k",
    "quantization_distortion",
    "recall_at_k",
]


class _SparseRows(Protocol):
    """A scipy.sparse matrix or array: ``relevant`` reads it through ``tocsr``."""

    def tocsr(self) -> Any: ...


#: What ``relevant`` accepts: padded ids, id collections or a sparse matrix.
Relevant = ArrayLike | Sequence[Collection[int]] | _SparseRows

#: What every ranking metric takes and returns (its docstring's
#: ``{ranking_arguments}``).
_RANKING_ARGUMENTS = """\
Parameters
----------
retrieved : array-like of int, shape (n_queries, n_results)
    Ranked result ids, best first.
relevant : array-like of int (n_queries,) or (n_queries, r) padded with -1,
    list of id collections, or scipy.sparse matrix (nonzeros are relevant)
k : int

Returns
-------
float"""


def _relevant_sets(relevant, nq: int) -> list[np.ndarray]:
    if hasattr(relevant, "tocsr"):  # scipy.sparse: nonzeros of row q
        csr = relevant.tocsr()
        if csr.shape[0] != nq:
            raise DataValidationError(
                f"relevant has {csr.shape[0]} rows but there are {nq} queries."
            )
        return [csr.indices[csr.indptr[q] : csr.indptr[q + 1]] for q in range(nq)]
    if isinstance(relevant, np.ndarray) or hasattr(relevant, "detach"):
        arr = np.asarray(to_numpy(relevant))
        if arr.ndim == 1:
            arr = arr[:, None]
        if arr.shape[0] != nq:
            raise DataValidationError(
                f"relevant has {arr.shape[0]} rows but there are {nq} queries."
            )
        return [row[row >= 0] for row in arr]  # -1 pads rows of unequal length
    sets = [np.asarray(list(r), dtype=np.int64) for r in relevant]
    if len(sets) != nq:
        raise DataValidationError(
            f"relevant has {len(sets)} entries but there are {nq} queries."
        )
    return sets


def _hits(retrieved, relevant, k: int):
    ret = np.asarray(to_numpy(retrieved))
    if ret.ndim != 2:
        raise DataValidationError(
            f"retrieved must be 2-D (n_queries, n_results); got shape {ret.shape}."
        )
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise DataValidationError(f"k must be a positive int; got {k!r}.")
    if ret.shape[0] == 0:
        raise DataValidationError("Cannot compute a metric on zero queries.")
    top = ret[:, :k]
    rel = _relevant_sets(relevant, ret.shape[0])
    hits = np.array(
        [np.isin(np.unique(t), r).sum() for t, r in zip(top, rel, strict=True)],
        dtype=np.float64,
    )
    sizes = np.array([np.unique(r).size for r in rel], dtype=np.float64)
    return hits, sizes


def _answerable(sizes: np.ndarray) -> np.ndarray:
    """Mask of the queries with a relevant item; an error when none has one
    (every mean over them would be empty)."""
    ok = sizes > 0
    if not ok.any():
        raise DataValidationError("No query has a relevant item.")
    return ok


@fill_doc(ranking_arguments=_RANKING_ARGUMENTS)
def recall_at_k(retrieved: ArrayLike, relevant: Relevant, k: int) -> float:
    """Mean fraction of each query's relevant items found in its top k.

    ``mean_q |top_k(q) ∩ rel(q)| / |rel(q)|`` over queries with at least one
    relevant item. With ``relevant`` = the exact nearest neighbour of each
    query this is the ANN "recall@R" of Jegou et al. (2010) with R = k.

    {ranking_arguments}
    """
    hits, sizes = _hits(retrieved, relevant, k)
    ok = _answerable(sizes)
    return float(np.mean(hits[ok] / sizes[ok]))


@fill_doc(ranking_arguments=_RANKING_ARGUMENTS)
def precision_at_k(retrieved: ArrayLike, relevant: Relevant, k: int) -> float:
    """Mean fraction of each query's top k that is relevant.

    ``mean_q |top_k(q) ∩ rel(q)| / k``.

    {ranking_arguments}
    """
    hits, _ = _hits(retrieved, relevant, k)
    return float(np.mean(hits / k))


def _rank_hits(retrieved, relevant, k: int):
    """0/1 matrix (n_queries, k) of relevant results by rank, |rel| per query,
    and the mask of queries with a relevant item (at least one, else an error)."""
    _hits(retrieved, relevant, k)  # validates
    top = np.asarray(to_numpy(retrieved))[:, :k]
    rel = _relevant_sets(relevant, top.shape[0])
    marks = np.zeros(top.shape, dtype=np.float64)
    for q, (t, r) in enumerate(zip(top, rel, strict=True)):
        # A repeated id counts once, at its first rank.
        first = np.zeros(t.shape, dtype=bool)
        _, where = np.unique(t, return_index=True)
        first[where] = True
        marks[q] = np.isin(t, r) & first & (t >= 0)
    sizes = np.array([np.unique(r).size for r in rel], dtype=np.float64)
    return marks, sizes, _answerable(sizes)


@fill_doc(ranking_arguments=_RANKING_ARGUMENTS)
def ndcg_at_k(retrieved: ArrayLike, relevant: Relevant, k: int) -> float:
    """Mean normalized discounted cumulative gain of the top k (binary relevance).

    ``DCG = sum_{r <= k} rel_r / log2(r + 1)``, divided by the DCG of an
    ideal ranking (the ``min(k, |rel(q)|)`` relevant items first); averaged
    over queries with at least one relevant item.

    {ranking_arguments}
    """
    marks, sizes, ok = _rank_hits(retrieved, relevant, k)
    discount = 1.0 / np.log2(np.arange(2, marks.shape[1] + 2))
    dcg = marks @ discount
    cum = np.concatenate([[0.0], np.cumsum(discount)])
    ideal = cum[np.minimum(sizes, marks.shape[1]).astype(int)]
    return float(np.mean(dcg[ok] / ideal[ok]))


@fill_doc(ranking_arguments=_RANKING_ARGUMENTS)
def average_precision_at_k(retrieved: ArrayLike, relevant: Relevant, k: int) -> float:
    """Mean average precision of the top k (MAP@k).

    ``AP@k(q) = sum_{r <= k} P@r(q) rel_r / min(k, |rel(q)|)``, averaged
    over queries with at least one relevant item.

    {ranking_arguments}
    """
    marks, sizes, ok = _rank_hits(retrieved, relevant, k)
    ranks = np.arange(1, marks.shape[1] + 1)
    prec = np.cumsum(marks, axis=1) / ranks
    ap = (prec * marks).sum(1) / np.maximum(np.minimum(sizes, marks.shape[1]), 1)
    return float(np.mean(ap[ok]))


def quantization_distortion(
    X: ArrayLike | torch.Tensor, X_hat: ArrayLike | torch.Tensor
) -> float:
    """Mean squared reconstruction error ``mean_i ||x_i - x_hat_i||^2``.

    The distortion reported in Sec. 3.1 of Jiang et al. (squared L2 distance
    between a vector and its quantization, averaged over vectors), in float64.

    Parameters
    ----------
    X, X_hat : array-like or tensor, shape (m, n)

    Returns
    -------
    float
    """
    a = np.asarray(to_numpy(X), dtype=np.float64)
    b = np.asarray(to_numpy(X_hat), dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2:
        raise DataValidationError(
            f"X and X_hat must be 2-D of the same shape; got {a.shape} and {b.shape}."
        )
    if a.shape[0] == 0:
        raise DataValidationError("Cannot compute a distortion on zero vectors.")
    return float(((a - b) ** 2).sum(1).mean())

"""Exact top-k maximum inner product search in batches, with exclusions."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

__all__ = ["top_k_inner_products"]


def top_k_inner_products(
    queries: torch.Tensor,
    items: torch.Tensor,
    k: int,
    *,
    exclude: sp.csr_matrix | None = None,
    batch_size: int = 1024,
) -> tuple[np.ndarray, np.ndarray]:
    """The k items of largest inner product with each query.

    Scores a batch of queries against all items at a time, so memory is
    ``batch_size x n_items`` scores, never ``n_queries x n_items``.

    Parameters
    ----------
    queries : torch.Tensor, shape (b, d)
    items : torch.Tensor, shape (n, d)
    k : int
        Results per query (at most n).
    exclude : scipy.sparse matrix, shape (b, n), optional
        Nonzeros of row q are items never returned for query q (e.g. the
        items a user has already seen).
    batch_size : int
        Queries scored at once.

    Returns
    -------
    ids : numpy.ndarray of int64, shape (b, k)
        Item indices by decreasing score; -1 where fewer than k items remain
        after the exclusions.
    scores : numpy.ndarray, shape (b, k)
        Their inner products (-inf where ``ids`` is -1).

    Examples
    --------
    >>> q = torch.tensor([[1.0, 0.0]]); v = torch.eye(2)
    >>> top_k_inner_products(q, v, 1)[0]
    array([[0]])
    """
    n = items.shape[0]
    k = min(int(k), n)
    b = queries.shape[0]
    if exclude is not None:
        exclude = sp.csr_matrix(exclude)
        if exclude.shape != (b, n):
            raise ValueError(
                f"exclude must have shape ({b}, {n}) (queries x items); got "
                f"{exclude.shape}."
            )
    ids = np.full((b, k), -1, dtype=np.int64)
    scores = np.full((b, k), -np.inf)
    for a in range(0, b, batch_size):
        s = queries[a : a + batch_size] @ items.T
        if exclude is not None:  # -inf at the row slice's nonzeros, in place
            block = exclude[a : a + batch_size]
            rows = np.repeat(np.arange(block.shape[0]), np.diff(block.indptr))
            flat = torch.as_tensor(rows * n + block.indices, device=s.device)
            s.view(-1).index_fill_(0, flat, -torch.inf)
        top_s, top_i = torch.topk(s, k, dim=1)
        top_s = top_s.detach().cpu().double().numpy()
        top_i = top_i.cpu().numpy()
        top_i[~np.isfinite(top_s)] = -1
        ids[a : a + len(top_i)] = top_i
        scores[a : a + len(top_i)] = top_s
    return ids, scores

"""The retrieval surface every two-tower model offers: one way to ask for items.

:class:`RetrievalMixin` gives a fitted two-tower estimator ``recommend``,
``similar_items``, ``evaluate``, ``predict`` (per-pair scores) and ``score``
(one float, higher is better), all built on
:func:`~embedopt.linalg.top_k_inner_products` (exact batched top-k with
exclusions, never an m x n score matrix). A model supplies its embeddings
through three hooks and may replace the search itself:

=========================  ==============================================
``_user_vectors(users)``   (len(users), k) tensor of query embeddings
``_item_vectors(items)``   (len(items), k) tensor of item embeddings
``_seen_pairs()``          CSR (n_users x n_items) of the training pairs
                           (default: what ``_remember_seen(data)``
                           stored at fit)
``_search(...)``           top-k positions among the candidate items, and
                           scores, of query vectors (default: exact inner
                           products; an index, e.g. the PQ layer of
                           :mod:`embedopt.quantization`, overrides it)
=========================  ==============================================

and the attribute ``shape_ = (n_users, n_items)``. Every search goes
through :meth:`RetrievalMixin._top_k`, which restricts the exclusions (a
sparse queries x items matrix) to the optional candidate items, calls
``_search`` and maps its positions back to item ids, so later additions
(item filters, id maps, approximate indexes) have one place to plug in.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
import torch
from numpy.typing import ArrayLike

from .._core import (
    DataValidationError,
    Interval,
    as_array,
    check_is_fitted,
    check_param,
    to_numpy,
)
from ..data import Interactions, InteractionsLike, as_interactions
from ..linalg import top_k_inner_products
from ..metrics import average_precision_at_k, ndcg_at_k, precision_at_k, recall_at_k

__all__ = ["RetrievalMixin", "pairs_by_user", "ranking_metrics"]


def ranking_metrics(
    ids: np.ndarray, relevant: Sequence[ArrayLike], k: int
) -> dict[str, float]:
    """P@k, recall@k, nDCG@k and MAP@k of ranked lists.

    Parameters
    ----------
    ids : numpy.ndarray of int, shape (n_queries, >= k)
        Ranked item ids per query (-1 pads).
    relevant : list of array-like
        The relevant items of each query.
    k : int

    Returns
    -------
    dict
        ``precision@k``, ``recall@k``, ``ndcg@k``, ``map@k``.
    """
    return {
        f"precision@{k}": precision_at_k(ids, relevant, k),
        f"recall@{k}": recall_at_k(ids, relevant, k),
        f"ndcg@{k}": ndcg_at_k(ids, relevant, k),
        f"map@{k}": average_precision_at_k(ids, relevant, k),
    }


def pairs_by_user(data: Interactions) -> tuple[np.ndarray, list[np.ndarray]]:
    """The users with at least one pair, and the items of each.

    Parameters
    ----------
    data : Interactions

    Returns
    -------
    users : numpy.ndarray of int64
        Sorted.
    items : list of numpy.ndarray
        ``items[q]``: the items of ``users[q]``, in the order of the data.
    """
    order = np.argsort(data.users, kind="stable")
    u, i = data.users[order], data.items[order]
    users = np.unique(u)
    return users, np.split(i, np.searchsorted(u, users[1:]))


def _check_k(k, owner: str) -> None:
    check_param(owner, "k", k, [Interval(int, 1, None)])


def _self_pairs(items: np.ndarray, n_items: int) -> sp.csr_matrix:
    """Row q excludes item ``items[q]`` (an item is not similar to itself)."""
    return sp.csr_matrix(
        (np.ones(items.size), (np.arange(items.size), items)),
        shape=(items.size, n_items),
    )


class RetrievalMixin:
    """``recommend``, ``similar_items``, ``evaluate``, ``predict``, ``score``.

    Mixed into a fitted two-tower estimator that sets ``shape_`` and
    implements ``_user_vectors`` and ``_item_vectors`` and calls
    ``_remember_seen(data)`` in ``fit`` (or overrides ``_seen_pairs``; see
    the module docstring); ``_search`` may be overridden by a model that
    searches an index instead of exact inner products. ``score`` reports
    precision@k with ``k = self._score_k`` (10 unless the model sets it).
    """

    #: The attribute whose presence marks a fitted model.
    _fitted_attr = "shape_"

    # -- hooks ---------------------------------------------------------------------
    def _user_vectors(self, users: np.ndarray) -> torch.Tensor:
        raise NotImplementedError

    def _item_vectors(self, items: np.ndarray | None) -> torch.Tensor:
        raise NotImplementedError

    def _seen_pairs(self) -> sp.csr_matrix:
        return self._seen

    def _remember_seen(self, data: Interactions) -> None:
        """Store the training pairs as the CSR matrix ``_seen_pairs`` returns."""
        self._seen = sp.csr_matrix(
            (np.ones(len(data)), (data.users, data.items)), shape=data.shape
        )

    @property
    def _score_k(self) -> int:
        return 10

    def _top_k(
        self,
        queries: torch.Tensor,
        k: int,
        exclude: sp.csr_matrix | None,
        candidates: np.ndarray | None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k items of each query vector among ``candidates`` (None: all).

        Parameters
        ----------
        queries : torch.Tensor, shape (b, k)
        k : int
            At most the number of candidates.
        exclude : scipy.sparse.csr_matrix, shape (b, n_items), optional
            Nonzeros of row q are items never returned for query q.
        candidates : numpy.ndarray of int64, optional
            The items to rank (unique); None ranks every item.

        Returns
        -------
        ids, scores : numpy.ndarray, shape (b, k)
            Item ids (-1 pads) and their scores (-inf pads).
        """
        if candidates is not None and exclude is not None:
            exclude = exclude[:, candidates]
        ids, scores = self._search(queries, k, exclude, candidates)
        if candidates is not None:
            ids = np.where(ids >= 0, candidates[np.maximum(ids, 0)], -1)
        return ids, scores

    def _search(
        self,
        queries: torch.Tensor,
        k: int,
        exclude: sp.csr_matrix | None,
        candidates: np.ndarray | None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k positions in ``candidates`` (None: all items) of each query.

        The hook an index overrides. Arguments as in :meth:`_top_k`, except
        that ``exclude`` has one column per candidate and the returned ids
        are positions among the candidates (-1 pads), not item ids.
        """
        vectors = self._item_vectors(candidates)
        return top_k_inner_products(queries, vectors, k, exclude=exclude)

    # -- input checks --------------------------------------------------------------
    def _ids(self, ids, side: int, name: str) -> np.ndarray:
        arr = as_array(ids, name)
        if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
            raise DataValidationError(
                f"{name} must be integer indices; got {arr.dtype}."
            )
        arr = arr.astype(np.int64).ravel()
        limit = self.shape_[side]
        if arr.size and (arr.min() < 0 or arr.max() >= limit):
            raise DataValidationError(
                f"{name} must lie in [0, {limit}); got min {int(arr.min())}, "
                f"max {int(arr.max())}."
            )
        return arr

    def _candidates(self, items) -> np.ndarray | None:
        if items is None:
            return None
        arr = np.unique(self._ids(items, 1, "items"))
        if arr.size == 0:
            raise DataValidationError("items must name at least one item.")
        return arr

    # -- the surface ---------------------------------------------------------------
    def recommend(
        self,
        users: ArrayLike,
        k: int = 10,
        *,
        exclude_seen: bool = True,
        items: ArrayLike | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k items of each user by predicted score.

        Parameters
        ----------
        users : array-like of int
        k : int
            Items per user (at most the number of candidate items).
        exclude_seen : bool
            Never recommend a training pair.
        items : array-like of int, optional
            Candidate items (e.g. those in stock; order and repeats do not
            matter); default every item.

        Returns
        -------
        ids : numpy.ndarray of int64, shape (len(users), k)
            Item ids by decreasing score; -1 pads rows that run out of items.
        scores : numpy.ndarray of float64, shape (len(users), k)
            Their scores (-inf where ``ids`` is -1).
        """
        check_is_fitted(self, self._fitted_attr)
        owner = f"{type(self).__name__}.recommend"
        _check_k(k, owner)
        check_param(owner, "exclude_seen", exclude_seen, ["boolean"])
        u = self._ids(users, 0, "users")
        candidates = self._candidates(items)
        n = self.shape_[1] if candidates is None else candidates.size
        exclude = self._seen_pairs()[u] if exclude_seen else None
        return self._top_k(self._user_vectors(u), min(int(k), n), exclude, candidates)

    def similar_items(
        self, items: ArrayLike, k: int = 10
    ) -> tuple[np.ndarray, np.ndarray]:
        """The k items whose embeddings score highest against each item's.

        Parameters
        ----------
        items : array-like of int
        k : int

        Returns
        -------
        ids : numpy.ndarray of int64, shape (len(items), k)
            The item itself is excluded; -1 pads.
        scores : numpy.ndarray of float64, shape (len(items), k)
        """
        check_is_fitted(self, self._fitted_attr)
        _check_k(k, f"{type(self).__name__}.similar_items")
        i = self._ids(items, 1, "items")
        n = self.shape_[1]
        return self._top_k(
            self._item_vectors(i), min(int(k), n), _self_pairs(i, n), None
        )

    def evaluate(
        self,
        test: InteractionsLike,
        k: int = 10,
        *,
        exclude_seen: bool = True,
    ) -> dict:
        """Ranking metrics of held-out pairs: P@k, recall@k, nDCG@k, MAP@k.

        Parameters
        ----------
        test : scipy.sparse matrix, tuple (users, items) or Interactions
            Held-out positive pairs; every user with one is a query.
        k : int
        exclude_seen : bool
            Remove training pairs from the rankings.

        Returns
        -------
        dict
            ``precision@k``, ``recall@k``, ``ndcg@k``, ``map@k``, ``n_users``.
        """
        check_is_fitted(self, self._fitted_attr)
        owner = f"{type(self).__name__}.evaluate"
        _check_k(k, owner)
        check_param(owner, "exclude_seen", exclude_seen, ["boolean"])
        users, relevant = pairs_by_user(as_interactions(test, self.shape_))
        ids, _ = self.recommend(users, k, exclude_seen=exclude_seen)
        return {**ranking_metrics(ids, relevant, k), "n_users": int(users.size)}

    def predict(self, users: ArrayLike, items: ArrayLike) -> np.ndarray:
        """Predicted scores ``p_u^T q_i`` of (user, item) pairs.

        Parameters
        ----------
        users, items : array-like of int, same length

        Returns
        -------
        numpy.ndarray of float
        """
        check_is_fitted(self, self._fitted_attr)
        u = self._ids(users, 0, "users")
        i = self._ids(items, 1, "items")
        if u.shape != i.shape:
            raise DataValidationError(
                f"users and items must have the same length; got {u.size} and {i.size}."
            )
        return to_numpy((self._user_vectors(u) * self._item_vectors(i)).sum(1))

    def score(
        self,
        X: InteractionsLike,
        y: ArrayLike | None = None,
    ) -> float:
        """precision@k of held-out pairs (training pairs excluded), higher is better.

        ``k`` is ``eval_k`` where the model has it, else 10.

        Parameters
        ----------
        X : scipy.sparse matrix, tuple (users, items) or Interactions
            Held-out positive pairs.
        y : None
            Ignored.

        Returns
        -------
        float
        """
        k = self._score_k
        return float(self.evaluate(X, k)[f"precision@{k}"])

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
from ..data import IdMap, Interactions, InteractionsLike, as_interactions
from ..data.frames import (
    decode_ids,
    encode_ids,
    fitted_maps,
    frame_columns,
    is_frame,
    pair_columns,
    public_ids,
)
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

    A model whose ``fit`` passes its pairs through ``_map_pairs`` (a
    DataFrame, string ids) keeps ``user_ids_`` and ``item_ids_``; every
    method then takes the user's ids and ``recommend`` / ``similar_items``
    return item ids (pads: -1 for integer ids, ``""`` for strings, where the
    score is -inf). An unknown id follows the model's ``unknown`` parameter
    ("raise" when it has none): an error, NaN scores, or ``"fallback"``: the
    popularity ranking of the training items (their counts as scores,
    nothing excluded) and, in ``predict``, the mean embedding of the side
    whose id is unknown.
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

    # -- ids -------------------------------------------------------------------------
    def _map_pairs(self, X, shape=None):
        """``fit``'s pairs with their ids mapped (a frame, string ids), setting
        ``user_ids_`` and ``item_ids_`` (None for positions)."""
        read = pair_columns(X, owner=self._name, weight_hint=self._weight_hint)
        maps = [None, None] if read is None else read[1]
        self.user_ids_, self.item_ids_ = (public_ids(m) for m in maps)
        if shape is not None:
            for side, id_map, size in zip(("user", "item"), maps, shape, strict=False):
                if id_map is not None and size != len(id_map):
                    raise DataValidationError(
                        f"shape={tuple(shape)} gives {size} {side}s, but the {side} "
                        f"ids were mapped to {len(id_map)} codes (one per distinct "
                        "id): leave shape=None with ids, or pass positions 0..n-1."
                    )
        return X if read is None else read[0]

    def _maps(self) -> tuple[IdMap | None, IdMap | None]:
        ids = (getattr(self, "user_ids_", None), getattr(self, "item_ids_", None))
        return tuple(fitted_maps(self, ids))

    @property
    def _unknown(self) -> str:
        return getattr(self, "unknown", "raise")

    def _raw_pairs(self, X):
        """``([users, items], rest)`` of a frame or a tuple; None otherwise."""
        if is_frame(X):
            columns, _ = frame_columns(
                X, ("user", "item"), owner=type(self).__name__, values="refuse"
            )
            return columns, ()
        if isinstance(X, tuple) and len(X) in (2, 3):
            return list(X[:2]), X[2:]
        return None

    def _pairs(self, X) -> Interactions:
        """Held-out pairs in the fit's ids, every id known (``validation``)."""
        raw = self._raw_pairs(X)
        if raw is None:
            return as_interactions(X, self.shape_)
        columns = [
            c if m is None else encode_ids(c, m, what=f"{side} ids", owner=self._name)
            for c, m, side in zip(raw[0], self._maps(), ("user", "item"), strict=True)
        ]
        return as_interactions((*columns, *raw[1]), self.shape_)

    @property
    def _name(self) -> str:
        return type(self).__name__

    #: What a frame's third column (a weight) should become instead.
    _weight_hint = "pass it as sample_weight= to fit."

    # -- input checks --------------------------------------------------------------
    def _ids(self, ids, side: int, name: str) -> np.ndarray:
        """Codes of the ids (positions) asked; -1 marks unknown ones where
        ``unknown`` is not ``"raise"``."""
        id_map = self._maps()[side]
        if id_map is not None:
            return encode_ids(
                np.atleast_1d(ids),
                id_map,
                what=f"{name[:-1]} ids",
                unknown=self._unknown,
                owner=type(self).__name__,
            )
        arr = as_array(ids, name)
        if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
            raise DataValidationError(
                f"{name} must be integer indices; got {arr.dtype}."
            )
        arr = arr.astype(np.int64).ravel()
        limit = self.shape_[side]
        over = arr >= limit if self._unknown == "raise" else np.zeros(arr.size, bool)
        if arr.size and (arr.min() < 0 or over.any()):
            raise DataValidationError(
                f"{name} must lie in [0, {limit}); got min {int(arr.min())}, "
                f"max {int(arr.max())}."
            )
        return np.where(arr >= limit, -1, arr)

    def _candidates(self, items) -> np.ndarray | None:
        if items is None:
            return None
        arr = np.unique(self._ids(items, 1, "items"))
        # unknown candidates (unknown="nan" / "fallback") rank nowhere
        arr = arr[arr >= 0]
        if arr.size == 0:
            raise DataValidationError("items must name at least one known item.")
        return arr

    def _popular(self, k: int, candidates: np.ndarray | None):
        """The ``k`` candidate items with the most training pairs (ties: lowest
        code first), and their counts: the fallback ranking."""
        counts = np.asarray(self._seen_pairs().sum(axis=0), dtype=np.float64).ravel()
        items = np.arange(counts.size) if candidates is None else candidates
        order = np.argsort(-counts[items], kind="stable")[:k]
        return items[order], counts[items][order]

    def _rank(self, u: np.ndarray, k, exclude, candidates, vectors):
        """Top-k of the known queries (``u >= 0``); the rest as ``unknown``
        says: NaN scores and -1 ids, or the popularity ranking (nothing
        excluded)."""
        known = u >= 0
        if known.all():
            return self._top_k(vectors(u), k, exclude, candidates)
        ids = np.full((u.size, k), -1, dtype=np.int64)
        scores = np.full((u.size, k), -np.inf)
        if known.any():
            sub = None if exclude is None else exclude[np.flatnonzero(known)]
            ids[known], scores[known] = self._top_k(
                vectors(u[known]), k, sub, candidates
            )
        if self._unknown == "nan":
            scores[~known] = np.nan
        else:
            ids[~known], scores[~known] = self._popular(k, candidates)
        return ids, scores

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
        ids, scores = self._recommend_codes(u, k, exclude_seen, candidates)
        return decode_ids(ids, getattr(self, "item_ids_", None)), scores

    def _recommend_codes(self, u, k, exclude_seen, candidates):
        """``recommend`` on user codes (-1: unknown), returning item codes."""
        n = self.shape_[1] if candidates is None else candidates.size
        exclude = self._seen_pairs()[np.maximum(u, 0)] if exclude_seen else None
        return self._rank(u, min(int(k), n), exclude, candidates, self._user_vectors)

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
        ids, scores = self._rank(
            i,
            min(int(k), n),
            _self_pairs(np.maximum(i, 0), n),
            None,
            self._item_vectors,
        )
        return decode_ids(ids, getattr(self, "item_ids_", None)), scores

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
        users, relevant = pairs_by_user(self._held_out(test))
        u = np.where(users < self.shape_[0], users, -1)
        ids, _ = self._recommend_codes(u, k, exclude_seen, None)
        return {**ranking_metrics(ids, relevant, k), "n_users": int(users.size)}

    def _held_out(self, test) -> Interactions:
        """Held-out pairs as codes. Where ``unknown`` allows them, an unknown
        user gets a code from ``n_users`` up (one per distinct id, ranked as
        ``unknown`` says) and an unknown item the code -2 (relevant, never
        retrieved)."""
        raw = None if self._unknown == "raise" else self._raw_pairs(test)
        if raw is None:  # positions, e.g. a sparse matrix: no unknown ids
            return self._pairs(test)
        lengths = {np.size(c) for c in raw[0]}
        if len(lengths) != 1 or 0 in lengths:
            raise DataValidationError(
                "Held-out pairs must be two non-empty columns (users, items) of "
                f"the same length; got lengths {[np.size(c) for c in raw[0]]}."
            )
        cols = []
        for side, column in enumerate(raw[0]):
            codes = self._ids(column, side, ("users", "items")[side])
            given = np.asarray(column)
            if side == 0 and (codes < 0).any():  # one code per unknown user
                new = given[codes < 0].astype(str)
                _, inverse = np.unique(new, return_inverse=True)
                codes[codes < 0] = self.shape_[0] + inverse.ravel()
            cols.append(np.where(codes < 0, -2, codes))
        return Interactions(cols[0], cols[1], self.shape_)

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
        known = (u >= 0) & (i >= 0)
        if known.all():
            return to_numpy((self._user_vectors(u) * self._item_vectors(i)).sum(1))
        out = np.full(u.size, np.nan)
        if known.any():
            out[known] = to_numpy(
                (self._user_vectors(u[known]) * self._item_vectors(i[known])).sum(1)
            )
        if self._unknown == "fallback":  # the mean embedding of the missing side
            rest = ~known
            p = self._side_vectors(u[rest], self._user_vectors, self.shape_[0])
            q = self._side_vectors(i[rest], self._item_vectors, self.shape_[1])
            out[rest] = to_numpy((p * q).sum(1))
        return out

    def _side_vectors(self, codes, vectors, n) -> torch.Tensor:
        """Vectors of the codes; an unknown one (-1) gets the mean of all ``n``."""
        out = vectors(np.maximum(codes, 0))
        if (codes < 0).any():
            mean = vectors(np.arange(n)).double().mean(0).to(out.dtype)
            out[torch.as_tensor(codes < 0, device=out.device)] = mean
        return out

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

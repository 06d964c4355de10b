"""The retrieval surface every recommender offers: one way to ask for items.

:class:`RetrievalMixin` gives a fitted recommender (the two-tower models and
:class:`~embedopt.completion.MatrixCompletion`) ``recommend``,
``similar_items``, ``similar_users``, ``evaluate``, ``predict`` (per-pair
scores) and ``score`` (one float, higher is better; a model with its own
``predict`` / ``score`` lists the mixin after its base class), all built on
:func:`~embedopt.linalg.top_k_inner_products` (exact batched top-k with
exclusions: chunks of queries x all candidate items, seen items masked per
chunk from CSR row slices, never an m x n score matrix). A model supplies
its vectors through these hooks and may replace the search itself:

===============================  ==========================================
``_user_vectors(users)``         (len(users), d) tensor of query vectors
``_item_vectors(items)``         (len(items), d) tensor of item vectors
                                 (``items`` None: every item); a score is
                                 the inner product of the two
``_seen_pairs()``                CSR (n_users x n_items) of the training
                                 pairs (default: what
                                 ``_remember_seen(data)`` stored at fit)
``_search(...)``                 top-k positions among the candidate
                                 items, and scores, of query vectors
                                 (default: exact inner products; an index,
                                 e.g. the PQ layer of
                                 :mod:`embedopt.quantization`, overrides it)
``_neighbour_vectors(side, c)``  vectors that rank ``similar_users`` (side
                                 0) and ``similar_items`` (side 1);
                                 default the query / item vectors
``_fallback_items(k, cands)``    the ranking an unknown user gets with
                                 ``unknown="fallback"`` (default: the
                                 popularity ranking)
===============================  ==========================================

the attribute ``shape_ = (n_users, n_items)``, and the class attribute
``_similarity``: ``"inner"`` (neighbours by inner product; ``similar_items``
goes through ``_search``, so an index serves it) or ``"cosine"`` (both
``similar_*`` by the cosine of ``_neighbour_vectors``, exactly).
Every item search goes through :meth:`RetrievalMixin._top_k`, which
restricts the exclusions (a sparse queries x items matrix) to the optional
candidate items, calls ``_search`` and maps its positions back to item
codes, so later additions (approximate indexes) have one place to plug in;
item filters (``items=``, ``filter_items=``) reach it as the candidates.
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
    InvalidParameterError,
    NotFittedError,
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
from .index import ItemIndex

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
    """``recommend``, ``similar_items``, ``similar_users``, ``evaluate``,
    ``predict``, ``score``.

    Mixed into a fitted recommender that sets ``shape_`` and implements
    ``_user_vectors`` and ``_item_vectors`` and calls
    ``_remember_seen(data)`` in ``fit`` (or overrides ``_seen_pairs``; see
    the module docstring); ``_search`` may be overridden by a model that
    searches an index instead of exact inner products. ``score`` reports
    precision@k with ``k = self._score_k`` (10 unless the model sets it).

    A model whose ``fit`` passes its pairs through ``_map_pairs`` (a
    DataFrame, string ids) keeps ``user_ids_`` and ``item_ids_``; every
    method then takes the user's ids and ``recommend`` / ``similar_items`` /
    ``similar_users`` return ids in the same id space (pads: -1 for integer
    ids, ``""`` for strings, where the score is -inf). An unknown id follows
    the model's ``unknown`` parameter ("raise" when it has none): an error,
    NaN scores, or ``"fallback"``: in ``recommend`` the model's ranking for
    a user without data (``_fallback_items``; the two towers: the
    popularity ranking of the training items, their counts as scores,
    nothing excluded), in ``similar_items`` / ``similar_users`` the items /
    users with the most training pairs, and, in ``predict``, the mean
    embedding of the side whose id is unknown.
    """

    #: The attribute whose presence marks a fitted model.
    _fitted_attr = "shape_"
    #: How ``similar_items`` / ``similar_users`` rank: "inner" or "cosine".
    _similarity = "inner"
    #: A frame's value column in held-out pairs: "refuse" or "optional".
    _pair_values = "refuse"

    # -- hooks ---------------------------------------------------------------------
    def _user_vectors(self, users: np.ndarray) -> torch.Tensor:
        raise NotImplementedError

    def _item_vectors(self, items: np.ndarray | None) -> torch.Tensor:
        raise NotImplementedError

    def _neighbour_vectors(self, side: int, codes: np.ndarray | None) -> torch.Tensor:
        """Vectors of users (side 0) or items (side 1) whose inner products
        (cosines with ``_similarity = "cosine"``) rank their neighbours;
        ``codes`` None: all of that side."""
        if codes is None:
            codes = np.arange(self.shape_[side])
        return (self._user_vectors, self._item_vectors)[side](codes)

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
        queries : torch.Tensor, shape (b, d)
        k : int
            At most the number of candidates.
        exclude : scipy.sparse.csr_matrix, shape (b, n_items), optional
            Nonzeros of row q are items never returned for query q.
        candidates : numpy.ndarray of int64, optional
            The items to rank (unique, sorted); None ranks every item.

        Returns
        -------
        ids, scores : numpy.ndarray, shape (b, k)
            Item codes (-1 pads) and their scores (-inf pads).
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
        are positions among the candidates (-1 pads), not item codes.
        """
        vectors = self._item_vectors(candidates)
        return top_k_inner_products(queries, vectors, k, exclude=exclude)

    def _fallback_items(
        self, k: int, candidates: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The top ``k`` candidate items (codes) and scores of a user the model
        does not know (``unknown="fallback"``): by default the popularity
        ranking (training pairs per item as scores, ties by lowest code)."""
        return self._popular(k, candidates, 1)

    def _counts(self, side: int) -> np.ndarray:
        """Training pairs per user (side 0) or per item (side 1)."""
        seen = self._seen_pairs()
        return np.asarray(seen.sum(axis=1 - side), dtype=np.float64).ravel()

    def _popular(self, k: int, candidates: np.ndarray | None, side: int = 1):
        """The ``k`` candidates (None: every user / item of ``side``) with the
        most training pairs (ties: lowest code first), and their counts."""
        counts = self._counts(side)
        codes = np.arange(counts.size) if candidates is None else candidates
        order = np.argsort(-counts[codes], kind="stable")[:k]
        return codes[order], counts[codes][order]

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
                X, ("user", "item"), owner=self._name, values=self._pair_values
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

    def _item_set(self, items, name: str) -> np.ndarray:
        """Sorted unique codes of known items; unknown ones (``unknown`` not
        "raise") are dropped: they can be neither ranked nor returned."""
        arr = np.unique(self._ids(items, 1, name))
        return arr[arr >= 0]

    def _catalogue(self, items, filter_items) -> tuple[np.ndarray | None, int]:
        """The candidate items (None: all) left after ``filter_items``, and
        how many there were before the filter: ``recommend`` returns at most
        that many columns (filtered items pad rows, as seen ones do)."""
        candidates = None
        n = self.shape_[1]
        if items is not None:
            candidates = self._item_set(items, "items")
            if candidates.size == 0:
                raise DataValidationError("items must name at least one known item.")
            n = candidates.size
        if filter_items is not None:
            banned = self._item_set(filter_items, "filter_items")
            if banned.size:
                pool = np.arange(self.shape_[1]) if candidates is None else candidates
                candidates = pool[~np.isin(pool, banned, assume_unique=True)]
        return candidates, n

    def _rank(self, u, k, exclude, search, fallback):
        """Top-k of the known queries (``u >= 0``) by ``search(codes,
        exclude)``; the rest as ``unknown`` says: NaN scores and -1 ids, or
        ``fallback(k)`` (nothing excluded). ``k`` columns; the search may
        return fewer (-1 / -inf pad them)."""
        known = u >= 0
        ids = np.full((u.size, k), -1, dtype=np.int64)
        scores = np.full((u.size, k), -np.inf)
        if known.any():
            sub = exclude
            if exclude is not None and not known.all():
                sub = exclude[np.flatnonzero(known)]
            found, found_scores = search(u[known], sub)
            ids[known, : found.shape[1]] = found
            scores[known, : found.shape[1]] = found_scores
        if known.all():
            return ids, scores
        if self._unknown == "nan":
            scores[~known] = np.nan
        else:
            top, top_scores = fallback(k)
            ids[~known, : top.size], scores[~known, : top.size] = top, top_scores
        return ids, scores

    # -- the surface ---------------------------------------------------------------
    def recommend(
        self,
        users: ArrayLike,
        k: int = 10,
        *,
        exclude_seen: bool = True,
        items: ArrayLike | None = None,
        filter_items: ArrayLike | None = None,
        approximate: bool = False,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k items of each user by predicted score.

        Batched: chunks of users are scored against every candidate item
        and reduced with a top-k, so memory is one chunk's scores, never a
        users x items matrix.

        Parameters
        ----------
        users : array-like of int (or of the ids of the fit)
        k : int
            Items per user (at most the number of candidate items: ``k``
            larger than the catalogue or than ``items`` returns that many
            columns).
        exclude_seen : bool
            Never recommend a training pair.
        items : array-like, optional
            Candidate items (e.g. those in stock; order and repeats do not
            matter); default every item. Unknown ones are an error or, with
            ``unknown`` "nan" / "fallback", ignored; none known is an error.
        filter_items : array-like, optional
            Items never to return to anyone (e.g. sold out), in the same ids;
            like seen items they leave -1 pads where they empty a row, so a
            filter that removes every candidate gives rows of pads. Unknown
            ones are an error or, with ``unknown`` "nan" / "fallback",
            ignored.
        approximate : bool
            Search the item index of :meth:`build_index` (IVF-PQ scan, then
            an exact re-rank of its best candidates) instead of scoring every
            item: for large catalogues. It searches the whole catalogue, so
            it takes neither ``items`` nor ``filter_items``.

        Returns
        -------
        ids : numpy.ndarray of int64 (or of the item ids), shape (len(users), k)
            Item ids by decreasing score; -1 (``""`` for string ids) pads
            rows that run out of items.
        scores : numpy.ndarray of float64, shape (len(users), k)
            Their scores (-inf where ``ids`` pads).
        """
        check_is_fitted(self, self._fitted_attr)
        owner = f"{type(self).__name__}.recommend"
        _check_k(k, owner)
        check_param(owner, "exclude_seen", exclude_seen, ["boolean"])
        check_param(owner, "approximate", approximate, ["boolean"])
        index = self._approximate_index(approximate, items, filter_items, owner)
        u = self._ids(users, 0, "users")
        candidates, n = self._catalogue(items, filter_items)
        ids, scores = self._recommend_codes(
            u, min(int(k), n), exclude_seen, candidates, index
        )
        return decode_ids(ids, getattr(self, "item_ids_", None)), scores

    def build_index(self, **params) -> RetrievalMixin:
        """Build the approximate item index that ``recommend(...,
        approximate=True)`` searches.

        Parameters
        ----------
        **params
            Parameters of :class:`~embedopt.nn.ItemIndex` (``n_lists``,
            ``n_probe``, ``rerank``, ``quantizer``, ...).

        Returns
        -------
        self
            With ``item_index_``, an :class:`~embedopt.nn.ItemIndex` over the
            item vectors the model scores with (``fit`` and ``partial_fit``
            drop it: an index of old vectors would serve a new model).
        """
        check_is_fitted(self, self._fitted_attr)
        vectors = self._item_vectors(None).detach().float().cpu()
        self.item_index_ = ItemIndex(**params).fit(vectors)
        return self

    def _approximate_index(self, approximate, items, filter_items, owner):
        """The index ``approximate=True`` searches (None when False)."""
        if not approximate:
            return None
        index = getattr(self, "item_index_", None)
        if index is None:
            raise NotFittedError(
                f"{owner}(approximate=True) searches the item index: call "
                "build_index() first (after every fit or partial_fit)."
            )
        if items is not None or filter_items is not None:
            raise InvalidParameterError(
                f"{owner}(approximate=True) searches the whole catalogue; give "
                "items / filter_items to the exact search (approximate=False)."
            )
        return index

    def _recommend_codes(self, u, k, exclude_seen, candidates, index=None):
        """``recommend`` on user codes (-1: unknown), returning ``k`` columns of
        item codes (``k`` at most the candidates before any filter); through
        ``index`` (an :class:`ItemIndex`) when given."""
        n = self.shape_[1] if candidates is None else candidates.size
        exclude = self._seen_pairs()[np.maximum(u, 0)] if exclude_seen else None

        def search(codes, sub):
            if n == 0:  # a filter removed every candidate
                return np.empty((codes.size, 0), np.int64), np.empty((codes.size, 0))
            queries = self._user_vectors(codes)
            if index is not None:
                q = queries.detach().float().cpu()
                return index.search(q, min(k, n), exclude=sub)
            return self._top_k(queries, min(k, n), sub, candidates)

        def fallback(kk):
            if n == 0:
                return np.empty(0, np.int64), np.empty(0)
            return self._fallback_items(min(kk, n), candidates)

        return self._rank(u, int(k), exclude, search, fallback)

    def similar_items(
        self, items: ArrayLike, k: int = 10
    ) -> tuple[np.ndarray, np.ndarray]:
        """The k items most similar to each item.

        Similar by the model's item vectors (see the model's docstring:
        the two towers rank by inner product of item embeddings, through
        the model's search; :class:`~embedopt.completion.MatrixCompletion`
        by cosine).

        Parameters
        ----------
        items : array-like of int (or of the ids of the fit)
        k : int
            Capped at the number of items (a row then ends in a pad: the
            item itself is never returned).

        Returns
        -------
        ids : numpy.ndarray of int64 (or of the item ids), shape (len(items), k)
            The item itself is excluded; -1 (``""``) pads.
        scores : numpy.ndarray of float64, shape (len(items), k)
        """
        return self._similar(items, k, 1, "similar_items")

    def similar_users(
        self, users: ArrayLike, k: int = 10
    ) -> tuple[np.ndarray, np.ndarray]:
        """The k users most similar to each user.

        Similar by the model's user (query) vectors, exactly: inner products
        for the two towers, cosine for
        :class:`~embedopt.completion.MatrixCompletion`.

        Parameters
        ----------
        users : array-like of int (or of the ids of the fit)
        k : int
            Capped at the number of users (a row then ends in a pad: the
            user itself is never returned).

        Returns
        -------
        ids : numpy.ndarray of int64 (or of the user ids), shape (len(users), k)
            The user itself is excluded; -1 (``""``) pads.
        scores : numpy.ndarray of float64, shape (len(users), k)
        """
        return self._similar(users, k, 0, "similar_users")

    def _similar(self, given, k, side: int, method: str):
        """``similar_items`` (side 1) / ``similar_users`` (side 0)."""
        check_is_fitted(self, self._fitted_attr)
        _check_k(k, f"{type(self).__name__}.{method}")
        name = ("users", "items")[side]
        codes = self._ids(given, side, name)
        n = self.shape_[side]
        k = min(int(k), n)
        exclude = _self_pairs(np.maximum(codes, 0), n)
        cosine = self._similarity == "cosine"

        def queries(c):
            v = self._neighbour_vectors(side, c)
            return torch.nn.functional.normalize(v, dim=1) if cosine else v

        if side == 1 and not cosine:  # through the model's item search (index)

            def search(c, sub):
                return self._top_k(queries(c), k, sub, None)
        else:
            keys = queries(None)

            def search(c, sub):
                return top_k_inner_products(queries(c), keys, k, exclude=sub)

        ids, scores = self._rank(
            codes, k, exclude, search, lambda kk: self._popular(kk, None, side)
        )
        return decode_ids(ids, getattr(self, f"{name[:-1]}_ids_", None)), scores

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
        ids, _ = self._recommend_codes(
            u, min(int(k), self.shape_[1]), exclude_seen, None
        )
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

"""Synthetic comparisons for ordinal embedding (Ma et al., Sec. 5.1 and 5.4)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._core import (
    DataValidationError,
    Interval,
    InvalidParameterError,
    RandomStateLike,
    check_memory,
    check_param,
    resolve_random_state,
)
from .comparisons import Comparisons

__all__ = [
    "PlantedEmbedding",
    "flip_comparisons",
    "make_all_triplets",
    "make_class_triplets",
    "make_planted_embedding",
    "make_random_triplets",
]


def _check_inputs(points, distances) -> tuple[np.ndarray, bool]:
    """The points (n, d) or the distance matrix (n, n), and which one it is."""
    if (points is None) == (distances is None):
        raise InvalidParameterError(
            "Give exactly one of 'points' (an (n, d) array) and 'distances' (an "
            "(n, n) matrix)."
        )
    if points is not None:
        P = np.asarray(points, dtype=np.float64)
        if P.ndim != 2 or P.shape[0] < 3:
            raise DataValidationError(
                f"points must be an (n, d) array with n >= 3; got shape {P.shape}."
            )
        if not np.isfinite(P).all():
            raise DataValidationError("points contain NaN or infinite values.")
        return P, True
    D = np.asarray(distances, dtype=np.float64)
    if D.ndim != 2 or D.shape[0] != D.shape[1] or D.shape[0] < 3:
        raise DataValidationError(
            f"distances must be a square (n, n) matrix with n >= 3; got shape "
            f"{D.shape}."
        )
    if not np.isfinite(D).all():
        raise DataValidationError("distances contain NaN or infinite values.")
    return D, False


def _pair_distances(data, is_points, a, b, chunk=1 << 20) -> np.ndarray:
    # From points, per pair in chunks: an n x n matrix is never formed, so
    # 10^5 objects and 10^7 triplets fit in memory.
    if not is_points:
        return data[a, b]
    out = np.empty(a.shape[0])
    for s in range(0, a.shape[0], chunk):
        diff = data[a[s : s + chunk]] - data[b[s : s + chunk]]
        out[s : s + chunk] = np.einsum("ij,ij->i", diff, diff)
    return out


def _orient_by(data, is_points, T: np.ndarray) -> np.ndarray:
    """Swap j and k where d(i, k) < d(i, j); drop exact ties (no answer exists)."""
    dij = _pair_distances(data, is_points, T[:, 0], T[:, 1])
    dik = _pair_distances(data, is_points, T[:, 0], T[:, 2])
    keep = dij != dik
    T, swap = T[keep], (dij > dik)[keep]
    T[swap, 1], T[swap, 2] = T[swap, 2], T[swap, 1].copy()
    return T


def _distinct_triples(n: int, size: int, rng: np.random.Generator) -> np.ndarray:
    # Rejection of repeated indices keeps the triples uniform over ordered
    # triples of distinct objects; the acceptance rate (n-1)(n-2)/n^2 is >= 2/9.
    out = np.empty((0, 3), dtype=np.int64)
    while out.shape[0] < size:
        need = size - out.shape[0]
        T = rng.integers(0, n, size=(int(need * 1.3) + 16, 3))
        ok = (T[:, 0] != T[:, 1]) & (T[:, 0] != T[:, 2]) & (T[:, 1] != T[:, 2])
        out = np.concatenate([out, T[ok][:need]])
    return out


def make_random_triplets(
    points: ArrayLike | None = None,
    n_triplets: int = 10_000,
    *,
    distances: ArrayLike | None = None,
    flip_rate: float = 0.0,
    random_state: RandomStateLike = None,
) -> Comparisons:
    """Random triplets answered by the distances between known points.

    Triplets ``(i, j, k)`` of distinct objects are drawn uniformly with
    replacement and oriented so that ``d(i, j) < d(i, k)`` (Sec. 5.1); the
    rare exact ties are dropped, so slightly fewer triplets can come back when
    ``distances`` has ties.

    Parameters
    ----------
    points : array-like, shape (n, d), optional
        Object coordinates (Euclidean distances).
    n_triplets : int
        Number of triplets drawn.
    distances : array-like, shape (n, n), optional
        A dissimilarity matrix instead of points.
    flip_rate : float in [0, 1)
        Fraction of triplets answered wrongly (see :func:`flip_comparisons`).
    random_state : None, int or numpy Generator

    Returns
    -------
    Comparisons
    """
    check_param(
        "make_random_triplets", "n_triplets", n_triplets, [Interval(int, 1, None)]
    )
    data, is_points = _check_inputs(points, distances)
    n = data.shape[0]
    rng = resolve_random_state(random_state, "make_random_triplets").numpy
    T = _orient_by(data, is_points, _distinct_triples(n, int(n_triplets), rng))
    comps = Comparisons(T, n_objects=n, validate=False)
    return flip_comparisons(comps, flip_rate, random_state=rng) if flip_rate else comps


def make_all_triplets(
    points: ArrayLike | None = None,
    *,
    distances: ArrayLike | None = None,
    exclude: Comparisons | ArrayLike | None = None,
) -> Comparisons:
    """Every triplet ``(i, j, k)`` with ``j < k`` (both orders are one question).

    There are ``n (n - 1) (n - 2) / 2`` of them before exact ties are dropped;
    each is oriented so that ``d(i, j) < d(i, k)``.

    Parameters
    ----------
    points : array-like, shape (n, d), optional
    distances : array-like, shape (n, n), optional
    exclude : Comparisons or array-like of int, shape (m, 3), optional
        Triplets whose questions are left out, in either orientation: the
        held-out set of a sample drawn from the same objects.

    Returns
    -------
    Comparisons

    Raises
    ------
    DataValidationError
        If ``exclude`` is not triplets of indices below n.
    """
    data, is_points = _check_inputs(points, distances)
    n = data.shape[0]
    j, k = np.triu_indices(n, 1)
    i = np.repeat(np.arange(n), j.size)
    j, k = np.tile(j, n), np.tile(k, n)
    keep = (i != j) & (i != k)
    T = np.stack([i[keep], j[keep], k[keep]], axis=1).astype(np.int64)
    if exclude is not None:
        T = T[~np.isin(_question_keys(T, n), _excluded_keys(exclude, n))]
    return Comparisons(_orient_by(data, is_points, T), n_objects=n, validate=False)


def _excluded_keys(exclude, n: int) -> np.ndarray:
    """The question keys of ``exclude``, checked to be triplets of n objects."""
    T = np.asarray(getattr(exclude, "indices", exclude))
    if T.ndim != 2 or T.shape[1] != 3 or not np.issubdtype(T.dtype, np.integer):
        raise DataValidationError(
            "exclude must be triplets: a Comparisons or an (m, 3) integer array; "
            f"got shape {T.shape} and dtype {T.dtype}."
        )
    if T.size and (T.min() < 0 or T.max() >= n):
        raise DataValidationError(
            f"exclude holds object indices outside [0, {n}) (min {int(T.min())}, "
            f"max {int(T.max())}); it must come from the same {n} objects."
        )
    return _question_keys(T, n)


def flip_comparisons(
    comparisons: Comparisons, flip_rate: float, *, random_state: RandomStateLike = None
) -> Comparisons:
    """Simulate answering errors: reverse a random fraction of the comparisons.

    Exactly ``round(flip_rate * m)`` comparisons, chosen without replacement,
    are reversed (j and k exchanged in a triplet, the two pairs in a
    quadruplet), as in the retrieval experiment of Sec. 5.4.

    Parameters
    ----------
    comparisons : Comparisons
    flip_rate : float in [0, 1)
        Fraction of the comparisons to reverse.
    random_state : None, int or numpy Generator

    Returns
    -------
    Comparisons
        A new object; the input is not modified.
    """
    if isinstance(flip_rate, bool) or not (0.0 <= float(flip_rate) < 1.0):
        raise InvalidParameterError(
            "The 'flip_rate' parameter of flip_comparisons must be a float in [0, 1)."
            f" Got {flip_rate!r}."
        )
    rng = resolve_random_state(random_state, "flip_comparisons").numpy
    idx = comparisons.indices.copy()
    n_flip = round(float(flip_rate) * idx.shape[0])
    sel = rng.choice(idx.shape[0], size=n_flip, replace=False)
    if idx.shape[1] == 3:
        idx[sel, 1], idx[sel, 2] = idx[sel, 2], idx[sel, 1].copy()
    else:
        idx[sel] = idx[sel][:, [2, 3, 0, 1]]
    return Comparisons(idx, n_objects=comparisons.n_objects, validate=False)


def make_class_triplets(
    labels: ArrayLike,
    n_triplets: int,
    *,
    flip_rate: float = 0.0,
    random_state: RandomStateLike = None,
) -> Comparisons:
    """Triplets from class labels: same class is closer than another class.

    As in Sec. 5.4 (after Song et al.): draw an object i, another object j of
    the same class, and an object k of a different class; the triplet
    ``(i, j, k)`` states that i is closer to j than to k. ``flip_rate``
    reverses that fraction to simulate human error (5%, 10%, 15% in the paper).

    Parameters
    ----------
    labels : array-like of int, shape (n,)
        Class of each object; at least two classes, and every object's class
        needs a second member for it to be drawn as i.
    n_triplets : int
        Triplets to draw, each independently (a triplet may repeat).
    flip_rate : float in [0, 1)
    random_state : None, int or numpy Generator

    Returns
    -------
    Comparisons
    """
    y = np.asarray(labels)
    if y.ndim != 1 or y.size < 3:
        raise DataValidationError(
            f"labels must be 1-D with at least 3 objects; got shape {y.shape}."
        )
    check_param(
        "make_class_triplets", "n_triplets", n_triplets, [Interval(int, 1, None)]
    )
    classes, codes, counts = np.unique(y, return_inverse=True, return_counts=True)
    if classes.size < 2:
        raise DataValidationError("make_class_triplets needs at least two classes.")
    rng = resolve_random_state(random_state, "make_class_triplets").numpy
    order = np.argsort(codes, kind="stable")
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    eligible = np.flatnonzero(counts[codes] >= 2)
    if eligible.size == 0:
        raise DataValidationError(
            "No class has two members: no object can be paired with one of its class."
        )
    n = y.size
    i = rng.choice(eligible, size=int(n_triplets))
    ci = codes[i]
    # j: uniform among the other members of i's class (rank of i skipped).
    rank_i = np.empty(n, dtype=np.int64)
    rank_i[order] = np.arange(n) - np.repeat(start, counts)
    r = rng.integers(0, counts[ci] - 1)
    r = r + (r >= rank_i[i])
    j = order[start[ci] + r]
    # k: uniform among the objects of the other classes.
    r = rng.integers(0, n - counts[ci])
    r = r + (r >= start[ci]) * counts[ci]
    k = order[r]
    comps = Comparisons(
        np.stack([i, j, k], axis=1).astype(np.int64), n_objects=n, validate=False
    )
    return flip_comparisons(comps, flip_rate, random_state=rng) if flip_rate else comps


@dataclass
class PlantedEmbedding:
    """Points with training and held-out comparisons answered by their distances.

    Attributes
    ----------
    points : numpy.ndarray, shape (n_objects, n_dims)
        The planted embedding.
    train : Comparisons
    test : Comparisons
    """

    points: np.ndarray
    train: Comparisons
    test: Comparisons


def make_planted_embedding(
    n_objects: int = 100,
    n_dims: int = 10,
    *,
    n_train: int = 10_000,
    n_test: int = 10_000,
    variance: float = 1.0 / 20.0,
    flip_rate: float = 0.0,
    random_state: RandomStateLike = None,
) -> PlantedEmbedding:
    """The synthetic problem of Ma et al., Sec. 5.1 (Table I, Figure 2).

    ``n_objects`` points drawn i.i.d. from ``N(0, variance I)`` in
    ``n_dims`` dimensions; ``n_train`` training and ``n_test`` held-out random
    triplets answered by their Euclidean distances (paper: 100 points in 10-d,
    variance 1/20, 10,000 + 10,000 triplets, no noise).

    Parameters
    ----------
    n_objects, n_dims : int
    n_train, n_test : int
    variance : float
    flip_rate : float in [0, 1)
        Fraction of wrong answers in the training triplets (held-out triplets
        stay correct).
    random_state : None, int or numpy Generator

    Returns
    -------
    PlantedEmbedding
        The held-out triplets ask questions ``(i, {j, k})`` that no training
        triplet asks, and none twice (the training triplets are drawn with
        replacement, as in :func:`make_random_triplets`).
    """
    if n_objects < 3 or n_dims < 1:
        raise InvalidParameterError(
            f"make_planted_embedding needs n_objects >= 3 and n_dims >= 1; got "
            f"{n_objects} and {n_dims}."
        )
    n = int(n_objects)
    # the points and the triplets, in float64 and int64: refused before any draw
    check_memory(
        "make_planted_embedding",
        8 * (n * int(n_dims) + 3 * (int(n_train) + int(n_test))),
        torch.device("cpu"),
        f"{n} points in {n_dims} dimensions and {n_train} + {n_test} triplets",
        "Lower n_objects, n_dims, n_train or n_test.",
    )
    rng = resolve_random_state(random_state, "make_planted_embedding").numpy
    P = rng.normal(0.0, np.sqrt(variance), size=(n, int(n_dims)))
    train = make_random_triplets(P, n_train, flip_rate=flip_rate, random_state=rng)
    # Held-out triplets ask other questions than the training ones (the paper
    # splits one set of triplets in two): redraw those whose (i, {j, k}) is
    # already a training question.
    seen = np.unique(_question_keys(train.indices, n))
    left = n * (n - 1) * (n - 2) // 2 - seen.size  # questions (i, {j, k}) left
    if n_test > left:
        raise InvalidParameterError(
            f"make_planted_embedding cannot draw {n_test} held-out triplets that no "
            f"training triplet asks: {n_objects} objects leave only {left} other "
            "questions. Lower n_train / n_test or raise n_objects."
        )
    parts, have = [], 0
    while have < n_test:
        T = make_random_triplets(P, n_test - have + 16, random_state=rng).indices
        keys = _question_keys(T, n)
        _, first = np.unique(keys, return_index=True)
        fresh = np.zeros(len(T), dtype=bool)
        fresh[first] = True
        fresh &= ~np.isin(keys, seen)
        T = T[np.flatnonzero(fresh)[: n_test - have]]
        seen = np.union1d(seen, _question_keys(T, n))
        parts.append(T)
        have += len(T)
    test = Comparisons(np.concatenate(parts), n_objects=n, validate=False)
    return PlantedEmbedding(P, train, test)


def _question_keys(T: np.ndarray, n: int) -> np.ndarray:
    """One integer per triplet question ``(i, {j, k})``, whatever the answer."""
    T = np.asarray(T, dtype=np.int64)
    lo = np.minimum(T[:, 1], T[:, 2])
    hi = np.maximum(T[:, 1], T[:, 2])
    return (T[:, 0] * n + lo) * n + hi

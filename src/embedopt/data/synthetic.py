"""Synthetic problems mirroring the papers' experiments."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._core import (
    InvalidParameterError,
    RandomStateLike,
    check_memory,
    resolve_random_state,
)
from .entries import ObservedEntries

__all__ = [
    "RATINGS_SHAPES",
    "LowRankProblem",
    "LowRankTensorProblem",
    "SyntheticRatings",
    "make_low_rank_matrix",
    "make_low_rank_tensor",
    "make_ratings",
    "sample_positions",
]


@dataclass
class LowRankProblem:
    """A planted low-rank matrix and noisy observations of some of its entries.

    Attributes
    ----------
    observed : ObservedEntries
        Noisy observed entries ``(U V^T)_ij + noise``.
    U : numpy.ndarray, shape (m, rank)
    V : numpy.ndarray, shape (n, rank)
        Ground truth ``U @ V.T`` (never formed by the generator).
    noise_std : float
    """

    observed: ObservedEntries
    U: np.ndarray
    V: np.ndarray
    noise_std: float

    def truth_at(self, rows: ArrayLike, cols: ArrayLike) -> np.ndarray:
        """Noise-free values ``(U V^T)_ij`` at the given positions."""
        return _rowwise_dot(self.U, self.V, np.asarray(rows), np.asarray(cols))


def sample_positions(
    shape: tuple[int, int], n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``n`` distinct positions of an m x n matrix uniformly at random.

    Memory is O(n) even when m * n is huge (rejection of duplicates).

    Parameters
    ----------
    shape : tuple of int
    n : int
    rng : numpy.random.Generator

    Returns
    -------
    rows, cols : numpy.ndarray of int64
    """
    m, k = shape
    total = m * k
    if n > total:
        raise InvalidParameterError(
            f"Cannot draw {n} distinct positions from a {m} x {k} matrix."
        )
    if n > total // 4:
        lin = rng.choice(total, size=n, replace=False)
    else:
        lin = np.unique(rng.integers(0, total, size=int(n * 1.05) + 16))
        while lin.size < n:
            extra = rng.integers(0, total, size=n - lin.size + 16)
            lin = np.unique(np.concatenate([lin, extra]))
        lin = rng.permutation(lin)[:n]
    lin = np.sort(lin)
    return lin // k, lin % k


def _rowwise_dot(U, V, rows, cols, chunk: int = 1 << 20) -> np.ndarray:
    out = np.empty(rows.shape[0], dtype=np.result_type(U, V))
    for s in range(0, rows.shape[0], chunk):
        e = s + chunk
        out[s:e] = np.einsum("ij,ij->i", U[rows[s:e]], V[cols[s:e]])
    return out


def make_low_rank_matrix(
    n_rows: int = 1000,
    n_cols: int | None = None,
    *,
    rank: int = 5,
    noise_std: float = 0.05,
    n_observed: int | None = None,
    random_state: RandomStateLike = None,
) -> LowRankProblem:
    """The synthetic matrix-completion problem of Yao & Kwok, Sec. 5.1.

    The ground truth is ``U V^T`` with U (m x rank) and V (n x rank) i.i.d.
    N(0, 1); ``n_observed`` entries drawn uniformly without replacement are
    observed with i.i.d. N(0, noise_std^2) noise.

    Parameters
    ----------
    n_rows : int
        m.
    n_cols : int, optional
        n (default m, a square matrix as in the paper).
    rank : int
        Rank of the ground truth (paper: 5).
    noise_std : float
        Standard deviation of the noise (paper: 0.05, i.e. the authors' code
        ``0.05 * randn``).
    n_observed : int, optional
        Number of observed entries; default ``15 m log m`` (the paper's choice;
        the paper then uses half for training and half for validation).
    random_state : None, int or numpy Generator

    Returns
    -------
    LowRankProblem
    """
    m = int(n_rows)
    n = m if n_cols is None else int(n_cols)
    if m < 1 or n < 1 or rank < 1:
        raise InvalidParameterError("n_rows, n_cols and rank must be >= 1.")
    if n_observed is None:
        n_observed = round(15 * m * math.log(max(m, 2)))  # exact for huge m too
    n_observed = int(min(n_observed, m * n))
    # the factors and the observed entries (positions and values), refused
    # before any draw when they cannot fit
    check_memory(
        "make_low_rank_matrix",
        8 * ((m + n) * int(rank) + 3 * n_observed),
        torch.device("cpu"),
        f"the rank-{rank} factors of a {m} x {n} matrix and {n_observed} entries",
        "Lower n_rows, n_cols, rank or n_observed.",
    )
    rng = resolve_random_state(random_state, "make_low_rank_matrix").numpy
    U = rng.standard_normal((m, rank))
    V = rng.standard_normal((n, rank))
    rows, cols = sample_positions((m, n), n_observed, rng)
    vals = _rowwise_dot(U, V, rows, cols) + noise_std * rng.standard_normal(n_observed)
    obs = ObservedEntries((rows, cols), vals, (m, n), validate=False)
    return LowRankProblem(obs, U, V, float(noise_std))


@dataclass
class LowRankTensorProblem:
    """A planted Tucker-structured tensor and noisy observations of some entries.

    Attributes
    ----------
    observed : ObservedEntries
        Noisy observed entries.
    core : numpy.ndarray
        Core tensor C.
    factors : list of numpy.ndarray
        Mode factors A_d; the truth is ``C x_1 A_1 x_2 A_2 ... x_D A_D``.
    noise_std : float
    """

    observed: ObservedEntries
    core: np.ndarray
    factors: list
    noise_std: float

    def truth_at(self, indices: ArrayLike) -> np.ndarray:
        """Noise-free values at positions given as an (n, D) array."""
        idx = np.asarray(indices)
        out = np.empty(idx.shape[0])
        letters = "abcdefgh"[: self.core.ndim]
        spec = f"{letters},{','.join('z' + c for c in letters)}->z"
        for s in range(0, idx.shape[0], 1 << 18):
            rows = [A[idx[s : s + (1 << 18), d]] for d, A in enumerate(self.factors)]
            out[s : s + (1 << 18)] = np.einsum(spec, self.core, *rows)
        return out

    def dense(self) -> np.ndarray:
        """The full noise-free tensor (small problems only)."""
        T = self.core
        for d, A in enumerate(self.factors):
            T = np.moveaxis(np.tensordot(A, T, axes=(1, d)), 0, d)
        return T


def make_low_rank_tensor(
    m: int = 500,
    *,
    last_dim: int = 3,
    rank: int = 3,
    noise_std: float = 0.05,
    n_observed: int | None = None,
    random_state: RandomStateLike = None,
) -> LowRankTensorProblem:
    """The synthetic tensor-completion problem of Yao & Kwok, Sec. 5.6.

    An m x m x ``last_dim`` tensor ``C x_1 A_1 x_2 A_2 x_3 A_3`` with core C
    (rank^3) and factors A_1, A_2 (m x rank), A_3 (last_dim x rank), all i.i.d.
    N(0, 1): low rank in the first two modes, not in the third. Observed
    entries (uniform, without replacement) get N(0, noise_std^2) noise.

    Parameters
    ----------
    m : int
    last_dim : int
        Size of the third mode (paper: 3).
    rank : int
        Multilinear rank of the first two modes (paper: 3).
    noise_std : float
        Paper: 0.05 (as in the matrix case, a standard deviation).
    n_observed : int, optional
        Default ``45 m log m`` (the paper then uses half for training).
    random_state : None, int or numpy Generator

    Returns
    -------
    LowRankTensorProblem
    """
    if m < 1 or last_dim < 1 or rank < 1:
        raise InvalidParameterError("m, last_dim and rank must be >= 1.")
    rng = resolve_random_state(random_state, "make_low_rank_tensor").numpy
    shape = (m, m, last_dim)
    total = m * m * last_dim
    if n_observed is None:
        n_observed = round(45 * m * np.log(max(m, 2)))
    n_observed = int(min(n_observed, total))
    core = rng.standard_normal((rank, rank, rank))
    factors = [
        rng.standard_normal((m, rank)),
        rng.standard_normal((m, rank)),
        rng.standard_normal((last_dim, rank)),
    ]
    r, c = sample_positions((m, m * last_dim), n_observed, rng)
    idx = np.stack([r, c // last_dim, c % last_dim], axis=1)
    prob = LowRankTensorProblem(None, core, factors, float(noise_std))
    vals = prob.truth_at(idx) + noise_std * rng.standard_normal(n_observed)
    prob.observed = ObservedEntries(idx, vals, shape, validate=False)
    return prob


#: ``(users, items, ratings)`` of real rating catalogues, the shapes of
#: :func:`make_ratings`' presets: the Netflix Prize training set and MovieLens-10M.
RATINGS_SHAPES: dict[str, tuple[int, int, int]] = {
    "netflix": (480_189, 17_770, 100_480_507),
    "ml-10m": (69_878, 10_677, 10_000_054),
}


@dataclass
class SyntheticRatings:
    """Ratings-like observed entries with a planted biased low-rank signal.

    The arrays are the compact ones a large catalogue is stored in (int32
    positions, float32 values), sorted by user and, within a user, by item.

    Attributes
    ----------
    rows, cols : numpy.ndarray of int32, shape (nnz,)
        User and item of each rating.
    values : numpy.ndarray of float32, shape (nnz,)
        The ratings (on ``scale``; whole stars with ``integer=True``).
    shape : tuple of int
        ``(n_users, n_items)``.
    mean : float
    user_bias, item_bias : numpy.ndarray of float32
    user_factors, item_factors : numpy.ndarray of float32, shape (n, rank)
        The signal is ``mean + user_bias[u] + item_bias[i] + user_factors[u]
        . item_factors[i]``; a rating is the signal plus noise, clipped to
        ``scale`` (and rounded).
    noise_std : float
    scale : tuple of float
    """

    rows: np.ndarray
    cols: np.ndarray
    values: np.ndarray
    shape: tuple[int, int]
    mean: float
    user_bias: np.ndarray
    item_bias: np.ndarray
    user_factors: np.ndarray
    item_factors: np.ndarray
    noise_std: float
    scale: tuple[float, float]

    @property
    def nnz(self) -> int:
        """Number of ratings."""
        return int(self.values.shape[0])

    def truth_at(self, rows: ArrayLike, cols: ArrayLike) -> np.ndarray:
        """The noise-free signal (not clipped) at the given positions.

        Parameters
        ----------
        rows, cols : array-like of int

        Returns
        -------
        numpy.ndarray of float32
        """
        rows, cols = np.asarray(rows), np.asarray(cols)
        out = _rowwise_dot(self.user_factors, self.item_factors, rows, cols)
        return out + (self.mean + self.user_bias[rows] + self.item_bias[cols])

    def entries(self, selection: ArrayLike | None = None) -> ObservedEntries:
        """The ratings (or those ``selection`` picks) as :class:`ObservedEntries`.

        Parameters
        ----------
        selection : array-like of bool or int, optional

        Returns
        -------
        ObservedEntries
            int64 positions (16 bytes per entry) and the float32 values.
        """
        r, c, v = self.rows, self.cols, self.values
        if selection is not None:
            sel = np.asarray(selection)
            r, c, v = r[sel], c[sel], v[sel]
        return ObservedEntries((r, c), v, self.shape, validate=False)


def _power_law_weights(n: int, exponent: float, head: float, rng) -> np.ndarray:
    """``(1 + k / k0)^-exponent`` for the k-th ranked index (``k0 = head n``),
    the ranks shuffled over the indices, normalized to sum 1."""
    k0 = max(1.0, head * n)
    w = (1.0 + np.arange(n) / k0) ** -float(exponent)
    return w[rng.permutation(n)] / w.sum()


def _user_degrees(n_ratings: int, n_items: int, p: np.ndarray, rng) -> np.ndarray:
    """Degrees summing to ``n_ratings``, >= 1 when possible, <= ``n_items``."""
    m = p.shape[0]
    base = 1 if n_ratings >= m else 0
    d = base + rng.multinomial(n_ratings - base * m, p)
    while True:  # spill what exceeds the catalogue onto the other users
        excess = int(np.maximum(d - n_items, 0).sum())
        if not excess:
            return d.astype(np.int64)
        d = np.minimum(d, n_items)
        room = np.where(d < n_items, p, 0.0)
        d += rng.multinomial(excess, room / room.sum())


def _alias_table(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Walker's alias table of the distribution ``p``: O(1) per draw."""
    n = p.shape[0]
    q = p * (n / p.sum())
    prob, alias = np.ones(n), np.arange(n)
    small, large = list(np.flatnonzero(q < 1)), list(np.flatnonzero(q >= 1))
    while small and large:
        s, g = small.pop(), large[-1]
        prob[s], alias[s] = q[s], g
        q[g] -= 1 - q[s]
        if q[g] < 1:
            small.append(large.pop())
    return prob, alias


def _draw(count: int, table, rng) -> np.ndarray:
    """``count`` i.i.d. draws from an alias table."""
    prob, alias = table
    j = rng.integers(0, prob.shape[0], count)
    return np.where(rng.random(count) < prob[j], j, alias[j])


def _sorted_unique(x: np.ndarray) -> np.ndarray:
    """``np.unique`` by sorting (NumPy 2's hashing unique is ~50x slower here)."""
    x = np.sort(x)
    keep = np.ones(x.shape[0], dtype=bool)
    np.not_equal(x[1:], x[:-1], out=keep[1:])
    return x[keep]


def _sample_light(d: np.ndarray, table, rng) -> np.ndarray:
    """Distinct items for users of degree ``d``, drawn by popularity.

    Rounds of i.i.d. draws, each oversampling twice as much as the last,
    until every user has ``d`` distinct items; a user's surplus is dropped at
    random. Returns the sorted keys ``user * n_items + item`` (local users).
    """
    n = table[0].shape[0]
    keys, factor = np.empty(0, dtype=np.int64), 1.25
    done = [keys]
    have = np.zeros_like(d)
    todo = np.flatnonzero(d > 0)
    while todo.size:
        need = d[todo] - have[todo]
        users = np.repeat(todo, (need * factor).astype(np.int64) + 2)
        keys = _sorted_unique(
            np.concatenate([keys, users * n + _draw(users.shape[0], table, rng)])
        )
        have = np.bincount(keys // n, minlength=d.shape[0])
        full = have[todo] >= d[todo]
        finished = np.zeros(d.shape[0], dtype=bool)
        finished[todo[full]] = True
        moved = finished[keys // n]
        done.append(keys[moved])
        keys = keys[~moved]
        todo = todo[~full]
        factor *= 2
    keys = np.sort(np.concatenate(done))
    user = keys // n
    have = np.bincount(user, minlength=d.shape[0])
    if (have > d).any():  # keep a random d of each user's distinct items
        order = np.lexsort((rng.random(keys.shape[0]), user))
        start = np.concatenate([[0], np.cumsum(have)[:-1]])
        rank = np.empty_like(order)
        rank[order] = np.arange(order.shape[0]) - np.repeat(start, have)
        keys = keys[rank < d[user]]
    return keys


def _sample_heavy(d: int, p: np.ndarray, rng) -> np.ndarray:
    """``d`` distinct items by popularity (Efraimidis-Spirakis keys), sorted."""
    key = np.log(rng.random(p.shape[0])) / np.maximum(p, 1e-300)
    return np.sort(np.argpartition(-key, d - 1)[:d])


def _fill_ratings(
    out: SyntheticRatings, deg, p_item, chunk: int, integer: bool, rng
) -> None:
    """Draw the positions and values of every user, ``chunk`` ratings at a time."""
    n = out.shape[1]
    table = _alias_table(p_item)
    offsets = np.concatenate([[0], np.cumsum(deg)])
    ends = np.searchsorted(offsets, np.arange(chunk, offsets[-1], chunk))
    bounds = np.unique(np.concatenate([[0], ends, [deg.shape[0]]]))
    lo_v, hi_v = out.scale
    for u0, u1 in itertools.pairwise(bounds):
        d = deg[u0:u1]
        heavy = d > n // 8
        keys = _sample_light(np.where(heavy, 0, d), table, rng)
        cols = [keys % n]
        rows = [keys // n]
        for u in np.flatnonzero(heavy):
            cols.append(_sample_heavy(int(d[u]), p_item, rng))
            rows.append(np.full(int(d[u]), u, dtype=np.int64))
        r, c = np.concatenate(rows), np.concatenate(cols)
        order = np.lexsort((c, r))
        r, c = r[order] + u0, c[order]
        s, e = offsets[u0], offsets[u1]
        out.rows[s:e], out.cols[s:e] = r, c
        v = out.truth_at(r, c) + out.noise_std * rng.standard_normal(r.shape[0])
        np.clip(v, lo_v, hi_v, out=v)
        out.values[s:e] = np.rint(v) if integer else v


def _ratings_shape(preset, n_users, n_items, n_ratings) -> tuple[int, int, int]:
    if preset is not None and preset not in RATINGS_SHAPES:
        raise InvalidParameterError(
            f"The 'preset' parameter of make_ratings must be one of "
            f"{sorted(RATINGS_SHAPES)} or None. Got {preset!r}."
        )
    m0, n0, k0 = RATINGS_SHAPES[preset] if preset is not None else (None,) * 3
    m = n_users if n_users is not None else m0
    n = n_items if n_items is not None else n0
    k = n_ratings if n_ratings is not None else k0
    if m is None or n is None or k is None:
        raise InvalidParameterError(
            "make_ratings needs n_users, n_items and n_ratings, or a preset "
            f"({', '.join(sorted(RATINGS_SHAPES))}) for those not given."
        )
    m, n, k = int(m), int(n), int(k)
    if min(m, n, k) < 1 or max(m, n) >= 2**31 or k > m * n:
        raise InvalidParameterError(
            f"make_ratings: {k} ratings cannot be placed in a {m} x {n} matrix "
            "(sizes must be >= 1 and < 2**31, ratings at most users x items)."
        )
    return m, n, k


def make_ratings(
    preset: str | None = "ml-10m",
    *,
    n_users: int | None = None,
    n_items: int | None = None,
    n_ratings: int | None = None,
    rank: int = 10,
    user_exponent: float = 0.8,
    item_exponent: float = 2.0,
    noise_std: float = 0.5,
    integer: bool = True,
    chunk_size: int = 1 << 20,
    random_state: RandomStateLike = None,
) -> SyntheticRatings:
    """Ratings with a real catalogue's shape and skew, at any size.

    Users and items get power-law activity and popularity: the k-th most
    active user (popular item) has weight ``(1 + k / k0)^-exponent`` with
    ``k0 = n_users / 1000`` (``n_items / 30``), the ranks shuffled over the
    ids; the default exponents give the shape of Netflix's degrees (median
    user about half the mean, largest near the whole catalogue; median item
    about a tenth of the mean, largest about 30 times the mean). Each user's number of
    ratings is multinomial in the user weights (at least 1 when there are as
    many ratings as users, at most ``n_items``), and its items are drawn
    without replacement with probability proportional to popularity. A
    rating is ``mean + b_u + c_i + u_u . v_i + noise`` (biases N(0, 0.45^2)
    and N(0, 0.5^2), rank-``rank`` factors whose product has standard
    deviation 0.5, Gaussian noise), clipped to the 1-5 scale and rounded to
    whole stars: mean 3.6, as in Netflix's and MovieLens' ratings.

    The ratings are drawn ``chunk_size`` at a time into preallocated int32 /
    float32 arrays: 10^8 ratings take 1.2 GB, and the generator needs
    little more (a chunk's temporaries and the per-user / per-item state).

    Parameters
    ----------
    preset : {"netflix", "ml-10m"} or None
        Shape and number of ratings of a real catalogue
        (:data:`RATINGS_SHAPES`): Netflix's 480,189 users x 17,770 items,
        100,480,507 ratings; MovieLens-10M's 69,878 x 10,677, 10,000,054.
        ``n_users``, ``n_items``, ``n_ratings`` override its values
        (``make_ratings("netflix", n_ratings=5 * 10**7)``: Netflix's shape
        with the paper's 50 % training ratings). None: give all three.
    n_users, n_items, n_ratings : int, optional
    rank : int
        Rank of the interaction term of the signal.
    user_exponent, item_exponent : float
        Power-law exponents of user activity and item popularity (0: uniform).
    noise_std : float
        Standard deviation of the Gaussian noise before clipping.
    integer : bool
        Round the ratings to whole stars.
    chunk_size : int
        Ratings drawn per step (the generator's working memory).
    random_state : None, int or numpy Generator

    Returns
    -------
    SyntheticRatings
        Sorted by user, then item; ``.entries()`` gives
        :class:`ObservedEntries`.

    Raises
    ------
    InvalidParameterError
        For an unknown preset, missing or impossible sizes.
    DataValidationError
        When the output arrays cannot fit in memory.

    Examples
    --------
    >>> r = make_ratings("ml-10m", n_ratings=10_000, random_state=0)
    >>> r.shape, r.nnz, float(r.values.min()), float(r.values.max())
    ((69878, 10677), 10000, 1.0, 5.0)
    """
    m, n, k = _ratings_shape(preset, n_users, n_items, n_ratings)
    if rank < 1 or chunk_size < 1 or noise_std < 0:
        raise InvalidParameterError(
            "make_ratings: rank and chunk_size must be >= 1, noise_std >= 0."
        )
    check_memory(
        "make_ratings",
        12 * k + 4 * (m + n) * (int(rank) + 4),
        torch.device("cpu"),
        f"{k} ratings (int32 positions, float32 values) and the {m} x {n} signal",
        "Lower n_ratings.",
    )
    rng = resolve_random_state(random_state, "make_ratings").numpy
    sigma = (0.5 / math.sqrt(rank)) ** 0.5  # factor entries: u . v has std 0.5
    out = SyntheticRatings(
        rows=np.empty(k, dtype=np.int32),
        cols=np.empty(k, dtype=np.int32),
        values=np.empty(k, dtype=np.float32),
        shape=(m, n),
        mean=3.6,
        user_bias=(0.45 * rng.standard_normal(m)).astype(np.float32),
        item_bias=(0.5 * rng.standard_normal(n)).astype(np.float32),
        user_factors=(sigma * rng.standard_normal((m, rank))).astype(np.float32),
        item_factors=(sigma * rng.standard_normal((n, rank))).astype(np.float32),
        noise_std=float(noise_std),
        scale=(1.0, 5.0),
    )
    p_user = _power_law_weights(m, user_exponent, 1e-3, rng)
    p_item = _power_law_weights(n, item_exponent, 1 / 30, rng)
    deg = _user_degrees(k, n, p_user, rng)
    _fill_ratings(out, deg, p_item, int(chunk_size), integer, rng)
    return out

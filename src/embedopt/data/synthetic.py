"""Synthetic problems mirroring the papers' experiments."""

from __future__ import annotations

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
    "LowRankProblem",
    "LowRankTensorProblem",
    "make_low_rank_matrix",
    "make_low_rank_tensor",
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

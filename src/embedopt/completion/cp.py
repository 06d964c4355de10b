"""Masked CP completion on the observed entries only (sparse CP-ALS).

A rank-r CP model ``X_{i_1...i_D} = sum_k prod_d A_d[i_d, k]`` is fitted to
the observed entries by alternating least squares on

    f(A_1..A_D) = sum_{e in Omega} w_e (y_e - <A_1[i_1], ..., A_D[i_D]>)^2
                  + ridge sum_d ||A_d||_F^2,                                (1)

where ``<a_1, ..., a_D> = sum_k prod_d a_d[k]``. With every factor but A_d
fixed, (1) separates over the rows of A_d: row i minimizes
``sum_{e: i_d = i} w_e (y_e - a . k_e)^2 + ridge ||a||^2`` with ``k_e`` the
elementwise product of the other modes' factor rows at entry e, an r x r
ridge system (one Gram per row, solved in a batch). A sweep is
O(|Omega| r^2) and never forms a dense tensor; each block step is the exact
minimizer of its block, so f never increases.

The ridge is in units of the data: :func:`cp_als` divides the values by
their root mean square before fitting and multiplies the first factor back.
:class:`~embedopt.completion.TensorCompletion` scores CP models of a few
ranks and ridges beside its latent-norm solution (``postprocess="auto"``,
see :func:`cp_ranks`) and keeps the best on its validation entries.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import eigsh

from .._core import DataValidationError, InvalidParameterError

__all__ = [
    "CPResult",
    "cp_als",
    "cp_grid",
    "cp_init",
    "cp_objective",
    "cp_predict",
    "cp_ranks",
]

#: Ranks ``postprocess="auto"`` scores (capped by :func:`cp_ranks`).
CP_RANKS = (4, 8, 16, 32, 48)
#: Ridges of (1), on RMS-normalized values, that ``postprocess="auto"``
#: scores with each rank: 1 suits the 4-way image stacks of
#: ``benchmarks/completion/real_tensors.py``, 3 the 3-way image (a larger
#: ridge pulls 4-way factors to 0: a rank-1 term of size t costs about
#: ``D ridge t^(2/D)``, steeper at 0 the more modes).
CP_RIDGES = (1.0, 3.0)
#: Largest ``rank^2 * |Omega|`` scored (the work of a sweep per mode, about
#: 0.1 CPU s at 10^8 with one thread): keeps the CP scoring a fraction of a
#: large latent fit (``benchmarks/completion/real_tensors.py`` stays under it).
CP_MAX_WORK = 10**8
#: Sweeps of the CP fits that ``postprocess="auto"`` scores and refits.
CP_MAX_SWEEPS = 30
#: Stop when the objective (1) falls by less than this fraction in a sweep.
CP_TOL = 1e-4


@dataclass
class CPResult:
    """A fitted CP model.

    Attributes
    ----------
    factors : list of numpy.ndarray
        ``A_d`` of shape ``(I_d, rank)`` per mode (float64), on the scale of
        the values fitted.
    objectives : list of float
        Objective (1) (on the RMS-normalized values) after each sweep, the
        start first.
    n_sweeps : int
    ridge : float
        The ridge used, on the normalized scale.
    """

    factors: list
    objectives: list = field(default_factory=list)
    n_sweeps: int = 0
    ridge: float = 0.0


def cp_predict(factors: list, idx: np.ndarray) -> np.ndarray:
    """Values of the CP model at positions ``idx``.

    Parameters
    ----------
    factors : list of numpy.ndarray
        ``A_d`` of shape ``(I_d, rank)``.
    idx : numpy.ndarray of int, shape (n, D)

    Returns
    -------
    numpy.ndarray of float64, shape (n,)
    """
    out = np.zeros(idx.shape[0])
    step = 1 << 18
    for a in range(0, idx.shape[0], step):
        rows = np.ones((min(step, idx.shape[0] - a), factors[0].shape[1]))
        for d, A in enumerate(factors):
            rows *= A[idx[a : a + step, d]]
        out[a : a + step] = rows.sum(1)
    return out


def cp_objective(
    factors: list,
    idx: np.ndarray,
    values: np.ndarray,
    ridge: float,
    weight: np.ndarray | None = None,
) -> float:
    """Objective (1) of the module docstring.

    Parameters
    ----------
    factors : list of numpy.ndarray
    idx : numpy.ndarray of int, shape (n, D)
    values : numpy.ndarray, shape (n,)
    ridge : float
    weight : numpy.ndarray, shape (n,), optional

    Returns
    -------
    float
    """
    r2 = (values - cp_predict(factors, idx)) ** 2
    loss = float(r2.sum() if weight is None else (weight * r2).sum())
    return loss + ridge * sum(float((A**2).sum()) for A in factors)


def cp_ranks(shape: tuple, n_entries: int) -> list[int]:
    """The ranks that ``postprocess="auto"`` scores (each with every ridge of
    :data:`CP_RIDGES`): :data:`CP_RANKS` with no more parameters
    (``rank * sum(shape)``) than training entries and a sweep's work
    ``rank^2 * n_entries`` within :data:`CP_MAX_WORK` (none if even the
    smallest rank fails); the ridge keeps a model with almost as many parameters
    as entries from overfitting (rank 32 on the 3-way image of
    ``benchmarks/completion/real_tensors.py``).

    Parameters
    ----------
    shape : tuple of int
    n_entries : int

    Returns
    -------
    list of int
    """
    return [
        r
        for r in CP_RANKS
        if r * sum(shape) <= n_entries and r * r * n_entries <= CP_MAX_WORK
    ]


def cp_init(
    idx: np.ndarray, values: np.ndarray, shape: tuple, rank: int, seed: int = 0
) -> list:
    """A start for :func:`cp_als`: per mode, the leading left singular vectors
    of the sparse mode-d unfolding (truncated HOSVD of the zero-filled
    tensor), random unit columns beyond its rank.

    Parameters
    ----------
    idx : numpy.ndarray of int, shape (n, D)
    values : numpy.ndarray, shape (n,)
    shape : tuple of int
    rank : int
    seed : int
        Seeds the random columns.

    Returns
    -------
    list of numpy.ndarray, shape (I_d, rank)
    """
    rng = np.random.default_rng(seed)
    factors = []
    for d, n in enumerate(shape):
        # Gram of the mode-d unfolding: sum over its columns, I_d x I_d.
        others = [k for k in range(len(shape)) if k != d]
        col = np.ravel_multi_index(
            tuple(idx[:, k] for k in others), [shape[k] for k in others]
        )
        order = np.lexsort((idx[:, d], col))
        A = np.zeros((n, n)) if n <= 4096 else None
        if A is None:  # a huge mode: random columns only
            factors.append(rng.standard_normal((n, rank)) / np.sqrt(n))
            continue
        _gram_of_columns(A, idx[order, d], col[order], values[order])
        k = min(rank, n)
        if n <= 512 or k >= n - 1:
            U = np.linalg.eigh(A)[1][:, ::-1]
        else:  # a long mode: its leading eigenvectors only (O(n^2 k))
            vals, U = eigsh(A, k=k, v0=np.ones(n))
            U = U[:, np.argsort(-vals)]
        F = rng.standard_normal((n, rank)) / np.sqrt(n)
        F[:, :k] = U[:, :k]
        factors.append(F)
    return factors


def _gram_of_columns(A, rows, cols, vals) -> None:
    """``A += M M^T`` for the sparse matrix M with entries (rows, cols, vals),
    its entries sorted by column."""
    M = sp.csr_matrix((vals, (rows, cols)), shape=(A.shape[0], int(cols.max()) + 1))
    A += (M @ M.T).toarray()


def _mode_patterns(idx: np.ndarray, shape: tuple) -> list:
    """Per mode: the entries sorted by their index in that mode, and the
    compressed row pointers."""
    out = []
    for d, n in enumerate(shape):
        order = np.argsort(idx[:, d], kind="stable")
        crow = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(idx[:, d], minlength=n), out=crow[1:])
        out.append((order, crow))
    return out


def als_step(
    factors: list,
    d: int,
    idx: np.ndarray,
    values: np.ndarray,
    ridge: float,
    weight: np.ndarray | None = None,
    pattern: tuple | None = None,
) -> None:
    """Replace ``factors[d]`` by the exact minimizer of (1) over it.

    Parameters
    ----------
    factors : list of numpy.ndarray
        Modified in place.
    d : int
    idx, values, ridge, weight
        As in :func:`cp_objective`; ``ridge`` must be > 0.
    pattern : tuple, optional
        ``(order, crow)`` of mode d (from the sorted entries); computed if
        not given.

    Returns
    -------
    None
    """
    if pattern is None:
        pattern = _mode_patterns(idx, tuple(A.shape[0] for A in factors))[d]
    order, crow = pattern
    sub = idx[order]
    K = np.ones((sub.shape[0], factors[0].shape[1]))
    for k, A in enumerate(factors):
        if k != d:
            K *= A[sub[:, k]]
    w = np.ones(sub.shape[0]) if weight is None else weight[order]
    r = K.shape[1]
    ptr = crow.tolist()
    G = np.empty((len(ptr) - 1, r, r))
    WK = K * w[:, None]
    b = np.empty((len(ptr) - 1, r))
    y = values[order]
    for i in range(len(ptr) - 1):  # one r x r Gram per row of A_d
        a, e = ptr[i], ptr[i + 1]
        G[i] = WK[a:e].T @ K[a:e]
        b[i] = y[a:e] @ WK[a:e]
    G[:, np.arange(r), np.arange(r)] += ridge
    factors[d] = np.linalg.solve(G, b[:, :, None])[:, :, 0]


def cp_als(
    idx: np.ndarray,
    values: np.ndarray,
    shape: tuple,
    rank: int,
    *,
    weight: np.ndarray | None = None,
    init: list | None = None,
    max_sweeps: int = CP_MAX_SWEEPS,
    tol: float = CP_TOL,
    ridge: float = 1.0,
    seed: int = 0,
) -> CPResult:
    """Fit a rank-``rank`` CP model to observed entries by sparse ALS.

    Parameters
    ----------
    idx : numpy.ndarray of int, shape (n, D)
        Positions of the observed entries.
    values : numpy.ndarray, shape (n,)
        Their values (centered: CP has no offset).
    shape : tuple of int
    rank : int
    weight : numpy.ndarray, shape (n,), optional
        Non-negative weight per entry.
    init : list of numpy.ndarray, optional
        Start factors on the scale of ``values`` (default :func:`cp_init`).
    max_sweeps : int
        At most this many sweeps over the modes.
    tol : float
        Stop when the objective falls by less than ``tol`` times its value.
    ridge : float
        Ridge of (1) on the values divided by their root mean square, so
        that it means the same on any scale: on normalized values a factor
        row fitted from m entries has a data term of about m.
    seed : int
        Seeds :func:`cp_init`'s random columns.

    Returns
    -------
    CPResult
        Factors on the scale of ``values`` (the RMS folded into mode 0).
    """
    y, scale = _normalized(values, rank)
    if init is None:
        factors = cp_init(idx, y, shape, rank, seed)
    else:
        factors = [np.array(A, dtype=np.float64) for A in init]
        factors[0] = factors[0] / scale
    patterns = _mode_patterns(idx, shape)
    return _sweeps(
        factors, idx, y, scale, float(ridge), weight, patterns, max_sweeps, tol
    )


def cp_grid(
    idx: np.ndarray,
    values: np.ndarray,
    shape: tuple,
    ranks: list[int],
    ridges: tuple[float, ...],
    *,
    weight: np.ndarray | None = None,
    seed: int = 0,
) -> list[tuple[int, float, CPResult]]:
    """:func:`cp_als` (default start and stopping) for every rank and ridge.

    The same fits as one :func:`cp_als` call each, with the work that does
    not depend on the ridge done once: the normalization, each mode's
    sorted entries, and the start of each rank (:func:`cp_init`'s Gram
    eigenvectors, which were most of a small fit's time).

    Parameters
    ----------
    idx, values, shape, weight, seed
        As in :func:`cp_als`.
    ranks : list of int
    ridges : tuple of float

    Returns
    -------
    list of (rank, ridge, CPResult)
        Rank-major, in the order given.
    """
    y, scale = _normalized(values, min(ranks, default=0))
    patterns = _mode_patterns(idx, shape)
    out = []
    for rank in ranks:
        start = cp_init(idx, y, shape, rank, seed)
        for ridge in ridges:
            factors = [A.copy() for A in start]
            res = _sweeps(
                factors,
                idx,
                y,
                scale,
                float(ridge),
                weight,
                patterns,
                CP_MAX_SWEEPS,
                CP_TOL,
            )
            out.append((rank, ridge, res))
    return out


def _normalized(values: np.ndarray, rank: int) -> tuple[np.ndarray, float]:
    """The values divided by their root mean square, and that RMS."""
    values = np.asarray(values, dtype=np.float64)
    if rank < 1:
        raise InvalidParameterError(
            f"The CP rank must be an int >= 1; got {rank}. Pass a positive rank."
        )
    if values.size == 0:
        raise DataValidationError(
            "cp_als needs observed entries to fit; got none. Pass at least one "
            "entry per index of every mode."
        )
    scale = float(np.sqrt(np.mean(values**2))) or 1.0
    return values / scale, scale


def _sweeps(factors, idx, y, scale, ridge, weight, patterns, max_sweeps, tol):
    """ALS sweeps on the normalized values until (1) falls by less than
    ``tol`` of itself; the factors returned on the scale of the values."""
    objectives = [cp_objective(factors, idx, y, ridge, weight)]
    n = 0
    while n < max_sweeps:
        n += 1
        for d in range(len(factors)):
            als_step(factors, d, idx, y, ridge, weight, patterns[d])
        objectives.append(cp_objective(factors, idx, y, ridge, weight))
        if objectives[-2] - objectives[-1] <= tol * objectives[-1]:
            break
    factors[0] = factors[0] * scale
    return CPResult(factors, objectives, n, ridge)

"""The problems: smooth convex functions of a PSD matrix, seen only through factors.

The SDP ``min_{Z in S_+^n} f(Z)`` (eq. 1) is solved on factors: ``Z = X Y^T``
(the bilinear surrogate, eq. 3-4) or ``Z = V V^T`` (Burer-Monteiro, eq. 2).
A problem never forms an n x n matrix; it answers, at ``Z = X Y^T``:

- the value ``f(X Y^T)``;
- the gradient ``G = nabla f(X Y^T)`` as an operator on factors: ``G W`` and
  ``G^T W`` for an n x k matrix W, so that ``nabla_X f(X, Y) = G Y`` and
  ``nabla_Y f(X, Y) = G^T X`` (eq. 29) and ``||G||_2`` can be estimated by
  power iteration (eq. 17);
- for quadratic f only, the curvature ``q(E) = <E, nabla^2 f E>`` along a
  direction ``E = U V^T`` given by its factors, which yields the exact step
  along a direction (Proposition 2, eq. 22; the quartic line search of
  Burer & Choi for ``f(V V^T)``).

Optionally, a quadratic ``f(Z) = 1/2 ||s(Z) - T||^2 + <C, Z>`` whose values
``s`` on a pair set Omega are bilinear in the factors also gives them
directly (``pair_values``, ``cross_pair_values``, ``pair_target``) and its
gradient for given residuals as one sparse matrix (``pair_gradient``); AAGD
then tracks the pair values across its steps instead of recomputing them
(:func:`~embedopt.sdp.aagd`).

:class:`NPKLProblem` is eq. 13 (nonparametric kernel learning), with that
interface; every oracle costs ``O((|Omega| + nnz(Lap)) r)``;
:func:`sample_pairs` draws its must-link / cannot-link pairs from labels and
:func:`check_pairs` validates given ones. :class:`CMVUProblem` is eq. 23
(colored maximum variance unfolding) with :func:`one_hot_labels` for its
label kernel. Their graphs (the kNN Laplacian, the CMVU pairs) are built in
:mod:`embedopt.sdp.graphs`.

CMVU boundedness. The paper adds no trace constraint and no regularizer to
eq. 23: the distance penalty alone bounds the objective when the graph of N
is connected (scaling a centered factor by t grows the penalty like t^4 and
the label term like t^2). On a disconnected graph the components can drift
apart for free and the objective is unbounded below. Instead of a trace
bound, :func:`~embedopt.sdp.knn_pairs` therefore joins the components of the
kNN graph by their closest cross pairs (as MVU and Isomap implementations
do), and :class:`CMVUProblem` warns when the pairs it is given leave the
graph disconnected. The one direction left free, ``Z + a 1 1^T`` (a
translation of the embedding), changes neither term.

Precision: the solvers of :mod:`embedopt.sdp` default to float64, because the
SDP objective is certified to 1e-6 relative accuracy and float32 rounding of
``Z_ij`` (about 1e-7 |Z_ij| per entry, summed over |Omega| terms) is of that
order; in float32 every sum that cancels is still accumulated in float64.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import scipy.sparse as sp
import torch
from numpy.typing import ArrayLike

from .._core import (
    DataValidationError,
    DeviceLike,
    RandomStateLike,
    as_array,
    fill_doc,
    resolve_random_state,
)
from ..linalg import csr_tensor
from .graphs import _warn_if_disconnected

__all__ = [
    "CMVUProblem",
    "FactorGradient",
    "FactorProblem",
    "NPKLProblem",
    "check_pairs",
    "one_hot_labels",
    "sample_pairs",
]


class FactorGradient:
    """The gradient ``G = nabla f(X Y^T)`` as an operator, and ``f`` there.

    Parameters
    ----------
    value : float or callable
        ``f(X Y^T)``, or a function of no argument computing it on first use
        (so that it can reuse products computed for the gradient).
    matmul : callable
        ``W -> G W`` for W of shape (n, k).
    rmatmul : callable, optional
        ``W -> G^T W``; default ``matmul`` (a symmetric gradient, as for every
        f defined on symmetric matrices through ``sym(Z) = (Z + Z^T) / 2``).
    """

    def __init__(
        self,
        value: float | Callable[[], float],
        matmul: Callable[[torch.Tensor], torch.Tensor],
        rmatmul: Callable[[torch.Tensor], torch.Tensor] | None = None,
    ):
        self._value = value
        self.matmul = matmul
        self.rmatmul = rmatmul if rmatmul is not None else matmul
        self.symmetric = rmatmul is None

    @property
    def value(self) -> float:
        """``f(X Y^T)``."""
        if callable(self._value):
            self._value = float(self._value())
        return float(self._value)

    def spectral_norm(
        self, v: torch.Tensor, n_iter: int = 3
    ) -> tuple[float, torch.Tensor]:
        """Estimate ``||G||_2`` by power iteration (on G when symmetric, else G^T G).

        Parameters
        ----------
        v : torch.Tensor, shape (n, 1)
            Starting vector (warm start: the vector returned last time).
        n_iter : int
            Power iterations; each costs one product with one column (two
            when G is not symmetric).

        Returns
        -------
        norm : float
            A lower estimate of ``||G||_2`` (exact as ``n_iter`` grows).
        v : torch.Tensor
            The last normalized iterate, to warm-start the next estimate.
        """
        v = v / v.norm().clamp_min(torch.finfo(v.dtype).tiny)
        est = 0.0
        tiny = torch.finfo(v.dtype).tiny
        for _ in range(n_iter):
            w = self.matmul(v)
            est = float(w.norm())
            # symmetric G: ||G v|| -> max |eigenvalue| = ||G||_2 from G v alone
            u = w if self.symmetric else self.rmatmul(w)
            v = u / u.norm().clamp_min(tiny)
        return est, v


@runtime_checkable
class FactorProblem(Protocol):
    """A smooth convex ``f(Z)`` on n x n matrices, given through factors.

    Attributes
    ----------
    n : int
        Size of Z.
    quadratic : bool
        Whether f is quadratic in Z (then :meth:`curvature` exists and the
        solvers take exact steps, Proposition 2).
    lipschitz : float
        Lipschitz constant M of ``nabla f`` in the Frobenius norm (the
        largest eigenvalue of the Hessian of f); used by the penalty
        estimate of :func:`~embedopt.sdp.estimate_gamma` (eq. 17, 21).
    strong_convexity : float
        Smallest eigenvalue of the Hessian of f (0 when f is not strongly
        convex), the ``sigma_hat_min(P P^T)`` of eq. 18.
    """

    n: int
    quadratic: bool
    lipschitz: float
    strong_convexity: float

    def value(self, X: torch.Tensor, Y: torch.Tensor) -> float:
        """``f(X Y^T)``."""

    def gradient(self, X: torch.Tensor, Y: torch.Tensor) -> FactorGradient:
        """``f(X Y^T)`` and ``G = nabla f(X Y^T)`` as an operator."""

    def curvature(self, U: torch.Tensor, V: torch.Tensor) -> float:
        """``q(U V^T) = <U V^T, nabla^2 f [U V^T]>`` (quadratic f only)."""


# -- what the pair problems share ---------------------------------------------------
#: The Parameters of a problem's ``value`` and ``gradient``.
_FACTORS_PARAMETERS = """\
Parameters
----------
X, Y : torch.Tensor, shape (n, r)
    The factors of ``Z = X Y^T``."""

#: The Parameters and Returns of ``value`` and of ``gradient`` (their
#: ``{value_doc}`` and ``{gradient_doc}``).
_VALUE_DOC = _FACTORS_PARAMETERS + "\n\nReturns\n-------\nfloat"
_GRADIENT_DOC = _FACTORS_PARAMETERS + "\n\nReturns\n-------\nFactorGradient"


class _PairProblem:
    """The frame of :class:`NPKLProblem` and :class:`CMVUProblem`.

    Both are quadratic in Z: half the squared residuals of linear values of Z
    on index pairs ``(rows[p], cols[p])``, plus ``lam`` times a term linear in
    Z. A subclass checks its data, stores the pairs (:meth:`_store_pairs`)
    and gives their values (``pair_values``); the curvature follows.
    """

    quadratic = True
    strong_convexity = 0.0

    def __init__(self, n: int, lam: float, device: DeviceLike, dtype: torch.dtype):
        self.n = int(n)
        self.lam = float(lam)
        self.device = torch.device(device)
        self.dtype = dtype

    def _store_pairs(self, pairs: np.ndarray) -> None:
        """The pairs' two index columns as ``rows`` and ``cols`` on the device."""
        self.rows = torch.as_tensor(pairs[:, 0], device=self.device)
        self.cols = torch.as_tensor(pairs[:, 1], device=self.device)

    def curvature(self, U: torch.Tensor, V: torch.Tensor) -> float:
        """``q(U V^T) = sum_p s_p(U, V)^2``, with the pair values ``s_p`` of
        :meth:`pair_values` (the ``lam`` term is linear: it adds nothing).

        Parameters
        ----------
        U, V : torch.Tensor, shape (n, k)
            The direction ``E = U V^T``, by its factors.

        Returns
        -------
        float
            ``<E, nabla^2 f E>``, the same whatever the point (f quadratic).
        """
        along = self.pair_values(U, V)
        return float(along.square().sum(dtype=torch.float64))


# -- NPKL (eq. 13) ----------------------------------------------------------------
class NPKLProblem(_PairProblem):
    """Nonparametric kernel learning, eq. 13, on factors.

    ``f(Z) = 1/2 sum_{{i,j} in Omega} (sym(Z)_ij - T_ij)^2 + lam tr(Z Lap)``

    with ``Omega`` the must-links (``T = 1``), the cannot-links (``T = 0``)
    and the diagonal (``T = 1``), each unordered pair once, and
    ``sym(Z) = (Z + Z^T) / 2``. On symmetric Z this is eq. 13 exactly; on the
    non-symmetric ``X Y^T`` of the bilinear surrogate it makes the gradient
    symmetric, ``G = sum_p r_p (e_i e_j^T + e_j e_i^T) / 2 + lam Lap`` with
    residuals ``r_p = sym(Z)_ij - T_ij``, so that ``nabla_X f = G Y`` and
    ``nabla_Y f = G X`` play symmetric roles. The Hessian of f has
    eigenvalues 1 (diagonal entries), 1/2 (pairs) and 0: ``lipschitz = 1``,
    ``strong_convexity = 0`` (the L = 1, sigma = 0 of Sec. 4.1.2).

    Parameters
    ----------
    n : int
        Number of patterns.
    must_link, cannot_link : array-like of int, shape (m, 2)
        Pairs ``(i, j)``, ``i != j``, validated by :func:`check_pairs`.
    laplacian : scipy.sparse matrix, shape (n, n), optional
        Symmetric graph Laplacian ``Lap`` (e.g. :func:`knn_laplacian`); None
        drops the smoothness term.
    lam : float
        Weight lambda of ``tr(Z Lap)``.
    device : torch.device or str
    dtype : torch.dtype
        float64 by default (see the module docstring).
    """

    lipschitz = 1.0

    def __init__(
        self,
        n: int,
        must_link: ArrayLike | None = None,
        cannot_link: ArrayLike | None = None,
        laplacian: sp.spmatrix | sp.sparray | ArrayLike | None = None,
        *,
        lam: float = 1.0,
        device: DeviceLike = "cpu",
        dtype: torch.dtype = torch.float64,
    ):
        super().__init__(n, lam, device, dtype)
        ml, cl = check_pairs(must_link, cannot_link, self.n)
        diag = np.repeat(np.arange(self.n), 2).reshape(-1, 2)
        pairs = np.concatenate([ml, cl, diag]).astype(np.int64)
        target = np.concatenate([np.ones(len(ml)), np.zeros(len(cl)), np.ones(self.n)])
        self.n_pairs = len(ml) + len(cl)
        self._store_pairs(pairs)
        self.target = torch.as_tensor(target, device=self.device, dtype=dtype)
        self.laplacian = None
        lap_csr = None
        if laplacian is not None and self.lam != 0:
            lap_csr = _checked_laplacian(laplacian, self.n)
            self.laplacian = _to_torch_csr(lap_csr, self.device, dtype)
        self._fused = _fused_pattern(
            pairs, lap_csr, self.lam, self.n, self.device, dtype
        )

    @property
    def trace_bound(self) -> float:
        """A bound on ``tr(Z*)``: ``n + sqrt(n (n + |M|))``.

        ``f(Z*) <= f(0) = (n + |M|) / 2`` and ``f(Z) >= 1/2 sum_i (Z_ii - 1)^2``
        (``tr(Z Lap) >= 0`` for PSD Z and Lap), so ``||diag Z* - 1||^2 <=
        n + |M|`` and Cauchy-Schwarz bounds the trace. Frank-Wolfe under this
        bound solves the unconstrained SDP.
        """
        n_must = float(self.target[: self.n_pairs].sum())
        return self.n + math.sqrt(self.n * (self.n + n_must))

    # -- building blocks ---------------------------------------------------------
    @property
    def pair_target(self) -> torch.Tensor:
        """``T_p`` of every pair of Omega (must-links, cannot-links, diagonal)."""
        return self.target

    #: Elements of one gathered block in :meth:`_rowwise_dots` on the CPU
    #: (2 MB in float64): blocks that stay in cache, 3x faster than one block
    #: on a9a's sizes (benchmarks/sdp/README.md, "Implementation choices").
    _BLOCK = 2**18

    def _rowwise_dots(self, left: torch.Tensor, right: torch.Tensor, groups: int):
        """``sum_k left[i_p, g, k] right[j_p, g, k]`` for every pair p and group g.

        ``left`` and ``right`` are (n, groups * k); the rows of both ends are
        gathered with ``index_select`` (faster than torch's advanced
        indexing ``U[i]``) and multiplied in place, in blocks of pairs on
        the CPU so that the gathered rows stay in cache.
        """
        m, width = len(self.rows), left.shape[1]
        step = m if left.device.type != "cpu" else max(1, self._BLOCK // width)
        if step >= m:
            prod = left.index_select(0, self.rows)
            prod *= right.index_select(0, self.cols)
            return prod.view(m, groups, -1).sum(2)
        out = left.new_empty(m, groups)
        for start in range(0, m, step):
            stop = min(start + step, m)
            prod = left.index_select(0, self.rows[start:stop])
            prod *= right.index_select(0, self.cols[start:stop])
            torch.sum(prod.view(stop - start, groups, -1), 2, out=out[start:stop])
        return out

    def pair_values(self, U: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
        """``s_p(U, V) = sym(U V^T)_ij`` for every pair ``p = {i, j}`` of Omega.

        Bilinear in ``(U, V)``, O(|Omega| r).

        Parameters
        ----------
        U, V : torch.Tensor, shape (n, k)

        Returns
        -------
        torch.Tensor, shape (|Omega|,)
        """
        if U is V:  # Z = V V^T is symmetric already: half the gathers
            return self._rowwise_dots(U, U, 1)[:, 0]
        # [U, V]_i . [V, U]_j = U_i.V_j + V_i.U_j: one product of 2r columns
        left, right = torch.cat([U, V], 1), torch.cat([V, U], 1)
        return 0.5 * self._rowwise_dots(left, right, 1)[:, 0]

    def cross_pair_values(
        self, D: torch.Tensor, others: Sequence[torch.Tensor]
    ) -> torch.Tensor:
        """``[s_p(D, B_1), ..., s_p(D, B_m)]`` in one pass over Omega.

        The exact step of AAGD needs the pair values of its direction D
        against the other factor and against that factor's last move; one
        gather of ``[D, B_1, ..., B_m]`` replaces m separate passes.

        Parameters
        ----------
        D : torch.Tensor, shape (n, k)
        others : sequence of torch.Tensor, each of shape (n, k)

        Returns
        -------
        torch.Tensor, shape (|Omega|, m)
        """
        # rows i of [D, B_1, D, B_2, ...] times rows j of [B_1, D, B_2, D, ...]:
        # contiguous products, summed in groups of 2k columns (faster than
        # broadcasting D_i against the stacked B_j; README, "Implementation
        # choices")
        left = torch.cat([M for B in others for M in (D, B)], 1)
        right = torch.cat([M for B in others for M in (B, D)], 1)
        return 0.5 * self._rowwise_dots(left, right, len(others))

    def pair_gradient(
        self, resid: torch.Tensor, out: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``G = S(resid) + lam Lap`` as one CSR matrix (the gradient of f).

        ``S(r) = sum_p r_p (e_i e_j^T + e_j e_i^T) / 2``; with
        ``resid = s(X, Y) - T`` this is ``nabla f(X Y^T)``. The pattern is the
        union of the pairs' and the Laplacian's, fixed at construction, so
        that every product ``G W`` is a single sparse product (the gradient
        ``G Y`` and the power iteration of eq. 17 share it).

        Parameters
        ----------
        resid : torch.Tensor, shape (|Omega|,)
        out : torch.Tensor, optional
            A matrix returned by an earlier call: its values are overwritten
            in place and it is returned (no new CSR tensor; AAGD rebuilds G
            every half-step).

        Returns
        -------
        torch.Tensor
            Sparse CSR, shape (n, n), symmetric.
        """
        crow, col, pair, weight, lap = self._fused
        gathered = resid.index_select(0, pair)
        if out is not None:
            torch.addcmul(lap, weight, gathered, out=out.values())
            return out
        values = torch.addcmul(lap, weight, gathered)
        return csr_tensor(crow, col, values, (self.n, self.n))

    def _lap(self, W: torch.Tensor) -> torch.Tensor:
        return self.laplacian @ W

    # -- the oracles ---------------------------------------------------------------
    @fill_doc(value_doc=_VALUE_DOC)
    def value(self, X: torch.Tensor, Y: torch.Tensor) -> float:
        """``f(X Y^T)`` (eq. 13, 14), O((|Omega| + nnz(Lap)) r).

        {value_doc}
        """
        resid = (self.pair_values(X, Y) - self.target).double()
        terms = [0.5 * resid.dot(resid)]
        if self.laplacian is not None:
            lin = X.reshape(-1).double().dot(self._lap(Y).reshape(-1).double())
            terms.append(self.lam * lin)
        return sum(torch.stack(terms).tolist())  # one synchronization

    @fill_doc(gradient_doc=_GRADIENT_DOC)
    def gradient(self, X: torch.Tensor, Y: torch.Tensor) -> FactorGradient:
        """``f(X Y^T)`` and ``G = nabla f(X Y^T)`` as a (symmetric) operator.

        The residuals are computed once (O(|Omega| r)); each product ``G W``
        then costs ``O((|Omega| + nnz(Lap)) k)`` for W with k columns.

        {gradient_doc}
        """
        resid = self.pair_values(X, Y) - self.target
        cache: dict = {}

        def value() -> float:
            fit = 0.5 * float((resid * resid).sum(dtype=torch.float64))
            if self.laplacian is None:
                return fit
            # Not <X, G Y> - sum_p r_p s_p, which would save this product
            # after G Y but subtracts two large sums: its rounding noise made
            # BM-L-BFGS at tol = 0 stop with a 2-3x larger certified gap
            # (certify_digits.py, n = 200, 400)
            lin = float((X * self._lap(Y)).sum(dtype=torch.float64))
            return fit + self.lam * lin

        def matmul(W: torch.Tensor) -> torch.Tensor:
            # G = S(r) + lam Lap is built on the first product only: value()
            # needs none
            if "G" not in cache:
                cache["G"] = self.pair_gradient(resid)
            return cache["G"] @ W

        return FactorGradient(value, matmul)

    def dense(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Dense ``(mask, T, lam Lap)`` for small-n references.

        ``f(Z) = 1/2 sum_ij mask_ij (sym(Z)_ij - T_ij)^2 + tr(Z lam Lap)``.

        Returns
        -------
        mask : numpy.ndarray, shape (n, n)
            Weight of each entry of ``sym(Z)``: 1 on the diagonal, 1/2 on
            both ``(i, j)`` and ``(j, i)`` of a pair, 0 elsewhere.
        target : numpy.ndarray, shape (n, n)
        laplacian : numpy.ndarray, shape (n, n)
            ``lam Lap`` (zeros without a Laplacian).
        """
        n = self.n
        mask = np.zeros((n, n))
        target = np.zeros((n, n))
        i, j = self.rows.cpu().numpy(), self.cols.cpu().numpy()
        t = self.target.cpu().numpy()
        off = i != j
        mask[i[off], j[off]] = mask[j[off], i[off]] = 0.5
        mask[i[~off], i[~off]] = 1.0
        target[i, j] = target[j, i] = t
        lap = np.zeros((n, n))
        if self.laplacian is not None:
            lap = self.laplacian.to_dense().cpu().numpy() * self.lam
        return mask, target, lap


def _fused_pattern(pairs: np.ndarray, lap, lam: float, n: int, device, dtype):
    """CSR pattern of ``S(r) + lam Lap``: the union of the pairs' and Lap's entries.

    Returns ``(crow, col, pair, weight, lap)``: the values of the matrix are
    ``lap + weight * r[pair]`` (``weight`` 1/2 at both ``(i, j)`` and ``(j, i)``
    of a pair, 1 on a diagonal pair, 0 where only Lap has an entry, whose
    ``pair`` is then 0; ``lap`` is ``lam Lap`` on the pattern, 0 elsewhere).
    """
    i, j = pairs[:, 0], pairs[:, 1]
    off = np.nonzero(i != j)[0]
    p_rows = np.concatenate([i, j[off]])
    p_cols = np.concatenate([j, i[off]])
    p_pair = np.concatenate([np.arange(len(i)), off])
    p_weight = np.where(p_rows == p_cols, 1.0, 0.5)
    if lap is None:
        l_rows = l_cols = np.zeros(0, dtype=np.int64)
        l_vals = np.zeros(0)
    else:
        coo = lap.tocoo()
        l_rows, l_cols, l_vals = (
            coo.row.astype(np.int64),
            coo.col.astype(np.int64),
            lam * coo.data,
        )
    key = np.concatenate([p_rows * n + p_cols, l_rows * n + l_cols])
    uniq, inverse = np.unique(key, return_inverse=True)
    k = len(p_rows)
    pair = np.zeros(len(uniq), dtype=np.int64)
    weight = np.zeros(len(uniq))
    lap_vals = np.zeros(len(uniq))
    pair[inverse[:k]] = p_pair  # pairs are distinct: one pair per entry
    weight[inverse[:k]] = p_weight
    np.add.at(lap_vals, inverse[k:], l_vals)
    rows = uniq // n
    crow = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=crow[1:])

    def tensor(a, dt=torch.int64):
        return torch.as_tensor(a, dtype=dt, device=device)

    # int32 indices where they fit: torch's CPU product otherwise converts
    # them on every call
    index = torch.int32 if len(uniq) < 2**31 - 1 else torch.int64
    return (
        tensor(crow, index),
        tensor(uniq % n, index),
        tensor(pair),
        tensor(weight, dtype),
        tensor(lap_vals, dtype),
    )


def _checked_laplacian(matrix, n: int) -> sp.csr_matrix:
    """``matrix`` as a float64 scipy CSR matrix, checked: sparse, (n, n),
    finite and symmetric."""
    if not sp.issparse(matrix):
        raise DataValidationError(
            "laplacian must be a scipy.sparse matrix of shape (n, n); got "
            f"{type(matrix).__name__}."
        )
    if matrix.shape != (n, n):
        raise DataValidationError(
            f"laplacian has shape {matrix.shape}; expected ({n}, {n}), one row per "
            "pattern."
        )
    csr = sp.csr_matrix(matrix, dtype=np.float64)
    if not np.all(np.isfinite(csr.data)):
        raise DataValidationError(
            "laplacian has NaN or infinite entries; build it from finite weights."
        )
    if abs(csr - csr.T).max() > 1e-10 * max(abs(csr).max(), 1.0):
        raise DataValidationError(
            "laplacian must be symmetric; pass (L + L.T) / 2 for a directed graph's L."
        )
    return csr


def _to_torch_csr(csr: sp.csr_matrix, device, dtype) -> torch.Tensor:
    return csr_tensor(
        torch.as_tensor(csr.indptr, dtype=torch.int64),
        torch.as_tensor(csr.indices, dtype=torch.int64),
        torch.as_tensor(csr.data, dtype=dtype),
        csr.shape,
    ).to(device)


# -- pairs ------------------------------------------------------------------------
def _as_pairs(pairs, name: str) -> np.ndarray:
    if pairs is None:
        return np.zeros((0, 2), dtype=np.int64)
    arr = as_array(pairs, name)
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise DataValidationError(
            f"{name} must have shape (m, 2), one pair (i, j) per row; got shape "
            f"{arr.shape}."
        )
    if arr.dtype.kind not in "iuf":  # booleans, text, objects, complex numbers
        raise DataValidationError(
            f"{name} must hold integer pattern indices; got dtype {arr.dtype}."
        )
    if not np.issubdtype(arr.dtype, np.integer):
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise DataValidationError(f"{name} must hold integer pattern indices.")
        arr = arr.astype(np.int64)
    return arr.astype(np.int64)


def check_pairs(
    must_link: ArrayLike | None, cannot_link: ArrayLike | None, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """Validate must-link and cannot-link pairs of n patterns.

    Parameters
    ----------
    must_link, cannot_link : array-like of int, shape (m, 2), or None
    n : int
        Number of patterns; indices must lie in ``[0, n)``.

    Returns
    -------
    must_link, cannot_link : numpy.ndarray of int64, shape (m, 2)
        Each pair ordered ``i < j``.

    Raises
    ------
    DataValidationError
        An index out of range, a self-pair ``(i, i)``, a pair given twice,
        or a pair that is both a must-link and a cannot-link (named).
    """
    out = []
    for name, pairs in (("must_link", must_link), ("cannot_link", cannot_link)):
        arr = _as_pairs(pairs, name)
        bad = (arr < 0) | (arr >= n)
        if bad.any():
            row = int(np.nonzero(bad.any(1))[0][0])
            raise DataValidationError(
                f"{name} pair {row} is {tuple(arr[row].tolist())}: indices must lie "
                f"in [0, {n}) (out of range)."
            )
        same = arr[:, 0] == arr[:, 1]
        if same.any():
            row = int(np.nonzero(same)[0][0])
            raise DataValidationError(
                f"{name} pair {row} is a self-pair {tuple(arr[row].tolist())}; the "
                "diagonal is always constrained (K_ii = 1), remove it."
            )
        arr = np.sort(arr, axis=1)
        keys = arr[:, 0] * n + arr[:, 1]
        uniq, counts = np.unique(keys, return_counts=True)
        if (counts > 1).any():
            k = int(uniq[counts > 1][0])
            raise DataValidationError(
                f"{name} holds the duplicate pair ({k // n}, {k % n}); give each "
                "pair once."
            )
        out.append((arr, keys))
    (ml, ml_keys), (cl, cl_keys) = out
    both = np.intersect1d(ml_keys, cl_keys)
    if both.size:
        k = int(both[0])
        raise DataValidationError(
            f"The pair ({k // n}, {k % n}) is both a must-link and a cannot-link "
            f"({both.size} such pair(s)); remove it from one of the two sets."
        )
    return ml, cl


def sample_pairs(
    y: ArrayLike, n_pairs: int, random_state: RandomStateLike = None
) -> tuple[np.ndarray, np.ndarray]:
    """Sample must-link and cannot-link pairs from class labels.

    As in the paper's NPKL experiments (Table 1): ``n_pairs`` distinct
    must-links (two patterns of the same class) and ``n_pairs`` distinct
    cannot-links (different classes), uniformly among such pairs.

    Parameters
    ----------
    y : array-like, shape (n,)
        Class labels.
    n_pairs : int
        Pairs of each kind.
    random_state : None, int, numpy Generator or RandomState

    Returns
    -------
    must_link, cannot_link : numpy.ndarray of int64, shape (n_pairs, 2)
        Pairs ordered ``i < j``.

    Raises
    ------
    DataValidationError
        If there are fewer than ``n_pairs`` pairs of a kind.
    """
    y = np.asarray(y)
    n = len(y)
    rng = resolve_random_state(random_state).numpy
    _, inverse, counts = np.unique(y, return_inverse=True, return_counts=True)
    n_same = int((counts * (counts - 1) // 2).sum())
    n_diff = n * (n - 1) // 2 - n_same
    result = []
    for want_same, available in ((True, n_same), (False, n_diff)):
        if n_pairs > available:
            kind = "must-link" if want_same else "cannot-link"
            raise DataValidationError(
                f"Only {available} {kind} pairs exist among these labels; asked for "
                f"n_pairs={n_pairs}. Lower n_pairs to at most {available}, or give "
                "the pairs themselves."
            )
        keys = np.zeros(0, dtype=np.int64)
        # Rejection sampling of uniform pairs; a few rounds suffice unless a
        # kind is rare, when each round still adds what it finds.
        while len(keys) < n_pairs:
            m = 2 * (n_pairs - len(keys)) + 16
            i = rng.integers(0, n, size=m)
            j = rng.integers(0, n, size=m)
            keep = (i != j) & ((inverse[i] == inverse[j]) == want_same)
            lo, hi = np.minimum(i, j)[keep], np.maximum(i, j)[keep]
            new = lo.astype(np.int64) * n + hi
            _, first = np.unique(new, return_index=True)
            new = new[np.sort(first)]
            new = new[~np.isin(new, keys)]
            keys = np.concatenate([keys, new])[:n_pairs]
        result.append(np.stack([keys // n, keys % n], axis=1))
    return result[0], result[1]


# -- CMVU (eq. 23) ---------------------------------------------------------------
def one_hot_labels(y: ArrayLike) -> np.ndarray:
    """The one-hot label matrix Y (n x c), so that ``K = Y Y^T``.

    ``K_ij = 1`` when i and j share a class, 0 otherwise: the label kernel of
    CMVU for classification labels.

    Parameters
    ----------
    y : array-like, shape (n,)

    Returns
    -------
    numpy.ndarray of float64, shape (n, c)
    """
    _, inverse = np.unique(np.asarray(y), return_inverse=True)
    out = np.zeros((len(inverse), int(inverse.max()) + 1))
    out[np.arange(len(inverse)), inverse] = 1.0
    return out


class CMVUProblem(_PairProblem):
    """Colored maximum variance unfolding, eq. 23, on factors.

    ``f(Z) = 1/2 sum_{p = {i,j} in N} (E_p^T Z E_p - d_p)^2 - lam tr(H Z H K)``

    with ``E_p = e_i - e_j`` (so ``E_p^T Z E_p = Z_ii + Z_jj - Z_ij - Z_ji``,
    the squared distance of i and j in the embedding, also for the
    non-symmetric ``X Y^T`` of the bilinear surrogate), ``H = I - 1 1^T / n``
    and the label kernel ``K = Lb Lb^T`` given by a label factor ``Lb``
    (n x c; :func:`one_hot_labels` for classes) or ``K = I`` (``labels=None``:
    plain MVU, where ``tr(H Z H) = tr(H Z)`` is the variance of the
    embedding). The weight is the paper's trade-off lambda, 1 by default as in
    its experiments (Sec. 5.2); eq. 23's distance term carries the 1/2 and no
    other weight. The distances are not rescaled: for features of scale s the
    penalty grows like s^4 and the label term like s^2, so lambda is to be read
    relative to the data's scale.

    The gradient is ``G = sum_p r_p E_p E_p^T - lam H K H`` (symmetric), with
    residuals ``r_p = E_p^T Z E_p - d_p``; ``G W`` costs
    ``O((|N| + n c) k)`` for W with k columns (``H Lb (Lb^T H W)``, never the
    n x n K). f is quadratic: the penalty is quadratic in Z and the label
    term linear, so :meth:`curvature` gives the exact steps (Proposition 2).
    The Hessian is ``sum_p vec(E_p E_p^T) vec(E_p E_p^T)^T``; its largest
    eigenvalue is at most ``max_p (deg_i + deg_j) + 2`` (Gershgorin on the
    Gram matrix of the ``E_p E_p^T``: 4 on the diagonal, 1 for two pairs that
    share a pattern), the ``lipschitz`` used; ``strong_convexity = 0``.

    The problem has no ``trace_bound``: :func:`~embedopt.sdp.frank_wolfe` needs
    one passed explicitly.

    Parameters
    ----------
    n : int
        Number of patterns.
    pairs : array-like of int, shape (m, 2)
        The neighbour pairs N (:func:`knn_pairs`), ``i != j``, each once (a
        repeated pair weighs twice).
    sqdist : array-like of float, shape (m,)
        ``d_p``, the squared distances to preserve.
    labels : array-like, shape (n, c), optional
        Label factor ``Lb`` of ``K = Lb Lb^T``; None for ``K = I`` (MVU).
    lam : float
        Trade-off lambda between dependence on the labels and distance
        preservation.
    device : torch.device or str
    dtype : torch.dtype
        float64 by default.

    Raises
    ------
    DataValidationError
        Pairs out of range or self-pairs, distances of the wrong length, NaN
        or negative, labels of the wrong shape.
    """

    def __init__(
        self,
        n: int,
        pairs: ArrayLike,
        sqdist: ArrayLike,
        labels: ArrayLike | None = None,
        *,
        lam: float = 1.0,
        device: DeviceLike = "cpu",
        dtype: torch.dtype = torch.float64,
    ):
        super().__init__(n, lam, device, dtype)
        pairs, sqdist, labels = _check_cmvu_inputs(self.n, pairs, sqdist, labels)
        deg = np.bincount(pairs.ravel(), minlength=self.n)
        self.lipschitz = float((deg[pairs[:, 0]] + deg[pairs[:, 1]]).max() + 2)
        self.n_pairs = len(pairs)
        self._store_pairs(pairs)
        self.sqdist = torch.as_tensor(sqdist, device=self.device, dtype=dtype)
        self.labels = self.labels_t = self.classes = None
        if labels is not None:
            self.labels = torch.as_tensor(labels, device=self.device, dtype=dtype)
            if np.all((labels == 0) | (labels == 1)) and np.all(labels.sum(1) == 1):
                # one-hot: Lb^T W is a sum per class, a scatter in O(n k)
                # (a tiny GEMM can cost milliseconds when BLAS threads contend)
                self.classes = torch.as_tensor(labels.argmax(1), device=self.device)
            else:
                self.labels_t = self.labels.T.contiguous()

    # -- building blocks ---------------------------------------------------------
    def pair_values(self, U: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
        """``s_p(U, V) = E_p^T U V^T E_p = (u_i - u_j) . (v_i - v_j)`` per pair.

        Bilinear in ``(U, V)``, O(|N| k).

        Parameters
        ----------
        U, V : torch.Tensor, shape (n, k)
            Pass one tensor twice for ``Z = V V^T``: its rows are gathered once.

        Returns
        -------
        torch.Tensor, shape (|N|,)
        """
        dU = U[self.rows] - U[self.cols]
        dV = dU if V is U else V[self.rows] - V[self.cols]
        return (dU * dV).sum(1)

    def _label_map(self, W: torch.Tensor) -> torch.Tensor:
        """``Lb^T H W`` (c x k), or ``H W`` when ``K = I``; O(n c k)."""
        centered = W - W.mean(0, keepdim=True)
        if self.labels is None:
            return centered
        if self.classes is None:
            return self.labels_t @ centered
        out = W.new_zeros((self.labels.shape[1], W.shape[1]))
        return out.index_add_(0, self.classes, centered)

    def _label_apply(self, M: torch.Tensor) -> torch.Tensor:
        """``H Lb M`` for ``M = Lb^T H W``, i.e. ``H K H W``."""
        if self.labels is None:
            return M  # already H W, and H H = H
        out = self.labels @ M if self.classes is None else M[self.classes]
        return out - out.mean(0, keepdim=True)

    # -- the oracles ---------------------------------------------------------------
    @fill_doc(value_doc=_VALUE_DOC)
    def value(self, X: torch.Tensor, Y: torch.Tensor) -> float:
        """``f(X Y^T)`` (eq. 23), O((|N| + n c) r).

        The distance penalty minus lambda times the label dependence.

        {value_doc}
        """
        return self.gradient(X, Y).value

    @fill_doc(gradient_doc=_GRADIENT_DOC)
    def gradient(self, X: torch.Tensor, Y: torch.Tensor) -> FactorGradient:
        """``f(X Y^T)`` and ``G = nabla f(X Y^T)`` as a (symmetric) operator.

        {gradient_doc}
        """
        resid = self.pair_values(X, Y) - self.sqdist
        i, j = self.rows, self.cols

        def value() -> float:
            fit = 0.5 * float((resid * resid).sum(dtype=torch.float64))
            # tr(H X Y^T H K) = <Lb^T H X, Lb^T H Y>
            dep = (self._label_map(X) * self._label_map(Y)).sum(dtype=torch.float64)
            return fit - self.lam * float(dep)

        def matmul(W: torch.Tensor) -> torch.Tensor:
            # sum_p r_p E_p E_p^T W: row i gets r_p (w_i - w_j), row j its negative
            t = resid.unsqueeze(1) * (W[i] - W[j])
            out = torch.zeros_like(W)
            out.index_add_(0, i, t)
            out.index_add_(0, j, -t)
            return out - self.lam * self._label_apply(self._label_map(W))

        return FactorGradient(value, matmul)


def _check_cmvu_inputs(n: int, pairs, sqdist, labels):
    pairs = np.asarray(pairs)
    if pairs.ndim != 2 or pairs.shape[1] != 2 or len(pairs) == 0:
        raise DataValidationError(
            f"pairs must have shape (m, 2) with m >= 1; got shape {pairs.shape}."
        )
    pairs = pairs.astype(np.int64)
    if pairs.min() < 0 or pairs.max() >= n or np.any(pairs[:, 0] == pairs[:, 1]):
        raise DataValidationError(
            f"pairs must hold distinct pattern indices in [0, {n}) (no self-pairs)."
        )
    sqdist = np.asarray(sqdist, dtype=np.float64)
    if sqdist.shape != (len(pairs),) or not np.all(np.isfinite(sqdist)):
        raise DataValidationError(
            f"sqdist must hold {len(pairs)} finite squared distances, one per pair; "
            f"got shape {sqdist.shape}."
        )
    if np.any(sqdist < 0):
        raise DataValidationError("sqdist must be non-negative (squared distances).")
    graph = sp.csr_matrix((np.ones(len(pairs)), tuple(pairs.T)), shape=(n, n))
    _warn_if_disconnected(
        graph,
        "The pairs leave {n_components} connected components: the CMVU objective "
        "is unbounded below (components drift apart). Build them with knn_pairs.",
        stacklevel=3,
    )
    if labels is not None:
        labels = np.asarray(labels, dtype=np.float64)
        if labels.ndim != 2 or labels.shape[0] != n:
            raise DataValidationError(
                f"labels must be a label factor of shape ({n}, c); got shape "
                f"{labels.shape}."
            )
    return pairs, sqdist, labels

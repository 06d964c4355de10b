"""Fold-in: the factor rows of users (items) new to a fitted completion model.

A fitted matrix model is ``X = U diag(s) V^T``, the solution of
``min sum_Omega w l(X_ij, O_ij) + lam ||X||_*`` on the centered values. The
nuclear norm has the variational form

    ||X||_* = min_{A B^T = X} (||A||_F^2 + ||B||_F^2) / 2,

attained by the balanced factors ``A = U diag(s)^(1/2)``, ``B = V
diag(s)^(1/2)``. With B fixed, the objective splits over the rows of A: the
row ``a`` of a user with entries ``(j, o_j, w_j)`` minimizes

    sum_j w_j l(a^T b_j, o_j) + lam / 2 ||a||^2,                        (1)

a ridge regression on the rows ``b_j`` of B for the square loss, solved in
closed form: ``(sum_j w_j b_j b_j^T + lam I) a = sum_j w_j o_j b_j``. Every
row of a converged solution satisfies (1) already (its stationarity,
``G B + lam A = 0`` with G the loss gradient on Omega, is the fitted KKT
condition ``-G V = lam U``), so (1) places a new user exactly where the
fitted model would put a user with those entries if the item side did not
move; the user's row of ``U`` is ``a / s^(1/2)`` (the returned factors keep
``s`` and ``V``, and the known rows unchanged). Items are the same with the
roles swapped. Other losses solve (1) by L-BFGS over all new rows at once
(the objective is separable, so one run is as good as one per row).
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

from .._core import ConvergenceWarning, DataValidationError
from ..data import ObservedEntries
from ..linalg import psd_solve
from ..optim import lbfgs
from .binary import make_centering
from .centering import Centering
from .losses import Loss, SquareLoss

__all__ = [
    "as_svd",
    "component_ridge",
    "fold_in_factors",
    "grown_factors",
    "refit_centering",
    "solve_rows",
]


def solve_rows(
    rows: np.ndarray,
    cols: np.ndarray,
    values: np.ndarray,
    weight: np.ndarray | None,
    B: torch.Tensor,
    *,
    n_rows: int,
    lam: float | torch.Tensor,
    loss: Loss,
) -> torch.Tensor:
    """Minimize (1) for ``n_rows`` rows given the fixed balanced factor ``B``.

    Parameters
    ----------
    rows : numpy.ndarray of int, shape (nnz,)
        The row (0..n_rows-1) of each entry.
    cols : numpy.ndarray of int, shape (nnz,)
        Its row of ``B``.
    values : numpy.ndarray, shape (nnz,)
        The centered (scaled) observed values.
    weight : numpy.ndarray of shape (nnz,) or None
        The entries' sample weights (None: 1).
    B : torch.Tensor, shape (n, k)
        The other side's balanced factor, ``V diag(s)^(1/2)``.
    n_rows : int
    lam : float or torch.Tensor of shape (k,)
        The fitted lambda, or one penalty per component, ``lam_l``: then
        (1) has ``1 / 2 sum_l lam_l a_l^2`` for its ridge (a weighted
        nuclear norm's, see :func:`component_ridge`).
    loss : Loss

    Returns
    -------
    torch.Tensor of float64, shape (n_rows, k)
        The balanced rows ``a``; a row without entries is 0.
    """
    B = B.to(torch.float64)
    dev = B.device
    if torch.is_tensor(lam):
        lam = lam.to(dev, torch.float64)
    w = np.ones(rows.size) if weight is None else np.asarray(weight, np.float64)
    order = np.argsort(rows, kind="stable")
    rows, cols, y, w = rows[order], cols[order], values[order], w[order]
    # only the rows of B that the entries touch: the solve costs O(nnz k^2),
    # not O(n k^2) for a few new users among many items
    used, cols = np.unique(cols, return_inverse=True)
    B = B[torch.as_tensor(used, device=dev)]
    if isinstance(loss, SquareLoss):
        return _ridge_rows(rows, cols.reshape(-1), y, w, B, n_rows, lam)
    return _solve_rows_lbfgs(rows, cols.reshape(-1), y, w, B, n_rows, lam, loss)


#: Elements of the padded (rows, entries, k) blocks of one batch of solves.
_BLOCK_ELEMENTS = 1 << 22


def _ridge_rows(rows, cols, y, w, B, n_rows, lam) -> torch.Tensor:
    """(1) for the square loss: ``(B_J^T W B_J + lam I) a = B_J^T W y`` per row.

    The rows are taken in the order of their number of entries, and each
    batch of rows is padded to its longest row's entries (weight 0) and
    solved with one batched Cholesky: O(nnz k^2) with little padding.
    """
    dev, k = B.device, B.shape[1]
    counts = np.bincount(rows, minlength=n_rows)
    perm = np.argsort(counts, kind="stable")  # rows by number of entries
    rank = np.empty_like(perm)
    rank[perm] = np.arange(n_rows)
    order = np.argsort(rank[rows], kind="stable")
    rows, cols, y, w = rank[rows][order], cols[order], y[order], w[order]
    counts = counts[perm]
    starts = np.concatenate([[0], np.cumsum(counts)])
    out = torch.zeros((n_rows, k), dtype=torch.float64, device=dev)
    root = torch.as_tensor(np.sqrt(w), dtype=torch.float64, device=dev)
    wy = torch.as_tensor(np.sqrt(w) * y, dtype=torch.float64, device=dev)
    cols_t = torch.as_tensor(cols, device=dev)
    eye = torch.diag(torch.as_tensor(lam, dtype=torch.float64, device=dev).expand(k))
    a = 0
    while a < n_rows:
        longest, b = max(int(counts[a]), 1), a + 1
        while (
            b < n_rows and (b - a + 1) * max(longest, counts[b]) * k <= _BLOCK_ELEMENTS
        ):
            longest, b = max(longest, int(counts[b])), b + 1
        # position of each entry of rows a..b-1 in the padded block
        e0, e1 = starts[a], starts[b]
        local = rows[e0:e1] - a
        slot = np.arange(e0, e1) - starts[rows[e0:e1]]
        P = torch.zeros((b - a, longest, k), dtype=torch.float64, device=dev)
        t = torch.zeros((b - a, longest), dtype=torch.float64, device=dev)
        li, si = torch.as_tensor(local, device=dev), torch.as_tensor(slot, device=dev)
        P[li, si] = B[cols_t[e0:e1]] * root[e0:e1, None]
        t[li, si] = wy[e0:e1]
        G = P.transpose(1, 2) @ P + eye
        rhs = (P.transpose(1, 2) @ t[:, :, None])[:, :, 0]
        out[a:b] = psd_solve(G, rhs, "fold-in")
        a = b
    return out[torch.as_tensor(rank, device=dev)]


def _solve_rows_lbfgs(rows, cols, y, w, B, n_rows, lam, loss) -> torch.Tensor:
    """(1) for a loss without a closed form, by L-BFGS on every row at once."""
    dev = B.device
    r, c = torch.as_tensor(rows, device=dev), torch.as_tensor(cols, device=dev)
    yt = torch.as_tensor(y, dtype=torch.float64, device=dev)
    wt = torch.as_tensor(w, dtype=torch.float64, device=dev)
    Bc = B[c]

    def fun(A):
        x = (A[r] * Bc).sum(1)
        g = wt * loss.grad(x, yt)
        grad = torch.zeros_like(A).index_add_(0, r, g[:, None] * Bc) + lam * A
        value = (wt * loss.value(x, yt)).sum() + 0.5 * (lam * A * A).sum()
        return value, grad

    A0 = torch.zeros((n_rows, B.shape[1]), dtype=torch.float64, device=dev)
    with warnings.catch_warnings():  # a best effort: the last iterate is kept
        warnings.simplefilter("ignore", ConvergenceWarning)
        return lbfgs(fun, A0, max_iter=500, tol=1e-14, owner="fold-in").x


def component_ridge(lam: float, weights: torch.Tensor, floor: float) -> torch.Tensor:
    """Per-component penalties of (1) for a weighted nuclear norm.

    A fit with ``lam sum_l w_l sigma_l(X)`` (a nonconvex regularizer frozen
    at its solution: the weights ``w_l = rbar'(sigma_l)``) has the
    stationarity condition ``-g_i B = lam a_i diag(w)`` for each row, so a
    new row solves (1) with the ridge ``lam w_l`` on component l instead of
    ``lam``. Components that the penalty no longer shrinks (``w_l = 0``, MCP
    above theta) would leave a row with fewer entries than such components
    undetermined: every penalty is at least ``floor``.

    Parameters
    ----------
    lam : float
    weights : torch.Tensor, shape (k,)
    floor : float

    Returns
    -------
    torch.Tensor of float64, shape (k,)
    """
    return (lam * weights.to(torch.float64)).clamp(min=floor)


def fold_in_factors(
    factors: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    indices: np.ndarray,
    values: np.ndarray,
    weight: np.ndarray | None,
    new: tuple[np.ndarray, np.ndarray],
    *,
    lam: float | torch.Tensor,
    loss: Loss,
    n_sweeps: int = 5,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(U, s, V)`` with the rows of new users and new items solved by (1).

    Parameters
    ----------
    factors : tuple (U, s, V) of torch.Tensor
        The fitted factors, already grown to the new shape (new rows 0).
    indices : numpy.ndarray of int, shape (nnz, 2)
        The training entries (codes of the grown shape).
    values : numpy.ndarray, shape (nnz,)
        Their centered (scaled) values.
    weight : numpy.ndarray of shape (nnz,) or None
    new : tuple of two boolean numpy.ndarray
        Which rows and which columns to solve.
    lam : float or torch.Tensor of shape (k,)
        The penalty of (1), or one per component (see :func:`solve_rows`).
    loss : Loss
    n_sweeps : int
        Alternations between new rows and new columns when some entries
        have both (each side's solve then uses the other's last rows); one
        pass otherwise, which is exact.

    Returns
    -------
    tuple (U, s, V) of torch.Tensor
        In the dtype and on the device of ``factors``; known rows unchanged.
    """
    U, s, V = factors
    out = [U.clone(), V.clone()]
    root = torch.sqrt(s.to(torch.float64).clamp(min=0))
    inv = torch.where(root > 0, 1 / root.clamp(min=1e-300), torch.zeros_like(root))
    sides = [U.to(torch.float64) * root, V.to(torch.float64) * root]
    touch = [new[d][indices[:, d]] for d in (0, 1)]
    both = touch[0] & touch[1]
    # after the first pass, only the rows (columns) with entries at new
    # columns (rows) change: the rest depend on known factors only
    linked = [
        np.bincount(indices[both, d], minlength=n.size) > 0 for d, n in enumerate(new)
    ]
    for sweep in range(n_sweeps if both.any() else 1):
        for d in (0, 1):
            solve = new[d] if sweep == 0 else linked[d]
            if not solve.any():
                continue
            keep = solve[indices[:, d]]
            who = np.flatnonzero(solve)
            local = np.searchsorted(who, indices[keep, d])
            sides[d][torch.as_tensor(who)] = solve_rows(
                local,
                indices[keep, 1 - d],
                values[keep],
                None if weight is None else weight[keep],
                sides[1 - d],
                n_rows=who.size,
                lam=lam,
                loss=loss,
            )
    for d in (0, 1):  # the known rows stay bit for bit as they were
        who = torch.as_tensor(np.flatnonzero(new[d]), device=U.device)
        rows = (sides[d][who] * inv).to(U.dtype)
        if not bool(torch.isfinite(rows * s.to(rows.dtype)).all()):  # U diag(s)
            raise DataValidationError(
                f"The folded-in factor rows overflow {U.dtype}: the new values are "
                "too large for it. Rescale them, or fit with dtype='float64'."
            )
        out[d][who] = rows
    return out[0], s, out[1]


def grown_factors(
    factors: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]],
    old_shape: tuple[int, ...],
    shape: tuple[int, ...],
    old_to_new: list[np.ndarray],
) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Per-mode factors moved to the codes of a grown shape, new rows 0.

    Mode d's ``U_d`` has a row per index of mode d and ``V_d`` one per
    column of the mode-d unfolding (a combination of the other modes'
    indices; the columns of a matrix): both follow ``old_to_new``.

    Parameters
    ----------
    factors : list of (U, s, V)
        One triple per unfolding (one for a matrix).
    old_shape, shape : tuple of int
        The fitted and the grown shape.
    old_to_new : list of numpy.ndarray of int
        Per mode, the new code of each fitted code.

    Returns
    -------
    list of (U, s, V)
    """
    out = []
    nd = len(shape)
    for d, (U, s, V) in enumerate(factors):
        others = [k for k in range(nd) if k != d] if nd > 2 else [1 - d]
        rows = torch.as_tensor(old_to_new[d], device=U.device)
        Ug = U.new_zeros((shape[d], U.shape[1]))
        Ug[rows] = U
        old_cols = np.unravel_index(
            np.arange(V.shape[0]), [old_shape[k] for k in others]
        )
        cols = np.ravel_multi_index(
            tuple(old_to_new[k][c] for k, c in zip(others, old_cols, strict=True)),
            [shape[k] for k in others],
        )
        Vg = V.new_zeros((int(np.prod([shape[k] for k in others])), V.shape[1]))
        Vg[torch.as_tensor(cols, device=V.device)] = V
        out.append((Ug, s, Vg))
    return out


def as_svd(
    U: torch.Tensor, s: torch.Tensor, V: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``U diag(s) V^T`` as a thin SVD again (after rows were added to U, V).

    The solvers' warm starts read the nuclear norm as ``sum(s)``, which
    needs orthonormal columns: QR of both sides and an SVD of the small core.

    Parameters
    ----------
    U : torch.Tensor, shape (m, k)
    s : torch.Tensor, shape (k,)
    V : torch.Tensor, shape (n, k)

    Returns
    -------
    U, s, V : torch.Tensor
        Orthonormal columns, decreasing positive ``s``, in ``U``'s dtype.
    """
    if s.numel() == 0:
        return U, s, V
    Qa, Ra = torch.linalg.qr(U.to(torch.float64))
    Qb, Rb = torch.linalg.qr(V.to(torch.float64))
    u, sv, vt = torch.linalg.svd((Ra * s.to(torch.float64)) @ Rb.T)
    keep = sv > sv[:1] * 1e-12
    dt = U.dtype
    return (Qa @ u)[:, keep].to(dt), sv[keep].to(dt), (Qb @ vt.T)[:, keep].to(dt)


def refit_centering(
    previous: Centering | None,
    center: str,
    loss: Loss,
    scale: bool,
    reg: float,
    entries: ObservedEntries,
    weight: np.ndarray | None,
) -> Centering:
    """The centering of ``partial_fit(refit="all")``: fitted again on every
    entry, warm-started from ``previous`` where it is a plain
    :class:`~embedopt.completion.centering.Centering` of the same mode.

    A warm start runs ``WARM_SWEEPS`` alternating sweeps from the old offsets
    instead of ``n_sweeps`` from zero (:meth:`Centering.fit`'s ``init``): the
    new entries move the offsets a little, and the sweeps that a cold fit
    spends getting near them were the largest part of the refit's setup.
    Offsets inside a +/-1 loss are fitted cold.

    Parameters
    ----------
    previous : Centering or None
        The fitted model's ``centering_``.
    center, loss, scale, reg
        The fit's resolved centering mode, loss, ``scale`` and ``center_reg``.
    entries : ObservedEntries
        Every training entry (old and new).
    weight : numpy.ndarray or None

    Returns
    -------
    Centering
        Fitted.
    """
    fresh = make_centering(center, loss, scale, reg)
    warm = (
        type(fresh) is Centering
        and type(previous) is Centering
        and previous.center == center
        and hasattr(previous, "offsets_")
    )
    return fresh.fit(entries, weight, **({"init": previous} if warm else {}))

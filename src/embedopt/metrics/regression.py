"""Error metrics for predicted entries (regression and +/-1 classification)."""

from __future__ import annotations

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._core import DataValidationError, fill_doc, to_numpy

__all__ = ["accuracy", "mae", "nmse", "nmse_lowrank", "rmse"]

#: The arguments and result of :func:`rmse`, :func:`mae` and :func:`nmse`
#: (a docstring's ``{error_arguments}``).
_ERROR_ARGUMENTS = """\
Parameters
----------
y_true, y_pred : array-like or tensor, shape (n,)

Returns
-------
float"""


def _pair(y_true, y_pred):
    a = np.asarray(to_numpy(y_true), dtype=np.float64).ravel()
    b = np.asarray(to_numpy(y_pred), dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise DataValidationError(
            f"y_true and y_pred must have the same length; got {a.size} and {b.size}."
        )
    if a.size == 0:
        raise DataValidationError("Cannot compute a metric on zero entries.")
    return a, b


@fill_doc(error_arguments=_ERROR_ARGUMENTS)
def rmse(y_true: ArrayLike | torch.Tensor, y_pred: ArrayLike | torch.Tensor) -> float:
    """Root mean squared error ``sqrt(mean((y_true - y_pred)^2))``.

    Computed on errors scaled by the largest one, so that errors near the
    float64 range (1e200) do not overflow when squared.

    {error_arguments}
    """
    a, b = _pair(y_true, y_pred)
    with np.errstate(over="ignore"):  # a - b beyond the range is inf, as is the rmse
        err = np.abs(a - b)
    top = float(err.max())
    if top == 0 or not np.isfinite(top):
        return top
    return top * float(np.sqrt(np.mean((err / top) ** 2)))


@fill_doc(error_arguments=_ERROR_ARGUMENTS)
def mae(y_true: ArrayLike | torch.Tensor, y_pred: ArrayLike | torch.Tensor) -> float:
    """Mean absolute error ``mean(|y_true - y_pred|)``.

    {error_arguments}
    """
    a, b = _pair(y_true, y_pred)
    return float(np.mean(np.abs(a - b)))


@fill_doc(error_arguments=_ERROR_ARGUMENTS)
def nmse(y_true: ArrayLike | torch.Tensor, y_pred: ArrayLike | torch.Tensor) -> float:
    """Normalized error ``||y_pred - y_true|| / ||y_true||`` (Yao & Kwok, Sec. 5.1).

    The paper calls this NMSE although it is a ratio of norms, not of squared
    norms; we follow the paper so the numbers compare.

    {error_arguments}
    """
    a, b = _pair(y_true, y_pred)
    denom = np.linalg.norm(a)
    if denom == 0:
        raise DataValidationError("nmse is undefined when y_true is all zeros.")
    return float(np.linalg.norm(b - a) / denom)


def accuracy(
    y_true: ArrayLike | torch.Tensor, y_pred: ArrayLike | torch.Tensor
) -> float:
    """Fraction of entries whose sign is predicted correctly (+/-1 labels).

    ``mean(sign(y_pred) == y_true)``; a prediction of exactly 0 counts as +1.

    Parameters
    ----------
    y_true : array-like of {-1, +1}
    y_pred : array-like of float
        Scores or labels.

    Returns
    -------
    float
    """
    a, b = _pair(y_true, y_pred)
    return float(np.mean(np.where(b >= 0, 1.0, -1.0) == a))


def _gram_trace(A: np.ndarray, B: np.ndarray) -> float:
    # ||A B^T||_F^2 = trace((A^T A)(B^T B)), O((m + n) r^2).
    return float(((A.T @ A) * (B.T @ B)).sum())


def _rowwise(A, B, rows, cols, chunk: int = 1 << 20) -> np.ndarray:
    out = np.empty(rows.shape[0])
    for s in range(0, rows.shape[0], chunk):
        out[s : s + chunk] = np.einsum(
            "ij,ij->i", A[rows[s : s + chunk]], B[cols[s : s + chunk]]
        )
    return out


def nmse_lowrank(
    A: ArrayLike | torch.Tensor,
    B: ArrayLike | torch.Tensor,
    A_true: ArrayLike | torch.Tensor,
    B_true: ArrayLike | torch.Tensor,
    exclude: tuple[ArrayLike, ArrayLike] | None = None,
) -> float:
    """NMSE of ``A B^T`` against ``A_true B_true^T`` on all entries but ``exclude``.

    ``||P(X - T)||_F / ||P(T)||_F`` where ``X = A B^T``, ``T = A_true B_true^T``
    and P keeps every entry except the excluded positions (Yao & Kwok test on
    the unobserved entries, Sec. 5.1). Computed in O((m + n) r^2 + |exclude| r)
    from Gram matrices, without forming either m x n matrix.

    Parameters
    ----------
    A : array-like, shape (m, r)
    B : array-like, shape (n, r)
    A_true : array-like, shape (m, r0)
    B_true : array-like, shape (n, r0)
    exclude : tuple (rows, cols), optional
        Positions left out of the error (e.g. the observed entries).

    Returns
    -------
    float
    """
    A, B, At, Bt = (
        np.asarray(to_numpy(x), dtype=np.float64) for x in (A, B, A_true, B_true)
    )
    D_left = np.hstack([A, -At])
    D_right = np.hstack([B, Bt])
    num = _gram_trace(D_left, D_right)
    den = _gram_trace(At, Bt)
    if exclude is not None:
        rows, cols = (np.asarray(x, dtype=np.int64) for x in exclude)
        num -= float((_rowwise(D_left, D_right, rows, cols) ** 2).sum())
        den -= float((_rowwise(At, Bt, rows, cols) ** 2).sum())
    if den <= 0:
        raise DataValidationError(
            "nmse_lowrank is undefined: the reference is zero on the evaluated entries."
        )
    return float(np.sqrt(max(num, 0.0) / den))

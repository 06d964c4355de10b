"""Tolerances from the dtype and the operation, not from one machine.

Two evaluations of the same expression by different kernels (a blocked
matrix product vs a per-row one, another BLAS path, another thread count,
another CPU) agree only up to rounding. A sum of ``n`` terms computed in two
orders differs by at most about ``n * eps * sum_i |term_i|`` (the classical
bound of recursive summation, Higham, *Accuracy and Stability of Numerical
Algorithms*, Sec. 4.2); blocked and pairwise sums do better, so the bound
holds on every path. Comparisons of results of *different* kernels use these
tolerances; bitwise equality is kept for the same kernel on the same inputs
(a seeded rerun in one process, a model and its save / load on one machine).
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["assert_close", "eps", "inner_product_tolerance", "sum_tolerance"]


def eps(dtype) -> float:
    """Machine epsilon of a NumPy or torch floating dtype (or of an array's)."""
    if isinstance(dtype, torch.dtype):
        return float(torch.finfo(dtype).eps)
    if isinstance(dtype, (np.ndarray, torch.Tensor)):
        return eps(dtype.dtype)
    return float(np.finfo(dtype).eps)


def sum_tolerance(dtype, n: int, magnitude: float) -> float:
    """How far two kernels' sums of ``n`` terms may differ.

    Parameters
    ----------
    dtype : numpy or torch dtype
        The dtype the sum accumulates in.
    n : int
        Number of terms.
    magnitude : float
        ``sum_i |term_i|`` or an upper bound of it.
    """
    return max(int(n), 1) * eps(dtype) * float(magnitude)


def inner_product_tolerance(A, B) -> float:
    """How far two kernels' entries of ``A @ B.T`` may differ (any entry).

    ``sum_i |a_i b_i| <= |a| |b|`` (Cauchy-Schwarz) bounds each entry's terms
    by the largest row norms of ``A`` and ``B``.
    """
    A = np.asarray(A.detach().cpu() if isinstance(A, torch.Tensor) else A)
    B = np.asarray(B.detach().cpu() if isinstance(B, torch.Tensor) else B)
    a = np.linalg.norm(A.astype(np.float64), axis=-1).max(initial=0.0)
    b = np.linalg.norm(B.astype(np.float64), axis=-1).max(initial=0.0)
    return sum_tolerance(np.result_type(A, B), A.shape[-1], a * b)


def assert_close(actual, desired, atol: float, err_msg: str = "") -> None:
    """``|actual - desired| <= atol`` elementwise (NaN equal to NaN)."""
    np.testing.assert_allclose(actual, desired, rtol=0, atol=atol, err_msg=err_msg)


def score_tolerance(model) -> float:
    """How far two kernels' scores of a retrieval model may differ.

    Scores are inner products of user and item vectors (of the item vectors'
    product-quantized reconstructions in an indexed model: means of parts of
    them, at most ``sqrt(n_subquantizers)`` times longer than the longest).
    """
    users = model._user_vectors(np.arange(model.shape_[0]))
    items = model._item_vectors(None)
    longer = np.sqrt(getattr(model, "n_subquantizers", 1))
    return longer * inner_product_tolerance(users, items)

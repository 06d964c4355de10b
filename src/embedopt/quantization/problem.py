"""The quantization distortion objective (eq. (1)) and the pieces the solvers use.

A product quantizer with a rotation in front, ``T(X) = phi(X R) R^T``, has the
distortion

    D(R, C) = (1/m) ||X - phi_C(X R) R^T||^2 = (1/m) ||X R - phi_C(X R)||^2

(the second form for orthogonal R), where ``phi_C`` replaces each of the M
subvectors by its nearest centroid of codebook ``C_m``. The solvers minimize
it by alternation: k-means on the codebooks with R fixed
(:mod:`.codebooks`), then a rotation step with the codes fixed
(:mod:`.rotation_learners`). With the codes fixed the targets
``Y = phi(X R)`` are fixed and, for orthogonal R,

    f(R) = (1/m) ||X R - Y||^2 = const - 2 <R, C_xy>,   C_xy = X^T Y / m,

linear in R: its Euclidean gradient ``-2 C_xy`` does not change during the
rotation step. This module holds that objective -- its value
(:func:`distortion`), the moments (:func:`moments`), the linear part
(:func:`fixed_code_value`), the Givens directional derivatives
(:func:`givens_derivatives`) and their safe step (:func:`givens_step_bound`),
the gradient of the unconstrained relaxation (:func:`unconstrained_gradient`)
-- and the checks of the data it is built from (:func:`as_vectors`,
:func:`check_sizes`). Pure math on tensors: no loops over iterations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._core import DataValidationError, DeviceLike, DtypeLike
from .codebooks import check_n_subquantizers, decode

__all__ = [
    "RotatedPQ",
    "as_vectors",
    "check_sizes",
    "distortion",
    "fixed_code_value",
    "givens_derivatives",
    "givens_step_bound",
    "moments",
    "unconstrained_gradient",
]


@dataclass
class RotatedPQ:
    """A product quantizer with a rotation in front: ``T(X) = phi(X R) R^T``.

    Attributes
    ----------
    rotation : torch.Tensor, shape (n, n)
        R (orthogonal except for the unconstrained baseline).
    codebooks : torch.Tensor, shape (M, K, n / M)
    """

    rotation: torch.Tensor
    codebooks: torch.Tensor


def as_vectors(
    X: ArrayLike | torch.Tensor,
    name: str = "X",
    *,
    device: DeviceLike = None,
    dtype: DtypeLike = None,
    n_features: int | None = None,
) -> torch.Tensor:
    """Validate and convert a 2-D float array of vectors to a tensor.

    Parameters
    ----------
    X : array-like or torch.Tensor, shape (m, n)
    name : str
        Named in error messages.
    device, dtype
        Target device and float dtype (resolved).
    n_features : int, optional
        Required number of columns.

    Returns
    -------
    torch.Tensor

    Raises
    ------
    DataValidationError
        Not 2-D, empty, not a real floating/integer dtype, wrong width, or NaN /
        infinite entries (the first bad row is named).
    """
    if isinstance(X, torch.Tensor):
        t = X.detach()
        kind_ok = t.dtype.is_floating_point or not (
            t.dtype.is_complex or t.dtype == torch.bool
        )
        dtype_name = str(t.dtype)
    else:
        try:
            arr = np.asarray(X)
        except Exception as exc:
            raise DataValidationError(
                f"{name} must be a 2-D array of floats; could not convert "
                f"{type(X).__name__}."
            ) from exc
        kind_ok = arr.dtype.kind in "fiu"
        dtype_name = str(arr.dtype)
        t = torch.as_tensor(arr) if kind_ok else None
    if not kind_ok:
        raise DataValidationError(
            f"{name} must hold real numbers (float32/float64); got dtype "
            f"{dtype_name}. Convert it with np.asarray({name}, dtype=np.float32)."
        )
    if t.ndim != 2:
        raise DataValidationError(
            f"{name} must be 2-D (n_vectors, n_features); got shape "
            f"{tuple(t.shape)}. Use X.reshape(1, -1) for a single vector."
        )
    if t.shape[0] == 0 or t.shape[1] == 0:
        raise DataValidationError(f"{name} is empty (shape {tuple(t.shape)}).")
    if n_features is not None and t.shape[1] != n_features:
        raise DataValidationError(
            f"{name} has {t.shape[1]} features but the quantizer was fitted on "
            f"{n_features}."
        )
    out = t.to(device=device, dtype=dtype)
    bad = ~torch.isfinite(out).all(1)
    if bool(bad.any()):
        row = int(torch.nonzero(bad)[0])
        raise DataValidationError(
            f"{name} has {int(bad.sum())} row(s) with NaN or infinite values; first "
            f"at row {row}. Remove or impute them before quantizing."
        )
    # Squared distances must be finite in the working dtype (k-means++ draws
    # with probabilities proportional to them; ADC sums them): bound them by
    # (2 max|x|)^2 n_features, computed in Python floats.
    top = float(out.abs().max())
    bound = 4.0 * top * top * out.shape[1]
    if not bound < float(torch.finfo(out.dtype).max):
        raise DataValidationError(
            f"{name} has values up to {top:.3g}: its squared distances overflow "
            f"{str(out.dtype).replace('torch.', '')}. Rescale the data (e.g. "
            "divide by its largest norm) or use dtype='float64'."
        )
    return out


def check_sizes(owner: str, X: torch.Tensor, M: int, K: int) -> None:
    """Check that M subspaces of K centroids fit the training vectors X.

    Parameters
    ----------
    owner : str
        The estimator or function named in the message.
    X : torch.Tensor, shape (m, n)
    M, K : int
        ``n_subquantizers`` (divides n) and ``n_centroids`` (at most m).

    Raises
    ------
    InvalidParameterError
        If M does not divide n.
    DataValidationError
        If K exceeds m.
    """
    m, n = X.shape
    check_n_subquantizers(owner, M, n)
    if K > m:
        raise DataValidationError(
            f"n_centroids={K} exceeds the {m} training vectors: k-means needs at "
            "least one vector per centroid. Use more training vectors or fewer "
            "centroids."
        )


def distortion(
    X: torch.Tensor,
    R: torch.Tensor,
    codebooks: torch.Tensor,
    codes: torch.Tensor,
    errors: torch.Tensor,
    *,
    orthogonal: bool,
) -> float:
    """The distortion ``D = mean_i ||x_i - T(x_i)||^2`` of given codes.

    Parameters
    ----------
    X : torch.Tensor, shape (m, n)
    R : torch.Tensor, shape (n, n)
    codebooks : torch.Tensor, shape (M, K, n / M)
    codes : torch.Tensor of int, shape (m, M)
        The codes of ``X R``.
    errors : torch.Tensor, shape (m, M)
        Squared distance of every subvector of ``X R`` to its centroid (what
        :func:`~.codebooks.lloyd` returns).
    orthogonal : bool
        Whether R is orthogonal: then D is the sum of ``errors`` (the rotated
        space preserves distances; free); otherwise the vectors are
        reconstructed with ``R^T``.

    Returns
    -------
    float
        Accumulated in float64.
    """
    if orthogonal:
        return float(errors.double().sum(1).mean())
    rec = decode(codes, codebooks) @ R.T
    return float(((X - rec).double() ** 2).sum(1).mean())


def moments(X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """``C = X^T Y / m`` in float64 (a sum over all rows that cancels).

    Parameters
    ----------
    X, Y : torch.Tensor, shape (m, n)

    Returns
    -------
    torch.Tensor of float64, shape (n, n)
    """
    return (X.double().T @ Y.double()) / X.shape[0]


def fixed_code_value(R: torch.Tensor, C: torch.Tensor) -> torch.Tensor:
    """The part of ``f(R)`` that depends on an orthogonal R: ``-2 <R, C>``.

    Parameters
    ----------
    R : torch.Tensor, shape (n, n)
    C : torch.Tensor, shape (n, n)
        ``C_xy`` of :func:`moments`.

    Returns
    -------
    torch.Tensor
        A scalar (differentiable).
    """
    return -2.0 * (R * C).sum()


def givens_derivatives(Z: torch.Tensor) -> torch.Tensor:
    """Directional derivatives of f along every Givens plane (Proposition 1).

    ``A = G^T R - R^T G`` with the Euclidean gradient ``G = -2 C``, written
    with ``Z = R^T C``: ``A = 2 (Z - Z^T)``.

    Parameters
    ----------
    Z : torch.Tensor, shape (n, n)
        ``R^T C``.

    Returns
    -------
    torch.Tensor, shape (n, n)
        Skew-symmetric.
    """
    return 2.0 * (Z - Z.T)


def givens_step_bound(Z: torch.Tensor) -> float:
    """``1 / L``, a safe global step along every Givens plane.

    Along the plane (i, j), ``f(R G_ij(t)) = c - 2 (a cos t + b sin t)`` with
    ``a = Z_ii + Z_jj``, so its curvature at 0 is 2a; ``L = 2 (z_1 + z_2)``
    with ``z_1 >= z_2`` the two largest diagonal entries of Z bounds them all
    (our choice; the paper fixes lambda = 1e-4 for SIFT, whose scale gives
    about the same value).

    Parameters
    ----------
    Z : torch.Tensor, shape (n, n)
        The current ``R^T C``.

    Returns
    -------
    float
    """
    d = torch.diagonal(Z)
    top = torch.topk(d, min(2, d.numel())).values.sum()
    return 1.0 / max(2.0 * float(top), 1e-30)


def unconstrained_gradient(
    W: torch.Tensor, Cxy: torch.Tensor, Syy: torch.Tensor, mu: float
) -> torch.Tensor:
    """Gradient of the relaxed objective over a free matrix W (codes fixed).

    ``d/dW`` of ``(1/m) ||X - Y W^T||^2 + mu ||W^T W - I||^2``, i.e. of
    ``-2 <Cxy, W> + tr(W Syy W^T) + mu ||W^T W - I||^2`` up to a constant.

    Parameters
    ----------
    W : torch.Tensor of float64, shape (n, n)
    Cxy, Syy : torch.Tensor of float64, shape (n, n)
        ``moments(X, Y)`` and ``moments(Y, Y)``.
    mu : float
        Weight of the orthogonality penalty.

    Returns
    -------
    torch.Tensor, shape (n, n)
    """
    eye = torch.eye(W.shape[0], dtype=torch.float64, device=W.device)
    return -2.0 * Cxy + 2.0 * W @ Syy + 4.0 * mu * W @ (W.T @ W - eye)

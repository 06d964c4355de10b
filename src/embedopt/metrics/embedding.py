"""Quality of an embedding: comparison error and Procrustes-aligned distance."""

from __future__ import annotations

from typing import Protocol

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._core import DataValidationError, to_numpy

__all__ = ["procrustes_align", "procrustes_distance", "triplet_error"]


class _Quadruplets(Protocol):
    """Comparisons that give their quadruplets, as ``embedopt.data.Comparisons``.

    Duck-typed so that metrics need not import the data layer.
    """

    def as_quadruplets(self) -> np.ndarray: ...


def _as_matrix(X, name: str) -> np.ndarray:
    A = np.asarray(to_numpy(X), dtype=np.float64)
    if A.ndim != 2 or A.shape[0] < 1:
        raise DataValidationError(
            f"{name} must be an (n, p) array; got shape {A.shape}."
        )
    if not np.isfinite(A).all():
        raise DataValidationError(f"{name} contains NaN or infinite values.")
    return A


def triplet_error(
    embedding: ArrayLike | torch.Tensor,
    comparisons: ArrayLike | _Quadruplets,
    *,
    chunk_size: int = 1 << 20,
) -> float:
    """Fraction of comparisons that the embedding's distances contradict.

    ``error = mean_q 1[d(x_i, x_j) >= d(x_l, x_k)]`` over oriented comparisons
    (``error_gen`` of Ma et al., Sec. 5.1); an exact tie counts as an error,
    because the embedding does not tell the closer pair (a collapsed embedding
    has error 1, not 0).

    Parameters
    ----------
    embedding : array-like or tensor, shape (n_objects, p)
    comparisons : Comparisons or array-like of int, shape (m, 3) or (m, 4)
        Oriented: the first pair is the closer one.
    chunk_size : int
        Comparisons evaluated at once (bounds the memory).

    Returns
    -------
    float
    """
    Q = _quadruplets(comparisons)
    if torch.is_tensor(embedding):
        X = embedding.detach()
    else:
        X = torch.as_tensor(_as_matrix(embedding, "embedding"))
    if int(Q.max()) >= X.shape[0] or int(Q.min()) < 0:
        raise DataValidationError(
            f"The comparisons index objects outside [0, {X.shape[0]}), the rows of "
            "the embedding."
        )
    Q = torch.as_tensor(Q, device=X.device)
    wrong = 0
    for s in range(0, Q.shape[0], chunk_size):
        q = Q[s : s + chunk_size]
        dij = (X[q[:, 0]] - X[q[:, 1]]).pow(2).sum(1)
        dlk = (X[q[:, 2]] - X[q[:, 3]]).pow(2).sum(1)
        wrong += int((dij >= dlk).sum())
    return wrong / Q.shape[0]


def _quadruplets(comparisons) -> np.ndarray:
    # Duck-typed so that metrics need not import the data layer.
    if hasattr(comparisons, "as_quadruplets"):
        return comparisons.as_quadruplets()
    Q = np.asarray(to_numpy(comparisons))
    if Q.ndim != 2 or Q.shape[1] not in (3, 4) or Q.shape[0] == 0:
        raise DataValidationError(
            "comparisons must be a non-empty (m, 3) or (m, 4) array; got shape "
            f"{Q.shape}."
        )
    if not np.issubdtype(Q.dtype, np.integer):
        raise DataValidationError(
            f"comparisons must hold integer object indices; got dtype {Q.dtype}."
        )
    return Q[:, [0, 1, 0, 2]] if Q.shape[1] == 3 else Q


def _orthogonal_procrustes(A: np.ndarray, B: np.ndarray):
    """Rotation/reflection R and scale s minimizing ||s A R - B||_F (centered A, B)."""
    U, sig, Vt = np.linalg.svd(A.T @ B)
    R = U @ Vt
    s = sig.sum() / max(float((A * A).sum()), np.finfo(np.float64).tiny)
    return R, s


def procrustes_align(
    embedding: ArrayLike | torch.Tensor,
    reference: ArrayLike | torch.Tensor,
    *,
    scaling: bool = True,
) -> np.ndarray:
    """Align an embedding to a reference by translation, rotation/reflection and scale.

    The similarity transforms are exactly the freedom of an ordinal embedding
    (Ma et al., App. F), so compare or plot embeddings only after aligning
    them. Embeddings of a lower dimension than the reference are zero-padded.

    Parameters
    ----------
    embedding : array-like, shape (n, p)
    reference : array-like, shape (n, q), q >= p
    scaling : bool
        Also fit a global scale.

    Returns
    -------
    numpy.ndarray, shape (n, q)
        ``s (X - mean X) R + mean(reference)``.
    """
    X = _as_matrix(embedding, "embedding")
    Y = _as_matrix(reference, "reference")
    if X.shape[0] != Y.shape[0]:
        raise DataValidationError(
            f"embedding and reference must have the same number of rows; got "
            f"{X.shape[0]} and {Y.shape[0]}."
        )
    if X.shape[1] > Y.shape[1]:
        raise DataValidationError(
            f"The embedding has more dimensions ({X.shape[1]}) than the reference "
            f"({Y.shape[1]}); pad the reference or swap the arguments."
        )
    if X.shape[1] < Y.shape[1]:
        X = np.hstack([X, np.zeros((X.shape[0], Y.shape[1] - X.shape[1]))])
    mx, my = X.mean(0), Y.mean(0)
    R, s = _orthogonal_procrustes(X - mx, Y - my)
    return (s if scaling else 1.0) * (X - mx) @ R + my


def procrustes_distance(
    embedding: ArrayLike | torch.Tensor,
    reference: ArrayLike | torch.Tensor,
    *,
    scaling: bool = True,
) -> float:
    """Normalized distance between two embeddings after Procrustes alignment.

    ``||align(X) - Y_c||_F^2 / ||Y_c||_F^2`` with ``Y_c`` the centered
    reference: 0 for embeddings equal up to a similarity transform, 1 for an
    embedding carrying no information about the reference (with scaling).

    Parameters
    ----------
    embedding : array-like, shape (n, p)
    reference : array-like, shape (n, q), q >= p
    scaling : bool

    Returns
    -------
    float
    """
    Y = _as_matrix(reference, "reference")
    A = procrustes_align(embedding, Y, scaling=scaling)
    Yc = Y - Y.mean(0)
    den = float((Yc * Yc).sum())
    if den == 0:
        raise DataValidationError("The reference embedding is a single point.")
    return float(((A - Y.mean(0) - Yc) ** 2).sum() / den)
